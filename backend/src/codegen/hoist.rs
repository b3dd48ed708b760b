//! Hoisting a peeled loop's loop-invariant waits out of it.
//!
//! A peeled loop (`penguin::pipeline::peel`) reads, in its first iterations, tiles that its
//! prologue wrote beside it. The synchronisation analysis ([`crate::codegen::sync`]) gives each prologue
//! copy its own semaphore, so the steady-state body waits for it with a constant count, and would
//! run that wait again in every iteration, where it always holds. [`hoist_invariant_waits`] moves
//! such a wait to just before the loop, in every engine stream, when it is one of the waits the
//! body opens with and waits, unguarded, for a count that does not depend on the loop's
//! register, on a semaphore signalled outside the loop.
//!
//! Why it is right: a semaphore's count only grows, so a wait whose value is the same in every
//! iteration holds in every iteration once it held before the first; moving a wait earlier on its
//! engine only delays the instructions that follow it, so every order the program had it keeps
//! (the waits that others imply, dropped by [`crate::codegen::hb`], stay implied). It cannot deadlock:
//! its semaphore's signaller stands before the loop in program order, and it waits, if at all,
//! only for work earlier in program order still, which the engine did before the loop as before.
//! Nor does it delay anything: the engine starts the first iteration's work only once every
//! opening wait holds, wherever they stand. Only peeled loops are touched: the other paths'
//! programs are unchanged.

use crate::codegen::bir::BirLoop;
use crate::codegen::emit::{ENode, Emitted, Node};
use crate::codegen::entities::Sem;
use crate::codegen::redundant::compute_signallers;
use crate::codegen::sync::{engine_has, Sync};
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::{Engine, Op, Program, Reg, Stmt, Term};

/// Hoists the invariant waits of every BIR loop `l` with `peeled[l]` out of it, in every stream.
pub fn hoist_invariant_waits(
    prog: &mut Program,
    em: &Emitted,
    sync: &Sync,
    peeled: &SecondaryMap<BirLoop, bool>,
) {
    if !peeled.values().any(|&p| p) {
        return;
    }
    let signaller = compute_signallers(sync);
    for e in Engine::ALL {
        let cx = Cx {
            em,
            peeled,
            signaller: &signaller,
            engine: e,
        };
        cx.block(&em.tree, &mut prog.streams[e.index()]);
    }
}

struct Cx<'a> {
    em: &'a Emitted,
    peeled: &'a SecondaryMap<BirLoop, bool>,
    signaller: &'a SecondaryMap<Sem, Option<Node>>,
    engine: Engine,
}

impl Cx<'_> {
    /// `stmts` is the stream of `tree` on the engine: its loops are the tree's loops that hold an
    /// instruction of the engine, in order.
    fn block(&self, tree: &[ENode], stmts: &mut Vec<Stmt>) {
        let loops: Vec<(BirLoop, &[ENode])> = tree
            .iter()
            .filter_map(|t| match t {
                ENode::Loop(l, body) if engine_has(self.em, body, self.engine) => {
                    Some((*l, body.as_slice()))
                }
                _ => None,
            })
            .collect();
        let at: Vec<usize> = (0..stmts.len())
            .filter(|&j| matches!(stmts[j], Stmt::Loop(_)))
            .collect();
        // From the last, so that inserting before a loop moves none still to visit.
        for (&(l, body), &j) in loops.iter().zip(&at).rev() {
            let Stmt::Loop(lp) = &mut stmts[j] else {
                continue;
            };
            self.block(body, &mut lp.body);
            if !self.peeled[l] {
                continue;
            }
            let mut inside = Vec::new();
            nodes(body, &mut inside);
            let reg = lp.reg;
            // The waits the body opens with: an iteration starts its work once all hold.
            let lead = lp
                .body
                .iter()
                .take_while(|s| matches!(s, Stmt::Inst(i) if matches!(i.op, Op::Wait { .. })))
                .count();
            let mut hoisted: Vec<Stmt> = Vec::new();
            let mut k = 0;
            lp.body.retain(|s| {
                k += 1;
                if k > lead || !self.invariant(s, reg, &inside) {
                    return true;
                }
                if !hoisted.contains(s) {
                    hoisted.push(s.clone());
                }
                false
            });
            stmts.splice(j..j, hoisted);
        }
    }

    /// An unguarded wait whose value does not depend on register `reg`, on a semaphore that no
    /// node of `inside` signals.
    fn invariant(&self, s: &Stmt, reg: Reg, inside: &[Node]) -> bool {
        let Stmt::Inst(i) = s else {
            return false;
        };
        let Op::Wait { sem, value } = &i.op else {
            return false;
        };
        let outside = self
            .signaller
            .get(Sem::new(*sem))
            .copied()
            .flatten()
            .is_some_and(|n| !inside.contains(&n));
        let uses_reg = value.terms.iter().any(|t| match *t {
            Term::Lin { reg: r, .. } | Term::Mod { reg: r, .. } => r == reg,
        });
        i.pred.is_empty() && i.signal.is_none() && outside && !uses_reg
    }
}

/// The nodes of `tree`, however deep.
fn nodes(tree: &[ENode], out: &mut Vec<Node>) {
    for t in tree {
        match t {
            ENode::Inst(i) => out.push(*i),
            ENode::Loop(_, body) => nodes(body, out),
        }
    }
}

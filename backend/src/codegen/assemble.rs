//! Assembly: one in-order instruction stream per engine from the emitted kernel and its
//! synchronisation, with the waits that other waits imply dropped.
//!
//! [`assemble`] walks the emitted loop tree ([`crate::codegen::emit`]) once per engine, keeps the loops
//! in which the engine has work (each one hardware loop on its iteration register), and puts
//! every wait of [`crate::codegen::sync`] before its instruction unless it is redundant: its semaphore is
//! read by no remaining dependence wait (its signals are dropped too), its value is never
//! positive, or an earlier wait of the same engine, in the same loop body and iteration, under a
//! guard that is a subset of its own, asks for at least as much (on the same semaphore, or on one
//! whose signaller [`crate::codegen::sync::implies`] it). Two passes: the first finds which semaphores
//! the kept waits read.
//!
//! Invariants: every instruction of the emitted kernel appears exactly once, on its engine's
//! stream, in program order; only waits and signals are dropped, never an instruction. The wait
//! pruning of [`crate::codegen::hb`] checks, in debug builds, that its model of the kept waits is this
//! function's.

use crate::codegen::emit::{ENode, Emitted};
use crate::codegen::entities::Sem;
use crate::codegen::sync::{self, Sync};
use cranelift_entity::{EntityRef, SecondaryMap};
use runtime_sim::isa::{Engine, Inst, Loop, Op, Program, Reg, Stmt, TensorDecl};

/// Builds one stream per engine and drops redundant waits: a wait is redundant when an earlier
/// wait of the same engine, in the same loop body and iteration, on the same semaphore, under a
/// guard that is a subset of its own, asks for at least as much; or when its value is never
/// positive. Returns the program and the number of waits dropped.
pub fn assemble(em: &Emitted, sync: &Sync, tensors: Vec<TensorDecl>) -> (Program, usize) {
    let mut prog = Program {
        tensors,
        semaphores: sync.semaphores.values().cloned().collect(),
        ..Program::default()
    };
    let mut dropped = 0;
    let mut signaller = SecondaryMap::new();
    for (n, s) in sync.signal.iter().enumerate() {
        if let Some(s) = s.expand() {
            signaller[s] = Some(n);
        }
    }
    // First pass: which semaphores some dependence wait still reads once redundant waits are
    // gone. The others need no signals.
    let mut cx = Cx {
        em,
        sync,
        signaller,
        used: SecondaryMap::with_default(true),
        record: SecondaryMap::new(),
    };
    for e in Engine::ALL {
        let (mut trips, mut d) = (Vec::new(), 0);
        stream(&mut cx, &em.tree, e, &mut trips, &mut d);
    }
    cx.used = std::mem::take(&mut cx.record);
    cx.record = SecondaryMap::new();
    for e in Engine::ALL {
        let mut trips = Vec::new();
        prog.streams[e.index()] = stream(&mut cx, &em.tree, e, &mut trips, &mut dropped);
    }
    (prog, dropped)
}

struct Cx<'a> {
    em: &'a Emitted,
    sync: &'a Sync,
    /// The node that signals each semaphore.
    signaller: SecondaryMap<Sem, Option<usize>>,
    /// Semaphores some dependence wait reads (from the first pass).
    used: SecondaryMap<Sem, bool>,
    /// Semaphores read by the dependence waits emitted in this pass.
    record: SecondaryMap<Sem, bool>,
}

fn stream(
    cx: &mut Cx<'_>,
    tree: &[ENode],
    e: Engine,
    trips: &mut Vec<i64>,
    dropped: &mut usize,
) -> Vec<Stmt> {
    let (em, sync) = (cx.em, cx.sync);
    let mut out = Vec::new();
    // Waits known to have run in this iteration of this body: (sem, value, guard).
    let mut known: Vec<(Sem, runtime_sim::isa::Expr, Vec<runtime_sim::isa::Cmp>)> = Vec::new();
    for t in tree {
        match t {
            ENode::Loop(l, body) => {
                if !sync::engine_has(em, body, e) {
                    continue;
                }
                let (trip, depth) = em.loops[*l];
                trips.push(trip as i64);
                let inner = stream(cx, body, e, trips, dropped);
                trips.pop();
                out.push(Stmt::Loop(Loop {
                    reg: Reg(depth as u8),
                    trip,
                    body: inner,
                }));
                known.clear();
            }
            ENode::Inst(i) => {
                let node = &em.nodes[*i];
                if node.engine != e {
                    continue;
                }
                for w in &sync.waits[*i] {
                    if !cx.used[w.sem] {
                        *dropped += 1;
                        continue;
                    }
                    if sync::never_positive(&w.value, trips) {
                        *dropped += 1;
                        continue;
                    }
                    let implied = known.iter().any(|(s, v, g)| {
                        g.iter().all(|c| w.pred.contains(c))
                            && ((*s == w.sem
                                && v.terms == w.value.terms
                                && v.constant >= w.value.constant)
                                || sync::implies(
                                    em,
                                    None,
                                    *i,
                                    cx.signaller[*s].expect("a kept wait's semaphore is signalled"),
                                    v,
                                    cx.signaller[w.sem]
                                        .expect("every waited semaphore is signalled"),
                                    &w.value,
                                ))
                    });
                    if implied {
                        *dropped += 1;
                        continue;
                    }
                    known.push((w.sem, w.value.clone(), w.pred.clone()));
                    cx.record[w.sem] = true;
                    let mut inst = Inst::new(Op::Wait {
                        sem: w.sem.index(),
                        value: w.value.clone(),
                    });
                    inst.pred = w.pred.clone();
                    out.push(Stmt::Inst(inst));
                }
                let mut inst = node.inst.clone();
                inst.signal = (sync.signal[*i].expand())
                    .filter(|&s| cx.used[s])
                    .map(Sem::index);
                out.push(Stmt::Inst(inst));
            }
        }
    }
    out
}

//! Assembly: one in-order instruction stream per engine from the emitted kernel and its
//! synchronisation, printed as they are.
//!
//! [`assemble`] walks the emitted loop tree ([`crate::codegen::emit`]) once per engine, keeps the
//! loops in which the engine has work (each one hardware loop on its iteration register), and
//! puts every wait of the synchronisation before its instruction and every signal on its
//! instruction. It decides nothing: which waits and signals there are was decided before
//! ([`crate::codegen::redundant::drop_redundant_waits`]).
//!
//! Invariants: every instruction of the emitted kernel appears exactly once, on its engine's
//! stream, in program order, after its waits in order.

use crate::codegen::emit::{ENode, Emitted};
use crate::codegen::entities::Sem;
use crate::codegen::sync::{self, Sync};
use cranelift_entity::EntityRef;
use runtime_sim::isa::{Engine, Inst, Loop, Op, Program, Reg, Stmt, TensorDecl};

/// Builds one stream per engine, with `sync`'s waits and signals.
pub fn assemble(em: &Emitted, sync: &Sync, tensors: Vec<TensorDecl>) -> Program {
    let mut prog = Program {
        tensors,
        semaphores: sync.semaphores.values().cloned().collect(),
        ..Program::default()
    };
    for e in Engine::ALL {
        prog.streams[e.index()] = stream(em, sync, &em.tree, e);
    }
    prog
}

fn stream(em: &Emitted, sync: &Sync, tree: &[ENode], e: Engine) -> Vec<Stmt> {
    let mut out = Vec::new();
    for t in tree {
        match t {
            ENode::Loop(l, body) => {
                if !sync::engine_has(em, body, e) {
                    continue;
                }
                let (trip, depth) = em.loops[*l];
                out.push(Stmt::Loop(Loop {
                    reg: Reg(depth as u8),
                    trip,
                    body: stream(em, sync, body, e),
                }));
            }
            ENode::Inst(i) => {
                let node = &em.nodes[*i];
                if node.engine != e {
                    continue;
                }
                for w in &sync.waits[*i] {
                    let mut inst = Inst::new(Op::Wait {
                        sem: w.sem.index(),
                        value: w.value.clone(),
                    });
                    inst.pred = w.pred.clone();
                    out.push(Stmt::Inst(inst));
                }
                let mut inst = node.inst.clone();
                inst.signal = sync.signal[*i].expand().map(Sem::index);
                out.push(Stmt::Inst(inst));
            }
        }
    }
    out
}

//! The BIR verifier: [`verify_bir`] checks the invariants every backend pass relies on and
//! reports every violation, with the instruction or loop and what is wrong.
//!
//! The backend's driver loop ([`crate::context::Context::run`]) runs it after each pass that
//! leaves BIR (`lower-bir`, `schedule`, `modulo`) when verification is on (debug builds and so
//! the tests, `NKC_VERIFY=1`), and it runs on every BIR filetest. The checks:
//! - **structure**: every node of every body names an instruction or loop that exists; every instruction is in exactly
//!   one body; the loops form a tree under the kernel's body (each loop in exactly one body, none
//!   inside itself); each loop's `depth` is its nesting depth and at most the register count;
//!   `insts[i].loops` is exactly the chain of loops around instruction `i`, outermost first;
//! - **references**: every loop's axis, every operand's tensor and every instruction's statement
//!   exist in the Function; a loop's bounds are its axis's;
//! - **engines**: an engine runs the op (`sp` loads and stores, `pe` matmuls and transposes, `act`
//!   activations, `dve`/`pool` the vector ops, `dve`/`act`/`pool` copies), and `pool` never
//!   touches PSUM;
//! - **operands**: the source count is the op's; each operand's memory is one the op reads or
//!   writes (a load writes SBUF from HBM, a matmul writes PSUM from SBUF, ...); an access has one
//!   start and size per tensor dimension and one ring slot selector per block dimension;
//! - **scopes**: slot selectors, access starts and guards only name the induction variables of
//!   enclosing loops.
//!
//! Invariant: the verifier never panics, whatever the BIR (it is also run on parsed texts).

use crate::codegen::bir::{BNode, Bir, BirInst, BirLoop};
use crate::error::BackendError;
pub use crate::error::BirVerifierError;
use cranelift_entity::SecondaryMap;
use penguin::affine::AffineExpr;
use penguin::ir::{Memory, Op, Operand};
use penguin::{Axis, Function};
use runtime_sim::isa::Engine;

impl std::error::Error for BirVerifierError {}

/// Checks every invariant of `bir` against `func`; returns all violations found.
pub fn verify_bir(func: &Function, bir: &Bir) -> Result<(), Vec<BirVerifierError>> {
    let mut v = Verifier {
        func,
        bir,
        errors: Vec::new(),
    };
    v.structure();
    v.loops();
    for i in bir.insts.keys() {
        v.inst(i);
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// [`verify_bir`] as an internal error naming the pass after which it failed.
pub fn verify_after(func: &Function, bir: &Bir, pass: &str) -> Result<(), BackendError> {
    verify_bir(func, bir).map_err(|errors| BackendError::BirNotVerified {
        pass: pass.to_string(),
        errors,
    })
}

struct Verifier<'a> {
    func: &'a Function,
    bir: &'a Bir,
    errors: Vec<BirVerifierError>,
}

impl Verifier<'_> {
    fn error(&mut self, location: String, message: String) {
        self.errors.push(BirVerifierError { location, message });
    }

    fn inst_loc(&self, i: BirInst) -> String {
        match self.bir.insts.get(i) {
            Some(bi) => {
                let dst = self
                    .func
                    .tensors
                    .get(bi.dst.tensor)
                    .map_or("?", |t| t.name.as_str());
                format!("{i} ({}.{} {dst})", bi.engine.name(), bi.op.name())
            }
            None => i.to_string(),
        }
    }

    fn loop_loc(&self, l: BirLoop) -> String {
        match self.bir.loops.get(l) {
            Some(lp) => format!("{l} ({})", lp.iv),
            None => l.to_string(),
        }
    }

    /// Node ranges, one body per node, the loop tree, depths and each instruction's loop chain.
    fn structure(&mut self) {
        let bir = self.bir;
        let mut inst_homes: SecondaryMap<BirInst, usize> = SecondaryMap::new();
        let mut loop_homes: SecondaryMap<BirLoop, usize> = SecondaryMap::new();
        let bodies = std::iter::once((None, &bir.body))
            .chain(bir.loops.iter().map(|(l, lp)| (Some(l), &lp.body)));
        for (owner, body) in bodies {
            let where_ = owner.map_or("the kernel body".to_string(), |l| {
                format!("the body of {}", self.loop_loc(l))
            });
            for &n in body {
                match n {
                    BNode::Inst(i) if bir.insts.is_valid(i) => inst_homes[i] += 1,
                    BNode::Loop(l) if bir.loops.is_valid(l) => loop_homes[l] += 1,
                    _ => self.error(
                        "bir".to_string(),
                        format!("{where_} names {n}, which does not exist"),
                    ),
                }
            }
        }
        for i in bir.insts.keys() {
            let h = inst_homes[i];
            if h != 1 {
                let msg = if h == 0 {
                    "is in no body".to_string()
                } else {
                    format!("is in {h} bodies")
                };
                self.error(self.inst_loc(i), msg);
            }
        }
        for l in bir.loops.keys() {
            let h = loop_homes[l];
            if h > 1 {
                self.error(self.loop_loc(l), format!("is in {h} bodies"));
            }
        }
        // Walk the tree from the kernel's body: chains, depths, loops inside themselves.
        let mut reached: SecondaryMap<BirLoop, bool> = SecondaryMap::new();
        let mut chain = Vec::new();
        self.walk(&bir.body, &mut chain, &mut reached);
        for l in bir.loops.keys() {
            let r = reached[l];
            if !r && loop_homes[l] > 0 {
                self.error(
                    self.loop_loc(l),
                    "is not reachable from the kernel body (it is inside itself or inside a loop that is)"
                        .to_string(),
                );
            } else if !r {
                self.error(self.loop_loc(l), "is in no body".to_string());
            }
        }
    }

    fn walk(
        &mut self,
        body: &[BNode],
        chain: &mut Vec<BirLoop>,
        reached: &mut SecondaryMap<BirLoop, bool>,
    ) {
        let bir = self.bir;
        for &n in body {
            match n {
                BNode::Inst(i) => {
                    let Some(bi) = bir.insts.get(i) else { continue };
                    if bi.loops != *chain {
                        let show = |ls: &[BirLoop]| {
                            let names: Vec<String> = ls.iter().map(|l| l.to_string()).collect();
                            format!("[{}]", names.join(", "))
                        };
                        self.error(
                            self.inst_loc(i),
                            format!(
                                "lists its loops as {}, but the loops around it are {}",
                                show(&bi.loops),
                                show(chain)
                            ),
                        );
                    }
                }
                BNode::Loop(l) => {
                    let Some(lp) = bir.loops.get(l) else { continue };
                    if chain.contains(&l) {
                        self.error(self.loop_loc(l), "is inside itself".to_string());
                        continue;
                    }
                    if reached[l] {
                        // Reported as "in N bodies"; do not walk it twice.
                        continue;
                    }
                    reached[l] = true;
                    if lp.depth != chain.len() {
                        self.error(
                            self.loop_loc(l),
                            format!(
                                "has depth {} (register r{}), but it is nested {} deep",
                                lp.depth,
                                lp.depth,
                                chain.len()
                            ),
                        );
                    }
                    if chain.len() >= runtime_sim::isa::MAX_REGS {
                        self.error(
                            self.loop_loc(l),
                            format!(
                                "is nested more than {} deep (one register per loop)",
                                runtime_sim::isa::MAX_REGS
                            ),
                        );
                    }
                    chain.push(l);
                    self.walk(&lp.body, chain, reached);
                    chain.pop();
                }
            }
        }
    }

    /// Each loop's axis exists and has the loop's bounds and induction variable.
    fn loops(&mut self) {
        for (l, lp) in self.bir.loops.iter() {
            let Some(ad) = self.func.axes.get(lp.axis) else {
                self.error(
                    self.loop_loc(l),
                    format!("names axis {}, which does not exist", lp.axis),
                );
                continue;
            };
            if ad.iv_name != lp.iv {
                self.error(
                    self.loop_loc(l),
                    format!(
                        "names induction variable `{}`, but its axis's is `{}`",
                        lp.iv, ad.iv_name
                    ),
                );
            }
            if ad.lb != lp.lb || ad.trip_count().max(0) as u64 != lp.trip {
                self.error(
                    self.loop_loc(l),
                    format!(
                        "runs {}..{}, but its axis runs {}..{}",
                        lp.lb,
                        lp.lb as i128 + lp.trip as i128,
                        ad.lb,
                        ad.ub
                    ),
                );
            }
        }
    }

    fn inst(&mut self, i: BirInst) {
        let bir = self.bir;
        let func = self.func;
        let bi = &bir.insts[i];
        let loc = self.inst_loc(i);
        if func.stmts.get(bi.stmt).is_none() {
            self.error(
                loc.clone(),
                format!("names statement {}, which does not exist", bi.stmt),
            );
        }
        // The axes of the enclosing loops (as the instruction lists them; a wrong list is
        // reported by `structure`).
        let scope: Vec<Axis> = bi
            .loops
            .iter()
            .filter_map(|&l| bir.loops.get(l).map(|lp| lp.axis))
            .collect();
        if !engine_runs(bi.engine, &bi.op) {
            self.error(
                loc.clone(),
                format!(
                    "`{}` cannot run on `{}` (it runs on {})",
                    bi.op.name(),
                    bi.engine.name(),
                    runs_on(&bi.op)
                ),
            );
        }
        if bi.srcs.len() != bi.op.num_srcs() {
            self.error(
                loc.clone(),
                format!(
                    "has {} source(s), but `{}` takes {}",
                    bi.srcs.len(),
                    bi.op.name(),
                    bi.op.num_srcs()
                ),
            );
        }
        let (dst_ok, src_ok) = bi.op.memories();
        let operands = std::iter::once(("destination".to_string(), &bi.dst, dst_ok, "writes"))
            .chain(
                bi.srcs
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (format!("source {k}"), s, src_ok, "reads")),
            );
        for (what, o, allowed, verb) in operands {
            self.operand(&loc, &what, o, &scope);
            let Some(t) = func.tensors.get(o.tensor) else {
                continue;
            };
            if !allowed.is_empty() && !allowed.contains(&t.memory) {
                let names: Vec<&str> = allowed.iter().map(|m| mem_name(*m)).collect();
                self.error(
                    loc.clone(),
                    format!(
                        "{what} `{}` is in {}, but `{}` {verb} {}",
                        t.name,
                        mem_name(t.memory),
                        bi.op.name(),
                        names.join(" or ")
                    ),
                );
            }
            if t.memory == Memory::Psum && bi.engine == Engine::Pool {
                self.error(
                    loc.clone(),
                    format!(
                        "runs on `pool`, which cannot access PSUM, but its {what} `{}` is in PSUM",
                        t.name
                    ),
                );
            }
        }
        for (k, g) in bi.guards.iter().enumerate() {
            self.scoped(&loc, &format!("guard {k}"), &g.expr, &scope);
        }
    }

    /// One operand: its tensor exists, its access has the tensor's arity, its slots and starts
    /// name enclosing loops only.
    fn operand(&mut self, loc: &str, what: &str, o: &Operand, scope: &[Axis]) {
        let Some(t) = self.func.tensors.get(o.tensor) else {
            self.error(
                loc.to_string(),
                format!("{what} names tensor {}, which does not exist", o.tensor),
            );
            return;
        };
        let a = &o.access;
        if a.start.len() != t.shape.len() || a.size.len() != t.shape.len() {
            self.error(
                loc.to_string(),
                format!(
                    "{what} `{}` has {} start(s) and {} size(s), but the tensor has {} dimension(s)",
                    t.name,
                    a.start.len(),
                    a.size.len(),
                    t.shape.len()
                ),
            );
        }
        if a.slots.len() != t.block.len() {
            self.error(
                loc.to_string(),
                format!(
                    "{what} `{}` has {} ring slot selector(s), but the tensor has {} block \
                     dimension(s)",
                    t.name,
                    a.slots.len(),
                    t.block.len()
                ),
            );
        }
        for (k, s) in a.slots.iter().enumerate() {
            self.scoped(loc, &format!("{what} `{}` slot {k}", t.name), s, scope);
        }
        for (k, s) in a.start.iter().enumerate() {
            self.scoped(loc, &format!("{what} `{}` start {k}", t.name), s, scope);
        }
    }

    /// `e` names only the axes in `scope`.
    fn scoped(&mut self, loc: &str, what: &str, e: &AffineExpr, scope: &[Axis]) {
        for &(a, _) in e.terms() {
            if !scope.contains(&a) {
                let name = self
                    .func
                    .axes
                    .get(a)
                    .map_or_else(|| a.to_string(), |d| d.iv_name.clone());
                self.error(
                    loc.to_string(),
                    format!(
                        "{what} names `{name}`, which is not the variable of an enclosing loop"
                    ),
                );
            }
        }
    }
}

/// Whether `engine` runs `op`.
pub fn engine_runs(engine: Engine, op: &Op) -> bool {
    use Engine::*;
    match op {
        Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. } => engine == Sp,
        Op::Matmul { .. } | Op::Transpose => engine == Pe,
        Op::Activation { .. } => engine == Act,
        Op::TensorTensor { .. } | Op::TensorScalar { .. } | Op::Memset { .. } | Op::Iota { .. } => {
            matches!(engine, Dve | Pool)
        }
        // The machine reduces on `dve` only (`runtime_sim::validate::engines_of`).
        Op::Reduce { .. } => engine == Dve,
        Op::TensorTensorScan { .. } | Op::BnStats | Op::BnAggr | Op::VectorTranspose => {
            engine == Dve
        }
        Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => engine == Dve,
        Op::Rand { .. } | Op::Dropout { .. } | Op::Shuffle { .. } => engine == Dve,
        Op::LocalGather { .. } | Op::SequenceBounds => engine == Pool,
        Op::Copy => matches!(engine, Dve | Act | Pool),
    }
}

fn runs_on(op: &Op) -> &'static str {
    match op {
        Op::Load | Op::Store | Op::Gather { .. } | Op::Scatter { .. } => "`sp`",
        Op::Matmul { .. } | Op::Transpose => "`pe`",
        Op::Activation { .. } => "`act`",
        Op::Copy => "`dve`, `act` or `pool`",
        Op::Reduce { .. }
        | Op::TensorTensorScan { .. }
        | Op::BnStats
        | Op::BnAggr
        | Op::VectorTranspose
        | Op::Max8
        | Op::FindIndex8
        | Op::MatchReplace8 { .. }
        | Op::Rand { .. }
        | Op::Dropout { .. }
        | Op::Shuffle { .. } => "`dve`",
        Op::LocalGather { .. } | Op::SequenceBounds => "`pool`",
        _ => "`dve` or `pool`",
    }
}

fn mem_name(m: Memory) -> &'static str {
    match m {
        Memory::Hbm => "HBM",
        Memory::Sbuf => "SBUF",
        Memory::Psum => "PSUM",
    }
}

#[cfg(test)]
mod tests {
    //! The structural violations the text form cannot express (the reader places every node
    //! once, with its loop chain), made by editing read BIR.
    use super::*;
    use crate::codegen::bir_parse::parse_bir;
    use cranelift_entity::EntityRef;

    fn inst(k: usize) -> BirInst {
        BirInst::new(k)
    }

    fn lp(k: usize) -> BirLoop {
        BirLoop::new(k)
    }

    const TEXT: &str = "bir k(x) -> () {
  buffer x: hbm f32[1024, 64] input
  buffer t: sbuf f32[128, 64] local
  loop r0 = 0..8 (i = r0 + 0) {
    sp.load t[0 +: 128, 0 +: 64], x[128*i +: 128, 0 +: 64]
    loop r1 = 0..2 (j = r1 + 0) {
      dve.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]
    }
  }
}
";

    fn errors(edit: impl FnOnce(&mut Function, &mut Bir)) -> Vec<String> {
        let (mut func, mut bir) = parse_bir(TEXT).expect("reads");
        verify_bir(&func, &bir).expect("verifies before the edit");
        edit(&mut func, &mut bir);
        match verify_bir(&func, &bir) {
            Ok(()) => Vec::new(),
            Err(errs) => errs.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn node_out_of_range() {
        let e = errors(|_, b| b.body.push(BNode::Inst(inst(7))));
        assert_eq!(
            e,
            ["bir: the kernel body names inst7, which does not exist"]
        );
        let e = errors(|_, b| b.loops[lp(1)].body.push(BNode::Loop(lp(9))));
        assert_eq!(
            e,
            ["bir: the body of loop1 (j) names loop9, which does not exist"]
        );
    }

    #[test]
    fn instruction_in_two_bodies_or_none() {
        let e = errors(|_, b| b.body.push(BNode::Inst(inst(1))));
        assert!(
            e.iter().any(|m| m == "inst1 (dve.copy t): is in 2 bodies"),
            "{e:?}"
        );
        assert!(
            e.iter().any(|m| m.starts_with("inst1 (dve.copy t): lists its loops as [loop0, loop1], but the loops around it are []")),
            "{e:?}"
        );
        let e = errors(|_, b| b.loops[lp(1)].body.clear());
        assert_eq!(e, ["inst1 (dve.copy t): is in no body"]);
    }

    #[test]
    fn loops_form_a_tree() {
        let e = errors(|_, b| b.loops[lp(1)].body.push(BNode::Loop(lp(1))));
        assert!(e.iter().any(|m| m == "loop1 (j): is in 2 bodies"), "{e:?}");
        assert!(
            e.iter().any(|m| m == "loop1 (j): is inside itself"),
            "{e:?}"
        );
        let e = errors(|_, b| {
            b.body.clear();
            b.loops[lp(0)].body.push(BNode::Loop(lp(0)));
        });
        let unreachable = "is not reachable from the kernel body (it is inside itself or inside a \
                           loop that is)";
        assert_eq!(
            e,
            [
                format!("loop0 (i): {unreachable}"),
                format!("loop1 (j): {unreachable}")
            ]
        );
    }

    #[test]
    fn loop_chains_depths_and_axes() {
        let e = errors(|_, b| b.insts[inst(1)].loops = vec![lp(0)]);
        assert_eq!(
            e,
            ["inst1 (dve.copy t): lists its loops as [loop0], but the loops around it are [loop0, loop1]"]
        );
        let e = errors(|_, b| b.loops[lp(1)].trip = 3);
        assert_eq!(e, ["loop1 (j): runs 0..3, but its axis runs 0..2"]);
        let e = errors(|_, b| b.loops[lp(0)].iv = "z".into());
        assert_eq!(
            e,
            ["loop0 (z): names induction variable `z`, but its axis's is `i`"]
        );
        let e = errors(|f, b| {
            let t = f.tensors.keys().next().expect("a tensor");
            b.insts[inst(0)].dst.tensor = penguin::Tensor::from_u32(t.as_u32() + 9);
        });
        assert_eq!(
            e,
            ["inst0 (sp.load ?): destination names tensor t9, which does not exist"]
        );
    }
}

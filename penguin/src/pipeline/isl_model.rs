//! The polyhedral model of one pipelined loop, written in ISL's text syntax: statement instances,
//! element-exact access relations and the two schedules (original and pipelined) of every
//! instruction inside the loop.
//!
//! This module knows nothing of ISL objects; it only produces text, so that what the legality check
//! feeds ISL can be read and tested. [`crate::pipeline::legality`] parses and drives it.
//!
//! The model (for `plan.axis`, the pipelined loop, with original bounds `lb <= iv < ub`):
//! - **Statements** are the instructions of the loop's subtree. Instruction `k` (its entity index)
//!   is the tuple `S<k>[d0, ..., dn]`, one dimension per enclosing loop, outermost first: the
//!   loops around the pipelined loop, the pipelined loop itself (dimension `dp`) and the loops
//!   nested inside it. Its domain is the box of the loop bounds, with the pipelined loop's upper
//!   bound the parameter `N` (bound to `ub` only when a verdict is read, so that nothing the check
//!   computes depends on the trip count), restricted by every predicate on the statements around it.
//! - **Accesses** are element-exact: operand `T[start +: size]` of instance `S<k>[d]` touches
//!   `M[outer ivs, slot, block slots, e0, e1] : start_j <= e_j < start_j + size_j`. The outer ivs
//!   tag the memory so that instances of different iterations of the loops around the pipelined
//!   loop never conflict: pipelining never reorders them, so their dependences need no check. The
//!   `slot` is `dp mod B` for a tensor the plan multi-buffers with count `B` (absent otherwise),
//!   and each block dimension the tensor already has is its slot expression modulo its count.
//!   Element dimensions along which every access starts at a constant are encoded by elementary
//!   intervals instead of elements, or dropped when all accesses cover the same range: exact (two
//!   accesses overlap in the encoding exactly when they share an element), and much smaller.
//!   An instruction writes its `dst` and reads its `srcs`; an accumulating matmul also reads `dst`.
//! - **The original schedule** maps an instance to `[outer ivs, dp, child, tail..]`: `child` is the
//!   position of the loop-body child holding the instruction, and the tail walks down from it, one
//!   `iv, position` pair per nested loop and the position of the instruction in its statement last,
//!   padded with zeros to a common length.
//! - **The pipelined schedule** is `[outer ivs, dp + stage(child)]` (a band, shifted by stage in
//!   an ISL schedule tree by the caller) followed by `[rank(child), tail..]`, where `rank` is the
//!   child's position in `plan.order`.
//!
//! The model keeps, per tensor, which of its instructions access it ([`LoopModel::accesses_of`]
//! reads those alone: the legality check asks it of every tensor written, so a body of `n`
//! instructions writing `n` tiles cost `n²` operand comparisons).
//!
//! Invariants: every instruction of the loop's subtree appears once; all statement tuples of one
//! model have the same schedule dimension count; the pipelined loop is at dimension
//! `outer.len()` of every statement; the per-tensor index lists, in model order, each model
//! instruction that accesses the tensor, once, and is of the function the model was built of.

use super::plan::PipelinePlan;
use crate::affine::{AffineExpr, CmpOp, Predicate};
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{Function, Op, Operand, StmtKind};
use cranelift_entity::EntityRef;
use std::collections::HashMap;
use std::fmt::Write;

/// The name of the trip-count parameter (the pipelined loop's upper bound).
pub const TRIP_PARAM: &str = "N";

/// One entry of a schedule tail below the child of the pipelined loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TailTerm {
    Const(usize),
    Iv(Axis),
}

/// One instruction of the loop's subtree, with where it sits.
#[derive(Clone, Debug)]
pub struct InstModel {
    pub inst: Inst,
    /// The loops around it, outermost first (outer loops, the pipelined loop, nested loops).
    pub loops: Vec<Axis>,
    /// The index, in program order, of the child of the pipelined loop that holds it.
    pub child: usize,
    tail: Vec<TailTerm>,
    preds: Vec<Predicate>,
}

/// The model of one pipelined loop.
#[derive(Clone, Debug)]
pub struct LoopModel {
    /// The loops around the pipelined loop, outermost first.
    pub outer: Vec<Axis>,
    pub insts: Vec<InstModel>,
    /// The longest tail, to which every schedule is padded.
    tail_len: usize,
    /// Per tensor, the indices into `insts` of the instructions that access it, ascending.
    accessing: HashMap<Tensor, Vec<usize>>,
}

/// Why a function and plan cannot be modelled. Loop names are the ones the user sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The plan's loop is not in the function.
    NoSuchLoop(Axis),
    /// The plan's loop is not in the function's loop tree.
    NotInTree { iv: String },
    /// The plan's stage and order counts do not match the loop's children.
    PlanMismatch {
        iv: String,
        stages: usize,
        order: usize,
        children: usize,
    },
    /// The plan's execution order is not a permutation of the loop's children.
    NotPermutation { iv: String },
    /// An instruction uses the induction variable of a loop that does not enclose it.
    IvOutsideLoop { inst: Inst, axis: Axis },
    /// The loop names a tensor that the function does not define.
    UndefinedTensor(Tensor),
    /// An access does not match its tensor's dimensions.
    AccessDims { inst: Inst, tensor: String },
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::NoSuchLoop(axis) => {
                write!(f, "the pipelined loop {axis} is not in the function")
            }
            ModelError::NotInTree { iv } => {
                write!(f, "loop `{iv}` is not in the function's loop tree")
            }
            ModelError::PlanMismatch {
                iv,
                stages,
                order,
                children,
            } => write!(
                f,
                "the plan of loop `{iv}` has {stages} stages and {order} order entries for {children} children"
            ),
            ModelError::NotPermutation { iv } => write!(
                f,
                "the execution order of loop `{iv}` is not a permutation"
            ),
            ModelError::IvOutsideLoop { inst, axis } => write!(
                f,
                "instruction {inst} uses the induction variable of a loop ({axis}) that does not enclose it"
            ),
            ModelError::UndefinedTensor(tensor) => {
                write!(f, "the loop names an undefined tensor {tensor}")
            }
            ModelError::AccessDims { inst, tensor } => write!(
                f,
                "an access of instruction {inst} to `{tensor}` does not match the tensor's dimensions"
            ),
        }
    }
}

impl LoopModel {
    /// Collects the instructions of `plan.axis`'s subtree in program order.
    pub fn build(func: &Function, plan: &PipelinePlan) -> Result<LoopModel, ModelError> {
        let axis = plan.axis;
        let axis_name = func.axis_name(axis).to_string();
        if func.axes.get(axis).is_none() {
            return Err(ModelError::NoSuchLoop(axis));
        }
        let mut outer = Vec::new();
        let mut preds = Vec::new();
        if !find_loop(func, &func.body, axis, &mut outer, &mut preds) {
            return Err(ModelError::NotInTree { iv: axis_name });
        }
        let body = &func.axes[axis].body;
        if plan.stages.len() != body.len() || plan.order.len() != body.len() {
            return Err(ModelError::PlanMismatch {
                iv: axis_name,
                stages: plan.stages.len(),
                order: plan.order.len(),
                children: body.len(),
            });
        }
        let mut seen = vec![false; body.len()];
        for &c in &plan.order {
            if c >= body.len() || std::mem::replace(&mut seen[c], true) {
                return Err(ModelError::NotPermutation { iv: axis_name });
            }
        }
        let mut loops = outer.clone();
        loops.push(axis);
        let mut insts = Vec::new();
        for (child, &stmt) in body.iter().enumerate() {
            visit(
                func,
                stmt,
                child,
                &mut loops,
                &mut preds,
                &mut Vec::new(),
                &mut insts,
            );
        }
        let tail_len = insts.iter().map(|m| m.tail.len()).max().unwrap_or(0);
        let mut accessing: HashMap<Tensor, Vec<usize>> = HashMap::new();
        for (k, m) in insts.iter().enumerate() {
            let data = &func.insts[m.inst];
            for t in data.srcs.iter().chain([&data.dst]).map(|o| o.tensor) {
                let ks = accessing.entry(t).or_default();
                if ks.last() != Some(&k) {
                    ks.push(k);
                }
            }
        }
        Ok(LoopModel {
            outer,
            insts,
            tail_len,
            accessing,
        })
    }

    /// The tuple name of an instruction's statement.
    pub fn stmt_name(inst: Inst) -> String {
        format!("S{}", inst.index())
    }

    /// `S<k>[d0, ..., dn]`.
    fn tuple(m: &InstModel) -> String {
        let dims: Vec<String> = (0..m.loops.len()).map(|q| format!("d{q}")).collect();
        format!("{}[{}]", Self::stmt_name(m.inst), dims.join(", "))
    }

    /// The name of the dimension of `axis` in `m`'s tuple.
    fn dim_of(m: &InstModel, axis: Axis) -> Result<String, ModelError> {
        m.loops
            .iter()
            .position(|&a| a == axis)
            .map(|q| format!("d{q}"))
            .ok_or(ModelError::IvOutsideLoop { inst: m.inst, axis })
    }

    fn affine(m: &InstModel, e: &AffineExpr) -> Result<String, ModelError> {
        let mut s = String::new();
        for &(axis, coeff) in e.terms() {
            write!(s, "{coeff}*{} + ", Self::dim_of(m, axis)?).expect("writing to a String");
        }
        write!(s, "{}", e.constant_term()).expect("writing to a String");
        Ok(s)
    }

    /// The constraints of `m`'s domain (without braces).
    fn domain_constraints(&self, func: &Function, m: &InstModel) -> Result<String, ModelError> {
        let p = self.outer.len();
        let mut cs = Vec::new();
        for (q, &axis) in m.loops.iter().enumerate() {
            let a = &func.axes[axis];
            if q == p {
                cs.push(format!("{} <= d{q} < {TRIP_PARAM}", a.lb));
            } else {
                cs.push(format!("{} <= d{q} < {}", a.lb, a.ub));
            }
        }
        for pred in &m.preds {
            let e = Self::affine(m, &pred.expr)?;
            let op = match pred.cmp {
                CmpOp::Ge => ">=",
                CmpOp::Lt => "<",
                CmpOp::Eq => "=",
            };
            cs.push(format!("{e} {op} {}", pred.bound));
        }
        Ok(cs.join(" and "))
    }

    /// The access relation of `m` to `op` (a piece of a union map), with the element dimensions
    /// encoded as `dims` says.
    fn access(
        &self,
        func: &Function,
        plan: &PipelinePlan,
        m: &InstModel,
        op: &Operand,
        dims: &[DimEncoding],
    ) -> Result<String, ModelError> {
        let t = &func.tensors[op.tensor];
        let acc = &op.access;
        let p = self.outer.len();
        let mut out: Vec<String> = (0..p).map(|q| format!("d{q}")).collect();
        let count = plan.buffer_count(op.tensor);
        if count > 1 {
            out.push(format!("d{p} mod {count}"));
        }
        for (e, b) in acc.slots.iter().zip(&t.block) {
            out.push(format!("({}) mod {}", Self::affine(m, e)?, b.count.max(1)));
        }
        let mut cs = vec![self.domain_constraints(func, m)?];
        for (j, ((start, &size), enc)) in acc.start.iter().zip(&acc.size).zip(dims).enumerate() {
            match enc {
                DimEncoding::Dropped => {}
                DimEncoding::Intervals(bounds) => {
                    let c = start
                        .as_constant()
                        .expect("Intervals is only chosen when every start is constant");
                    let lo = bounds.partition_point(|&b| b < c);
                    let hi = bounds.partition_point(|&b| b < c + size as i64);
                    out.push(format!("e{j}"));
                    cs.push(format!("{lo} <= e{j} < {hi}"));
                }
                DimEncoding::Exact => {
                    let s = Self::affine(m, start)?;
                    out.push(format!("e{j}"));
                    cs.push(format!("{s} <= e{j} < {s} + {size}"));
                }
            }
        }
        Ok(format!(
            "{} -> M[{}] : {}",
            Self::tuple(m),
            out.join(", "),
            cs.join(" and ")
        ))
    }

    /// The reads and writes of `tensor` by the loop's instructions, as two lists of union-map
    /// pieces, and the instructions that touch it.
    ///
    /// Element dimensions are encoded exactly but compactly: when every access of the loop to the
    /// tensor starts at a constant along a dimension, the dimension is cut into the elementary
    /// intervals between all access boundaries and an access covers a range of interval indices
    /// (two accesses overlap along it exactly when their index ranges do); a dimension with a
    /// single interval (every access covers the same range) is dropped. Otherwise the dimension
    /// keeps the element index.
    pub fn accesses_of(
        &self,
        func: &Function,
        plan: &PipelinePlan,
        tensor: Tensor,
    ) -> Result<TensorAccesses, ModelError> {
        let t = func
            .tensors
            .get(tensor)
            .ok_or(ModelError::UndefinedTensor(tensor))?;
        // (model index, operand, is a write, is also read)
        let mut ops: Vec<(usize, &Operand, bool, bool)> = Vec::new();
        let accessing = self.accessing.get(&tensor).map_or(&[][..], Vec::as_slice);
        for &k in accessing {
            let data = &func.insts[self.insts[k].inst];
            for src in data.srcs.iter().filter(|o| o.tensor == tensor) {
                ops.push((k, src, false, false));
            }
            if data.dst.tensor == tensor {
                let rmw = matches!(data.op, Op::Matmul { accumulate: true });
                ops.push((k, &data.dst, true, rmw));
            }
        }
        // An access with an empty extent touches nothing.
        ops.retain(|(_, op, _, _)| op.access.size.iter().all(|&n| n > 0));
        for &(k, op, _, _) in &ops {
            let acc = &op.access;
            if acc.start.len() != t.shape.len()
                || acc.size.len() != t.shape.len()
                || acc.slots.len() != t.block.len()
            {
                return Err(ModelError::AccessDims {
                    inst: self.insts[k].inst,
                    tensor: t.name.clone(),
                });
            }
        }
        let dims: Vec<DimEncoding> = (0..t.shape.len())
            .map(|j| {
                let mut bounds = Vec::new();
                for &(_, op, _, _) in &ops {
                    let Some(c) = op.access.start[j].as_constant() else {
                        return DimEncoding::Exact;
                    };
                    bounds.push(c);
                    bounds.push(c + op.access.size[j] as i64);
                }
                bounds.sort_unstable();
                bounds.dedup();
                if bounds.len() <= 2 {
                    DimEncoding::Dropped
                } else {
                    DimEncoding::Intervals(bounds)
                }
            })
            .collect();
        let mut acc = TensorAccesses::default();
        for &(k, op, write, rmw) in &ops {
            let text = self.access(func, plan, &self.insts[k], op, &dims)?;
            let inst = self.insts[k].inst;
            if write || rmw {
                acc.writers.push(inst);
            }
            if !write || rmw {
                acc.readers.push(inst);
            }
            if write {
                if rmw {
                    acc.reads.push(text.clone());
                }
                acc.writes.push(text);
            } else {
                acc.reads.push(text);
            }
            if acc.insts.last() != Some(&k) {
                acc.insts.push(k);
            }
        }
        Ok(acc)
    }

    /// The tensors the loop's instructions write, in entity order, each once.
    pub fn written_tensors(&self, func: &Function) -> Vec<Tensor> {
        let mut ts: Vec<Tensor> = self
            .insts
            .iter()
            .map(|m| func.insts[m.inst].dst.tensor)
            .collect();
        ts.sort();
        ts.dedup();
        ts
    }

    fn tail(&self, m: &InstModel) -> Result<Vec<String>, ModelError> {
        let mut out = Vec::with_capacity(self.tail_len);
        for t in &m.tail {
            out.push(match *t {
                TailTerm::Const(c) => c.to_string(),
                TailTerm::Iv(axis) => Self::dim_of(m, axis)?,
            });
        }
        out.resize(self.tail_len, "0".to_string());
        Ok(out)
    }

    /// The number of dimensions of the band (the outer loops and the pipelined loop).
    pub fn band_dims(&self) -> usize {
        self.outer.len() + 1
    }

    /// The original schedule of `m` on its domain:
    /// `S<k>[d..] -> [outer, dp, child, tail..] : domain constraints`. Its first
    /// [`Self::band_dims`] dimensions are the band of the pipelined schedule before the shift.
    pub fn original_schedule(&self, func: &Function, m: &InstModel) -> Result<String, ModelError> {
        let mut out: Vec<String> = (0..self.band_dims()).map(|q| format!("d{q}")).collect();
        out.push(m.child.to_string());
        out.extend(self.tail(m)?);
        Ok(format!(
            "{} -> [{}] : {}",
            Self::tuple(m),
            out.join(", "),
            self.domain_constraints(func, m)?
        ))
    }

    /// Whether `m` sits directly in a child statement of the pipelined loop (not in a nested
    /// loop): its tail is only its position in the statement.
    pub fn is_flat(m: &InstModel) -> bool {
        m.tail.len() == 1
    }

    /// The position of a flat instruction in its statement.
    fn flat_pos(m: &InstModel) -> usize {
        match m.tail.first() {
            Some(&TailTerm::Const(p)) => p,
            _ => 0,
        }
    }

    /// One more than the largest position of a flat instruction in its statement.
    fn flat_width(&self) -> usize {
        self.insts
            .iter()
            .filter(|m| Self::is_flat(m))
            .map(|m| Self::flat_pos(m) + 1)
            .max()
            .unwrap_or(1)
    }

    /// [`Self::original_schedule`] without the domain constraints. With `compact` (only for
    /// flat instructions, see [`Self::is_flat`]) the child and the position fold into one
    /// dimension, `child * width + position`: the same order with one dimension fewer.
    pub fn original_schedule_universe(
        &self,
        m: &InstModel,
        compact: bool,
    ) -> Result<String, ModelError> {
        let mut out: Vec<String> = (0..self.band_dims()).map(|q| format!("d{q}")).collect();
        if compact {
            out.push((m.child * self.flat_width() + Self::flat_pos(m)).to_string());
        } else {
            out.push(m.child.to_string());
            out.extend(self.tail(m)?);
        }
        Ok(format!("{} -> [{}]", Self::tuple(m), out.join(", ")))
    }

    /// The shift of the band followed by what follows the band in the pipelined schedule:
    /// `S<k>[d..] -> [0.., stage, rank(child), tail..]` (the first [`Self::band_dims`]
    /// dimensions are the shift).
    ///
    /// With `compact` (flat instructions only) the rank and the position fold into one
    /// dimension, as in [`Self::original_schedule_universe`].
    pub fn shift_and_order(
        &self,
        plan: &PipelinePlan,
        m: &InstModel,
        compact: bool,
    ) -> Result<String, ModelError> {
        let rank = plan
            .order
            .iter()
            .position(|&c| c == m.child)
            .expect("LoopModel::build checked that the order is a permutation");
        let mut out = vec!["0".to_string(); self.outer.len()];
        out.push(plan.stages[m.child].to_string());
        if compact {
            out.push((rank * self.flat_width() + Self::flat_pos(m)).to_string());
        } else {
            out.push(rank.to_string());
            out.extend(self.tail(m)?);
        }
        Ok(format!("{} -> [{}]", Self::tuple(m), out.join(", ")))
    }
}

/// How an element dimension of a tensor appears in its access relations.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DimEncoding {
    /// Every access covers the same constant range: the dimension cannot separate two accesses.
    Dropped,
    /// Every access starts at a constant: the sorted, distinct access boundaries; an access
    /// covers the interval indices between its start's and its end's.
    Intervals(Vec<i64>),
    /// The element index itself.
    Exact,
}

/// The accesses of one tensor inside the loop.
#[derive(Clone, Debug, Default)]
pub struct TensorAccesses {
    pub reads: Vec<String>,
    pub writes: Vec<String>,
    /// Indices into [`LoopModel::insts`] of the instructions that touch the tensor.
    pub insts: Vec<usize>,
    /// The instructions that read it, and those that write it.
    pub readers: Vec<Inst>,
    pub writers: Vec<Inst>,
}

/// Finds `target` below `block`, recording the loops and predicates on the way.
fn find_loop(
    func: &Function,
    block: &[Stmt],
    target: Axis,
    outer: &mut Vec<Axis>,
    preds: &mut Vec<Predicate>,
) -> bool {
    for &stmt in block {
        let Some(data) = func.stmts.get(stmt) else {
            continue;
        };
        if let StmtKind::Loop(axis) = data.kind {
            let n = preds.len();
            preds.extend(data.preds.iter().cloned());
            if axis == target {
                return true;
            }
            outer.push(axis);
            if func.axes.get(axis).is_some()
                && find_loop(func, &func.axes[axis].body, target, outer, preds)
            {
                return true;
            }
            outer.pop();
            preds.truncate(n);
        }
    }
    false
}

fn visit(
    func: &Function,
    stmt: Stmt,
    child: usize,
    loops: &mut Vec<Axis>,
    preds: &mut Vec<Predicate>,
    tail: &mut Vec<TailTerm>,
    out: &mut Vec<InstModel>,
) {
    let data = &func.stmts[stmt];
    let n = preds.len();
    preds.extend(data.preds.iter().cloned());
    match &data.kind {
        StmtKind::Insts(insts) => {
            for (j, &inst) in insts.iter().enumerate() {
                let mut t = tail.clone();
                t.push(TailTerm::Const(j));
                out.push(InstModel {
                    inst,
                    loops: loops.clone(),
                    child,
                    tail: t,
                    preds: preds.clone(),
                });
            }
        }
        &StmtKind::Loop(axis) => {
            loops.push(axis);
            tail.push(TailTerm::Iv(axis));
            for (k, &s) in func.axes[axis].body.iter().enumerate() {
                tail.push(TailTerm::Const(k));
                visit(func, s, child, loops, preds, tail, out);
                tail.pop();
            }
            tail.pop();
            loops.pop();
        }
    }
    preds.truncate(n);
}

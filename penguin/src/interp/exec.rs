//! The executor: walks the loop tree, evaluates predicates and accesses, and runs each
//! instruction by gathering its source tiles, calling its kernel and scattering the result.
//! A masked instruction runs, in each iteration, as the unmasked instruction on its active box
//! ([`crate::ir::InstData::clipped`]): the other elements are neither read (nor range-checked) nor
//! written, so a destination keeps its old values there, and an element no instruction wrote
//! stays unwritten.
//!
//! Undefined values ([`vocab::poison`]): reading an element that holds no defined value (never
//! written, or written with a value computed from undefined ones) is not an error; each tile
//! carries its undefined flags (`None` when all its elements are defined, so the common path does
//! no per-element work), each operation computes its result's flags by the shared rules, and the
//! destination records them. Writing an undefined element into an HBM tensor (a store, or any
//! transfer into an output or HBM scratch) is the [`InterpError::Uninitialised`] error: that is
//! where garbage would become observable.
//!
//! Invariants:
//! - `active[a]` is true exactly for the axes of the loops currently executing (those in
//!   `loops`), and `ivs[a]` holds the current value of each of them; an affine expression that
//!   mentions any other axis is malformed IR. Because a loop cannot be entered while it is already
//!   active, the recursion depth is bounded by the number of axes.
//! - every [`Region`] handed to a [`Buffer`] has been checked to lie inside it by [`Machine::resolve`].

use super::kernels::{self, ScaleSrc, Src};
use super::memory::{Buffer, Region};
use super::{Element, InterpError, Iteration, Stats};
use crate::affine::AffineExpr;
use crate::entities::{Axis, Inst, Stmt, Tensor};
use crate::ir::{
    mask_box, ActFunc, AluOp, Function, InstData, Op, Operand, ReduceOp, Scale, StmtKind,
};
use cranelift_entity::{EntityRef, SecondaryMap};
use vocab::poison::{self, Undef};

mod gather_moves;
mod indirect;

type Result<T> = std::result::Result<T, InterpError>;

/// A malformed-IR error outside any loop.
pub(super) fn malformed(inst: Option<Inst>, msg: String) -> InterpError {
    InterpError::Malformed {
        inst,
        msg,
        at: Iteration::default(),
    }
}

/// A tile read from a tensor: where it lies, its values and which of them are undefined.
/// What an operation computes for its destination: the values and their undefined flags.
type Values = (Vec<f32>, Undef);

struct Tile {
    region: Region,
    data: Vec<f32>,
    undef: Undef,
}

impl Tile {
    fn shape(&self) -> (usize, usize) {
        (self.region.rows, self.region.cols)
    }

    /// Its flags as a source of width `w` per row ([`poison::Flags`]).
    fn flags(&self, w: usize) -> poison::Flags<'_> {
        (self.undef.as_deref(), w)
    }

    /// Its flags as a source of its own width.
    fn row_flags(&self) -> poison::Flags<'_> {
        self.flags(self.region.cols)
    }
}

pub(super) struct Machine<'f> {
    func: &'f Function,
    /// Indexed by tensor index.
    bufs: Vec<Buffer>,
    ivs: SecondaryMap<Axis, i64>,
    active: SecondaryMap<Axis, bool>,
    loops: Vec<Axis>,
    pub stats: Stats,
}

impl<'f> Machine<'f> {
    pub fn new(func: &'f Function) -> Result<Self> {
        let bufs = func
            .tensors
            .values()
            .map(|t| {
                Buffer::new(t).map_err(|e| malformed(None, format!("tensor `{}` {e}", t.name)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Machine {
            func,
            bufs,
            ivs: SecondaryMap::new(),
            active: SecondaryMap::new(),
            loops: Vec::new(),
            stats: Stats::default(),
        })
    }

    /// Fills a parameter (already checked to exist, be unblocked and match `values` in size).
    pub fn fill_input(&mut self, t: Tensor, values: &[f32]) {
        self.bufs[t.index()].fill_input(values);
    }

    /// The contents of an output tensor.
    pub fn output(&self, t: Tensor) -> Result<super::Array> {
        let data = self
            .func
            .tensors
            .get(t)
            .ok_or_else(|| malformed(None, format!("output {t} is not a defined tensor")))?;
        if !data.block.is_empty() {
            return Err(malformed(
                None,
                format!("output `{}` has block dimensions", data.name),
            ));
        }
        let buf = &self.bufs[t.index()];
        Ok(super::Array {
            shape: vec![buf.rows, buf.cols],
            data: buf.slot0().to_vec(),
        })
    }

    pub fn run(&mut self) -> Result<()> {
        let body = &self.func.body;
        self.run_block(body)
    }

    fn iteration(&self) -> Iteration {
        Iteration(
            self.loops
                .iter()
                .map(|&a| (self.func.display_iv(a).to_string(), self.ivs[a]))
                .collect(),
        )
    }

    fn malformed(&self, inst: Option<Inst>, msg: impl Into<String>) -> InterpError {
        InterpError::Malformed {
            inst,
            msg: msg.into(),
            at: self.iteration(),
        }
    }

    /// The value of an affine expression in the current iteration.
    fn eval(&self, e: &AffineExpr, inst: Option<Inst>) -> Result<i64> {
        let mut acc = e.constant_term();
        for &(axis, coeff) in e.terms() {
            if !self.active[axis] {
                return Err(self.malformed(
                    inst,
                    format!(
                        "an expression uses the induction variable of {axis} (`{}`) outside its loop",
                        self.func.display_iv(axis)
                    ),
                ));
            }
            acc = coeff
                .checked_mul(self.ivs[axis])
                .and_then(|t| acc.checked_add(t))
                .ok_or_else(|| self.malformed(inst, "an affine expression overflows i64"))?;
        }
        Ok(acc)
    }

    fn run_block(&mut self, block: &'f [Stmt]) -> Result<()> {
        for &stmt in block {
            self.run_stmt(stmt)?;
        }
        Ok(())
    }

    fn run_stmt(&mut self, stmt: Stmt) -> Result<()> {
        let func = self.func;
        let data = func
            .stmts
            .get(stmt)
            .ok_or_else(|| self.malformed(None, format!("statement {stmt} is not defined")))?;
        for pred in &data.preds {
            let v = self.eval(&pred.expr, None)?;
            let holds = match pred.cmp {
                crate::affine::CmpOp::Ge => v >= pred.bound,
                crate::affine::CmpOp::Lt => v < pred.bound,
                crate::affine::CmpOp::Eq => v == pred.bound,
            };
            if !holds {
                self.stats.stmts_skipped += 1;
                return Ok(());
            }
        }
        match &data.kind {
            StmtKind::Insts(insts) => {
                for &inst in insts {
                    self.exec_inst(inst)?;
                }
                Ok(())
            }
            StmtKind::Loop(axis) => self.run_loop(*axis),
        }
    }

    fn run_loop(&mut self, axis: Axis) -> Result<()> {
        let func = self.func;
        let data = func
            .axes
            .get(axis)
            .ok_or_else(|| self.malformed(None, format!("loop axis {axis} is not defined")))?;
        if self.active[axis] {
            return Err(self.malformed(
                None,
                format!("loop `{}` is nested inside itself", data.iv_name),
            ));
        }
        self.active[axis] = true;
        self.loops.push(axis);
        let mut result = Ok(());
        for iv in data.lb..data.ub {
            self.ivs[axis] = iv;
            result = self.run_block(&data.body);
            if result.is_err() {
                break;
            }
        }
        self.loops.pop();
        self.active[axis] = false;
        result
    }

    /// Where an operand's tile lies, checked against its tensor.
    fn resolve(&self, inst: Inst, op: &'static str, operand: &Operand) -> Result<Region> {
        let t = operand.tensor;
        let (Some(tdata), Some(buf)) = (self.func.tensors.get(t), self.bufs.get(t.index())) else {
            return Err(self.malformed(Some(inst), format!("operand tensor {t} is not defined")));
        };
        let acc = &operand.access;
        if acc.start.len() != 2 || acc.size.len() != 2 {
            return Err(self.malformed(
                Some(inst),
                format!(
                    "an access to `{}` has {} starts and {} sizes, expected 2 of each",
                    tdata.name,
                    acc.start.len(),
                    acc.size.len()
                ),
            ));
        }
        if acc.slots.len() != buf.block_counts.len() {
            return Err(self.malformed(
                Some(inst),
                format!(
                    "an access to `{}` has {} slot expressions, but the tensor has {} block dimensions",
                    tdata.name,
                    acc.slots.len(),
                    buf.block_counts.len()
                ),
            ));
        }
        let mut slot: u64 = 0;
        for (e, &count) in acc.slots.iter().zip(&buf.block_counts) {
            // count ≥ 1 (checked by Buffer::new) and the product of counts fits in memory.
            let s = self.eval(e, Some(inst))?.rem_euclid(count as i64) as u64;
            slot = slot * count + s;
        }
        let extents = [buf.rows as u64, buf.cols as u64];
        let mut starts = [0usize; 2];
        for d in 0..2 {
            let size = acc.size[d];
            if size == 0 {
                return Err(self.malformed(
                    Some(inst),
                    format!("an access to `{}` is empty", tdata.name),
                ));
            }
            let start = self.eval(&acc.start[d], Some(inst))?;
            let end = i64::try_from(size)
                .ok()
                .and_then(|s| start.checked_add(s))
                .ok_or_else(|| self.malformed(Some(inst), "an access size overflows i64"))?;
            if start < 0 || end as u64 > extents[d] {
                return Err(InterpError::OutOfRange {
                    inst,
                    op,
                    tensor: tdata.name.clone(),
                    dim: d,
                    start,
                    end,
                    extent: extents[d],
                    at: self.iteration(),
                });
            }
            starts[d] = start as usize;
        }
        let Some(pat) = &acc.pattern else {
            return Ok(Region {
                slot: slot as usize,
                row0: starts[0],
                col0: starts[1],
                rows: acc.size[0] as usize,
                cols: acc.size[1] as usize,
                pattern: None,
            });
        };
        // The bounding box lies inside the tensor (checked above), so does every element.
        if pat.bounding_box(2).as_ref() != Some(&acc.size) {
            return Err(self.malformed(
                Some(inst),
                format!(
                    "an access pattern of `{}` does not have its bounding box as its size",
                    tdata.name
                ),
            ));
        }
        let shape = pat.value_shape();
        let offsets = pat
            .offsets()
            .into_iter()
            .map(|v| (v[0] as usize, v[1] as usize))
            .collect();
        Ok(Region {
            slot: slot as usize,
            row0: starts[0],
            col0: starts[1],
            rows: shape[0] as usize,
            cols: shape[1] as usize,
            pattern: Some(offsets),
        })
    }

    fn read(&self, inst: Inst, op: &'static str, operand: &Operand) -> Result<Tile> {
        let region = self.resolve(inst, op, operand)?;
        let (data, undef) = self.read_region(operand.tensor, &region);
        Ok(Tile {
            region,
            data,
            undef,
        })
    }

    /// The values of `region` (checked to lie inside tensor `t`) with their undefined flags.
    fn read_region(&self, t: Tensor, region: &Region) -> (Vec<f32>, Undef) {
        self.bufs[t.index()].read(region)
    }

    /// Writes `values` (with their undefined flags `undef`) to the destination; an undefined
    /// element bound for HBM is the uninitialised-data error, naming the element it was read
    /// from (`src`, for a transfer) or else the destination element.
    fn write(
        &mut self,
        inst: Inst,
        op: &'static str,
        region: &Region,
        operand: &Operand,
        (values, undef): (&[f32], Option<&[bool]>),
        src: Option<(&Operand, &Region)>,
    ) -> Result<()> {
        let t = operand.tensor;
        if self.bufs[t.index()].read_only {
            return Err(InterpError::WriteToInput {
                inst,
                op,
                tensor: self.func.display_name(t).to_string(),
                at: self.iteration(),
            });
        }
        if let Some(i) = undef.and_then(|u| u.iter().position(|&x| x)) {
            if self.bufs[t.index()].hbm {
                let (from, from_region) = src.unwrap_or((operand, region));
                let (slot, row, col) = from_region.element(i);
                let blocked = !self.bufs[from.tensor.index()].block_counts.is_empty();
                return Err(InterpError::Uninitialised {
                    inst,
                    op,
                    tensor: self.func.display_name(from.tensor).to_string(),
                    element: Element {
                        slot: blocked.then_some(slot),
                        row,
                        col,
                    },
                    dest: self.func.display_name(t).to_string(),
                    at: self.iteration(),
                });
            }
        }
        self.bufs[t.index()].write(region, values, undef);
        Ok(())
    }

    /// An error for a source or destination whose shape does not fit the operation.
    fn bad_shape(&self, inst: Inst, what: &str, got: (usize, usize), want: String) -> InterpError {
        self.malformed(
            Some(inst),
            format!("{what} has shape [{}, {}], expected {want}", got.0, got.1),
        )
    }

    /// The destination of `inst` is `[p, f]`, as its operation gives `want`.
    fn dst_shape(&self, inst: Inst, (p, f): (usize, usize), want: (usize, usize)) -> Result<()> {
        if (p, f) != want {
            let (wp, wf) = want;
            return Err(self.bad_shape(inst, "the destination", (p, f), format!("[{wp}, {wf}]")));
        }
        Ok(())
    }

    /// A source of an elementwise operation on a `[p, f]` destination: `[p, f]`, or a `[p, 1]`
    /// column when `column_ok`.
    fn elementwise_src<'t>(
        &self,
        inst: Inst,
        what: &str,
        tile: &'t Tile,
        p: usize,
        f: usize,
        column_ok: bool,
    ) -> Result<Src<'t>> {
        match tile.shape() {
            s if s == (p, f) => Ok(Src::Full(&tile.data)),
            (rows, 1) if rows == p && column_ok => Ok(Src::Column(&tile.data)),
            s => Err(self.bad_shape(
                inst,
                what,
                s,
                if column_ok {
                    format!("[{p}, {f}] or [{p}, 1]")
                } else {
                    format!("[{p}, {f}]")
                },
            )),
        }
    }

    fn exec_inst(&mut self, inst: Inst) -> Result<()> {
        let func = self.func;
        let data: &InstData = func
            .insts
            .get(inst)
            .ok_or_else(|| self.malformed(None, format!("instruction {inst} is not defined")))?;
        let clipped;
        let data = if data.mask.is_empty() {
            data
        } else {
            match self.unmasked(inst, data)? {
                Some(d) => {
                    clipped = d;
                    &clipped
                }
                None => {
                    self.stats.masked_off += 1;
                    return Ok(());
                }
            }
        };
        let op = &data.op;
        let name = op.name();
        if data.srcs.len() != op.num_srcs() {
            return Err(self.malformed(
                Some(inst),
                format!(
                    "{name} takes {} sources, found {}",
                    op.num_srcs(),
                    data.srcs.len()
                ),
            ));
        }
        if op.is_indirect() {
            return self.exec_indirect(inst, data);
        }
        self.exec_direct(inst, data)
    }

    /// Runs unmasked instruction `inst` (`data`, its source count checked) of a direct operation:
    /// reads its sources, computes its destination's values and flags, writes them and counts
    /// it.
    fn exec_direct(&mut self, inst: Inst, data: &InstData) -> Result<()> {
        let op = &data.op;
        let name = op.name();
        let dst = self.resolve(inst, name, &data.dst)?;
        let (p, f) = (dst.rows, dst.cols);
        let mut elements = dst.len() as u64;
        // The source a transfer moves, for naming an undefined element it would store.
        let mut moved = None;
        let (result, undef): Values = match *op {
            // Indirect: `exec_inst` runs them by `exec_indirect`.
            Op::Gather { .. } | Op::Scatter { .. } => (Vec::new(), None),
            Op::Load | Op::Store | Op::Copy => {
                let (values, region) = self.transfer_values(inst, data, (p, f))?;
                moved = Some(region);
                values
            }
            Op::Memset { value } => (vec![value; dst.len()], None),
            Op::Iota { base, pstep, fstep } => (
                (0..p)
                    .flat_map(|pi| (0..f).map(move |fi| vocab::iota(base, pstep, fstep, pi, fi)))
                    .collect(),
                None,
            ),
            Op::Rand { stream } => (
                (0..p as u64)
                    .flat_map(|pi| (0..f as u64).map(move |fi| vocab::rand_at(stream, pi, fi)))
                    .collect(),
                None,
            ),
            Op::Dropout { stream } => self.dropout_values(inst, data, stream, (p, f))?,
            Op::Shuffle { ref mask } => self.shuffle_values(inst, data, mask, (p, f))?,
            Op::LocalGather { .. } => self.local_gather_values(inst, data, (p, f))?,
            Op::SequenceBounds => self.sequence_bounds_values(inst, data, (p, f))?,
            Op::TensorTensor { op: alu } => {
                let a = self.read(inst, name, &data.srcs[0])?;
                let b = self.read(inst, name, &data.srcs[1])?;
                let sa = self.elementwise_src(inst, "source 0", &a, p, f, true)?;
                let sb = self.elementwise_src(inst, "source 1", &b, p, f, true)?;
                let flags = [a.row_flags(), b.row_flags()];
                (
                    kernels::tensor_tensor(alu, sa, sb, p, f),
                    poison::elementwise(&flags, p, f),
                )
            }
            Op::TensorScalar {
                op: alu,
                imm,
                reverse,
            } => {
                let x = self.read(inst, name, &data.srcs[0])?;
                self.elementwise_src(inst, "the source", &x, p, f, false)?;
                (kernels::tensor_scalar(alu, &x.data, imm, reverse), x.undef)
            }
            Op::Activation {
                func: act,
                scale,
                bias,
            } => self.activation_values(inst, data, act, scale, bias, (p, f))?,
            Op::Reduce { op: red } => {
                let (values, read) = self.reduce_values(inst, data, red, (p, f))?;
                elements = read;
                values
            }
            Op::TensorTensorScan { op0, op1 } => self.scan_values(inst, data, op0, op1, (p, f))?,
            Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => {
                let (values, read) = self.top8_values(inst, data, (p, f))?;
                elements = read;
                values
            }
            Op::BnStats | Op::BnAggr => {
                let (values, read) = self.bn_values(inst, data, (p, f))?;
                elements = read;
                values
            }
            Op::Transpose | Op::VectorTranspose => self.transpose_values(inst, data, (p, f))?,
            Op::Matmul { accumulate } => self.matmul_values(inst, data, accumulate, (p, f))?,
        };
        let src = moved.as_ref().map(|r| (&data.srcs[0], r));
        self.write(
            inst,
            name,
            &dst,
            &data.dst,
            (&result, undef.as_deref()),
            src,
        )?;
        self.stats.record(op, data.engine, elements);
        Ok(())
    }

    /// Masked instruction `data` as the unmasked one it is in this iteration: its operands cut
    /// to the active box ([`InstData::clipped`]), or `None` when no element is active.
    fn unmasked(&self, inst: Inst, data: &InstData) -> Result<Option<InstData>> {
        if let Some(why) = data.mask_refusal() {
            return Err(self.malformed(Some(inst), why));
        }
        let shape = data.iter_shape().ok_or_else(|| {
            self.malformed(
                Some(inst),
                "a masked instruction's iteration space is not 2-D",
            )
        })?;
        let mut err = None;
        let active = mask_box(&data.mask, shape, &mut |e| {
            self.eval(e, Some(inst)).unwrap_or_else(|x| {
                err = Some(x);
                0
            })
        });
        if let Some(e) = err {
            return Err(e);
        }
        Ok(active.map(|b| data.clipped(shape, b)))
    }

    /// The values a load, store or copy `inst` (`data`) moves into a `[p, f]` destination, and
    /// the source region they come from. A load or store may move whole runs of HBM rows per
    /// partition (row-major), so its source need not be `[p, f]`.
    fn transfer_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<(Values, Region)> {
        let op = &data.op;
        let src = self.read(inst, op.name(), &data.srcs[0])?;
        let (sr, sc) = src.shape();
        let (hbm, tile) = if *op == Op::Store {
            ([p as u64, f as u64], [sr as u64, sc as u64])
        } else {
            ([sr as u64, sc as u64], [p as u64, f as u64])
        };
        let reshaped = *op != Op::Copy && crate::ir::dma_rows_per_partition(hbm, tile).is_some();
        if src.shape() != (p, f) && !reshaped {
            return Err(self.bad_shape(inst, "the source", src.shape(), format!("[{p}, {f}]")));
        }
        Ok(((src.data, src.undef), src.region))
    }

    /// The values of dropout `inst` (`data`, random `stream`) into a `[p, f]` destination: the
    /// data source, then the `[P, 1]` probability.
    fn dropout_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        stream: u32,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let name = data.op.name();
        let x = self.read(inst, name, &data.srcs[0])?;
        let prob = self.read(inst, name, &data.srcs[1])?;
        self.elementwise_src(inst, "the data", &x, p, f, false)?;
        self.elementwise_src(inst, "the probability", &prob, p, 1, false)?;
        let mut out = x.data.clone();
        for (pi, row) in out.chunks_exact_mut(f.max(1)).enumerate() {
            for (fi, v) in row.iter_mut().enumerate() {
                *v = vocab::dropout(stream, pi as u64, fi as u64, *v, prob.data[pi]);
            }
        }
        let flags = [(x.undef.as_deref(), f), (prob.undef.as_deref(), 1)];
        Ok((out, vocab::poison::elementwise(&flags, p, f)))
    }

    /// The values of reduction `inst` (`data`, operator `red`) into a `[p, f]` destination, which
    /// must be the source's `[P, 1]`, and the number of elements it read.
    fn reduce_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        red: ReduceOp,
        (p, f): (usize, usize),
    ) -> Result<(Values, u64)> {
        let x = self.read(inst, data.op.name(), &data.srcs[0])?;
        let (xp, xf) = x.shape();
        self.dst_shape(inst, (p, f), (xp, 1))?;
        let values = (
            kernels::reduce(red, &x.data, xf),
            poison::rows(&[x.row_flags()], p, 1),
        );
        Ok((values, x.data.len() as u64))
    }

    /// The values of scan `inst` (`data`, operators `op0`, `op1`) into a `[p, f]` destination:
    /// two sources of its shape, then the `[P, 1]` initial value.
    fn scan_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        op0: AluOp,
        op1: AluOp,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let name = data.op.name();
        let a = self.read(inst, name, &data.srcs[0])?;
        let b = self.read(inst, name, &data.srcs[1])?;
        let init = self.read(inst, name, &data.srcs[2])?;
        self.elementwise_src(inst, "source 0", &a, p, f, false)?;
        self.elementwise_src(inst, "source 1", &b, p, f, false)?;
        self.elementwise_src(inst, "the initial value", &init, p, 1, false)?;
        let mut out = vec![0.0f32; p * f];
        for (pi, row) in out.chunks_exact_mut(f.max(1)).enumerate() {
            let span = pi * f..(pi + 1) * f;
            let (d0, d1) = (&a.data[span.clone()], &b.data[span]);
            vocab::tensor_tensor_scan(op0, op1, init.data[pi], d0, d1, row);
        }
        let flags = [a.row_flags(), b.row_flags(), init.row_flags()];
        Ok((out, poison::rows(&flags, p, f)))
    }

    /// The values of a top-8 operation `inst` (`data`: `max8`, `find_index8`,
    /// `match_replace8`) into a `[p, f]` destination, and the number of elements it read: a
    /// source of at least `TOP8_MIN_FREE` columns, then the `[P, 8]` values to find or replace.
    fn top8_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<(Values, u64)> {
        let op = &data.op;
        let name = op.name();
        let x = self.read(inst, name, &data.srcs[0])?;
        let (xp, xf) = x.shape();
        let top = vocab::TOP8;
        let out_f = match op {
            Op::MatchReplace8 { .. } => xf,
            _ => top,
        };
        if (p, f) != (xp, out_f) || xf < vocab::TOP8_MIN_FREE {
            return Err(self.bad_shape(
                inst,
                "the destination",
                (p, f),
                format!("[{xp}, {out_f}] (from a source of at least {top} columns)"),
            ));
        }
        let vals = match op {
            Op::Max8 => None,
            _ => {
                let v = self.read(inst, name, &data.srcs[1])?;
                self.elementwise_src(inst, "the values", &v, p, top, false)?;
                Some(v)
            }
        };
        let mut out = vec![0.0f32; p * f];
        for (pi, (row, o)) in x
            .data
            .chunks_exact(xf)
            .zip(out.chunks_exact_mut(f))
            .enumerate()
        {
            let v = vals.as_ref().map(|v| &v.data[pi * top..(pi + 1) * top]);
            match (op, v) {
                (Op::FindIndex8, Some(v)) => vocab::find_index8(row, v, o),
                (Op::MatchReplace8 { imm }, Some(v)) => vocab::match_replace8(row, v, *imm, o),
                _ => vocab::max8(row, o),
            }
        }
        let mut flags = vec![x.row_flags()];
        flags.extend(vals.as_ref().map(|v| v.row_flags()));
        Ok(((out, poison::rows(&flags, p, f)), x.data.len() as u64))
    }

    /// The values of `bn_stats` or `bn_aggr` `inst` (`data`) into a `[p, f]` destination, which
    /// must be the source's partitions by the operation's width, and the number of elements it
    /// read.
    fn bn_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<(Values, u64)> {
        let op = &data.op;
        let x = self.read(inst, op.name(), &data.srcs[0])?;
        let (xp, xf) = x.shape();
        let width = match op {
            Op::BnStats => vocab::BN_STATS_WIDTH,
            _ => vocab::BN_AGGR_WIDTH,
        };
        self.dst_shape(inst, (p, f), (xp, width))?;
        let rows = x.data.chunks_exact(xf.max(1));
        let values = match op {
            Op::BnStats => rows.flat_map(vocab::bn_stats).collect(),
            _ => rows.flat_map(vocab::bn_aggr).collect(),
        };
        Ok((
            (values, poison::rows(&[x.row_flags()], p, f)),
            x.data.len() as u64,
        ))
    }

    /// The values of a transpose `inst` (`data`, on the Tensor or the Vector engine) into a
    /// `[p, f]` destination, which must be the source's shape transposed.
    fn transpose_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let x = self.read(inst, data.op.name(), &data.srcs[0])?;
        let (xp, xf) = x.shape();
        self.dst_shape(inst, (p, f), (xf, xp))?;
        Ok((
            kernels::transpose(&x.data, xp, xf),
            poison::transpose(x.undef.as_deref(), xp, xf),
        ))
    }

    /// The values of activation `inst` (`data`) into a `[p, f]` destination: the data source,
    /// then the `[P, 1]` scale tile (when `Scale::Tile`), then the `[P, 1]` bias (when `bias`);
    /// the source count is checked by the caller.
    fn activation_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        act: ActFunc,
        scale: Scale,
        bias: bool,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let name = data.op.name();
        let x = self.read(inst, name, &data.srcs[0])?;
        self.elementwise_src(inst, "the source", &x, p, f, false)?;
        let mut scale_tile = None;
        let scale_src = match scale {
            Scale::Imm(v) => ScaleSrc::Imm(v),
            Scale::Tile => {
                let t = scale_tile.insert(self.read(inst, name, &data.srcs[1])?);
                self.elementwise_src(inst, "the scale", t, p, 1, false)?;
                ScaleSrc::Column(&t.data)
            }
        };
        let bias_tile = match bias {
            true => Some(self.read(inst, name, &data.srcs[data.srcs.len() - 1])?),
            false => None,
        };
        if let Some(t) = &bias_tile {
            self.elementwise_src(inst, "the bias", t, p, 1, false)?;
        }
        let values = kernels::activation(
            act,
            &x.data,
            scale_src,
            bias_tile.as_ref().map(|t| &t.data[..]),
            p,
            f,
        );
        let mut flags = vec![x.row_flags()];
        flags.extend(scale_tile.as_ref().map(|t| t.row_flags()));
        flags.extend(bias_tile.as_ref().map(|t| t.row_flags()));
        Ok((values, poison::elementwise(&flags, p, f)))
    }

    /// The values of matmul `inst` (`data`) into a `[p, f]` destination, added to the
    /// destination's with `accumulate`; counts its multiply-accumulates.
    fn matmul_values(
        &mut self,
        inst: Inst,
        data: &InstData,
        accumulate: bool,
        (p, f): (usize, usize),
    ) -> Result<Values> {
        let name = data.op.name();
        let a = self.read(inst, name, &data.srcs[0])?;
        let b = self.read(inst, name, &data.srcs[1])?;
        let (k, m) = a.shape();
        let (kb, n) = b.shape();
        if kb != k {
            return Err(self.bad_shape(inst, "source 1", (kb, n), format!("[{k}, N]")));
        }
        self.dst_shape(inst, (p, f), (m, n))?;
        let mut out = kernels::matmul(&a.data, &b.data, k, m, n);
        let mut undef = poison::matmul(a.undef.as_deref(), b.undef.as_deref(), k, m, n);
        if accumulate {
            let acc = self.read(inst, name, &data.dst)?;
            for (o, &d) in out.iter_mut().zip(&acc.data) {
                // `s + dst`, which IEEE addition makes equal to `dst + s`.
                *o += d;
            }
            undef = poison::union(undef, acc.undef.as_deref());
        }
        self.stats.matmul_macs += (k * m * n) as u64;
        Ok((out, undef))
    }
}

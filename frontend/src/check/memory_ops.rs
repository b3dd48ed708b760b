//! Moving and allocating tiles: `nl.load` (and the view of a DMA), the allocations
//! (`nl.zeros`, `nl.ndarray`, `nl.full`, ...), and the arguments they read: `shape=` (with its
//! dimensions), `dtype=` and `buffer=`.
//!
//! Invariant: an allocated tile has at most 128 partitions, fits its memory (a PSUM bank, SBUF's
//! partition) and has dimensions of at most `MAX_EXTENT`; HBM is read only by a load.

use super::arith::MAX_EXTENT;
use super::comptime::func_name;
use super::error::CheckError;
use super::operands::{Dest, OpKind, Res, StmtCtx};
use super::{CTensor, Checker, TileVal, Value};
use crate::ast::{Expr, ExprKind, Span};
use penguin::{DType, Memory, Op, TensorKind};
use vocab::machine::{PMAX, PSUM_BANK_BYTES};

impl Checker<'_> {
    /// `nl.load(src)`: an HBM slice into a new SBUF tile.
    pub(super) fn load(
        &mut self,
        src_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let (src, _) = self.view(src_e)?;
        let mut src = self.dma_view(src);
        // vector_column.rs: a vector `[n]` loads as NKI's column `[n, 1]`, unless it is loaded
        // into a row.
        if let Some(col) = self.vector_column(&src, src_e) {
            let row_dest = matches!(&dest, Dest::Into { target, .. } if target.size == src.size);
            if !row_dest {
                src = col;
            }
        }
        let t = self.tensor(src.tensor).clone();
        if t.memory != Memory::Hbm {
            self.error(CheckError::LoadNotHbm {
                tensor: t.name.clone(),
                memory: t.memory,
                at: src_e.span.clone(),
            });
            return None;
        }
        let res = Res {
            shape: src.tile_shape(),
            memory: Memory::Sbuf,
            dtype: t.dtype,
        };
        if let Some(idx) = src.indirect.clone() {
            // indirect.rs: a gather, the index tile its second source.
            let op = Op::Gather { skip_oob: false };
            return self.emit(cx, op, vec![src, *idx], res, dest, span);
        }
        let shape = self.value_dims(&src);
        let r = self.emit(cx, Op::Load, vec![src], res, dest, span)?;
        self.keep_shape(&r, shape);
        Some(r)
    }

    /// A whole HBM tensor of 3 or more dimensions moved by a load or store: NKI's tile of it,
    /// partition-major `[d0, d1·d2·...]` (`TileVal::view`). Any other tile is unchanged.
    pub(super) fn dma_view(&self, mut t: TileVal) -> TileVal {
        if t.view.is_none() && self.tensor(t.tensor).memory == Memory::Hbm {
            if let Some(dims) = self.logical_dims(&t).filter(|d| d.len() > 2) {
                t.view = Some([dims[0], dims[1..].iter().product()]);
            }
        }
        t
    }

    /// `nl.zeros(shape, dtype=, buffer=)` and `nl.ndarray(...)`.
    pub(super) fn alloc(
        &mut self,
        kind: OpKind,
        name: &str,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        // `nl.full` has its fill value second.
        let (fill, slots) = match kind {
            OpKind::Full | OpKind::NisaMemset => {
                let v = self.const_value(slots[1]?).map(|c| c.as_f64() as f32);
                (Some(v?), [slots[0], slots[2], slots[3]])
            }
            _ => (None, [slots[0], slots[1], slots[2]]),
        };
        let memory = match slots[2] {
            Some(b) => self.buffer_of(b),
            None => Some(Memory::Sbuf),
        };
        // tile_nd: an on-chip tile of other than 2 dimensions, or with `nl.par_dim` not first.
        if memory != Some(Memory::Hbm) {
            let r = self.alloc_tile_nd(kind, name, fill, &slots, memory, span, cx, &dest);
            if let Some(r) = r {
                return r;
            }
        }
        // An HBM array may have any rank (`nd`); a tile has 2.
        let (shape, dims) = if memory == Some(Memory::Hbm) {
            match self.hbm_dims(slots[0]?) {
                Some((dims, flat)) => (Some(flat), Some(dims)),
                None => (None, None),
            }
        } else {
            (self.shape_of(slots[0]?), None)
        };
        let dtype = self.dtype_of(slots[1]?);
        let (shape, dtype, memory) = (shape?, dtype?, memory?);
        let Dest::New { .. } = dest else {
            self.error(CheckError::UnboundBuffer {
                name: name.to_string(),
                at: span.clone(),
            });
            return None;
        };
        let mut ok = true;
        if memory == Memory::Psum && dtype == DType::Bf16 {
            self.error(CheckError::Bf16InPsum {
                at: slots[1]?.span.clone(),
            });
            ok = false;
        }
        if memory == Memory::Psum && shape[1] * dtype.size_bytes() > PSUM_BANK_BYTES {
            self.error(CheckError::PsumTooLarge {
                shape,
                bytes: shape[1] * dtype.size_bytes(),
                at: slots[0]?.span.clone(),
            });
            ok = false;
        }
        if kind != OpKind::Ndarray && memory == Memory::Hbm {
            self.error(CheckError::MemsetHbm {
                name: name.to_string(),
                at: span.clone(),
            });
            ok = false;
        }
        if !ok {
            return None;
        }
        let res = Res {
            shape,
            memory,
            dtype,
        };
        if kind != OpKind::Ndarray {
            let value = fill.unwrap_or(if kind == OpKind::Ones { 1.0 } else { 0.0 });
            return self.emit(cx, Op::Memset { value }, vec![], res, dest, span);
        }
        // An ndarray: a tensor without an instruction.
        let Dest::New { name, span: bspan } = dest else {
            return None;
        };
        if memory != Memory::Hbm && shape[0] > PMAX {
            self.error(CheckError::TooManyPartitions {
                memory,
                shape,
                result: false,
                at: slots[0]?.span.clone(),
            });
            return None;
        }
        let t = self.new_tensor(CTensor {
            name,
            memory,
            dtype,
            shape,
            kind: TensorKind::Local,
            span: bspan,
        });
        if let Some(dims) = dims.filter(|d| d.len() != 2) {
            self.logical.insert(t, dims);
        }
        if memory == Memory::Hbm {
            if let Some(int) = slots[1].and_then(declared_int) {
                self.tile_nd.int_dtypes.insert(t, int);
            }
        }
        Some(TileVal::whole(t, shape))
    }

    /// `(rows, cols)`: two positive compile-time integers.
    pub(super) fn shape_of(&mut self, e: &Expr) -> Option<[u64; 2]> {
        if let ExprKind::Attribute { value, attr } = &e.kind {
            if attr.name == "shape" {
                let shape = self.shape_value(value)?;
                if let [r, c] = shape[..] {
                    return Some([r, c]);
                }
                self.error(CheckError::ShapeDims {
                    shape: shape.clone(),
                    at: e.span.clone(),
                });
                return None;
            }
        }
        let ExprKind::Tuple(items) = &e.kind else {
            if !matches!(e.kind, ExprKind::Error) {
                self.error(CheckError::ShapeNotTuple { at: e.span.clone() });
            }
            return None;
        };
        // A tile of one dimension, `(nl.par_dim(n),)`: its partition dimension, one element on
        // each partition.
        if let [p] = items.as_slice() {
            return Some([self.dim(p)?, 1]);
        }
        if items.len() != 2 {
            self.error(CheckError::ShapeArity {
                dims: items.len(),
                at: e.span.clone(),
            });
            return None;
        }
        let a = self.dim(&items[0]);
        let b = self.dim(&items[1]);
        Some([a?, b?])
    }

    /// One dimension of a shape: a compile-time integer ≥ 1.
    pub(super) fn dim(&mut self, e: &Expr) -> Option<u64> {
        // `nl.par_dim(n)` marks the partition dimension, which is always the first here.
        let e = match &e.kind {
            ExprKind::Call { func, args, kwargs }
                if func_name(func) == "nl.par_dim" && args.len() == 1 && kwargs.is_empty() =>
            {
                &args[0]
            }
            _ => e,
        };
        let v = self.const_int(e)?;
        if v > MAX_EXTENT {
            self.error(CheckError::DimTooLarge {
                value: v,
                max: MAX_EXTENT,
                at: e.span.clone(),
            });
            return None;
        }
        if v < 1 {
            self.error(CheckError::DimNotPositive {
                value: v,
                at: e.span.clone(),
            });
            return None;
        }
        Some(v as u64)
    }

    /// `nl.float32` or `nl.bfloat16`.
    pub(super) fn dtype_of(&mut self, e: &Expr) -> Option<DType> {
        if let ExprKind::Attribute { value, attr } = &e.kind {
            if let (ExprKind::Name(n), "dtype") = (&value.kind, attr.name.as_str()) {
                if n != "nl" {
                    return match self.lookup(n, &value.span) {
                        Value::Tile(t) => Some(self.tensor(t.tensor).dtype),
                        Value::Param(t) => Some(self.tensor(t).dtype),
                        Value::Error => None,
                        _ => {
                            self.error(CheckError::ScalarDtype {
                                name: n.to_string(),
                                at: value.span.clone(),
                            });
                            None
                        }
                    };
                }
            }
        }
        match e.attr_of(&["nl", "np", "numpy"]) {
            Some("float32") => return Some(DType::F32),
            Some("bfloat16") => return Some(DType::Bf16),
            // Integer tiles (indices, counts) are held as float32, exact below 2^24.
            Some("uint32" | "int32" | "uint16" | "int16" | "uint8" | "int8") => {
                return Some(DType::F32)
            }
            _ => {}
        }
        if matches!(e.kind, ExprKind::Error) {
            return None;
        }
        self.error(CheckError::UnsupportedDtype { at: e.span.clone() });
        None
    }

    /// `nl.sbuf`, `nl.psum`, `nl.shared_hbm` (or `nl.hbm`).
    pub(super) fn buffer_of(&mut self, e: &Expr) -> Option<Memory> {
        match e.attr_of(&["nl"]) {
            Some("sbuf") => return Some(Memory::Sbuf),
            Some("psum") => return Some(Memory::Psum),
            Some("shared_hbm" | "hbm") => return Some(Memory::Hbm),
            _ => {}
        }
        if matches!(e.kind, ExprKind::Error) {
            return None;
        }
        self.error(CheckError::BadBuffer { at: e.span.clone() });
        None
    }
}

/// NKI's name of the integer dtype `e` names (`nl.uint32`, `np.int8`), which nkc holds as
/// float32 ([`Checker::dtype_of`]): `None` for any other expression.
fn declared_int(e: &Expr) -> Option<&'static str> {
    Some(match e.attr_of(&["nl", "np", "numpy"])? {
        "uint32" => "uint32",
        "int32" => "int32",
        "uint16" => "uint16",
        "int16" => "int16",
        "uint8" => "uint8",
        "int8" => "int8",
        _ => return None,
    })
}

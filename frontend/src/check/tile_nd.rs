//! On-chip tiles of other than two dimensions: `nl.ndarray((K, nl.par_dim(128), 512), ...)`,
//! `nl.zeros((nl.par_dim(128), 4, 512), ...)`, `nl.ndarray(x.shape, ...)` of a 3-D `x`, and their
//! subscripts.
//!
//! In NKI the dimension marked `nl.par_dim` (the first one when none is marked) is the partition
//! dimension; the dimensions before it are *block* dimensions (an array of `[P, free...]` tiles)
//! and those after it are free dimensions. nkc folds all of them but the partition dimension into
//! the one free dimension of a Penguin tile, row-major: `(K, par(P), A, B)` is the tensor
//! `[P, K·A·B]`, and element `[k, p, a, b]` is at free offset `(k·A + a)·B + b` of partition `p`.
//! No layer below the front end sees the difference: a block of the array is a contiguous range
//! of the free dimension, selected with an affine start like any slice.
//!
//! The declared dimensions are kept beside the tensor (in `Checker::logical`, as for HBM arrays,
//! so that `t.shape` gives them) with the position of the partition dimension
//! (`TileNdData::par`). A subscript `t[k, i_p, a0:a1, :]` names every dimension (missing trailing
//! ones are whole): the partition index selects partitions, and the others must select bytes that
//! are contiguous in each partition for a box: once a dimension selects part of its extent, every
//! dimension outside it (block dimensions included) selects a single index. Any other subscript
//! (strided, a window, several vectors in one index) is an access pattern (`patterns_nd`). The
//! result is a 2-D tile `[partitions, free elements]`. A tile nkc made `[P, F]` whose NKI shape
//! has more axes (a load of an N-D view) keeps that shape in `TileNdData::shaped`, and a
//! subscript naming every one of its axes reads it as that shape.
//!
//! Invariants: a tensor in `par` is on chip, has an entry in `Checker::logical`, and its stored
//! shape is `[dims[par], product of the other dims]`; each access to a PSUM array stays within
//! one bank (`psum_banks`). A PSUM array declared larger than the PSUM (8 banks of 2 KiB per
//! partition) is recorded with its E0141 (`TileNdData::arrays`): lowering contracts it by
//! lifetime (`crate::fit_arrays`), and only one that still does not fit gets the diagnostic.

use super::arith::MAX_EXTENT;
use super::comptime::par_dim_arg;
use super::error::CheckError;
use super::operands::{Dest, OpKind, Res, StmtCtx};
use super::{CTensor, Checker, TileVal};
use crate::ast::{Expr, ExprKind, Index, Span};
use crate::codes;
use penguin::{AffineExpr, DType, Memory, Op, Tensor, TensorKind};
use std::collections::HashMap;
use vocab::machine::{PMAX, PSUM_BANK_BYTES, PSUM_PARTITION_BYTES, SBUF_PARTITION_BYTES};
use vocab::Diagnostic;

/// The multi-dimensional views of the kernel being checked.
#[derive(Debug, Default)]
pub(crate) struct TileNdData {
    /// On-chip tensors declared with other than `[partitions, free]`: the position of the
    /// partition dimension in their logical shape.
    pub par: HashMap<Tensor, usize>,
    /// Names bound to `x.reshape(shape)` of an HBM tensor, by binding span: the new logical shape.
    pub reshaped: HashMap<Span, Vec<u64>>,
    /// Tiles nkc made `[P, F]` whose NKI shape has more axes (a load of an N-D view or of an
    /// access pattern): that shape, partition first. A subscript naming every axis, or a
    /// reduction over several, reads the tile as that shape (`patterns_nd`).
    pub shaped: HashMap<Tensor, Vec<u64>>,
    /// The tensors an instruction traced so far reads or writes: an HBM tensor none has yet may
    /// be stored in rows of another length by a reshape (`reshape`).
    pub accessed: std::collections::HashSet<Tensor>,
    /// Parameters a reshape stores in rows of another length, with their declared shapes
    /// ([`super::CheckedKernel::restored`]).
    pub restored: std::collections::BTreeMap<Tensor, Vec<u64>>,
    /// HBM arrays declared with an integer dtype ([`super::CheckedKernel::int_dtypes`]).
    pub int_dtypes: std::collections::BTreeMap<Tensor, &'static str>,
    /// PSUM arrays of several blocks, each with its E0141 when it is declared larger than the
    /// PSUM, and `nl.ndarray` SBUF arrays of several blocks declared larger than a partition,
    /// with their diagnostic ([`super::CheckedKernel::arrays`]).
    pub arrays: Vec<(Tensor, Option<Diagnostic>)>,
}

/// The items of a tile shape written as a tuple that is not the plain `(P, F)`: more than two
/// dimensions, `nl.par_dim` on another than the first, or `par_dim` imported by name.
fn nd_shape_items(e: &Expr) -> Option<&[Expr]> {
    let ExprKind::Tuple(items) = &e.kind else {
        return None;
    };
    let marked_later = items.iter().skip(1).any(|i| par_dim_arg(i).is_some());
    // `par_dim(n)` imported by name: the 2-D path knows only `nl.par_dim`.
    let bare = items.iter().any(|i| {
        matches!(&i.kind, ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Name(n) if n == "par_dim"))
    });
    (items.len() > 2 || marked_later || bare).then_some(items.as_slice())
}

impl Checker<'_> {
    /// `nl.ndarray` / `nl.zeros` / `nl.full` of an on-chip tile with a shape of other than
    /// `(P, F)`: `None` when the shape is not one (the 2-D path takes it). `fill` is the value
    /// of `nl.full`; `slots` are `[shape, dtype, buffer]`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn alloc_tile_nd(
        &mut self,
        kind: OpKind,
        name: &str,
        fill: Option<f32>,
        slots: &[Option<&Expr>; 3],
        memory: Option<Memory>,
        span: &Span,
        cx: &mut StmtCtx,
        dest: &Dest,
    ) -> Option<Option<TileVal>> {
        let shape_e = slots[0]?;
        // `x.shape` of a tensor of more than 2 dimensions: the partition dimension first.
        if let ExprKind::Attribute { value, attr } = &shape_e.kind {
            if attr.name != "shape" {
                return None;
            }
            let Some(dims) = self.shape_value(value) else {
                return Some(None);
            };
            if dims.len() <= 2 {
                return None;
            }
            let site = AllocSite {
                kind,
                name,
                fill,
                shape_e,
                slots,
                memory,
                span,
            };
            return Some(self.alloc_dims(&site, dims, 0, cx, dest));
        }
        let items = nd_shape_items(shape_e)?;
        Some(self.alloc_nd(
            kind, name, fill, items, shape_e, slots, memory, span, cx, dest,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn alloc_nd(
        &mut self,
        kind: OpKind,
        name: &str,
        fill: Option<f32>,
        items: &[Expr],
        shape_e: &Expr,
        slots: &[Option<&Expr>; 3],
        memory: Option<Memory>,
        span: &Span,
        cx: &mut StmtCtx,
        dest: &Dest,
    ) -> Option<TileVal> {
        let marks: Vec<usize> = (0..items.len())
            .filter(|&i| par_dim_arg(&items[i]).is_some())
            .collect();
        if marks.len() > 1 {
            self.error(
                Diagnostic::new(
                    codes::TILE_ND_SHAPE,
                    "a tile shape marks more than one partition dimension",
                    shape_e.span.clone(),
                )
                .with_label("two `nl.par_dim`")
                .with_help("mark one dimension with `nl.par_dim(n)`: the partition dimension"),
            );
            return None;
        }
        let par = marks.first().copied().unwrap_or(0);
        let dims: Vec<Option<u64>> = items.iter().map(|i| self.dim(par_arg(i))).collect();
        let Some(dims) = dims.into_iter().collect::<Option<Vec<u64>>>() else {
            // A bad dtype is reported too.
            let _ = slots[1].and_then(|d| self.dtype_of(d));
            return None;
        };
        let site = AllocSite {
            kind,
            name,
            fill,
            shape_e,
            slots,
            memory,
            span,
        };
        self.alloc_dims(&site, dims, par, cx, dest)
    }

    /// An on-chip tile of logical shape `dims`, partition dimension `par`.
    fn alloc_dims(
        &mut self,
        site: &AllocSite<'_, '_>,
        dims: Vec<u64>,
        par: usize,
        cx: &mut StmtCtx,
        dest: &Dest,
    ) -> Option<TileVal> {
        let AllocSite {
            kind,
            name,
            fill,
            shape_e,
            slots,
            memory,
            span,
        } = *site;
        let dtype = slots[1].and_then(|d| self.dtype_of(d));
        let (dtype, memory) = (dtype?, memory?);
        let p = dims[par];
        let free = dims
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != par)
            .try_fold(1u64, |acc, (_, &d)| acc.checked_mul(d))
            .filter(|&f| f <= MAX_EXTENT as u64);
        let Some(free) = free else {
            self.error(
                Diagnostic::new(
                    codes::TILE_ND_SHAPE,
                    format!("a tile of shape {dims:?} is too large"),
                    shape_e.span.clone(),
                )
                .with_label(format!("more than {MAX_EXTENT} elements in each partition")),
            );
            return None;
        };
        let flat = [p, free];
        if !matches!(dest, Dest::New { .. }) {
            self.error(CheckError::UnboundBuffer {
                name: name.to_string(),
                at: span.clone(),
            });
            return None;
        }
        if p > PMAX {
            self.error(CheckError::TooManyPartitions {
                memory,
                shape: flat,
                result: false,
                at: shape_e.span.clone(),
            });
            return None;
        }
        if memory == Memory::Psum && dtype == DType::Bf16 {
            self.error(CheckError::Bf16InPsum {
                at: slots[1]?.span.clone(),
            });
            return None;
        }
        // psum_banks.rs: an array of several banks, each access within one bank. One larger
        // than the PSUM fits when its blocks are live one iteration at a time (`fit_arrays`).
        let bytes = free * dtype.size_bytes();
        let oversized = (memory == Memory::Psum && bytes > PSUM_PARTITION_BYTES)
            .then(|| psum_array_too_large(&dims, par, bytes, &shape_e.span));
        let res = Res {
            shape: flat,
            memory,
            dtype,
        };
        let t = if kind == OpKind::Ndarray {
            let Dest::New { name, span: bspan } = dest.clone() else {
                return None;
            };
            let ct = CTensor {
                name,
                memory,
                dtype,
                shape: flat,
                kind: TensorKind::Local,
                span: bspan,
            };
            let t = if memory == Memory::Sbuf && bytes > SBUF_PARTITION_BYTES {
                // An SBUF array past a partition: diagnosed only if it stays so (`fit_arrays`).
                let d = CheckError::SbufTileTooLarge {
                    tensor: ct.name.clone(),
                    shape: flat,
                    bytes,
                    at: ct.span.clone(),
                };
                self.tensors.push(ct);
                let t = Tensor::from_u32((self.tensors.len() - 1) as u32);
                self.tile_nd.arrays.push((t, Some(d.into())));
                t
            } else {
                self.new_tensor(ct)
            };
            TileVal::whole(t, flat)
        } else {
            let value = fill.unwrap_or(0.0);
            self.emit(cx, Op::Memset { value }, vec![], res, dest.clone(), span)?
        };
        if memory == Memory::Psum {
            self.tile_nd.arrays.push((t.tensor, oversized));
        }
        self.logical.insert(t.tensor, dims);
        self.tile_nd.par.insert(t.tensor, par);
        Some(t)
    }

    /// `t[indices]` when `t` is a multi-dimensional on-chip tile (whole) or a name bound to a
    /// reshaped HBM tensor: `None` for every other subscript.
    pub(super) fn subscript_tile_nd(
        &mut self,
        base: &TileVal,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<Option<TileVal>> {
        if let Some(dims) = self.reshaped_dims(name) {
            if base.is_whole(self.tensor(base.tensor).shape) {
                if self.tensor(base.tensor).memory != Memory::Hbm {
                    // tile_reshape.rs: a name bound to a reshaped on-chip tile.
                    return Some(self.subscript_reshaped_tile(base, &dims, name, indices, span));
                }
                return Some(self.subscript_nd(base, &dims, name, indices, span));
            }
        }
        if let Some(dims) = self.tile_nd.shaped.get(&base.tensor) {
            if indices.len() == dims.len() && base.is_whole(self.tensor(base.tensor).shape) {
                let dims = dims.clone();
                return Some(self.subscript_on_chip(base, &dims, 0, name, indices, span));
            }
        }
        let &par = self.tile_nd.par.get(&base.tensor)?;
        let dims = self.logical_dims(base)?.clone();
        Some(self.subscript_on_chip(base, &dims, par, name, indices, span))
    }

    /// The logical shape of the name `name` when it is bound to a reshaped HBM tensor.
    pub(crate) fn reshaped_dims(&self, name: &str) -> Option<Vec<u64>> {
        let b = self.find(name)?;
        self.tile_nd.reshaped.get(&b.span).cloned()
    }

    pub(super) fn subscript_on_chip(
        &mut self,
        base: &TileVal,
        dims: &[u64],
        par: usize,
        name: &str,
        indices: &[Index],
        span: &Span,
    ) -> Option<TileVal> {
        // patterns_nd: windows, strided views and exchanged index vectors.
        let lay = super::patterns_nd::NdLayout::on_chip(dims, par);
        if self.nd_wants_pattern(indices, |d| usize::from(d != par)) {
            return self.nd_pattern(base, &lay, name, indices, span);
        }
        let sel = self.select_dims(dims, name, indices, span, |d| usize::from(d != par))?;
        // The free offset, row-major over the dimensions other than the partition one.
        let mut start = AffineExpr::constant(0);
        let mut size = 1u64;
        let mut stride = 1i64;
        // Whether a dimension inside this one selects part of its extent.
        let mut partial = false;
        for d in (0..dims.len()).rev().filter(|&d| d != par) {
            let (lo, n) = &sel[d];
            start = super::arith::lin(&start, 1, lo, stride).or_else(|| {
                self.error(CheckError::SliceOverflow { at: span.clone() });
                None
            })?;
            if partial && *n > 1 {
                // Not contiguous in a partition: an access pattern (patterns_nd), which
                // refuses what the machine cannot step.
                return self.nd_pattern(base, &lay, name, indices, span);
            }
            let whole = *n == dims[d] && lo.as_constant() == Some(0);
            partial |= !whole;
            size *= n;
            stride *= dims[d] as i64;
        }
        let lin = |a: &AffineExpr, b: &AffineExpr| super::arith::lin(a, 1, b, 1);
        let (Some(p0), Some(f0)) = (
            lin(&base.start[0], &sel[par].0),
            lin(&base.start[1], &start),
        ) else {
            self.error(CheckError::SliceOverflow { at: span.clone() });
            return None;
        };
        // NKI's shape of the slice: the dimensions a slice (or a missing index) keeps, in order.
        // Kept when more than 2, so that an operation on it keeps that shape (`value_dims`).
        let kept: Vec<u64> = (0..dims.len())
            .filter(|&d| match indices.get(d) {
                None | Some(Index::Slice { .. }) => true,
                Some(Index::Expr(_)) => sel[d].1 > 1,
            })
            .map(|d| sel[d].1)
            .collect();
        Some(TileVal {
            tensor: base.tensor,
            start: [p0, f0],
            size: [sel[par].1, size],
            view: None,
            pattern: None,
            dims: (kept.len() > 2).then_some(kept),
            indirect: None,
        })
    }
}

/// Where an on-chip array is allocated: the call's operation, name, fill value, shape
/// expression, `[shape, dtype, buffer]` arguments, memory and span.
#[derive(Clone, Copy)]
struct AllocSite<'a, 'e> {
    kind: OpKind,
    name: &'a str,
    fill: Option<f32>,
    shape_e: &'e Expr,
    slots: &'a [Option<&'e Expr>; 3],
    memory: Option<Memory>,
    span: &'a Span,
}

/// The size of a dimension item: `nl.par_dim(n)`'s `n`, or the item itself.
fn par_arg(e: &Expr) -> &Expr {
    par_dim_arg(e).unwrap_or(e)
}

/// `(4, par(128), 512)` for messages.
fn show_dims(dims: &[u64], par: usize) -> String {
    let items: Vec<String> = dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i == par {
                format!("par({d})")
            } else {
                d.to_string()
            }
        })
        .collect();
    format!("({})", items.join(", "))
}

fn psum_array_too_large(dims: &[u64], par: usize, bytes: u64, at: &Span) -> Diagnostic {
    Diagnostic::new(
        codes::PSUM_TOO_LARGE,
        format!(
            "a PSUM array {} takes {bytes} bytes per partition, more than the PSUM's {PSUM_PARTITION_BYTES} (8 banks of {PSUM_BANK_BYTES})",
            show_dims(dims, par)
        ),
        at.clone(),
    )
    .with_label("larger than the PSUM")
    .with_note("a PSUM array may span several banks, each access within one bank")
    .with_note("blocks that live one at a time share storage (a block written and read within one iteration of the loop that indexes it); these are live at once: a block is still to be read when another is written (by a later loop, or another iteration)")
    .with_help("declare one PSUM tile inside the loop that fills it (`t = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)`), and copy each result to an SBUF array")
}

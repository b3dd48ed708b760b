//! `x.reshape(shape)` of an HBM tensor (of an on-chip tile: `tile_reshape.rs`), and `nl.load_transpose2d` of a tensor taller than 128
//! rows.
//!
//! The receiver may be any tile expression (`nl.max(t, axis=2).reshape((P, 1, n))`): a value
//! that is not a name is computed first, into a temporary tile, and that tile is reshaped as a
//! name's would be. A part of an HBM tensor (`x[b].reshape(...)`) is refused with what to write
//! instead, as a part of a named one is.
//!
//! An HBM tensor is stored row-major as the 2-D array `[rows, cols]` (`nd`). `x.reshape(shape)`
//! is a view of the same bytes with another logical shape: no instruction, the same tensor, and
//! the new dimensions kept beside the name it is bound to (`TileNdData::reshaped`, by binding
//! span) or used at once (`x.reshape(shape)[...]`). Its subscripts follow `nd`'s rules. nkc
//! expresses every access as a rectangle of the stored array, so a reshape keeps the length of
//! the stored rows (its last dimension is the stored array's last): `[N]` to `(1, N)`, `[B, S, D]`
//! to `(B·S, D)` and back. One dimension may be `-1` (inferred). The element counts must match.
//!
//! `nl.load_transpose2d(src)` of `src[R, C]` gives `[C, R]`: NKI does it with one DMA transpose.
//! With `R ≤ 128` the front end's own path (a load and one Tensor-engine transpose) takes it;
//! with `R > 128` (and `C ≤ 128`) it is done per block of 128 rows: a load, a transpose into
//! PSUM, and a copy into the block's columns of the result.

use super::error::CheckError;
use super::nd::flatten;
use super::operands::{Dest, Res, StmtCtx};
use super::{CTensor, Checker, TileVal, Value};
use crate::ast::{Expr, ExprKind, Keyword, Span};
use crate::codes;
use penguin::{AffineExpr, DType, Memory, Op, TensorKind};
use vocab::machine::PMAX;
use vocab::Diagnostic;

/// `x.reshape(...)` with `x` a name that is not a module: the name, its span, and the call's
/// arguments.
fn reshape_parts(e: &Expr) -> Option<(&str, &Span, &[Expr], &[Keyword])> {
    let ExprKind::Call { func, args, kwargs } = &e.kind else {
        return None;
    };
    let ExprKind::Attribute { value, attr } = &func.kind else {
        return None;
    };
    let ExprKind::Name(n) = &value.kind else {
        return None;
    };
    let module = matches!(n.as_str(), "nl" | "nisa" | "np" | "math" | "nki");
    (attr.name == "reshape" && !module).then_some((n.as_str(), &value.span, args, kwargs))
}

/// `value.reshape(...)` where `value` is not a plain name (a call, a subscript): the receiver
/// and the call's arguments.
fn computed_reshape_parts(e: &Expr) -> Option<(&Expr, &[Expr], &[Keyword])> {
    let ExprKind::Call { func, args, kwargs } = &e.kind else {
        return None;
    };
    let ExprKind::Attribute { value, attr } = &func.kind else {
        return None;
    };
    let named = matches!(&value.kind, ExprKind::Name(_));
    (attr.name == "reshape" && !named).then_some((&**value, args.as_slice(), kwargs.as_slice()))
}

impl Checker<'_> {
    /// `value.reshape(shape)` with `value` a tile expression that is not a name: the value is
    /// computed (or viewed, for a subscript) and reshaped as a tile bound to a name would be.
    /// `None` when `e` is not one.
    pub(super) fn reshape_computed(
        &mut self,
        e: &Expr,
        cx: &mut StmtCtx,
        dest: &Dest,
    ) -> Option<Option<TileVal>> {
        let (recv, args, kwargs) = computed_reshape_parts(e)?;
        let base = match &recv.kind {
            ExprKind::Subscript { .. } => self.view(recv).map(|(t, _)| t),
            _ => self.tile_expr(recv, cx, Dest::Temp, false),
        };
        let base = base?;
        let tt = self.tensor(base.tensor).clone();
        if tt.memory == Memory::Hbm {
            self.error(
                Diagnostic::new(
                    codes::RESHAPE_LAYOUT,
                    format!("nkc reshapes whole HBM tensors only, and this is a part of `{}`", tt.name),
                    e.span.clone(),
                )
                .with_label("a part of an HBM tensor")
                .with_help("reshape the whole HBM tensor first (`x = x.reshape((b * c, h * w))`), then index the view"),
            );
            return Some(None);
        }
        let (t, dims) = self.reshape_tile(e, base, &tt.name, args, kwargs)?;
        match dest {
            Dest::New { span, .. } => {
                self.tile_nd.reshaped.insert(span.clone(), dims);
                Some(Some(t))
            }
            Dest::Temp => Some(Some(t)),
            Dest::Into { .. } => {
                let res = Res::sbuf(t.size);
                Some(self.emit(cx, Op::Copy, vec![t], res, dest.clone(), &e.span))
            }
        }
    }

    /// `x.reshape(shape)` as the value of a call expression: `None` when `e` is not one. Bound to
    /// a name (`dest` new), the name keeps the new shape.
    pub(super) fn reshape_call(&mut self, e: &Expr, dest: &Dest) -> Option<Option<TileVal>> {
        reshape_parts(e)?;
        let bind = matches!(dest, Dest::New { .. });
        let Some((t, dims)) = self.reshape_of(e, bind) else {
            return Some(None);
        };
        match dest {
            Dest::New { span, .. } => {
                self.tile_nd.reshaped.insert(span.clone(), dims);
                Some(Some(t))
            }
            Dest::Temp => Some(Some(t)),
            Dest::Into { .. } => {
                self.error(CheckError::HbmOperand {
                    tensor: self.tensor(t.tensor).name.clone(),
                    what: "a copy".to_string(),
                    at: e.span.clone(),
                });
                Some(None)
            }
        }
    }

    /// `x.reshape(shape)` or `x.reshape(shape)[...]` where a view is read (`nl.load`'s source):
    /// `None` when `e` is neither.
    pub(super) fn reshape_view(&mut self, e: &Expr) -> Option<Option<(TileVal, String)>> {
        if let Some((name, ..)) = reshape_parts(e) {
            let name = name.to_string();
            return Some(self.reshape_of(e, false).map(|(t, _)| (t, name)));
        }
        let ExprKind::Subscript { value, indices } = &e.kind else {
            return None;
        };
        let (name, ..) = reshape_parts(value)?;
        let name = name.to_string();
        let Some((t, dims)) = self.reshape_of(value, false) else {
            return Some(None);
        };
        if self.tensor(t.tensor).memory != Memory::Hbm {
            // tile_reshape.rs: the reshaped tile read through a subscript.
            return Some(
                self.subscript_reshaped_tile(&t, &dims, &name, indices, &e.span)
                    .map(|v| (v, name)),
            );
        }
        Some(
            self.subscript_nd(&t, &dims, &name, indices, &e.span)
                .map(|v| (v, name)),
        )
    }

    /// The tensor `x.reshape(...)` views, whole, with its new logical shape.
    fn reshape_of(&mut self, e: &Expr, bind: bool) -> Option<(TileVal, Vec<u64>)> {
        let (name, name_span, args, kwargs) = reshape_parts(e)?;
        let base = match self.lookup(name, name_span) {
            Value::Tile(t) => t,
            Value::Param(t) => TileVal::whole(t, self.tensor(t).shape),
            Value::Error => return None,
            _ => {
                self.error(CheckError::ExpectedTile {
                    at: name_span.clone(),
                });
                return None;
            }
        };
        let tt = self.tensor(base.tensor).clone();
        let whole = base.is_whole(tt.shape);
        if tt.memory != Memory::Hbm {
            // tile_reshape.rs: a view of an on-chip tile that keeps its partitions.
            return self.reshape_tile(e, base, name, args, kwargs);
        }
        if !whole {
            self.error(
                Diagnostic::new(
                    codes::RESHAPE_LAYOUT,
                    format!("nkc reshapes whole HBM tensors only, and `{name}` is not one"),
                    e.span.clone(),
                )
                .with_label("a part of an HBM tensor")
                .with_help("reshape the HBM tensor before loading it, or index the tile as it is"),
            );
            return None;
        }
        let old: Vec<u64> = self
            .reshaped_dims(name)
            .or_else(|| self.logical_dims(&base).cloned())
            .unwrap_or_else(|| tt.shape.to_vec());
        let dims = self.reshape_dims(e, name, args, kwargs, &old)?;
        match flatten(&dims) {
            Some(flat) if flat == tt.shape => Some((base, dims)),
            // No instruction has touched the tensor yet: it is stored in rows of the new last
            // dimension from now on (the same bytes, row-major), and its other views keep their
            // shapes but can no longer be indexed (`nd::subscript_nd` checks).
            Some(flat)
                if !self.tile_nd.accessed.contains(&base.tensor)
                    && self.logical.contains_key(&base.tensor)
                    && matches!(
                        tt.kind,
                        TensorKind::Input | TensorKind::Local | TensorKind::Output
                    ) =>
            {
                let shape = flat;
                self.tensors[base.tensor.as_u32() as usize].shape = shape;
                if tt.kind == TensorKind::Input {
                    // The run's input keeps the declared shape: the same bytes, row-major.
                    (self.tile_nd.restored)
                        .entry(base.tensor)
                        .or_insert(old.clone());
                }
                Some((TileVal::whole(base.tensor, shape), dims))
            }
            // A name bound to the view (`out = out.reshape((n,))` before `return out`): it has
            // the new shape, and indexing it is refused (`nd::subscript_nd` checks).
            Some(_) if bind => Some((base, dims)),
            _ => {
                self.error(
                    Diagnostic::new(
                        codes::RESHAPE_LAYOUT,
                        format!("nkc cannot view `{name}` (stored as [{}, {}]) with shape {dims:?}", tt.shape[0], tt.shape[1]),
                        e.span.clone(),
                    )
                    .with_label("the last dimension changes")
                    .with_note("an HBM tensor is stored as rows of its last dimension; nkc reads it in rectangles of those rows")
                    .with_help(format!("keep the last dimension ({}): merge or split only the leading ones", tt.shape[1])),
                );
                None
            }
        }
    }

    /// The new dimensions of `name.reshape(...)` (`e`) of a value of dimensions `old`: the
    /// shape's items, one of them possibly `-1` (inferred), with the same number of elements.
    pub(super) fn reshape_dims(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Expr],
        kwargs: &[Keyword],
        old: &[u64],
    ) -> Option<Vec<u64>> {
        let items: Vec<&Expr> = match (args, kwargs) {
            ([one], []) => tuple_items(one),
            ([], [k]) if k.name.name == "shape" => tuple_items(&k.value),
            (many, []) if many.len() > 1 => many.iter().collect(),
            _ => {
                self.error(
                    Diagnostic::new(
                        codes::RESHAPE_LAYOUT,
                        "`reshape` takes one shape",
                        e.span.clone(),
                    )
                    .with_label("write `x.reshape((d0, d1, ...))`"),
                );
                return None;
            }
        };
        let total: u64 = old.iter().product();
        let mut dims: Vec<Option<u64>> = Vec::with_capacity(items.len());
        let mut inferred = None;
        for (i, item) in items.iter().enumerate() {
            if super::comptime::literal_scalar(item) == Some(-1.0) && inferred.is_none() {
                inferred = Some(i);
                dims.push(Some(1));
            } else {
                dims.push(self.dim(item));
            }
        }
        let mut dims: Vec<u64> = dims.into_iter().collect::<Option<_>>()?;
        if let Some(i) = inferred {
            let rest: u64 = dims.iter().product();
            if rest > 0 && total.is_multiple_of(rest) {
                dims[i] = total / rest;
            }
        }
        let count: u64 = dims.iter().product();
        if count != total {
            self.error(
                Diagnostic::new(
                    codes::RESHAPE_COUNT,
                    format!(
                        "cannot reshape `{name}` of shape {old:?} ({total} elements) to {dims:?} ({count} elements)"
                    ),
                    e.span.clone(),
                )
                .with_label("another number of elements")
                .with_help("a reshape keeps every element: the product of the new dimensions must be the old one's"),
            );
            return None;
        }
        Some(dims)
    }

    /// `nl.load_transpose2d(src)` of a source taller than 128 rows: `None` when the source has at
    /// most 128 rows (the plain path takes it).
    pub(super) fn load_transpose_tall(
        &mut self,
        src_e: &Expr,
        span: &Span,
        cx: &mut StmtCtx,
        dest: &Dest,
    ) -> Option<Option<TileVal>> {
        let (src, _) = match self.view(src_e) {
            Some(v) => v,
            None => return Some(None),
        };
        let [r, c] = src.size;
        if r <= PMAX {
            return None;
        }
        let t = self.tensor(src.tensor).clone();
        if t.memory != Memory::Hbm {
            self.error(CheckError::LoadNotHbm {
                tensor: t.name.clone(),
                memory: t.memory,
                at: src_e.span.clone(),
            });
            return Some(None);
        }
        if c > PMAX || !r.is_multiple_of(PMAX) {
            self.error(CheckError::TransposeLimit {
                shape: src.size,
                at: span.clone(),
            });
            return Some(None);
        }
        let out = match dest {
            Dest::Into { target, .. } => {
                if target.size != [c, r] {
                    self.error(CheckError::AssignShape {
                        value: [c, r],
                        tensor: self.tensor(target.tensor).name.clone(),
                        dest: target.size,
                        at: span.clone(),
                    });
                    return Some(None);
                }
                target.clone()
            }
            Dest::New { name, span: bspan } => {
                let tensor = self.new_tensor(CTensor {
                    name: name.clone(),
                    memory: Memory::Sbuf,
                    dtype: DType::F32,
                    shape: [c, r],
                    kind: TensorKind::Local,
                    span: bspan.clone(),
                });
                TileVal::whole(tensor, [c, r])
            }
            Dest::Temp => {
                let tensor = self.new_tensor(CTensor {
                    name: "_load_transpose2d".to_string(),
                    memory: Memory::Sbuf,
                    dtype: DType::F32,
                    shape: [c, r],
                    kind: TensorKind::Local,
                    span: span.clone(),
                });
                TileVal::whole(tensor, [c, r])
            }
        };
        for j in 0..r / PMAX {
            let off = (j * PMAX) as i64;
            let mut part = src.clone();
            part.start[0] = super::arith::lin(&src.start[0], 1, &AffineExpr::constant(off), 1)?;
            part.size[0] = PMAX;
            let res = Res {
                shape: [PMAX, c],
                memory: Memory::Sbuf,
                dtype: t.dtype,
            };
            let loaded = self.emit(cx, Op::Load, vec![part], res, Dest::Temp, span)?;
            let tr = self.transpose_of(loaded, span, cx, Dest::Temp)?;
            let mut cols = out.clone();
            cols.start[1] = super::arith::lin(&out.start[1], 1, &AffineExpr::constant(off), 1)?;
            cols.size[1] = PMAX;
            let into = Dest::Into {
                target: cols,
                accumulate: false,
            };
            self.emit(cx, Op::Copy, vec![tr], Res::sbuf([c, PMAX]), into, span)?;
        }
        Some(Some(out))
    }
}

/// The items of a shape: a tuple's, or the one expression.
fn tuple_items(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Tuple(items) => items.iter().collect(),
        _ => vec![e],
    }
}

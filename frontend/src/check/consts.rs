//! Integer expressions: compile-time constants and index arithmetic affine in loop variables.
//!
//! [`Checker::affine`] evaluates `+ - * // %`, parentheses, integer literals, integer names, loop
//! variables and `x.shape[0|1]` to an [`AffineExpr`]. Products, floor divisions and remainders
//! need constant operands where the result would not be affine. All arithmetic is checked: an
//! overflow or a division by zero is a diagnostic, never a panic. [`Checker::const_int`] further
//! requires the result not to depend on any loop variable.

use super::arith::{floor_div_mod, lin, shift};
use super::comptime::{builtin_name, is_tile_size, tile_size, Const};
use super::error::CheckError;
use super::{Checker, Value};
use crate::ast::{BinOp, Expr, ExprKind, Index, Span, UnaryOp};
use penguin::AffineExpr;

impl Checker<'_> {
    /// A compile-time integer: affine with no loop variable.
    pub(super) fn const_int(&mut self, e: &Expr) -> Option<i64> {
        let a = self.affine(e)?;
        match a.as_constant() {
            Some(c) => Some(c),
            // Of loops that may be unrolled (`nl.affine_range(i, i + n)` inside a loop over
            // `i`): each iteration has the value, as NKI's tracer runs them (`needs_value`).
            None if self.unroll_for_division(&a, &AffineExpr::constant(0)) => None,
            None => {
                let shown = self.show(&a);
                self.error(CheckError::LoopDependent {
                    shown,
                    at: e.span.clone(),
                });
                None
            }
        }
    }

    /// An integer expression affine in the loop variables in scope.
    pub(super) fn affine(&mut self, e: &Expr) -> Option<AffineExpr> {
        match &e.kind {
            ExprKind::Int(v) => Some(AffineExpr::constant(*v)),
            ExprKind::Name(n) => match self.lookup(n, &e.span) {
                Value::Int(a) => Some(a),
                Value::Iv(axis) => Some(AffineExpr::iv(axis)),
                Value::Tile(_) | Value::Param(_) => {
                    self.error(CheckError::TileNotInt {
                        name: n.to_string(),
                        at: e.span.clone(),
                    });
                    None
                }
                Value::Float(_)
                | Value::Bool(_)
                | Value::Vec(_)
                | Value::Mask(_)
                | Value::None
                | Value::Py(_) => {
                    self.error(CheckError::ScalarNotInt {
                        name: n.to_string(),
                        at: e.span.clone(),
                    });
                    None
                }
                Value::Error => None,
            },
            ExprKind::Call { func, .. } if builtin_name(func).is_some() => self.int_of_const(e),
            ExprKind::Attribute { .. } if is_tile_size(e).is_some() => {
                let attr = is_tile_size(e).expect("checked by the guard");
                match tile_size(&attr.name) {
                    Some(v) => Some(AffineExpr::constant(v)),
                    None => {
                        self.error(CheckError::UnknownTileSize {
                            name: attr.name.clone(),
                            at: attr.span.clone(),
                        });
                        None
                    }
                }
            }
            ExprKind::Unary { op, operand } => {
                let a = self.affine(operand)?;
                match op {
                    UnaryOp::Pos => Some(a),
                    UnaryOp::Neg => self.checked(lin(&a, -1, &AffineExpr::constant(0), 0), &e.span),
                    // `~a` is `-a - 1`, for every Python integer.
                    UnaryOp::Invert => {
                        self.checked(lin(&a, -1, &AffineExpr::constant(-1), 1), &e.span)
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.affine(lhs);
                let b = self.affine(rhs);
                let (a, b) = (a?, b?);
                self.int_binary(*op, &a, &b, &e.span, &rhs.span)
            }
            ExprKind::Subscript { value, indices } => self.shape_index(value, indices, e),
            ExprKind::Error => None,
            ExprKind::Float(_) => {
                self.error(CheckError::FloatLiteralNotInt { at: e.span.clone() });
                None
            }
            _ => {
                self.error(CheckError::NotInt { at: e.span.clone() });
                None
            }
        }
    }

    /// A builtin call (`math.ceil(n / 128)`) that must give an integer.
    fn int_of_const(&mut self, e: &Expr) -> Option<AffineExpr> {
        match self.const_value(e)? {
            Const::Int(v) => Some(AffineExpr::constant(v)),
            _ => {
                self.error(CheckError::FloatNotInt { at: e.span.clone() });
                None
            }
        }
    }

    fn checked(&mut self, v: Option<AffineExpr>, span: &Span) -> Option<AffineExpr> {
        if v.is_none() {
            self.error(CheckError::ConstOverflow { at: span.clone() });
        }
        v
    }

    /// `a // b` or `a % b` with a loop index in `a` or `b` (or another value that must be a
    /// compile-time integer, an iota's base): when every such index is of a loop that may be
    /// unrolled (a `range` or hardware loop being run, `exec`), asks for that and stops
    /// evaluation (true); otherwise false (a diagnostic follows).
    pub(super) fn unroll_for_division(&mut self, a: &AffineExpr, b: &AffineExpr) -> bool {
        let mut axes = a.terms().iter().chain(b.terms().iter()).map(|(x, _)| *x);
        let soft = axes.all(|x| self.soft_axes.contains(&x) || self.div_soft_axes.contains(&x));
        if soft {
            self.need_unroll = true;
            self.stopped = true;
        }
        soft
    }

    pub(super) fn int_binary(
        &mut self,
        op: BinOp,
        a: &AffineExpr,
        b: &AffineExpr,
        span: &Span,
        rhs: &Span,
    ) -> Option<AffineExpr> {
        let zero = AffineExpr::constant(0);
        match op {
            BinOp::Add => self.checked(lin(a, 1, b, 1), span),
            BinOp::Sub => self.checked(lin(a, 1, b, -1), span),
            BinOp::Mul => {
                if let Some(k) = a.as_constant() {
                    self.checked(lin(b, k, &zero, 0), span)
                } else if let Some(k) = b.as_constant() {
                    self.checked(lin(a, k, &zero, 0), span)
                } else {
                    let shown = format!("`{}` by `{}`", self.show(a), self.show(b));
                    self.error(CheckError::ProductOfIvs {
                        shown,
                        at: span.clone(),
                    });
                    None
                }
            }
            BinOp::Div => {
                self.error(CheckError::IntTrueDivision { at: span.clone() });
                None
            }
            BinOp::MatMul => {
                self.refuse_matmul_operator(span);
                None
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) else {
                    self.error(CheckError::AndOfIv { at: span.clone() });
                    return None;
                };
                let v = match op {
                    BinOp::BitAnd => x & y,
                    BinOp::BitOr => x | y,
                    BinOp::BitXor => x ^ y,
                    _ if y < 0 => {
                        self.type_error(
                            format!("negative shift count `{y}` (Python's ValueError)"),
                            rhs,
                        );
                        return None;
                    }
                    _ => match shift(op, x, y) {
                        Some(v) => v,
                        None => {
                            self.error(CheckError::ConstOverflow { at: span.clone() });
                            return None;
                        }
                    },
                };
                Some(AffineExpr::constant(v))
            }
            BinOp::Pow => {
                let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) else {
                    self.error(CheckError::DivOfIv {
                        op: op.symbol(),
                        at: span.clone(),
                    });
                    return None;
                };
                let r = u32::try_from(y)
                    .ok()
                    .and_then(|y| x.checked_pow(y))
                    .map(AffineExpr::constant);
                self.checked(r, span)
            }
            BinOp::FloorDiv | BinOp::Mod => {
                let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) else {
                    // Of the index of a loop being tried as a hardware loop: unroll it instead.
                    if self.unroll_for_division(a, b) {
                        return None;
                    }
                    self.error(CheckError::DivOfIv {
                        op: op.symbol(),
                        at: span.clone(),
                    });
                    return None;
                };
                if y == 0 {
                    self.error(CheckError::IntDivisionByZero { at: rhs.clone() });
                    return None;
                }
                let r = floor_div_mod(x, y)
                    .map(|(q, r)| AffineExpr::constant(if op == BinOp::FloorDiv { q } else { r }));
                self.checked(r, span)
            }
        }
    }

    /// `x.shape[k]`.
    fn shape_index(&mut self, value: &Expr, indices: &[Index], e: &Expr) -> Option<AffineExpr> {
        let ExprKind::Attribute { value: base, attr } = &value.kind else {
            self.error(CheckError::SubscriptNotInt { at: e.span.clone() });
            return None;
        };
        if attr.name != "shape" {
            self.error(CheckError::AttrNotInt {
                attr: attr.name.clone(),
                at: e.span.clone(),
            });
            return None;
        }
        let size = self.shape_value(base)?;
        let k = match indices {
            [Index::Expr(ix)] => self.const_int(ix)?,
            _ => {
                let span = indices.first().map_or(e.span.clone(), |f| {
                    f.span().start..indices[indices.len() - 1].span().end
                });
                self.error(CheckError::ShapeIndexCount { at: span });
                return None;
            }
        };
        // Python's indexing: `x.shape[-1]` is the last dimension.
        let rank = size.len() as i64;
        let at = if k < 0 { k.saturating_add(rank) } else { k };
        if (0..rank).contains(&at) {
            return Some(AffineExpr::constant(size[at as usize] as i64));
        }
        self.error(CheckError::ShapeIndexRange {
            index: k,
            rank,
            at: e.span.clone(),
        });
        None
    }
}

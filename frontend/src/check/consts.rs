//! Integer expressions: compile-time constants and index arithmetic affine in loop variables.
//!
//! [`Checker::affine`] evaluates `+ - * // %`, parentheses, integer literals, integer names, loop
//! variables and `x.shape[0|1]` to an [`AffineExpr`]. Products, floor divisions and remainders
//! need constant operands where the result would not be affine. All arithmetic is checked: an
//! overflow or a division by zero is a diagnostic, never a panic. [`Checker::const_int`] further
//! requires the result not to depend on any loop variable.

use super::comptime::{builtin_name, is_tile_size, tile_size, Const};
use super::{Checker, Value};
use crate::ast::{BinOp, Expr, ExprKind, Index, Span, UnaryOp};
use crate::codes;
use crate::diagnostic::Error;
use penguin::{AffineExpr, Axis};
use std::collections::BTreeMap;

/// `ka·a + kb·b` with checked arithmetic.
pub(super) fn lin(a: &AffineExpr, ka: i64, b: &AffineExpr, kb: i64) -> Option<AffineExpr> {
    let mut terms: BTreeMap<Axis, i64> = BTreeMap::new();
    for (e, k) in [(a, ka), (b, kb)] {
        for &(axis, c) in e.terms() {
            let add = c.checked_mul(k)?;
            let slot = terms.entry(axis).or_insert(0);
            *slot = slot.checked_add(add)?;
        }
    }
    let constant = a
        .constant_term()
        .checked_mul(ka)?
        .checked_add(b.constant_term().checked_mul(kb)?)?;
    Some(AffineExpr::from_terms(terms, constant))
}

/// Python's `//` and `%` (rounding toward negative infinity); `None` on overflow.
fn floor_div_mod(a: i64, b: i64) -> Option<(i64, i64)> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some((q - 1, r + b))
    } else {
        Some((q, r))
    }
}

impl Checker<'_> {
    /// A compile-time integer: affine with no loop variable.
    pub(super) fn const_int(&mut self, e: &Expr) -> Option<i64> {
        let a = self.affine(e)?;
        match a.as_constant() {
            Some(c) => Some(c),
            None => {
                let shown = self.show(&a);
                self.error(
                    Error::new(
                        codes::NOT_CONST_INT,
                        "expected a compile-time integer, found an expression of loop variables",
                        e.span.clone(),
                    )
                    .with_label(format!("this is `{shown}`, which changes with the loop")),
                );
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
                    self.error(
                        Error::new(
                            codes::NOT_CONST_INT,
                            format!("expected an integer, found the tile `{n}`"),
                            e.span.clone(),
                        )
                        .with_label("a tile, not an integer"),
                    );
                    None
                }
                Value::Float(_) | Value::Bool(_) | Value::Vec(_) | Value::None => {
                    self.error(
                        Error::new(
                            codes::NOT_CONST_INT,
                            format!("expected an integer, found the scalar `{n}`"),
                            e.span.clone(),
                        )
                        .with_label("a float or a boolean, not an integer")
                        .with_help("convert it with `int(...)` or `math.ceil(...)`"),
                    );
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
                        self.error(
                            Error::new(
                                codes::NOT_CONST_INT,
                                format!("`nl.tile_size.{}` is not a tile size nkc knows", attr.name),
                                attr.span.clone(),
                            )
                            .with_label("unknown tile size")
                            .with_note(format!("the tile sizes are pmax ({}), psum_fmax ({}), gemm_stationary_fmax ({}) and gemm_moving_fmax ({})", vocab::machine::PMAX, vocab::machine::PSUM_FMAX, vocab::machine::GEMM_STATIONARY_FMAX, vocab::machine::GEMM_MOVING_FMAX)),
                        );
                        None
                    }
                }
            }
            ExprKind::Unary { op, operand } => {
                let a = self.affine(operand)?;
                match op {
                    UnaryOp::Pos => Some(a),
                    UnaryOp::Neg => self.checked(lin(&a, -1, &AffineExpr::constant(0), 0), &e.span),
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
                self.error(
                    Error::new(
                        codes::NOT_CONST_INT,
                        "expected an integer, found a float",
                        e.span.clone(),
                    )
                    .with_label("a float literal"),
                );
                None
            }
            _ => {
                self.error(
                    Error::new(codes::NOT_CONST_INT, "expected an integer", e.span.clone())
                        .with_label("not an integer expression"),
                );
                None
            }
        }
    }

    /// A builtin call (`math.ceil(n / 128)`) that must give an integer.
    fn int_of_const(&mut self, e: &Expr) -> Option<AffineExpr> {
        match self.const_value(e)? {
            Const::Int(v) => Some(AffineExpr::constant(v)),
            _ => {
                self.error(
                    Error::new(
                        codes::NOT_CONST_INT,
                        "expected an integer, found a float",
                        e.span.clone(),
                    )
                    .with_label("this is a float")
                    .with_help("convert it with `int(...)` or `math.ceil(...)`"),
                );
                None
            }
        }
    }

    fn checked(&mut self, v: Option<AffineExpr>, span: &Span) -> Option<AffineExpr> {
        if v.is_none() {
            self.error(
                Error::new(
                    codes::CONST_OVERFLOW,
                    "integer overflow in a compile-time expression",
                    span.clone(),
                )
                .with_label("this overflows a 64-bit integer"),
            );
        }
        v
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
                    self.error(
                        Error::new(
                            codes::NOT_AFFINE,
                            "a product of loop variables is not an affine index",
                            span.clone(),
                        )
                        .with_label(format!("this multiplies {shown}"))
                        .with_note(
                            "indices must be affine: sums of loop variables times constants",
                        ),
                    );
                    None
                }
            }
            BinOp::Div => {
                self.error(
                    Error::new(
                        codes::INT_TRUE_DIVISION,
                        "`/` is float division; integers need `//`",
                        span.clone(),
                    )
                    .with_label("float division of integers")
                    .with_help("use //"),
                );
                None
            }
            BinOp::BitAnd => {
                let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) else {
                    self.error(
                        Error::new(
                            codes::NOT_AFFINE,
                            "`&` of a loop variable is not an affine index",
                            span.clone(),
                        )
                        .with_label("depends on a loop variable")
                        .with_note("`&` needs compile-time integer operands"),
                    );
                    return None;
                };
                Some(AffineExpr::constant(x & y))
            }
            BinOp::FloorDiv | BinOp::Mod => {
                let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) else {
                    self.error(
                        Error::new(
                            codes::NOT_AFFINE,
                            format!(
                                "`{}` of a loop variable is not an affine index",
                                op.symbol()
                            ),
                            span.clone(),
                        )
                        .with_label("depends on a loop variable")
                        .with_note("`//` and `%` need compile-time integer operands"),
                    );
                    return None;
                };
                if y == 0 {
                    self.error(
                        Error::new(codes::DIVISION_BY_ZERO, "division by zero", rhs.clone())
                            .with_label("this is zero"),
                    );
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
            self.error(
                Error::new(codes::NOT_CONST_INT, "expected an integer", e.span.clone())
                    .with_label("a subscript of a tensor is a tile, not an integer"),
            );
            return None;
        };
        if attr.name != "shape" {
            self.error(
                Error::new(
                    codes::NOT_CONST_INT,
                    format!("expected an integer, found `.{}`", attr.name),
                    e.span.clone(),
                )
                .with_label("not an integer expression"),
            );
            return None;
        }
        let size = self.shape_value(base)?;
        let k = match indices {
            [Index::Expr(ix)] => self.const_int(ix)?,
            _ => {
                let span = indices.first().map_or(e.span.clone(), |f| {
                    f.span().start..indices[indices.len() - 1].span().end
                });
                self.error(
                    Error::new(
                        codes::BAD_SHAPE_ACCESS,
                        "`.shape` takes one index, 0 or 1",
                        span,
                    )
                    .with_label("expected `[0]` or `[1]`"),
                );
                return None;
            }
        };
        // Python's indexing: `x.shape[-1]` is the last dimension.
        let rank = size.len() as i64;
        let at = if k < 0 { k.saturating_add(rank) } else { k };
        if (0..rank).contains(&at) {
            return Some(AffineExpr::constant(size[at as usize] as i64));
        }
        let (message, label) = if rank == 2 {
            (
                format!("tensors have 2 dimensions; `.shape[{k}]` does not exist"),
                "index must be 0 or 1".to_string(),
            )
        } else {
            (
                format!("this tensor has {rank} dimensions; `.shape[{k}]` does not exist"),
                format!("index must be 0 to {}", rank - 1),
            )
        };
        self.error(Error::new(codes::BAD_SHAPE_ACCESS, message, e.span.clone()).with_label(label));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::floor_div_mod;

    #[test]
    fn floor_division_follows_python() {
        assert_eq!(floor_div_mod(7, 2), Some((3, 1)));
        assert_eq!(floor_div_mod(-7, 2), Some((-4, 1)));
        assert_eq!(floor_div_mod(7, -2), Some((-4, -1)));
        assert_eq!(floor_div_mod(-7, -2), Some((3, -1)));
        assert_eq!(floor_div_mod(i64::MIN, -1), None);
    }
}

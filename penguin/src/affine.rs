//! Affine expressions in loop induction variables, and the guards built from them.
//!
//! An [`AffineExpr`] is `c0 + Σ cᵢ·ivᵢ` over the induction variables of enclosing axes. It is the
//! only form of index arithmetic Penguin IR has: tile starts, modulo-slot selectors and predicate
//! guards are all affine.
//!
//! Invariants (kept by every constructor and operation here):
//! - `terms` is sorted by axis and holds no zero coefficient and no axis twice, so two equal
//!   expressions are equal as values (`==`) and print identically.

use crate::entities::Axis;
use cranelift_entity::SecondaryMap;
use std::fmt;

/// `constant + Σ coeff · iv(axis)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AffineExpr {
    terms: Vec<(Axis, i64)>,
    constant: i64,
}

impl AffineExpr {
    /// The constant `c`.
    pub fn constant(c: i64) -> Self {
        AffineExpr {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// The induction variable of `axis`.
    pub fn iv(axis: Axis) -> Self {
        Self::term(axis, 1)
    }

    /// `coeff · iv(axis)`.
    pub fn term(axis: Axis, coeff: i64) -> Self {
        let mut e = Self::constant(0);
        e.add_term(axis, coeff);
        e
    }

    /// Builds an expression from terms in any order, merging repeated axes.
    pub fn from_terms(terms: impl IntoIterator<Item = (Axis, i64)>, constant: i64) -> Self {
        let mut e = Self::constant(constant);
        for (axis, coeff) in terms {
            e.add_term(axis, coeff);
        }
        e
    }

    /// The terms, sorted by axis, none with a zero coefficient.
    pub fn terms(&self) -> &[(Axis, i64)] {
        &self.terms
    }

    /// Every value `self mod modulus` takes when each loop variable `a` runs over
    /// `range(a) = (lb, ub)`: the constant's residue, then for each term `c·iv` those plus
    /// `c·v mod modulus` for the values `v` of `iv` (at most `modulus / gcd(c, modulus)` of them
    /// matter: the term's residues repeat after that). A loop of no iterations adds nothing.
    /// `modulus` is positive.
    pub fn residues_mod(
        &self,
        modulus: i64,
        range: impl Fn(Axis) -> (i64, i64),
    ) -> std::collections::BTreeSet<i64> {
        fn gcd(a: i64, b: i64) -> i64 {
            if b == 0 {
                a
            } else {
                gcd(b, a % b)
            }
        }
        let mut residues =
            std::collections::BTreeSet::from([self.constant_term().rem_euclid(modulus)]);
        for &(a, c) in self.terms() {
            let (lb, ub) = range(a);
            let step = c.rem_euclid(modulus);
            let period = if step == 0 {
                1
            } else {
                modulus / gcd(step, modulus)
            };
            let trips = (ub - lb).clamp(0, period);
            if trips == 0 {
                continue;
            }
            residues = residues
                .iter()
                .flat_map(|&r| {
                    (lb..lb + trips)
                        .map(move |v| (r + step * v.rem_euclid(modulus)).rem_euclid(modulus))
                })
                .collect();
        }
        residues
    }

    pub fn constant_term(&self) -> i64 {
        self.constant
    }

    /// The constant value, when the expression has no terms.
    pub fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The coefficient of `axis` (0 when absent).
    pub fn coeff(&self, axis: Axis) -> i64 {
        self.terms
            .iter()
            .find(|(a, _)| *a == axis)
            .map_or(0, |&(_, c)| c)
    }

    /// Adds `coeff · iv(axis)` in place.
    pub fn add_term(&mut self, axis: Axis, coeff: i64) {
        match self.terms.binary_search_by_key(&axis, |&(a, _)| a) {
            Ok(pos) => {
                self.terms[pos].1 += coeff;
                if self.terms[pos].1 == 0 {
                    self.terms.remove(pos);
                }
            }
            Err(pos) => {
                if coeff != 0 {
                    self.terms.insert(pos, (axis, coeff));
                }
            }
        }
    }

    pub fn add_constant(&mut self, c: i64) {
        self.constant += c;
    }

    /// `self + other`.
    pub fn add(&self, other: &AffineExpr) -> AffineExpr {
        let mut e = self.clone();
        for &(axis, coeff) in &other.terms {
            e.add_term(axis, coeff);
        }
        e.constant += other.constant;
        e
    }

    /// `self - other`.
    pub fn sub(&self, other: &AffineExpr) -> AffineExpr {
        self.add(&other.scale(-1))
    }

    /// `k · self`.
    pub fn scale(&self, k: i64) -> AffineExpr {
        if k == 0 {
            return AffineExpr::constant(0);
        }
        AffineExpr {
            terms: self.terms.iter().map(|&(a, c)| (a, c * k)).collect(),
            constant: self.constant * k,
        }
    }

    /// Replaces `iv(axis)` by `replacement` (used by the pipeliner to shift a stage: `iv → iv − s`).
    pub fn substitute(&self, axis: Axis, replacement: &AffineExpr) -> AffineExpr {
        let coeff = self.coeff(axis);
        if coeff == 0 {
            return self.clone();
        }
        let mut rest = self.clone();
        rest.add_term(axis, -coeff);
        rest.add(&replacement.scale(coeff))
    }

    /// The axes this expression mentions.
    pub fn axes(&self) -> impl Iterator<Item = Axis> + '_ {
        self.terms.iter().map(|&(a, _)| a)
    }

    /// The value for the given induction-variable values.
    pub fn eval(&self, ivs: &SecondaryMap<Axis, i64>) -> i64 {
        self.terms
            .iter()
            .fold(self.constant, |acc, &(a, c)| acc + c * ivs[a])
    }

    /// The smallest and largest values over a box of induction-variable ranges, each given as an
    /// inclusive `(min, max)` pair. Exact, because the variables range independently.
    pub fn range(&self, bounds: impl Fn(Axis) -> (i64, i64)) -> (i64, i64) {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for &(a, c) in &self.terms {
            let (amin, amax) = bounds(a);
            let (x, y) = (c * amin, c * amax);
            lo += x.min(y);
            hi += x.max(y);
        }
        (lo, hi)
    }

    /// Writes the expression, naming each axis with `name`.
    pub fn fmt_with(&self, f: &mut dyn fmt::Write, name: &dyn Fn(Axis) -> String) -> fmt::Result {
        let mut first = true;
        for &(axis, coeff) in &self.terms {
            let n = name(axis);
            let mag = coeff.unsigned_abs();
            if first {
                if coeff < 0 {
                    f.write_str("-")?;
                }
            } else {
                f.write_str(if coeff < 0 { " - " } else { " + " })?;
            }
            if mag == 1 {
                write!(f, "{n}")?;
            } else {
                write!(f, "{mag}*{n}")?;
            }
            first = false;
        }
        if first {
            write!(f, "{}", self.constant)?;
        } else if self.constant != 0 {
            let sign = if self.constant < 0 { "-" } else { "+" };
            write!(f, " {sign} {}", self.constant.unsigned_abs())?;
        }
        Ok(())
    }
}

/// A comparison of a predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `==`
    Eq,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Ge => ">=",
            CmpOp::Lt => "<",
            CmpOp::Eq => "==",
        }
    }
}

/// An affine guard `expr cmp bound`, such as `i >= 2` or `i < 18`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Predicate {
    pub expr: AffineExpr,
    pub cmp: CmpOp,
    pub bound: i64,
}

impl Predicate {
    pub fn holds(&self, ivs: &SecondaryMap<Axis, i64>) -> bool {
        let v = self.expr.eval(ivs);
        match self.cmp {
            CmpOp::Ge => v >= self.bound,
            CmpOp::Lt => v < self.bound,
            CmpOp::Eq => v == self.bound,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    fn ax(n: usize) -> Axis {
        Axis::new(n)
    }

    #[test]
    fn residues_mod_cover_the_loop_ranges_exactly() {
        // 128·i over i in 0..32, banks of 512: starts 0, 128, 256, 384 only.
        let e = AffineExpr::from_terms([(ax(0), 128)], 0);
        let r = e.residues_mod(512, |_| (0, 32));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), vec![0, 128, 256, 384]);
        // 100·i + 7 over i in 1..3: 107 and 207, not the other residues of the period.
        let e = AffineExpr::from_terms([(ax(0), 100)], 7);
        let r = e.residues_mod(512, |_| (1, 3));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), vec![107, 207]);
        // A loop of no iterations adds nothing.
        assert_eq!(e.residues_mod(512, |_| (0, 0)).len(), 1);
    }

    #[test]
    fn terms_stay_canonical() {
        let e = AffineExpr::from_terms([(ax(2), 3), (ax(0), 1), (ax(2), -3)], 5);
        assert_eq!(e.terms(), &[(ax(0), 1)]);
        assert_eq!(e, AffineExpr::iv(ax(0)).add(&AffineExpr::constant(5)));
    }

    #[test]
    fn substitute_shifts_a_stage() {
        // 128*i + 64 with i -> i - 2 is 128*i - 192.
        let e = AffineExpr::from_terms([(ax(0), 128)], 64);
        let shifted = e.substitute(ax(0), &AffineExpr::from_terms([(ax(0), 1)], -2));
        assert_eq!(shifted, AffineExpr::from_terms([(ax(0), 128)], -192));
    }

    #[test]
    fn range_is_exact_on_a_box() {
        // 4*i - 2*j + 1 with i in [0, 3], j in [1, 5]: min 1 - 10 = -9, max 12 - 2 + 1 = 11.
        let e = AffineExpr::from_terms([(ax(0), 4), (ax(1), -2)], 1);
        let r = e.range(|a| if a == ax(0) { (0, 3) } else { (1, 5) });
        assert_eq!(r, (-9, 11));
    }

    #[test]
    fn prints_readably() {
        let e = AffineExpr::from_terms([(ax(0), 128), (ax(1), -1)], -3);
        let mut s = String::new();
        e.fmt_with(&mut s, &|a| format!("i{}", a.index())).unwrap();
        assert_eq!(s, "128*i0 - i1 - 3");
        let mut z = String::new();
        AffineExpr::constant(-7)
            .fmt_with(&mut z, &|_| unreachable!())
            .unwrap();
        assert_eq!(z, "-7");
    }
}

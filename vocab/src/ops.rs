//! The operations of the engines, as enums with their names, and their float32 meaning.

/// Elementwise binary operations of the Vector engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Maximum,
    Minimum,
    /// `nl.power`: `a ** b` ([`libm::powf`]).
    Power,
    /// The comparisons give 1.0 where they hold and 0.0 elsewhere (NKI's bool results, as
    /// float); a NaN operand makes every comparison but `not_equal` false (IEEE 754).
    Less,
    Greater,
    LessEqual,
    GreaterEqual,
    Equal,
    NotEqual,
    /// The logical operations read a value as true when it is not zero (NaN is true, as in
    /// numpy) and give 1.0 or 0.0.
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    /// The bitwise operations act on the integer values of their operands: each is converted to
    /// i32 toward zero (saturating, NaN to 0), combined, and converted back to float32. nkc's
    /// tiles hold floats only; on integer-valued tiles this is NKI's integer arithmetic.
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    /// `a` where `b` is true (not zero), `-0.0` elsewhere; with [`AluOp::PassUnless`] and an add
    /// it is `nl.where(b, a, c)` exactly: `a + -0.0` is `a` for every `a`, signed zeros included.
    PassIf,
    /// `a` where `b` is false (zero), `-0.0` elsewhere.
    PassUnless,
    /// `nl.mod`: Python's `a % b`, the remainder of the floor division, with the sign of `b`
    /// (numpy's `mod`); NaN when `b` is zero.
    Mod,
    /// `nl.fmod`: C's `fmod`, the remainder of the division truncated toward zero, with the sign
    /// of `a`; exact in float32; NaN when `b` is zero.
    Fmod,
}

impl AluOp {
    pub const ALL: [AluOp; 23] = [
        AluOp::Add,
        AluOp::Subtract,
        AluOp::Multiply,
        AluOp::Divide,
        AluOp::Maximum,
        AluOp::Minimum,
        AluOp::Power,
        AluOp::Less,
        AluOp::Greater,
        AluOp::LessEqual,
        AluOp::GreaterEqual,
        AluOp::Equal,
        AluOp::NotEqual,
        AluOp::LogicalAnd,
        AluOp::LogicalOr,
        AluOp::LogicalXor,
        AluOp::BitwiseAnd,
        AluOp::BitwiseOr,
        AluOp::BitwiseXor,
        AluOp::PassIf,
        AluOp::PassUnless,
        AluOp::Mod,
        AluOp::Fmod,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Subtract => "subtract",
            AluOp::Multiply => "multiply",
            AluOp::Divide => "divide",
            AluOp::Maximum => "maximum",
            AluOp::Minimum => "minimum",
            AluOp::Power => "power",
            AluOp::Less => "less",
            AluOp::Greater => "greater",
            AluOp::LessEqual => "less_equal",
            AluOp::GreaterEqual => "greater_equal",
            AluOp::Equal => "equal",
            AluOp::NotEqual => "not_equal",
            AluOp::LogicalAnd => "logical_and",
            AluOp::LogicalOr => "logical_or",
            AluOp::LogicalXor => "logical_xor",
            AluOp::BitwiseAnd => "bitwise_and",
            AluOp::BitwiseOr => "bitwise_or",
            AluOp::BitwiseXor => "bitwise_xor",
            AluOp::PassIf => "pass_if",
            AluOp::PassUnless => "pass_unless",
            AluOp::Mod => "mod",
            AluOp::Fmod => "fmod",
        }
    }

    /// Whether the operation is an `nl` function of the same name (the others are steps of
    /// composite operations: [`AluOp::PassIf`], [`AluOp::PassUnless`]).
    pub fn is_nl(self) -> bool {
        !matches!(self, AluOp::PassIf | AluOp::PassUnless)
    }

    /// The float32 result of `a op b`. Maximum and minimum are IEEE 754-2019 `maximum` and
    /// `minimum`: NaN when either operand is NaN, and `+0 > -0`, so that no result is left to the
    /// optimiser (Rust's `f32::max` leaves both cases open).
    pub fn apply(self, a: f32, b: f32) -> f32 {
        let truth = |c: bool| if c { 1.0 } else { 0.0 };
        let int = |x: f32| x as i32;
        match self {
            AluOp::Add => a + b,
            AluOp::Subtract => a - b,
            AluOp::Multiply => a * b,
            AluOp::Divide => a / b,
            AluOp::Maximum => maximum(a, b),
            AluOp::Minimum => minimum(a, b),
            AluOp::Power => libm::powf(a, b),
            AluOp::Less => truth(a < b),
            AluOp::Greater => truth(a > b),
            AluOp::LessEqual => truth(a <= b),
            AluOp::GreaterEqual => truth(a >= b),
            AluOp::Equal => truth(a == b),
            AluOp::NotEqual => truth(a != b),
            AluOp::LogicalAnd => truth(a != 0.0 && b != 0.0),
            AluOp::LogicalOr => truth(a != 0.0 || b != 0.0),
            AluOp::LogicalXor => truth((a != 0.0) != (b != 0.0)),
            AluOp::BitwiseAnd => (int(a) & int(b)) as f32,
            AluOp::BitwiseOr => (int(a) | int(b)) as f32,
            AluOp::BitwiseXor => (int(a) ^ int(b)) as f32,
            AluOp::PassIf => {
                if b != 0.0 {
                    a
                } else {
                    -0.0
                }
            }
            AluOp::PassUnless => {
                if b == 0.0 {
                    a
                } else {
                    -0.0
                }
            }
            AluOp::Mod => {
                let r = a % b;
                if r != 0.0 && (r < 0.0) != (b < 0.0) {
                    r + b
                } else {
                    r
                }
            }
            AluOp::Fmod => a % b,
        }
    }
}

/// IEEE 754-2019 `maximum`: NaN if either operand is NaN; `+0` is larger than `-0`.
pub fn maximum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        // Equal: the same value, or zeros of either sign, where +0 wins.
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// IEEE 754-2019 `minimum`: NaN if either operand is NaN; `-0` is smaller than `+0`.
pub fn minimum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a < b {
        a
    } else if b < a {
        b
    } else {
        f32::from_bits(a.to_bits() | b.to_bits())
    }
}

/// Functions of the Scalar (activation) engine.
///
/// The functions added for the NKI API beyond the first eleven (from `Negative` on) take their
/// transcendental parts from the `libm` crate, a pure-Rust port of musl's libm: one portable
/// definition, whatever the host's C library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActFunc {
    Identity,
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Relu,
    Gelu,
    Sqrt,
    Rsqrt,
    Square,
    Reciprocal,
    Negative,
    Abs,
    Sign,
    Ceil,
    Floor,
    Trunc,
    Sin,
    Cos,
    Tan,
    Arctan,
    Erf,
    ErfDx,
    Silu,
    SiluDx,
    Softplus,
    Mish,
    GeluApprxTanh,
    Exp2,
    LogicalNot,
}

impl ActFunc {
    pub const ALL: [ActFunc; 30] = [
        ActFunc::Identity,
        ActFunc::Exp,
        ActFunc::Log,
        ActFunc::Tanh,
        ActFunc::Sigmoid,
        ActFunc::Relu,
        ActFunc::Gelu,
        ActFunc::Sqrt,
        ActFunc::Rsqrt,
        ActFunc::Square,
        ActFunc::Reciprocal,
        ActFunc::Negative,
        ActFunc::Abs,
        ActFunc::Sign,
        ActFunc::Ceil,
        ActFunc::Floor,
        ActFunc::Trunc,
        ActFunc::Sin,
        ActFunc::Cos,
        ActFunc::Tan,
        ActFunc::Arctan,
        ActFunc::Erf,
        ActFunc::ErfDx,
        ActFunc::Silu,
        ActFunc::SiluDx,
        ActFunc::Softplus,
        ActFunc::Mish,
        ActFunc::GeluApprxTanh,
        ActFunc::Exp2,
        ActFunc::LogicalNot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ActFunc::Identity => "identity",
            ActFunc::Exp => "exp",
            ActFunc::Log => "log",
            ActFunc::Tanh => "tanh",
            ActFunc::Sigmoid => "sigmoid",
            ActFunc::Relu => "relu",
            ActFunc::Gelu => "gelu",
            ActFunc::Sqrt => "sqrt",
            ActFunc::Rsqrt => "rsqrt",
            ActFunc::Square => "square",
            ActFunc::Reciprocal => "reciprocal",
            ActFunc::Negative => "negative",
            ActFunc::Abs => "abs",
            ActFunc::Sign => "sign",
            ActFunc::Ceil => "ceil",
            ActFunc::Floor => "floor",
            ActFunc::Trunc => "trunc",
            ActFunc::Sin => "sin",
            ActFunc::Cos => "cos",
            ActFunc::Tan => "tan",
            ActFunc::Arctan => "arctan",
            ActFunc::Erf => "erf",
            ActFunc::ErfDx => "erf_dx",
            ActFunc::Silu => "silu",
            ActFunc::SiluDx => "silu_dx",
            ActFunc::Softplus => "softplus",
            ActFunc::Mish => "mish",
            ActFunc::GeluApprxTanh => "gelu_apprx_tanh",
            ActFunc::Exp2 => "exp2",
            ActFunc::LogicalNot => "logical_not",
        }
    }

    /// The float32 result of the function. Gelu is the tanh approximation NKI documents:
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, evaluated in float32 in that order
    /// (`gelu_apprx_tanh` is the same function under NKI's explicit name).
    ///
    /// The others: `sign` is -1, 0 or 1 (a zero keeps its sign, NaN stays NaN); `silu` is
    /// `x * sigmoid(x)` with `sigmoid(x) = 1 / (1 + e^-x)`; `silu_dx` its derivative
    /// `s * (1 + x * (1 - s))`; `softplus` is `max(x, 0) + log1p(e^-|x|)` (no overflow);
    /// `mish` is `x * tanh(softplus(x))`; `erf_dx` is `2/sqrt(pi) * e^(-x^2)`; `logical_not` is
    /// 1.0 where `x == 0` and 0.0 elsewhere (NaN is true, as in numpy).
    pub fn apply(self, x: f32) -> f32 {
        match self {
            ActFunc::Identity => x,
            ActFunc::Exp => x.exp(),
            ActFunc::Log => x.ln(),
            ActFunc::Tanh => x.tanh(),
            ActFunc::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            ActFunc::Relu => maximum(x, 0.0),
            ActFunc::Gelu | ActFunc::GeluApprxTanh => {
                const SQRT_2_OVER_PI: f32 = 0.797_884_6;
                0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
            }
            ActFunc::Sqrt => x.sqrt(),
            ActFunc::Rsqrt => 1.0 / x.sqrt(),
            ActFunc::Square => x * x,
            ActFunc::Reciprocal => 1.0 / x,
            ActFunc::Negative => -x,
            ActFunc::Abs => x.abs(),
            ActFunc::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
            ActFunc::Ceil => libm::ceilf(x),
            ActFunc::Floor => libm::floorf(x),
            ActFunc::Trunc => libm::truncf(x),
            ActFunc::Sin => libm::sinf(x),
            ActFunc::Cos => libm::cosf(x),
            ActFunc::Tan => libm::tanf(x),
            ActFunc::Arctan => libm::atanf(x),
            ActFunc::Erf => libm::erff(x),
            ActFunc::ErfDx => std::f32::consts::FRAC_2_SQRT_PI * libm::expf(-(x * x)),
            ActFunc::Silu => x * sigmoid(x),
            ActFunc::SiluDx => {
                let s = sigmoid(x);
                s * (1.0 + x * (1.0 - s))
            }
            ActFunc::Softplus => softplus(x),
            ActFunc::Mish => x * libm::tanhf(softplus(x)),
            ActFunc::Exp2 => libm::exp2f(x),
            ActFunc::LogicalNot => {
                if x == 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// `1 / (1 + e^-x)` with `libm`'s exponential (the functions added for the NKI API).
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-x))
}

/// `ln(1 + e^x)` as `max(x, 0) + log1p(e^-|x|)`, which neither overflows nor loses small values.
fn softplus(x: f32) -> f32 {
    maximum(x, 0.0) + libm::log1pf(libm::expf(-x.abs()))
}

/// Reductions along the free axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// `nl.prod`: a product from `1.0`, left to right.
    Prod,
    /// `nl.all`: 1.0 when every element is true (not zero; NaN is true), else 0.0.
    All,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
        ReduceOp::All,
    ];

    /// The reduction of one row in float32: a sum from `0.0`, left to right; max and min fold
    /// from the first element with [`maximum`] / [`minimum`]; a product from `1.0`, left to
    /// right. An empty row gives 0 for sum, 1 for prod and all, and NaN otherwise.
    pub fn fold(self, row: &[f32]) -> f32 {
        match (self, row.split_first()) {
            (ReduceOp::Sum, _) => row.iter().fold(0.0f32, |s, &v| s + v),
            (ReduceOp::Prod, _) => row.iter().fold(1.0f32, |s, &v| s * v),
            (ReduceOp::All, _) => {
                if row.iter().all(|&v| v != 0.0) {
                    1.0
                } else {
                    0.0
                }
            }
            (ReduceOp::Max, Some((&first, rest))) => rest.iter().fold(first, |m, &v| maximum(m, v)),
            (ReduceOp::Min, Some((&first, rest))) => rest.iter().fold(first, |m, &v| minimum(m, v)),
            (_, None) => f32::NAN,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
            ReduceOp::All => "all",
        }
    }
}

/// The value of element `[p][f]` of an iota: `base + p * pstep + f * fstep`, in float32 in that
/// order (the products rounded before the sums; exact while the values are integers below 2^24).
pub fn iota(base: f32, pstep: f32, fstep: f32, p: usize, f: usize) -> f32 {
    base + p as f32 * pstep + f as f32 * fstep
}

/// `out[m][n] = Σ_k a[k][m] · b[k][n]` for row-major `a: [K, M]`, `b: [K, N]`; `out: [M, N]`: for
/// every `(m, n)`, `s = 0.0; for k in 0..K { s = s + a[k][m] * b[k][n] }`, the product rounded to
/// f32 before the addition (no fused multiply-add). Requires `a.len() == k * m` and
/// `b.len() == k * n` (the caller's shape check).
pub fn matmul(a: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * n];
    if n == 0 {
        return out;
    }
    // Register tiles of `R` rows × `C` columns of the output: each tile sums its products over
    // the whole of `k` in registers before it is stored, so `out` is written once (the edges
    // that do not fill a tile take the plain loop). Every element still sums in `k` order.
    const R: usize = 4;
    const C: usize = 8;
    let (mt, nt) = (m - m % R, n - n % C);
    for m0 in (0..mt).step_by(R) {
        for n0 in (0..nt).step_by(C) {
            let mut acc = [[0.0f32; C]; R];
            for ki in 0..k {
                let x: &[f32; R] = a[ki * m + m0..][..R].try_into().expect("R elements");
                let y: &[f32; C] = b[ki * n + n0..][..C].try_into().expect("C elements");
                for (row, &xr) in acc.iter_mut().zip(x) {
                    for (o, &yc) in row.iter_mut().zip(y) {
                        *o += xr * yc;
                    }
                }
            }
            for (r, row) in acc.iter().enumerate() {
                out[(m0 + r) * n + n0..][..C].copy_from_slice(row);
            }
        }
    }
    for mi in 0..m {
        let cols = if mi < mt { nt..n } else { 0..n };
        for ni in cols {
            out[mi * n + ni] = (0..k).fold(0.0f32, |s, ki| s + a[ki * m + mi] * b[ki * n + ni]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_sums_k_upward_from_zero() {
        // 1e8 + 1 - 1e8 in f32 left to right is 0 (1e8 + 1 rounds back to 1e8); any other order
        // that adds 1 last gives 1.
        assert_eq!(
            matmul(&[1.0, 1.0, 1.0], &[1.0e8, 1.0, -1.0e8], 3, 1, 1),
            vec![0.0]
        );
        assert_eq!(
            matmul(&[1., 2., 3., 4.], &[5., 6., 7., 8., 9., 10.], 2, 2, 3),
            vec![29., 33., 37., 42., 48., 54.]
        );
    }

    #[test]
    fn matmul_in_blocks_of_rows_gives_the_naive_bits() {
        // Values whose products and sums round differently in any other order.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f32::from_bits(0x3000_0000 + (state % 0x1800_0000) as u32)
                * [1.0, -1.0][state as usize % 2]
        };
        for (k, m, n) in [
            (1, 1, 1),
            (3, 4, 5),
            (7, 9, 3),
            (16, 13, 8),
            (5, 6, 0),
            (0, 5, 2),
        ] {
            let a: Vec<f32> = (0..k * m).map(|_| next()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let naive: Vec<u32> = (0..m * n)
                .map(|e| {
                    let (mi, ni) = (e / n.max(1), e % n.max(1));
                    (0..k)
                        .fold(0.0f32, |s, ki| s + a[ki * m + mi] * b[ki * n + ni])
                        .to_bits()
                })
                .collect();
            let got: Vec<u32> = matmul(&a, &b, k, m, n)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(got, naive, "k={k} m={m} n={n}");
        }
    }

    #[test]
    fn reductions_fold_left_to_right() {
        assert_eq!(ReduceOp::Sum.fold(&[1.0e8, 1.0, -1.0e8]), 0.0);
        assert_eq!(ReduceOp::Max.fold(&[3.0, -1.0, 7.0]), 7.0);
        assert_eq!(ReduceOp::Min.fold(&[3.0, -1.0, 7.0]), -1.0);
        assert!(ReduceOp::Max.fold(&[]).is_nan());
        assert!(maximum(f32::NAN, 1.0).is_nan());
        assert_eq!(maximum(0.0, -0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(minimum(0.0, -0.0).to_bits(), (-0.0f32).to_bits());
    }

    /// Values where the functions are neither saturated nor at their poles.
    fn moderate() -> Vec<f32> {
        (-400..=400).map(|i| i as f32 / 100.0).collect()
    }

    /// `erf` in f64 by its Taylor series (|x| <= 4: 100 terms are exact to ~1e-12).
    fn erf64(x: f64) -> f64 {
        let (mut term, mut sum) = (x, x);
        for n in 1..100 {
            term *= -x * x / f64::from(n);
            sum += term / f64::from(2 * n + 1);
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    }

    #[test]
    fn the_added_functions_follow_their_f64_definitions() {
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let sp = |x: f64| (1.0 + x.exp()).ln();
        let c = (2.0 / std::f64::consts::PI).sqrt();
        type Reference = Box<dyn Fn(f64) -> f64>;
        let table: Vec<(ActFunc, Reference)> = vec![
            (ActFunc::Negative, Box::new(|x| -x)),
            (ActFunc::Abs, Box::new(f64::abs)),
            (
                ActFunc::Sign,
                Box::new(|x| {
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        0.0
                    }
                }),
            ),
            (ActFunc::Ceil, Box::new(f64::ceil)),
            (ActFunc::Floor, Box::new(f64::floor)),
            (ActFunc::Trunc, Box::new(f64::trunc)),
            (ActFunc::Sin, Box::new(f64::sin)),
            (ActFunc::Cos, Box::new(f64::cos)),
            (
                ActFunc::Tan,
                Box::new(|x| {
                    if x.cos().abs() < 0.05 {
                        f64::NAN
                    } else {
                        x.tan()
                    }
                }),
            ),
            (ActFunc::Arctan, Box::new(f64::atan)),
            (ActFunc::Erf, Box::new(erf64)),
            (
                ActFunc::ErfDx,
                Box::new(|x| 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp()),
            ),
            (ActFunc::Silu, Box::new(move |x| x * sig(x))),
            (
                ActFunc::SiluDx,
                Box::new(move |x| sig(x) * (1.0 + x * (1.0 - sig(x)))),
            ),
            (ActFunc::Softplus, Box::new(sp)),
            (ActFunc::Mish, Box::new(move |x| x * sp(x).tanh())),
            (
                ActFunc::GeluApprxTanh,
                Box::new(move |x| 0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())),
            ),
            (ActFunc::Exp2, Box::new(f64::exp2)),
            (
                ActFunc::LogicalNot,
                Box::new(|x| if x == 0.0 { 1.0 } else { 0.0 }),
            ),
        ];
        for (f, reference) in &table {
            for x in moderate() {
                let want = reference(f64::from(x));
                if want.is_nan() {
                    continue;
                }
                let got = f64::from(f.apply(x));
                assert!(
                    (got - want).abs() <= 1e-6 + 1e-5 * want.abs(),
                    "{}({x}) = {got}, f64 says {want}",
                    f.name()
                );
            }
        }
        // Specials: signs of zeros, NaN, infinities.
        assert_eq!(ActFunc::Sign.apply(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(ActFunc::Sign.apply(f32::NAN).is_nan());
        assert_eq!(ActFunc::Softplus.apply(200.0), 200.0);
        assert_eq!(ActFunc::Softplus.apply(-200.0), 0.0);
        assert_eq!(ActFunc::LogicalNot.apply(f32::NAN), 0.0);
        assert_eq!(ActFunc::LogicalNot.apply(-0.0), 1.0);
    }

    #[test]
    fn the_added_alu_ops_follow_their_definitions() {
        let xs = [
            -2.5f32,
            -1.0,
            -0.0,
            0.0,
            0.5,
            1.0,
            3.0,
            f32::NAN,
            f32::INFINITY,
        ];
        for &a in &xs {
            for &b in &xs {
                let t = |c: bool| if c { 1.0 } else { 0.0 };
                let (p, q) = (a != 0.0, b != 0.0);
                let int = |v: f32| {
                    if v.is_nan() {
                        0
                    } else {
                        (v.trunc() as i64).clamp(i32::MIN.into(), i32::MAX.into())
                    }
                };
                let (ia, ib) = (int(a), int(b));

                let want = [
                    (AluOp::Less, t(a < b)),
                    (AluOp::Greater, t(a > b)),
                    (AluOp::LessEqual, t(a <= b)),
                    (AluOp::GreaterEqual, t(a >= b)),
                    (AluOp::Equal, t(a == b)),
                    (AluOp::NotEqual, t(a != b)),
                    (AluOp::LogicalAnd, t(p && q)),
                    (AluOp::LogicalOr, t(p || q)),
                    (AluOp::LogicalXor, t(p != q)),
                    (AluOp::BitwiseAnd, ((ia & ib) as i32) as f32),
                    (AluOp::BitwiseOr, ((ia | ib) as i32) as f32),
                    (AluOp::BitwiseXor, ((ia ^ ib) as i32) as f32),
                ];
                for (op, w) in want {
                    assert_eq!(
                        op.apply(a, b).to_bits(),
                        w.to_bits(),
                        "{}({a}, {b})",
                        op.name()
                    );
                }
                // where(b, a, c) as pass_if(a, b) + pass_unless(c, b): exactly a or c.
                let c = -7.25f32;
                let sel = AluOp::PassIf.apply(a, b) + AluOp::PassUnless.apply(c, b);
                let want = if q { a } else { c };
                assert!(sel.to_bits() == want.to_bits() || (sel.is_nan() && want.is_nan()));
                let sel0 = AluOp::PassIf.apply(-0.0, b) + AluOp::PassUnless.apply(-0.0, b);
                assert_eq!(sel0.to_bits(), (-0.0f32).to_bits());
            }
        }
        // mod takes the divisor's sign (Python's %), fmod the dividend's (C's fmod).
        for (a, b, m, f) in [
            (7.0f32, 3.0f32, 1.0f32, 1.0f32),
            (-7.0, 3.0, 2.0, -1.0),
            (7.0, -3.0, -2.0, 1.0),
            (-7.0, -3.0, -1.0, -1.0),
            (5.5, 2.0, 1.5, 1.5),
            (6.0, 3.0, 0.0, 0.0),
        ] {
            assert_eq!(AluOp::Mod.apply(a, b), m, "mod({a}, {b})");
            assert_eq!(AluOp::Fmod.apply(a, b), f, "fmod({a}, {b})");
        }
        assert!(AluOp::Mod.apply(1.0, 0.0).is_nan() && AluOp::Fmod.apply(1.0, 0.0).is_nan());
        for (a, b) in [(2.0f32, 10.0f32), (0.5, -3.0), (1.7, 0.3), (9.0, 0.5)] {
            let want = f64::from(a).powf(f64::from(b));
            let got = f64::from(AluOp::Power.apply(a, b));
            assert!((got - want).abs() <= 1e-6 * want.abs(), "power({a}, {b})");
        }
        assert!(AluOp::ALL.iter().filter(|o| !o.is_nl()).count() == 2);
    }

    #[test]
    fn prod_and_all_fold_rows() {
        assert_eq!(ReduceOp::Prod.fold(&[2.0, -3.0, 0.5]), -3.0);
        assert_eq!(ReduceOp::Prod.fold(&[]), 1.0);
        assert_eq!(ReduceOp::All.fold(&[1.0, -2.0, f32::NAN]), 1.0);
        assert_eq!(ReduceOp::All.fold(&[1.0, 0.0, 3.0]), 0.0);
        assert_eq!(ReduceOp::All.fold(&[]), 1.0);
        // 1e30 * 1e30 overflows before 1e-30 could bring it back: left to right.
        assert_eq!(ReduceOp::Prod.fold(&[1e30, 1e30, 1e-30]), f32::INFINITY);
    }
}

//! The shape rules of each op, on the value shapes of its operands: one named step per family of
//! ops, each returning its messages in order.

use super::{AnyEntity, Verifier, MATMUL_MAX_KM, MATMUL_MAX_N};
use crate::entities::Axis;
use crate::ir::{Op, Operand, Scale};

impl Verifier<'_> {
    /// The shape rules of each op, on the value shapes (all operands 2-D, source count right).
    pub(super) fn shapes(
        &mut self,
        e: AnyEntity,
        loops: &[Axis],
        op: &Op,
        dst: &Operand,
        srcs: &[Operand],
    ) {
        let x = Shapes::of(op, dst, srcs);
        let errs = match op {
            Op::Load | Op::Store => x.dma(),
            Op::Gather { .. } | Op::Scatter { .. } => {
                let hbm = if matches!(op, Op::Gather { .. }) {
                    &srcs[0]
                } else {
                    dst
                };
                let mut errs = x.indirect();
                if hbm.access.pattern.is_some() {
                    errs.push(format!(
                        "the HBM side of `{}` is an access pattern; an indirect DMA's HBM side is a box of rows",
                        op.name()
                    ));
                }
                errs
            }
            Op::Copy | Op::TensorScalar { .. } => x.same_shape(),
            Op::Matmul { .. } => x.matmul(),
            Op::Transpose => x.transpose(),
            Op::TensorTensor { .. } => x.tensor_tensor(),
            Op::Activation { scale, bias, .. } => x.activation(scale, bias),
            Op::Reduce { .. } => x.reduce(),
            Op::TensorTensorScan { .. } => x.scan(),
            Op::VectorTranspose => x.vector_transpose(),
            Op::BnStats => x.bn_stats(),
            Op::BnAggr => x.bn_aggr(),
            Op::Max8 | Op::FindIndex8 | Op::MatchReplace8 { .. } => x.top8(),
            Op::Dropout { .. } => x.dropout(),
            Op::Shuffle { .. } | Op::LocalGather { .. } | Op::SequenceBounds => x.gather_moves(),
            Op::Memset { .. } | Op::Iota { .. } | Op::Rand { .. } => Vec::new(),
        };
        for m in errs {
            self.error_in(e, loops, m);
        }
    }
}

/// An instruction's op and value shapes: `d` of the destination, `s` of each source, and `col`
/// the destination's `[P, 1]`.
struct Shapes<'o> {
    op: &'o Op,
    d: [u64; 2],
    s: Vec<[u64; 2]>,
    col: [u64; 2],
}

/// `[a, b]`.
fn show(x: [u64; 2]) -> String {
    format!("[{}, {}]", x[0], x[1])
}

impl<'o> Shapes<'o> {
    fn of(op: &'o Op, dst: &Operand, srcs: &[Operand]) -> Self {
        let vd = dst.access.value_shape();
        let d = [vd[0], vd[1]];
        let s: Vec<[u64; 2]> = srcs
            .iter()
            .map(|o| {
                let v = o.access.value_shape();
                [v[0], v[1]]
            })
            .collect();
        Shapes {
            op,
            d,
            s,
            col: [d[0], 1],
        }
    }

    /// A load or store keeps the shape or moves whole runs of HBM rows per partition.
    fn dma(&self) -> Vec<String> {
        let (op, d, s) = (self.op, self.d, &self.s[..]);
        let mut errs = Vec::new();
        let (hbm, tile) = if *op == Op::Load {
            (s[0], d)
        } else {
            (d, s[0])
        };
        if crate::ir::dma_rows_per_partition(hbm, tile).is_none() {
            errs.push(format!(
                "source 0 is {} but the destination is {}; `{}` keeps the shape or moves whole runs of HBM rows per partition",
                show(s[0]),
                show(d),
                op.name()
            ));
        }
        errs
    }

    /// An indirect DMA: the tile `[P, F]` (destination of a gather, source 0 of a scatter), the
    /// HBM box `[B, F]` of the rows an index may name, the index tile (source 1) `[P, 1]`.
    fn indirect(&self) -> Vec<String> {
        let (op, d, s) = (self.op, self.d, &self.s[..]);
        let mut errs = Vec::new();
        let (hbm, tile) = if matches!(op, Op::Gather { .. }) {
            (s[0], d)
        } else {
            (d, s[0])
        };
        if hbm[1] != tile[1] {
            errs.push(format!(
                "the HBM box of `{}` is {} but the tile is {}; the rows must be as long as the tile's",
                op.name(),
                show(hbm),
                show(tile)
            ));
        }
        if s[1] != [tile[0], 1] {
            errs.push(format!(
                "the index tile (source 1) of `{}` is {} but the tile is {}; it holds one row index per partition, {}",
                op.name(),
                show(s[1]),
                show(tile),
                show([tile[0], 1])
            ));
        }
        errs
    }

    /// A copy or tensor_scalar keeps the shape.
    fn same_shape(&self) -> Vec<String> {
        let (op, d, s) = (self.op, self.d, &self.s[..]);
        let mut errs = Vec::new();
        if s[0] != d {
            errs.push(format!(
                "source 0 is {} but the destination is {}; `{}` keeps the shape",
                show(s[0]),
                show(d),
                op.name()
            ));
        }
        errs
    }

    /// `[K,M]ᵀ·[K,N] → [M,N]`, with K, M and N within the Tensor engine's limits.
    fn matmul(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        let ([k, m], [k2, n]) = (s[0], s[1]);
        if k != k2 {
            errs.push(format!(
                "matmul sources disagree on the contraction: source 0 is {} ([K, M]) and source 1 is {} ([K, N])",
                show(s[0]),
                show(s[1])
            ));
        }
        if d != [m, n] {
            errs.push(format!(
                "matmul of {} and {} gives [{m}, {n}], but the destination is {}",
                show(s[0]),
                show(s[1]),
                show(d)
            ));
        }
        if k > MATMUL_MAX_KM || m > MATMUL_MAX_KM {
            errs.push(format!(
                "matmul source 0 is {} but K and M are at most {MATMUL_MAX_KM}",
                show(s[0])
            ));
        }
        if n > MATMUL_MAX_N {
            errs.push(format!(
                "matmul source 1 is {} but N is at most {MATMUL_MAX_N}",
                show(s[1])
            ));
        }
        errs
    }

    /// `[P,F] → [F,P]` on the Tensor engine.
    fn transpose(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        if d != [s[0][1], s[0][0]] {
            errs.push(format!(
                "transpose of {} gives [{}, {}], but the destination is {}",
                show(s[0]),
                s[0][1],
                s[0][0],
                show(d)
            ));
        }
        errs
    }

    /// Each source is the destination's shape or `[P,1]`.
    fn tensor_tensor(&self) -> Vec<String> {
        let (d, s, col) = (self.d, &self.s[..], self.col);
        let mut errs = Vec::new();
        for (k, &x) in s.iter().enumerate() {
            if x != d && x != col {
                errs.push(format!(
                    "source {k} is {} but the destination is {}; a source is the destination's shape or [{}, 1]",
                    show(x),
                    show(d),
                    d[0]
                ));
            }
        }
        errs
    }

    /// The input keeps the shape; the scale and bias tiles are `[P,1]`.
    fn activation(&self, scale: &Scale, bias: &bool) -> Vec<String> {
        let (d, s, col) = (self.d, &self.s[..], self.col);
        let mut errs = Vec::new();
        if s[0] != d {
            errs.push(format!(
                "source 0 is {} but the destination is {}",
                show(s[0]),
                show(d)
            ));
        }
        let mut k = 1;
        if *scale == Scale::Tile {
            if s[k] != col {
                errs.push(format!(
                    "the scale (source {k}) is {} but must be [{}, 1]",
                    show(s[k]),
                    d[0]
                ));
            }
            k += 1;
        }
        if *bias && s[k] != col {
            errs.push(format!(
                "the bias (source {k}) is {} but must be [{}, 1]",
                show(s[k]),
                d[0]
            ));
        }
        errs
    }

    /// A reduction gives `[P,1]`.
    fn reduce(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        if d != [s[0][0], 1] {
            errs.push(format!(
                "reduce of {} gives [{}, 1], but the destination is {}",
                show(s[0]),
                s[0][0],
                show(d)
            ));
        }
        errs
    }

    /// A scan keeps the shape; its initial value is `[P,1]`.
    fn scan(&self) -> Vec<String> {
        let (d, s, col) = (self.d, &self.s[..], self.col);
        let mut errs = Vec::new();
        for (k, &x) in s.iter().take(2).enumerate() {
            if x != d {
                errs.push(format!(
                    "scan source {k} is {} but the destination is {}; a scan keeps the shape",
                    show(x),
                    show(d)
                ));
            }
        }
        if s[2] != col {
            errs.push(format!(
                "the scan's initial value (source 2) is {} but must be [{}, 1]",
                show(s[2]),
                d[0]
            ));
        }
        errs
    }

    /// `[P,F] → [F,P]` within the Vector engine's transpose limit.
    fn vector_transpose(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        let max = vocab::machine::DVE_TRANSPOSE_MAX;
        if d != [s[0][1], s[0][0]] {
            errs.push(format!(
                "vector_transpose of {} gives [{}, {}], but the destination is {}",
                show(s[0]),
                s[0][1],
                s[0][0],
                show(d)
            ));
        }
        if s[0][0] > max || s[0][1] > max {
            errs.push(format!(
                "vector_transpose of {}: the Vector engine transposes at most [{max}, {max}]",
                show(s[0])
            ));
        }
        errs
    }

    /// bn_stats gives its statistics width per partition, from a bounded free size.
    fn bn_stats(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        let want = [s[0][0], vocab::BN_STATS_WIDTH as u64];
        if d != want {
            errs.push(format!(
                "bn_stats of {} gives {}, but the destination is {}",
                show(s[0]),
                show(want),
                show(d)
            ));
        }
        if s[0][1] > vocab::machine::BN_STATS_FMAX {
            errs.push(format!(
                "bn_stats reads {} but at most {} elements per partition",
                show(s[0]),
                vocab::machine::BN_STATS_FMAX
            ));
        }
        errs
    }

    /// bn_aggr gives its aggregate width from whole (count, mean, variance) triples.
    fn bn_aggr(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        let want = [s[0][0], vocab::BN_AGGR_WIDTH as u64];
        if d != want {
            errs.push(format!(
                "bn_aggr of {} gives {}, but the destination is {}",
                show(s[0]),
                show(want),
                show(d)
            ));
        }
        if !s[0][1].is_multiple_of(3) {
            errs.push(format!(
                "bn_aggr reads {}, whose free size is not a multiple of 3 (count, mean, variance * count)",
                show(s[0])
            ));
        }
        errs
    }

    /// dropout: the data of the destination's shape, the probability `[P, 1]`.
    fn dropout(&self) -> Vec<String> {
        let (d, s) = (self.d, &self.s[..]);
        let mut errs = Vec::new();
        if s[0] != d {
            errs.push(format!(
                "dropout reads {} into a destination of {}",
                show(s[0]),
                show(d)
            ));
        }
        if s[1] != self.col {
            errs.push(format!(
                "the probability of dropout (source 1) is {} but must be {}",
                show(s[1]),
                show(self.col)
            ));
        }
        errs
    }

    /// max8, find_index8 and match_replace8: enough elements per partition, values and result of the top-8 width.
    fn top8(&self) -> Vec<String> {
        let (op, d, s) = (self.op, self.d, &self.s[..]);
        let mut errs = Vec::new();
        let top = vocab::TOP8 as u64;
        let name = op.name();
        if s[0][1] < vocab::TOP8_MIN_FREE as u64 {
            errs.push(format!(
                "{name} reads {}, fewer than {} elements per partition",
                show(s[0]),
                vocab::TOP8_MIN_FREE
            ));
        }
        if let Some(v) = s.get(1) {
            if *v != [s[0][0], top] {
                errs.push(format!(
                    "the values of {name} (source 1) are {} but must be [{}, {top}]",
                    show(*v),
                    s[0][0]
                ));
            }
        }
        let want = match op {
            Op::MatchReplace8 { .. } => s[0],
            _ => [s[0][0], top],
        };
        if d != want {
            errs.push(format!(
                "{name} of {} gives {}, but the destination is {}",
                show(s[0]),
                show(want),
                show(d)
            ));
        }
        errs
    }

    /// shuffle, local_gather and sequence_bounds (`vocab::gather_ops`): the shapes their
    /// parameters give.
    fn gather_moves(&self) -> Vec<String> {
        let (op, d, s) = (self.op, self.d, &self.s[..]);
        let name = op.name();
        let mut errs = Vec::new();
        let want = match op {
            Op::Shuffle { mask } => {
                let q = vocab::SHUFFLE_QUADRANT as u64;
                let active = d[0].max(s[0][0]).div_ceil(q) * q;
                let reach = (0..d[0] as usize)
                    .filter_map(|r| vocab::shuffle_source(mask, r))
                    .max();
                if d[0] > active || reach.is_some_and(|r| r as u64 >= s[0][0]) {
                    errs.push(format!(
                        "{name} reads row {} of a source of {}",
                        reach.unwrap_or_default(),
                        show(s[0])
                    ));
                }
                if let Some(old) = s.get(1) {
                    if *old != d {
                        errs.push(format!(
                            "the kept rows of {name} (source 1) are {} but the destination is {}",
                            show(*old),
                            show(d)
                        ));
                    }
                }
                [d[0], s[0][1]]
            }
            Op::LocalGather {
                group,
                elems,
                count,
            } => {
                let g = u64::from(*group).max(1);
                if s[1][0] != s[0][0] || s[0][0] % g != 0 {
                    errs.push(format!(
                        "the indices of {name} (source 1) are {} for data {}; both span the same partitions, a multiple of {g}",
                        show(s[1]),
                        show(s[0])
                    ));
                }
                if u64::from(*count) > g * s[1][1] {
                    errs.push(format!(
                        "{name} gathers {count} indices per group, more than the {} of {}",
                        g * s[1][1],
                        show(s[1])
                    ));
                }
                [s[0][0], u64::from(*count) * u64::from(*elems)]
            }
            _ => [s[0][0], 2 * s[0][1]],
        };
        if d != want {
            errs.push(format!(
                "{name} of {} gives {}, but the destination is {}",
                show(s[0]),
                show(want),
                show(d)
            ));
        }
        errs
    }
}

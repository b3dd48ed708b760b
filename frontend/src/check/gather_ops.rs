//! The NKI operations that move data on chip across partitions or by index, and the identity
//! constant that transposes lean on:
//! - `nisa.nc_stream_shuffle(src, shuffle_mask)` (with `dst=`): the Penguin `shuffle`
//!   instruction; within each quadrant of 32 partitions, destination row `i` takes source row
//!   `shuffle_mask[i]`, or keeps its value where it is 255 (the destination is then also a
//!   source, so the rows kept flow through the instruction);
//! - `nisa.local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None)`: the
//!   Penguin `local_gather` over groups of 16 partitions (GpSimd's cores), `[P, count * elems]`;
//! - `nl.gather_flattened(data, indices)`: `local_gather` over groups of one partition, one
//!   element per index, `[P, K]` for `K` indices per partition;
//! - `nisa.sequence_bounds(segment_ids)`: the Penguin `sequence_bounds` instruction, `[P, 2n]`;
//! - `nl.shared_identity_matrix(n, dtype=nl.uint8)`: `nl.shared_constant(np.identity(n), dtype)`.
//!
//! Numerics are the shared vocabulary's (`vocab::gather_ops`). Invariant: every instruction
//! built here satisfies the Penguin verifier's shape rule for its operation (checked here
//! first, with a diagnostic at the user's argument).

use super::calls::Param;
use super::operands::{Dest, OpKind, Res, StmtCtx};
use super::pyvalue::Py;
use super::{Checker, TileVal, Value};
use crate::ast::{Expr, ExprKind, Span};
use crate::codes;
use penguin::{Memory, Op};
use vocab::{Diagnostic, SHUFFLE_KEEP, SHUFFLE_QUADRANT};

/// The partitions of one GpSimd core: the group `nisa.local_gather` reads its indices from.
const GPSIMD_CORE_PARTITIONS: u64 = 16;

/// `nisa.local_gather`'s documented runs per index.
const GATHER_ELEMS: [i64; 6] = [1, 2, 4, 8, 16, 32];

/// `nisa.local_gather`'s documented limit of indices per core.
const GATHER_MAX_INDICES: i64 = 4096;

/// The `nisa` operations of this file, by name.
pub(super) fn nisa_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "nc_stream_shuffle" => OpKind::StreamShuffle,
        "local_gather" => OpKind::LocalGather,
        "sequence_bounds" => OpKind::SequenceBounds,
        _ => return None,
    })
}

/// The `nl` operations of this file, by name.
pub(super) fn nl_ops(name: &str) -> Option<OpKind> {
    Some(match name {
        "gather_flattened" => OpKind::GatherFlattened,
        "shared_identity_matrix" => OpKind::SharedIdentity,
        _ => return None,
    })
}

/// The parameters of the operations of this file, in NKI's order.
pub(super) fn params(kind: OpKind) -> &'static [Param] {
    match kind {
        OpKind::StreamShuffle => &[("src", true), ("shuffle_mask", true), ("dtype", false)],
        OpKind::LocalGather => &[
            ("src_buffer", true),
            ("index", true),
            ("num_elem_per_idx", false),
            ("num_valid_indices", false),
        ],
        OpKind::GatherFlattened => &[
            ("data", true),
            ("indices", true),
            ("axis", false),
            ("dtype", false),
        ],
        OpKind::SequenceBounds => &[("segment_ids", true), ("dtype", false)],
        OpKind::SharedIdentity => &[("n", true), ("dtype", false)],
        _ => &[],
    }
}

impl Checker<'_> {
    /// Applies the operations of this file once their arguments are bound.
    pub(super) fn gather_op(
        &mut self,
        kind: OpKind,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        match kind {
            OpKind::StreamShuffle => self.stream_shuffle(slots, span, cx, dest),
            OpKind::LocalGather | OpKind::GatherFlattened => {
                self.local_gather(kind, slots, span, cx, dest)
            }
            OpKind::SequenceBounds => {
                let what = "`nisa.sequence_bounds`";
                let ids = self.gpsimd_tile(slots[0]?, cx, what)?;
                let shape = [ids.size[0], 2 * ids.size[1]];
                let dtype = self.tensor(ids.tensor).dtype;
                let res = Res {
                    shape,
                    memory: Memory::Sbuf,
                    dtype,
                };
                self.emit(cx, Op::SequenceBounds, vec![ids], res, dest, span)
            }
            _ => self.shared_identity(slots, span, dest),
        }
    }

    /// `nisa.nc_stream_shuffle(src=s, shuffle_mask=m)` into `dest`.
    fn stream_shuffle(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let what = "`nisa.nc_stream_shuffle`";
        let src = self.compute_tile(slots[0]?, cx, what)?;
        let mask_e = slots[1]?;
        let mask = self.shuffle_mask(mask_e)?;
        let keeps = mask.contains(&SHUFFLE_KEEP);
        let rows = match &dest {
            Dest::Into { target, .. } => target.size[0],
            _ => src.size[0],
        };
        let reach = (0..rows as usize)
            .filter_map(|r| vocab::shuffle_source(&mask, r))
            .max();
        if let Some(r) = reach.filter(|&r| r as u64 >= src.size[0]) {
            self.gather_error(
                format!(
                    "{what}: destination row {} reads source row {r}, but the source has {} partitions",
                    (0..rows as usize)
                        .find(|&d| vocab::shuffle_source(&mask, d) == Some(r))
                        .unwrap_or_default(),
                    src.size[0]
                ),
                &mask_e.span,
                "within each quadrant of 32 partitions, `shuffle_mask[i]` names a source row of that quadrant",
            );
            return None;
        }
        let mut srcs = vec![src.clone()];
        if keeps {
            match &dest {
                Dest::Into { target, .. } => srcs.push(target.clone()),
                _ => {
                    self.gather_error(
                        format!("{what}: a `shuffle_mask` of 255 keeps rows of the destination, which this call does not name"),
                        &mask_e.span,
                        "pass the destination: `nisa.nc_stream_shuffle(src=s, dst=t, shuffle_mask=m)`",
                    );
                    return None;
                }
            }
        }
        let dtype = self.tensor(src.tensor).dtype;
        let res = Res {
            shape: [rows, src.size[1]],
            memory: Memory::Sbuf,
            dtype,
        };
        self.emit(cx, Op::Shuffle { mask }, srcs, res, dest, span)
    }

    /// The 32 rows of a `shuffle_mask` (a list or tuple of compile-time integers, each 0 to 31
    /// or 255).
    fn shuffle_mask(&mut self, e: &Expr) -> Option<[u8; 32]> {
        let v = self.eval(e)?;
        let items: Option<Vec<Value>> = match v.as_py() {
            Some(Py::List(items)) => Some(items.borrow().clone()),
            Some(Py::Tuple(items)) => Some(items.clone()),
            _ => None,
        };
        let rows: Option<Vec<u8>> = items.as_ref().and_then(|items| {
            items
                .iter()
                .map(|x| {
                    x.as_int()
                        .and_then(|m| u8::try_from(m).ok())
                        .filter(|&m| usize::from(m) < SHUFFLE_QUADRANT || m == SHUFFLE_KEEP)
                })
                .collect()
        });
        match rows.map(<[u8; 32]>::try_from) {
            Some(Ok(mask)) => Some(mask),
            _ => {
                self.gather_error(
                    format!(
                        "`shuffle_mask` must be a list of 32 integers, each 0 to 31 or 255, not {}",
                        v.repr()
                    ),
                    &e.span,
                    "one source row per row of a quadrant: `[(i - 1) % 32 for i in range(32)]`",
                );
                None
            }
        }
    }

    /// `nisa.local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices)` (groups of
    /// 16 partitions) or `nl.gather_flattened(data, indices)` (groups of one partition).
    fn local_gather(
        &mut self,
        kind: OpKind,
        slots: &[Option<&Expr>],
        span: &Span,
        cx: &mut StmtCtx,
        dest: Dest,
    ) -> Option<TileVal> {
        let local = kind == OpKind::LocalGather;
        let what = if local {
            "`nisa.local_gather`"
        } else {
            "`nl.gather_flattened`"
        };
        let src = self.gpsimd_tile(slots[0]?, cx, what)?;
        let index = self.gpsimd_tile(slots[1]?, cx, what)?;
        let group = if local { GPSIMD_CORE_PARTITIONS } else { 1 };
        let [p, f] = src.size;
        if index.size[0] != p || p % group != 0 {
            self.gather_error(
                format!(
                    "{what}: the data spans {p} partitions and the indices {}; both must span the same partitions{}",
                    index.size[0],
                    if local { ", a multiple of 16" } else { "" }
                ),
                &slots[1]?.span,
                "load the indices into a tile of the data's partitions",
            );
            return None;
        }
        let per_group = group * index.size[1];
        let (elems, count) = if local {
            let elems = match slots[2] {
                Some(e) => self.const_int(e)?,
                None => 1,
            };
            if !GATHER_ELEMS.contains(&elems) || elems as u64 > f {
                self.gather_error(
                    format!("{what}: `num_elem_per_idx` is {elems}; it is one of 1, 2, 4, 8, 16, 32, at most the data's {f} elements per partition"),
                    &slots[2].map_or(span.clone(), |e| e.span.clone()),
                    "pass the length of each contiguous run to gather",
                );
                return None;
            }
            let count = match slots[3].filter(|e| !matches!(e.kind, ExprKind::None)) {
                Some(e) => self.const_int(e)?,
                None => per_group as i64,
            };
            if count < 1 || count as u64 > per_group || count > GATHER_MAX_INDICES {
                self.gather_error(
                    format!("{what}: `num_valid_indices` is {count}; each core has {per_group} indices (16 partitions of {}), and gathers at most {GATHER_MAX_INDICES}", index.size[1]),
                    &slots[3].map_or(span.clone(), |e| e.span.clone()),
                    "pass at most the indices of 16 partitions of the index tile",
                );
                return None;
            }
            (elems as u64, count as u64)
        } else {
            if let Some(a) = slots[2].filter(|e| !matches!(e.kind, ExprKind::None)) {
                if self.const_int(a)? != 0 {
                    self.gather_error(
                        format!("{what}: only `axis=0` (the default) is supported: the indices pick elements of each partition's flattened free axis"),
                        &a.span,
                        "leave `axis` out",
                    );
                    return None;
                }
            }
            (1, index.size[1])
        };
        let op = Op::LocalGather {
            group: group as u32,
            elems: elems as u32,
            count: count as u32,
        };
        let dtype = self.tensor(src.tensor).dtype;
        let res = Res {
            shape: [p, count * elems],
            memory: Memory::Sbuf,
            dtype,
        };
        self.emit(cx, op, vec![src, index], res, dest, span)
    }

    /// A tile operand in SBUF (GpSimd reaches no PSUM), `what` naming the operation.
    fn gpsimd_tile(&mut self, e: &Expr, cx: &mut StmtCtx, what: &str) -> Option<TileVal> {
        let t = self.compute_tile(e, cx, what)?;
        if self.tensor(t.tensor).memory != Memory::Sbuf {
            self.gather_error(
                format!("{what} runs on GpSimd, which reads SBUF only, but this tile is in PSUM"),
                &e.span,
                "copy the tile into SBUF first (`nl.copy`)",
            );
            return None;
        }
        Some(t)
    }

    /// `nl.shared_identity_matrix(n, dtype=nl.uint8)`: a constant HBM tensor holding the
    /// `n × n` identity.
    fn shared_identity(
        &mut self,
        slots: &[Option<&Expr>],
        span: &Span,
        dest: Dest,
    ) -> Option<TileVal> {
        let n_e = slots[0]?;
        let n = self.const_int(n_e)?;
        if !(1..=i64::from(u16::MAX)).contains(&n) {
            self.gather_error(
                format!("`nl.shared_identity_matrix` of {n} rows"),
                &n_e.span,
                "pass a positive size such as 128",
            );
            return None;
        }
        let n = n as usize;
        let values = (0..n * n)
            .map(|k| if k / n == k % n { 1.0 } else { 0.0 })
            .collect();
        let dtype = match slots[1] {
            Some(d) => self.dtype_of(d)?,
            None => penguin::DType::F32,
        };
        self.const_tensor(n as u64, n as u64, values, dtype, span, dest)
    }

    /// A shape or argument error of one of this file's operations at `span`.
    fn gather_error(&mut self, message: String, span: &Span, help: &str) {
        self.error(
            Diagnostic::new(codes::ELEMENTWISE_SHAPE, message, span.clone())
                .with_label("here")
                .with_help(help.to_string()),
        );
    }
}

//! Address resolution and storage: SBUF and PSUM as byte arrays, HBM tensors as f32 arrays.
//!
//! Resolving an access pattern evaluates its expressions for the current iteration registers and
//! checks its bounds (inside the memory, inside one PSUM bank, inside its tensor) before anything
//! is read or written; a [`Resolved`] pattern is therefore always in range, which is the invariant
//! the readers and writers rely on. Values are stored in their dtype: a bf16 element is the top
//! half of the f32 bit pattern, rounded to nearest even on store.
//!
//! Every memory also tracks which of its elements hold a defined value ([`vocab::poison`]): SBUF
//! and PSUM per byte (an element is defined when all its bytes are), HBM outputs and scratch per
//! element; inputs and constants are defined throughout and carry no flags. Nothing starts
//! defined on chip; a write makes its elements defined, or undefined where the value written was
//! computed from undefined ones. Reads return the values with their flags, `None` when all are
//! defined.
//!
//! Element offsets are enumerated only when asked (for numerics); every resolved pattern also
//! carries its [`Pattern`] (start and dimensions in bytes, HBM: elements), from which the race
//! detector builds its footprint without enumerating anything.

use crate::isa::{Ap, DType, Dim, HbmAp, Mem, TensorDecl, MAX_DIMS, MAX_REGS};
use crate::machine::{PARTITIONS, PSUM_BANK_BYTES, PSUM_PARTITION_BYTES, SBUF_PARTITION_BYTES};
use crate::numerics::round_to;
use vocab::poison::Undef;

/// Why an access is out of range at run time: the decision [`resolve`] and [`resolve_hbm`]
/// make, for a caller to match (the text says what is out of range, and of what).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AccessError {
    /// Partitions `p0..end` leave the memory's `0..PARTITIONS`.
    #[error("partitions {p0}..{end} are outside {mem} (0..{})", PARTITIONS)]
    Partitions {
        p0: i128,
        end: i128,
        mem: &'static str,
    },
    /// Bytes `lo..hi` of each partition leave the memory's `cap` bytes per partition.
    #[error("bytes {lo}..{hi} of each partition are outside {mem} ({cap} bytes per partition)")]
    Bytes {
        lo: i128,
        hi: i128,
        mem: &'static str,
        cap: i128,
    },
    /// A PSUM tile of bytes `lo..hi` of each partition crosses from bank `from` into bank `to`.
    #[error(
        "the PSUM tile spans bytes {lo}..{hi} of each partition, crossing from bank {from} into bank {to} ({} bytes per bank)",
        PSUM_BANK_BYTES
    )]
    PsumBanks {
        lo: i128,
        hi: i128,
        from: i128,
        to: i128,
    },
    /// Elements `lo..end` leave HBM tensor `tensor` of `elems` elements.
    #[error("elements {lo}..{end} are outside tensor `{tensor}` ({elems} elements)")]
    Elements {
        lo: i128,
        end: i128,
        tensor: String,
        elems: i128,
    },
    /// An indirect DMA's HBM side whose elements do not group into the rows its index names.
    #[error("an indirect DMA's HBM side does not divide into index rows")]
    IndexRows,
    /// Index `value` in partition `partition` of an indirect DMA's index tile is not one of the
    /// `rows` rows of its HBM side.
    #[error("index {value} in partition {partition} of the index tile is not a row of 0..{rows} of the HBM side")]
    IndexOutOfRange {
        value: f32,
        partition: usize,
        rows: u64,
    },
    #[error("an access pattern has at most {} dimensions", MAX_DIMS)]
    TooManyDims,
    #[error("an access pattern's stride is out of range")]
    Stride,
    #[error("an access pattern starts out of range")]
    Start,
}

/// Where an access lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Sbuf,
    Psum,
    /// An HBM tensor, by index.
    Hbm(usize),
}

/// A pattern resolved for one execution: in range by construction.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub space: Space,
    pub dtype: DType,
    /// First partition (0 for HBM).
    pub p0: u32,
    /// Partitions (1 for HBM).
    pub np: u32,
    /// Elements per partition.
    pub free: u64,
    /// Byte offsets in each partition (HBM: element offsets), in row-major order of the dims.
    /// Empty when the caller asked for bounds only.
    pub offsets: Vec<u64>,
    /// The lowest and one past the highest byte touched in a partition (HBM: elements).
    pub lo: u64,
    pub hi: u64,
    /// The pattern's shape on the free axis, in bytes (HBM: elements).
    pub pattern: Pattern,
}

/// An access pattern's shape on the free axis with its expressions evaluated: the offsets are
/// `start + Σ i_d * stride_d` for `0 <= i_d < size_d`, each covering `unit` bytes (HBM: one
/// element, `unit` 1). Every offset lies in `[lo, hi)` of its [`Resolved`]; a dimension of size 1
/// has stride 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub start: u64,
    pub unit: u64,
    /// (size, stride), outermost first; the first `ndims` are meaningful.
    pub dims: [(u64, i64); MAX_DIMS],
    pub ndims: usize,
}

impl Pattern {
    /// The pattern of an in-range access (bounds already checked, so every stride times its
    /// size fits the memory and no product overflows).
    fn new(start: i128, dims: &[Dim], unit: u64) -> Result<Pattern, AccessError> {
        if dims.len() > MAX_DIMS {
            return Err(AccessError::TooManyDims);
        }
        let mut out = [(1u64, 0i64); MAX_DIMS];
        for (o, d) in out.iter_mut().zip(dims) {
            let stride = if d.size > 1 {
                i64::try_from(d.stride as i128 * unit as i128).map_err(|_| AccessError::Stride)?
            } else {
                0
            };
            *o = (d.size, stride);
        }
        Ok(Pattern {
            start: u64::try_from(start).map_err(|_| AccessError::Start)?,
            unit,
            dims: out,
            ndims: dims.len(),
        })
    }

    /// The meaningful dimensions.
    pub fn dims(&self) -> &[(u64, i64)] {
        &self.dims[..self.ndims]
    }
}

/// The extreme offsets of `start + Σ i_d * stride_d * scale` over the dims.
fn extremes(start: i128, dims: &[Dim], scale: i128) -> (i128, i128) {
    let (mut lo, mut hi) = (start, start);
    for d in dims {
        let span = (d.size as i128 - 1)
            .saturating_mul(d.stride as i128)
            .saturating_mul(scale);
        if span < 0 {
            lo = lo.saturating_add(span);
        } else {
            hi = hi.saturating_add(span);
        }
    }
    (lo, hi)
}

fn enumerate(start: u64, dims: &[Dim], scale: i64, out: &mut Vec<u64>) {
    // Contiguous fast path: strides are the row-major strides of the sizes.
    let mut expect = 1i64;
    let mut contiguous = true;
    for d in dims.iter().rev() {
        if d.size > 1 && d.stride != expect {
            contiguous = false;
            break;
        }
        expect = expect.saturating_mul(d.size as i64);
    }
    let n: u64 = dims.iter().map(|d| d.size).product();
    out.reserve(n as usize);
    if contiguous {
        out.extend((0..n).map(|i| start + i * scale as u64));
        return;
    }
    let mut idx = vec![0u64; dims.len()];
    for _ in 0..n {
        // Modulo 2^64: every offset is in range, but may exceed i64 (a timing-only tensor).
        let mut off = start;
        for (d, &i) in dims.iter().zip(&idx) {
            off = off.wrapping_add((i as i64).wrapping_mul(d.stride).wrapping_mul(scale) as u64);
        }
        out.push(off);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[k].size {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Resolves a tile pattern; an error says what is out of range.
pub fn resolve(ap: &Ap, regs: &[i64; MAX_REGS], offsets: bool) -> Result<Resolved, AccessError> {
    let p0 = ap.p0.eval(regs);
    if p0 < 0 || p0.saturating_add(ap.np as i128) > PARTITIONS as i128 {
        return Err(AccessError::Partitions {
            p0,
            end: p0.saturating_add(ap.np as i128),
            mem: ap.mem.name(),
        });
    }
    let esize = ap.dtype.size_bytes() as i128;
    let start = ap.start.eval(regs);
    let (lo, hi) = extremes(start, &ap.dims, esize);
    let hi = hi.saturating_add(esize);
    let cap = match ap.mem {
        Mem::Sbuf => SBUF_PARTITION_BYTES,
        Mem::Psum => PSUM_PARTITION_BYTES,
    } as i128;
    if lo < 0 || hi > cap {
        return Err(AccessError::Bytes {
            lo,
            hi,
            mem: ap.mem.name(),
            cap,
        });
    }
    if ap.mem == Mem::Psum && lo / PSUM_BANK_BYTES as i128 != (hi - 1) / PSUM_BANK_BYTES as i128 {
        return Err(AccessError::PsumBanks {
            lo,
            hi,
            from: lo / PSUM_BANK_BYTES as i128,
            to: (hi - 1) / PSUM_BANK_BYTES as i128,
        });
    }
    let pattern = Pattern::new(start, &ap.dims, esize as u64)?;
    let mut offs = Vec::new();
    if offsets {
        enumerate(start as u64, &ap.dims, esize as i64, &mut offs);
    }
    Ok(Resolved {
        space: match ap.mem {
            Mem::Sbuf => Space::Sbuf,
            Mem::Psum => Space::Psum,
        },
        dtype: ap.dtype,
        p0: p0 as u32,
        np: ap.np,
        free: ap.free_elems(),
        offsets: offs,
        lo: lo as u64,
        hi: hi as u64,
        pattern,
    })
}

/// Resolves an HBM pattern against its tensor.
pub fn resolve_hbm(
    h: &HbmAp,
    t: &TensorDecl,
    regs: &[i64; MAX_REGS],
    offsets: bool,
) -> Result<Resolved, AccessError> {
    let start = h.start.eval(regs);
    let (lo, hi) = extremes(start, &h.dims, 1);
    let n = t.elems() as i128;
    if lo < 0 || hi >= n {
        return Err(AccessError::Elements {
            lo,
            end: hi.saturating_add(1),
            tensor: t.name.clone(),
            elems: n,
        });
    }
    let pattern = Pattern::new(start, &h.dims, 1)?;
    let mut offs = Vec::new();
    if offsets {
        enumerate(start as u64, &h.dims, 1, &mut offs);
    }
    Ok(Resolved {
        space: Space::Hbm(h.tensor),
        dtype: t.dtype,
        p0: 0,
        np: 1,
        free: h.elems(),
        offsets: offs,
        lo: lo as u64,
        hi: hi as u64 + 1,
        pattern,
    })
}

/// The machine's memories.
pub struct Storage {
    sbuf: Vec<u8>,
    psum: Vec<u8>,
    pub hbm: Vec<Vec<f32>>,
    /// Per byte of SBUF and of PSUM: whether it holds part of a defined value.
    sbuf_defined: Vec<bool>,
    psum_defined: Vec<bool>,
    /// Per HBM tensor, for tensors that track it only (outputs and scratch): which elements
    /// hold a defined value.
    hbm_defined: Vec<Option<Vec<bool>>>,
}

impl Storage {
    /// The memories, with HBM tensors `hbm`; the tensors whose `tracked` flag is set start
    /// undefined, the others defined.
    pub fn new(hbm: Vec<Vec<f32>>, tracked: &[bool]) -> Storage {
        let hbm_defined = hbm
            .iter()
            .zip(tracked.iter().chain(std::iter::repeat(&false)))
            .map(|(t, &s)| s.then(|| vec![false; t.len()]))
            .collect();
        let sbuf_bytes = (PARTITIONS as u64 * SBUF_PARTITION_BYTES) as usize;
        let psum_bytes = (PARTITIONS as u64 * PSUM_PARTITION_BYTES) as usize;
        Storage {
            sbuf: vec![0; sbuf_bytes],
            psum: vec![0; psum_bytes],
            hbm,
            sbuf_defined: vec![false; sbuf_bytes],
            psum_defined: vec![false; psum_bytes],
            hbm_defined,
        }
    }

    /// Whether a resolved pattern lands in a tensor that must never hold an undefined value
    /// (an HBM output or scratch tensor).
    pub fn is_tracked_hbm(&self, r: &Resolved) -> bool {
        matches!(r.space, Space::Hbm(t) if self.hbm_defined[t].is_some())
    }

    /// The flags of the `[np, free]` elements of a resolved pattern (resolved with offsets).
    fn flags(&self, r: &Resolved) -> Undef {
        let n = r.offsets.len();
        let mut undef: Option<Vec<bool>> = None;
        let (lo, hi) = (r.lo as usize, r.hi as usize);
        if let Space::Hbm(t) = r.space {
            let d = self.hbm_defined[t].as_ref()?;
            // The common case: everything the pattern spans is defined.
            if d[lo..hi].iter().all(|&x| x) {
                return None;
            }
            for (i, &o) in r.offsets.iter().enumerate() {
                if !d[o as usize] {
                    undef.get_or_insert_with(|| vec![false; n])[i] = true;
                }
            }
            return undef;
        }
        let (defined, pb) = match r.space {
            Space::Psum => (&self.psum_defined, PSUM_PARTITION_BYTES),
            _ => (&self.sbuf_defined, SBUF_PARTITION_BYTES),
        };
        let spans_defined = (r.p0..r.p0 + r.np).all(|p| {
            let base = (p as u64 * pb) as usize;
            defined[base + lo..base + hi].iter().all(|&x| x)
        });
        if spans_defined {
            return None;
        }
        let esize = r.dtype.size_bytes() as usize;
        let total = r.np as usize * n;
        for (row, p) in (r.p0..r.p0 + r.np).enumerate() {
            let base = (p as u64 * pb) as usize;
            for (j, &o) in r.offsets.iter().enumerate() {
                let i = base + o as usize;
                if !defined[i..i + esize].iter().all(|&d| d) {
                    undef.get_or_insert_with(|| vec![false; total])[row * n + j] = true;
                }
            }
        }
        undef
    }

    /// Records the flags of a write through a resolved pattern (`None`: all defined).
    fn set_flags(&mut self, r: &Resolved, undef: Option<&[bool]>) {
        let n = r.offsets.len();
        if let Space::Hbm(t) = r.space {
            if let Some(d) = &mut self.hbm_defined[t] {
                for (i, &o) in r.offsets.iter().enumerate() {
                    d[o as usize] = undef.is_none_or(|u| !u[i]);
                }
            }
            return;
        }
        let (defined, pb) = match r.space {
            Space::Psum => (&mut self.psum_defined, PSUM_PARTITION_BYTES),
            _ => (&mut self.sbuf_defined, SBUF_PARTITION_BYTES),
        };
        let esize = r.dtype.size_bytes() as usize;
        for (row, p) in (r.p0..r.p0 + r.np).enumerate() {
            let base = (p as u64 * pb) as usize;
            for (j, &o) in r.offsets.iter().enumerate() {
                let i = base + o as usize;
                defined[i..i + esize].fill(undef.is_none_or(|u| !u[row * n + j]));
            }
        }
    }

    fn bytes(&self, space: Space) -> (&[u8], u64) {
        match space {
            Space::Psum => (&self.psum, PSUM_PARTITION_BYTES),
            _ => (&self.sbuf, SBUF_PARTITION_BYTES),
        }
    }

    /// Reads the `[np, free]` values of a resolved pattern (resolved with offsets), with which
    /// of them are undefined.
    pub fn read(&self, r: &Resolved) -> (Vec<f32>, Undef) {
        (self.values(r), self.flags(r))
    }

    fn values(&self, r: &Resolved) -> Vec<f32> {
        let mut out = Vec::with_capacity(r.np as usize * r.offsets.len());
        if let Space::Hbm(t) = r.space {
            let data = &self.hbm[t];
            out.extend(r.offsets.iter().map(|&o| data[o as usize]));
            return out;
        }
        let (bytes, pb) = self.bytes(r.space);
        for p in r.p0..r.p0 + r.np {
            let base = (p as u64 * pb) as usize;
            match r.dtype {
                DType::F32 => out.extend(r.offsets.iter().map(|&o| {
                    let i = base + o as usize;
                    f32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]])
                })),
                DType::Bf16 => out.extend(r.offsets.iter().map(|&o| {
                    let i = base + o as usize;
                    f32::from_bits((u16::from_le_bytes([bytes[i], bytes[i + 1]]) as u32) << 16)
                })),
            }
        }
        out
    }

    /// Writes `vals` (`[np, free]`, row-major) through a resolved pattern, rounding to its dtype,
    /// with their undefined flags `undef`.
    pub fn write(&mut self, r: &Resolved, vals: &[f32], undef: Option<&[bool]>) {
        self.set_flags(r, undef);
        if let Space::Hbm(t) = r.space {
            let data = &mut self.hbm[t];
            for (&o, &v) in r.offsets.iter().zip(vals) {
                data[o as usize] = round_to(r.dtype, v);
            }
            return;
        }
        let pb = match r.space {
            Space::Psum => PSUM_PARTITION_BYTES,
            _ => SBUF_PARTITION_BYTES,
        };
        let bytes = match r.space {
            Space::Psum => &mut self.psum,
            _ => &mut self.sbuf,
        };
        let n = r.offsets.len();
        for (row, p) in (r.p0..r.p0 + r.np).enumerate() {
            let base = (p as u64 * pb) as usize;
            for (&o, &v) in r.offsets.iter().zip(&vals[row * n..(row + 1) * n]) {
                let i = base + o as usize;
                let v = round_to(r.dtype, v);
                match r.dtype {
                    DType::F32 => bytes[i..i + 4].copy_from_slice(&v.to_le_bytes()),
                    DType::Bf16 => {
                        let h = (v.to_bits() >> 16) as u16;
                        bytes[i..i + 2].copy_from_slice(&h.to_le_bytes())
                    }
                }
            }
        }
    }
}

//! Undefined values ("poison"): how an element that nothing wrote, or that was computed from one,
//! flows through the operations. The interpreter and the simulator both apply these rules, so
//! they agree on which elements are undefined by construction.
//!
//! A tile's undefined elements are a [`Undef`]: `None` when every element is defined (the common
//! case, which costs nothing), else one flag per element in the tile's row-major order, `true`
//! for an undefined element. A source of an operation on a `[P, F]` destination is a [`Flags`]:
//! its flags and its width per row (`F` for a full tile, `1` for a `[P, 1]` column, or the
//! source's own width for a row operation).
//!
//! The rules:
//! - elementwise operations: an element is undefined iff an element it is computed from is (a
//!   `[P, 1]` broadcast source poisons its whole row) ([`elementwise`]);
//! - free-axis reductions and row operations (reduce, bn_stats, bn_aggr, max8, find_index8,
//!   match_replace8, scans): a row of the result is undefined iff any element read from that row
//!   of any source is ([`rows`]);
//! - matmul `out[m, n] = Σ_k a[k, m] · b[k, n]`: undefined iff column `m` of `a` or column `n` of
//!   `b` holds an undefined element ([`matmul`]); accumulating keeps an undefined destination
//!   element undefined ([`union`]);
//! - a transpose moves the flags with the elements ([`transpose`]); copies, loads and stores
//!   carry them element by element.
//!
//! Undefined data is an error only where it becomes observable: when it is written into an HBM
//! tensor (the callers' check).
//!
//! Invariant: every `Some` flag vector has exactly one flag per element of its tile, and holds at
//! least one `true` when built by these functions (all-defined results are `None`).

/// The undefined elements of a tile: `None` when all are defined.
pub type Undef = Option<Vec<bool>>;

/// A source's flags (`None`: all defined) and its width per row.
pub type Flags<'a> = (Option<&'a [bool]>, usize);

/// `Some(flags)` when any flag is set, else `None`.
pub fn normalise(flags: Vec<bool>) -> Undef {
    flags.iter().any(|&u| u).then_some(flags)
}

/// The flags of an elementwise operation on a `[p, f]` destination: element `(i, j)` is undefined
/// iff element `(i, j)` of a full source (width `f`) or element `i` of a column (width 1) is.
pub fn elementwise(srcs: &[Flags<'_>], p: usize, f: usize) -> Undef {
    if srcs.iter().all(|(u, _)| u.is_none()) {
        return None;
    }
    let mut out = vec![false; p * f];
    for &(u, w) in srcs {
        let Some(u) = u else { continue };
        for (i, row) in out.chunks_exact_mut(f.max(1)).enumerate().take(p) {
            if w == f {
                for (o, &x) in row.iter_mut().zip(&u[i * f..(i + 1) * f]) {
                    *o |= x;
                }
            } else if u[i * w..(i + 1) * w].iter().any(|&x| x) {
                row.fill(true);
            }
        }
    }
    normalise(out)
}

/// The flags of a row operation with a `[p, out_f]` result: a row is undefined iff any element of
/// that row of any source (each of its own width) is.
pub fn rows(srcs: &[Flags<'_>], p: usize, out_f: usize) -> Undef {
    if srcs.iter().all(|(u, _)| u.is_none()) {
        return None;
    }
    let mut out = vec![false; p * out_f];
    for (i, row) in out.chunks_exact_mut(out_f.max(1)).enumerate().take(p) {
        let bad = srcs.iter().any(|&(u, w)| {
            u.is_some_and(|u| {
                u.get(i * w..(i + 1) * w)
                    .is_some_and(|r| r.iter().any(|&x| x))
            })
        });
        if bad {
            row.fill(true);
        }
    }
    normalise(out)
}

/// The flags of `out[m, n] = Σ_k a[k, m] · b[k, n]` for `a: [k, m]`, `b: [k, n]`: `out[m, n]` is
/// undefined iff some `a[_, m]` or some `b[_, n]` is.
pub fn matmul(a: Option<&[bool]>, b: Option<&[bool]>, k: usize, m: usize, n: usize) -> Undef {
    if a.is_none() && b.is_none() {
        return None;
    }
    let columns = |u: Option<&[bool]>, w: usize| -> Vec<bool> {
        let mut col = vec![false; w];
        if let Some(u) = u {
            for row in u.chunks_exact(w.max(1)).take(k) {
                for (c, &x) in col.iter_mut().zip(row) {
                    *c |= x;
                }
            }
        }
        col
    };
    let (am, bn) = (columns(a, m), columns(b, n));
    let mut out = Vec::with_capacity(m * n);
    for &um in &am {
        out.extend(bn.iter().map(|&un| um || un));
    }
    normalise(out)
}

/// The flags of the transpose `out[j][i] = x[i][j]` of `x: [p, f]`.
pub fn transpose(x: Option<&[bool]>, p: usize, f: usize) -> Undef {
    let x = x?;
    let mut out = vec![false; p * f];
    for (i, row) in x.chunks_exact(f.max(1)).enumerate().take(p) {
        for (j, &u) in row.iter().enumerate() {
            out[j * p + i] = u;
        }
    }
    normalise(out)
}

/// The element-by-element union of two tiles' flags (of the same shape).
pub fn union(a: Undef, b: Option<&[bool]>) -> Undef {
    match (a, b) {
        (a, None) => a,
        (None, Some(b)) => Some(b.to_vec()),
        (Some(mut a), Some(b)) => {
            for (x, &y) in a.iter_mut().zip(b) {
                *x |= y;
            }
            Some(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_poisons_its_row_and_a_full_source_its_element() {
        let full = [false, true, false, false];
        let col = [false, true];
        assert_eq!(
            elementwise(&[(Some(&full), 2)], 2, 2),
            Some(vec![false, true, false, false])
        );
        assert_eq!(
            elementwise(&[(None, 2), (Some(&col), 1)], 2, 2),
            Some(vec![false, false, true, true])
        );
        assert_eq!(elementwise(&[(None, 2), (None, 1)], 2, 2), None);
    }

    #[test]
    fn a_row_operation_poisons_the_rows_it_read_garbage_from() {
        let x = [false, false, false, true, false, false];
        assert_eq!(rows(&[(Some(&x), 3)], 2, 1), Some(vec![false, true]));
        assert_eq!(rows(&[(Some(&[false; 6]), 3)], 2, 1), None);
    }

    #[test]
    fn matmul_poisons_by_column_of_each_operand() {
        // a: [k=2, m=2] with a[1][0] undefined; b: [k=2, n=3] with b[0][2] undefined.
        let a = [false, false, true, false];
        let b = [false, false, true, false, false, false];
        assert_eq!(
            matmul(Some(&a), Some(&b), 2, 2, 3),
            Some(vec![true, true, true, false, false, true])
        );
        assert_eq!(matmul(None, None, 2, 2, 3), None);
    }

    #[test]
    fn a_transpose_moves_the_flags() {
        let x = [false, true, false, false, false, false];
        assert_eq!(
            transpose(Some(&x), 2, 3),
            Some(vec![false, false, true, false, false, false])
        );
    }
}

//! A `mask=` that bounds the free index of an operation whose result is a fixed-width summary of
//! each row: `nisa.max8` (the eight largest values), `nisa.nc_find_index8` (their positions) and
//! `nisa.nc_match_replace8` (the row with them replaced). NKI applies the mask to the row the
//! operation reads, as `nisa.max8(src=t[ix, iy], mask=(ix < 64) & (iy < 256))` takes the eight
//! largest of the first 256 columns; so nkc narrows the row operands (the data, and the replaced
//! row that `nc_match_replace8` writes) to the columns the mask keeps, and drops the free
//! bounds. The partition bounds stay the instruction's mask.
//!
//! Invariants: only bounds that are compile-time constants narrow a row (a bound that moves
//! with a loop would change the operands' shape per iteration); a range that does not start at
//! column 0 is refused for the operations that produce positions, whose numbering from the
//! narrowed row's start NKI does not document; `bn_aggr` (whose row is a list of triples) is
//! never narrowed.

use super::CInst;
use penguin::{AffineExpr, MaskBound, Op, TileDim};

/// Narrows `inst`'s row operands to the columns that the free bounds of `mask` keep, and returns
/// the bounds left for its mask (the partition ones); `Err` says why it cannot.
pub(super) fn narrow_row_mask(
    inst: &mut CInst,
    mask: &[MaskBound],
) -> Result<Vec<MaskBound>, &'static str> {
    let positions = match inst.op {
        Op::Max8 => false,
        Op::FindIndex8 | Op::MatchReplace8 { .. } => true,
        _ => return Err("its free elements are a fixed-width result of the whole row: mask only the partition index"),
    };
    let row = inst
        .srcs
        .first()
        .ok_or("it has no row operand")?
        .access
        .clone();
    if row.pattern.is_some() || row.size.len() != 2 {
        return Err(
            "its row is an access pattern: mask only the partition index, or slice the row",
        );
    }
    let width = row.size[1];
    let (mut lo, mut hi) = (0u64, width);
    for b in mask.iter().filter(|b| b.dim == TileDim::Free) {
        let v = b.bound.as_constant().ok_or(
            "a bound on its free index moves with a loop: bound the row with a constant, or slice it",
        )?;
        let v = v.clamp(0, width as i64) as u64;
        if b.lower {
            lo = lo.max(v);
        } else {
            hi = hi.min(v);
        }
    }
    if lo >= hi {
        return Err("the mask keeps no column of its row");
    }
    if positions && lo > 0 {
        return Err("it numbers positions in the row, and the mask drops its first columns: slice the row instead");
    }
    let replaced = matches!(inst.op, Op::MatchReplace8 { .. });
    let narrow = |o: &mut penguin::Operand| {
        let e = &mut o.access.start[1];
        *e = AffineExpr::from_terms(e.terms().iter().copied(), e.constant_term() + lo as i64);
        o.access.size[1] = hi - lo;
    };
    narrow(&mut inst.srcs[0]);
    if replaced {
        if inst.dst.access.pattern.is_some() || inst.dst.access.size != row.size {
            return Err("its replaced row is not a plain tile of the row's shape");
        }
        narrow(&mut inst.dst);
    }
    Ok(mask
        .iter()
        .filter(|b| b.dim != TileDim::Free)
        .cloned()
        .collect())
}

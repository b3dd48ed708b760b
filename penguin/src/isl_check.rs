//! The bridge to ISL (isl-rs), which the pipeliner's legality check will drive.
//!
//! For now it holds one primitive the legality check is built from: whether every pair of a
//! relation, given in ISL's text syntax, is ordered by the lexicographic `<` of its schedule points.
//! ISL errors (a malformed relation, an internal failure) come back as `Err`, never as a panic.

use isl_rs::{Context, UnionMap};

/// Whether every pair `a -> b` of `relation` has `a` lexicographically before `b`.
///
/// `relation` is in ISL syntax over anonymous tuples of one dimension count, for example
/// `{ [i, 0] -> [i + 1, 2] : 0 <= i < 8 }`.
pub fn is_lex_forward(relation: &str) -> Result<bool, String> {
    let ctx = Context::alloc();
    let rel = UnionMap::read_from_str(&ctx, relation).map_err(|e| format!("{e:?}"))?;
    let domain = rel
        .copy()
        .map_err(|e| format!("{e:?}"))?
        .domain()
        .map_err(|e| format!("{e:?}"))?;
    let range = rel
        .copy()
        .map_err(|e| format!("{e:?}"))?
        .range()
        .map_err(|e| format!("{e:?}"))?;
    let lex_lt = domain
        .lex_lt_union_set(range)
        .map_err(|e| format!("{e:?}"))?;
    rel.is_subset(&lex_lt).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_and_backward_relations() {
        assert_eq!(
            is_lex_forward("{ [i, 0] -> [i + 1, 2] : 0 <= i < 8 }"),
            Ok(true)
        );
        assert_eq!(
            is_lex_forward("{ [i, 1] -> [i, 0] : 0 <= i < 8 }"),
            Ok(false)
        );
    }

    #[test]
    fn malformed_text_is_an_error() {
        assert!(is_lex_forward("{ [i] -> ").is_err());
    }
}

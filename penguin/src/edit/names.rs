//! Fresh names: the one rule by which every pass names the tensors and loops it makes.
//!
//! A name derived from an existing one is `BASE.TAG` ([`derived`]): `t.u1` (tile `t` in unroll
//! copy 1), `i.rem` (the remainder loop of `i`), `k.n0` (loop `k` peeled for `n = 0`). Made
//! unique, it is the first of `NAME`, `NAME_`, `NAME__`, ... that no tensor (or no loop) of the
//! function has ([`fresh_tensor_name`], [`fresh_iv_name`]).
//!
//! Invariant: a derived name of an identifier is an identifier ([`crate::verify::is_identifier`]:
//! letters, digits, `_` and `.`), so the verifier and the text form accept it, however many passes
//! compose their tags (`_tensor_scalar.1.u1_`). A tag is letters, digits, `_` and `.` only
//! (peel's tag is the outer loop's name and the iteration, `j.1` and 0 give `j.10`): [`tag`]
//! spells a negative number with `m` (`-3` is `m3`). The hostile round's `_tensor_scalar.1'` (peel's `'` on
//! privatisation's `.1`) is what this rule leaves no room for.

use crate::ir::Function;

/// `base.tag`: the name of something made from `base` (module doc).
pub fn derived(base: &str, tag: &str) -> String {
    debug_assert!(
        tag.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
        "a name tag is letters, digits, `_` and `.`: {tag:?}"
    );
    format!("{base}.{tag}")
}

/// `prefix` followed by the number `k`, a negative one as `m` and its magnitude: a [`derived`]
/// tag (`i0`, `im3`).
pub fn tag(prefix: &str, k: i64) -> String {
    if k < 0 {
        format!("{prefix}m{}", k.unsigned_abs())
    } else {
        format!("{prefix}{k}")
    }
}

/// A tensor name no tensor of `func` has yet: `base`, else `base` followed by as few `_` as make
/// it unique.
pub fn fresh_tensor_name(func: &Function, base: &str) -> String {
    unique(base, |n| func.tensors.values().any(|t| t.name == n))
}

/// An induction-variable name no loop of `func` has yet, as [`fresh_tensor_name`].
pub fn fresh_iv_name(func: &Function, base: &str) -> String {
    unique(base, |n| func.axes.values().any(|a| a.iv_name == n))
}

/// `base`, then `base_`, `base__`, ... up to the first that `taken` refuses.
fn unique(base: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = base.to_string();
    while taken(&name) {
        name.push('_');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_function;
    use crate::verify::is_identifier;

    const F: &str = "kernel k(a) -> (c) {
  tensor a: hbm f32[128, 4] input
  tensor c: hbm f32[128, 4] output
  tensor t: sbuf f32[128, 4] local
  tensor t.1: sbuf f32[128, 4] local
  tensor t.1_: sbuf f32[128, 4] local
  loop i in 0..2 affine {
    loop i.n0 in 0..2 affine {
      stmt {
        t[0 +: 128, 0 +: 4] = load.dma a[0 +: 128, 0 +: 4]
      }
    }
  }
  stmt {
    c[0 +: 128, 0 +: 4] = store.dma t[0 +: 128, 0 +: 4]
  }
}
";

    #[test]
    fn a_fresh_name_is_unique_and_an_identifier() {
        let f = parse_function(F).expect("the fixture parses");
        let n = fresh_tensor_name(&f, "t.1");
        assert_eq!(n, "t.1__");
        assert!(is_identifier(&n));
        assert_eq!(fresh_tensor_name(&f, "u"), "u");
        assert_eq!(fresh_iv_name(&f, &derived("i", &tag("n", 0))), "i.n0_");
        assert_eq!(fresh_iv_name(&f, &derived("i", &tag("n", -3))), "i.nm3");
    }

    #[test]
    fn tags_compose_into_identifiers() {
        let f = parse_function(F).expect("the fixture parses");
        // Privatisation's `.1`, then unroll's copy tag, then peel's: still an identifier.
        let mut name = "_tensor_scalar".to_string();
        for t in ["1".to_string(), tag("u", 1), tag("i", -2)] {
            name = fresh_tensor_name(&f, &derived(&name, &t));
            assert!(is_identifier(&name), "{name}");
        }
        assert_eq!(name, "_tensor_scalar.1.u1.im2");
    }
}

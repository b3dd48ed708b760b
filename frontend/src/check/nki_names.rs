//! NKI's keyword names for the parameters that nkc's operation tables spell otherwise.
//!
//! One nkc operation serves several NKI spellings (`nl.copy(src)` and `nisa.tensor_copy(src)` are
//! nkc's `copy(x)`; `nisa.reciprocal(data)` is the `reciprocal(x)` activation; `nl.transpose(x)`
//! is `nc_transpose(data)`), so the parameter tables of `ops` keep one name per slot and this
//! table says which other names NKI's API documentation gives the same slot. [`alias`] is asked
//! only for a keyword that names no parameter of the operation, so a table entry never changes
//! the meaning of a keyword that is already accepted.
//!
//! Invariant: every name [`alias`] returns is a parameter of the operation it is asked for (it is
//! looked up in the operation's parameter list by the caller, which reports the keyword as
//! unknown otherwise).

/// What to do with a keyword that names no parameter of the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Alias {
    /// It is NKI's name for nkc's parameter of this name.
    Param(&'static str),
    /// It is accepted and has no effect on the computation (`name=`, a debugging label).
    Ignored,
}

/// The operation's own name, without its module (`nisa.reciprocal` and `ni.reciprocal` are both
/// `reciprocal`).
fn op_base(op: &str) -> &str {
    op.rsplit('.').next().unwrap_or(op)
}

/// NKI's keyword `name` for operation `op` (`nl.copy`, `nisa.reciprocal`), when nkc spells that
/// parameter otherwise: the nkc parameter it fills, or that it is ignored.
pub(super) fn alias(op: &str, name: &str) -> Option<Alias> {
    let base = op_base(op);
    let param = match (base, name) {
        // `nl.copy(src)`, `nisa.tensor_copy(src)`: nkc's `copy(x)`.
        ("copy" | "tensor_copy", "src" | "data") => "x",
        // `nl.broadcast_to(src, shape)` (older NKI) and `(x, shape)` (newer).
        ("broadcast_to", "src") => "x",
        // `nl.transpose(x)` is nkc's `nc_transpose(data)`.
        ("transpose", "x" | "src") => "data",
        ("nc_transpose", "x" | "src") => "data",
        // `nisa.reciprocal(data)`, `nisa.exp`-style unary instructions: nkc's `(x)`.
        (_, "data") if is_unary_activation(base) => "x",
        // `nl.load_transpose2d(src)`; `nl.load(src)` written `tensor=`.
        ("load" | "load_transpose2d", "tensor") => "src",
        // `nl.store(dst, value)`: NKI's older examples write `data=`.
        ("store", "data") => "value",
        // A label for profiles and IR dumps.
        (_, "name") => return Some(Alias::Ignored),
        // When an allocation's fill is written: the values are the same either way.
        (
            "full" | "zeros" | "ones" | "zeros_like" | "ones_like" | "full_like",
            "lazy_initialization",
        ) => return Some(Alias::Ignored),
        _ => return None,
    };
    Some(Alias::Param(param))
}

/// The unary operations that nkc's table gives one parameter `x` and NKI's `nisa` module takes
/// as `data` (`nisa.reciprocal(data)`), or `nl` as `x`.
fn is_unary_activation(base: &str) -> bool {
    base == "reciprocal" || penguin::ActFunc::ALL.iter().any(|f| f.name() == base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nki_names_of_the_public_kernels() {
        assert_eq!(alias("nisa.reciprocal", "data"), Some(Alias::Param("x")));
        assert_eq!(alias("ni.reciprocal", "data"), Some(Alias::Param("x")));
        assert_eq!(alias("nisa.tensor_copy", "src"), Some(Alias::Param("x")));
        assert_eq!(alias("nl.copy", "src"), Some(Alias::Param("x")));
        assert_eq!(alias("nl.transpose", "x"), Some(Alias::Param("data")));
        assert_eq!(alias("nl.broadcast_to", "src"), Some(Alias::Param("x")));
        assert_eq!(alias("nl.ndarray", "name"), Some(Alias::Ignored));
    }

    #[test]
    fn other_names_are_not_aliases() {
        assert_eq!(alias("nl.add", "data"), None);
        assert_eq!(alias("nisa.tensor_copy", "dst2"), None);
        assert_eq!(alias("nl.matmul", "transpose_y"), None);
    }
}

//! Property test: `frontend::parse` never panics, on soups of tokens and on mutated examples, and
//! every diagnostic it returns points inside the source.

use frontend::ast::*;
use proptest::prelude::*;

/// Pieces of source text, chosen to hit the layout rules and the recovery paths.
const PIECES: &[&str] = &[
    "def",
    "for",
    "in",
    "return",
    "pass",
    "if",
    "elif",
    "else",
    "assert",
    "import",
    "and",
    "not",
    "@",
    "...",
    "<=",
    "\"\"\"",
    "True",
    "None",
    "x",
    "nl",
    "k",
    "a_1",
    "0",
    "128",
    "1.5",
    ".5",
    "1e-3",
    "99999999999999999999",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "=",
    "+=",
    "&=",
    "<<=",
    "~",
    "-=",
    ":",
    ",",
    ".",
    "->",
    "(",
    ")",
    "[",
    "]",
    "\n",
    "\n",
    "\n    ",
    "\n        ",
    "\n  ",
    "\t",
    " ",
    "  ",
    "#c",
    "\\\n",
    "$",
    "'s'",
    "\"",
    "\r\n",
    "==",
    ";",
    "é",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..80).prop_map(|v| v.join(" "))
}

/// An example with a span of it replaced by a piece, or deleted.
fn mutated_example() -> impl Strategy<Value = String> {
    let base = include_str!("../../examples/matmul.nk");
    (0..base.len(), 0usize..12, prop::sample::select(PIECES)).prop_map(move |(at, len, piece)| {
        let mut at = at;
        while !base.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + len).min(base.len());
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}{}{}", &base[..at], piece, &base[end..])
    })
}

fn expr_has_error(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Error => true,
        ExprKind::Attribute { value, .. } => expr_has_error(value),
        ExprKind::Call { func, args, kwargs } => {
            expr_has_error(func)
                || args.iter().any(expr_has_error)
                || kwargs.iter().any(|k| expr_has_error(&k.value))
        }
        ExprKind::Subscript { value, indices } => {
            expr_has_error(value) || indices.iter().any(index_has_error)
        }
        ExprKind::Tuple(items) => items.iter().any(expr_has_error),
        ExprKind::Binary { lhs, rhs, .. } => expr_has_error(lhs) || expr_has_error(rhs),
        ExprKind::Unary { operand, .. } | ExprKind::Not(operand) => expr_has_error(operand),
        ExprKind::Compare { lhs, rhs, .. } | ExprKind::BoolOp { lhs, rhs, .. } => {
            expr_has_error(lhs) || expr_has_error(rhs)
        }
        _ => false,
    }
}

fn index_has_error(i: &Index) -> bool {
    match i {
        Index::Expr(e) => expr_has_error(e),
        Index::Slice { lo, hi, .. } => lo.iter().chain(hi.iter()).any(expr_has_error),
    }
}

fn stmt_has_error(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Error | StmtKind::Recovered { .. } => true,
        StmtKind::Assign { target, value } | StmtKind::AugAssign { target, value, .. } => {
            expr_has_error(value)
                || matches!(target, Target::Subscript { indices, .. } if indices.iter().any(index_has_error))
        }
        StmtKind::Expr(e) => expr_has_error(e),
        StmtKind::For { iter, body, .. } => expr_has_error(iter) || body.iter().any(stmt_has_error),
        StmtKind::Return(values) => values.iter().any(expr_has_error),
        StmtKind::Assert { test, msg } => {
            expr_has_error(test) || msg.as_ref().is_some_and(expr_has_error)
        }
        StmtKind::If { test, body, orelse } => {
            expr_has_error(test) || body.iter().chain(orelse).any(stmt_has_error)
        }
        StmtKind::MultiAssign { value, .. } => expr_has_error(value),
        StmtKind::While { test, body } => expr_has_error(test) || body.iter().any(stmt_has_error),
        StmtKind::Def(k) => k.body.iter().any(stmt_has_error),
        StmtKind::Class(c) => c.body.iter().any(stmt_has_error),
        StmtKind::Raise(e) => e.as_ref().is_some_and(expr_has_error),
        StmtKind::Declare(_) => false,
        StmtKind::Pass
        | StmtKind::Opaque(_)
        | StmtKind::Import(_)
        | StmtKind::Break
        | StmtKind::Continue => false,
    }
}

fn check(src: &str) {
    let (module, errors) = frontend::parse(src);
    // The AST's invariant: an `Error` node means that a diagnostic was reported.
    let has_error_node = module.items.iter().any(stmt_has_error)
        || module.kernels.iter().any(|k| {
            k.body.iter().any(stmt_has_error)
                || k.params
                    .iter()
                    .any(|p| p.ty.as_ref().is_some_and(expr_has_error))
        });
    assert!(
        !has_error_node || !errors.is_empty(),
        "error node without a diagnostic: {src:?}"
    );
    for e in &errors {
        assert!(
            e.span.start <= e.span.end && e.span.end <= src.len(),
            "{e:?}"
        );
        assert!(e.code.starts_with("E00"), "{e:?}");
    }
    // Rendering never fails either.
    let _ = frontend::diagnostic::render_plain("soup.nk", src, &errors);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(src in soup()) {
        check(&src);
    }

    #[test]
    fn mutated_examples_never_panic(src in mutated_example()) {
        check(&src);
    }

    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,200}") {
        check(&src);
    }
}

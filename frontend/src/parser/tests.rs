//! Unit tests of the parser: the examples, the shape and spans of the tree, and recovery.

use super::parse;
use crate::ast::*;

/// Reads a file of the workspace, relative to the workspace root.
fn workspace_file(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

#[test]
fn every_example_parses_without_errors() {
    for (file, kernel) in [
        ("examples/tensor_add.nk", "tensor_add"),
        ("examples/matmul.nk", "matmul"),
        ("examples/softmax.nk", "softmax"),
        ("examples/exp_stages.nk", "exp_stages"),
    ] {
        let source = workspace_file(file);
        let (module, errors) = parse(&source);
        assert!(errors.is_empty(), "{file}: {errors:#?}");
        assert_eq!(module.kernels.len(), 1, "{file}");
        assert_eq!(module.kernels[0].name.name, kernel);
        assert!(module.items.is_empty(), "{file}");
    }
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_crash() {
    // 64 nested brackets are accepted.
    let ok = format!("x = {}1{}\n", "(".repeat(64), ")".repeat(64));
    let (module, errors) = parse(&ok);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(module.items.len(), 1);
    let ok = format!("x = a{}\n", "[1".repeat(64) + &"]".repeat(64));
    let (_, errors) = parse(&ok);
    assert!(errors.is_empty(), "{errors:#?}");
    // More is one diagnostic, and the lines around it still parse.
    for n in [65, 1000, 100_000] {
        let src = format!("y = 1\nx = {}1{}\nz = 2\n", "(".repeat(n), ")".repeat(n));
        let (module, errors) = parse(&src);
        assert_eq!(errors.len(), 1, "{n}: {errors:#?}");
        assert_eq!(errors[0].code, crate::codes::TOO_DEEP);
        assert_eq!(module.items.len(), 3);
        assert_eq!(module.items[1].kind, StmtKind::Error);
    }
    // Long operator chains and unary chains.
    for src in [
        format!("x = {}1\n", "-".repeat(100_000)),
        format!("x = 1{}\n", " + 1".repeat(100_000)),
        format!("x = {}\n", "a.".repeat(100_000) + "b"),
    ] {
        let (_, errors) = parse(&src);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert_eq!(errors[0].code, crate::codes::TOO_DEEP);
    }
    // Blocks nested too deeply.
    let mut src = String::from("def k(a: t):\n");
    for depth in 1..100 {
        src += &format!("{}for i in r:\n", "    ".repeat(depth));
    }
    src += &format!("{}pass\n", "    ".repeat(100));
    let (_, errors) = parse(&src);
    assert!(!errors.is_empty());
    assert!(errors.iter().any(|e| e.code == crate::codes::TOO_DEEP));
    // The deepest accepted blocks, each header broken (so recovery runs at every level), around
    // the deepest accepted brackets: still within a test thread's stack.
    let mut src = String::from("def k(a: t):\n");
    for depth in 1..64 {
        src += &format!("{}for i in :\n", "    ".repeat(depth));
    }
    src += &format!(
        "{}x = {}1{}\n",
        "    ".repeat(64),
        "(".repeat(64),
        ")".repeat(64)
    );
    let (module, errors) = parse(&src);
    assert_eq!(errors.len(), 63);
    assert_eq!(module.kernels.len(), 1);
}

/// Parses `src`, which must have no syntax error.
fn parse_ok(src: &str) -> Module {
    let (module, errors) = parse(src);
    assert!(errors.is_empty(), "{src:?}: {errors:#?}");
    module
}

/// The expression of the single module-level statement `x = <expr>`.
fn rhs(src: &str) -> Expr {
    let module = parse_ok(&format!("x = {src}\n"));
    match module.items.into_iter().next().map(|s| s.kind) {
        Some(StmtKind::Assign { value, .. }) => value,
        other => panic!("not an assignment: {other:?}"),
    }
}

/// A compact rendering of an expression, fully parenthesised, to check the tree's shape.
fn show(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ExprKind::None => "None".to_string(),
        ExprKind::Str(t) => format!("{t:?}"),
        ExprKind::Ellipsis => "...".to_string(),
        ExprKind::Compare { op, lhs, rhs } => format!("({} {op:?} {})", show(lhs), show(rhs)),
        ExprKind::BoolOp { and, lhs, rhs } => {
            let w = if *and { "and" } else { "or" };
            format!("({} {w} {})", show(lhs), show(rhs))
        }
        ExprKind::Not(x) => format!("(not {})", show(x)),
        ExprKind::Attribute { value, attr } => format!("{}.{}", show(value), attr.name),
        ExprKind::Call { func, args, kwargs } => {
            let mut parts: Vec<String> = args.iter().map(show).collect();
            parts.extend(
                kwargs
                    .iter()
                    .map(|k| format!("{}={}", k.name.name, show(&k.value))),
            );
            format!("{}({})", show(func), parts.join(", "))
        }
        ExprKind::Subscript { value, indices } => {
            let parts: Vec<String> = indices
                .iter()
                .map(|i| match i {
                    Index::Expr(e) => show(e),
                    Index::Slice { lo, hi, .. } => format!(
                        "{}:{}",
                        lo.as_ref().map(show).unwrap_or_default(),
                        hi.as_ref().map(show).unwrap_or_default()
                    ),
                })
                .collect();
            format!("{}[{}]", show(value), parts.join(", "))
        }
        ExprKind::List(items) => {
            let parts: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", parts.join(", "))
        }
        ExprKind::IfExp { test, body, orelse } => {
            format!("({} if {} else {})", show(body), show(test), show(orelse))
        }
        ExprKind::Dict(_)
        | ExprKind::Starred(_)
        | ExprKind::FStr(_)
        | ExprKind::ListComp { .. }
        | ExprKind::Lambda { .. } => format!("{:?}", e.kind),
        ExprKind::Tuple(items) => {
            format!(
                "<{}>",
                items.iter().map(show).collect::<Vec<_>>().join(", ")
            )
        }
        ExprKind::Binary { op, lhs, rhs } => format!("({} {op} {})", show(lhs), show(rhs)),
        ExprKind::Unary { op, operand } => {
            let sym = op.symbol();
            format!("({sym}{})", show(operand))
        }
        ExprKind::Error => "<error>".to_string(),
    }
}

#[test]
fn precedence_and_associativity() {
    for (src, tree) in [
        ("a + b * c", "(a + (b * c))"),
        ("a * b + c", "((a * b) + c)"),
        ("a - b - c", "((a - b) - c)"),
        ("a // b % c * d", "(((a // b) % c) * d)"),
        ("a / b / c", "((a / b) / c)"),
        ("-a * b", "((-a) * b)"),
        ("- -a", "(-(-a))"),
        ("-a.b(c)[d]", "(-a.b(c)[d])"),
        ("a * -b + +c", "((a * (-b)) + (+c))"),
        ("(a + b) * c", "((a + b) * c)"),
        ("-1.0", "(-1.0)"),
        ("x.shape[0] // 128", "(x.shape[0] // 128)"),
        ("True + None", "(True + None)"),
    ] {
        assert_eq!(show(&rhs(src)), tree, "{src}");
    }
}

#[test]
fn slices_with_omitted_bounds() {
    for (src, tree) in [
        ("a[:]", "a[:]"),
        ("a[1:]", "a[1:]"),
        ("a[:n]", "a[:n]"),
        (
            "a[i * 128:(i + 1) * 128, :]",
            "a[(i * 128):((i + 1) * 128), :]",
        ),
        ("a[0]", "a[0]"),
        ("a[i, j,]", "a[i, j]"),
        ("a[:, 0:1]", "a[:, 0:1]"),
    ] {
        assert_eq!(show(&rhs(src)), tree, "{src}");
    }
    match rhs("a[1:, :2]").kind {
        ExprKind::Subscript { indices, .. } => {
            assert!(matches!(
                &indices[0],
                Index::Slice {
                    lo: Some(_),
                    hi: None,
                    ..
                }
            ));
            assert!(matches!(
                &indices[1],
                Index::Slice {
                    lo: None,
                    hi: Some(_),
                    ..
                }
            ));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn calls_with_keyword_arguments() {
    for (src, tree) in [
        ("f()", "f()"),
        ("f(a, b, k=v)", "f(a, b, k=v)"),
        ("f(a, k=1, m=g(2),)", "f(a, k=1, m=g(2))"),
        (
            "nl.ndarray((2, 3), dtype=nl.float32)",
            "nl.ndarray(<2, 3>, dtype=nl.float32)",
        ),
        ("f(a)(b)[c].d", "f(a)(b)[c].d"),
    ] {
        assert_eq!(show(&rhs(src)), tree, "{src}");
    }
}

#[test]
fn tuples_and_parentheses() {
    for (src, tree) in [
        ("(a)", "a"),
        ("(a,)", "<a>"),
        ("(a, b)", "<a, b>"),
        ("(a, b,)", "<a, b>"),
        ("()", "<>"),
        ("((a))", "a"),
    ] {
        assert_eq!(show(&rhs(src)), tree, "{src}");
    }
}

#[test]
fn return_forms() {
    let module = parse_ok(
        "def k(a: t):\n    return\ndef k(a: t):\n    return a\ndef k(a: t):\n    return a, b\n\
         def k(a: t):\n    return (a, b)\ndef k(a: t):\n    return a, b,\n",
    );
    let counts: Vec<usize> = module
        .kernels
        .iter()
        .map(|k| match &k.body[0].kind {
            StmtKind::Return(values) => values.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(counts, vec![0, 1, 2, 2, 2]);
}

#[test]
fn statements() {
    let src = "N = 128\ndef k(a: nl.hbm[nl.float32, N, 512], b):\n    acc = nl.zeros((128, 512))\n    for i in nl.affine_range(4):\n        acc += nl.matmul(a, b)\n        t[0:1, :] = acc\n        acc -= 1\n        acc *= 2\n        acc /= 3\n        pass\n    nl.store(c, value=acc)\n    return acc\n";
    let module = parse_ok(src);
    assert_eq!(module.items.len(), 1);
    let k = &module.kernels[0];
    assert_eq!(k.params.len(), 2);
    assert!(k.params[0].ty.is_some());
    assert!(k.params[1].ty.is_none());
    assert_eq!(k.body.len(), 4);
    let StmtKind::For {
        target: Target::Name(var),
        body,
        ..
    } = &k.body[1].kind
    else {
        panic!("{:?}", k.body[1]);
    };
    assert_eq!(var.name, "i");
    let ops: Vec<Option<BinOp>> = body
        .iter()
        .map(|s| match &s.kind {
            StmtKind::AugAssign { op, .. } => Some(*op),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            Some(BinOp::Add),
            None,
            Some(BinOp::Sub),
            Some(BinOp::Mul),
            Some(BinOp::Div),
            None
        ]
    );
    match &body[1].kind {
        StmtKind::Assign {
            target:
                Target::Subscript {
                    base,
                    indices,
                    span,
                },
            ..
        } => {
            assert_eq!(base.name, "t");
            assert_eq!(indices.len(), 2);
            assert_eq!(&src[span.clone()], "t[0:1, :]");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(body[5].kind, StmtKind::Pass);
    assert!(matches!(k.body[2].kind, StmtKind::Expr(_)));
}

#[test]
fn bitwise_augmented_assignments_and_invert() {
    let src = "def k(a):\n    x = 6\n    x &= 3\n    x |= 8\n    x ^= 1\n    x <<= 2\n    x >>= 1\n    x **= 2\n    x //= 3\n    x %= 5\n    y = ~x\n    return a\n";
    let module = parse_ok(src);
    let body = &module.kernels[0].body;
    let ops: Vec<BinOp> = body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::AugAssign { op, .. } => Some(*op),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            BinOp::BitAnd,
            BinOp::BitOr,
            BinOp::BitXor,
            BinOp::Shl,
            BinOp::Shr,
            BinOp::Pow,
            BinOp::FloorDiv,
            BinOp::Mod
        ]
    );
    match &body[9].kind {
        StmtKind::Assign { value, .. } => assert!(
            matches!(
                value.kind,
                ExprKind::Unary {
                    op: UnaryOp::Invert,
                    ..
                }
            ),
            "{value:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_class_keeps_its_decorators_bases_fields_and_methods() {
    let src = "@dataclass(frozen=True)\nclass Cfg:\n    tile: int = 128\n    dtype: str\n\nclass Plain(Cfg):\n    x = 1\n    def get(self):\n        raise ValueError(f\"no {self.x}\")\n\nclass Meta(metaclass=M):\n    pass\n\ndef k(a):\n    return a\n";
    let module = parse_ok(src);
    assert_eq!(module.kernels.len(), 1);
    let StmtKind::Class(cfg) = &module.items[0].kind else {
        panic!("{:?}", module.items[0].kind);
    };
    assert_eq!(cfg.name.name, "Cfg");
    assert_eq!(cfg.decorators.len(), 1);
    assert!(matches!(&cfg.body[1].kind, StmtKind::Declare(id) if id.name == "dtype"));
    let StmtKind::Class(plain) = &module.items[1].kind else {
        panic!("{:?}", module.items[1].kind);
    };
    assert_eq!(plain.bases.len(), 1);
    let StmtKind::Def(get) = &plain.body[1].kind else {
        panic!("{:?}", plain.body[1].kind);
    };
    assert!(matches!(&get.body[0].kind, StmtKind::Raise(Some(_))));
    // A header nkc does not read stays a statement it does not run.
    assert_eq!(module.items[2].kind, StmtKind::Opaque("class".into()));
    assert_eq!(&src[module.items[0].span.clone()][..5], "class");
}

#[test]
fn an_attribute_is_an_assignment_target() {
    let src = "def k(a):\n    self.n = 1\n    self.n += 2\n    return a\n";
    let module = parse_ok(src);
    let body = &module.kernels[0].body;
    assert!(
        matches!(&body[0].kind, StmtKind::Assign { target: Target::Attribute { attr, .. }, .. } if attr.name == "n")
    );
    assert!(matches!(
        &body[1].kind,
        StmtKind::AugAssign {
            target: Target::Attribute { .. },
            ..
        }
    ));
}

#[test]
fn spans_of_chosen_nodes() {
    let src = workspace_file("examples/tensor_add.nk");
    let module = parse_ok(&src);
    let text = |span: &Span| src[span.clone()].to_string();
    let k = &module.kernels[0];
    assert!(text(&k.span).starts_with("def tensor_add("));
    assert!(text(&k.span).ends_with("return c"));
    assert_eq!(text(&k.name.span), "tensor_add");
    assert_eq!(text(&k.params[1].span), "b: nl.hbm[nl.float32, 2048, 512]");
    assert_eq!(
        text(&k.params[1].ty.as_ref().expect("annotated").span),
        "nl.hbm[nl.float32, 2048, 512]"
    );
    let for_stmt = &k.body[1];
    assert!(text(&for_stmt.span).starts_with("for i in nl.affine_range(16, num_stages=3):"));
    assert!(text(&for_stmt.span).ends_with("value=tc)"));
    let StmtKind::For { iter, body, .. } = &for_stmt.kind else {
        panic!()
    };
    assert_eq!(text(&iter.span), "nl.affine_range(16, num_stages=3)");
    let ExprKind::Call { kwargs, .. } = &iter.kind else {
        panic!()
    };
    assert_eq!(text(&kwargs[0].span), "num_stages=3");
    assert_eq!(
        text(&body[0].span),
        "ta = nl.load(a[i * 128:(i + 1) * 128, :])"
    );
    let StmtKind::Assign { target, value } = &body[0].kind else {
        panic!()
    };
    assert_eq!(text(&target.span()), "ta");
    let ExprKind::Call { args, .. } = &value.kind else {
        panic!()
    };
    assert_eq!(text(&args[0].span), "a[i * 128:(i + 1) * 128, :]");
    let ExprKind::Subscript { indices, .. } = &args[0].kind else {
        panic!()
    };
    assert_eq!(text(&indices[0].span()), "i * 128:(i + 1) * 128");
    assert_eq!(text(&indices[1].span()), ":");
    let Index::Slice { hi: Some(hi), .. } = &indices[0] else {
        panic!()
    };
    assert_eq!(text(&hi.span), "(i + 1) * 128");
    let ExprKind::Binary { lhs, .. } = &hi.kind else {
        panic!()
    };
    assert_eq!(text(&lhs.span), "i + 1");
    assert_eq!(text(&k.body[2].span), "return c");
    // A statement continued over several lines spans them all.
    let src = "x = f(a,\n      b)  # done\n";
    let module = parse_ok(src);
    assert_eq!(&src[module.items[0].span.clone()], "x = f(a,\n      b)");
    // Unary operators span their operand.
    assert_eq!(rhs("-a.b").span, 4..8);
}

/// The 1-based line of byte `pos` in `src`.
fn line_of(src: &str, pos: usize) -> usize {
    src[..pos.min(src.len())].matches('\n').count() + 1
}

/// The (code, line) of every diagnostic of `src`, in order.
fn diagnosed(src: &str) -> Vec<(String, usize)> {
    let (_, errors) = parse(src);
    errors
        .iter()
        .map(|e| (e.code.to_string(), line_of(src, e.span.start)))
        .collect()
}

#[test]
fn corpus_files_report_what_their_headers_expect() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/ui exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("syntax_") && n.ends_with(".nk"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for path in files {
        let src = std::fs::read_to_string(&path).expect("readable corpus file");
        let expected: Vec<(String, usize)> = src
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .map(|l| {
                let (code, line) = l.split_once(" @ ").expect("`# expect: CODE @ LINE`");
                (
                    code.to_string(),
                    line.trim().parse().expect("a line number"),
                )
            })
            .collect();
        assert!(!expected.is_empty(), "{path:?} states no expectation");
        assert_eq!(diagnosed(&src), expected, "{path:?}");
        // Whatever broke, the kernels are still there.
        let (module, _) = parse(&src);
        assert!(!module.kernels.is_empty(), "{path:?}");
    }
}

#[test]
fn recovery_reports_each_broken_line_and_keeps_the_good_ones() {
    let src = "\
def k(a: nl.hbm[nl.float32, 128, 512]):
    x = nl.load(a[0:128, :])
    y = nl.exp(x +)
    z = nl.add(x, x)
    w = = 3
    nl.store(c, value=z)
    return c
def k2(a: nl.hbm[nl.float32, 128, 512]):
    q = (1, 2
    return q
";
    assert_eq!(
        diagnosed(src),
        vec![
            ("E0013".to_string(), 3),
            ("E0013".to_string(), 5),
            ("E0005".to_string(), 9)
        ]
    );
    let (module, _) = parse(src);
    assert_eq!(module.kernels.len(), 2);
    let kinds: Vec<&StmtKind> = module.kernels[0].body.iter().map(|s| &s.kind).collect();
    assert_eq!(kinds.len(), 6);
    assert!(matches!(kinds[0], StmtKind::Assign { .. }));
    // The broken call became an error expression inside an otherwise good assignment.
    match kinds[1] {
        StmtKind::Assign { value, .. } => assert_eq!(value.kind, ExprKind::Error),
        other => panic!("{other:?}"),
    }
    assert!(matches!(kinds[2], StmtKind::Assign { .. }));
    // `w = = 3` is broken, but visibly binds `w`.
    assert!(
        matches!(kinds[3], StmtKind::Recovered { binds } if binds.len() == 1 && binds[0].name == "w"),
        "{:?}",
        kinds[3]
    );
    assert!(matches!(kinds[4], StmtKind::Expr(_)));
    assert!(matches!(kinds[5], StmtKind::Return(_)));
    // The unclosed tuple was closed at the end of its line.
    assert!(matches!(
        module.kernels[1].body[0].kind,
        StmtKind::Assign { .. }
    ));
    assert!(matches!(
        module.kernels[1].body[1].kind,
        StmtKind::Return(_)
    ));
}

#[test]
fn broken_headers_recover() {
    // A `for` header with a broken iterator: the loop is one error, its body is skipped, and the
    // statements after it are parsed.
    let src = "def k(a: t):\n    for i in :\n        x = 1\n    y = 2\n    return y\n";
    assert_eq!(diagnosed(src), vec![("E0013".to_string(), 2)]);
    let (module, _) = parse(src);
    let body = &module.kernels[0].body;
    assert_eq!(body.len(), 3);
    assert_eq!(body[0].kind, StmtKind::Error);
    // A broken `def` header does not swallow the next kernel.
    let src = "def k(a: t, :\n    return a\ndef k2(b: t):\n    return b\n";
    let found = diagnosed(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, 1);
    let (module, _) = parse(src);
    assert_eq!(
        module.kernels.last().map(|k| k.name.name.as_str()),
        Some("k2")
    );
    // Unclosed brackets in headers: one error each, and the kernel is whole.
    let src = "def k(a: nl.hbm[nl.float32, 128, 512:\n    for i in range(4:\n        x = 1\n    return a\n";
    assert_eq!(
        diagnosed(src),
        vec![("E0005".to_string(), 1), ("E0005".to_string(), 2)]
    );
    let (module, _) = parse(src);
    assert_eq!(module.kernels[0].body.len(), 2);
    assert!(matches!(
        module.kernels[0].body[0].kind,
        StmtKind::For { .. }
    ));
    // A header without a block.
    let src = "def k(a: t):\n    for i in r:\n    return a\n";
    assert_eq!(diagnosed(src), vec![("E0012".to_string(), 3)]);
}

#[test]
fn messages_are_worded_for_humans() {
    let message = |src: &str| {
        let (_, errors) = parse(src);
        assert_eq!(errors.len(), 1, "{src:?}: {errors:#?}");
        errors[0].message.clone()
    };
    assert_eq!(
        message("def k(a: t):\n    for i in r\n        pass\n"),
        "expected `:` after the `for` header"
    );
    assert_eq!(
        message("x = f(a, )\ny = (a + )\n"),
        "expected an expression, found `)`"
    );
    assert_eq!(
        message("x = \n"),
        "expected an expression, found end of line"
    );
    assert_eq!(
        message("x = f(k=1, 2)\n"),
        "positional argument follows keyword argument"
    );
    assert_eq!(message("f(x) = 1\n"), "cannot assign to this expression");
    assert_eq!(message("x = a[0\n"), "unclosed `[`");
    let (_, errors) = parse("x = a[0\n");
    assert_eq!(errors[0].secondary[0].0, 5..6);
    assert_eq!(message(")\n"), "expected a statement, found `)`");
}

#[test]
fn empty_and_trivial_inputs() {
    for src in ["", "\n", "# nothing\n", "   \n\n", "pass", "x = 1"] {
        let (module, errors) = parse(src);
        assert!(errors.is_empty(), "{src:?}: {errors:#?}");
        assert!(module.kernels.is_empty());
    }
}

#[test]
fn python_syntax_outside_the_language_is_named() {
    let first = |src: &str| {
        let (_, errors) = parse(src);
        assert_eq!(errors.len(), 1, "{src:?}: {errors:#?}");
        (errors[0].code, errors[0].message.clone())
    };
    // `@` parses (a test driver beside a kernel uses it); evaluating it in a kernel is E0016.
    assert!(parse("x = a @ b\n").1.is_empty());
    assert_eq!(first("x = 1; y = 2\n").0, "E0016");
    // Python that the compile-time evaluator runs parses: slice steps, `**`, `while`.
    for src in [
        "x = a[1:2:3]\n",
        "x = a ** 2\n",
        "def k(a: t):\n    while a:\n        x = 1\n    return a\n",
    ] {
        let (_, errors) = parse(src);
        assert!(errors.is_empty(), "{src:?}: {errors:#?}");
    }
    // A `with` block is kept whole (and reported if a kernel runs it), and what follows parses.
    let src = "def k(a: t):\n    with a:\n        x = 1\n    return a\n";
    let (module, errors) = parse(src);
    assert!(errors.is_empty());
    assert_eq!(module.kernels[0].body.len(), 2);
    assert_eq!(
        module.kernels[0].body[0].kind,
        StmtKind::Opaque("with".into())
    );
}

#[test]
fn nki_surface_parses() {
    let src = "import neuronxcc.nki as nki\nfrom neuronxcc.nki import language as nl\n\n@nki.jit\n@nki.jit(mode='x')\ndef k(a, b, eps=1e-5, flag=True):\n    \"\"\"Doc.\"\"\"\n    K, M = a.shape\n    assert K == M and not flag, \"square\"\n    if K <= 128:\n        pass\n    elif K > 256 or M != 3:\n        x = a[...]\n    else:\n        pass\n    return a\n";
    let (module, errors) = parse(src);
    assert!(errors.is_empty(), "{errors:#?}");
    let k = &module.kernels[0];
    assert_eq!(k.params.len(), 4);
    assert!(k.params[2].default.is_some() && k.params[0].ty.is_none());
    assert!(matches!(&k.body[0].kind, StmtKind::Pass));
    assert!(
        matches!(&k.body[1].kind, StmtKind::Assign { target: Target::Tuple { names, .. }, .. } if names.len() == 2)
    );
    let StmtKind::Assert { test, msg } = &k.body[2].kind else {
        panic!("not an assert: {:?}", k.body[2]);
    };
    assert_eq!(show(test), "((K Eq M) and (not flag))");
    assert!(matches!(msg.as_ref().map(|m| &m.kind), Some(ExprKind::Str(s)) if s == "square"));
    let StmtKind::If { orelse, .. } = &k.body[3].kind else {
        panic!("not an if: {:?}", k.body[3]);
    };
    let [Stmt {
        kind: StmtKind::If { test, orelse, .. },
        ..
    }] = orelse.as_slice()
    else {
        panic!("elif is not a nested if: {orelse:?}");
    };
    assert_eq!(
        show(test),
        "((K Gt 256) or (M NotEq 3))".replace("NotEq", "Ne")
    );
    assert_eq!(orelse.len(), 1);
    // `&` binds tighter than a comparison, looser than `+`.
    assert_eq!(
        show(&rhs("(a < n) & b + 1 == c")),
        "(((a Lt n) & (b + 1)) Eq c)"
    );
}

#[test]
fn a_trailing_semicolon_ends_a_simple_statement() {
    // Python's `;` after the last statement of a line (`FREE_DIM_MAX = 64000;`, as a cs149
    // solution writes it) is the end of the line; two statements on a line stay refused.
    let (module, errors) = parse("def k(a):\n    n = 64000; \n    return a;\n");
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(module.kernels.len(), 1);
    assert_eq!(module.kernels[0].body.len(), 2);
    let (_, errors) = parse("def k(a):\n    n = 1; m = 2\n    return a\n");
    assert!(!errors.is_empty(), "two statements on one line");
}

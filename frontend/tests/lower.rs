//! The front end end to end: every example and every good kernel checks clean, lowers to Penguin IR
//! that passes the verifier and survives the text form, and the lowered IR has the expected shape.

use penguin::{
    ActFunc, AffineExpr, AluOp, DType, EngineClass, Function, InstData, LoopKind, Memory, Op,
    Scale, Stmt, StmtKind, Tensor, TensorKind,
};
use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compiles `source` (kernel `kernel`), verifies the IR and round-trips its text form.
fn lower(source: &str, kernel: Option<&str>) -> Function {
    let f = match frontend::compile(source, kernel) {
        Ok(f) => f,
        Err(errors) => panic!(
            "{}",
            frontend::diagnostic::render_plain("kernel.nk", source, &errors)
        ),
    };
    if let Err(errors) = penguin::verify_function(&f) {
        panic!("verifier: {errors:?}\n{}", penguin::write_function(&f));
    }
    let text = penguin::write_function(&f);
    let reparsed = penguin::parse_function(&text)
        .unwrap_or_else(|e| panic!("text form does not parse: {e:?}\n{text}"));
    assert_eq!(penguin::write_function(&reparsed), text, "text round trip");
    f
}

fn insts(f: &Function, s: Stmt) -> Vec<&InstData> {
    match &f.stmts[s].kind {
        StmtKind::Insts(is) => is.iter().map(|&i| &f.insts[i]).collect(),
        StmtKind::Loop(_) => panic!("{s} is a loop"),
    }
}

fn first_inst(f: &Function, s: Stmt) -> penguin::Inst {
    match &f.stmts[s].kind {
        StmtKind::Insts(is) => is[0],
        StmtKind::Loop(_) => panic!("{s} is a loop"),
    }
}

fn loop_body(f: &Function, s: Stmt) -> (penguin::Axis, Vec<Stmt>) {
    match f.stmts[s].kind {
        StmtKind::Loop(a) => (a, f.axes[a].body.clone()),
        StmtKind::Insts(_) => panic!("{s} is not a loop"),
    }
}

fn tensor_named(f: &Function, name: &str) -> Tensor {
    f.tensors
        .iter()
        .find(|(_, t)| t.name == name)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no tensor `{name}`"))
}

#[test]
fn tensor_add_lowers() {
    let src = read("examples/tensor_add.nk");
    let f = lower(&src, None);
    assert_eq!(f.name, "tensor_add");
    assert_eq!(f.params.len(), 2);
    for &p in &f.params {
        let t = &f.tensors[p];
        assert_eq!(
            (t.kind, t.memory, t.shape.as_slice()),
            (TensorKind::Input, Memory::Hbm, &[2048, 512][..])
        );
    }
    assert_eq!(f.outputs, vec![tensor_named(&f, "c")]);
    assert_eq!(f.tensors[f.outputs[0]].kind, TensorKind::Output);
    // a, b, c, ta, tb, tc.
    assert_eq!(f.tensors.len(), 6);
    assert_eq!(f.body.len(), 1, "the ndarray makes no statement");
    let (axis, body) = loop_body(&f, f.body[0]);
    let ax = &f.axes[axis];
    assert_eq!(
        (ax.kind, ax.lb, ax.ub, ax.attrs.num_stages),
        (LoopKind::Affine, 0, 16, Some(3))
    );
    assert_eq!(ax.iv_name, "i");
    let ops: Vec<Op> = body.iter().map(|&s| insts(&f, s)[0].op.clone()).collect();
    assert_eq!(
        ops,
        vec![
            Op::Load,
            Op::Load,
            Op::TensorTensor { op: AluOp::Add },
            Op::Store
        ]
    );
    let load = insts(&f, body[0])[0];
    assert_eq!(load.engine, EngineClass::Dma);
    assert_eq!(
        load.srcs[0].access.start,
        vec![AffineExpr::term(axis, 128), AffineExpr::constant(0)]
    );
    assert_eq!(load.srcs[0].access.size, vec![128, 512]);
    let ta = &f.tensors[load.dst.tensor];
    assert_eq!(
        (ta.name.as_str(), ta.memory, ta.shape.as_slice()),
        ("ta", Memory::Sbuf, &[128, 512][..])
    );
    assert_eq!(insts(&f, body[2])[0].engine, EngineClass::Vector);
    // Spans: the axis span is the `for` header; the statement span the whole statement.
    let span = f.axis_spans[axis].expect("axis span").range();
    assert_eq!(&src[span], "for i in nl.affine_range(16, num_stages=3)");
    let span = f.stmt_spans[body[2]].expect("stmt span").range();
    assert_eq!(&src[span], "tc = nl.add(ta, tb)");
    let span = f.tensor_spans[tensor_named(&f, "tc")]
        .expect("tensor span")
        .range();
    assert_eq!(&src[span], "tc");
}

#[test]
fn matmul_accumulates_into_psum() {
    let f = lower(&read("examples/matmul.nk"), None);
    let (m, m_body) = loop_body(&f, f.body[0]);
    assert_eq!(f.axes[m].attrs.num_stages, None);
    let (n, n_body) = loop_body(&f, m_body[0]);
    assert_eq!((f.axes[n].ub, f.axes[n].attrs.num_stages), (2, Some(3)));
    assert_eq!(n_body.len(), 4, "zeros, k loop, copy, store");
    let zero = insts(&f, n_body[0])[0];
    assert_eq!(zero.op, Op::Memset { value: 0.0 });
    let acc = zero.dst.tensor;
    assert_eq!(f.tensors[acc].memory, Memory::Psum);
    let (_, k_body) = loop_body(&f, n_body[1]);
    assert_eq!(k_body.len(), 3);
    let mm = insts(&f, k_body[2]);
    assert_eq!(mm.len(), 1);
    assert_eq!(mm[0].op, Op::Matmul { accumulate: true });
    assert_eq!(mm[0].dst.tensor, acc, "acc += matmul writes acc itself");
    assert_eq!(mm[0].engine, EngineClass::Tensor);
    let copy = insts(&f, n_body[2])[0];
    assert_eq!((copy.op.clone(), copy.engine), (Op::Copy, EngineClass::Any));
    assert_eq!(copy.srcs[0].tensor, acc);
    // The rhs slice depends on n: start [128*k, 512*n].
    let rhs = &f.insts[first_inst(&f, k_body[1])];
    assert_eq!(rhs.srcs[0].access.start[1], AffineExpr::term(n, 512));
}

#[test]
fn plain_assignment_of_matmul_does_not_accumulate() {
    let src = "def k(a: nl.hbm[nl.float32, 128, 128]):\n    c = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)\n    x = nl.load(a)\n    acc = nl.matmul(x, x, transpose_x=True)\n    r = nl.copy(acc)\n    nl.store(c, value=r)\n    return c\n";
    let f = lower(src, None);
    let mm = insts(&f, f.body[1])[0];
    assert_eq!(mm.op, Op::Matmul { accumulate: false });
    assert_eq!(f.tensors[mm.dst.tensor].memory, Memory::Psum);
    assert_eq!(f.tensors[mm.dst.tensor].shape, vec![128, 128]);
}

#[test]
fn softmax_annotations_and_nested_calls() {
    let src = read("examples/softmax.nk");
    let f = lower(&src, None);
    let (_, body) = loop_body(&f, f.body[0]);
    let stages: Vec<Option<u32>> = body.iter().map(|&s| f.annots[s].stage_id).collect();
    assert_eq!(
        stages,
        vec![Some(0), Some(1), Some(1), Some(1), Some(2), Some(2)]
    );
    assert!(body.iter().all(|&s| f.annots[s].execution_order.is_none()));
    // e = nisa.activation(op=nl.exp, data=t, bias=nl.multiply(mx, -1.0)): the nested multiply
    // first, into a temporary, then the activation with the bias as its last source.
    let act = insts(&f, body[2]);
    assert_eq!(act.len(), 2);
    assert_eq!(
        act[0].op,
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: -1.0,
            reverse: false
        }
    );
    assert_eq!(
        act[1].op,
        Op::Activation {
            func: ActFunc::Exp,
            scale: Scale::Imm(1.0),
            bias: true
        }
    );
    assert_eq!(act[1].srcs.len(), 2);
    assert_eq!(act[1].srcs[1].tensor, act[0].dst.tensor);
    assert_eq!(f.tensors[act[0].dst.tensor].shape, vec![128, 1]);
    assert_eq!(act[1].srcs[0].tensor, tensor_named(&f, "t"));
    // r = nl.multiply(e, nl.reciprocal(s)): reciprocal, then a broadcast multiply.
    let r = insts(&f, body[4]);
    assert_eq!(
        r[0].op,
        Op::Activation {
            func: ActFunc::Reciprocal,
            scale: Scale::Imm(1.0),
            bias: false
        }
    );
    assert_eq!(
        r[1].op,
        Op::TensorTensor {
            op: AluOp::Multiply
        }
    );
    assert_eq!(r[1].srcs[1].tensor, r[0].dst.tensor);
    assert_eq!(f.tensors[r[1].dst.tensor].shape, vec![128, 512]);
    let reduce = insts(&f, body[1])[0];
    assert_eq!(
        reduce.op,
        Op::Reduce {
            op: penguin::ReduceOp::Max
        }
    );
    assert_eq!(f.tensors[reduce.dst.tensor].shape, vec![128, 1]);
    // Instruction spans are their calls.
    let span = f.inst_spans[first_inst(&f, body[4])]
        .expect("inst span")
        .range();
    assert_eq!(&src[span], "nl.reciprocal(s)");
}

#[test]
fn exp_stages_annotations() {
    let f = lower(&read("examples/exp_stages.nk"), None);
    let (_, body) = loop_body(&f, f.body[0]);
    let annots: Vec<(Option<u32>, Option<u32>)> = body
        .iter()
        .map(|&s| (f.annots[s].stage_id, f.annots[s].execution_order))
        .collect();
    assert_eq!(
        annots,
        vec![(Some(0), Some(2)), (Some(1), Some(1)), (Some(2), Some(0))]
    );
    let exp = insts(&f, body[1])[0];
    assert_eq!(
        exp.op,
        Op::Activation {
            func: ActFunc::Exp,
            scale: Scale::Imm(1.0),
            bias: false
        }
    );
    assert_eq!(exp.engine, EngineClass::Scalar);
}

#[test]
fn every_example_checks_clean() {
    for name in ["tensor_add", "matmul", "softmax", "exp_stages"] {
        let src = read(&format!("examples/{name}.nk"));
        assert_eq!(frontend::check_source(&src, None), vec![], "{name}");
        lower(&src, None);
    }
}

#[test]
fn good_kernels_check_clean_and_lower() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/good");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("tests/good") {
        let path = entry.expect("entry").path();
        let src = std::fs::read_to_string(&path).expect("readable");
        let errors = frontend::check_source(&src, None);
        assert!(
            errors.is_empty(),
            "{}",
            frontend::diagnostic::render_plain(&path.display().to_string(), &src, &errors)
        );
        let (module, _) = frontend::parse(&src);
        for k in &module.kernels {
            lower(&src, Some(&k.name.name));
            n += 1;
        }
    }
    assert!(n >= 6, "{n} good kernels");
}

#[test]
fn broadcasts_and_scalars() {
    let f = lower(&read("tests/good/broadcasts.nk"), None);
    let (_, body) = loop_body(&f, f.body[0]);
    // centred = t - m: m is [128, 1] and broadcasts.
    let centred = insts(&f, body[2])[0];
    assert_eq!(
        centred.op,
        Op::TensorTensor {
            op: AluOp::Subtract
        }
    );
    assert_eq!(f.tensors[centred.srcs[1].tensor].shape, vec![128, 1]);
    assert_eq!(f.tensors[centred.dst.tensor].shape, vec![128, 512]);
    // scaled = nl.multiply(m, centred): the [P, 1] operand on the left.
    let scaled = insts(&f, body[3])[0];
    assert_eq!(f.tensors[scaled.srcs[0].tensor].shape, vec![128, 1]);
    assert_eq!(f.tensors[scaled.dst.tensor].shape, vec![128, 512]);
    // r = 2.0 - scaled * 0.5
    let r = insts(&f, body[4]);
    assert_eq!(
        r[0].op,
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: 0.5,
            reverse: false
        }
    );
    assert_eq!(
        r[1].op,
        Op::TensorScalar {
            op: AluOp::Subtract,
            imm: 2.0,
            reverse: true
        }
    );
    // n = -r
    let n = insts(&f, body[5])[0];
    assert_eq!(
        n.op,
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: -1.0,
            reverse: false
        }
    );
    // q = nl.divide(1.0, nl.exp(n) + 1.0): exp, add, then a reversed divide.
    let q = insts(&f, body[6]);
    assert_eq!(q.len(), 3);
    assert_eq!(
        q[2].op,
        Op::TensorScalar {
            op: AluOp::Divide,
            imm: 1.0,
            reverse: true
        }
    );
    // q2 = nl.add(q, nl.load(x[..., 0])): the integer index loads a [128, 1] column.
    let q2 = insts(&f, body[7]);
    assert_eq!(q2[0].op, Op::Load);
    assert_eq!(q2[0].srcs[0].access.size, vec![128, 1]);
    assert_eq!(q2[0].srcs[0].access.start[1], AffineExpr::constant(0));
    assert_eq!(q2[1].op, Op::TensorTensor { op: AluOp::Add });
}

#[test]
fn slice_assignment_writes_the_slice() {
    let f = lower(&read("tests/good/slice_assign.nk"), None);
    let buf = tensor_named(&f, "buf");
    assert_eq!(f.tensors[buf].memory, Memory::Sbuf);
    let (j, body) = loop_body(&f, f.body[0]);
    let exp = insts(&f, body[1])[0];
    assert_eq!(exp.dst.tensor, buf);
    assert_eq!(
        exp.dst.access.start,
        vec![AffineExpr::constant(0), AffineExpr::term(j, 128)]
    );
    assert_eq!(exp.dst.access.size, vec![128, 128]);
    let copy = insts(&f, f.body[2])[0];
    assert_eq!((copy.op.clone(), copy.dst.tensor), (Op::Copy, buf));
    let memset = insts(&f, f.body[3])[0];
    assert_eq!(memset.op, Op::Memset { value: 0.0 });
    assert_eq!(memset.dst.access.size, vec![64, 128]);
    let scale = insts(&f, f.body[4])[0];
    assert_eq!(
        scale.op,
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: 2.0,
            reverse: false
        }
    );
    assert_eq!(
        scale.dst, scale.srcs[0],
        "an in-place update reads and writes one slice"
    );
}

#[test]
fn carried_accumulators() {
    let f = lower(&read("tests/good/carried_accumulator.nk"), None);
    let acc = tensor_named(&f, "acc");
    let mm = tensor_named(&f, "mm");
    let (k, body) = loop_body(&f, f.body[2]);
    assert_eq!((f.axes[k].kind, f.axes[k].ub), (LoopKind::Sequential, 4));
    let add = insts(&f, body[2])[0];
    assert_eq!(add.op, Op::TensorTensor { op: AluOp::Add });
    assert_eq!(add.dst.tensor, acc);
    assert_eq!(add.srcs[0].tensor, acc);
    let mat = insts(&f, body[3])[0];
    assert_eq!(
        (mat.op.clone(), mat.dst.tensor),
        (Op::Matmul { accumulate: true }, mm)
    );
    assert_eq!(f.outputs.len(), 2);
    assert_eq!(f.tensors[f.outputs[0]].name, "s");
    assert_eq!(f.tensors[f.outputs[1]].name, "p");
}

#[test]
fn bf16_storage_keeps_its_dtype() {
    let f = lower(&read("tests/good/bf16_storage.nk"), None);
    assert_eq!(f.tensors[f.params[0]].dtype, DType::Bf16);
    assert_eq!(f.tensors[tensor_named(&f, "t")].dtype, DType::Bf16);
    assert_eq!(f.tensors[tensor_named(&f, "keep")].dtype, DType::Bf16);
    assert_eq!(f.tensors[f.outputs[0]].dtype, DType::Bf16);
}

#[test]
fn nested_loop_stage_and_loop_attributes() {
    let f = lower(&read("tests/good/nested_stages.nk"), None);
    let (i, body) = loop_body(&f, f.body[0]);
    let attrs = f.axes[i].attrs;
    assert!(attrs.disable_execution_order_check && !attrs.disable_auto_buffer);
    let annots: Vec<(Option<u32>, Option<u32>)> = body
        .iter()
        .map(|&s| (f.annots[s].stage_id, f.annots[s].execution_order))
        .collect();
    assert_eq!(
        annots,
        vec![
            (Some(0), Some(1)),
            (Some(0), Some(0)),
            (Some(1), Some(2)),
            (Some(2), Some(3))
        ]
    );
    let (j, inner) = loop_body(&f, body[2]);
    assert_eq!(f.axes[j].ub, 4);
    // The inner loop's own statements carry no stage (that would be nested pipelining, which
    // filetests/pipeline/err_nested_pipeline.nk covers).
    let inner_stages: Vec<Option<u32>> = inner.iter().map(|&s| f.annots[s].stage_id).collect();
    assert_eq!(inner_stages, vec![None, None]);
    let update = insts(&f, inner[1]);
    assert_eq!(update[1].op, Op::TensorTensor { op: AluOp::Add });
    assert_eq!(update[1].dst, update[1].srcs[0]);
}

#[test]
fn names_are_unique_in_the_function() {
    let src = "def k(a: nl.hbm[nl.float32, 256, 128]):\n    c = nl.ndarray((256, 128), dtype=nl.float32, buffer=nl.shared_hbm)\n    for i in range(2):\n        t = nl.load(a[i * 128:(i + 1) * 128, :])\n        t = nl.exp(t)\n        nl.store(c[i * 128:(i + 1) * 128, :], value=t)\n    for i in range(1, 2):\n        t = nl.load(a[i * 128:(i + 1) * 128, :])\n        nl.store(c[i * 128:(i + 1) * 128, :], value=t)\n    return c\n";
    let f = lower(src, None);
    let names: Vec<&str> = f.tensors.values().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["a", "c", "t", "t.1", "t.2"]);
    let ivs: Vec<(&str, i64, i64)> = f
        .axes
        .values()
        .map(|a| (a.iv_name.as_str(), a.lb, a.ub))
        .collect();
    assert_eq!(ivs, vec![("i", 0, 2), ("i.1", 1, 2)]);
}

#[test]
fn choosing_a_kernel() {
    let src = read("tests/good/several_kernels.nk");
    let errors = frontend::compile(&src, None).expect_err("two kernels, none chosen");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, frontend::codes::CHOOSE_KERNEL);
    assert!(errors[0]
        .notes
        .iter()
        .any(|n| n.contains("`first`") && n.contains("`second`")));
    let errors = frontend::compile(&src, Some("third")).expect_err("no such kernel");
    assert_eq!(errors[0].code, frontend::codes::UNKNOWN_KERNEL);
    let f = lower(&src, Some("second"));
    assert_eq!(f.name, "second");
    assert_eq!(frontend::check_source(&src, Some("first")), vec![]);
    assert_eq!(
        frontend::check_source(&src, Some("zeroth"))[0].code,
        frontend::codes::UNKNOWN_KERNEL
    );
}

#[test]
fn the_checks_run_past_a_syntax_error() {
    // The broken line binds `x`: using it later is silent, and `undefined` inside the broken
    // line is not judged; `c` is undefined for real, and a later kernel is checked too.
    let src = "def k(a: nl.hbm[nl.float32, 128, 128]):\n    x = undefined +\n    y = nl.exp(x)\n    return c\ndef k2(a):\n    return a\n";
    let errors = frontend::compile(src, Some("k")).expect_err("syntax error");
    let codes: Vec<(&str, usize)> = errors
        .iter()
        .map(|e| (e.code, src[..e.span.start].matches('\n').count() + 1))
        .collect();
    assert_eq!(codes, vec![("E0013", 2), ("E0100", 4)], "{errors:#?}");
    let all = frontend::check_source(src, None);
    assert_eq!(all.len(), 3, "{all:#?}");
    assert_eq!(all[2].code, frontend::codes::UNSPECIALISED_PARAM);
}

#[test]
fn only_the_selected_kernel_is_checked() {
    let src = "def good(a: nl.hbm[nl.float32, 128, 128]):\n    c = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    nl.store(c, value=t)\n    return c\ndef bad(a: nl.hbm[nl.float32, 128, 128]):\n    t = nl.load(q)\n";
    assert_eq!(frontend::check_source(src, Some("good")), vec![]);
    // `bad`: an undefined name and no return.
    assert_eq!(frontend::check_source(src, None).len(), 2);
    lower(src, Some("good"));
}

#[test]
fn integer_expressions_are_scalar_operands() {
    let src = "N = 3\ndef k(a: nl.hbm[nl.float32, 128, 128]):\n    c = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)\n    t = nl.load(a)\n    u = nl.multiply(t, N * 2 - 1)\n    nl.store(c, value=u)\n    return c\n";
    let f = lower(src, None);
    assert_eq!(
        insts(&f, f.body[1])[0].op,
        Op::TensorScalar {
            op: AluOp::Multiply,
            imm: 5.0,
            reverse: false
        }
    );
}

/// `functools.partial` / `functools.reduce` / `operator.*` evaluate as Python does (the kernel's
/// asserts fail the compilation otherwise), and a name a hardware loop's body binds to a
/// loop-independent value is bound after the loop.
#[test]
fn functools_and_names_after_loops_evaluate_as_python() {
    let src = "\
import functools
import operator
from functools import partial, reduce

def f(a, b, c=0, d=0):
    return (a, b, c, d)

def k(a: nl.hbm[nl.float32, 128, 128]):
    p = partial(f, 1, c=3)
    assert p(2) == (1, 2, 3, 0)
    assert p(2, c=5, d=6) == (1, 2, 5, 6)
    q = functools.partial(p, 7, d=8)
    assert q() == (1, 7, 3, 8)
    assert reduce(operator.mul, [2, 3, 4]) == 24
    assert reduce(operator.add, [], 5) == 5
    assert functools.reduce(lambda x, y: x * 10 + y, (1, 2, 3)) == 123
    assert operator.contains([1, 2], 2) and operator.lt(1, 2) and operator.floordiv(7, 2) == 3
    c = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        n = 4
        names = ('x', n)
        ip = nl.arange(128)[:, None]
    assert n == 4 and names == ('x', 4)
    _, m = 1, 2
    for j in nl.affine_range(2):
        n = j * 2
        _ = j
        names = nl.load(a[ip, nl.arange(128)[None, :]])
    nl.store(c[ip, nl.arange(128)[None, :]], value=nl.load(a[ip, nl.arange(128)[None, :]]))
    return c
";
    lower(src, Some("k"));
    let bad = "\
from functools import reduce
import operator

def k(a: nl.hbm[nl.float32, 128, 128]):
    n = reduce(operator.add, [])
    return a
";
    let errors = frontend::check_source(bad, None);
    assert_eq!(
        errors.iter().map(|e| e.code).collect::<Vec<_>>(),
        ["E0210"],
        "{errors:?}"
    );
}

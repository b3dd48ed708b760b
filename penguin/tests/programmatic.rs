//! The text form and the verifier on functions built through the API, as passes build them:
//! entity numbering that is not the canonical one, and malformed functions that text cannot state
//! (cycles, shared statements, dangling references, bad names).

use cranelift_entity::EntityRef;
use penguin::{
    parse_function, verify_function, write_function, Access, AffineExpr, Axis, AxisAttrs, AxisData,
    DType, EngineClass, Function, Inst, InstData, LoopKind, Memory, Op, Operand, Stmt, StmtAnnot,
    StmtKind, Tensor, TensorData, TensorKind,
};

fn tensor(
    f: &mut Function,
    name: &str,
    memory: Memory,
    shape: [u64; 2],
    kind: TensorKind,
) -> Tensor {
    f.tensors.push(TensorData {
        name: name.to_string(),
        memory,
        dtype: DType::F32,
        shape: shape.to_vec(),
        kind,
        block: Vec::new(),
    })
}

fn axis(f: &mut Function, iv: &str, ub: i64) -> Axis {
    f.axes.push(AxisData {
        iv_name: iv.to_string(),
        kind: LoopKind::Affine,
        lb: 0,
        ub,
        attrs: AxisAttrs::default(),
        body: Vec::new(),
    })
}

/// `c = a + 1` in 128-row tiles over `i`, built inside-out: the instruction statements are created
/// before the loop statement, so the numbering is not the parser's pre-order.
fn tiled_add_one() -> Function {
    let mut f = Function::new("add_one");
    // Tensors out of "natural" order: the tile first.
    let t = tensor(&mut f, "t", Memory::Sbuf, [128, 512], TensorKind::Local);
    let a = tensor(&mut f, "a", Memory::Hbm, [512, 512], TensorKind::Input);
    let c = tensor(&mut f, "c", Memory::Hbm, [512, 512], TensorKind::Output);
    let i = axis(&mut f, "i", 4);
    let rows = AffineExpr::term(i, 128);
    let tile = |tensor| Operand {
        tensor,
        access: Access::whole(&[128, 512]),
    };
    let hbm = |tensor| Operand {
        tensor,
        access: Access {
            start: vec![rows.clone(), AffineExpr::constant(0)],
            size: vec![128, 512],
            slots: Vec::new(),
            pattern: None,
        },
    };
    let store = f.insts.push(InstData {
        op: Op::Store,
        engine: EngineClass::Dma,
        dst: hbm(c),
        srcs: vec![tile(t)],
        mask: Vec::new(),
    });
    let load = f.insts.push(InstData {
        op: Op::Load,
        engine: EngineClass::Dma,
        dst: tile(t),
        srcs: vec![hbm(a)],
        mask: Vec::new(),
    });
    let add = f.insts.push(InstData {
        op: Op::TensorScalar {
            op: penguin::AluOp::Add,
            imm: 1.0,
            reverse: false,
        },
        engine: EngineClass::Vector,
        dst: tile(t),
        srcs: vec![tile(t)],
        mask: Vec::new(),
    });
    let s_store = f.add_inst_stmt(vec![store]);
    let s_compute = f.add_inst_stmt(vec![load, add]);
    f.annots[s_compute] = StmtAnnot {
        stage_id: Some(0),
        execution_order: Some(1),
    };
    f.stage_tags[s_store] = Some(1);
    f.axes[i].body = vec![s_compute, s_store];
    let s_loop = f.add_loop_stmt(i);
    f.body.push(s_loop);
    f.params.push(a);
    f.outputs.push(c);
    f
}

fn messages(f: &Function) -> Vec<String> {
    match verify_function(f) {
        Ok(()) => Vec::new(),
        Err(errs) => errs.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn non_canonical_numbering_round_trips() {
    let f = tiled_add_one();
    assert_eq!(messages(&f), Vec::<String>::new());
    let text = write_function(&f);
    assert_eq!(
        text,
        "kernel add_one(a) -> (c) {
  tensor t: sbuf f32[128, 512] local
  tensor a: hbm f32[512, 512] input
  tensor c: hbm f32[512, 512] output
  loop i in 0..4 affine {
    stmt stage_id=0 execution_order=1 {
      t[0 +: 128, 0 +: 512] = load.dma a[128*i +: 128, 0 +: 512]
      t[0 +: 128, 0 +: 512] = tensor_scalar.dve(op=add, imm=1.0, reverse=false) t[0 +: 128, 0 +: 512]
    }
    stmt stage=1 {
      c[128*i +: 128, 0 +: 512] = store.dma t[0 +: 128, 0 +: 512]
    }
  }
}
"
    );
    let g = parse_function(&text).expect("the printed text parses");
    assert_eq!(write_function(&g), text);
    assert_eq!(messages(&g), Vec::<String>::new());
    // Canonical numbering: tensors keep their declaration order; statements are pre-order and
    // instructions in order of appearance.
    assert_eq!(g.tensors[Tensor::new(0)].name, "t");
    assert_eq!(g.body, vec![Stmt::new(0)]);
    assert_eq!(g.stmts[Stmt::new(0)].kind, StmtKind::Loop(Axis::new(0)));
    assert_eq!(
        g.stmts[Stmt::new(1)].kind,
        StmtKind::Insts(vec![Inst::new(0), Inst::new(1)])
    );
    assert_eq!(g.insts[Inst::new(0)].op, Op::Load);
    assert_eq!(g.stage_tags[Stmt::new(2)], Some(1));
    assert_eq!(g.annots[Stmt::new(1)].execution_order, Some(1));
}

#[test]
fn malformed_trees_are_reported_and_print_without_panicking() {
    // A loop whose body holds its own statement, and an axis that no statement loops over.
    let mut f = tiled_add_one();
    let s_loop = f.body[0];
    let i = Axis::new(0);
    f.axes[i].body.push(s_loop);
    let orphan = axis(&mut f, "j", 2);
    let msgs = messages(&f);
    assert!(
        msgs.contains(
            &"stmt s2 (loop i, in loop i): appears more than once in the tree".to_string()
        ),
        "{msgs:?}"
    );
    assert!(
        msgs.contains(&format!("loop {orphan} (`j`): is the loop of no statement")),
        "{msgs:?}"
    );
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    let text = write_function(&f);
    assert!(text.contains("# <statement s2 again>"), "{text}");
}

#[test]
fn dangling_references_and_bad_names_are_reported() {
    let mut f = tiled_add_one();
    f.tensors[Tensor::new(0)].name = "a".to_string(); // the tile now shares the input's name
    f.axes[Axis::new(0)].iv_name = "not an iv".to_string();
    f.insts[Inst::new(1)].srcs[0].tensor = Tensor::new(7);
    f.insts[Inst::new(0)].dst.access.start[0] = AffineExpr::iv(Axis::new(5));
    let s = f.add_inst_stmt(vec![Inst::new(2), Inst::new(9)]);
    f.body.push(s);
    let msgs = messages(&f);
    let want = [
        "tensor t1 (`a`): duplicate tensor name (also t0)",
        "loop ax0 (`not an iv`): induction variable `not an iv` is not an identifier",
        "stmt s3: holds undefined instruction i9",
        "inst i2 (`a = add scalar`): is in 2 statements (s1, s3)",
        "inst i0 (`c = store`, in loop not an iv): destination (`c` dim 0) uses undefined axis ax5",
        "inst i1 (`a = load`, in loop not an iv): source 0 names undefined tensor t7",
    ];
    for w in want {
        assert!(msgs.iter().any(|m| m == w), "missing `{w}` in {msgs:#?}");
    }
    assert_eq!(msgs.len(), want.len(), "{msgs:#?}");
    // The printer names what it cannot resolve.
    let text = write_function(&f);
    assert!(text.contains("<undefined t7>"), "{text}");
    assert!(text.contains("<undefined ax5>"), "{text}");
    assert!(text.contains("# <undefined instruction i9>"), "{text}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth_ok = 64;
    let mut ok = String::from("kernel deep() -> () {\n");
    for d in 0..depth_ok {
        ok.push_str(&format!("loop i{d} in 0..1 affine {{\n"));
    }
    ok.push_str("stmt { }\n");
    for _ in 0..depth_ok {
        ok.push_str("}\n");
    }
    ok.push_str("}\n");
    let f = parse_function(&ok).expect("64 nested loops parse");
    assert_eq!(f.axes.len(), depth_ok);
    assert_eq!(messages(&f), Vec::<String>::new());
    assert_eq!(
        parse_function(&write_function(&f)).map(|g| g.stmts.len()),
        Ok(depth_ok + 1)
    );

    let mut deep = String::from("kernel deep() -> () {\n");
    for d in 0..5000 {
        deep.push_str(&format!("loop i{d} in 0..1 affine {{\n"));
    }
    let err = parse_function(&deep).expect_err("too deep");
    assert_eq!(err.to_string(), "line 66:1: loops nested deeper than 64");
}

#[test]
fn floats_round_trip_bit_exactly() {
    let values = [
        0.0f32,
        -0.0,
        1.0,
        -1.5,
        0.1,
        f32::MIN_POSITIVE,
        1e-45,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xff80_0001),
        std::f32::consts::PI,
    ];
    for v in values {
        let mut f = Function::new("k");
        let t = tensor(&mut f, "t", Memory::Sbuf, [1, 1], TensorKind::Local);
        let i = f.insts.push(InstData {
            op: Op::Memset { value: v },
            engine: EngineClass::Vector,
            dst: Operand {
                tensor: t,
                access: Access::whole(&[1, 1]),
            },
            srcs: Vec::new(),
            mask: Vec::new(),
        });
        let s = f.add_inst_stmt(vec![i]);
        f.body.push(s);
        let text = write_function(&f);
        let g = parse_function(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let Op::Memset { value } = g.insts[Inst::new(0)].op else {
            panic!("not a memset: {text}");
        };
        assert_eq!(value.to_bits(), v.to_bits(), "{text}");
    }
}

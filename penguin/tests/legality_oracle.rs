//! The ISL legality check against a brute-force oracle: random small loop bodies (tiles, a
//! carried SBUF buffer, an HBM scratch array read and written at iteration-dependent rows, nested
//! loops with iv-dependent columns) × random stage assignments, execution orders and buffer
//! counts. The oracle enumerates every instance, simulates both schedules' access order per
//! element, and calls a plan illegal when some pair of conflicting accesses (one element, at
//! least one write) runs in the other order. The check must give the same verdict, with and
//! without its fast path, and every violation it reports must be such a pair.

use penguin::pipeline::{
    compute_violations, compute_violations_with, DepKind, LegalityOptions, PipelinePlan,
};
use penguin::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::fmt::Write;

/// One operand, independent of the IR: a tensor index and the tile it touches.
#[derive(Clone, Debug)]
struct Opnd {
    tensor: usize,
    /// Row start: `row_i * i + row_c`.
    row_i: i64,
    row_c: i64,
    /// Column start: `col_k * k + col_c`, and width.
    col_k: i64,
    col_c: i64,
    width: i64,
}

#[derive(Clone, Debug)]
struct InstSpec {
    text_op: &'static str,
    dst: Opnd,
    srcs: Vec<Opnd>,
}

#[derive(Clone, Debug)]
struct ChildSpec {
    nested: bool,
    insts: Vec<InstSpec>,
}

#[derive(Clone, Debug)]
struct Case {
    trip: i64,
    n_tiles: usize,
    children: Vec<ChildSpec>,
    counts: Vec<u32>,
    stages: Vec<u32>,
    order: Vec<usize>,
}

type RawInst = (u8, u8, u8, u8, bool, (u8, u8, u8), u8);

fn raw_inst() -> impl Strategy<Value = RawInst> {
    (
        0u8..5,
        0u8..8,
        0u8..8,
        0u8..8,
        any::<bool>(),
        (0u8..3, 0u8..3, 0u8..3),
        0u8..3,
    )
}

fn case() -> impl Strategy<Value = Case> {
    (
        1i64..=5,
        2usize..=4,
        prop::collection::vec(
            (
                prop::bool::weighted(0.25),
                prop::collection::vec(raw_inst(), 1..=2),
            ),
            2..=6,
        ),
        prop::collection::vec(1u32..=3, 4),
        prop::collection::vec(0u32..=1, 6),
        prop::collection::vec(any::<u32>(), 6),
    )
        .prop_map(|(trip, n_tiles, raw_children, counts, steps, keys)| {
            let s = n_tiles + 1;
            let o = n_tiles + 2;
            let a = n_tiles + 3;
            let children: Vec<ChildSpec> = raw_children
                .into_iter()
                .map(|(nested, raws)| {
                    let insts = raws
                        .into_iter()
                        .map(|(kind, d, s1, s2, wide, cols, row)| {
                            let tile = |x: u8| usize::from(x) % (n_tiles + 1);
                            let width = if wide { 4 } else { 2 };
                            let col = |choice: u8| -> (i64, i64) {
                                match (wide, choice, nested) {
                                    (true, _, _) => (0, 0),
                                    (false, 1, _) => (0, 2),
                                    (false, 2, true) => (2, 0),
                                    _ => (0, 0),
                                }
                            };
                            let op = |tensor: usize, (row_i, row_c): (i64, i64), c: u8| {
                                let (col_k, col_c) = col(c);
                                Opnd {
                                    tensor,
                                    row_i,
                                    row_c,
                                    col_k,
                                    col_c,
                                    width,
                                }
                            };
                            let s_row = match row {
                                0 => (2, 0),
                                1 => (2, 2),
                                _ => (0, 0),
                            };
                            let (c0, c1, c2) = cols;
                            match kind {
                                0 => {
                                    let (src, rows) =
                                        if s2 % 2 == 0 { (a, (2, 0)) } else { (s, s_row) };
                                    InstSpec {
                                        text_op: "load.dma",
                                        dst: op(tile(d), (0, 0), c0),
                                        srcs: vec![op(src, rows, c1)],
                                    }
                                }
                                1 => {
                                    let (dst, rows) =
                                        if s2 % 2 == 0 { (o, (2, 0)) } else { (s, s_row) };
                                    InstSpec {
                                        text_op: "store.dma",
                                        dst: op(dst, rows, c0),
                                        srcs: vec![op(tile(s1), (0, 0), c1)],
                                    }
                                }
                                2 => InstSpec {
                                    text_op: "tensor_tensor.dve(op=add)",
                                    dst: op(tile(d), (0, 0), c0),
                                    srcs: vec![op(tile(s1), (0, 0), c1), op(tile(s2), (0, 0), c2)],
                                },
                                3 => InstSpec {
                                    text_op: "memset.dve(value=0.0)",
                                    dst: op(tile(d), (0, 0), c0),
                                    srcs: vec![],
                                },
                                _ => InstSpec {
                                    text_op: "copy.any",
                                    dst: op(tile(d), (0, 0), c0),
                                    srcs: vec![op(tile(s1), (0, 0), c1)],
                                },
                            }
                        })
                        .collect();
                    ChildSpec { nested, insts }
                })
                .collect();
            let n = children.len();
            let mut stages = Vec::with_capacity(n);
            let mut st = 0u32;
            for (k, step) in steps.iter().take(n).enumerate() {
                if k > 0 {
                    st = (st + step).min(2);
                }
                stages.push(st);
            }
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&c| (keys[c], c));
            Case {
                trip,
                n_tiles,
                children,
                counts,
                stages,
                order,
            }
        })
}

fn tensor_name(case: &Case, t: usize) -> String {
    let n = case.n_tiles;
    match t {
        _ if t < n => format!("t{t}"),
        _ if t == n => "acc".into(),
        _ if t == n + 1 => "s".into(),
        _ if t == n + 2 => "o".into(),
        _ => "a".into(),
    }
}

fn affine(coeff: i64, var: &str, c: i64) -> String {
    match (coeff, c) {
        (0, c) => c.to_string(),
        (k, 0) => format!("{k}*{var}"),
        (k, c) => format!("{k}*{var} + {c}"),
    }
}

fn operand_text(case: &Case, op: &Opnd, k: &str) -> String {
    format!(
        "{}[{} +: 2, {} +: {}]",
        tensor_name(case, op.tensor),
        affine(op.row_i, "i", op.row_c),
        affine(op.col_k, k, op.col_c),
        op.width
    )
}

fn kernel_text(case: &Case) -> String {
    let rows = 2 * case.trip;
    let mut t = String::new();
    writeln!(t, "kernel oracle(a) -> (o) {{").unwrap();
    writeln!(t, "  tensor a: hbm f32[{rows}, 4] input").unwrap();
    writeln!(t, "  tensor o: hbm f32[{rows}, 4] output").unwrap();
    writeln!(t, "  tensor s: hbm f32[{}, 4] local", rows + 2).unwrap();
    writeln!(t, "  tensor acc: sbuf f32[2, 4] local").unwrap();
    for j in 0..case.n_tiles {
        writeln!(t, "  tensor t{j}: sbuf f32[2, 4] local").unwrap();
    }
    writeln!(
        t,
        "  stmt {{ acc[0 +: 2, 0 +: 4] = memset.dve(value=0.0) }}"
    )
    .unwrap();
    writeln!(t, "  loop i in 0..{} affine {{", case.trip).unwrap();
    for (c, child) in case.children.iter().enumerate() {
        let k = format!("k{c}");
        if child.nested {
            writeln!(t, "    loop {k} in 0..2 affine {{").unwrap();
        }
        writeln!(t, "    stmt {{").unwrap();
        for inst in &child.insts {
            let srcs: Vec<String> = inst
                .srcs
                .iter()
                .map(|o| operand_text(case, o, &k))
                .collect();
            writeln!(
                t,
                "      {} = {} {}",
                operand_text(case, &inst.dst, &k),
                inst.text_op,
                srcs.join(", ")
            )
            .unwrap();
        }
        writeln!(t, "    }}").unwrap();
        if child.nested {
            writeln!(t, "    }}").unwrap();
        }
    }
    writeln!(t, "  }}\n}}").unwrap();
    t
}

/// One instance: (child, position in the child, i, k).
type Instance = (usize, usize, i64, i64);

/// One element of one tensor: (tensor, slot, row, column).
type Element = (usize, i64, i64, i64);

struct Oracle {
    /// Per instance, its original and pipelined times.
    times: HashMap<Instance, ([i64; 4], [i64; 4])>,
    /// Per element (tensor, slot, row, col), its accesses: (instance, is a write).
    elements: HashMap<Element, Vec<(Instance, bool)>>,
}

impl Oracle {
    fn new(case: &Case) -> Self {
        let mut times = HashMap::new();
        let mut elements: HashMap<_, Vec<_>> = HashMap::new();
        let rank = |c: usize| case.order.iter().position(|&x| x == c).unwrap() as i64;
        for i in 0..case.trip {
            for (c, child) in case.children.iter().enumerate() {
                let ks = if child.nested { 0..2 } else { 0..1 };
                for k in ks {
                    for (pos, inst) in child.insts.iter().enumerate() {
                        let x: Instance = (c, pos, i, k);
                        let orig = [i, c as i64, k, pos as i64];
                        let pipe = [i + i64::from(case.stages[c]), rank(c), k, pos as i64];
                        times.insert(x, (orig, pipe));
                        let ops = std::iter::once((&inst.dst, true))
                            .chain(inst.srcs.iter().map(|o| (o, false)));
                        for (op, write) in ops {
                            let count = if op.tensor < case.n_tiles {
                                i64::from(case.counts[op.tensor])
                            } else {
                                1
                            };
                            let slot = i % count;
                            let r0 = op.row_i * i + op.row_c;
                            let c0 = op.col_k * k + op.col_c;
                            for r in r0..r0 + 2 {
                                for col in c0..c0 + op.width {
                                    elements
                                        .entry((op.tensor, slot, r, col))
                                        .or_default()
                                        .push((x, write));
                                }
                            }
                        }
                    }
                }
            }
        }
        Oracle { times, elements }
    }

    /// Whether `x` before `y` originally and not in the pipelined schedule.
    fn reversed(&self, x: Instance, y: Instance) -> bool {
        let (ox, px) = self.times[&x];
        let (oy, py) = self.times[&y];
        ox < oy && px >= py
    }

    fn legal(&self) -> bool {
        for accesses in self.elements.values() {
            for &(x, wx) in accesses {
                for &(y, wy) in accesses {
                    if x != y && (wx || wy) && self.reversed(x, y) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Whether `x` and `y` conflict as `kind` says (source `x`, sink `y`) on some element.
    fn conflict(&self, kind: DepKind, x: Instance, y: Instance) -> bool {
        self.elements.values().any(|accesses| {
            accesses.iter().any(|&(a, wa)| {
                a == x
                    && accesses.iter().any(|&(b, wb)| {
                        b == y
                            && match kind {
                                DepKind::Flow => wa && !wb,
                                DepKind::Anti => !wa && wb,
                                DepKind::Output => wa && wb,
                            }
                    })
            })
        })
    }
}

fn plan_of(f: &Function, case: &Case) -> PipelinePlan {
    let axis = f
        .axes
        .iter()
        .find(|(_, a)| a.iv_name == "i")
        .map(|(ax, _)| ax)
        .expect("the loop i");
    let tensor = |name: &str| {
        f.tensors
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(t, _)| t)
            .expect("a declared tensor")
    };
    PipelinePlan {
        axis,
        num_stages: case.stages.iter().max().map_or(1, |s| s + 1),
        stages: case.stages.clone(),
        order: case.order.clone(),
        buffers: (0..case.n_tiles)
            .filter(|&j| case.counts[j] > 1)
            .map(|j| (tensor(&format!("t{j}")), case.counts[j]))
            .collect(),
    }
}

/// The instance of `inst` at the iteration values `iter` (i, then k when nested).
fn instance_of(map: &HashMap<Inst, (usize, usize)>, inst: Inst, iter: &[(Axis, i64)]) -> Instance {
    let (c, pos) = map[&inst];
    let k = iter.get(1).map_or(0, |&(_, v)| v);
    (c, pos, iter[0].1, k)
}

/// Checks one case; returns whether the oracle finds it legal.
fn check_case(case: &Case) -> Result<bool, TestCaseError> {
    let text = kernel_text(case);
    let f = parse_function(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Err(errors) = verify_function(&f) {
        panic!("{errors:?}\n{text}");
    }
    let plan = plan_of(&f, case);
    let report = compute_violations(&f, &plan).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let all = compute_violations_with(&f, &plan, &LegalityOptions { prefilter: false })
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    prop_assert_eq!(&report.violations, &all.violations);
    let oracle = Oracle::new(case);
    let legal = oracle.legal();
    prop_assert_eq!(
        report.violations.is_empty(),
        legal,
        "verdict differs for {:?}\n{}\n{:?}",
        plan,
        text,
        report
    );
    // Map instructions to (child, position): the first instruction is the memset before the
    // loop.
    let mut seq = Vec::new();
    f.walk_stmts(|s, _| {
        if let StmtKind::Insts(v) = &f.stmts[s].kind {
            seq.extend(v.iter().copied());
        }
    });
    let mut map = HashMap::new();
    let mut it = seq.into_iter().skip(1);
    for (c, child) in case.children.iter().enumerate() {
        for pos in 0..child.insts.len() {
            map.insert(it.next().expect("one instruction per spec"), (c, pos));
        }
    }
    for v in &report.violations {
        let x = instance_of(&map, v.source, &v.source_iter);
        let y = instance_of(&map, v.sink, &v.sink_iter);
        prop_assert!(x != y, "{:?}", v);
        prop_assert!(oracle.reversed(x, y), "not reversed: {:?}\n{}", v, text);
        prop_assert!(
            oracle.conflict(v.kind, x, y),
            "no such conflict: {:?}\n{}",
            v,
            text
        );
    }
    Ok(legal)
}

#[test]
fn the_check_agrees_with_the_brute_force_oracle() {
    use proptest::test_runner::{Config, TestRunner};
    use std::cell::Cell;
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let (legal, illegal) = (Cell::new(0u32), Cell::new(0u32));
    runner
        .run(&case(), |case| {
            let ok = check_case(&case)?;
            let counter = if ok { &legal } else { &illegal };
            counter.set(counter.get() + 1);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The generator must exercise both verdicts (shrinking runs are counted too, so the total
    // is at least the number of cases).
    let (legal, illegal) = (legal.get(), illegal.get());
    assert!(
        legal >= 30 && illegal >= 30,
        "legal {legal}, illegal {illegal}"
    );
    eprintln!("oracle cases: {legal} legal, {illegal} illegal");
}

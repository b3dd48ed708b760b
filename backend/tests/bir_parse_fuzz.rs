//! The BIR reader on mutated texts: it never panics; whatever it accepts goes through the
//! verifier without panicking, prints to a fixed point (`write(parse(write(x))) == write(x)`),
//! and is a well-formed tree (the reader places every loop and instruction it creates once, with
//! its loop chain), so the only structural complaint the verifier may have is a loop's depth.

use backend::codegen::bir::write_bir;
use backend::codegen::bir_parse::parse_bir;
use backend::codegen::bir_verify::verify_bir;
use proptest::prelude::*;
use std::path::Path;

/// The valid texts the mutations start from: the round-trip files and the schedule inputs.
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../filetests");
    let mut out = Vec::new();
    for dir in ["bir", "schedule"] {
        for e in std::fs::read_dir(root.join(dir)).expect("seed directory exists") {
            let p = e.expect("directory entry").path();
            if p.extension().is_some_and(|x| x == "bir") {
                out.push(std::fs::read_to_string(p).expect("readable seed"));
            }
        }
    }
    out.sort();
    assert!(!out.is_empty());
    out
}

/// Pieces of syntax to splice in.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "=",
    "+:",
    "..",
    "->",
    "-",
    "+",
    "*",
    ">=",
    "<",
    "==",
    "&&",
    "@(",
    "@(i < 2) ",
    "loop r0 = 0..4 (i = r0 + 0) {",
    "loop r1 = 0..4 (q = r1 + -3) pipelined(stages=2, trip=3) {",
    "buffer",
    "bir",
    "ring[i: 2]",
    "i",
    "k",
    "t",
    "0",
    "128",
    "-1",
    "99999999999999999999999",
    "1e999",
    "NaN",
    "nan:0x7fc00001",
    "inf",
    "\n",
    " ",
    "#",
    "é",
    "sp.load",
    "pool.copy",
    "dve.memset(value=0.0)",
    "pe.matmul(accumulate=true)",
    "stage 1",
    "0x",
    "1.5e-3",
    "r9",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, token: usize },
    Duplicate { at: usize, len: usize, to: usize },
    Truncate { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..12).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 1usize..60, any::<usize>())
            .prop_map(|(at, len, to)| Mutation::Duplicate { at, len, to }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn apply(text: &str, muts: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in muts {
        let n = chars.len().max(1);
        match *m {
            Mutation::Delete { at, len } => {
                let at = at % n;
                let end = (at + len).min(chars.len());
                if at < end {
                    chars.drain(at..end);
                }
            }
            Mutation::Insert { at, token } => {
                let at = at % (chars.len() + 1);
                chars.splice(at..at, TOKENS[token].chars());
            }
            Mutation::Duplicate { at, len, to } => {
                let at = at % n;
                let end = (at + len).min(chars.len());
                let piece: Vec<char> = chars.get(at..end).unwrap_or(&[]).to_vec();
                let to = to % (chars.len() + 1);
                chars.splice(to..to, piece);
            }
            Mutation::Truncate { at } => chars.truncate(at % n),
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn reader_never_panics(seed in any::<usize>(), muts in prop::collection::vec(mutation(), 1..5)) {
        let seeds = seeds();
        let text = apply(&seeds[seed % seeds.len()], &muts);
        if let Ok((f, b)) = parse_bir(&text) {
            if let Err(errs) = verify_bir(&f, &b) {
                for e in errs {
                    let m = e.to_string();
                    prop_assert!(
                        !m.contains("does not exist")
                            && !m.contains("body")
                            && !m.contains("inside itself")
                            && !m.contains("lists its loops"),
                        "read BIR is malformed: {}", m
                    );
                }
            }
            let written = write_bir(&f, &b);
            let g = parse_bir(&written);
            prop_assert!(g.is_ok(), "printed text does not read: {:?}\n{}", g.err(), written);
            let (g, gb) = g.expect("checked above");
            prop_assert_eq!(write_bir(&g, &gb), written);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_bir(&text);
    }
}

//! The text parser on mutated texts: it never panics, and whatever it accepts prints to a fixed
//! point (`write(parse(write(f))) == write(f)`) and goes through the verifier without panicking,
//! which finds no dangling reference and no entity outside the tree.

use penguin::{parse_function, verify_function, write_function};
use proptest::prelude::*;
use std::path::Path;

/// The valid texts the mutations start from.
fn seeds() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../filetests/pir/roundtrip");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .expect("filetests/pir/roundtrip exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pir"))
        .map(|p| std::fs::read_to_string(p).expect("readable seed"))
        .collect();
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
    "loop i in 0..4 affine {",
    "stmt {",
    "tensor",
    "kernel",
    "if",
    "i",
    "j",
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
    "load.dma",
    "memset.dve(value=0.0)",
    "block[i: 2]",
    "0x",
    "1.5e-3",
    "stage=1",
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
        (any::<usize>(), 1usize..40, any::<usize>())
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
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn parser_never_panics(seed in any::<usize>(), muts in prop::collection::vec(mutation(), 1..5)) {
        let seeds = seeds();
        let text = apply(&seeds[seed % seeds.len()], &muts);
        if let Ok(f) = parse_function(&text) {
            // Whatever the verifier finds, a parsed function is always a well-formed tree: the
            // parser numbers and places every entity it creates.
            if let Err(errs) = verify_function(&f) {
                for e in errs {
                    let m = e.to_string();
                    prop_assert!(
                        !m.contains("not in the tree")
                            && !m.contains("loop of no statement")
                            && !m.contains("in no statement")
                            && !m.contains("undefined"),
                        "parsed function is malformed: {}", m
                    );
                }
            }
            let written = write_function(&f);
            let g = parse_function(&written);
            prop_assert!(g.is_ok(), "printed text does not parse: {:?}\n{}", g.err(), written);
            let g = g.expect("checked above");
            prop_assert_eq!(write_function(&g), written);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_function(&text);
    }
}

//! The front end never panics: random token soups and mutated examples (tokens deleted,
//! duplicated and swapped) go through the whole front end — parse, check, lower — and through the
//! verifier. Every input must end in diagnostics or in IR the verifier accepts; an internal error
//! (invalid IR from a kernel the checks accepted) fails the test like a panic does.

use nkc::driver::{self, Failure, Source};
use proptest::prelude::*;
use std::path::Path;

/// The examples, split into tokens: runs of word characters, runs of spaces, single newlines and
/// single other characters. The splitting is independent of nkc's own lexer on purpose.
fn example_tokens() -> Vec<Vec<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("examples/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "nk"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| split_tokens(&std::fs::read_to_string(p).expect("example is readable")))
        .collect()
}

fn split_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut tok = c.to_string();
        let same = |a: char, b: char| {
            (a.is_alphanumeric() || a == '_') && (b.is_alphanumeric() || b == '_' || b == '.')
                || a == ' ' && b == ' '
        };
        while let Some(&n) = chars.peek() {
            if same(c, n) {
                tok.push(n);
                chars.next();
            } else {
                break;
            }
        }
        out.push(tok);
    }
    out
}

const VOCABULARY: &[&str] = &[
    "def", "for", "in", "return", "pass", "True", "False", "None", "nl", "nisa", ".", "load",
    "store", "matmul", "zeros", "ndarray", "affine_range", "range", "exp", "add", "sum", "copy",
    "shape", "hbm", "float32", "bfloat16", "psum", "sbuf", "shared_hbm", "a", "b", "i", "x", "t",
    "acc", "(", ")", "[", "]", ":", ",", "=", "+=", "+", "-", "*", "/", "//", "%", "0", "1", "128",
    "512", "2048", "-1.0", "1e9", "99999999999999999999", "num_stages", "stage_id",
    "execution_order", "value", "dtype", "buffer", "axis", "transpose_x", "\n", "    ", "\t", "#",
    "\\", "'", "\"", "@", "$", "é", "\u{0}",
];

/// Runs the front end and the verifier; only an internal error is a failure.
fn survive(text: &str) -> Result<(), TestCaseError> {
    let _ = frontend::check_source(text, None);
    let src = Source {
        path: "fuzz.nk".into(),
        text: text.to_string(),
    };
    match driver::compile(&src, None) {
        Err(Failure::Internal(msg)) => Err(TestCaseError::fail(format!("{msg}\n--- input ---\n{text}"))),
        _ => Ok(()),
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

fn apply(tokens: &mut Vec<String>, m: &Mutation) {
    if tokens.is_empty() {
        return;
    }
    let n = tokens.len();
    match *m {
        Mutation::Delete(k) => {
            tokens.remove(k % n);
        }
        Mutation::Duplicate(k) => {
            let t = tokens[k % n].clone();
            tokens.insert(k % n, t);
        }
        Mutation::Swap(a, b) => tokens.swap(a % n, b % n),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_examples_never_panic(which in any::<usize>(), muts in prop::collection::vec(mutation(), 1..5)) {
        let examples = example_tokens();
        let mut tokens = examples[which % examples.len()].clone();
        for m in &muts {
            apply(&mut tokens, m);
        }
        survive(&tokens.concat())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn token_soups_never_panic(words in prop::collection::vec(prop::sample::select(VOCABULARY), 0..120)) {
        survive(&words.join(" "))?;
    }

    #[test]
    fn token_soups_inside_a_kernel_never_panic(words in prop::collection::vec(prop::sample::select(VOCABULARY), 0..60)) {
        let text = format!(
            "def k(a: nl.hbm[nl.float32, 256, 512]):\n    c = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    {}\n    return c\n",
            words.join(" ")
        );
        survive(&text)?;
    }
}

#[test]
fn the_splitter_keeps_every_character() {
    let text = "def k(a: nl.hbm[nl.float32, 2, 3]):\n    x = a.shape[0] // 2\n";
    assert_eq!(split_tokens(text).concat(), text);
    assert!(split_tokens(text).contains(&"nl.hbm".to_string()));
}

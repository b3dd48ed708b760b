//! Robustness and soundness of the whole front end (parse, check, lower): kernels made by mutating
//! the examples and the good kernels (tokens replaced, deleted, duplicated and swapped, lines
//! duplicated) and random token soups never make it panic; every kernel it accepts lowers to IR
//! that passes Penguin's verifier; and a clean `check_source` means every kernel compiles.
//! Over 10,000 cases in all.

use proptest::prelude::*;
use std::path::Path;

fn sources() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["examples", "tests/good"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "nk"))
            .collect();
        paths.sort();
        for p in paths {
            out.push(std::fs::read_to_string(p).expect("readable"));
        }
    }
    out
}

/// Splits into words (`[A-Za-z0-9_.]+`) and single other characters; joining gives the source.
fn tokens(src: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in src.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

const VOCAB: &[&str] = &[
    "0",
    "1",
    "2",
    "127",
    "128",
    "129",
    "256",
    "512",
    "513",
    "1024",
    "4096",
    "-1",
    "9223372036854775807",
    "2.0",
    "-1.0",
    "True",
    "False",
    "None",
    "i",
    "j",
    "k",
    "n",
    "t",
    "a",
    "b",
    "c",
    "x",
    "acc",
    "res",
    "nl",
    "nisa",
    "range",
    "nl.exp",
    "nl.add",
    "nl.matmul",
    "nl.load",
    "nl.store",
    "nl.copy",
    "nl.zeros",
    "nl.ndarray",
    "nl.sum",
    "nl.max",
    "nisa.nc_matmul",
    "nisa.nc_transpose",
    "nisa.activation",
    "nl.psum",
    "nl.sbuf",
    "nl.shared_hbm",
    "nl.bfloat16",
    "nl.float32",
    "stage_id",
    "num_stages",
    "axis",
    "transpose_x",
    "value",
    "+",
    "-",
    "*",
    "//",
    "%",
    "/",
    ":",
    ",",
    "(",
    ")",
    "[",
    "]",
    "=",
    "+=",
    "&=",
    "<<=",
    "~",
    " ",
    "",
];

#[derive(Clone, Debug)]
enum Mutation {
    Replace(usize, usize),
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    DuplicateLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), 0..VOCAB.len()).prop_map(|(p, v)| Mutation::Replace(p, v)),
        2 => any::<usize>().prop_map(Mutation::Delete),
        2 => any::<usize>().prop_map(Mutation::Duplicate),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => any::<usize>().prop_map(Mutation::DuplicateLine),
    ]
}

fn mutate(src: &str, muts: &[Mutation]) -> String {
    let mut toks = tokens(src);
    for m in muts {
        if toks.is_empty() {
            break;
        }
        match *m {
            Mutation::Replace(p, v) => {
                let n = toks.len();
                toks[p % n] = VOCAB[v].to_string();
            }
            Mutation::Delete(p) => {
                let n = toks.len();
                toks.remove(p % n);
            }
            Mutation::Duplicate(p) => {
                let n = toks.len();
                let t = toks[p % n].clone();
                toks.insert(p % n, t);
            }
            Mutation::Swap(a, b) => {
                let n = toks.len();
                toks.swap(a % n, b % n);
            }
            Mutation::DuplicateLine(p) => {
                let text = toks.concat();
                let lines: Vec<&str> = text.lines().collect();
                let k = p % lines.len().max(1);
                let mut out: Vec<&str> = Vec::new();
                for (i, l) in lines.iter().enumerate() {
                    out.push(l);
                    if i == k {
                        out.push(l);
                    }
                }
                toks = tokens(&(out.join("\n") + "\n"));
            }
        }
    }
    toks.concat()
}

/// Runs the whole front end on `src` and checks what it says about itself.
fn survive(src: &str) -> Result<(), TestCaseError> {
    let diagnostics = frontend::check_source(src, None);
    let (module, syntax) = frontend::parse(src);
    for k in &module.kernels {
        match frontend::compile(src, Some(&k.name.name)) {
            Ok(f) => {
                prop_assert!(syntax.is_empty());
                if let Err(e) = penguin::verify_function(&f) {
                    prop_assert!(
                        false,
                        "accepted but invalid IR: {e:?}\n{src}\n{}",
                        penguin::write_function(&f)
                    );
                }
            }
            Err(errors) => prop_assert!(!errors.is_empty()),
        }
    }
    // A clean check means every kernel compiles.
    if diagnostics.is_empty() {
        for k in &module.kernels {
            prop_assert!(frontend::compile(src, Some(&k.name.name)).is_ok(), "{src}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_kernels_never_panic_and_accepted_ones_verify(
        file in 0usize..64,
        muts in proptest::collection::vec(mutation(), 1..5),
    ) {
        let all = sources();
        survive(&mutate(&all[file % all.len()], &muts))?;
    }
}

/// Extra tokens for soups: layout and characters that cannot start a token.
const SOUP_EXTRA: &[&str] = &[
    "def", "for", "in", "return", "pass", "\n", "    ", "\t", "#", "\\", "'", "@", "é", "\u{0}",
    ".",
];

fn soup_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        prop::sample::select(VOCAB),
        prop::sample::select(SOUP_EXTRA)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn token_soups_never_panic(words in prop::collection::vec(soup_word(), 0..120)) {
        survive(&words.join(" "))?;
    }

    #[test]
    fn token_soups_inside_a_kernel_never_panic(words in prop::collection::vec(soup_word(), 0..60)) {
        let src = format!(
            "def k(a: nl.hbm[nl.float32, 256, 512]):\n    c = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)\n    {}\n    return c\n",
            words.join(" ")
        );
        survive(&src)?;
    }
}

#[test]
fn tokens_round_trip() {
    for src in sources() {
        assert_eq!(tokens(&src).concat(), src);
    }
}

//! A `.pir` mutator that keeps the IR valid (issue 30, round three): edits within the grammar and
//! the verifier's rules, of the kinds a hostile user or a buggy pass makes to pipelined IR: the
//! affine offset of a ring subscript (`{k - 1}` → `{k + 1}`, `{k - 3}`), a tensor's slot count
//! (`block[k: 1]`), a loop's bounds, trip and stage count, a statement's stage, `stage_id` or
//! `execution_order`, a predicate's bound, a loop's kind, and one tile size over the whole file.
//! Each mutant is re-read and re-verified ([`nkc::driver::read_penguin`], what every command runs
//! first); [`mutate_valid`] keeps the first of a few tries that verifies, so that most inputs reach
//! a run. Its seeds ([`seeds`]) are the pipelined forms (`--emit pipelined`, and peeled) of the
//! random kernels of `random_kernel.rs` (small tiles: each runs on every path in milliseconds) and
//! the hand-written ring kernels of `tests/pir`. Deterministic in the generator's state.
//! It depends only on the workspace's crates and on `random_kernel.rs` (included beside it).
#![allow(dead_code)]

use super::random_kernel::{self, Rng};

/// One edit of `s`; `None` when the text has nothing of that kind.
fn edit(rng: &mut Rng, s: &str) -> Option<String> {
    match rng.below(10) {
        0..=2 => ring_offset(rng, s),
        3 => number_after(rng, s, "block[", ": ", &[1, 1, 2, 3, 4, 8]),
        4 => loop_bounds(rng, s),
        5 => {
            let key = [" stage=", " stage_id=", " execution_order=", "stages="][rng.below(4)];
            number_after(rng, s, key, "", &[0, 1, 2, 3, 4, 7])
        }
        6 => number_after(rng, s, " trip=", "", &[0, 1, 2, 3, 4, 5, 9]),
        7 => predicate_bound(rng, s),
        8 => loop_kind(rng, s),
        _ => tile_size(rng, s),
    }
}

/// The byte offsets of every match of `pat` in `s`.
fn matches(s: &str, pat: &str) -> Vec<usize> {
    s.match_indices(pat).map(|(i, _)| i).collect()
}

/// The ring subscript `{...}` of one access (a read or a write) gets another affine offset of the
/// same induction variable: `{k + d}` for `d` in -4..=4 or a huge one.
fn ring_offset(rng: &mut Rng, s: &str) -> Option<String> {
    let opens: Vec<usize> = matches(s, "{")
        .into_iter()
        .filter(|&i| {
            i > 0
                && s.as_bytes()[i - 1].is_ascii_alphanumeric()
                && !s[..i].ends_with(") ")
                && s[i..]
                    .find('}')
                    .is_some_and(|e| !s[i..i + e].contains('\n'))
        })
        .collect();
    if opens.is_empty() {
        return None;
    }
    let at = opens[rng.below(opens.len())];
    let end = at + s[at..].find('}')?;
    let inner = &s[at + 1..end];
    let iv: String = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if iv.is_empty() {
        return None;
    }
    let d: i64 = [-4, -3, -2, -1, -1, 0, 1, 1, 2, 3, 4, -4294967295][rng.below(12)];
    let new = match d {
        0 => iv,
        d if d < 0 => format!("{iv} - {}", -d),
        d => format!("{iv} + {d}"),
    };
    Some(format!("{}{{{new}}}{}", &s[..at], &s[end + 1..]))
}

/// The number after one occurrence of `key` (and `skip`, up to it on the same line) becomes one
/// of `values`.
fn number_after(rng: &mut Rng, s: &str, key: &str, skip: &str, values: &[i64]) -> Option<String> {
    let hits = matches(s, key);
    if hits.is_empty() {
        return None;
    }
    let mut at = hits[rng.below(hits.len())] + key.len();
    if !skip.is_empty() {
        at += s[at..].find(skip)? + skip.len();
    }
    let len = s[at..].find(|c: char| !c.is_ascii_digit())?;
    if len == 0 {
        return None;
    }
    let v = values[rng.below(values.len())];
    Some(format!("{}{v}{}", &s[..at], &s[at + len..]))
}

/// One loop's lower or upper bound moves by -2..=2.
fn loop_bounds(rng: &mut Rng, s: &str) -> Option<String> {
    let hits = matches(s, "loop ");
    if hits.is_empty() {
        return None;
    }
    let at = hits[rng.below(hits.len())];
    let dots = at + s[at..].find("..")?;
    let (start, end) = if rng.below(3) == 0 {
        // The lower bound: digits before `..`.
        let b = s[..dots].rfind(' ')? + 1;
        (b, dots)
    } else {
        let e = dots + 2 + s[dots + 2..].find(' ')?;
        (dots + 2, e)
    };
    let n: i64 = s[start..end].parse().ok()?;
    let m = (n + [-2, -1, 1, 2][rng.below(4)]).max(0);
    Some(format!("{}{m}{}", &s[..start], &s[end..]))
}

/// The bound of one comparison of a predicate (`if i < 8`, `i >= 1`) moves by -2..=2.
fn predicate_bound(rng: &mut Rng, s: &str) -> Option<String> {
    let mut hits = Vec::new();
    for cmp in [" < ", " >= ", " <= ", " > ", " == "] {
        for i in matches(s, cmp) {
            let line_start = s[..i].rfind('\n').map_or(0, |x| x + 1);
            if s[line_start..i].contains(" if ") {
                hits.push(i + cmp.len());
            }
        }
    }
    if hits.is_empty() {
        return None;
    }
    let at = hits[rng.below(hits.len())];
    let len = s[at..].find(|c: char| !c.is_ascii_digit() && c != '-')?;
    let n: i64 = s[at..at + len].parse().ok()?;
    let m = n + [-2, -1, 1, 2][rng.below(4)];
    Some(format!("{}{m}{}", &s[..at], &s[at + len..]))
}

/// One loop's kind becomes another (`affine`, `sequential`, `range`).
fn loop_kind(rng: &mut Rng, s: &str) -> Option<String> {
    let mut hits = Vec::new();
    for kind in [" affine", " sequential", " range"] {
        for i in matches(s, kind) {
            let line_start = s[..i].rfind('\n').map_or(0, |x| x + 1);
            if s[line_start..].trim_start().starts_with("loop ") {
                hits.push((i + 1, kind.len() - 1));
            }
        }
    }
    if hits.is_empty() {
        return None;
    }
    let (at, len) = hits[rng.below(hits.len())];
    let new = ["affine", "sequential", "range"][rng.below(3)];
    Some(format!("{}{new}{}", &s[..at], &s[at + len..]))
}

/// One tile extent (`+: N`, N > 1) becomes a smaller power of two everywhere it occurs, so that
/// every operand of a statement keeps one shape.
fn tile_size(rng: &mut Rng, s: &str) -> Option<String> {
    let mut sizes: Vec<u64> = Vec::new();
    for i in matches(s, "+: ") {
        let t = &s[i + 3..];
        let len = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        if let Ok(n) = t[..len].parse::<u64>() {
            if n > 1 && !sizes.contains(&n) {
                sizes.push(n);
            }
        }
    }
    if sizes.is_empty() {
        return None;
    }
    let n = sizes[rng.below(sizes.len())];
    let m = (n >> (1 + rng.below(2))).max(1);
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let pat = format!("+: {n}");
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        out.push_str(&rest[..i]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(&pat);
        } else {
            out.push_str(&format!("+: {m}"));
        }
        rest = after;
    }
    out.push_str(rest);
    Some(out)
}

/// Whether `text` reads and verifies as a `.pir` file.
pub fn verifies(text: &str) -> bool {
    let src = nkc::driver::Source {
        path: std::path::PathBuf::from("m.pir"),
        text: text.to_string(),
    };
    nkc::driver::read_penguin(&src, None).is_ok()
}

/// One to three edits of a seed, re-verified: the first of `tries` mutants that verifies, or the
/// last one tried (an input the verifier refuses) when none does.
pub fn mutate_valid(rng: &mut Rng, seeds: &[String], tries: usize) -> String {
    let mut last = String::new();
    for _ in 0..tries.max(1) {
        let mut s = seeds[rng.below(seeds.len())].clone();
        let mut changed = false;
        for _ in 0..1 + rng.below(3) {
            if let Some(t) = edit(rng, &s) {
                changed |= t != s;
                s = t;
            }
        }
        if changed && verifies(&s) {
            return s;
        }
        last = s;
    }
    last
}

/// The seeds: the random kernels (both generators) pipelined on the annotated path as
/// `--emit pipelined` prints them, peeled too, and the `.pir` files of `dir` (the hand-written ring
/// kernels of `tests/pir`). Only those that verify.
pub fn seeds(n: u64, dir: &std::path::Path) -> Vec<String> {
    use nkc::pipeline::{CompileOptions, Context};
    let mut out = Vec::new();
    for seed in 0..n {
        let text = if seed % 2 == 0 {
            random_kernel::random_case(seed)
        } else {
            random_kernel::random_wide_kernel(seed)
        };
        let src = nkc::driver::Source {
            path: std::path::PathBuf::from("r.nk"),
            text,
        };
        for peel in [false, true] {
            let mut log = penguin::pipeline::PipelineLog::default();
            let opts = CompileOptions {
                peel,
                ..CompileOptions::default()
            };
            let mut cx = Context::new(opts, &mut log);
            let Ok(mut func) = cx.lower(&src, None, &frontend::Specs::default()) else {
                continue;
            };
            if cx.pipeline_annotated(&mut func).is_err() {
                continue;
            }
            if peel && cx.peel(&mut func).is_err() {
                continue;
            }
            let pir = penguin::write::write_function(&func);
            if verifies(&pir) && !out.contains(&pir) {
                out.push(pir);
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|x| x == "pir") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    if verifies(&t) {
                        out.push(t);
                    }
                }
            }
        }
    }
    out
}

/// The `.pir` property on every path: `run --check` with the pipeline `mode` and `--peel` or not.
/// `Some(true)` when every path that ran matched the interpreter's bits and at least one ran,
/// `Some(false)` when every path refused with a user error, `None` on a finding (described in
/// `finding`): an internal error, a mismatch, a race, or a run that exits 0 unchecked.
pub fn run_every_path(text: &str, max_cycles: u64, finding: &mut String) -> Option<bool> {
    use nkc::driver::{Failure, Source};
    use nkc::run::{self, PipelineMode, RunOptions};
    let src = Source {
        path: std::path::PathBuf::from("m.pir"),
        text: text.to_string(),
    };
    let mut ran = false;
    for mode in PipelineMode::ALL {
        for peel in [false, true] {
            let opts = RunOptions {
                pipeline: mode,
                check: true,
                peel,
                max_cycles,
                ..RunOptions::default()
            };
            let path = format!(
                "--pipeline {}{}",
                mode.name(),
                if peel { " --peel" } else { "" }
            );
            match run::run(&src, &opts, &mut penguin::pipeline::PipelineLog::default()) {
                Ok(r) if r.checked && r.sim.as_ref().is_none_or(|s| s.races.is_empty()) => {
                    ran = true
                }
                Ok(r) => {
                    *finding = format!(
                        "{path}: exit 0 but checked={} races={:?}",
                        r.checked,
                        r.sim.map(|s| s.races)
                    );
                    return None;
                }
                Err(Failure::Internal(e)) => {
                    *finding = format!("{path}: {e}");
                    return None;
                }
                Err(_) => {}
            }
        }
    }
    Some(ran)
}

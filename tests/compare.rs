//! `nkc compare` end to end: `--json` on every example (every path checked against the
//! interpreter, the paths a kernel is entitled to, the fields of `nkc run --json`), the text
//! table, the suite table of several files, and the SVG timelines (well-formed XML, one lane per
//! engine for each path, lanes for the DMA queues).

mod common;

use common::nkc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

fn ok(o: &Output, what: &str) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "nk"))
            .map(|p| format!("examples/{}", p.file_name().unwrap().to_str().unwrap()))
            .collect();
    v.sort();
    v
}

fn annotated(file: &str) -> bool {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    text.contains("num_stages=") || text.contains("stage_id=")
}

#[test]
fn compare_json_works_on_every_example() {
    let files = examples();
    assert!(files.len() >= 17);
    for file in &files {
        let out = ok(&nkc(&["compare", file, "--json"]), file);
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let obj = j.as_object().expect("an object keyed by path");
        let mut want = vec!["auto", "emergent", "none"];
        if annotated(file) {
            want.insert(0, "annotated");
            want.insert(2, "default");
        }
        assert_eq!(
            obj.keys().map(String::as_str).collect::<Vec<_>>(),
            want,
            "{file}"
        );
        for (path, r) in obj {
            assert_eq!(r["pipeline"], path.as_str(), "{file}");
            assert_eq!(
                r["checked"], true,
                "{file} {path}: checked against the interpreter"
            );
            assert_eq!(r["engine"], "sim");
            let cycles = r["cycles"].as_u64().unwrap();
            let bound = r["lower_bound"].as_u64().unwrap();
            assert!(
                bound > 0 && cycles >= bound,
                "{file} {path}: {cycles} < {bound}"
            );
            assert!(r["instructions"].as_u64().unwrap() > 0);
            assert!(r["compile_seconds"].as_f64().unwrap() > 0.0);
            assert!(r["races"].as_array().unwrap().is_empty());
            for e in ["pe", "act", "dve", "pool", "sp"] {
                assert!(r["engines"][e]["utilisation"].is_number(), "{file}: {e}");
            }
        }
        // Every path computes the same outputs (the same checksums as the interpreter's).
        let sums: Vec<&serde_json::Value> = obj.values().map(|r| &r["summary"]).collect();
        assert!(sums.windows(2).all(|w| w[0] == w[1]), "{file}: {sums:?}");
    }
}

#[test]
fn compare_prints_a_side_by_side_table() {
    let out = ok(&nkc(&["compare", "examples/tensor_add.nk"]), "tensor_add");
    let header = out.lines().find(|l| l.starts_with("| |")).unwrap();
    assert_eq!(header, "| | none | emergent | auto | default | annotated |");
    for row in [
        "| cycles |",
        "| cycles / bound |",
        "| speed-up over none | 1.00x |",
        "| pe utilisation |",
        "| dma queues utilisation |",
        "| SBUF bytes / partition |",
        "| PSUM banks |",
        "| instructions |",
        "| compile time |",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(row)),
            "no row `{row}`:\n{out}"
        );
    }
    // Un-annotated: no annotated column.
    let out = ok(&nkc(&["compare", "examples/rmsnorm.nk"]), "rmsnorm");
    assert!(out.contains("| | none | emergent | auto |\n"), "{out}");
}

/// Where the user's path is slower, the line under the table names the dependence cycle,
/// through the user's stages, the ring slots and the in-order engines, that sets its predicted
/// period (the same cycle `nkc run --json` gives as `period_set_by`), and the user's stage count
/// when fill and drain take a large share of a short loop. The user's path is `default`; where
/// the stages as written (`annotated`) run otherwise, the line says why too.
#[test]
fn compare_names_the_cycle_that_holds_the_slower_path_back() {
    let file = "examples/softmax_stages.nk";
    let out = ok(&nkc(&["compare", file]), file);
    let line = out
        .lines()
        .find(|l| {
            l.contains(" slower than ") && l.contains("The user's stages as written: annotated is ")
        })
        .unwrap_or_else(|| panic!("no explanation line:\n{out}"));
    for part in [
        "default: ",
        "annotated: period ",
        "in loop `i`",
        "sp.store(r) → (sp in order, next body) sp.load(t)",
        // Every order of one body was tried, but the store holds the next body's loads, which
        // `default` may issue before it (issue 32, items 1 and 6): not the user's stages alone.
        "and no order of one body is faster; the cycle runs through `sp.store(r)` holding the next body's loads, which `default` may issue after them",
        "emergent: period ",
    ] {
        assert!(line.contains(part), "`{part}` missing from: {line}");
    }
    let run = ok(
        &nkc(&["run", file, "--pipeline", "annotated", "--json"]),
        "run --json",
    );
    let j: serde_json::Value = serde_json::from_str(&run).unwrap();
    let l = &j["loops"][0];
    assert_eq!(l["order_bound"], l["predicted_period"], "{l}");
    let set_by = l["period_set_by"].as_str().unwrap();
    assert!(
        !set_by.is_empty() && line.contains(set_by),
        "{line}\n{set_by}"
    );
    // The predicted period is the steady state's, which the simulation measures.
    common::assert_measured_as_predicted(l);

    let file = "examples/transpose_mode_b.nk";
    let out = ok(&nkc(&["compare", file]), file);
    assert!(
        out.contains("annotated loop `c` runs 4 iterations in 4 stages, so 3 of its 7 extended iterations fill or drain"),
        "{out}"
    );
    // Its loop is bound by `sp` on the annotated path, where the emergent path unrolled it to
    // spread the transfers: the line says so (`default` flattens it as `emergent` does, and
    // the line says why the stages as written are slower).
    assert!(
        out.contains("The emergent path unrolls loop `c` ×4, so that the copies' transfers share the DMA queues"),
        "{out}"
    );
    // tensor_add's emergent path keeps factor 1: no such sentence (its rings of five slots, deeper
    // than the annotated pipeline's, make it 1.05x faster).
    let file = "examples/tensor_add.nk";
    let out = ok(&nkc(&["compare", file]), file);
    assert!(
        out.contains("default is 1.05x slower than emergent") && !out.contains("unrolls loop"),
        "{out}"
    );
}

/// Where `default` stays slower than `emergent`, the line says why on `default` (issue 32, item
/// 6): the proof that no order of one body is faster counts the stores `retime` may issue after
/// the next body's loads, and a gap outside the steady state is the user's fill and drain.
#[test]
fn compare_says_why_default_stays_slower() {
    // (sched_two_stores' two_stores_staged, the kernel this was written on, now runs within
    // 1.07x of `emergent`: its load is issued ahead, `backend::prefetch`.)
    let file = "tests/good/sched_stream.nk";
    let out = ok(
        &nkc(&["compare", file, "--kernel", "stream_staged_three_stores"]),
        file,
    );
    let header = out.lines().find(|l| l.starts_with("| |")).unwrap();
    assert_eq!(header, "| | none | emergent | auto | default | annotated |");
    let line = out
        .lines()
        .find(|l| l.starts_with("default is ") && l.contains("slower than emergent"))
        .unwrap_or_else(|| panic!("no explanation line:\n{out}"));
    for part in [
        "default: period ",
        "holding the next body's loads, which `retime` issued one iteration later but not after them (it moved the stores of ",
        "The user's stages as written: annotated is ",
        // On `annotated` the same store is one `default` may move: that path keeps the stages.
        "which `default` may issue after them (`annotated` keeps the user's stages as written)",
    ] {
        assert!(line.contains(part), "`{part}` missing from: {line}");
    }
    let file = "tests/good/narrow_stores.nk";
    let out = ok(&nkc(&["compare", file, "--kernel", "narrow_middle"]), file);
    let line = out
        .lines()
        .find(|l| l.starts_with("default is ") && l.contains("slower than emergent"))
        .unwrap_or_else(|| panic!("no explanation line:\n{out}"));
    assert!(
        line.contains("Both paths run loop `i` at the same period: the difference is the fill and drain of the user's stages: annotated loop `i` runs 10 iterations in 4 stages"),
        "{line}"
    );
}

#[test]
fn compare_of_several_files_prints_the_suite_table() {
    let out = ok(
        &nkc(&[
            "compare",
            "examples/rmsnorm.nk",
            "examples/rmsnorm_stages.nk",
        ]),
        "suite",
    );
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| rmsnorm")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(
        rows[0].contains("| — |"),
        "no annotated path for rmsnorm: {out}"
    );
    assert!(
        !rows[1].contains("| — |"),
        "rmsnorm_stages has all three paths: {out}"
    );
    assert!(
        !rows[0].contains("| none |"),
        "pipelining beats none: {out}"
    );
}

#[test]
fn compare_fails_on_a_bad_kernel() {
    let dir = std::env::temp_dir().join(format!("nkc-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.nk");
    std::fs::write(
        &bad,
        "def k(a: nl.hbm[nl.float32, 128, 128]):\n    return b\n",
    )
    .unwrap();
    let o = nkc(&["compare", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
}

/// A start tag: its name and attributes.
type Tag = (String, BTreeMap<String, String>);

/// A tiny XML well-formedness check: balanced, properly nested tags, quoted attributes, no raw
/// `<` or stray `&` in text. Returns the start tags as (name, attributes).
fn parse_xml(s: &str) -> Result<Vec<Tag>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut tags = Vec::new();
    let mut rest = s;
    let check_text = |t: &str| -> Result<(), String> {
        let mut parts = t.split('&');
        parts.next();
        for p in parts {
            let ent = p.split(';').next().unwrap_or("");
            if !["amp", "lt", "gt", "quot", "apos"].contains(&ent) || !p.contains(';') {
                return Err(format!("bad entity near `&{}`", &p[..p.len().min(10)]));
            }
        }
        Ok(())
    };
    while let Some(i) = rest.find('<') {
        check_text(&rest[..i])?;
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("<?") {
            let end = r.find("?>").ok_or("unterminated <?")?;
            rest = &r[end + 2..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("<!--") {
            let end = r.find("-->").ok_or("unterminated comment")?;
            rest = &r[end + 3..];
            continue;
        }
        let end = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if tag.contains('<') {
            return Err(format!("`<` inside tag `{tag}`"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                other => return Err(format!("`</{name}>` closes {other:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
        let name = &body[..name_end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == ':')
        {
            return Err(format!("bad tag name in `<{tag}>`"));
        }
        let mut attrs = BTreeMap::new();
        let mut a = body[name_end..].trim_start();
        while !a.is_empty() {
            let eq = a
                .find('=')
                .ok_or(format!("attribute without value in `<{tag}>`"))?;
            let key = a[..eq].trim().to_string();
            let v = a[eq + 1..]
                .strip_prefix('"')
                .ok_or(format!("unquoted attribute in `<{tag}>`"))?;
            let close = v.find('"').ok_or("unterminated attribute")?;
            check_text(&v[..close])?;
            if attrs.insert(key.clone(), v[..close].to_string()).is_some() {
                return Err(format!("duplicate attribute `{key}`"));
            }
            a = v[close + 1..].trim_start();
        }
        tags.push((name.to_string(), attrs));
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    check_text(rest)?;
    if !stack.is_empty() {
        return Err(format!("unclosed {stack:?}"));
    }
    if tags.first().map(|t| t.0.as_str()) != Some("svg") {
        return Err("the root is not <svg>".into());
    }
    Ok(tags)
}

#[test]
fn the_xml_check_rejects_malformed_documents() {
    assert!(parse_xml("<svg><g></g></svg>").is_ok());
    assert!(parse_xml("<svg><g></svg></g>").is_err());
    assert!(parse_xml("<svg><g x=1/></svg>").is_err());
    assert!(parse_xml("<svg><text>a & b</text></svg>").is_err());
    assert!(parse_xml("<svg><g>").is_err());
}

fn svg_of(args: &[&str], name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("nkc-compare-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join(name);
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--svg", file.to_str().unwrap()]);
    ok(&nkc(&all), name);
    std::fs::read_to_string(&file).unwrap()
}

#[test]
fn the_svg_is_xml_with_one_lane_per_engine_for_each_path() {
    for (file, paths) in [
        (
            "examples/tensor_add.nk",
            vec!["none", "emergent", "auto", "default", "annotated"],
        ),
        ("examples/attention.nk", vec!["none", "emergent", "auto"]),
    ] {
        let svg = svg_of(&[file], "one.svg");
        let tags = parse_xml(&svg).unwrap_or_else(|e| panic!("{file}: not well-formed: {e}"));
        let mut lanes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, attrs) in &tags {
            if name == "g" && attrs.get("class").map(String::as_str) == Some("lane") {
                lanes
                    .entry(attrs["data-path"].clone())
                    .or_default()
                    .push(attrs["data-track"].clone());
            }
        }
        assert_eq!(
            lanes.keys().collect::<Vec<_>>(),
            {
                let mut p = paths.clone();
                p.sort();
                p
            },
            "{file}"
        );
        for (path, tracks) in &lanes {
            for e in ["pe", "act", "dve", "pool", "sp"] {
                let n = tracks.iter().filter(|t| *t == e).count();
                assert_eq!(n, 1, "{file} {path}: {n} lanes for engine {e}");
            }
            assert!(
                tracks.iter().any(|t| t.starts_with("dma q")),
                "{file} {path}: no DMA queue lane"
            );
        }
        // Axes in cycles, and instructions coloured by stage on the annotated path.
        assert!(svg.contains(">cycles</text>"));
        if paths.contains(&"annotated") {
            assert!(svg.contains(">stage 0</text>") && svg.contains(">stage 2</text>"));
        }
    }
}

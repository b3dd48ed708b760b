//! No import cycle between the source files of any crate of the workspace (`src`, `frontend`,
//! `penguin`, `backend`, `runtime-sim`, `vocab`), and the layers one way: nothing in
//! `backend/src/transform/` or `backend/src/cost/` imports `backend/src/codegen/`, nothing in
//! `cost/` imports `transform/`, and no file of `frontend/src/check/` imports one of a higher
//! layer (the layers are the groups of `mod` declarations in `check/mod.rs`).
//!
//! Every file of a crate's `src` is a node; a file has an edge to another when its code names a path
//! into the other (`use crate::…`, `use super::…`, `crate::x::f(…)`, or a path starting with a
//! child module, as in `lib.rs`). A path resolves to the deepest module it names, so
//! `crate::emergent::budget::sbuf_in_use` points at `emergent/budget.rs`, and
//! `crate::emergent::MAX_DEPTH` at `emergent/mod.rs`. Comments, string and character literals are
//! ignored, `mod x;` declarations are not edges, and neither is a reference between a module and
//! its own ancestors or descendants (`lib.rs`/`mod.rs` naming their children, a child naming
//! `super::`, a path through a re-export of the crate root) nor of a file to itself. The graph must be acyclic; when it
//! is not, the test prints each cycle with the line that makes every edge.

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its path from `src/` and the module path it defines.
struct SourceFile {
    rel: String,
    module: Vec<String>,
    text: String,
}

fn collect(dir: &Path, root: &Path, out: &mut Vec<SourceFile>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a crate's src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p
                .strip_prefix(root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let mut module: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_string)
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&p).expect("a source file is readable");
            out.push(SourceFile { rel, module, text });
        }
    }
}

/// `src` with comments, string literals and character literals blanked (newlines kept, so that
/// line numbers stay right).
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(blank(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// Every path of the form `a::b::…` in `code` (after stripping), with its line, `use` trees
/// expanded (`use a::{b, c::d}` gives `a::b` and `a::c::d`).
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let line_of = |i: usize| chars[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_alphabetic() || chars[i] == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if ident_before(&chars, start) {
                continue;
            }
            let word: String = chars[start..i].iter().collect();
            let before: String = chars[..start].iter().rev().take(2).collect();
            if before == "::" {
                continue;
            }
            if word == "use" {
                let end = (i..chars.len())
                    .find(|&j| chars[j] == ';')
                    .unwrap_or(chars.len());
                let tree: String = chars[i..end].iter().collect();
                for p in expand_use(&tree) {
                    out.push((line_of(start), p));
                }
                i = end;
                continue;
            }
            // A plain path: identifiers joined by `::`.
            let mut segs = vec![word];
            let mut j = i;
            while j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' {
                let s = j + 2;
                let mut e = s;
                while e < chars.len() && (chars[e].is_alphanumeric() || chars[e] == '_') {
                    e += 1;
                }
                if e == s {
                    break;
                }
                segs.push(chars[s..e].iter().collect());
                j = e;
            }
            if segs.len() > 1 {
                out.push((line_of(start), segs));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The paths of a `use` tree (the text between `use` and `;`).
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    fn go(t: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let t = t.trim();
        if t.is_empty() {
            return;
        }
        if let Some(open) = t.find('{') {
            let head: Vec<String> = t[..open]
                .split("::")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            let close = t.rfind('}').unwrap_or(t.len());
            let inner = &t[open + 1..close];
            let mut base = prefix.to_vec();
            base.extend(head);
            let mut depth = 0;
            let mut last = 0;
            for (k, ch) in inner.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        go(&inner[last..k], &base, out);
                        last = k + 1;
                    }
                    _ => {}
                }
            }
            go(&inner[last..], &base, out);
        } else {
            let t = t.split(" as ").next().unwrap_or(t);
            let mut p = prefix.to_vec();
            p.extend(
                t.split("::")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty() && s != "*"),
            );
            if p.last().is_some_and(|s| s == "self") {
                p.pop();
            }
            out.push(p);
        }
    }
    let mut out = Vec::new();
    let tree = tree.trim_start();
    let tree = tree.strip_prefix("::").unwrap_or(tree);
    go(tree, &[], &mut out);
    out
}

/// The module path (from the crate root) an inline `mod NAME {` nests each line in: for every
/// line, the names of the inline modules open there.
fn inline_modules(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, i64)> = Vec::new();
    let mut depth: i64 = 0;
    for line in code.lines() {
        out.push(stack.iter().map(|(n, _)| n.clone()).collect());
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(k) = words.iter().position(|&w| w == "mod") {
            if let Some(name) = words.get(k + 1) {
                if line.contains('{') {
                    let name = name.trim_end_matches('{').to_string();
                    stack.push((name, depth));
                }
            }
        }
        for ch in line.chars() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if stack.last().is_some_and(|&(_, d)| d == depth) {
                        stack.pop();
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The import graph of the crate whose sources are under `root`: its files, and each edge with
/// the line and path that make it.
struct Imports {
    files: Vec<SourceFile>,
    why: BTreeMap<(usize, usize), (usize, String)>,
}

fn compute_imports(root: &Path) -> Imports {
    let mut files = Vec::new();
    collect(root, root, &mut files);
    let by_module: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(k, f)| (f.module.clone(), k))
        .collect();
    // Why each edge exists: (from, to) -> (line, path).
    let mut why: BTreeMap<(usize, usize), (usize, String)> = BTreeMap::new();
    for (k, f) in files.iter().enumerate() {
        let code = strip(&f.text);
        let inline = inline_modules(&code);
        for (line, segs) in paths(&code) {
            let mut here = f.module.clone();
            here.extend(inline.get(line - 1).cloned().unwrap_or_default());
            let mut abs: Vec<String> = match segs[0].as_str() {
                "crate" => Vec::new(),
                "self" => here.clone(),
                "super" => here.clone(),
                first => {
                    let mut child = here.clone();
                    child.push(first.to_string());
                    if !by_module.contains_key(&child) {
                        continue; // an outside crate, a type's associated item, an enum variant
                    }
                    here.clone()
                }
            };
            let mut rest = &segs[..];
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "crate" | "self" => {}
                    "super" => {
                        abs.pop();
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
            abs.extend(rest.iter().cloned());
            // The deepest module the path names.
            let target = (0..=abs.len())
                .rev()
                .find_map(|n| by_module.get(&abs[..n]).copied());
            let Some(to) = target else { continue };
            // A module and its own submodules (a `mod.rs` or `lib.rs` naming its children, a
            // child naming `super::` or a re-export of the crate root) are one unit, not an edge.
            let (a, b) = (&files[k].module, &files[to].module);
            if to != k && !a.starts_with(b) && !b.starts_with(a) {
                why.entry((k, to)).or_insert((line, segs.join("::")));
            }
        }
    }
    Imports { files, why }
}

/// The cycles of `imports`, each with the line that makes every edge; empty when there is none.
fn cycles(crate_dir: &str, imports: &Imports) -> String {
    let Imports { files, why } = imports;
    let mut graph: DiGraph<usize, ()> = DiGraph::new();
    let nodes: Vec<NodeIndex> = (0..files.len()).map(|k| graph.add_node(k)).collect();
    for &(a, b) in why.keys() {
        graph.update_edge(nodes[a], nodes[b], ());
    }
    let mut report = String::new();
    for scc in tarjan_scc(&graph) {
        if scc.len() < 2 {
            continue;
        }
        let members: BTreeSet<usize> = scc.iter().map(|&n| graph[n]).collect();
        report.push_str(&format!("cycle in {crate_dir}/src between:"));
        for &m in &members {
            report.push_str(&format!(" {}", files[m].rel));
        }
        report.push('\n');
        for (&(a, b), (line, path)) in why {
            if members.contains(&a) && members.contains(&b) {
                report.push_str(&format!(
                    "  {}:{line} -> {} (`{path}`)\n",
                    files[a].rel, files[b].rel
                ));
            }
        }
    }
    report
}

/// Every crate of the workspace, by its directory (`.` is the `nkc` package).
const CRATES: &[&str] = &[
    ".",
    "frontend",
    "penguin",
    "backend",
    "runtime-sim",
    "vocab",
];

fn src_of(crate_dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(crate_dir)
        .join("src")
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    let mut report = String::new();
    for &dir in CRATES {
        let imports = compute_imports(&src_of(dir));
        // Each cycle is a header line and its edges' lines (indented); no cycle is allowed.
        report.push_str(&cycles(dir, &imports));
        // The graph is not empty: the scanner found the imports it should (the backend's files
        // import each other densely; `vocab`'s hardly at all).
        assert!(
            dir != "backend" || imports.why.len() >= imports.files.len(),
            "{dir}: only {} edges between {} files: the scanner misses imports",
            imports.why.len(),
            imports.files.len()
        );
    }
    assert!(report.is_empty(), "import cycles:\n{report}");
}

/// The edges of the backend from files under folder `from` to files under folder `to`.
fn backend_edges(imports: &Imports, from: &str, to: &str) -> Vec<String> {
    imports
        .why
        .iter()
        .filter(|(&(a, b), _)| {
            imports.files[a].rel.starts_with(from) && imports.files[b].rel.starts_with(to)
        })
        .map(|(&(a, b), (line, path))| {
            format!(
                "{}:{line} -> {} (`{path}`)",
                imports.files[a].rel, imports.files[b].rel
            )
        })
        .collect()
}

#[test]
fn the_backend_layers_import_one_way() {
    let imports = compute_imports(&src_of("backend"));
    let up = backend_edges(&imports, "transform/", "codegen/");
    assert!(
        up.is_empty(),
        "transform/ imports codegen/:\n{}",
        up.join("\n")
    );
    let cost_up: Vec<String> = backend_edges(&imports, "cost/", "codegen/")
        .into_iter()
        .chain(backend_edges(&imports, "cost/", "transform/"))
        .collect();
    assert!(
        cost_up.is_empty(),
        "cost/ imports a layer above it:\n{}",
        cost_up.join("\n")
    );
    // The scanner sees the layers at all: codegen/ imports cost/ and transform/ imports cost/.
    assert!(!backend_edges(&imports, "codegen/", "cost/").is_empty());
    assert!(!backend_edges(&imports, "transform/", "cost/").is_empty());
}

/// The layer of every file of the front end's checker, from the `// layer N: ...` comments that
/// group the `mod` declarations of `frontend/src/check/mod.rs` (the layers its `//!` doc
/// describes): file path from `src/` → layer.
fn checker_layers() -> BTreeMap<String, u32> {
    let mod_rs = src_of("frontend").join("check/mod.rs");
    let text = std::fs::read_to_string(&mod_rs).expect("check/mod.rs is readable");
    let mut layers = BTreeMap::new();
    let mut layer = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// layer ") {
            let n = rest.split(':').next().unwrap_or(rest).trim();
            layer = Some(
                n.parse()
                    .expect("`// layer N: name` names its layer by a number"),
            );
        } else if let Some(decl) = line.strip_suffix(';') {
            let name = decl.split_whitespace().last().unwrap_or(decl);
            if decl.split_whitespace().any(|w| w == "mod") {
                let l = layer.expect("every `mod` of check/mod.rs follows a `// layer N` comment");
                layers.insert(format!("check/{name}.rs"), l);
            }
        }
    }
    layers
}

#[test]
fn the_checker_layers_import_downward() {
    let imports = compute_imports(&src_of("frontend"));
    let layers = checker_layers();
    // Every file of check/ (but mod.rs, which owns what all layers share) has a layer.
    let unplaced: Vec<&str> = (imports.files.iter())
        .map(|f| f.rel.as_str())
        .filter(|r| r.starts_with("check/") && *r != "check/mod.rs" && !layers.contains_key(*r))
        .collect();
    assert!(
        unplaced.is_empty(),
        "files of check/ with no layer (declare them under a `// layer N` comment of check/mod.rs): {unplaced:?}"
    );
    let mut up = Vec::new();
    let mut seen = 0;
    for (&(a, b), (line, path)) in &imports.why {
        let (ra, rb) = (&imports.files[a].rel, &imports.files[b].rel);
        if let (Some(&la), Some(&lb)) = (layers.get(ra), layers.get(rb)) {
            seen += 1;
            if lb > la {
                up.push(format!(
                    "{ra}:{line} (layer {la}) -> {rb} (layer {lb}) (`{path}`)"
                ));
            }
        }
    }
    assert!(
        up.is_empty(),
        "check/ imports a layer above:\n{}",
        up.join("\n")
    );
    // The scanner sees the checker's imports at all.
    assert!(
        seen >= layers.len(),
        "only {seen} edges between {} files of check/",
        layers.len()
    );
}

#[test]
fn the_scanner_sees_use_trees_and_paths() {
    let code = strip(
        "use crate::a::{b, c::{d, e}};\nuse super::f; // crate::g::h\nlet x = crate::i::j(\"crate::k::l\");",
    );
    let got: Vec<String> = paths(&code)
        .into_iter()
        .map(|(_, p)| p.join("::"))
        .collect();
    assert_eq!(
        got,
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "super::f",
            "crate::i::j"
        ]
    );
}

//! The README stays true: every `nkc ...` command of its `sh` code blocks runs, in the order
//! the README gives them (later commands use files earlier ones write), in a scratch copy of
//! the files they read, and exits with code 0; every relative link points at a file of the
//! repository, and none leaves it.

mod common;

use common::{scratch, stderr, stdout};
use std::path::Path;
use std::process::Command;

/// The `nkc` command lines of the README's `sh` code blocks, in order, without their comments.
fn readme_commands(readme: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if !in_sh || !t.starts_with("nkc ") {
            continue;
        }
        let command = t.split(" # ").next().unwrap_or(t).trim();
        commands.push(command.to_string());
    }
    commands
}

/// Copies the directory `from` (of the package) into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn every_nkc_command_of_the_readme_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = readme_commands(&readme);
    assert!(commands.len() >= 20, "found {} commands", commands.len());
    // The files the commands read, copied, so that `--write`, `-o` and `--output` change
    // nothing in the repository.
    let dir = scratch("readme", "commands");
    for d in ["examples", "tests/nki", "runtime-sim/tests/programs"] {
        copy_dir(&root.join(d), &dir.join(d));
    }
    for command in &commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let o = Command::new(env!("CARGO_BIN_EXE_nkc"))
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("nkc runs");
        assert!(
            o.status.success(),
            "README: `{command}` exits {:?}:\n{}{}",
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
    }
    // `--write` changed the copy, never the repository's example.
    assert_ne!(
        std::fs::read_to_string(dir.join("examples/softmax_stages.nk")).unwrap(),
        std::fs::read_to_string(root.join("examples/softmax_stages.nk")).unwrap(),
        "the README's `suggest --write` example suggests nothing"
    );
}

#[test]
fn every_link_of_the_readme_is_a_file_of_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        !readme.contains("../shared"),
        "a link outside the repository"
    );
    // Code spans are not links (`kernel[2, 4](a, b)` is NKI's launch syntax).
    let prose: String = readme
        .split("```")
        .step_by(2)
        .flat_map(|block| block.split('`').step_by(2))
        .collect::<Vec<_>>()
        .join(" ");
    let mut links = 0;
    for part in prose.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or_default();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        links += 1;
        assert!(
            !target.starts_with(".."),
            "`{target}` leaves the repository"
        );
        assert!(
            root.join(target).exists(),
            "README links `{target}`, which does not exist"
        );
    }
    assert!(links >= 2, "found {links} links");
}

#[test]
fn the_readme_opens_with_a_quick_start_for_nki_users() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The quick start is the first section, its commands within the first screen.
    let first = readme
        .lines()
        .find(|l| l.starts_with("## "))
        .unwrap_or_default();
    assert!(first.contains("Quick start"), "first section: {first}");
    let head: Vec<&str> = readme.lines().take(25).collect();
    let commands = readme_commands(&head.join("\n"));
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("nkc run") && c.contains("--shape")),
        "{commands:?}"
    );
    assert!(
        commands.iter().any(|c| c.starts_with("nkc check")),
        "{commands:?}"
    );
    // The one fact an NKI user needs, said there: an untyped parameter takes a shape or an array.
    let head = head.join("\n");
    assert!(
        head.contains("--shape NAME=") && head.contains("--input NAME="),
        "{head}"
    );
}

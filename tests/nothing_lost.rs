//! Nothing lost (issue 30): every file nkc writes replaces its target whole or not at all, keeps
//! its mode and writes through a symbolic link, and an output that is one of the command's inputs
//! is refused before anything runs. For each writer (`compile -o`, `run --trace`, `run --output`,
//! `compare --svg`, `sim --trace`, `sim --output`, `suggest --write`): output == input is exit 1
//! with the input byte-identical, and a write that fails under a file-size limit (`ulimit -f 1`:
//! 1 KiB) is exit 1 with the original byte-identical and no temporary file left beside it.

mod common;

use common::{nkc, scratch, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A small kernel: one output `c`, parameters `a` and `b`.
const KERNEL: &str = "def k(a: nl.hbm[nl.float32, 128, 64], b: nl.hbm[nl.float32, 128, 64]):\n    c = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    ta = nl.load(a)\n    tb = nl.load(b)\n    tc = nl.add(ta, tb)\n    nl.store(c, value=tc)\n    return c\n";

fn s(p: &Path) -> &str {
    p.to_str().expect("scratch paths are UTF-8")
}

/// A scratch directory holding `k.nk`, its program `k.s` and an input array `c.npy` (named as
/// the kernel's output, so that `--output DIR` would overwrite it).
fn setup(name: &str) -> PathBuf {
    let dir = scratch("nothing-lost", name);
    std::fs::write(dir.join("k.nk"), KERNEL).expect("the scratch directory is writable");
    let o = nkc(&[
        "compile",
        s(&dir.join("k.nk")),
        "--emit",
        "isa",
        "-o",
        s(&dir.join("k.s")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = penguin::interp::Array {
        shape: vec![128, 64],
        data: (0..128 * 64).map(|i| i as f32).collect(),
    };
    nkc::npy::write_npy(&dir.join("c.npy"), &a).expect("the scratch directory is writable");
    dir
}

/// Every file of `dir` with its bytes, sorted by name.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("the scratch directory is readable")
        .map(|e| {
            let p = e.expect("a directory entry").path();
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

fn assert_refused(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(o));
    assert!(
        stderr(o).contains("would destroy the input"),
        "{what}: {}",
        stderr(o)
    );
}

/// The writers, each with its output naming an input: refused, every file unchanged.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = setup("same");
    let k = dir.join("k.nk");
    let prog = dir.join("k.s");
    let c = dir.join("c.npy");
    let link = dir.join("link.nk");
    std::os::unix::fs::symlink("k.nk", &link).unwrap();
    let input_c = format!("a={}", s(&c));
    let cases: Vec<Vec<&str>> = vec![
        vec!["compile", s(&k), "-o", s(&k)],
        vec!["compile", s(&k), "--emit", "isa", "-o", s(&link)],
        vec!["run", s(&k), "--trace", s(&k)],
        vec!["run", s(&k), "--trace", s(&link)],
        vec!["run", s(&k), "--input", &input_c, "--trace", s(&c)],
        vec!["run", s(&k), "--input", &input_c, "--output", s(&dir)],
        vec![
            "run",
            s(&k),
            "--engine",
            "interp",
            "--input",
            &input_c,
            "--output",
            s(&dir),
        ],
        vec!["compare", s(&k), "--svg", s(&k)],
        vec![
            "compare",
            s(&k),
            "examples/tensor_add.nk",
            "--svg",
            s(&link),
        ],
        vec!["sim", s(&prog), "--trace", s(&prog)],
        vec!["sim", s(&prog), "--input", &input_c, "--output", s(&dir)],
    ];
    let before = snapshot(&dir);
    for args in &cases {
        let o = nkc(args);
        assert_refused(&o, &format!("{args:?}"));
        assert!(snapshot(&dir) == before, "{args:?} changed a file");
    }
}

/// Runs `nkc args` under `ulimit -f 1` (1 KiB): a larger write fails with EFBIG.
fn nkc_file_limited(args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg("ulimit -f 1; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_nkc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("bash runs")
}

/// The writers, each replacing an existing file with more than 1 KiB under `ulimit -f 1`: exit 1
/// with a clear message, the original byte-identical and no temporary file left.
#[test]
fn a_failed_write_leaves_the_original() {
    let dir = setup("ulimit");
    let k = dir.join("k.nk");
    let prog = dir.join("k.s");
    let out = dir.join("out.txt");
    let outdir = dir.join("outputs");
    std::fs::create_dir_all(&outdir).unwrap();
    std::fs::write(outdir.join("c.npy"), "the original c.npy").unwrap();
    std::fs::write(&out, "the original").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["compile", s(&k), "--emit", "isa", "-o", s(&out)],
        vec!["run", s(&k), "--trace", s(&out)],
        vec!["run", s(&k), "--output", s(&outdir)],
        vec!["compare", s(&k), "--svg", s(&out)],
        vec!["sim", s(&prog), "--trace", s(&out)],
        vec!["sim", s(&prog), "--output", s(&outdir)],
    ];
    let before = (snapshot(&dir), snapshot(&outdir));
    for args in &cases {
        let o = nkc_file_limited(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot write") && stderr(&o).contains("too large"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            (snapshot(&dir), snapshot(&outdir)) == before,
            "{args:?} changed a file or left one"
        );
    }
}

/// `suggest --write` on a kernel it rewrites, under `ulimit -f 1`: the kernel is byte-identical.
#[test]
fn a_failed_suggest_write_leaves_the_kernel() {
    let dir = scratch("nothing-lost", "suggest");
    let k = dir.join("rmsnorm.nk");
    let mut text = std::fs::read_to_string("examples/rmsnorm.nk").unwrap();
    // More than the 1 KiB the limit lets through.
    text += &"# padding so that the rewritten file passes 1 KiB\n".repeat(30);
    std::fs::write(&k, &text).unwrap();
    let before = snapshot(&dir);
    let o = nkc_file_limited(&["suggest", s(&k), "--write"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
    assert!(snapshot(&dir) == before, "the kernel changed");
    // Without the limit it is rewritten (through a link, which stays one).
    let link = dir.join("link.nk");
    std::os::unix::fs::symlink("rmsnorm.nk", &link).unwrap();
    let o = nkc(&["suggest", s(&link), "--write"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_ne!(std::fs::read_to_string(&k).unwrap(), text);
}

/// A target that is a symbolic link stays a link, its file written; a target's mode is kept.
#[test]
fn links_and_modes_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let dir = setup("links");
    let k = dir.join("k.nk");
    let real = dir.join("real.txt");
    let link = dir.join("link.txt");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o604)).unwrap();
    std::os::unix::fs::symlink("real.txt", &link).unwrap();
    let o = nkc(&["compile", s(&k), "-o", s(&link)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let written = std::fs::read_to_string(&real).unwrap();
    assert!(written.contains("kernel k("), "{written}");
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o604);
    // `--output DIR` keeps the mode of an existing array, and a new file gets the usual one.
    let outdir = dir.join("out");
    std::fs::create_dir_all(&outdir).unwrap();
    std::fs::write(outdir.join("c.npy"), "old").unwrap();
    std::fs::set_permissions(outdir.join("c.npy"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = nkc(&[
        "run",
        s(&k),
        "--output",
        s(&outdir),
        "--trace",
        s(&dir.join("t.json")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&outdir.join("c.npy")), 0o640);
    // A new file gets what `File::create` gives one (0o666 under the umask).
    std::fs::write(dir.join("plain.txt"), "").unwrap();
    assert_eq!(mode(&dir.join("t.json")), mode(&dir.join("plain.txt")));
    let c = nkc::npy::read_npy(&outdir.join("c.npy")).expect("a whole .npy file");
    assert_eq!(c.shape, [128, 64]);
}

/// A device or a pipe named as an output is written in place, never replaced: `-o /dev/stdout`
/// prints the program, and `-o /dev/null` (run as root in CI) leaves `/dev/null` a device. A
/// rename over `/dev/null` once turned it into a regular file that collected later commands'
/// output and fed it to every reader of `/dev/null` (a `rustc -` among them).
#[cfg(unix)]
#[test]
fn devices_are_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = setup("devices");
    let k = dir.join("k.nk");
    let file = dir.join("k2.s");
    let o = nkc(&["compile", s(&k), "--emit", "isa", "-o", s(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = nkc(&["compile", s(&k), "--emit", "isa", "-o", "/dev/stdout"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        o.stdout,
        std::fs::read(&file).unwrap(),
        "`-o /dev/stdout` prints what `-o FILE` writes"
    );
    let is_device =
        || std::fs::symlink_metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device());
    if !is_device() {
        eprintln!("/dev/null is no device on this machine: its check is skipped");
        return;
    }
    let cases: Vec<Vec<&str>> = vec![
        vec!["compile", s(&k), "-o", "/dev/null"],
        vec!["run", s(&k), "--trace", "/dev/null"],
        vec!["compare", s(&k), "--svg", "/dev/null"],
    ];
    for args in &cases {
        let o = nkc(args);
        let kept = is_device();
        if !kept {
            // Put the device back before failing, so that the machine stays usable.
            let c = std::ffi::CString::new("/dev/null").unwrap();
            let _ = std::fs::remove_file("/dev/null");
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        }
        assert!(kept, "{args:?} replaced /dev/null");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}

//! Issue 30, hostile Penguin IR (`.pir`) and the backend's rings: one regression test per item.
//! Each runs the binary under the 2 GiB address-space cap of [`common::nkc_capped`] and asserts
//! exit code 1 with the diagnostic's code and message, or exit 0 with the interpreter's bits
//! (`--check`). The ring-offset kernels also live in `tests/pir`, where the corpus test
//! (`tests/backend.rs`) runs them on every path.

mod common;

use common::{nkc_capped, scratch, stderr, stdout};
use std::path::Path;
use std::process::Output;

/// Writes `text` as `dir/name` and returns the path as a string for the command line.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the scratch directory is writable");
    path.to_str().expect("UTF-8 temporary path").to_string()
}

/// Asserts exit code 1 and that stderr holds every one of `needles`; returns stderr.
fn fails_with(o: &Output, needles: &[&str], what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{what}: expected exit code 1, got {:?}\n{err}",
        o.status
    );
    for n in needles {
        assert!(err.contains(n), "{what}: no `{n}` in\n{err}");
    }
    err
}

/// A straight-line kernel: load a tile, reduce its rows (max), scale the tile by the row maxima,
/// store it. `edit` rewrites the text (the hostile change).
fn base_kernel(edit: impl Fn(String) -> String) -> String {
    edit("kernel k(x) -> (y) {
  tensor x: hbm f32[128, 512] input
  tensor y: hbm f32[128, 512] output
  tensor t: sbuf f32[128, 512] local
  tensor m: sbuf f32[128, 1] local
  tensor r: sbuf f32[128, 512] local
  stmt {
    t[0 +: 128, 0 +: 512] = load.dma x[0 +: 128, 0 +: 512]
  }
  stmt {
    m[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]
  }
  stmt {
    r[0 +: 128, 0 +: 512] = tensor_tensor.dve(op=multiply) t[0 +: 128, 0 +: 512], m[0 +: 128, 0 +: 1]
  }
  stmt {
    y[0 +: 128, 0 +: 512] = store.dma r[0 +: 128, 0 +: 512]
  }
}
"
    .to_string())
}

/// The kernel as given runs bit-exact: the other tests' edits are what they test.
#[test]
fn the_base_kernel_runs_to_the_interpreters_bits() {
    let dir = scratch("hostile", "base");
    let f = write(&dir, "k.pir", &base_kernel(|s| s));
    let o = nkc_capped(&["run", &f, "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("bit for bit"), "{}", stdout(&o));
}

/// Item 1: a read at an offset that only means its value modulo the ring's slots (`lhs{k + 1}`,
/// `lhs{k - 3}`, `lhs{k - (2^32 - 1)}` on a ring of 2; `rhs{k - 1}` on a ring of 1) gives the
/// interpreter's bits on every path that deepens rings (the emergent carry across executions
/// gave other bits, exit 0).
#[test]
fn ring_reads_at_any_offset_keep_the_interpreters_bits() {
    for f in [
        "tests/pir/ring_offset_plus_one.pir",
        "tests/pir/ring_offset_minus_three.pir",
        "tests/pir/ring_offset_minus_huge.pir",
        "tests/pir/ring_one_slot_read_behind.pir",
    ] {
        for p in ["emergent", "default", "auto"] {
            let o = nkc_capped(&["run", f, "--check", "--pipeline", p]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{f} --pipeline {p}: {}",
                stderr(&o)
            );
            assert!(stdout(&o).contains("bit for bit"), "{f} --pipeline {p}");
        }
    }
}

/// Item 2: IR that certainly reads an element nothing wrote is a verifier error (E0051) at the
/// instruction, on every command and path: it was an internal error of the interpreter under
/// `--check`, and exit 0 with whatever the simulator's memory held without it.
#[test]
fn a_read_of_unwritten_memory_does_not_verify() {
    let dir = scratch("hostile", "unwritten");
    // The reduce writes the first 64 partitions of `m`; the multiply (line 14) reads all 128.
    let text = base_kernel(|s| {
        s.replace(
            "m[0 +: 128, 0 +: 1] = reduce.dve(op=max) t[0 +: 128, 0 +: 512]",
            "m[0 +: 64, 0 +: 1] = reduce.dve(op=max) t[0 +: 64, 0 +: 512]",
        )
    });
    let f = write(&dir, "k.pir", &text);
    for args in [
        vec!["check", &f],
        vec!["run", &f],
        vec!["run", &f, "--check"],
        vec!["run", &f, "--pipeline", "emergent"],
        vec!["run", &f, "--engine", "interp"],
        vec!["compile", &f],
    ] {
        let o = nkc_capped(&args);
        fails_with(
            &o,
            &["E0051", "`m`", "element [64, 0]", "k.pir:14:"],
            &format!("{args:?}"),
        );
    }
    // In a loop: the store of the first iteration reads `t` before its load (the two swapped).
    let looped = "kernel k(x) -> (y) {
  tensor x: hbm f32[256, 8] input
  tensor y: hbm f32[256, 8] output
  tensor t: sbuf f32[128, 8] local
  loop r in 0..2 sequential {
    stmt {
      y[128*r +: 128, 0 +: 8] = store.dma t[0 +: 128, 0 +: 8]
    }
    stmt {
      t[0 +: 128, 0 +: 8] = load.dma x[128*r +: 128, 0 +: 8]
    }
  }
}
";
    let f = write(&dir, "loop.pir", looped);
    let o = nkc_capped(&["run", &f]);
    fails_with(
        &o,
        &["E0051", "`t`", "element [0, 0]", "loop.pir:7:"],
        "loop",
    );
    // In order, it runs to the interpreter's bits: the check is about the order, not the tensor.
    let ordered = looped.replace(
        "      y[128*r +: 128, 0 +: 8] = store.dma t[0 +: 128, 0 +: 8]\n    }\n    stmt {\n      t[0 +: 128, 0 +: 8] = load.dma x[128*r +: 128, 0 +: 8]",
        "      t[0 +: 128, 0 +: 8] = load.dma x[128*r +: 128, 0 +: 8]\n    }\n    stmt {\n      y[128*r +: 128, 0 +: 8] = store.dma t[0 +: 128, 0 +: 8]",
    );
    assert_ne!(ordered, looped);
    let f = write(&dir, "ordered.pir", &ordered);
    let o = nkc_capped(&["run", &f, "--check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Item 3: an op on an engine the machine cannot run it on (`reduce` on `pool`) is E0051, not a
/// program the backend's own ISA check refuses.
#[test]
fn a_reduce_on_pool_does_not_verify() {
    let dir = scratch("hostile", "pool");
    let f = write(
        &dir,
        "k.pir",
        &base_kernel(|s| s.replace("reduce.dve", "reduce.pool")),
    );
    for cmd in ["check", "run"] {
        let o = nkc_capped(&[cmd, &f]);
        fails_with(&o, &["E0051", "reduce", "GpSimd"], cmd);
    }
}

/// Item 4: an SBUF tensor of `2^62` columns does not verify (E0051): its byte count is past SBUF,
/// and computed without wrapping (it made the allocator overlap buffers).
#[test]
fn a_tensor_past_its_memory_does_not_verify() {
    let dir = scratch("hostile", "huge");
    let huge = base_kernel(|s| {
        s.replace(
            "tensor r: sbuf f32[128, 512] local",
            "tensor r: sbuf f32[128, 4611686018427387904] local",
        )
    });
    let f = write(&dir, "k.pir", &huge);
    for args in [vec!["check", &f], vec!["run", &f, "--check"]] {
        let o = nkc_capped(&args);
        fails_with(&o, &["E0051", "`r`", "bytes per partition"], args[0]);
    }
    // An HBM tensor of 2^64 elements or more: past the limit too, not a wrapped product.
    let hbm = base_kernel(|s| {
        s.replace(
            "tensor x: hbm f32[128, 512] input",
            "tensor x: hbm f32[4294967296, 4294967296] input",
        )
    });
    let f = write(&dir, "hbm.pir", &hbm);
    fails_with(
        &nkc_capped(&["check", &f]),
        &["E0051", "`x`", "elements"],
        "HBM",
    );
}

/// Item 7: a ring of 65,536 slots does not fit SBUF (E0051) instead of making the interpreter
/// allocate 4 GiB.
#[test]
fn a_ring_past_its_memory_does_not_verify() {
    let text = std::fs::read_to_string("tests/pir/ring_offset_plus_one.pir")
        .expect("the corpus file exists")
        .replace(
            "tensor lhs: sbuf f32[128, 128] local block[k: 2]",
            "tensor lhs: sbuf f32[128, 128] local block[k: 65536]",
        );
    assert!(text.contains("block[k: 65536]"));
    let dir = scratch("hostile", "ring");
    let f = write(&dir, "k.pir", &text);
    let o = nkc_capped(&["run", &f, "--check", "--pipeline", "none"]);
    fails_with(&o, &["E0051", "`lhs`", "65536 slots"], "ring of 65536");
    // A PSUM ring of 9 banks: PSUM has 8.
    let text = text
        .replace("block[k: 65536]", "block[k: 2]")
        .replace(
            "tensor acc: psum f32[128, 512] local",
            "tensor acc: psum f32[128, 512] local block[n: 9]",
        )
        .replace("acc[0 +: 128, 0 +: 512]", "acc{n}[0 +: 128, 0 +: 512]");
    let f = write(&dir, "psum.pir", &text);
    let o = nkc_capped(&["check", &f]);
    fails_with(&o, &["E0051", "`acc`", "9 PSUM banks"], "PSUM ring");
}

/// Item 5: a tile privatised per sibling loop beside a tensor that already has the copy's name
/// (`t.1`) gets a name the verifier accepts (it was `t.1'`, an internal error).
#[test]
fn a_privatised_tile_gets_a_name_that_verifies() {
    let f = "tests/pir/privatised_name_taken.pir";
    for p in ["emergent", "default"] {
        let o = nkc_capped(&["run", f, "--check", "--pipeline", p]);
        assert_eq!(o.status.code(), Some(0), "--pipeline {p}: {}", stderr(&o));
        assert!(stdout(&o).contains("bit for bit"), "--pipeline {p}");
    }
}

/// Item 6: the emergent unroll leaves PSUM room for every copy's PSUM tiles, so a kernel that
/// runs on `none` runs on `emergent` (it unrolled into 10 banks: E0502).
#[test]
fn the_emergent_path_fits_its_psum_plan() {
    let f = "tests/pir/unrolled_psum_tiles.pir";
    for p in ["none", "emergent"] {
        let o = nkc_capped(&["run", f, "--check", "--pipeline", p]);
        assert_eq!(o.status.code(), Some(0), "--pipeline {p}: {}", stderr(&o));
        assert!(stdout(&o).contains("bit for bit"), "--pipeline {p}");
    }
}

/// Round three, item 2: a read through a ring slot that nothing has written yet (the stage-1
/// add of the pipelined `tensor_add` moved to the first iteration, where `ta{i - 1}` is slot 1,
/// written only in iteration 1), and a read under a predicate of a tile whose only write is
/// predicated later, are E0051 on every command, as the interpreter's E0900 would be at run time.
/// The same IR with its guards as the pipeliner wrote them verifies and runs to the interpreter's
/// bits.
#[test]
fn a_read_of_a_ring_slot_not_yet_written_does_not_verify() {
    let dir = scratch("hostile", "ring-unwritten");
    let good = std::fs::read_to_string("filetests/pir/roundtrip/tensor_add_pipelined.pir")
        .expect("the corpus file exists");
    let f = write(&dir, "good.pir", &good);
    let o = nkc_capped(&["run", &f, "--check", "--pipeline", "none"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let early = good.replace(
        "stmt stage=1 if i >= 1 && i < 17",
        "stmt stage=1 if i >= 0 && i < 17",
    );
    assert_ne!(early, good, "the corpus file changed");
    let f = write(&dir, "early.pir", &early);
    for args in [
        vec!["check", &f],
        vec!["run", &f],
        vec!["run", &f, "--check", "--pipeline", "emergent"],
        vec!["run", &f, "--engine", "interp"],
        vec!["compile", &f, "--emit", "isa"],
    ] {
        fails_with(
            &nkc_capped(&args),
            &["E0051", "`ta`", "early.pir:18:"],
            &format!("{args:?}"),
        );
    }
    // A store in every iteration of a tile loaded only from the second one on.
    let later = "kernel k(x) -> (y) {
  tensor x: hbm f32[256, 8] input
  tensor y: hbm f32[256, 8] output
  tensor t: sbuf f32[128, 8] local
  loop r in 0..2 sequential {
    stmt if r >= 1 {
      t[0 +: 128, 0 +: 8] = load.dma x[128*r +: 128, 0 +: 8]
    }
    stmt {
      y[128*r +: 128, 0 +: 8] = store.dma t[0 +: 128, 0 +: 8]
    }
  }
}
";
    let f = write(&dir, "later.pir", later);
    fails_with(
        &nkc_capped(&["run", &f, "--check"]),
        &["E0051", "`t`", "element [0, 0]", "later.pir:10:"],
        "later",
    );
}

//! Kernels that import helpers from other files of their package, as the kernels of NKI's
//! libraries do (`from ..utils.kernel_helpers import div_ceil`): relative and absolute imports,
//! a package's submodule as an attribute, a helper that reads its own module's globals,
//! `PYTHONPATH`, `enum.Enum` classes and `nl.NKIObject` bases, and the diagnostics of an
//! imported file, placed in that file. Each package is written to a scratch directory; its
//! kernel's outputs are compared bit for bit with the same computation written in one file.

mod common;

use common::{checked_run, nkc, scratch, stderr, stdout};
use nkc::pipeline::PipelineMode;
use std::path::{Path, PathBuf};

/// Writes `files` (path relative to `root`, text) under a fresh scratch directory; its path.
fn package(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = scratch("package-imports", name);
    for (rel, text) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a file has a directory")).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    root
}

/// The outputs of `kernel` of `file`, checked on `default` (seed 3), bit patterns by name.
fn outputs(file: &Path, kernel: &str) -> Vec<(String, Vec<u32>)> {
    let f = file.to_str().expect("UTF-8 path");
    let r = checked_run(f, Some(kernel), PipelineMode::Default, 3);
    (r.outputs.into_iter())
        .map(|o| (o.name, o.array.data.iter().map(|x| x.to_bits()).collect()))
        .collect()
}

const KERNEL: &str = "\
import nki
import nki.language as nl
from ..utils.helpers import scale_tile, TILE
from ..utils import modes
from pkg.utils.modes import Mode, Spec
from .. import utils


@nki.jit
def add_scaled(a: nl.hbm[nl.float32, 256, 512], b: nl.hbm[nl.float32, 256, 512]):
    out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    spec = Spec(256 // TILE)
    assert modes.Mode.TRIPLE.value == 2 and Mode.DOUBLE.name == \"DOUBLE\"
    for i in nl.affine_range(spec.n):
        ta = nl.load(a[i * TILE:(i + 1) * TILE, :])
        tb = nl.load(b[i * TILE:(i + 1) * TILE, :])
        s = scale_tile(ta, Mode.DOUBLE)
        t = utils.helpers.scale_tile(tb, Mode.TRIPLE)
        nl.store(out[i * TILE:(i + 1) * TILE, :], value=nl.add(s, t))
    return out
";

const HELPERS: &str = "\
import nki.language as nl
from .consts import FACTORS
from .modes import Mode

TILE = 128


def factor(mode):
    # `FACTORS` is this module's global, not the kernel's.
    if mode == Mode.TRIPLE:
        return FACTORS[mode.value] + 0.0
    return FACTORS[mode.value]


def scale_tile(t, mode):
    return nl.multiply(t, factor(mode))
";

const MODES: &str = "\
from enum import Enum, auto
from nki.language import NKIObject


class Mode(Enum):
    DOUBLE = auto()
    TRIPLE = auto()


class Spec(NKIObject):
    def __init__(self, n):
        self.n = n
";

const ONE_FILE: &str = "\
import nki
import nki.language as nl


@nki.jit
def add_scaled(a: nl.hbm[nl.float32, 256, 512], b: nl.hbm[nl.float32, 256, 512]):
    out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        ta = nl.load(a[i * 128:(i + 1) * 128, :])
        tb = nl.load(b[i * 128:(i + 1) * 128, :])
        s = nl.multiply(ta, 2.0)
        t = nl.multiply(tb, 3.0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(s, t))
    return out
";

fn the_package(name: &str) -> PathBuf {
    package(
        name,
        &[
            ("pkg/__init__.py", ""),
            ("pkg/kernels/__init__.py", ""),
            ("pkg/kernels/add_scaled.py", KERNEL),
            ("pkg/utils/__init__.py", ""),
            ("pkg/utils/helpers.py", HELPERS),
            ("pkg/utils/consts.py", "FACTORS = {1: 2.0, 2: 3.0}\n"),
            ("pkg/utils/modes.py", MODES),
            ("one_file.py", ONE_FILE),
        ],
    )
}

/// Relative imports (`..utils.helpers`, `from .. import utils`), an absolute one found above the
/// kernel's file (`pkg.utils.modes`), a submodule as an attribute (`utils.helpers`), a helper
/// reading its own module's globals, an enum and an `NKIObject` class: the same arrays as the
/// kernel written in one file.
#[test]
fn a_kernel_runs_with_helpers_from_its_package() {
    let root = the_package("helpers");
    let got = outputs(&root.join("pkg/kernels/add_scaled.py"), "add_scaled");
    let want = outputs(&root.join("one_file.py"), "add_scaled");
    assert_eq!(got, want);
    assert!(
        got[0].1.iter().any(|&x| x != got[0].1[0]),
        "constant output"
    );
}

/// A library on `PYTHONPATH` (installed beside the kernel's own tree) resolves too; without it
/// the import names a module nkc does not have (an error where the kernel uses it).
#[test]
fn an_absolute_import_resolves_on_pythonpath() {
    let lib = the_package("pythonpath-lib");
    let user = package(
        "pythonpath-user",
        &[(
            "k.py",
            &KERNEL
                .replace("from ..utils.helpers", "from pkg.utils.helpers")
                .replace("from ..utils import", "from pkg.utils import")
                .replace("from .. import utils", "import pkg.utils as utils"),
        )],
    );
    let k = user.join("k.py");
    let run = |path: Option<&Path>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_nkc"));
        c.args(["run", k.to_str().unwrap(), "--check", "--json"]);
        match path {
            Some(p) => c.env("PYTHONPATH", p),
            None => c.env_remove("PYTHONPATH"),
        };
        c.output().expect("nkc runs")
    };
    let o = run(Some(&lib));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["checked"], true);
    let o = run(None);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("`module`"), "{}", stdout(&o));
}

/// A failed assertion in an imported helper is reported in the helper's file, at its line, with
/// its evaluated message, on the terminal and in JSON; a missing name of a found module is
/// Python's error (E0210).
#[test]
fn a_diagnostic_in_an_imported_file_is_placed_in_that_file() {
    let root = package(
        "diagnostic",
        &[
            (
                "lib/checks.py",
                "import nki.language as nl\n\n\ndef check_rows(n):\n    assert n % 128 == 0, f\"rows must be a multiple of 128, got {n}\"\n    return n // 128\n",
            ),
            (
                "lib/k.py",
                "import nki.language as nl\nfrom .checks import check_rows\n\n\ndef k(a: nl.hbm[nl.float32, 100, 64]):\n    out = nl.ndarray((100, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    n = check_rows(a.shape[0])\n    nl.store(out, value=nl.load(a))\n    return out\n",
            ),
            (
                "lib/missing.py",
                "import nki.language as nl\nfrom .checks import check_columns\n\n\ndef k(a: nl.hbm[nl.float32, 128, 64]):\n    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    nl.store(out, value=nl.load(a))\n    return out\n",
            ),
        ],
    );
    let k = root.join("lib/k.py");
    let k = k.to_str().unwrap();
    let o = nkc(&["check", k, "--color", "never"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("error[E0203]"), "{err}");
    assert!(err.contains("checks.py:5:12"), "{err}");
    assert!(err.contains("got 100"), "{err}");
    let o = nkc(&["check", k, "--message-format", "json"]);
    let d: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let span = &d["spans"][0];
    assert!(span["file"].as_str().unwrap().ends_with("checks.py"), "{d}");
    assert_eq!(span["line_start"], 5, "{d}");
    let m = root.join("lib/missing.py");
    let o = nkc(&["check", m.to_str().unwrap(), "--color", "never"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("error[E0210]") && err.contains("has no attribute `check_columns`"),
        "{err}"
    );
}

//! The other files of a kernel's package: the Python modules a kernel imports from its own
//! directory tree (`from ..utils.kernel_helpers import div_ceil`, `from nkilib.core.utils import
//! x`), as values ([`ModuleData`]) and as source text ([`SourceMap`]).
//!
//! nkc reads one file per run, but a kernel of a library calls helpers from the library's other
//! files, which Python imports. The driver names the kernel's file ([`set_kernel_file`]); an
//! import the checker resolves to a `.py` file of that tree (`package_imports`) is parsed with its
//! spans placed past the end of the kernel's file and every file before it, so a span names one
//! file and a byte in it: [`locate`] turns it back into the file and the local range, for the
//! diagnostics. This file owns that map and the per-thread state; it sits on the values layer
//! (`mod.rs`), since a module is a value (`Py::Package`).
//!
//! Invariants: the files of the map are disjoint ranges, in increasing order, each starting after
//! the kernel's file; a file keeps its range for the whole run (a second check of the kernel,
//! after a failed compile, parses it at the same place, so its spans are the same).

use super::Bound;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A module of the kernel's package: its dotted name, its file, and its globals once its
/// statements have run. A package directory without `__init__.py` is a module with no file and no
/// globals: only its submodules are attributes.
#[derive(Debug)]
pub(crate) struct ModuleData {
    pub name: String,
    /// The `.py` file (`__init__.py` for a package), or the directory of a namespace package.
    pub path: PathBuf,
    /// Whether `path` is a directory (a package: its files are submodules).
    pub is_package: bool,
    /// The globals of the module; unset while its statements run (an import cycle sees none).
    pub globals: OnceCell<HashMap<String, Bound>>,
}

/// One imported file of the run: its path as given, its text, and where its spans start.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: Rc<str>,
    /// The span offset of the file's first byte.
    pub base: usize,
}

/// The kernel's file and the files it imports, for one run.
#[derive(Default)]
pub(crate) struct SourceMap {
    /// The kernel's file; `None` when the front end was given text alone (no import resolves).
    pub root: Option<PathBuf>,
    /// Where the next file's spans start.
    pub next_base: usize,
    pub files: Vec<SourceFile>,
    /// The modules evaluated by the current check (by file), cleared by each check of a module
    /// so that each reports its own diagnostics.
    pub modules: HashMap<PathBuf, Rc<ModuleData>>,
}

thread_local! {
    pub(crate) static SOURCES: RefCell<SourceMap> = RefCell::new(SourceMap::default());
}

/// Names the file being compiled, of `len` bytes: imports of its package resolve from its
/// directory. Starts a new run (forgets the files of the previous one).
pub fn set_kernel_file(path: &Path, len: usize) {
    SOURCES.with(|s| {
        *s.borrow_mut() = SourceMap {
            root: Some(path.to_path_buf()),
            next_base: len + 2,
            ..SourceMap::default()
        }
    });
}

/// Forgets the kernel's file: imports of other files no longer resolve (the front end given text
/// alone).
pub fn clear_kernel_file() {
    SOURCES.with(|s| *s.borrow_mut() = SourceMap::default());
}

/// The imported file holding span offset `at`, if any (offsets inside the kernel's file have none).
pub fn locate(at: usize) -> Option<SourceFile> {
    SOURCES.with(|s| {
        let s = s.borrow();
        s.files
            .iter()
            .rev()
            .find(|f| f.base <= at && at <= f.base + f.text.len())
            .cloned()
    })
}

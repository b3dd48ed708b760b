//! Imports of the kernel's own package, as Python runs them: `from ..utils.kernel_helpers import
//! div_ceil`, `from nkilib.core.utils.allocator import SbufManager`, `from . import helpers`,
//! `import pkg.mod as m`. The module is the `.py` file (or the package directory, with its
//! `__init__.py`) found from the importing file's directory: a relative import goes up one
//! directory per dot after the first; an absolute one is found in the nearest directory above
//! the importing file that holds its first name (the package root Python's path would hold),
//! else in a directory of `PYTHONPATH` (a library installed beside the kernel's, as Python's path
//! has it).
//!
//! The file is parsed (its spans past the kernel's file, `package_data`), its module-level
//! statements run once per check (`module_items::check_items`), and the import binds the name
//! of those globals it asks for, or the submodule, or the module. A function of such a module
//! runs with its own module's globals, as Python's functions do (`FuncVal::package`), so the
//! helpers it calls in turn resolve there. Modules nkc models itself (`nki`, `numpy`, `math`,
//! ...) and modules not found in the tree keep their old meaning (a name nkc does not know, a
//! diagnostic where a kernel uses it).
//!
//! Invariants: a module is evaluated at most once per check (an import cycle sees the module
//! without globals, as Python sees a partly initialised module); an import reads only files of
//! the directories above the importing file and of `PYTHONPATH`.

use super::module_items;
use super::package_data::{ModuleData, SourceFile, SOURCES};
use super::pyvalue::Py;
use super::{Checker, Value};
use crate::ast::Span;
use crate::codes;
use crate::diagnostic::Error;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// First names of modules nkc models itself: never looked for on disk.
const MODELLED: [&str; 6] = ["nki", "neuronxcc", "numpy", "math", "functools", "operator"];

impl Checker<'_> {
    /// The value `import` binds for `path` (`from a.b import c` is `[a, b, c]`, a relative module's
    /// dots its first name), when its module is a file of the kernel's package; `None` otherwise
    /// (or after a diagnostic, with `stopped` set).
    pub(super) fn import_from_package(&mut self, path: &[String], at: &Span) -> Option<Value> {
        let (dir, rest) = self.package_base(path)?;
        if let Some((last, parent)) = rest.split_last() {
            if let Some(m) = self.module_at(&dir, parent, path, at) {
                return self.package_attr(&m, last, at);
            }
        }
        let m = self.module_at(&dir, rest, path, at)?;
        Some(Value::py(Py::Package(m)))
    }

    /// `m.name` of a module of the package: one of its globals, else its submodule `name`.
    pub(super) fn package_attr(
        &mut self,
        m: &Rc<ModuleData>,
        name: &str,
        at: &Span,
    ) -> Option<Value> {
        if let Some(b) = m.globals.get().and_then(|g| g.get(name)) {
            return Some(b.value.clone());
        }
        if m.is_package {
            let dir = package_dir(m);
            let sub = format!("{}.{name}", m.name);
            if let Some(s) = self.load_module(&dir, &[name.to_string()], sub, at) {
                return Some(Value::py(Py::Package(s)));
            }
        }
        self.raise(
            codes::PYTHON_ERROR,
            if m.globals.get().is_none() && !m.is_package {
                format!(
                    "module `{}` is still being imported (an import cycle) and has no `{name}` yet",
                    m.name
                )
            } else {
                format!("module `{}` has no attribute `{name}`", m.name)
            },
            at,
        );
        None
    }

    /// The directory a module path starts from, and the names after that directory; `None` for
    /// a module nkc models or one not found above the importing file.
    fn package_base<'p>(&self, path: &'p [String]) -> Option<(PathBuf, &'p [String])> {
        let from = self.importing_dir()?;
        let first = path.first()?;
        if first.starts_with('.') {
            let mut dir = from;
            for _ in 1..first.len() {
                dir = dir.parent()?.to_path_buf();
            }
            return Some((dir, &path[1..]));
        }
        if MODELLED.contains(&first.as_str()) {
            return None;
        }
        // Python's path: the directories above the importing file (the package's root among
        // them), then those of `PYTHONPATH` (a library installed beside the kernel's).
        let holds = |a: &Path| a.join(first).is_dir() || a.join(format!("{first}.py")).is_file();
        if let Some(found) = from.ancestors().find(|a| holds(a)) {
            return Some((found.to_path_buf(), path));
        }
        let extra = std::env::var_os("PYTHONPATH")?;
        let found = std::env::split_paths(&extra).find(|a| holds(a))?;
        Some((found, path))
    }

    /// The directory of the file whose code runs: the module of the running function, else the
    /// kernel's file.
    fn importing_dir(&self) -> Option<PathBuf> {
        match &self.package {
            Some(m) => Some(package_dir(m))
                .filter(|_| m.is_package)
                .or_else(|| m.path.parent().map(Path::to_path_buf)),
            None => SOURCES.with(|s| {
                let s = s.borrow();
                s.root.as_ref()?.parent().map(Path::to_path_buf)
            }),
        }
    }

    /// The module `dir/names...` (a file `names.py`, a package directory, or `dir` itself when
    /// `names` is empty), evaluated; `None` when there is no such file.
    fn module_at(
        &mut self,
        dir: &Path,
        names: &[String],
        path: &[String],
        at: &Span,
    ) -> Option<Rc<ModuleData>> {
        let shown = display_name(path, names.len());
        self.load_module(dir, names, shown, at)
    }

    /// Finds, parses and runs the module `dir/names...` once per check.
    fn load_module(
        &mut self,
        dir: &Path,
        names: &[String],
        name: String,
        at: &Span,
    ) -> Option<Rc<ModuleData>> {
        let mut p = dir.to_path_buf();
        for n in names {
            p.push(n);
        }
        let (file, is_package) = if p.is_dir() {
            let init = p.join("__init__.py");
            if init.is_file() {
                (Some(init), true)
            } else {
                (None, true)
            }
        } else {
            let f = p.with_extension("py");
            if !f.is_file() {
                return None;
            }
            (Some(f), false)
        };
        let key = file.clone().unwrap_or_else(|| p.clone());
        if let Some(m) = SOURCES.with(|s| s.borrow().modules.get(&key).cloned()) {
            return Some(m);
        }
        let m = Rc::new(ModuleData {
            name,
            path: key.clone(),
            is_package,
            globals: OnceCell::new(),
        });
        SOURCES.with(|s| s.borrow_mut().modules.insert(key.clone(), m.clone()));
        let Some(file) = file else {
            // A namespace package: no statements, only submodules.
            let _ = m.globals.set(Default::default());
            return Some(m);
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                self.raise(
                    codes::PYTHON_ERROR,
                    format!("cannot read `{}`, imported here: {e}", file.display()),
                    at,
                );
                return None;
            }
        };
        let source = place(&file, text);
        // The file's text at its base: a comment line of `base - 1` bytes and a newline first, so
        // that every span the parser makes is the file's offset in the run's source map.
        let padded = format!("#{}\n{}", " ".repeat(source.base - 2), source.text);
        let (module, syntax) = crate::parser::parse(&padded);
        if !syntax.is_empty() {
            self.errors.extend(syntax);
            self.error(Error::new(
                codes::PYTHON_ERROR,
                format!("the module `{}`, imported here, has syntax errors", m.name),
                at.clone(),
            ));
            self.stopped = true;
            return None;
        }
        let globals = module_items::check_items(&module, self.errors, Some(m.clone()));
        let _ = m.globals.set(globals);
        Some(m)
    }
}

/// The directory whose files are submodules of package `m`.
fn package_dir(m: &ModuleData) -> PathBuf {
    if m.path.is_dir() {
        m.path.clone()
    } else {
        m.path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
    }
}

/// The dotted name of the module made of the first names of `path` that lead to `len` names
/// after its base (`..utils.helpers`).
fn display_name(path: &[String], len: usize) -> String {
    match path.first() {
        Some(dots) if dots.starts_with('.') => {
            let end = (1 + len).min(path.len());
            format!("{dots}{}", path[1..end].join("."))
        }
        _ => path[..len.min(path.len())].join("."),
    }
}

/// The file's place in the run's source map: where it was placed before, or after the last.
fn place(file: &Path, text: String) -> SourceFile {
    SOURCES.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(f) = s.files.iter().find(|f| f.path == file) {
            return f.clone();
        }
        let base = s.next_base.max(2);
        let f = SourceFile {
            path: file.to_path_buf(),
            text: Rc::from(text),
            base,
        };
        s.next_base = base + f.text.len() + 2;
        s.files.push(f.clone());
        f
    })
}

//! The module-level pass: before any kernel is checked, the module's own statements run (imports,
//! constants, `if __name__ == ...` blocks, `class` statements) and every module-level `def` is
//! bound; the result is the globals every kernel sees.
//!
//! Invariant: a module-level statement that fails only on names nkc does not know (host code:
//! `torch`, a helper's `dtype=torch.float32`) or on Python nkc's compile-time Python does not
//! run (`np.random.rand(...)`) binds its names to [`Py::Unrun`] values, whose
//! diagnostics are reported where a kernel uses them, never otherwise; it sits on the statements
//! layer (`mod.rs`).

use super::error::CheckError;
use super::pyvalue::Py;
use super::stmts::Flow;
use super::{reserved, Bound, Checker, Value, RESERVED};
use crate::ast;
use crate::diagnostic::Error;
use std::collections::HashMap;

/// Runs the module's statements (imports, constants, `if __name__ == ...` blocks) and binds
/// every module-level function; the result is the globals the kernels see.
/// `package` is the module of the kernel's package being imported (`package_imports`), `None`
/// for the kernel's own file.
pub(super) fn check_items(
    module: &ast::Module,
    errors: &mut Vec<Error>,
    package: Option<std::rc::Rc<super::package_data::ModuleData>>,
) -> HashMap<String, Bound> {
    let empty = HashMap::new();
    let mut checker = Checker::new(&empty, errors);
    checker.package = package;
    let mut out = Vec::new();
    // The functions are bound first, so that a statement after a `def` may name it
    // (`k = nki.jit(k, mode="simulation")`, as NKI's tests rebind their kernels).
    for k in &module.kernels {
        checker.bind_module_function(k);
    }
    for item in &module.items {
        let traced = match &item.kind {
            ast::StmtKind::Assign { value, .. } | ast::StmtKind::Expr(value) => {
                checker.traced(value)
            }
            _ => false,
        };
        let is_call = matches!(&item.kind, ast::StmtKind::Expr(e) if matches!(e.kind, ast::ExprKind::Call { .. }));
        if traced
            || is_call
                && checker.traced(match &item.kind {
                    ast::StmtKind::Expr(e) => e,
                    _ => unreachable!("checked to be an expression statement"),
                })
        {
            checker.error(CheckError::BadModuleItem {
                at: item.span.clone(),
            });
            continue;
        }
        if let ast::StmtKind::Assign {
            target: ast::Target::Name(id),
            ..
        } = &item.kind
        {
            if RESERVED.contains(&id.name.as_str()) {
                checker.error(reserved(id));
                continue;
            }
        }
        let mark = checker.errors.len();
        let unknown_mark = checker.unknown_module_attrs;
        let unrun_mark = (checker.unrun_uses, checker.unrun_undefined);
        let flow = checker.exec_block(std::slice::from_ref(item), &mut out, false);
        // A statement that failed only on names nkc does not know (an instance of a skipped
        // `class`, an attribute of a host module such as `os.environ` or `logging.disable`)
        // defers its diagnostics to the kernels that use the names it binds: the kernels do not
        // depend on it otherwise. One that binds no name (`logging.disable(logging.OFF)`) must
        // have failed only on host modules' attributes, and is then dropped. A Python error (a
        // division by zero, a failed call, an unknown `nl` operation) stays an error of the
        // module.
        let mut names = Vec::new();
        stmt_binds(item, &mut names);
        let failed = &checker.errors[mark..];
        // Uses of names bound by statements deferred before (a test class's instance:
        // `TestCase().test_x()`) are host code's failures too, each counted once.
        let unknown_names = failed
            .iter()
            .filter(|e| e.code == crate::codes::UNDEFINED_NAME)
            .count()
            .saturating_sub(checker.unrun_undefined - unrun_mark.1);
        let unknown_attrs =
            checker.unknown_module_attrs - unknown_mark + (checker.unrun_uses - unrun_mark.0);
        // Host code nkc's compile-time Python does not run (`a = np.random.rand(128, 512)`,
        // the inputs a `__main__`-less example makes at module level) is deferred the same way:
        // the failures not counted above are all of that kind (a deferred use reports the
        // same code, so the two counts may overlap).
        let unsupported = failed
            .iter()
            .filter(|e| e.code == crate::codes::PYTHON_UNSUPPORTED)
            .count();
        let counted = unknown_names + unknown_attrs;
        let only_host = counted <= failed.len() && failed.len() - counted <= unsupported;
        // A class is Python nkc may not run whole (a test class beside the kernels): whatever
        // failed in it is reported where a kernel uses the class.
        let is_class = matches!(item.kind, ast::StmtKind::Class(_));
        let deferrable = if is_class {
            true
        } else if names.is_empty() {
            unknown_attrs == failed.len() || (unknown_names == 0 && only_host)
        } else {
            counted == failed.len() || only_host
        };
        if !failed.is_empty() && deferrable {
            let errs = checker.errors.split_off(mark);
            for id in names {
                let v = Value::py(Py::Unrun(errs.clone()));
                checker.bind(&id.name, v, id.span.clone());
            }
            checker.stopped = false;
            continue;
        }
        if matches!(flow, Flow::Return(..)) {
            checker.error(CheckError::BadModuleItem {
                at: item.span.clone(),
            });
        }
        if checker.stopped {
            break;
        }
    }
    for k in &module.kernels {
        checker.bind_module_function(k);
    }
    checker.scopes.pop().unwrap_or_default()
}

/// The names a module-level statement binds (its assignment targets, loop variables, imports and
/// `def`s, in its nested blocks too).
fn stmt_binds<'t>(s: &'t ast::Stmt, out: &mut Vec<&'t ast::Ident>) {
    match &s.kind {
        ast::StmtKind::Assign { target, .. } | ast::StmtKind::AugAssign { target, .. } => {
            target_names(target, out)
        }
        ast::StmtKind::MultiAssign { targets, .. } => {
            targets.iter().for_each(|t| target_names(t, out))
        }
        ast::StmtKind::For { target, body, .. } => {
            target_names(target, out);
            body.iter().for_each(|s| stmt_binds(s, out));
        }
        ast::StmtKind::While { body, .. } => body.iter().for_each(|s| stmt_binds(s, out)),
        ast::StmtKind::If { body, orelse, .. } => {
            body.iter().chain(orelse).for_each(|s| stmt_binds(s, out))
        }
        ast::StmtKind::Import(items) => out.extend(items.iter().map(|(_, id)| id)),
        ast::StmtKind::Def(k) => out.push(&k.name),
        ast::StmtKind::Class(c) => out.push(&c.name),
        ast::StmtKind::Recovered { binds } => out.extend(binds.iter()),
        ast::StmtKind::Expr(_)
        | ast::StmtKind::Return(_)
        | ast::StmtKind::Pass
        | ast::StmtKind::Opaque(_)
        | ast::StmtKind::Break
        | ast::StmtKind::Continue
        | ast::StmtKind::Assert { .. }
        | ast::StmtKind::Raise(_)
        | ast::StmtKind::Declare(_)
        | ast::StmtKind::Error => {}
    }
}

/// The names an assignment target binds.
fn target_names<'t>(t: &'t ast::Target, out: &mut Vec<&'t ast::Ident>) {
    match t {
        ast::Target::Name(id) => out.push(id),
        ast::Target::Tuple { names, .. } => out.extend(names.iter()),
        ast::Target::Seq { items, .. } => items.iter().for_each(|t| target_names(t, out)),
        ast::Target::Starred(id) => out.push(id),
        ast::Target::Subscript { .. } | ast::Target::Attribute { .. } => {}
    }
}

impl Checker<'_> {
    /// Binds a module-level `def`. A default that fails only on names nkc does not know (a host
    /// helper's `dtype=torch.float32`) defers its diagnostics to the kernels that use the
    /// function, as a module-level assignment's do.
    fn bind_module_function(&mut self, k: &ast::Kernel) {
        let mark = self.errors.len();
        let unknown_mark = self.unknown_module_attrs;
        if let Some(f) = self.make_function(std::rc::Rc::new(k.clone())) {
            self.bind(&k.name.name, f, k.name.span.clone());
            return;
        }
        let failed = &self.errors[mark..];
        let unknown_names = failed
            .iter()
            .filter(|e| e.code == crate::codes::UNDEFINED_NAME)
            .count();
        if !failed.is_empty()
            && unknown_names + (self.unknown_module_attrs - unknown_mark) == failed.len()
        {
            let errs = self.errors.split_off(mark);
            let v = Value::py(Py::Unrun(errs));
            self.bind(&k.name.name, v, k.name.span.clone());
            self.stopped = false;
        }
    }
}

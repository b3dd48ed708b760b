//! The kernel as a whole: its signature (tensor parameters `nl.hbm[DTYPE, ROWS, COLS]` or
//! annotated, scalar parameters with their defaults, type hints that are not shapes), its body,
//! and its `return` of the output arrays, into a [`CheckedKernel`].
//!
//! Invariant: a [`CheckedKernel`] comes out of [`Checker::kernel`] with every parameter a tensor
//! or a compile-time value and every returned name an HBM array the kernel allocated; the
//! statements of the body are `stmts`'s and `exec`'s.

use super::error::CheckError;
use super::pyvalue::Py;
use super::stmts::Flow;
use super::{reserved, CTensor, CheckedKernel, Checker, TileVal, Value, RESERVED};
use crate::ast::{self, Expr, ExprKind, Span, StmtKind};
use crate::diagnostic::Error;
use penguin::{Memory, TensorKind};
use std::collections::HashMap;

/// A parameter annotation that is only a hint: `nt.tensor[...]`, `nki.tensor`, `nl.ndarray`, or a
/// Python type; the parameter's shape then comes from the run, as for an untyped one.
pub(crate) fn is_hint(ty: &Expr) -> bool {
    let base = match &ty.kind {
        ExprKind::Subscript { value, .. } => value,
        _ => ty,
    };
    match &base.kind {
        ExprKind::Attribute { value, attr } => {
            !(matches!(&value.kind, ExprKind::Name(m) if m == "nl") && attr.name == "hbm")
        }
        ExprKind::Name(_) | ExprKind::Str(_) => true,
        _ => false,
    }
}

/// `int`, `float`, `bool`, `str`: the annotation of a scalar parameter.
pub(crate) fn scalar_hint(ty: &Expr) -> Option<&'static str> {
    match &ty.kind {
        ExprKind::Name(n) => match n.as_str() {
            "int" => Some("integer"),
            "float" => Some("float"),
            "bool" => Some("boolean"),
            "str" => Some("string"),
            _ => None,
        },
        _ => None,
    }
}

impl Checker<'_> {
    /// Checks one kernel: binds its parameters, then runs its body.
    pub(super) fn kernel(&mut self, k: &ast::Kernel) -> CheckedKernel {
        let mut params = Vec::new();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        self.kernel_frame = true;
        for p in &k.params {
            if let Some(name) = p.name.name.strip_prefix("**") {
                // `**kwargs`: the run's scalar arguments (`--arg padding=...`) that name no
                // other parameter, as the dict Python's call would bind (in name order).
                let named: Vec<&str> = k.params.iter().map(|q| q.name.name.as_str()).collect();
                let mut extra: Vec<(&String, &crate::ScalarArg)> = (self.args.iter())
                    .flat_map(|a| a.iter())
                    .filter(|(n, _)| !named.contains(&n.as_str()))
                    .collect();
                extra.sort_by(|a, b| a.0.cmp(b.0));
                let items = extra
                    .into_iter()
                    .map(|(n, v)| {
                        let key = Value::py(Py::Str(n.clone()));
                        (key, self.scalar_arg_value(v, &p.name.span))
                    })
                    .collect();
                let dict = Value::py(Py::Dict(std::cell::RefCell::new(items)));
                self.bind(name, dict, p.name.span.clone());
                continue;
            }
            if p.name.name.starts_with('*') {
                continue;
            }
            if RESERVED.contains(&p.name.name.as_str()) {
                self.error(reserved(&p.name));
                continue;
            }
            if let Some(first) = seen.get(p.name.name.as_str()) {
                self.error(CheckError::DuplicateParam {
                    name: p.name.name.clone(),
                    first: first.clone(),
                    at: p.name.span.clone(),
                });
                continue;
            }
            seen.insert(&p.name.name, p.name.span.clone());
            if let Some(v) = self.args.and_then(|a| a.get(&p.name.name)) {
                // A scalar argument of the run (`--arg eps=1e-5`).
                let v = self.scalar_arg_value(v, &p.name.span);
                self.bind(&p.name.name, v, p.name.span.clone());
                continue;
            }
            if let Some(default) = &p.default {
                // `bias=None` is an optional tensor: a run that gives it a shape (`--shape`,
                // `--input`) makes it a tensor parameter, as one without a default is.
                let given_tensor = matches!(default.kind, ExprKind::None)
                    && self.specs.is_some_and(|s| s.contains_key(&p.name.name));
                if !given_tensor {
                    // A compile-time parameter: its default is its value.
                    let value = self.scalar_param(p, default);
                    self.bind(&p.name.name, value, p.name.span.clone());
                    continue;
                }
            }
            if let Some(hint) = p.ty.as_ref().and_then(scalar_hint) {
                self.error(
                    Error::new(
                        crate::codes::MISSING_SCALAR_ARG,
                        format!(
                            "the {hint} parameter `{}` has no default and no value",
                            p.name.name
                        ),
                        p.span.clone(),
                    )
                    .with_label("needs a value")
                    .with_help(format!("give it one: `--arg {}=VALUE`", p.name.name)),
                );
                self.bind(&p.name.name, Value::Error, p.name.span.clone());
                continue;
            }
            let value = match self.param_type(p) {
                Some((dtype, shape, dims)) => {
                    let t = self.new_tensor(CTensor {
                        name: p.name.name.clone(),
                        memory: Memory::Hbm,
                        dtype,
                        shape,
                        kind: TensorKind::Input,
                        span: p.name.span.clone(),
                    });
                    if dims.len() != 2 {
                        self.logical.insert(t, dims);
                    }
                    params.push(t);
                    Value::Param(t)
                }
                None => Value::Error,
            };
            self.bind(&p.name.name, value, p.name.span.clone());
        }
        self.unspecialised_note(k);

        // grid.rs: the run's launch grid, as loops around the body.
        let grid = self.specs.and_then(|s| s.grid.clone());
        self.open_grid(grid.as_deref(), &k.name.span);
        let mut body = Vec::new();
        let flow = self.exec_block(&k.body, &mut body, false);
        let body = self.close_grid(body, &k.name.span);
        self.check_guarded_reads(&body);
        let mut outputs = Vec::new();
        let broken = k
            .body
            .iter()
            .any(|s| matches!(s.kind, StmtKind::Error | StmtKind::Recovered { .. }));
        match flow {
            Flow::Return(v, span) => outputs = self.returns(v, &span),
            Flow::Stop => {}
            _ if self.stopped || broken || !self.missing.is_empty() || self.has_out_params() => {}
            _ => self.error(CheckError::NoReturn {
                kernel: k.name.name.clone(),
                at: k.name.span.clone(),
            }),
        }
        for &t in &outputs {
            self.tensors[t.as_u32() as usize].kind = TensorKind::Output;
        }
        // out_params.rs: the parameters stored into follow the returned arrays.
        self.finish_out_params(&body, &mut params, &mut outputs);
        // psum_banks.rs: no access to a PSUM array of several banks crosses a bank.
        self.check_psum_banks(&body);
        CheckedKernel {
            name: k.name.name.clone(),
            span: k.span.clone(),
            tensors: std::mem::take(&mut self.tensors),
            loops: std::mem::take(&mut self.loops),
            params,
            outputs,
            body,
            user_names: std::mem::take(&mut self.user_names),
            consts: std::mem::take(&mut self.consts),
            notes: std::mem::take(&mut self.notes),
            restored: std::mem::take(&mut self.tile_nd.restored),
            int_dtypes: std::mem::take(&mut self.tile_nd.int_dtypes),
            arrays: std::mem::take(&mut self.tile_nd.arrays),
        }
    }

    /// One diagnostic for all the parameters that need a shape from the run, instead of one each.
    fn unspecialised_note(&mut self, k: &ast::Kernel) {
        if self.missing.is_empty() {
            return;
        }
        let names: Vec<String> = self.missing.iter().map(|(n, _)| format!("`{n}`")).collect();
        let first = self.missing[0].1.clone();
        let example = self.missing[0].0.clone();
        let message = if names.len() == 1 {
            format!(
                "parameter {} has no type, and no shape was given for it",
                names[0]
            )
        } else {
            format!(
                "kernel `{}`: parameters {} have no type, and no shape was given for them",
                k.name.name,
                names.join(", ")
            )
        };
        let mut d = Error::new(crate::codes::UNSPECIALISED_PARAM, message, first)
            .with_label("a shape-generic input");
        for (_, span) in self.missing.iter().skip(1) {
            d.secondary.push((span.clone(), "shape-generic too".into()));
        }
        d.notes.push(
            "note: a kernel is specialised for the shapes of its inputs when it is run; the checks that do not depend on these shapes were run".to_string(),
        );
        d.notes.push(format!(
            "help: give each one `--input {example}=FILE.npy` or `--shape {example}=ROWSxCOLS` (with `--dtype`), `--arg {example}=VALUE` for a scalar, or write `{example}: nl.hbm[nl.float32, ROWS, COLS]`"
        ));
        self.error(d);
    }

    /// `name=default`: any compile-time Python value.
    fn scalar_param(&mut self, p: &ast::Param, default: &Expr) -> Value {
        if self.traced(default) {
            self.error(CheckError::DefaultNotConst {
                param: p.name.name.clone(),
                at: default.span.clone(),
            });
            return Value::Error;
        }
        match self.eval(default) {
            Some(
                Value::Iv(_) | Value::Tile(_) | Value::Param(_) | Value::Vec(_) | Value::Mask(_),
            ) => {
                self.error(CheckError::DefaultNotConst {
                    param: p.name.name.clone(),
                    at: default.span.clone(),
                });
                Value::Error
            }
            Some(v) => v,
            None => Value::Error,
        }
    }

    /// The shape a run gives an untyped parameter.
    fn param_spec(&mut self, p: &ast::Param) -> Option<(penguin::DType, [u64; 2], Vec<u64>)> {
        let name = &p.name.name;
        let Some(spec) = self.specs.and_then(|s| s.get(name)) else {
            self.missing.push((name.to_string(), p.span.clone()));
            return None;
        };
        let (dtype, shape) = (spec.dtype, spec.shape.clone());
        match super::nd::flatten(&shape) {
            Some(flat) => Some((dtype, flat, shape)),
            None => {
                self.error(CheckError::BadSpecShape {
                    name: name.to_string(),
                    shape: shape.clone(),
                    at: p.span.clone(),
                });
                None
            }
        }
    }

    /// `nl.hbm[DTYPE, ROWS, COLS]`, or the shape of the run's input for an untyped parameter.
    fn param_type(&mut self, p: &ast::Param) -> Option<(penguin::DType, [u64; 2], Vec<u64>)> {
        let Some(ty) = p.ty.as_ref().filter(|t| !is_hint(t)) else {
            return self.param_spec(p);
        };
        if let ExprKind::Subscript { value, indices } = &ty.kind {
            let is_hbm = matches!(&value.kind, ExprKind::Attribute { value: m, attr }
                if matches!(&m.kind, ExprKind::Name(n) if n == "nl") && attr.name == "hbm");
            if let (true, [ast::Index::Expr(d), ast::Index::Expr(r), ast::Index::Expr(c)]) =
                (is_hbm, indices.as_slice())
            {
                let dtype = self.dtype_of(d);
                let rows = self.dim(r);
                let cols = self.dim(c);
                let shape = [rows?, cols?];
                return Some((dtype?, shape, shape.to_vec()));
            }
        }
        if !matches!(ty.kind, ExprKind::Error) {
            self.error(CheckError::BadParamType {
                param: p.name.name.clone(),
                at: ty.span.clone(),
            });
        }
        None
    }

    /// The outputs a kernel's `return` gives: HBM arrays made by the kernel, whole.
    fn returns(&mut self, v: Value, span: &Span) -> Vec<penguin::Tensor> {
        let flat: Vec<Value> = match (&v, v.seq_items()) {
            (Value::Py(p), Some(items)) if matches!(**p, super::pyvalue::Py::Tuple(_)) => items,
            _ => vec![v.clone()],
        };
        if flat.is_empty() || matches!(v, Value::None) {
            self.error(CheckError::EmptyReturn { at: span.clone() });
            return Vec::new();
        }
        let mut outputs: Vec<(penguin::Tensor, Span)> = Vec::new();
        let items = std::mem::take(&mut self.return_items);
        let mut names = if items.len() == flat.len() {
            items.into_iter()
        } else {
            Vec::new().into_iter()
        };
        for item in flat {
            let (at, name) = names
                .next()
                .unwrap_or((span.clone(), "the value".to_string()));
            let span = &at;
            let bad = |this: &mut Self, what: &str| {
                this.error(CheckError::ReturnNotOutput {
                    name: name.clone(),
                    what: what.to_string(),
                    at: span.clone(),
                });
            };
            match item {
                Value::Tile(t) => {
                    let td = self.tensor(t.tensor).clone();
                    if td.kind == TensorKind::Input {
                        bad(self, "a parameter");
                    } else if td.kind == TensorKind::Const {
                        bad(self, "a constant (`nl.shared_constant`)");
                    } else if td.memory != Memory::Hbm {
                        bad(
                            self,
                            &format!("a tile in {}", td.memory.name().to_uppercase()),
                        );
                    } else if t != TileVal::whole(t.tensor, td.shape) {
                        bad(self, "a slice of an array");
                    } else if let Some((_, first)) = outputs.iter().find(|(x, _)| *x == t.tensor) {
                        let first = first.clone();
                        self.error(CheckError::DuplicateReturn {
                            name: name.clone(),
                            first,
                            at: span.clone(),
                        });
                    } else {
                        outputs.push((t.tensor, span.clone()));
                    }
                }
                Value::Param(_) => bad(self, "a parameter"),
                Value::Int(_) | Value::Iv(_) => bad(self, "an integer"),
                Value::Error => {}
                other => bad(self, &format!("a `{}`", other.type_name())),
            }
        }
        outputs.into_iter().map(|(t, _)| t).collect()
    }
}

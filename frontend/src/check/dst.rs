//! The `dst=` call style of newer NKI: an operation given its destination as a keyword writes
//! into it, as a statement of its own.
//!
//! - `nisa.dma_copy(dst=d, src=s)`: an HBM destination is `nl.store(d, value=s)`; an on-chip
//!   one is `d = nl.load(s)` written in place (`d[...] = nl.load(s)`), or, from an on-chip
//!   tile, `d[...] = nl.copy(s)`;
//! - any other operation, `nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)`, is
//!   `t[...] = nisa.tensor_tensor(data1=a, data2=b, op=nl.add)`, where `dst` is a tile name or a
//!   slice of one.
//!
//! - `nisa.memset(dst=t, value=v)` is a `memset` of `t`;
//! - `nisa.nc_matmul(dst=t, ...)` (also `nc_matmul(t, stationary, moving)`) adds into `t` when
//!   `accumulate=True`, or, by default, when `t` is a PSUM tile bound outside the innermost
//!   loop, or one an earlier matmul of the unrolled loops being run wrote
//!   ([`Checker::matmul_accumulates`]);
//! - `nisa.tensor_copy_predicated(src=s, dst=t, predicate=c)` is
//!   `t[...] = nl.where(c, s, t)`; `nisa.select_reduce(dst=t, predicate=c, on_true=a,
//!   on_false=b, reduce_res=r, reduce_op=op)` is `t[...] = nl.where(c, a, b)` then
//!   `r[...] = nisa.tensor_reduce(op, t, axis=1, keepdims=True)` (`reverse_pred=True` swaps the
//!   two values);
//! - `nisa.tensor_scalar_cumulative(dst=t, src=s, op0=f, op1=g, imm0=a, imm1=b)` is
//!   `x = nisa.tensor_scalar(s, f, a)` then `t[...] = nisa.tensor_tensor_scan(ones, x, init,
//!   nl.multiply, g)`: `t[i] = g(1 * t[i - 1], x[i])`, exact since `1 * v == v`; `init` is `b`
//!   with `reduce_cmd=load_reduce`, the last column of the scan just before with
//!   `reduce_cmd=reduce` (`acc_register.rs`), otherwise `g`'s identity (0, 1, -inf, +inf).
//!
//! - `nisa.dma_copy(dst=d, src=s)` with both in HBM: the DMA goes through SBUF, as nkc's DMAs
//!   do (they move HBM to SBUF or back): blocks of at most 128 rows and 64 KiB per partition, each
//!   loaded into a temporary tile and stored (`hbm_copy`).
//!
//! Each is rewritten to the statement it means and checked as that statement, so the rules of
//! stores, loads and slice assignment (and their diagnostics) apply unchanged.

use super::error::CheckError;
use super::operands::{Arg, Dest, Res, StmtCtx};
use super::pyvalue::Py;
use super::TileVal;
use super::{Checker, Value};
use crate::ast::{Expr, ExprKind, Ident, Keyword, Span};
use penguin::{AffineExpr, Memory, Op};

/// The partitions of SBUF: the rows of one block of an HBM-to-HBM copy.
const PMAX: u64 = 128;

/// `nl.NAME` as a callee, spanning `span`.
fn nl_func(name: &str, span: &Span) -> Expr {
    let nl = Expr {
        kind: ExprKind::Name("nl".to_string()),
        span: span.clone(),
    };
    Expr {
        kind: ExprKind::Attribute {
            value: Box::new(nl),
            attr: Ident {
                name: name.to_string(),
                span: span.clone(),
            },
        },
        span: span.clone(),
    }
}

fn call(func: Expr, args: Vec<Expr>, kwargs: Vec<Keyword>, span: &Span) -> Expr {
    Expr {
        kind: ExprKind::Call {
            func: Box::new(func),
            args,
            kwargs,
        },
        span: span.clone(),
    }
}

impl Checker<'_> {
    /// A call statement in the `dst=` style, checked as what it means. False when `e` is not one.
    pub(super) fn dst_call(&mut self, e: &Expr, cx: &mut StmtCtx) -> bool {
        let ExprKind::Call { func, args, kwargs } = &e.kind else {
            return false;
        };
        let is_dma = matches!(&func.kind, ExprKind::Attribute { value, attr }
            if attr.name == "dma_copy" && matches!(&value.kind, ExprKind::Name(m) if m == "nisa" || m == "nl"));
        let is_matmul =
            matches!(&func.kind, ExprKind::Attribute { attr, .. } if attr.name == "nc_matmul");
        let is_nisa = matches!(&func.kind, ExprKind::Attribute { value, .. }
            if matches!(&value.kind, ExprKind::Name(m) if m == "nisa"));
        // `nisa.activation(dst, op, data)`, `nisa.nc_matmul(dst, stationary, moving)`: NKI's newer
        // signatures put the destination first. A `nisa` call statement whose first argument is
        // a tile (or a slice of one) has no other meaning: its result would be unused.
        // `nisa.dma_copy(dst, src)`: NKI's current signature takes both positionally (the
        // older one was keyword-only), whatever memory the destination is in.
        let (dst_value, args): (Expr, &[Expr]) = match kwargs.iter().find(|k| k.name.name == "dst")
        {
            Some(dst) => (dst.value.clone(), args.as_slice()),
            None if is_dma && !args.is_empty() => (args[0].clone(), &args[1..]),
            None if is_nisa && !is_dma && args.first().is_some_and(|a| self.names_tile(a)) => {
                (args[0].clone(), &args[1..])
            }
            None => return false,
        };
        let mut rest: Vec<Keyword> = kwargs
            .iter()
            .filter(|k| k.name.name != "dst" && !(is_matmul && k.name.name == "accumulate"))
            .cloned()
            .collect();
        let base = match &func.kind {
            ExprKind::Attribute { attr, .. } => attr.name.as_str(),
            _ => "",
        };
        // The positional parameter after `dst` in NKI's signatures: `dma_copy(dst, src)`,
        // `memset(dst, value)`; it is checked as its keyword.
        let second = match base {
            "dma_copy" if is_dma => Some("src"),
            "memset" if is_nisa => Some("value"),
            _ => None,
        };
        let args = match (second, args.first()) {
            (Some(name), Some(a)) if !rest.iter().any(|k| k.name.name == name) => {
                rest.push(Keyword {
                    name: Ident {
                        name: name.to_string(),
                        span: a.span.clone(),
                    },
                    value: a.clone(),
                    span: a.span.clone(),
                });
                &args[1..]
            }
            _ => args,
        };
        // `dst=nl.ndarray(...)` written inline: a new tile nothing else names (a result the
        // kernel discards, as `activation_reduce`'s elementwise output), allocated as a bound
        // one would be.
        let inline = match &dst_value.kind {
            ExprKind::Call { func, .. } => matches!(
                self.peek_callee(func).as_ref().and_then(Value::as_py),
                Some(Py::Ref("nl", n)) if n == "ndarray"
            ),
            _ => false,
        };
        let target = if inline {
            match self.eval(&dst_value) {
                Some(Value::Tile(t)) => t,
                Some(_) => {
                    self.error(CheckError::ExpectedTile {
                        at: dst_value.span.clone(),
                    });
                    return true;
                }
                None => return true,
            }
        } else {
            let Some((target, _)) = self.view(&dst_value) else {
                return true;
            };
            target
        };
        if is_dma {
            let Some(src) = rest.iter().find(|k| k.name.name == "src") else {
                self.error(CheckError::DmaCopyNoSrc { at: e.span.clone() });
                return true;
            };
            if !args.is_empty() {
                self.error(CheckError::DmaCopyPositional {
                    at: args[0].span.clone(),
                });
                return true;
            }
            // dma_modes.rs: oob_mode= and dst_rmw_op= for the gathers and scatters emitted.
            let Some(modes) = self.dma_modes(&rest) else {
                return true;
            };
            let first = cx.insts.len();
            if self.tensor(target.tensor).memory == Memory::Hbm && self.names_hbm(&src.value) {
                self.hbm_copy(target, &src.value, e, cx);
            } else if self.tensor(target.tensor).memory == Memory::Hbm {
                let value = Keyword {
                    name: Ident {
                        name: "value".to_string(),
                        span: src.name.span.clone(),
                    },
                    value: src.value.clone(),
                    span: src.span.clone(),
                };
                let store = call(
                    nl_func("store", &func.span),
                    vec![dst_value.clone()],
                    vec![value],
                    &e.span,
                );
                self.store(&store, cx);
            } else {
                // From HBM a load; on chip to on chip (`dge_mode=hwdge` spills and reloads) the
                // elements move as a tensor copy moves them.
                let on_chip = self.names_tile(&src.value) && !self.names_hbm(&src.value);
                let name = if on_chip { "copy" } else { "load" };
                let moved = call(
                    nl_func(name, &func.span),
                    vec![src.value.clone()],
                    Vec::new(),
                    &e.span,
                );
                let dest = Dest::Into {
                    target,
                    accumulate: false,
                };
                self.tile_expr(&moved, cx, dest, true);
            }
            let from = first.min(cx.insts.len());
            self.apply_dma_modes(&modes, &mut cx.insts[from..]);
            return true;
        }
        if base == "tensor_scalar_cumulative" {
            self.cumulative(e, args, &rest, target, cx);
            return true;
        }
        if matches!(base, "tensor_copy_predicated" | "select_reduce") {
            self.predicated(base, e, args, &rest, &dst_value, target, cx);
            return true;
        }
        if base == "memset" && args.is_empty() {
            // `nisa.memset(dst=t, value=v)` (NKI's newer form): `t`'s shape.
            if let Some(v) = rest.iter().find(|k| k.name.name == "value") {
                if let Some(arg) = self.arg(&v.value, cx) {
                    match arg {
                        Arg::Scalar(value) => {
                            let t = self.tensor(target.tensor);
                            let res = Res {
                                shape: target.size,
                                memory: t.memory,
                                dtype: t.dtype,
                            };
                            let dest = Dest::Into {
                                target,
                                accumulate: false,
                            };
                            self.emit(cx, Op::Memset { value }, vec![], res, dest, &e.span);
                        }
                        Arg::Tile(_, at) => self.error(CheckError::OpFormUnsupported {
                            what: "`nisa.memset` of a tile".to_string(),
                            help: "pass one number as `value=`".to_string(),
                            at,
                        }),
                    }
                }
                return true;
            }
        }
        let accumulate = is_matmul && self.matmul_accumulates(kwargs, &dst_value, &target);
        let op = call((**func).clone(), args.to_vec(), rest, &e.span);
        let dest = Dest::Into { target, accumulate };
        self.tile_expr(&op, cx, dest, true);
        true
    }

    /// Whether `nisa.nc_matmul(dst=t, ...)` adds to `t` (NKI's `accumulate=`): as the keyword
    /// says when it is `True` or `False`; otherwise (`None`, absent) when `t` is a PSUM tile
    /// bound outside the innermost enclosing hardware loop, so that the loop's iterations add
    /// their products into it (the tiled matmul's contraction loop). A tile bound in the loop's
    /// own body, or a matmul outside every loop, is overwritten.
    fn matmul_accumulates(&mut self, kwargs: &[Keyword], dst: &Expr, target: &TileVal) -> bool {
        if let Some(k) = kwargs.iter().find(|k| k.name.name == "accumulate") {
            if !matches!(k.value.kind, ExprKind::None) {
                return self.condition(&k.value, "accumulate").unwrap_or(false);
            }
        }
        if self.tensor(target.tensor).memory != Memory::Psum {
            return false;
        }
        // In a loop that is unrolled (a Python loop, or a hardware loop the tracer runs per
        // iteration): the first matmul into the tile writes it, the later ones add to it, as
        // the hardware loop's iterations do.
        if !self.unrolled_matmuls.is_empty() {
            let seen = (self.unrolled_matmuls.iter()).any(|s| s.contains(&target.tensor));
            for s in &mut self.unrolled_matmuls {
                s.insert(target.tensor);
            }
            if seen {
                return true;
            }
        }
        let name = match &dst.kind {
            ExprKind::Name(n) => Some(n.as_str()),
            ExprKind::Subscript { value, .. } => match &value.kind {
                ExprKind::Name(n) => Some(n.as_str()),
                _ => None,
            },
            _ => None,
        };
        name.is_some_and(|n| self.bound_outside_loop(n))
    }

    /// `nisa.tensor_copy_predicated` and `nisa.select_reduce`, as `nl.where` into `dst` (and a
    /// row reduction of it into `reduce_res`).
    #[allow(clippy::too_many_arguments)]
    fn predicated(
        &mut self,
        base: &str,
        e: &Expr,
        args: &[Expr],
        rest: &[Keyword],
        dst: &Expr,
        target: TileVal,
        cx: &mut StmtCtx,
    ) {
        let copy = base == "tensor_copy_predicated";
        // NKI's positional order after `dst`, which is a keyword here.
        let order: &[&str] = if copy {
            &["src", "predicate"]
        } else {
            &["predicate", "on_true", "on_false"]
        };
        let get = |name: &str| -> Option<Expr> {
            rest.iter()
                .find(|k| k.name.name == name)
                .map(|k| k.value.clone())
                .or_else(|| {
                    order
                        .iter()
                        .position(|n| *n == name)
                        .and_then(|i| args.get(i).cloned())
                })
        };
        let known: &[&str] = if copy {
            &["src", "predicate", "reverse_pred", "dtype", "name"]
        } else {
            &[
                "predicate",
                "on_true",
                "on_false",
                "reduce_res",
                "reduce_cmd",
                "reduce_op",
                "reverse_pred",
                "dtype",
                "name",
            ]
        };
        if let Some(k) = rest.iter().find(|k| !known.contains(&k.name.name.as_str())) {
            self.error(CheckError::OpFormUnsupported {
                what: format!("`nisa.{base}` with `{}=`", k.name.name),
                help: "leave the keyword out: nkc models this operation without it".to_string(),
                at: k.span.clone(),
            });
            return;
        }
        if !copy {
            if let Some(cmd) = rest.iter().find(|k| k.name.name == "reduce_cmd") {
                let plain = matches!(&cmd.value.kind, ExprKind::Attribute { attr, .. }
                    if attr.name == "reset_reduce" || attr.name == "idle");
                if !plain {
                    self.error(CheckError::OpFormUnsupported {
                        what: format!(
                            "`nisa.{base}` with a `reduce_cmd` other than `reset_reduce`: an accumulation register carried from one instruction to the next"
                        ),
                        help: "reduce each result on its own (`reduce_cmd=nisa.reduce_cmd.reset_reduce`) and combine the partial results with nl.maximum / nl.add".to_string(),
                        at: cmd.span.clone(),
                    });
                    return;
                }
            }
        }
        let names: (&str, &str, &str) = if copy {
            ("predicate", "src", "")
        } else {
            ("predicate", "on_true", "on_false")
        };
        let (Some(pred), Some(on_true)) = (get(names.0), get(names.1)) else {
            let missing = if get(names.0).is_none() {
                names.0
            } else {
                names.1
            };
            self.error(CheckError::OpFormUnsupported {
                what: format!("`nisa.{base}` is missing its argument `{missing}`"),
                help: format!("pass `{missing}=`"),
                at: e.span.clone(),
            });
            return;
        };
        let on_false = if copy {
            dst.clone()
        } else if let Some(v) = get(names.2) {
            v
        } else {
            self.error(CheckError::OpFormUnsupported {
                what: format!("`nisa.{base}` is missing its argument `on_false`"),
                help: "pass `on_false=` (a value or a `[P, 1]` tile)".to_string(),
                at: e.span.clone(),
            });
            return;
        };
        let reverse = match rest.iter().find(|k| k.name.name == "reverse_pred") {
            Some(k) => match self.condition(&k.value, "reverse_pred") {
                Some(b) => b,
                None => return,
            },
            None => false,
        };
        let (a, b) = if reverse {
            (on_false, on_true)
        } else {
            (on_true, on_false)
        };
        let select = call(
            nl_func("where", &e.span),
            vec![pred, a, b],
            Vec::new(),
            &e.span,
        );
        let dest = Dest::Into {
            target,
            accumulate: false,
        };
        if self.tile_expr(&select, cx, dest, true).is_none() {
            return;
        }
        let Some(res) = rest.iter().find(|k| k.name.name == "reduce_res") else {
            return;
        };
        let Some((res_target, _)) = self.view(&res.value) else {
            return;
        };
        let op = match rest.iter().find(|k| k.name.name == "reduce_op") {
            Some(k) => k.value.clone(),
            None => nl_func("max", &e.span),
        };
        let kw = |name: &str, value: Expr| Keyword {
            name: Ident {
                name: name.to_string(),
                span: e.span.clone(),
            },
            value,
            span: e.span.clone(),
        };
        let lit = |kind: ExprKind| Expr {
            kind,
            span: e.span.clone(),
        };
        let nisa = Expr {
            kind: ExprKind::Attribute {
                value: Box::new(lit(ExprKind::Name("nisa".to_string()))),
                attr: Ident {
                    name: "tensor_reduce".to_string(),
                    span: e.span.clone(),
                },
            },
            span: e.span.clone(),
        };
        let reduce = call(
            nisa,
            Vec::new(),
            vec![
                kw("op", op),
                kw("data", dst.clone()),
                kw("axis", lit(ExprKind::Int(1))),
                kw("keepdims", lit(ExprKind::Bool(true))),
            ],
            &e.span,
        );
        let dest = Dest::Into {
            target: res_target,
            accumulate: false,
        };
        self.tile_expr(&reduce, cx, dest, true);
    }

    /// `nisa.tensor_scalar_cumulative` as a `tensor_scalar` and a `tensor_tensor_scan`.
    fn cumulative(
        &mut self,
        e: &Expr,
        args: &[Expr],
        rest: &[Keyword],
        target: TileVal,
        cx: &mut StmtCtx,
    ) {
        const ORDER: [&str; 6] = ["src", "op0", "op1", "imm0", "imm1", "reduce_cmd"];
        let get = |name: &str| -> Option<Expr> {
            rest.iter()
                .find(|k| k.name.name == name)
                .map(|k| k.value.clone())
                .or_else(|| {
                    ORDER
                        .iter()
                        .position(|n| *n == name)
                        .and_then(|i| args.get(i).cloned())
                })
                .filter(|v| !matches!(v.kind, ExprKind::None))
        };
        if let Some(k) = rest.iter().find(|k| {
            !ORDER.contains(&k.name.name.as_str())
                && k.name.name != "name"
                && k.name.name != "dtype"
        }) {
            self.error(CheckError::OpFormUnsupported {
                what: format!("`nisa.tensor_scalar_cumulative` with `{}=`", k.name.name),
                help: "leave the keyword out: nkc models this operation without it".to_string(),
                at: k.span.clone(),
            });
            return;
        }
        let span = &e.span;
        let missing = ["src", "op0", "op1", "imm0"]
            .into_iter()
            .find(|n| get(n).is_none());
        if let Some(m) = missing {
            self.error(CheckError::OpFormUnsupported {
                what: format!("`nisa.tensor_scalar_cumulative` is missing its argument `{m}`"),
                help: format!("pass `{m}=`"),
                at: span.clone(),
            });
            return;
        }
        let (src, op0, op1, imm0) = (
            get("src").expect("checked present above"),
            get("op0").expect("checked present above"),
            get("op1").expect("checked present above"),
            get("imm0").expect("checked present above"),
        );
        // A name bound to the command (a parameter: `reduce_cmd=reduce_cmd`) as the command.
        let cmd = get("reduce_cmd").map(|c| self.resolve_ref(&c));
        let cmd_name = match cmd.as_ref().map(|c| &c.kind) {
            None => "reset_reduce",
            Some(ExprKind::Attribute { attr, .. }) => {
                attr.name.rsplit('.').next().unwrap_or_default()
            }
            Some(_) => "",
        };
        let op1 = self.resolve_ref(&op1);
        let op0 = self.resolve_ref(&op0);
        let (op1_name, identity) = match op1.attr_of(&["nl", "np", "numpy"]) {
            Some("add") => ("add", 0.0),
            Some("multiply") => ("multiply", 1.0),
            Some("maximum" | "max") => ("maximum", f64::NEG_INFINITY),
            Some("minimum" | "min") => ("minimum", f64::INFINITY),
            _ => {
                self.error(CheckError::OpFormUnsupported {
                    what: "`nisa.tensor_scalar_cumulative` with this `op1`".to_string(),
                    help: "write op1=nl.add, nl.multiply, nl.maximum or nl.minimum".to_string(),
                    at: op1.span.clone(),
                });
                return;
            }
        };
        // acc_register.rs: `reduce` starts from the registers the scan just before left.
        let registers = self.acc_register(target.size[0]);
        let load = match cmd_name {
            "reset_reduce" | "idle" => false,
            "load_reduce" => true,
            "reduce" if registers.is_some() => false,
            _ => {
                self.error(CheckError::OpFormUnsupported {
                    what: "`nisa.tensor_scalar_cumulative` with a `reduce_cmd` that continues an accumulation register from an earlier instruction".to_string(),
                    help: "start each scan from a known value: `reduce_cmd=nisa.reduce_cmd.load_reduce, imm1=` the last column of the earlier result".to_string(),
                    at: cmd.as_ref().map_or(span.clone(), |c| c.span.clone()),
                });
                return;
            }
        };
        let what = "`nisa.tensor_scalar_cumulative`";
        let Some(x) = self.compute_tile(&src, cx, what) else {
            return;
        };
        let (Some(f), Some(g)) = (self.alu_op(&op0), self.alu_op(&nl_func(op1_name, span))) else {
            return;
        };
        let Some(a) = self.arg(&imm0, cx) else {
            return;
        };
        let src_arg = Arg::Tile(x.clone(), src.span.clone());
        let Some(stepped) = self.elementwise(f, src_arg, a, span, cx, Dest::Temp) else {
            return;
        };
        let col = [x.size[0], 1];
        let memset = |value: f32| Op::Memset { value };
        let init = if let (Some(r), "reduce") = (registers, cmd_name) {
            Some(r)
        } else if load {
            let Some(b) = get("imm1") else {
                self.error(CheckError::OpFormUnsupported {
                    what: "`reduce_cmd=load_reduce` without `imm1`".to_string(),
                    help: "pass the value to start from as `imm1=`".to_string(),
                    at: span.clone(),
                });
                return;
            };
            match self.arg(&b, cx) {
                Some(Arg::Scalar(v)) => {
                    self.emit(cx, memset(v), vec![], Res::sbuf(col), Dest::Temp, span)
                }
                Some(Arg::Tile(t, s)) if t.size == col && self.compute_src(&t, &s, what) => Some(t),
                Some(Arg::Tile(t, s)) => {
                    self.error(CheckError::OpFormUnsupported {
                        what: format!(
                            "{what}: `imm1` is {:?} but must be a value or [{}, 1]",
                            t.size, col[0]
                        ),
                        help: "give one value per partition".to_string(),
                        at: s,
                    });
                    None
                }
                None => None,
            }
        } else {
            self.emit(
                cx,
                memset(identity as f32),
                vec![],
                Res::sbuf(col),
                Dest::Temp,
                span,
            )
        };
        let Some(init) = init else {
            return;
        };
        let Some(ones) = self.emit(cx, memset(1.0), vec![], Res::sbuf(x.size), Dest::Temp, span)
        else {
            return;
        };
        let dest = Dest::Into {
            target,
            accumulate: false,
        };
        let op = Op::TensorTensorScan {
            op0: vocab::AluOp::Multiply,
            op1: g,
        };
        let scanned = self.emit(
            cx,
            op,
            vec![ones, stepped, init],
            Res::sbuf(x.size),
            dest,
            span,
        );
        if let Some(dst) = scanned {
            self.set_acc_register(&dst);
        }
    }

    /// Whether `e` is a name bound to a tile, or a subscript of one.
    pub(super) fn names_tile(&self, e: &Expr) -> bool {
        let name = match &e.kind {
            ExprKind::Name(n) => n,
            ExprKind::Subscript { value, .. } => match &value.kind {
                ExprKind::Name(n) => n,
                _ => return false,
            },
            _ => return false,
        };
        matches!(
            self.find(name).map(|b| &b.value),
            Some(super::Value::Tile(_))
        )
    }

    /// `e`, or the `nl.NAME` / `np.NAME` it names when it is a name bound to an operation of
    /// NKI's API (`op1=op1` for a kernel argument `op1=nl.add`).
    pub(super) fn resolve_ref(&mut self, e: &Expr) -> Expr {
        let ExprKind::Name(n) = &e.kind else {
            return e.clone();
        };
        let Some(super::Value::Py(p)) = self.find(n).map(|b| b.value.clone()) else {
            return e.clone();
        };
        match &*p {
            super::pyvalue::Py::Ref(module, name) => {
                let m = if *module == "nisa" { "nisa" } else { "nl" };
                let mut f = nl_func(name, &e.span);
                if let ExprKind::Attribute { value, .. } = &mut f.kind {
                    value.kind = ExprKind::Name(m.to_string());
                }
                f
            }
            _ => e.clone(),
        }
    }
}

/// The most bytes per partition one block of an HBM-to-HBM copy holds in SBUF.
const HBM_COPY_BLOCK_BYTES: u64 = 64 * 1024;

impl Checker<'_> {
    /// Whether `e` names an HBM tensor or a slice of one (a kernel parameter, an array made
    /// with `buffer=nl.shared_hbm`), directly or through a view of it (`x.reshape(shape)`,
    /// `x.reshape(shape)[...]`, which `view` reads as the same tensor).
    pub(super) fn names_hbm(&self, e: &Expr) -> bool {
        let root = match &e.kind {
            ExprKind::Name(n) => n,
            ExprKind::Subscript { value, .. } => {
                return !matches!(&value.kind, ExprKind::Subscript { .. }) && self.names_hbm(value);
            }
            ExprKind::Call { func, .. } => match &func.kind {
                ExprKind::Attribute { value, attr } if attr.name == "reshape" => {
                    return matches!(&value.kind, ExprKind::Name(_)) && self.names_hbm(value);
                }
                _ => return false,
            },
            _ => return false,
        };
        match self.find(root).map(|b| &b.value) {
            Some(super::Value::Param(t)) => self.tensor(*t).memory == Memory::Hbm,
            Some(super::Value::Tile(t)) => self.tensor(t.tensor).memory == Memory::Hbm,
            _ => false,
        }
    }

    /// `nisa.dma_copy(dst=d, src=s)` from HBM to HBM: each block of at most 128 rows and
    /// [`HBM_COPY_BLOCK_BYTES`] per partition loaded into a temporary SBUF tile, then stored. A
    /// copy that cannot be cut so (an access pattern, an N-D view larger than one block) is
    /// reported with what to write instead.
    fn hbm_copy(&mut self, dst: TileVal, src_e: &Expr, e: &Expr, cx: &mut StmtCtx) {
        let Some((src, _)) = self.view(src_e) else {
            return;
        };
        let dst = self.dma_view(dst);
        let src = self.dma_view(src);
        let shape = src.tile_shape();
        if shape != dst.tile_shape() {
            self.error(CheckError::StoreShape {
                value: shape,
                dest: dst.tile_shape(),
                value_at: src_e.span.clone(),
                dest_at: e.span.clone(),
                at: e.span.clone(),
            });
            return;
        }
        let st = self.tensor(src.tensor).clone();
        if matches!(self.tensor(dst.tensor).kind, penguin::TensorKind::Input) {
            // out_params.rs: a parameter written is an output of the kernel.
            self.write_param(dst.tensor, &e.span);
        }
        let elem = st.dtype.size_bytes().max(1);
        let cols_max = (HBM_COPY_BLOCK_BYTES / elem).max(1);
        let one_block = shape[0] <= PMAX && shape[1] <= cols_max;
        let plain = |t: &TileVal| t.view.is_none() && t.pattern.is_none() && t.indirect.is_none();
        let cuttable = plain(&src) && plain(&dst);
        if !one_block && !cuttable {
            self.error(CheckError::OpFormUnsupported {
                what: format!(
                    "an HBM-to-HBM `nisa.dma_copy` of a [{}, {}] view or access pattern",
                    shape[0], shape[1]
                ),
                help: "copy it through SBUF in blocks of at most 128 rows: `t = nl.load(src[...])` then `nl.store(dst[...], value=t)`".to_string(),
                at: e.span.clone(),
            });
            return;
        }
        let mut r = 0;
        while r < shape[0] {
            let rows = PMAX.min(shape[0] - r);
            let mut c = 0;
            while c < shape[1] {
                let cols = cols_max.min(shape[1] - c);
                let block = |t: &TileVal| -> Option<TileVal> {
                    if one_block {
                        return Some(t.clone());
                    }
                    let mut b = t.clone();
                    b.start[0] =
                        super::arith::lin(&t.start[0], 1, &AffineExpr::constant(r as i64), 1)?;
                    b.start[1] =
                        super::arith::lin(&t.start[1], 1, &AffineExpr::constant(c as i64), 1)?;
                    b.size = [rows, cols];
                    b.dims = None;
                    Some(b)
                };
                let (Some(from), Some(into)) = (block(&src), block(&dst)) else {
                    return;
                };
                let res = Res {
                    shape: [rows, cols],
                    memory: Memory::Sbuf,
                    dtype: st.dtype,
                };
                // indirect.rs: an indirect side (one block) is a gather or a scatter.
                let (op, srcs) = match from.indirect.clone() {
                    Some(idx) => (Op::Gather { skip_oob: false }, vec![from, *idx]),
                    None => (Op::Load, vec![from]),
                };
                let Some(tile) = self.emit(cx, op, srcs, res, Dest::Temp, &e.span) else {
                    return;
                };
                let (op, srcs) = match &into.indirect {
                    Some(idx) => (
                        Op::Scatter {
                            skip_oob: false,
                            accumulate: false,
                        },
                        vec![tile.operand(), idx.operand()],
                    ),
                    None => (Op::Store, vec![tile.operand()]),
                };
                cx.insts.push(super::CInst {
                    op,
                    dst: into.operand(),
                    srcs,
                    span: e.span.clone(),
                    engine: None,
                    mask: Vec::new(),
                    guards: Vec::new(),
                    implicit: false,
                });
                c += cols;
            }
            r += rows;
        }
    }
}

//! Lowering of a checked kernel to Penguin IR.
//!
//! The checks did all the thinking: a [`CheckedKernel`] already holds every tensor, loop and
//! instruction with resolved accesses. Lowering copies them into the maps of a
//! [`penguin::Function`], in order, so that the `i`-th checked tensor (axis) becomes
//! `Tensor::new(i)` (`Axis::new(i)`), and fills the side tables: source spans, statement
//! annotations. It also makes names unique within the function (`t`, `t.1`, `t.2`, ...), tensors
//! and induction variables sharing one namespace, and gives each instruction its op's default
//! engine class.
//!
//! Display names (`Function::tensor_display`, `axis_display`) are made here too, for the names
//! the user never wrote: a temporary is shown by the variable it was assigned to
//! (`CheckedKernel::user_names`), else by its operation and source position
//! (`nl.multiply@12:9`); a source name several tensors (or loops) share is shown with each one's
//! position (`t@14:5`), as its IR name (`t.1`) is made unique.

use crate::check::{CStmt, CStmtKind, CheckedKernel};
use penguin::{AxisData, Function, InstData, SrcSpan, Stmt, TensorData};
use std::collections::{HashMap, HashSet};

/// Lowers one checked kernel of the file `source`.
pub fn lower_kernel(k: &CheckedKernel, source: &str) -> Function {
    let mut f = Function::new(k.name.clone());
    let mut names = Names::default();
    let shared = shared_names(k);
    let ops = temp_ops(&k.body);
    let lines = Lines::new(source);
    // The kernel's inputs, then its outputs, take their names first: an output is known to its
    // caller by the name it is returned as, even when an earlier array bound to that name (and
    // then rebound, `out = nl.ndarray(...)` twice) was never an output.
    let mut given: Vec<Option<String>> = vec![None; k.tensors.len()];
    let rank = |kind: penguin::TensorKind| match kind {
        penguin::TensorKind::Input => 0,
        penguin::TensorKind::Output => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..k.tensors.len()).collect();
    order.sort_by_key(|&i| rank(k.tensors[i].kind));
    for i in order {
        let t = &k.tensors[i];
        given[i] = Some(names.unique(&t.name));
    }
    for (t, name) in k.tensors.iter().zip(given) {
        let id = f.tensors.push(TensorData {
            name: name.expect("every tensor is named in the pass above"),
            memory: t.memory,
            dtype: t.dtype,
            shape: t.shape.to_vec(),
            kind: t.kind,
            block: Vec::new(),
        });
        f.tensor_spans[id] = Some(SrcSpan::new(t.span.clone()));
        // A name the checker made (`_exp3`), not one the source writes (`_x = ...`).
        let temporary =
            t.name.starts_with('_') && source.get(t.span.clone()) != Some(t.name.as_str());
        f.tensor_display[id] = if temporary {
            Some(match k.user_names.get(&id) {
                Some(user) => user.clone(),
                None => format!(
                    "{}@{}",
                    temp_what(source, &t.span, ops.get(&id).copied()),
                    position(&lines, t.span.start)
                ),
            })
        } else if shared.contains(t.name.as_str()) {
            Some(format!("{}@{}", t.name, position(&lines, t.span.start)))
        } else {
            None
        };
    }
    for l in &k.loops {
        let id = f.axes.push(AxisData {
            iv_name: names.unique(&l.iv),
            kind: l.kind,
            lb: l.lb,
            ub: l.ub,
            attrs: l.attrs,
            body: Vec::new(),
        });
        f.axis_spans[id] = Some(SrcSpan::new(l.span.clone()));
        if shared.contains(l.iv.as_str()) {
            f.axis_display[id] = Some(format!("{}@{}", l.iv, iv_position(&lines, l)));
        }
    }
    f.params = k.params.clone();
    f.consts = k.consts.clone();
    f.notes = k.notes.clone();
    f.input_dims = k.restored.clone();
    f.int_dtypes = k.int_dtypes.clone();
    f.outputs = k.outputs.clone();
    f.body = lower_block(&mut f, &k.body);
    f
}

/// Lowers a block. A source statement whose instructions carry guards (a `mask=` on loop
/// indices alone) becomes one statement per run of instructions with equal guards, in order,
/// each guarded by its run's guards (the statement predicates every later stage honours).
fn lower_block(f: &mut Function, block: &[CStmt]) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(block.len());
    for s in block {
        let stmts = match &s.kind {
            CStmtKind::Insts(insts) => {
                let mut stmts = Vec::new();
                let runs: Vec<&[crate::check::CInst]> = if insts.is_empty() {
                    vec![&insts[..]]
                } else {
                    insts.chunk_by(|a, b| a.guards == b.guards).collect()
                };
                for run in runs {
                    let ids = run
                        .iter()
                        .map(|i| {
                            let id = f.insts.push(InstData {
                                op: i.op.clone(),
                                engine: i.engine.unwrap_or_else(|| i.op.default_engine()),
                                dst: i.dst.clone(),
                                srcs: i.srcs.clone(),
                                mask: i.mask.clone(),
                            });
                            f.inst_spans[id] = Some(SrcSpan::new(i.span.clone()));
                            id
                        })
                        .collect();
                    let stmt = f.add_inst_stmt(ids);
                    f.stmts[stmt].preds = run.first().map(|i| i.guards.clone()).unwrap_or_default();
                    stmts.push(stmt);
                }
                stmts
            }
            CStmtKind::Loop { axis, body } => {
                let children = lower_block(f, body);
                f.axes[*axis].body = children;
                vec![f.add_loop_stmt(*axis)]
            }
        };
        for stmt in stmts {
            f.annots[stmt] = s.annot;
            f.stmt_spans[stmt] = Some(SrcSpan::new(s.span.clone()));
            out.push(stmt);
        }
    }
    out
}

/// The source names of tensors and loops that more than one tensor or loop shares.
fn shared_names(k: &CheckedKernel) -> HashSet<&str> {
    let mut seen = HashSet::new();
    let mut shared = HashSet::new();
    let all = k.tensors.iter().map(|t| t.name.as_str());
    for name in all.chain(k.loops.iter().map(|l| l.iv.as_str())) {
        if !seen.insert(name) {
            shared.insert(name);
        }
    }
    shared
}

/// The operation that writes each tensor first (what a temporary holds).
fn temp_ops(block: &[CStmt]) -> HashMap<penguin::Tensor, &'static str> {
    let mut ops = HashMap::new();
    let mut walk = vec![block];
    while let Some(b) = walk.pop() {
        for s in b {
            match &s.kind {
                CStmtKind::Insts(insts) => {
                    for i in insts {
                        ops.entry(i.dst.tensor).or_insert(i.op.name());
                    }
                }
                CStmtKind::Loop { body, .. } => walk.push(body),
            }
        }
    }
    ops
}

/// What a temporary holds, as the user wrote it: the function a call names (`nl.multiply`), a
/// short expression as written (`x * 2`), else the operation's name.
fn temp_what(source: &str, span: &std::ops::Range<usize>, op: Option<&str>) -> String {
    let text = source.get(span.clone()).unwrap_or_default();
    let callee = text.split('(').next().unwrap_or_default().trim();
    let is_path = !callee.is_empty()
        && callee
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if is_path && text.len() > callee.len() {
        return callee.to_string();
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !flat.is_empty() && flat.chars().count() <= 24 {
        return flat;
    }
    op.unwrap_or("tmp").to_string()
}

/// `LINE:COLUMN` (1-based, columns in characters) of byte `offset` of `source`.
fn position(source: &Lines<'_>, offset: usize) -> String {
    let text = source.text;
    // (`source.get(..offset)`, or all of it when `offset` is not a character boundary.)
    let end = if text.is_char_boundary(offset) {
        offset
    } else {
        text.len()
    };
    let before = source.newlines.partition_point(|&k| k < end);
    let line_start = before.checked_sub(1).map_or(0, |k| source.newlines[k] + 1);
    let column = text[line_start..end].chars().count() + 1;
    format!("{}:{column}", before + 1)
}

/// A source text with the byte offsets of its newlines, so that each [`position`] costs a
/// binary search and its line's length, not the text before it.
struct Lines<'a> {
    text: &'a str,
    newlines: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let newlines = (text.bytes().enumerate())
            .filter(|&(_, b)| b == b'\n')
            .map(|(k, _)| k)
            .collect();
        Lines { text, newlines }
    }
}

/// The position of a loop's induction variable in its `for` header (of the header when the
/// name is not found there).
fn iv_position(source: &Lines<'_>, l: &crate::check::CLoop) -> String {
    let header = source.text.get(l.span.clone()).unwrap_or_default();
    let offset = header
        .strip_prefix("for ")
        .filter(|rest| rest.trim_start().starts_with(l.iv.as_str()))
        .map(|rest| l.span.start + 4 + (rest.len() - rest.trim_start().len()))
        .unwrap_or(l.span.start);
    position(source, offset)
}

/// Unique names: the first use of `t` is `t`, the next `t.1`, and so on.
#[derive(Default)]
struct Names {
    used: HashMap<String, u32>,
}

impl Names {
    fn unique(&mut self, base: &str) -> String {
        let mut n = self.used.get(base).copied().unwrap_or(0);
        loop {
            let candidate = if n == 0 {
                base.to_string()
            } else {
                format!("{base}.{n}")
            };
            n += 1;
            if !self.used.contains_key(&candidate) {
                self.used.insert(base.to_string(), n);
                self.used.entry(candidate.clone()).or_insert(1);
                return candidate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn names_are_made_unique() {
        let mut n = Names::default();
        assert_eq!(n.unique("t"), "t");
        assert_eq!(n.unique("t"), "t.1");
        assert_eq!(n.unique("t.2"), "t.2");
        assert_eq!(n.unique("t"), "t.3");
        assert_eq!(n.unique("u"), "u");
    }
}

//! Lowering of a checked kernel to Penguin IR.
//!
//! The checks did all the thinking: a [`CheckedKernel`] already holds every tensor, loop and
//! instruction with resolved accesses. Lowering copies them into the maps of a
//! [`penguin::Function`], in order, so that the `i`-th checked tensor (axis) becomes
//! `Tensor::new(i)` (`Axis::new(i)`), and fills the side tables: source spans, statement
//! annotations. It also makes names unique within the function (`t`, `t.1`, `t.2`, ...), tensors
//! and induction variables sharing one namespace, and gives each instruction its op's default
//! engine class.

use crate::check::{CStmt, CStmtKind, CheckedKernel};
use penguin::{AxisData, Function, InstData, SrcSpan, Stmt, TensorData};
use std::collections::HashMap;

/// Lowers one checked kernel.
pub fn lower_kernel(k: &CheckedKernel) -> Function {
    let mut f = Function::new(k.name.clone());
    let mut names = Names::default();
    for t in &k.tensors {
        let id = f.tensors.push(TensorData {
            name: names.unique(&t.name),
            memory: t.memory,
            dtype: t.dtype,
            shape: t.shape.to_vec(),
            kind: t.kind,
            block: Vec::new(),
        });
        f.tensor_spans[id] = Some(SrcSpan::new(t.span.clone()));
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
    }
    f.params = k.params.clone();
    f.outputs = k.outputs.clone();
    f.body = lower_block(&mut f, &k.body);
    f
}

fn lower_block(f: &mut Function, block: &[CStmt]) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(block.len());
    for s in block {
        let stmt = match &s.kind {
            CStmtKind::Insts(insts) => {
                let ids = insts
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
                f.add_inst_stmt(ids)
            }
            CStmtKind::Loop { axis, body } => {
                let children = lower_block(f, body);
                f.axes[*axis].body = children;
                f.add_loop_stmt(*axis)
            }
        };
        f.annots[stmt] = s.annot;
        f.stmt_spans[stmt] = Some(SrcSpan::new(s.span.clone()));
        out.push(stmt);
    }
    out
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

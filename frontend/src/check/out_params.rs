//! Outputs passed as parameters: `def k(a_tensor, b_tensor):` that writes `b_tensor` with
//! `nl.store` (or `nisa.dma_copy(dst=b_tensor[...], ...)`) and returns nothing, as the kernels of
//! NKI's API documentation are written for `nki.simulate_kernel`.
//!
//! A parameter is an output when the kernel stores into it. It is then an output of the kernel
//! (after the arrays of its `return`, in parameter order) and no longer an input: its shape still
//! comes from the run (`--input NAME=FILE.npy` or `--shape`), but its contents on entry are not
//! read, and `run --output DIR` writes it as `DIR/NAME.npy` like a returned array. Elements the
//! kernel does not write read back as zeros.
//!
//! Invariants:
//! - a parameter that is stored into is never also read (a load, or any instruction reading it):
//!   such a kernel is one diagnostic (E0145) at its first store, since nkc does not pass the
//!   parameter's initial contents through;
//! - after [`Checker::finish_out_params`], the kernel's `params` hold only tensors of kind
//!   `Input` and its `outputs` every tensor of kind `Output`.

use super::error::CheckError;
use super::{CStmt, CStmtKind, Checker};
use crate::ast::Span;
use penguin::{Tensor, TensorKind};

/// The parameters a kernel stores into, with the span of the first store into each.
#[derive(Clone, Debug, Default)]
pub(crate) struct OutParamsData {
    written: Vec<(Tensor, Span)>,
}

impl Checker<'_> {
    /// Records a store into parameter `t` at `at`: the parameter becomes an output.
    pub(super) fn write_param(&mut self, t: Tensor, at: &Span) {
        if !self.out_params.written.iter().any(|(x, _)| *x == t) {
            self.out_params.written.push((t, at.clone()));
        }
    }

    /// Turns the parameters the kernel stored into into outputs: moves them from `params` to the
    /// end of `outputs` (in parameter order), and reports each one the kernel also reads.
    pub(super) fn finish_out_params(
        &mut self,
        body: &[CStmt],
        params: &mut Vec<Tensor>,
        outputs: &mut Vec<Tensor>,
    ) {
        let written = std::mem::take(&mut self.out_params.written);
        if written.is_empty() {
            return;
        }
        let mut read = Vec::new();
        reads(body, &mut read);
        for &p in params.iter() {
            let Some((_, at)) = written.iter().find(|(t, _)| *t == p) else {
                continue;
            };
            if read.contains(&p) {
                self.error(CheckError::StoreIntoParam {
                    tensor: self.tensor(p).name.clone(),
                    at: at.clone(),
                });
                continue;
            }
            self.tensors[p.as_u32() as usize].kind = TensorKind::Output;
            outputs.push(p);
        }
        params.retain(|p| !outputs.contains(p));
    }

    /// Whether the kernel stores into one of its parameters (then it needs no `return`).
    pub(super) fn has_out_params(&self) -> bool {
        !self.out_params.written.is_empty()
    }
}

/// Every tensor the instructions of `body` read.
fn reads(body: &[CStmt], out: &mut Vec<Tensor>) {
    for s in body {
        match &s.kind {
            CStmtKind::Insts(insts) => {
                for i in insts {
                    out.extend(i.srcs.iter().map(|o| o.tensor));
                }
            }
            CStmtKind::Loop { body, .. } => reads(body, out),
        }
    }
}

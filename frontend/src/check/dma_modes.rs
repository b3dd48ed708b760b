//! The keywords of `nisa.dma_copy` beside `dst=` and `src=` that change what an indirect DMA
//! does, applied to the gathers and scatters the copy became:
//!
//! - `oob_mode=nisa.oob_mode.error` (the default) makes an index outside the indexed rows a
//!   run-time error; `oob_mode=nisa.oob_mode.skip` moves nothing for such a row (a gather leaves
//!   the destination row as it was, a scatter writes nothing there), negative indices included;
//! - `dst_rmw_op=np.add` (also `nl.add`) adds each row to the HBM row it names instead of
//!   overwriting it (an accumulating scatter); NKI allows it only with `oob_mode.error`;
//! - `dge_mode=`, `unique_indices=`, `engine=` and `name=` choose how the machine generates the
//!   descriptors, not what moves: nkc reads and ignores them.
//!
//! Invariants: the modes apply only to the gathers and scatters the one `dma_copy` statement
//! emitted ([`Checker::apply_dma_modes`] gets exactly those instructions); `dst_rmw_op` on a
//! copy that emitted no scatter, or any other keyword, is a diagnostic, never silently dropped.

use super::error::CheckError;
use super::{CInst, Checker};
use crate::ast::{Expr, ExprKind, Keyword, Span};
use penguin::Op;

/// What the keywords of one `nisa.dma_copy` ask of its indirect transfers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct DmaModes {
    /// `oob_mode=nisa.oob_mode.skip`.
    pub skip_oob: bool,
    /// `dst_rmw_op=np.add`.
    pub accumulate: bool,
    /// Where `dst_rmw_op=` was written, for a diagnostic when nothing can take it.
    rmw_at: Option<Span>,
}

/// The last name of a dotted value (`nisa.oob_mode.skip` → `skip`, `np.add` → `add`).
fn last_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Attribute { attr, .. } => Some(attr.name.as_str()),
        ExprKind::Name(n) => Some(n.as_str()),
        _ => None,
    }
}

impl Checker<'_> {
    /// The modes `kwargs` (the copy's keywords other than `dst=`) ask for; `None` after a
    /// diagnostic.
    pub(super) fn dma_modes(&mut self, kwargs: &[Keyword]) -> Option<DmaModes> {
        let mut modes = DmaModes::default();
        for k in kwargs {
            match k.name.name.as_str() {
                "src" | "dge_mode" | "unique_indices" | "engine" | "name" => {}
                "oob_mode" => match last_name(&k.value) {
                    Some("error") => modes.skip_oob = false,
                    Some("skip") => modes.skip_oob = true,
                    _ => {
                        self.error(CheckError::OpFormUnsupported {
                            what: "`nisa.dma_copy` with this `oob_mode`".to_string(),
                            help: "write `oob_mode=nisa.oob_mode.error` or `nisa.oob_mode.skip`"
                                .to_string(),
                            at: k.value.span.clone(),
                        });
                        return None;
                    }
                },
                "dst_rmw_op" => match &k.value.kind {
                    ExprKind::None => {}
                    _ if last_name(&k.value) == Some("add") => {
                        modes.accumulate = true;
                        modes.rmw_at = Some(k.value.span.clone());
                    }
                    _ => {
                        self.error(CheckError::OpFormUnsupported {
                            what: "`nisa.dma_copy` with this `dst_rmw_op`".to_string(),
                            help: "NKI's DMA adds only: write `dst_rmw_op=np.add`, or leave it out to overwrite".to_string(),
                            at: k.value.span.clone(),
                        });
                        return None;
                    }
                },
                other => {
                    self.error(CheckError::OpFormUnsupported {
                        what: format!("`nisa.dma_copy` with `{other}=`"),
                        help:
                            "`nisa.dma_copy` takes dst=, src=, oob_mode=, dst_rmw_op= and dge_mode="
                                .to_string(),
                        at: k.span.clone(),
                    });
                    return None;
                }
            }
        }
        if modes.accumulate && modes.skip_oob {
            self.error(CheckError::OpFormUnsupported {
                what: "`dst_rmw_op` with `oob_mode=nisa.oob_mode.skip`".to_string(),
                help: "NKI allows a read-modify-write DMA only with `oob_mode=nisa.oob_mode.error`"
                    .to_string(),
                at: modes
                    .rmw_at
                    .clone()
                    .unwrap_or_else(|| kwargs[0].span.clone()),
            });
            return None;
        }
        Some(modes)
    }

    /// Gives the gathers and scatters of `insts` (what one `dma_copy` emitted) their modes.
    pub(super) fn apply_dma_modes(&mut self, modes: &DmaModes, insts: &mut [CInst]) {
        let mut scattered = false;
        for ci in insts.iter_mut() {
            match &mut ci.op {
                Op::Gather { skip_oob } => *skip_oob = modes.skip_oob,
                Op::Scatter {
                    skip_oob,
                    accumulate,
                } => {
                    *skip_oob = modes.skip_oob;
                    *accumulate = modes.accumulate;
                    scattered = true;
                }
                _ => {}
            }
        }
        if let (true, false, Some(at)) = (modes.accumulate, scattered, &modes.rmw_at) {
            self.error(CheckError::OpFormUnsupported {
                what: "`dst_rmw_op` on a DMA that is not an indirect store".to_string(),
                help: "nkc's DMA adds only through an indirect destination (`dst=t[idx[i_p, 0], i_f]`); add on chip instead: `nl.store(dst, value=nl.add(nl.load(dst), src))`".to_string(),
                at: at.clone(),
            });
        }
    }
}

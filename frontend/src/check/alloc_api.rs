//! NKI's direct-allocation API (`neuronxcc.nki.compiler`, imported as `ncc`): the buffers a
//! kernel places by hand, accepted as the `buffer=` of `nl.ndarray` and the other allocations.
//!
//! `ncc.sbuf.mod_alloc(base_addr=..., num_free_tiles=(n,))`, `ncc.sbuf.alloc(func)`,
//! `ncc.psum.mod_alloc(base_bank=..., num_bank_tiles=(n,))`, `ncc.psum.alloc(func)` and
//! `ncc.sbuf.auto_alloc()` evaluate to an [`AllocData`]: the memory they ask for. The addresses,
//! banks and functions they give are not used: nkc allocates every tile itself, and the tile
//! lands in the memory asked for. `ncc.sbuf` and `ncc.psum` named as buffers are `nl.sbuf` and
//! `nl.psum`. The decorators of the API (`@ncc.skip_middle_end_transformations`,
//! `@ncc.force_auto_alloc`, ...) change nothing nkc does, and `directives=ncc.no_reorder()`
//! of a loop is accepted too.
//!
//! Invariant: a kernel that uses the API gets one note (`Checker::alloc_note`) saying the
//! addresses are nkc's; nothing else about its meaning changes, so `nkc run --check` compares
//! it with the interpreter as any kernel.

use super::pyvalue::{AllocData, Py};
use super::{Checker, Value};
use crate::ast::Span;
use penguin::Memory;

/// The memory of an `nki.compiler` buffer kind (`compiler.sbuf`, `compiler.psum`).
pub(crate) fn buffer_kind(path: &str) -> Option<Memory> {
    match path {
        "compiler.sbuf" => Some(Memory::Sbuf),
        "compiler.psum" => Some(Memory::Psum),
        _ => None,
    }
}

/// The functions of `nki.compiler` that return an unchanged argument or nothing a kernel needs:
/// decorators, and loop directives.
fn is_passive(path: &str) -> bool {
    matches!(
        path,
        "compiler.skip_middle_end_transformations"
            | "compiler.force_auto_alloc"
            | "compiler.enable_stack_allocator"
            | "compiler.no_reorder"
            | "compiler.tile_position"
    )
}

impl Checker<'_> {
    /// A call of `nki.compiler.PATH(...)`; `None` with no diagnostic when the path is not one of
    /// the API's (the caller reports it).
    pub(crate) fn call_compiler_api(
        &mut self,
        path: &str,
        pos: &[Value],
        at: &Span,
    ) -> Option<Option<Value>> {
        if is_passive(path) {
            // A decorator returns its function; a directive is a marker nkc does not need.
            return Some(Some(pos.first().cloned().unwrap_or(Value::None)));
        }
        let (kind, func) = path.rsplit_once('.')?;
        let memory = buffer_kind(kind)?;
        if !matches!(func, "mod_alloc" | "alloc" | "auto_alloc") {
            return None;
        }
        self.alloc_note(at);
        Some(Some(Value::py(Py::Alloc(AllocData {
            memory,
            api: format!("{}.{func}", kind.trim_start_matches("compiler.")),
        }))))
    }

    /// Records, once per kernel, that it places buffers by hand and nkc allocates them instead.
    pub(crate) fn alloc_note(&mut self, _at: &Span) {
        const NOTE: &str = "this kernel places buffers with NKI's direct-allocation API \
            (`nki.compiler.sbuf`/`psum`); nkc allocates every tile itself: the buffers are in \
            the memory asked for, at addresses of nkc's choosing";
        if !self.notes.iter().any(|n| n == NOTE) {
            self.notes.push(NOTE.to_string());
        }
    }
}

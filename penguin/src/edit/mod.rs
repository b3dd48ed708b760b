//! Editing Penguin IR: the one way passes copy statements, name what they make and put it in the
//! tree (Cranelift's `cursor.rs` and `FuncCursor`, for a loop tree).
//!
//! - [`subst`]: a [`Subst`] (loop variables to affine expressions, tensors to tensors) applied to a
//!   statement's subtree; [`bind_iv`] (a subtree as it runs in one iteration).
//! - [`copy`]: [`copy_stmt`], a deep copy under a substitution with every side table the
//!   [`Function`](crate::Function) keeps per statement, instruction and axis (spans, annotations,
//!   stage tags, display names); new loops and tensors like existing ones.
//! - [`names`]: the naming rule, `BASE.TAG` made unique with `_`.
//! - [`cursor`]: a [`Cursor`] at a statement, to insert before or after it or replace it.
//!
//! Who uses it: the pipeliner's extension and peeling (`pipeline::extend`, `pipeline::peel`), and
//! the backend's Penguin passes (`unroll`, `flatten`, `fold_zeros`, the emergent `nest`, `carry` and
//! `privatise`).
//!
//! Invariant: an edit keeps the function's entities consistent (every new entity has its side
//! tables), but not its meaning: a pass that moves or copies statements answers for the
//! iterations they run in. The driver verifies the function after every pass.

pub mod copy;
pub mod cursor;
pub mod names;
pub mod subst;

pub use copy::{copy_loop_header, copy_stmt, copy_stmt_tables, copy_tensor};
pub use cursor::{locate, locate_loop, Cursor, Place};
pub use names::{derived, fresh_iv_name, fresh_tensor_name, tag};
pub use subst::{bind_iv, subtree_insts, subtree_stmts, Subst};

#[cfg(test)]
mod tests;

//! The diagnostic codes of the annotated pipeliner, `E0400`–`E0499`.
//!
//! Penguin knows nothing of the front end, so the codes live here; `frontend/src/codes.rs` lists
//! the range in its table. The codes are stable: the `filetests/pipeline` corpus names them, and a code
//! is never reused for a different problem.
//!
//! | code | problem |
//! | --- | --- |
//! | `E0401` | retired: a pipelining annotation on a loop nested inside a pipelined loop (nested pipelining is supported; the number is not reused) |
//! | `E0402` | a pipelined loop whose bounds are not canonical (it does not start at 0) |
//! | `E0403` | `num_stages` and `stage_id` on the same loop |
//! | `E0404` | Mode A: more stages than the loop body has statements |
//! | `E0405` | Mode B: a statement of the body without `stage_id` |
//! | `E0406` | Mode B: the stage ids leave a gap (they must be `0..N-1`) |
//! | `E0407` | Mode B: a stage id smaller than the one before it in program order |
//! | `E0408` | `execution_order` on some statements of the body but not all |
//! | `E0409` | the execution orders are not a permutation of `0..n-1` |
//! | `E0410` | the execution orders decrease in program order within a stage |
//! | `E0411` | `execution_order` without `stage_id` (in a Mode A loop) |
//! | `E0420` | `multi_buffer` and automatic buffering on the same tile |
//! | `E0421` | the loop's SBUF tensors do not fit in SBUF after widening |
//! | `E0422` | more PSUM banks in flight in the loop than the 8 PSUM has |
//! | `E0430` | the pipelined schedule reverses a dependence of the original program |
//! | `E0440` | `--peel`: the prologue and epilogue would copy more instructions than allowed |
//! | `E0499` | an internal error of the pipeliner (a bug in nkc, not in the kernel) |

/// Retired: a pipelining annotation on a loop nested inside a pipelined loop, refused before
/// nested pipelining; never reported now, and not reused.
pub const NESTED_PIPELINE: &str = "E0401";
/// A pipelined loop whose bounds are not canonical.
pub const NON_CANONICAL_LOOP: &str = "E0402";
/// `num_stages` and `stage_id` on one loop.
pub const BOTH_MODES: &str = "E0403";
/// Mode A with more stages than statements.
pub const TOO_MANY_STAGES: &str = "E0404";
/// Mode B: a statement without `stage_id`.
pub const MISSING_STAGE_ID: &str = "E0405";
/// Mode B: stage ids that skip a stage.
pub const STAGE_GAP: &str = "E0406";
/// Mode B: stage ids that decrease in program order.
pub const STAGE_DECREASES: &str = "E0407";
/// `execution_order` on some statements but not all.
pub const ORDER_MIXED: &str = "E0408";
/// Execution orders that are not a permutation of `0..n-1`.
pub const ORDER_NOT_PERMUTATION: &str = "E0409";
/// Execution orders that decrease within a stage.
pub const ORDER_DECREASES_IN_STAGE: &str = "E0410";
/// `execution_order` in a Mode A loop.
pub const ORDER_WITHOUT_STAGE: &str = "E0411";
/// `multi_buffer` combined with automatic buffering of one tile.
pub const MANUAL_AND_AUTO_BUFFER: &str = "E0420";
/// SBUF overflow after widening.
pub const SBUF_OVERFLOW: &str = "E0421";
/// Too many PSUM banks in flight.
pub const PSUM_BANKS: &str = "E0422";
/// A dependence the pipelined schedule reverses.
pub const DEPENDENCE_VIOLATION: &str = "E0430";
/// `--peel`: too many instructions in the prologue and epilogue copies.
pub const PEEL_TOO_LARGE: &str = "E0440";
/// A bug in the pipeliner.
pub const INTERNAL: &str = "E0499";

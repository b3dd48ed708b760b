//! The annotated software pipeliner (`../shared/DESIGN.md`, "The annotated pipeliner").
//!
//! So far it holds the plan that the pipeliner's steps share.

pub mod plan;

pub use plan::{DepKind, PipelinePlan, Violation};

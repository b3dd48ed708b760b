//! The annotated software pipeliner (`../shared/DESIGN.md`, "The annotated pipeliner").
//!
//! So far it holds the plan that the pipeliner's steps share, and the ISL legality check of a
//! plan (`legality`, over the polyhedral model of `isl_model`).

pub mod isl_model;
pub mod legality;
pub mod plan;

pub use legality::{
    compute_violations, compute_violations_with, LegalityError, LegalityOptions, LegalityReport,
};
pub use plan::{DepKind, PipelinePlan, Violation};

//! The verifier (placeholder; filled in below).
use crate::ir::Function;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub fn verify_function(_func: &Function) -> Result<(), Vec<VerifierError>> {
    Ok(())
}

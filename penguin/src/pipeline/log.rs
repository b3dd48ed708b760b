//! The decision log that `--log pipeliner` prints, which every step of the pipeliner writes to.
//!
//! Every decision of the pipeliner is one line, in the order it is taken: targets found and
//! skipped with the reason, the number of stages and how it was chosen, the groups, the buffer
//! counts with their reasons, the widened allocations, the new bounds, the execution order and the
//! legality verdict with its dependence counts. Lines name loops by induction variable and
//! statements by what they compute (`ta = load`, `loop k`), so they read without the IR at hand.

use crate::entities::Stmt;
use crate::ir::{Function, StmtKind};
use std::fmt;

/// The lines of the log, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineLog {
    pub lines: Vec<String>,
}

impl PipelineLog {
    pub fn push(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    /// Whether some line contains `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.lines.iter().any(|l| l.contains(needle))
    }
}

impl fmt::Display for PipelineLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.lines {
            writeln!(f, "pipeliner: {l}")?;
        }
        Ok(())
    }
}

/// A short description of a statement: `ta = load`, `acc = matmul`, `loop k`.
pub fn describe_stmt(func: &Function, stmt: Stmt) -> String {
    match &func.stmts[stmt].kind {
        StmtKind::Loop(axis) => format!("loop {}", func.display_iv(*axis)),
        StmtKind::Insts(insts) => match insts.last() {
            Some(&i) => {
                let d = &func.insts[i];
                format!("{} = {}", func.display_name(d.dst.tensor), d.op.name())
            }
            None => "(empty statement)".into(),
        },
    }
}

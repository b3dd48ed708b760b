//! Execution statistics of one interpreter run: instructions executed and elements processed,
//! per operation and per engine class.
//!
//! "Elements" of an instruction are the elements of its destination tile, except for a reduce,
//! which counts the elements of its source (the work it does, as the machine's cost model does).
//! Matmuls also count their multiply-adds (`K·M·N` each) in [`Stats::matmul_macs`].

use crate::ir::{EngineClass, Op};
use std::collections::BTreeMap;
use std::fmt;

/// Instructions and elements of one class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub insts: u64,
    pub elements: u64,
}

impl Counter {
    fn add(&mut self, elements: u64) {
        self.insts += 1;
        self.elements += elements;
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// All instructions executed.
    pub total: Counter,
    /// Keyed by [`Op::name`].
    pub by_op: BTreeMap<&'static str, Counter>,
    /// Keyed by [`EngineClass::name`] of each instruction's `engine`.
    pub by_engine: BTreeMap<&'static str, Counter>,
    /// Multiply-adds performed by matmuls.
    pub matmul_macs: u64,
    /// Statements (instruction groups or whole loops) skipped because a predicate failed.
    pub stmts_skipped: u64,
    /// Executions of a masked instruction whose mask kept no element (nothing read or written).
    pub masked_off: u64,
}

impl Stats {
    pub(super) fn record(&mut self, op: &Op, engine: EngineClass, elements: u64) {
        self.total.add(elements);
        self.by_op.entry(op.name()).or_default().add(elements);
        self.by_engine
            .entry(engine.name())
            .or_default()
            .add(elements);
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} instructions, {} elements, {} matmul multiply-adds, {} statements skipped",
            self.total.insts, self.total.elements, self.matmul_macs, self.stmts_skipped
        )?;
        for (name, c) in &self.by_op {
            writeln!(
                f,
                "  op {name:<14} {:>10} insts {:>14} elements",
                c.insts, c.elements
            )?;
        }
        for (name, c) in &self.by_engine {
            writeln!(
                f,
                "  engine {name:<10} {:>10} insts {:>14} elements",
                c.insts, c.elements
            )?;
        }
        Ok(())
    }
}

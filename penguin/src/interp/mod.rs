//! The reference interpreter of Penguin IR: the oracle every other result of nkc is compared with.
//!
//! [`interpret`] executes a [`Function`] — before or after pipelining — with exact float32
//! numerics and returns its outputs and execution [`Stats`]. The semantics:
//!
//! - **Control.** Top-level statements run in order. A loop statement runs its body for
//!   `iv = lb, lb + 1, …, ub - 1`. A statement whose predicates do not all hold for the current
//!   induction variables is skipped entirely: its instructions, or its whole nested loop.
//! - **Storage.** Each tensor is one flat `f32` buffer of `slots() × elems()` values. The slot of an
//!   access is the row-major combination of the tensor's block dimensions, each slot expression
//!   evaluated and taken `rem_euclid(count)`. Tile element `(p, f)` of an access is element
//!   `(start[0] + p, start[1] + f)` of that slot; through an access pattern
//!   ([`crate::ir::Pattern`]) it is element `start + Σ_k i_k · step_k` for the value index
//!   `(i_0, i_1, …)` whose row-major flattening is `(p, f)`. A tile (or a pattern's bounding box)
//!   that does not lie inside the tensor is an [`InterpError::OutOfRange`].
//! - **Types.** Arithmetic is float32 throughout, in the order `kernels` documents (no fused
//!   multiply-add, sums in increasing index order from `0.0`). A bf16 tensor — wherever it lives —
//!   holds bfloat16 values: every store into it is rounded by [`round_bf16`], and bf16 parameters
//!   are rounded on entry.
//! - **Initialisation.** Every element of every tensor but the inputs starts unwritten, which is
//!   to say undefined. Reading an undefined element is not an error: the value is poison and
//!   propagates by the rules of [`vocab::poison`] (elementwise per element, row operations per
//!   row, matmul per column of its operands). Writing an undefined element into an HBM tensor is
//!   an [`InterpError::Uninitialised`] naming the instruction, the undefined element and the HBM
//!   tensor: that is where garbage would become observable. Output elements never written read
//!   back as `0.0`. Writing an input is an error.
//! - **Operations** are those [`Op`](crate::ir::Op) documents: an accumulating matmul reads its
//!   destination (so an accumulation group starts with a memset or an overwriting matmul); `[P, 1]`
//!   sources of `tensor_tensor` broadcast along the free axis; an activation without a bias
//!   computes `func(x * scale)`. An instruction reads all its sources (and, for an accumulating
//!   matmul, its destination) before it writes, so a destination may overlap a source.
//!
//! The interpreter never panics on malformed IR: undefined entities, wrong operand counts or
//! shapes, affine expressions over loops that do not enclose them, and arithmetic overflow are all
//! [`InterpError::Malformed`].

mod exec;
mod kernels;
mod memory;
mod stats;

pub use memory::round_bf16;
pub use stats::{Counter, Stats};

use crate::entities::Inst;
use crate::ir::Function;
use std::fmt;
use vocab::SplitMix64;

/// A dense row-major array: a kernel input or output (the shared vocabulary's).
pub use vocab::Array;

/// What a run produces.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// In `func.outputs` order.
    pub outputs: Vec<Array>,
    pub stats: Stats,
}

/// The induction variables of the loops enclosing a failing instruction, outermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Iteration(pub Vec<(String, i64)>);

impl fmt::Display for Iteration {
    /// ` (at i = 1, j = 0)`, or nothing at the top level.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, (name, v)) in self.0.iter().enumerate() {
            let sep = if n == 0 { " (at " } else { ", " };
            write!(f, "{sep}{name} = {v}")?;
        }
        if !self.0.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Where a tensor's element lies: its slot (for a blocked tensor) and its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    /// `None` for an unblocked tensor.
    pub slot: Option<usize>,
    pub row: usize,
    pub col: usize,
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.row, self.col)?;
        if let Some(s) = self.slot {
            write!(f, " of slot {s}")?;
        }
        Ok(())
    }
}

/// Why a run failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    #[error("the kernel takes {expected} inputs (one per parameter), but {got} were given")]
    InputCount { expected: usize, got: usize },
    #[error(
        "input for parameter `{param}` has shape {got:?}, but the parameter has shape {expected:?}"
    )]
    InputShape {
        param: String,
        expected: Vec<u64>,
        got: Vec<usize>,
    },
    #[error("input for parameter `{param}` has shape {shape:?} but holds {len} values")]
    InputData {
        param: String,
        shape: Vec<usize>,
        len: usize,
    },
    #[error(
        "instruction {inst} ({op}) accesses `{tensor}` out of range: {} {start}..{end} of 0..{extent}{at}",
        if *dim == 0 { "rows" } else { "columns" }
    )]
    OutOfRange {
        inst: Inst,
        op: &'static str,
        tensor: String,
        /// 0 for rows (partitions), 1 for columns (free axis).
        dim: usize,
        start: i64,
        end: i64,
        extent: u64,
        at: Iteration,
    },
    #[error(
        "instruction {inst} ({op}) indexes `{tensor}` with {value} (partition {partition} of its index tile), which is not a row of 0..{rows}{at}"
    )]
    IndexOutOfRange {
        inst: Inst,
        op: &'static str,
        tensor: String,
        partition: usize,
        value: f32,
        rows: u64,
        at: Iteration,
    },
    /// An undefined value (memory never written, or a value computed from it) would be written
    /// into an HBM tensor: `element` of `tensor` is the undefined element (of the source a
    /// transfer moves, else of the destination), `dest` the HBM tensor.
    #[error("instruction {inst} ({op}) writes element {element} of `{tensor}` into HBM tensor `{dest}`, but its value is undefined: that memory was never written, or the value was computed from memory never written{at}")]
    Uninitialised {
        inst: Inst,
        op: &'static str,
        tensor: String,
        element: Element,
        dest: String,
        at: Iteration,
    },
    #[error("instruction {inst} ({op}) writes to the input tensor `{tensor}`{at}")]
    WriteToInput {
        inst: Inst,
        op: &'static str,
        tensor: String,
        at: Iteration,
    },
    #[error("malformed IR: {}{msg}{at}", inst.map(|i| format!("instruction {i}: ")).unwrap_or_default())]
    Malformed {
        inst: Option<Inst>,
        msg: String,
        at: Iteration,
    },
}

impl InterpError {
    /// The instruction the error is about, if any (for its source span).
    pub fn inst(&self) -> Option<Inst> {
        match self {
            InterpError::OutOfRange { inst, .. }
            | InterpError::IndexOutOfRange { inst, .. }
            | InterpError::Uninitialised { inst, .. }
            | InterpError::WriteToInput { inst, .. } => Some(*inst),
            InterpError::Malformed { inst, .. } => *inst,
            _ => None,
        }
    }
}

/// Runs `func` on `inputs` (in `func.params` order) and returns its outputs (in `func.outputs`
/// order). Shapes are checked against the parameter tensors; bf16 parameters get their values
/// rounded to bfloat16 on entry.
pub fn interpret(func: &Function, inputs: &[Array]) -> Result<RunResult, InterpError> {
    if inputs.len() != func.params.len() {
        return Err(InterpError::InputCount {
            expected: func.params.len(),
            got: inputs.len(),
        });
    }
    let mut machine = exec::Machine::new(func)?;
    for (&param, input) in func.params.iter().zip(inputs) {
        let t = func.tensors.get(param).ok_or_else(|| {
            exec::malformed(None, format!("parameter {param} is not a defined tensor"))
        })?;
        if !t.block.is_empty() {
            return Err(exec::malformed(
                None,
                format!("parameter `{}` has block dimensions", t.name),
            ));
        }
        let shape_matches = input.shape.len() == t.shape.len()
            && input
                .shape
                .iter()
                .zip(&t.shape)
                .all(|(&a, &b)| a as u64 == b);
        if !shape_matches {
            return Err(InterpError::InputShape {
                param: t.name.clone(),
                expected: t.shape.clone(),
                got: input.shape.clone(),
            });
        }
        if input.data.len() != input.shape.iter().product::<usize>() {
            return Err(InterpError::InputData {
                param: t.name.clone(),
                shape: input.shape.clone(),
                len: input.data.len(),
            });
        }
        machine.fill_input(param, &input.data);
    }
    // The constants (`nl.shared_constant`): the loader fills them as it fills the parameters.
    for (&t, values) in &func.consts {
        if func
            .tensors
            .get(t)
            .is_none_or(|d| d.elems() != values.len() as u64)
        {
            return Err(exec::malformed(
                None,
                format!("constant {t} does not have one value per element"),
            ));
        }
        machine.fill_input(t, values);
    }
    machine.run()?;
    let mut outputs = Vec::with_capacity(func.outputs.len());
    for &out in &func.outputs {
        outputs.push(machine.output(out)?);
    }
    Ok(RunResult {
        outputs,
        stats: machine.stats,
    })
}

/// Deterministic pseudo-random inputs for every parameter, in `func.params` order: values in
/// `[-1, 1)` on a grid of `2^-23`, from a SplitMix64 stream seeded by `seed` that runs through the
/// parameters in order. Values of bf16 parameters are rounded to bfloat16 (as [`interpret`] would
/// on entry). A parameter that is not a defined 2-D tensor gets an empty array.
pub fn random_inputs(func: &Function, seed: u64) -> Vec<Array> {
    let mut rng = SplitMix64(seed);
    func.params
        .iter()
        .map(|&p| match func.tensors.get(p) {
            Some(t) if t.shape.len() == 2 => {
                let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
                let bf16 = t.dtype == crate::ir::DType::Bf16;
                let n = shape.iter().product();
                let data = (0..n)
                    .map(|_| {
                        let v = rng.next_unit();
                        if bf16 {
                            round_bf16(v)
                        } else {
                            v
                        }
                    })
                    .collect();
                Array { shape, data }
            }
            _ => Array::zeros(vec![0]),
        })
        .collect()
}

//! The bundled simulator of a Neuron-like core (`../shared/MACHINE.md`).
//!
//! - [`machine`]: the machine description, the one cost table shared with the backend (its
//!   schedulers and its pipelining heuristics);
//! - [`isa`]: the pseudo-ISA's types; [`text`]: its text form (lexer, parser and printer);
//! - [`op_cost`]: the cost of one pseudo-ISA operation, `machine`'s table applied to its shapes;
//! - [`validate`]: the static checks of a program (engines, shapes, memories);
//! - [`numerics`]: the float32 arithmetic of every operation, bit-identical to Penguin's
//!   interpreter;
//! - [`sim`]: the discrete-event simulator, its statistics, race detector and trace.
//!
//! It depends on no other nkc crate but the shared vocabulary (`vocab`: dtypes, operations and
//! their arithmetic), so a hand-written `.s` program runs on it alone.

pub mod isa;
pub mod machine;
pub mod numerics;
pub mod op_cost;
pub mod sim;
pub mod text;
pub mod validate;

//! The bundled simulator of a Neuron-like core (`../shared/MACHINE.md`).
//!
//! - [`machine`]: the machine description, the one cost table shared with the backend's scheduler;
//! - [`isa`]: the pseudo-ISA's types; [`text`]: its parser and printer;
//! - [`validate`]: the static checks of a program (engines, shapes, memories);
//! - [`numerics`]: the float32 arithmetic of every operation, bit-identical to Penguin's
//!   interpreter;
//! - [`sim`]: the discrete-event simulator, its statistics, race detector and trace.
//!
//! A leaf crate: it depends on no other nkc crate, so a hand-written `.s` program runs on it alone.

pub mod isa;
pub mod machine;
pub mod numerics;
pub mod sim;
pub mod text;
pub mod validate;

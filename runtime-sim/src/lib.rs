//! The bundled simulator of a Neuron-like core.
//!
//! It will own the machine description (the one cost table shared with the backend's scheduler),
//! the pseudo-ISA (types, text parser and printer), the simulator with its timing model, the race
//! detector and the Perfetto trace writer (`../shared/MACHINE.md`).
//!
//! Nothing here is implemented yet. It is a leaf crate: it depends on no other nkc crate, so that a
//! hand-written `.s` program can run on it alone.

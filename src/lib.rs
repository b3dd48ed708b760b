//! The nkc driver: the compile pipeline shared by every command, and the commands the CLI
//! exposes (`src/main.rs` holds only argument parsing).
//!
//! - [`driver`]: reading kernel files, running the front end and the verifier, reporting failures;
//! - [`run`]: `nkc run`, inputs, execution and reports;
//! - [`compare`]: `nkc compare`, one kernel on every pipelining path, and [`timeline_svg`], its
//!   timelines as SVG;
//! - [`loops`]: per pipelined loop, the modulo scheduler's II beside the measured period;
//! - [`sim`]: `nkc sim`, running a pseudo-ISA program on the simulator;
//! - [`npy`]: `.npy` input and output.

pub mod compare;
pub mod driver;
pub mod loops;
pub mod npy;
pub mod run;
pub mod sim;
pub mod suggest;
pub mod timeline_svg;

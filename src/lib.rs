//! The nkc driver: the compile pipeline shared by every command, and the commands the CLI
//! exposes (`src/main.rs` holds only argument parsing).
//!
//! - [`driver`]: reading kernel files, running the front end and the verifier, reporting failures;
//! - [`run`]: `nkc run`, inputs, execution and reports;
//! - [`sim`]: `nkc sim`, running a pseudo-ISA program on the simulator;
//! - [`npy`]: `.npy` input and output.

pub mod driver;
pub mod npy;
pub mod run;
pub mod sim;

//! The nkc driver: the compile pipeline shared by every command, and the commands the CLI
//! exposes (`src/main.rs` holds only argument parsing).
//!
//! - [`pipeline`]: the compile context, which owns the ordered, named passes from source to
//!   program (front end, pipelining paths, the backend's passes), the verifier after each, and
//!   `--print-after`;
//! - [`driver`]: reading kernel files (kernel source or Penguin IR text), running the front end
//!   and the verifier, reporting failures;
//! - [`run`]: `nkc run`, inputs, execution and reports;
//! - [`compare`]: `nkc compare`, one kernel on every pipelining path, and [`timeline_svg`], its
//!   timelines as SVG;
//! - [`loops`]: per pipelined loop, the modulo scheduler's II beside the measured period;
//! - [`sim`]: `nkc sim`, running a pseudo-ISA program on the simulator;
//! - [`npy`]: `.npy` input and output;
//! - [`message_format`]: `--message-format json`, failures as JSON objects.
//! - [`write_file`]: every file nkc writes, replaced whole or not at all, never an input.

pub mod cause;
pub mod compare;
pub mod driver;
pub mod error;
pub mod loops;
pub mod message_format;
pub mod npy;
pub mod pipeline;
pub mod run;
pub mod sim;
pub mod suggest;
pub mod timeline_svg;
pub mod write_file;

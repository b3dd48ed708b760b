//! The nkc driver: compile options, the pass pipeline and the commands the CLI exposes.

//! The files of a run, shared by `nkc run` (a kernel) and `nkc sim` (a program): the check that
//! no file the run writes is one it reads, reading an `--input` array, and writing the outputs
//! under `--output DIR`.
//!
//! Invariant: every error here is the user's (a path, a file's contents), a [`Failure::user`];
//! the wording is the error's own ([`crate::write_file::WriteError`], [`crate::npy::NpyError`]).

use crate::driver::{Failure, Source, UserCause};
use crate::npy;
use penguin::interp::Array;
use std::path::{Path, PathBuf};

/// An error when a file the run would write (`--trace`, `--output DIR/NAME.npy` for each of
/// `outputs`) is the kernel or program or one of its `--input` files: checked before anything
/// runs.
pub(crate) fn refuse_inputs_as_outputs<'a>(
    source: &Source,
    inputs: &[(String, PathBuf)],
    trace: Option<&Path>,
    output_dir: Option<&Path>,
    outputs: impl IntoIterator<Item = &'a str>,
) -> Result<(), Failure> {
    crate::write_file::refuse_run_outputs(&source.path, inputs, trace, output_dir, outputs)
        .map_err(|e| Failure::user(UserCause::Write(e)))
}

/// The array of an `--input` file.
pub(crate) fn read_input(path: &Path) -> Result<Array, Failure> {
    npy::read_npy(path).map_err(|e| Failure::user(UserCause::Npy(e)))
}

/// Creates `--output DIR` (and its parents) when missing.
pub(crate) fn create_output_dir(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::user(UserCause::CreateDir {
            dir: dir.to_path_buf(),
            error: e.to_string(),
        })
    })
}

/// Writes `array` as `DIR/NAME.npy`: float32 `<f4`, or bfloat16 as `<u2` patterns when `bf16`.
pub(crate) fn write_output(
    dir: &Path,
    name: &str,
    array: &Array,
    bf16: bool,
) -> Result<PathBuf, Failure> {
    let path = dir.join(format!("{name}.npy"));
    if bf16 {
        npy::write_npy_bf16(&path, array)
    } else {
        npy::write_npy(&path, array)
    }
    .map_err(|e| Failure::user(UserCause::Npy(e)))?;
    Ok(path)
}

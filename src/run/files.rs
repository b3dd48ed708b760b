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

/// How an output file holds its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileDtype {
    /// float32, `<f4`.
    F32,
    /// bfloat16 as its 16-bit patterns, `<u2`.
    Bf16,
    /// An integer dtype the kernel declared (NKI's name: `uint32`), its values held as float32.
    Int(&'static str),
}

impl FileDtype {
    /// The file of an array of `dtype`, declared as the integer `int` when it is one.
    pub(crate) fn of(dtype: penguin::DType, int: Option<&'static str>) -> FileDtype {
        match (int, dtype) {
            (Some(name), _) => FileDtype::Int(name),
            (None, penguin::DType::Bf16) => FileDtype::Bf16,
            (None, penguin::DType::F32) => FileDtype::F32,
        }
    }
}

/// Writes `array` as `DIR/NAME.npy`: float32 `<f4`, bfloat16 as `<u2` patterns, or the integer
/// dtype the kernel declared (`<u4` for `uint32`).
pub(crate) fn write_output(
    dir: &Path,
    name: &str,
    array: &Array,
    dtype: FileDtype,
) -> Result<PathBuf, Failure> {
    let path = dir.join(format!("{name}.npy"));
    match dtype {
        FileDtype::F32 => npy::write_npy(&path, array),
        FileDtype::Bf16 => npy::write_npy_bf16(&path, array),
        FileDtype::Int(int) => npy::write_npy_int(&path, array, int),
    }
    .map_err(|e| Failure::user(UserCause::Npy(e)))?;
    Ok(path)
}

//! The inputs of a run: the `--input` files checked against the kernel's parameters and read,
//! seeded random values for the rest; and the check that no file the run writes is one it reads.

use super::RunOptions;
use crate::driver::{self, Failure, Source, UserCause};
use penguin::interp::{self, Array};
use penguin::Function;

/// An error when a file the run would write (`--trace`, `--output DIR/NAME.npy`) is the kernel
/// or one of its `--input` files: checked before anything runs.
pub(super) fn refuse_inputs_as_outputs(
    source: &Source,
    func: &Function,
    opts: &RunOptions,
) -> Result<(), Failure> {
    super::files::refuse_inputs_as_outputs(
        source,
        &opts.inputs,
        opts.trace.as_deref(),
        opts.output_dir.as_deref(),
        func.outputs.iter().map(|&t| func.tensors[t].name.as_str()),
    )
}

/// The kernel's input arrays: each `--input` file (of a parameter, with the parameter's shape),
/// and seeded random values for the other parameters.
pub(super) fn gather_inputs(func: &Function, opts: &RunOptions) -> Result<Vec<Array>, Failure> {
    let param_names: Vec<&str> = func
        .params
        .iter()
        .map(|&t| func.tensors[t].name.as_str())
        .collect();
    driver::unique_inputs(&opts.inputs)?;
    // An output parameter (one the kernel stores into) takes its shape from its `--input`, which
    // the front end read; its contents are not an input.
    let outputs: Vec<&str> = func
        .outputs
        .iter()
        .map(|&t| func.tensors[t].name.as_str())
        .collect();
    for (name, _) in &opts.inputs {
        if !param_names.contains(&name.as_str()) && !outputs.contains(&name.as_str()) {
            return Err(Failure::user(UserCause::NotAParameter {
                name: name.clone(),
                kernel: func.name.clone(),
                params: param_names.iter().map(|p| p.to_string()).collect(),
            }));
        }
    }
    let mut inputs = interp::random_inputs(func, opts.seed);
    for (i, &tensor) in func.params.iter().enumerate() {
        let data = &func.tensors[tensor];
        let given = opts.inputs.iter().find(|(n, _)| *n == data.name);
        if let Some((name, path)) = given {
            // The random values it replaces go first: the inputs are held once.
            inputs[i].data = Vec::new();
            let array = super::files::read_input(path)?;
            let want: Vec<usize> = data.shape.iter().map(|&d| d as usize).collect();
            // A tensor of other than 2 dimensions is stored as [leading product, last].
            let stored: Option<Vec<usize>> = frontend::check::stored_shape(&array.shape);
            let declared = (func.input_dims.get(&tensor))
                .map(|d| d.iter().map(|&x| x as usize).collect::<Vec<usize>>());
            if (stored.as_ref() == Some(&want) || declared.as_ref() == Some(&array.shape))
                && array.shape != want
            {
                inputs[i] = Array {
                    shape: want,
                    data: array.data,
                };
            } else {
                if array.shape != want {
                    return Err(Failure::user(UserCause::InputShape {
                        name: name.clone(),
                        path: path.clone(),
                        got: array.shape.clone(),
                        kernel: func.name.clone(),
                        want,
                    }));
                }
                inputs[i] = array;
            }
        }
        // A float32 file given for a bfloat16 parameter: its values rounded, as a store would.
        if data.dtype == penguin::DType::Bf16 && given.is_some() {
            for x in &mut inputs[i].data {
                *x = penguin::interp::round_bf16(*x);
            }
        }
    }
    Ok(inputs)
}

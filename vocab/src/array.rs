//! Arrays of float32 values: kernel inputs and outputs, as the interpreter, the simulator and the
//! driver's `.npy` files hold them.

/// A dense row-major array: a kernel input or output.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Array {
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        Array { shape, data }
    }

    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Array {
            shape,
            data: vec![0.0; n],
        }
    }

    /// A `rows × cols` array with element `(r, c)` = `f(r, c)`.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> f32) -> Self {
        let mut data = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            for c in 0..cols {
                data.push(f(r, c));
            }
        }
        Array {
            shape: vec![rows, cols],
            data,
        }
    }

    /// Element `(r, c)` of a 2-D array.
    pub fn at(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.shape[1] + c]
    }
}

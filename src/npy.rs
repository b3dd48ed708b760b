//! Reading and writing `.npy` arrays (npyz) for `nkc run`.
//!
//! nkc's arrays are row-major float32. Reading accepts exactly that: a C-order `float32` array of
//! any rank; anything else is an error that says what was found. Writing produces little-endian
//! `<f4` C-order files that NumPy reads back unchanged.

use penguin::interp::Array;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

/// Reads a C-order float32 `.npy` file.
pub fn read_npy(path: &Path) -> Result<Array, String> {
    let file = File::open(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    let npy = npyz::NpyFile::new(BufReader::new(file))
        .map_err(|e| format!("`{}` is not a .npy file: {e}", path.display()))?;
    match npy.dtype() {
        npyz::DType::Plain(ts) if ts.to_string() == "<f4" || ts.to_string() == ">f4" => {}
        other => {
            return Err(format!(
                "`{}` holds {} values, but nkc takes float32 ('<f4') arrays; convert it with \
                 `a.astype(numpy.float32)`",
                path.display(),
                other.descr()
            ))
        }
    }
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(format!(
            "`{}` is in Fortran order; save it in C order (`numpy.ascontiguousarray(a)`)",
            path.display()
        ));
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let data = npy
        .into_vec::<f32>()
        .map_err(|e| format!("cannot read the data of `{}`: {e}", path.display()))?;
    Ok(Array { shape, data })
}

/// Writes `array` as a little-endian float32 `.npy` file.
pub fn write_npy(path: &Path, array: &Array) -> Result<(), String> {
    use npyz::WriterBuilder;
    let err = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
    let file = File::create(path).map_err(err)?;
    let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
    let mut writer = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(&shape)
        .writer(BufWriter::new(file))
        .begin_nd()
        .map_err(err)?;
    writer.extend(array.data.iter().copied()).map_err(err)?;
    writer.finish().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let dir = std::env::temp_dir().join(format!("nkc-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.npy");
        let a = Array {
            shape: vec![2, 3],
            data: vec![1.0, -2.5, 3.25, f32::MIN_POSITIVE, 0.0, 1e30],
        };
        write_npy(&path, &a).unwrap();
        let b = read_npy(&path).unwrap();
        assert_eq!(a.shape, b.shape);
        assert_eq!(
            a.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn float64_is_refused_with_a_clear_message() {
        use npyz::WriterBuilder;
        let dir = std::env::temp_dir().join(format!("nkc-npy64-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("y.npy");
        let mut w = npyz::WriteOptions::<f64>::new()
            .default_dtype()
            .shape(&[2])
            .writer(BufWriter::new(File::create(&path).unwrap()))
            .begin_nd()
            .unwrap();
        w.extend([1.0f64, 2.0]).unwrap();
        w.finish().unwrap();
        let err = read_npy(&path).unwrap_err();
        assert!(err.contains("'<f8'") && err.contains("float32"), "{err}");
    }
}

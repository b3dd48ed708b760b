//! Reading and writing `.npy` arrays (npyz) for `nkc run`.
//!
//! nkc's arrays are row-major float32 (a bfloat16 tensor holds float32 values that bfloat16
//! represents). Reading accepts a C-order array of any rank of
//! - `float32` (`<f4`, `>f4`, or `f4` / `=f4` in native order), for any parameter (rounded to
//!   bfloat16 by `nkc run` when the parameter is bfloat16);
//! - **bfloat16, stored as its 16-bit patterns**: `<u2` (`uint16`, what
//!   `a.view(numpy.uint16)` of an `ml_dtypes.bfloat16` array saves) or `|V2` (what `numpy.save`
//!   writes for an `ml_dtypes.bfloat16` array itself); each value is exactly the float32 whose
//!   upper 16 bits are the pattern.
//!
//! Anything else is an error that says what was found, and so is a header that claims more than
//! the file holds, before anything is allocated for it. Writing produces little-endian C-order
//! files that NumPy reads back unchanged: `<f4` for float32 arrays ([`write_npy`]) and `<u2`
//! bfloat16 patterns for bfloat16 ones ([`write_npy_bf16`]; `numpy.load(p).view(ml_dtypes.bfloat16)`
//! reads them as bfloat16).

use penguin::interp::Array;
use std::fs::File;
use std::io::{BufReader, BufWriter, Cursor, Read};
use std::path::Path;

/// Reads a C-order float32 or bfloat16 `.npy` file (see the module doc), as float32 values.
pub fn read_npy(path: &Path) -> Result<Array, String> {
    read_npy_typed(path).map(|(a, _)| a)
}

/// Reads a C-order float32 or bfloat16 `.npy` file: its values as float32, and which of the two
/// the file held.
///
/// The sizes its header claims are checked before anything is allocated for them: the header's
/// length against the file's (a version 2 header may claim 4 GiB), and the shape's elements
/// against [`runtime_sim::sim::MAX_HBM_ELEMS`] and the bytes that follow the header. A float32
/// dtype written without a byte order (`'f4'`, `'=f4'`: native order, which NumPy accepts) is read
/// as little-endian, the order of every machine nkc runs on.
pub fn read_npy_typed(path: &Path) -> Result<(Array, vocab::DType), String> {
    let shown = path.display();
    let file = File::open(path).map_err(|e| format!("cannot open `{shown}`: {e}"))?;
    let file_len = file
        .metadata()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?
        .len();
    let mut reader = BufReader::new(file);
    let (header, header_len) = read_header(&mut reader, file_len)
        .map_err(|e| format!("`{shown}` is not a .npy file: {e}"))?;
    let data_len = file_len - header_len;
    let npy = npyz::NpyFile::new(Cursor::new(header).chain(reader))
        .map_err(|e| format!("`{shown}` is not a .npy file: {e}"))?;
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    let width: u64 = match descr.as_str() {
        "<f4" | ">f4" => 4,
        "<u2" | "|u2" | "|V2" | "<V2" => 2,
        _ => {
            return Err(format!(
            "`{shown}` holds '{descr}' values, but nkc takes float32 ('<f4') arrays, or bfloat16 \
                 stored as 16-bit patterns ('<u2' or '|V2'); convert it with \
                 `a.astype(numpy.float32)`"
        ))
        }
    };
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(format!(
            "`{shown}` is in Fortran order; save it in C order (`numpy.ascontiguousarray(a)`)"
        ));
    }
    let elems = npy
        .shape()
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= runtime_sim::sim::MAX_HBM_ELEMS)
        .ok_or_else(|| {
            format!(
                "`{shown}` claims shape {:?}, more than the {} elements nkc holds",
                npy.shape(),
                runtime_sim::sim::MAX_HBM_ELEMS
            )
        })?;
    if elems * width != data_len {
        return Err(format!(
            "`{shown}` claims shape {:?} ({} bytes of {}), but {data_len} bytes follow its header",
            npy.shape(),
            elems * width,
            if width == 4 { "float32" } else { "bfloat16" }
        ));
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    if width == 4 {
        let data = npy
            .into_vec::<f32>()
            .map_err(|e| format!("cannot read the data of `{shown}`: {e}"))?;
        return Ok((Array { shape, data }, vocab::DType::F32));
    }
    // bfloat16 patterns: the bytes after the header, little-endian 16-bit words.
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let body = bytes
        .get(bytes.len() - data_len as usize..)
        .ok_or_else(|| format!("`{shown}` changed while it was read"))?;
    let data = body
        .chunks_exact(2)
        .map(|w| f32::from_bits(u32::from(u16::from_le_bytes([w[0], w[1]])) << 16))
        .collect();
    Ok((Array { shape, data }, vocab::DType::Bf16))
}

/// The magic string of every `.npy` file.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Reads the magic, version, header length and header text of a `.npy` file of `file_len` bytes,
/// checking the claimed length against the file's before reading it, and returns them as they
/// stand, except for a float32 dtype without a byte order, given `<` (the length is adjusted),
/// with the number of bytes they took in the file.
fn read_header(r: &mut impl Read, file_len: u64) -> Result<(Vec<u8>, u64), String> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| "it is too short to hold the magic string".to_string())?;
    if &pre[..6] != MAGIC {
        return Err("magic not found for NPY file".into());
    }
    let wide = match pre[6] {
        1 => false,
        2 | 3 => true,
        v => return Err(format!("version {v}.{} is not one NumPy writes", pre[7])),
    };
    let len_bytes = if wide { 4 } else { 2 };
    let mut len = [0u8; 4];
    r.read_exact(&mut len[..len_bytes])
        .map_err(|_| "it ends inside its header length".to_string())?;
    let header_len = u32::from_le_bytes(len) as u64;
    let start = 8 + len_bytes as u64;
    if start + header_len > file_len {
        return Err(format!(
            "its header claims {header_len} bytes, but the file has {} after the header length",
            file_len - start.min(file_len)
        ));
    }
    let mut text = vec![0u8; header_len as usize];
    r.read_exact(&mut text)
        .map_err(|e| format!("cannot read its header: {e}"))?;
    let text = with_byte_order(text);
    let mut out = pre.to_vec();
    if wide {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    } else {
        let n = u16::try_from(text.len()).map_err(|_| "its header is too long".to_string())?;
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&text);
    Ok((out, start + header_len))
}

/// The header text with a byte-order-less float32 `descr` (`'f4'`, `'=f4'`) made `'<f4'`.
fn with_byte_order(text: Vec<u8>) -> Vec<u8> {
    let Ok(s) = std::str::from_utf8(&text) else {
        return text;
    };
    for quote in ['\'', '"'] {
        for bare in ["f4", "=f4"] {
            let key = format!("{quote}descr{quote}");
            let Some(at) = s.find(&key) else { continue };
            let rest = &s[at + key.len()..];
            let value_at = rest.len() - rest.trim_start_matches([' ', ':']).len();
            let value = format!("{quote}{bare}{quote}");
            if rest[value_at..].starts_with(&value) {
                let from = at + key.len() + value_at;
                let fixed = format!(
                    "{}{quote}<f4{quote}{}",
                    &s[..from],
                    &s[from + value.len()..]
                );
                return fixed.into_bytes();
            }
        }
    }
    text
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

/// Writes `array` (bfloat16 values held as float32, rounded to bfloat16 if they are not) as a
/// little-endian `<u2` `.npy` file of bfloat16 bit patterns (see the module doc).
pub fn write_npy_bf16(path: &Path, array: &Array) -> Result<(), String> {
    use npyz::WriterBuilder;
    let err = |e: std::io::Error| format!("cannot write `{}`: {e}", path.display());
    let file = File::create(path).map_err(err)?;
    let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
    let mut writer = npyz::WriteOptions::<u16>::new()
        .default_dtype()
        .shape(&shape)
        .writer(BufWriter::new(file))
        .begin_nd()
        .map_err(err)?;
    writer
        .extend(
            array
                .data
                .iter()
                .map(|&x| (vocab::round_bf16(x).to_bits() >> 16) as u16),
        )
        .map_err(err)?;
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
    fn bfloat16_patterns_round_trip_and_read_as_their_float32_values() {
        let dir = std::env::temp_dir().join(format!("nkc-npybf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.npy");
        let a = Array {
            shape: vec![2, 2],
            data: vec![1.0, -2.5, 1.0 + 1.0 / 128.0, 3.0e38],
        };
        write_npy_bf16(&path, &a).unwrap();
        let (b, dtype) = read_npy_typed(&path).unwrap();
        assert_eq!(dtype, vocab::DType::Bf16);
        assert_eq!(b.shape, a.shape);
        let want: Vec<f32> = a.data.iter().map(|&x| vocab::round_bf16(x)).collect();
        assert_eq!(b.data, want);
        // The same patterns declared `|V2` (numpy.save of an ml_dtypes.bfloat16 array).
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(5).position(|w| w == b"'<u2'").unwrap();
        bytes[at..at + 5].copy_from_slice(b"'|V2'");
        std::fs::write(&path, &bytes).unwrap();
        let (c, dtype) = read_npy_typed(&path).unwrap();
        assert_eq!((c.data, dtype), (want, vocab::DType::Bf16));
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

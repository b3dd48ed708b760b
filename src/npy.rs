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

use crate::write_file::WriteError;
use penguin::interp::Array;
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

/// Why a `.npy` file was not read or written. The Display text is the sentence the user sees;
/// `path` is the file as given.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("cannot open `{}`: {error}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("cannot read `{}`: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The magic, version or header is not a `.npy` file's (`reason` says how).
    #[error("`{}` is not a .npy file: {reason}", path.display())]
    NotNpy { path: PathBuf, reason: HeaderError },
    /// A dtype nkc does not take (`descr`, as the header spells it).
    #[error(
        "`{}` holds '{descr}' values, but nkc takes float32 ('<f4') arrays, or bfloat16 \
                 stored as 16-bit patterns ('<u2' or '|V2'); convert it with \
                 `a.astype(numpy.float32)`",
        path.display()
    )]
    DType { path: PathBuf, descr: String },
    #[error(
        "`{}` is in Fortran order; save it in C order (`numpy.ascontiguousarray(a)`)",
        path.display()
    )]
    FortranOrder { path: PathBuf },
    /// A shape of more elements than nkc holds (`max`).
    #[error("`{}` claims shape {shape:?}, more than the {max} elements nkc holds", path.display())]
    TooLarge {
        path: PathBuf,
        shape: Vec<u64>,
        max: u64,
    },
    /// A shape whose `bytes` of `dtype` are not the `data_len` bytes after the header.
    #[error(
        "`{}` claims shape {shape:?} ({bytes} bytes of {dtype}), but {data_len} bytes follow its header",
        path.display()
    )]
    DataLength {
        path: PathBuf,
        shape: Vec<u64>,
        bytes: u64,
        dtype: &'static str,
        data_len: u64,
    },
    #[error("cannot read the data of `{}`: {error}", path.display())]
    Data {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("`{}` changed while it was read", path.display())]
    Changed { path: PathBuf },
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Reads a C-order float32 or bfloat16 `.npy` file (see the module doc), as float32 values.
pub fn read_npy(path: &Path) -> Result<Array, NpyError> {
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
pub fn read_npy_typed(path: &Path) -> Result<(Array, vocab::DType), NpyError> {
    let path_buf = || path.to_path_buf();
    let file = File::open(path).map_err(|error| NpyError::Open {
        path: path_buf(),
        error,
    })?;
    let file_len = file
        .metadata()
        .map_err(|error| NpyError::Read {
            path: path_buf(),
            error,
        })?
        .len();
    let mut reader = BufReader::new(file);
    let (header, header_len) =
        read_header(&mut reader, file_len).map_err(|e| NpyError::NotNpy {
            path: path_buf(),
            reason: e,
        })?;
    let data_len = file_len - header_len;
    let npy =
        npyz::NpyFile::new(Cursor::new(header).chain(reader)).map_err(|e| NpyError::NotNpy {
            path: path_buf(),
            reason: HeaderError::Npyz(e),
        })?;
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    let width: u64 = match descr.as_str() {
        "<f4" | ">f4" => 4,
        "<u2" | "|u2" | "|V2" | "<V2" => 2,
        _ => {
            return Err(NpyError::DType {
                path: path_buf(),
                descr,
            })
        }
    };
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(NpyError::FortranOrder { path: path_buf() });
    }
    let elems = npy
        .shape()
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= runtime_sim::sim::MAX_HBM_ELEMS)
        .ok_or_else(|| NpyError::TooLarge {
            path: path_buf(),
            shape: npy.shape().to_vec(),
            max: runtime_sim::sim::MAX_HBM_ELEMS,
        })?;
    if elems * width != data_len {
        return Err(NpyError::DataLength {
            path: path_buf(),
            shape: npy.shape().to_vec(),
            bytes: elems * width,
            dtype: if width == 4 { "float32" } else { "bfloat16" },
            data_len,
        });
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    if width == 4 {
        let data = npy.into_vec::<f32>().map_err(|error| NpyError::Data {
            path: path_buf(),
            error,
        })?;
        return Ok((Array { shape, data }, vocab::DType::F32));
    }
    // bfloat16 patterns: the bytes after the header, little-endian 16-bit words.
    let bytes = std::fs::read(path).map_err(|error| NpyError::Read {
        path: path_buf(),
        error,
    })?;
    let body = bytes
        .get(bytes.len() - data_len as usize..)
        .ok_or_else(|| NpyError::Changed { path: path_buf() })?;
    let data = body
        .chunks_exact(2)
        .map(|w| f32::from_bits(u32::from(u16::from_le_bytes([w[0], w[1]])) << 16))
        .collect();
    Ok((Array { shape, data }, vocab::DType::Bf16))
}

/// The magic string of every `.npy` file.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Why the magic, version or header of a file is not a `.npy` file's; the Display text follows
/// "is not a .npy file: ".
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("it is too short to hold the magic string")]
    ShortMagic,
    #[error("magic not found for NPY file")]
    NoMagic,
    #[error("version {major}.{minor} is not one NumPy writes")]
    Version { major: u8, minor: u8 },
    #[error("it ends inside its header length")]
    ShortLength,
    #[error(
        "its header claims {claimed} bytes, but the file has {available} after the header length"
    )]
    PastEnd { claimed: u64, available: u64 },
    #[error("cannot read its header: {0}")]
    Read(#[source] std::io::Error),
    #[error("its header is too long")]
    TooLong,
    /// A shape of more elements than nkc holds (`max`).
    #[error("it claims shape {shape:?}, more than the {max} elements nkc holds")]
    TooLarge { shape: Vec<u64>, max: u64 },
    #[error("it holds a structured dtype, but nkc takes float32 ('<f4') arrays")]
    Structured,
    #[error("its header gives `{key}` twice{at}")]
    Twice { key: String, at: Quote },
    /// A key numpy does not write; `key` is shown as [`shown_key`] cuts it.
    #[error(
        "its header has the key `{}` (byte {byte}), but a .npy header holds only \
         'descr', 'fortran_order' and 'shape'",
        shown_key(key).escape_debug()
    )]
    UnknownKey { key: String, byte: usize },
    /// Not the dict literal's syntax: `want` is what the parser expected at `at`.
    #[error("its header is not a Python dict literal: expected {want}{at}")]
    Unexpected { want: String, at: Quote },
    #[error("its header is not UTF-8{at}")]
    NotUtf8 { at: Quote },
    #[error("its shape has a dimension past 2^64{at}")]
    HugeDimension { at: Quote },
    #[error("its header has no '{0}'")]
    Missing(&'static str),
    /// What npyz says of the header [`read_header`] handed it.
    #[error("{0}")]
    Npyz(#[source] std::io::Error),
}

/// A place in a header an error points at: its byte offset and at most [`QUOTED`] characters
/// of the header from there (escaped, `…` when cut), shown ` at byte N: `TEXT``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub byte: usize,
    pub text: String,
}

impl std::fmt::Display for Quote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.text.is_empty() {
            write!(f, " at byte {} (its end)", self.byte)
        } else {
            write!(f, " at byte {}: `{}`", self.byte, self.text)
        }
    }
}

/// At most [`QUOTED`] characters of an unknown key, `…` when cut.
fn shown_key(key: &str) -> String {
    let mut shown: String = key.chars().take(QUOTED).collect();
    if key.chars().nth(QUOTED).is_some() {
        shown.push('…');
    }
    shown
}

/// Reads the magic, version, header length and header text of a `.npy` file of `file_len` bytes,
/// checking the claimed length against the file's before reading it, and returns them with the
/// header parsed by [`parse_header`] (in linear time: npyz's own parser takes exponential time
/// on nested brackets) and written back in NumPy's form (the length adjusted), with the number
/// of bytes they took in the file.
fn read_header(r: &mut impl Read, file_len: u64) -> Result<(Vec<u8>, u64), HeaderError> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| HeaderError::ShortMagic)?;
    if &pre[..6] != MAGIC {
        return Err(HeaderError::NoMagic);
    }
    let wide = match pre[6] {
        1 => false,
        2 | 3 => true,
        major => {
            return Err(HeaderError::Version {
                major,
                minor: pre[7],
            })
        }
    };
    let len_bytes = if wide { 4 } else { 2 };
    let mut len = [0u8; 4];
    r.read_exact(&mut len[..len_bytes])
        .map_err(|_| HeaderError::ShortLength)?;
    let header_len = u32::from_le_bytes(len) as u64;
    let start = 8 + len_bytes as u64;
    if start + header_len > file_len {
        return Err(HeaderError::PastEnd {
            claimed: header_len,
            available: file_len - start.min(file_len),
        });
    }
    let mut text = vec![0u8; header_len as usize];
    r.read_exact(&mut text).map_err(HeaderError::Read)?;
    let text = with_byte_order(text)?;
    let mut out = pre.to_vec();
    if wide {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    } else {
        let n = u16::try_from(text.len()).map_err(|_| HeaderError::TooLong)?;
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&text);
    Ok((out, start + header_len))
}

/// The header text in the one form handed to npyz: [`parse_header`]'s dict written back as
/// NumPy writes it, a float32 dtype without a byte order (`'f4'`, `'=f4'`) given `<`; a shape of
/// more elements than nkc holds is an error here (npyz would overflow counting them).
fn with_byte_order(text: Vec<u8>) -> Result<Vec<u8>, HeaderError> {
    let h = parse_header(&text)?;
    // npyz multiplies the dimensions unchecked: a shape past the limit stops here.
    let fits = h
        .shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .is_some_and(|n| n <= runtime_sim::sim::MAX_HBM_ELEMS);
    if !fits {
        return Err(HeaderError::TooLarge {
            shape: h.shape,
            max: runtime_sim::sim::MAX_HBM_ELEMS,
        });
    }
    let descr = match h.descr.as_str() {
        "f4" | "=f4" => "<f4",
        d => d,
    };
    let dims: Vec<String> = h.shape.iter().map(u64::to_string).collect();
    let comma = if dims.len() == 1 { "," } else { "" };
    let order = if h.fortran_order { "True" } else { "False" };
    Ok(format!(
        "{{'descr': '{descr}', 'fortran_order': {order}, 'shape': ({}{comma}), }}\n",
        dims.join(", ")
    )
    .into_bytes())
}

/// What a `.npy` header says (the three keys NumPy writes, and no other).
#[derive(Debug, PartialEq, Eq)]
struct HeaderData {
    /// The dtype string (`<f4`, ...).
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// How much of a header an error quotes: less than a line.
const QUOTED: usize = 40;

/// Parses a `.npy` header, in one pass over its bytes (time linear in its length): the Python
/// dict literal `{'descr': STR, 'fortran_order': BOOL, 'shape': TUPLE}` in any order, quotes and
/// spacing, trailing commas, padding and the final newline, and nothing more (numpy refuses
/// other keys as well). A structured dtype (a list for `descr`) is skipped over, still in linear
/// time, and refused. An error quotes at most [`QUOTED`] characters of the header.
fn parse_header(text: &[u8]) -> Result<HeaderData, HeaderError> {
    let mut p = HeaderParser { s: text, at: 0 };
    p.expect(b'{')?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    loop {
        p.skip_space();
        if p.peek() == Some(b'}') {
            p.at += 1;
            break;
        }
        let key_at = p.at;
        let key = p.string()?;
        p.expect(b':')?;
        p.skip_space();
        match key.as_str() {
            "descr" if descr.is_none() => {
                if matches!(p.peek(), Some(b'[') | Some(b'(')) {
                    p.skip_balanced()?;
                    return Err(HeaderError::Structured);
                }
                descr = Some(p.string()?);
            }
            "fortran_order" if fortran_order.is_none() => fortran_order = Some(p.boolean()?),
            "shape" if shape.is_none() => shape = Some(p.tuple()?),
            "descr" | "fortran_order" | "shape" => {
                return Err(HeaderError::Twice {
                    at: p.quote(key_at),
                    key,
                })
            }
            _ => {
                return Err(HeaderError::UnknownKey { key, byte: key_at });
            }
        }
        p.skip_space();
        match p.peek() {
            Some(b',') => p.at += 1,
            Some(b'}') => {}
            _ => return Err(p.unexpected("`,` or `}`")),
        }
    }
    p.skip_space();
    if p.at != text.len() {
        return Err(p.unexpected("the end of the header"));
    }
    Ok(HeaderData {
        descr: descr.ok_or(HeaderError::Missing("descr"))?,
        fortran_order: fortran_order.ok_or(HeaderError::Missing("fortran_order"))?,
        shape: shape.ok_or(HeaderError::Missing("shape"))?,
    })
}

/// A cursor over a header's bytes; see [`parse_header`].
struct HeaderParser<'a> {
    s: &'a [u8],
    at: usize,
}

impl HeaderParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The place `at` with at most [`QUOTED`] characters of the header from there.
    fn quote(&self, at: usize) -> Quote {
        let rest = String::from_utf8_lossy(&self.s[at.min(self.s.len())..]);
        let mut shown: String = rest
            .chars()
            .take(QUOTED)
            .flat_map(char::escape_debug)
            .collect();
        if rest.chars().nth(QUOTED).is_some() {
            shown.push('…');
        }
        Quote {
            byte: at,
            text: shown,
        }
    }

    fn unexpected(&self, want: &str) -> HeaderError {
        HeaderError::Unexpected {
            want: want.to_string(),
            at: self.quote(self.at),
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), HeaderError> {
        self.skip_space();
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{}`", c as char)))
        }
    }

    /// A quoted string without escapes (numpy's keys and dtype strings have none).
    fn string(&mut self) -> Result<String, HeaderError> {
        self.skip_space();
        let Some(q @ (b'\'' | b'"')) = self.peek() else {
            return Err(self.unexpected("a quoted string"));
        };
        let start = self.at + 1;
        let Some(len) = self.s[start..]
            .iter()
            .position(|&c| c == q || c == b'\\' || c == b'\n')
        else {
            return Err(self.unexpected("a closed string"));
        };
        if self.s[start + len] != q {
            return Err(self.unexpected("a string without escapes"));
        }
        self.at = start + len + 1;
        String::from_utf8(self.s[start..start + len].to_vec()).map_err(|_| HeaderError::NotUtf8 {
            at: self.quote(start),
        })
    }

    fn boolean(&mut self) -> Result<bool, HeaderError> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.unexpected("`True` or `False`"))
    }

    /// A tuple (or list) of non-negative integers, for the shape.
    fn tuple(&mut self) -> Result<Vec<u64>, HeaderError> {
        let close = match self.peek() {
            Some(b'(') => b')',
            Some(b'[') => b']',
            _ => return Err(self.unexpected("a tuple of integers")),
        };
        self.at += 1;
        let mut dims = Vec::new();
        loop {
            self.skip_space();
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok(dims);
            }
            let start = self.at;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.at += 1;
            }
            if self.at == start {
                return Err(self.unexpected("an integer"));
            }
            let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or_default();
            let dim = digits
                .parse::<u64>()
                .map_err(|_| HeaderError::HugeDimension {
                    at: self.quote(start),
                })?;
            dims.push(dim);
            // Python 2's NumPy wrote long integers with an `L`.
            if self.peek() == Some(b'L') {
                self.at += 1;
            }
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(c) if c == close => {}
                _ => return Err(self.unexpected(&format!("`,` or `{}`", close as char))),
            }
        }
    }

    /// Skips a bracketed value (a structured dtype), counting brackets outside strings.
    fn skip_balanced(&mut self) -> Result<(), HeaderError> {
        let start = self.at;
        let mut depth = 0usize;
        let mut quote = None;
        while let Some(c) = self.peek() {
            self.at += 1;
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, b'\'' | b'"') => quote = Some(c),
                (None, b'[' | b'(' | b'{') => depth += 1,
                (None, b']' | b')' | b'}') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        self.at = start;
        Err(self.unexpected("a closed bracket"))
    }
}

/// Writes `array` as a little-endian float32 `.npy` file, replacing `path` whole or not at all
/// ([`crate::write_file::write_atomically_with`]).
pub fn write_npy(path: &Path, array: &Array) -> Result<(), NpyError> {
    use npyz::WriterBuilder;
    let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
    crate::write_file::write_atomically_with(path, |w| {
        let mut writer = npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(&shape)
            .writer(w)
            .begin_nd()?;
        writer.extend(array.data.iter().copied())?;
        writer.finish()
    })
    .map_err(NpyError::from)
}

/// Writes `array` (bfloat16 values held as float32, rounded to bfloat16 if they are not) as a
/// little-endian `<u2` `.npy` file of bfloat16 bit patterns (see the module doc).
pub fn write_npy_bf16(path: &Path, array: &Array) -> Result<(), NpyError> {
    use npyz::WriterBuilder;
    let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
    crate::write_file::write_atomically_with(path, |w| {
        let mut writer = npyz::WriteOptions::<u16>::new()
            .default_dtype()
            .shape(&shape)
            .writer(w)
            .begin_nd()?;
        writer.extend(
            array
                .data
                .iter()
                .map(|&x| (vocab::round_bf16(x).to_bits() >> 16) as u16),
        )?;
        writer.finish()
    })
    .map_err(NpyError::from)
}

/// Writes `array` (integers held as float32) as a little-endian `.npy` file of the integer dtype
/// NKI names `int` (`uint32` gives `<u4`, `int8` `|i1`): each value converted as Rust's `as`
/// does, saturating at the dtype's range (the all-ones `uint32` that nkc holds as 2^32 is
/// `u32::MAX`), NaN as 0. Another name writes float32.
pub fn write_npy_int(path: &Path, array: &Array, int: &str) -> Result<(), NpyError> {
    fn write<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
        path: &Path,
        array: &Array,
        convert: fn(f32) -> T,
    ) -> Result<(), NpyError> {
        use npyz::WriterBuilder;
        let shape: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
        crate::write_file::write_atomically_with(path, |w| {
            let mut writer = npyz::WriteOptions::<T>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()?;
            writer.extend(array.data.iter().map(|&x| convert(x)))?;
            writer.finish()
        })
        .map_err(NpyError::from)
    }
    match int {
        "uint32" => write::<u32>(path, array, |x| x as u32),
        "int32" => write::<i32>(path, array, |x| x as i32),
        "uint16" => write::<u16>(path, array, |x| x as u16),
        "int16" => write::<i16>(path, array, |x| x as i16),
        "uint8" => write::<u8>(path, array, |x| x as u8),
        "int8" => write::<i8>(path, array, |x| x as i8),
        _ => write_npy(path, array),
    }
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

    /// Found by `fuzz_npy_header`: a shape whose product overflows made npyz panic.
    #[test]
    fn a_shape_past_2_64_is_an_error() {
        let h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615, 2), }";
        let e = with_byte_order(h.to_vec()).unwrap_err();
        assert!(matches!(e, HeaderError::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("claims shape"), "{e}");
    }

    /// The header parser takes time linear in the header: 10^5 nested brackets are an error at
    /// once, quoting at most a line.
    #[test]
    fn nested_brackets_parse_in_linear_time() {
        let started = std::time::Instant::now();
        for open in ["(", "[", "[("] {
            let h = format!(
                "{{'descr': {}'<f4', 'fortran_order': False, 'shape': {}2, 2), }}",
                open.repeat(100_000),
                open.repeat(100_000)
            );
            let e = parse_header(h.as_bytes()).unwrap_err().to_string();
            assert!(e.len() < 200, "{e}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
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
            .writer(std::io::BufWriter::new(File::create(&path).unwrap()))
            .begin_nd()
            .unwrap();
        w.extend([1.0f64, 2.0]).unwrap();
        w.finish().unwrap();
        let err = read_npy(&path).unwrap_err().to_string();
        assert!(err.contains("'<f8'") && err.contains("float32"), "{err}");
    }
}

//! Reading NumPy `.npy` files (format versions 1–3) by positioned reads of row blocks, so that
//! a file larger than memory can be streamed, and a file truncated while it is read is an I/O
//! error naming it (a memory map would crash the process with SIGBUS).
//!
//! Supported element types: float32, float64, int32, int64, little- or big-endian, in C or
//! Fortran order. Writing goes through [`NpyWriter`] and [`super::write_labels`].

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"\x93NUMPY";

/// Element type of an .npy file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpyDtype {
    /// float32.
    F32,
    /// float64.
    F64,
    /// int32.
    I32,
    /// int64.
    I64,
}

impl NpyDtype {
    fn size(self) -> usize {
        match self {
            NpyDtype::F32 | NpyDtype::I32 => 4,
            NpyDtype::F64 | NpyDtype::I64 => 8,
        }
    }
}

/// The parsed header of an .npy file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyHeader {
    /// Element type.
    pub dtype: NpyDtype,
    /// Byte order of the elements.
    pub big_endian: bool,
    /// Column-major storage.
    pub fortran_order: bool,
    /// The array's shape (0, 1 or 2 dimensions are accepted by the readers).
    pub shape: Vec<usize>,
    /// Byte offset of the first element.
    pub data_offset: usize,
}

/// An open .npy file: its header parsed, its data read on demand by positioned reads.
pub struct NpyFile {
    path: PathBuf,
    header: NpyHeader,
    file: File,
}

/// Bytes read per piece when elements must be converted (bounds the transient buffer).
const CONVERT_PIECE: usize = 16 << 20;

impl NpyFile {
    /// Opens `path`, parsing and checking its header and size.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        // Checked before opening: opening a pipe would wait for a writer.
        let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
        if !meta.is_file() {
            return Err(Error::parse(
                &path,
                None,
                None,
                "not a regular file (a pipe, device or folder): a .npy input is read at any \
                 offset, so it must be a file: copy it to one first",
            ));
        }
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if len == 0 {
            return Err(Error::parse(&path, None, None, "file is empty"));
        }
        let header = read_header(&path, &file, len)?;
        let elems = header
            .shape
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))
            .and_then(|e| e.checked_mul(header.dtype.size()));
        let available = len - header.data_offset as u64;
        match elems {
            Some(bytes) if bytes as u64 <= available => {}
            Some(bytes) => {
                return Err(Error::parse(
                    &path,
                    None,
                    None,
                    format!(
                        "truncated .npy: shape {:?} needs {bytes} bytes of data, the file has {available}",
                        header.shape
                    ),
                ))
            }
            None => {
                return Err(Error::parse(
                    &path,
                    None,
                    None,
                    format!(
                        "corrupt .npy: shape {:?} would hold more than 2^64 bytes; the file has {available}",
                        header.shape
                    ),
                ))
            }
        }
        Ok(NpyFile { path, header, file })
    }

    /// The parsed header.
    pub fn header(&self) -> &NpyHeader {
        &self.header
    }

    /// (rows, columns), reading a 1-D array as one column.
    pub fn dim(&self) -> Result<(usize, usize)> {
        match self.header.shape[..] {
            [n] => Ok((n, 1)),
            [n, d] => Ok((n, d)),
            _ => Err(Error::parse(
                &self.path,
                None,
                None,
                format!("expected a 1-D or 2-D array, got shape {:?}", self.header.shape),
            )),
        }
    }

    /// Reads `buf.len()` bytes from data byte `at`. A file that shrank since it was opened
    /// (truncated by another process) is an I/O error naming it, not a crash.
    fn read_at(&self, at: usize, buf: &mut [u8]) -> Result<()> {
        read_exact_at(&self.file, buf, (self.header.data_offset + at) as u64).map_err(|e| {
            let e = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::other("the file was truncated while being read")
            } else {
                e
            };
            Error::io(&self.path, e)
        })
    }

    fn element(&self, b: &[u8]) -> f64 {
        let be = self.header.big_endian;
        match self.header.dtype {
            NpyDtype::F32 => {
                let a = b.try_into().unwrap();
                (if be {
                    f32::from_be_bytes(a)
                } else {
                    f32::from_le_bytes(a)
                }) as f64
            }
            NpyDtype::F64 => {
                let a = b.try_into().unwrap();
                if be {
                    f64::from_be_bytes(a)
                } else {
                    f64::from_le_bytes(a)
                }
            }
            NpyDtype::I32 => {
                let a = b.try_into().unwrap();
                (if be {
                    i32::from_be_bytes(a)
                } else {
                    i32::from_le_bytes(a)
                }) as f64
            }
            NpyDtype::I64 => {
                let a = b.try_into().unwrap();
                (if be {
                    i64::from_be_bytes(a)
                } else {
                    i64::from_le_bytes(a)
                }) as f64
            }
        }
    }

    /// Whether the file holds `F` little-endian, so its bytes are `F`'s values.
    fn holds<F: Scalar>(&self) -> bool {
        let h = &self.header;
        let same = matches!(
            (F::DTYPE, h.dtype),
            ("float32", NpyDtype::F32) | ("float64", NpyDtype::F64)
        );
        same && !h.big_endian && cfg!(target_endian = "little")
    }

    /// Reads `out.len()` consecutive elements from element `first`, converted to `F`.
    fn read_elements<F: Scalar>(&self, first: usize, out: &mut [F]) -> Result<()> {
        let size = self.header.dtype.size();
        if self.holds::<F>() {
            // SAFETY: f32/f64 have no padding and every bit pattern is a value: the slice's
            // bytes may be overwritten with the file's little-endian values of F.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, std::mem::size_of_val(out))
            };
            return self.read_at(first * size, bytes);
        }
        let per_piece = (CONVERT_PIECE / size).max(1);
        let mut buf = vec![0u8; per_piece.min(out.len()) * size];
        for (p, piece) in out.chunks_mut(per_piece).enumerate() {
            let bytes = &mut buf[..piece.len() * size];
            self.read_at((first + p * per_piece) * size, bytes)?;
            piece
                .par_iter_mut()
                .zip(bytes.par_chunks_exact(size))
                .for_each(|(v, b)| *v = F::from_f64_lossy(self.element(b)));
        }
        Ok(())
    }

    /// Rows `start..end` converted to `F` (the whole array with `0..nrows`).
    pub fn rows<F: Scalar>(&self, start: usize, end: usize) -> Result<Array2<F>> {
        let (n, d) = self.dim()?;
        if start > end || end > n {
            return Err(Error::param(
                "rows",
                format!("{start}..{end}"),
                format!("file has {n} rows"),
            ));
        }
        let m = end - start;
        let out = if !self.header.fortran_order {
            let mut out = Array2::<F>::zeros((m, d));
            let slice = out.as_slice_mut().expect("a new array is standard");
            self.read_elements(start * d, slice)?;
            out
        } else {
            // Column-major: each column's rows are one run of the file.
            let mut out = Array2::<F>::zeros((d, m));
            for (j, mut col) in out.rows_mut().into_iter().enumerate() {
                let col = col.as_slice_mut().expect("a new array is standard");
                self.read_elements(j * n + start, col)?;
            }
            out.reversed_axes().as_standard_layout().into_owned()
        };
        self.check_conversion(&out, start)?;
        Ok(out)
    }

    /// A finite float64 value that became infinite as float32 is an error naming it (a NaN or
    /// infinity of the file itself is left to the data checks).
    fn check_conversion<F: Scalar>(&self, out: &Array2<F>, start: usize) -> Result<()> {
        if self.holds::<F>() || F::DTYPE != "float32" || self.header.dtype != NpyDtype::F64 {
            return Ok(());
        }
        let Some((pos, _)) = out.indexed_iter().find(|(_, v)| v.is_infinite()) else {
            return Ok(());
        };
        let (row, col) = (start + pos.0, pos.1);
        let (n, d) = self.dim()?;
        let index = if self.header.fortran_order {
            col * n + row
        } else {
            row * d + col
        };
        let mut value = [0.0f64];
        self.read_elements(index, &mut value)?;
        if !value[0].is_finite() {
            return Ok(());
        }
        Err(Error::OutOfRange(format!(
            "{}: value {:e} at row {row}, column {col} is beyond the range of float32 (±{:.3e}); read it as float64",
            self.path.display(),
            value[0],
            f32::MAX
        )))
    }

    /// The whole array converted to `F`.
    pub fn to_array<F: Scalar>(&self) -> Result<Array2<F>> {
        let (n, d) = self.dim()?;
        crate::memory::check(
            || format!("reading {n} x {d} {} values of {}", F::DTYPE, self.path.display()),
            crate::memory::product(&[n, d, size_of::<F>()]),
            crate::error::hints::READ_ROWS,
        )?;
        self.rows(0, n)
    }

    /// A 1-D (or n×1) array of integer values, as labels.
    pub fn to_labels(&self) -> Result<Vec<i64>> {
        let (n, d) = self.dim()?;
        if d != 1 {
            return Err(Error::parse(
                &self.path,
                None,
                None,
                format!("labels must be a 1-D array, got shape {:?}", self.header.shape),
            ));
        }
        crate::memory::check(
            || format!("reading {n} labels of {}", self.path.display()),
            crate::memory::product(&[n, 16]),
            crate::error::hints::READ_LABELS,
        )?;
        let mut values = vec![0f64; n];
        self.read_elements(0, &mut values)?;
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                if v.fract() != 0.0 || !v.is_finite() {
                    Err(Error::parse(
                        &self.path,
                        None,
                        None,
                        format!("label {v} at index {i} is not an integer"),
                    ))
                } else {
                    Ok(v as i64)
                }
            })
            .collect()
    }
}

/// `pread` until `buf` is full.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let (mut buf, mut offset) = (buf, offset);
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buf, offset) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Reads and parses the header (the magic, version, length and dict).
fn read_header(path: &Path, file: &File, len: u64) -> Result<NpyHeader> {
    let io = |e| Error::io(path, e);
    let mut head = vec![0u8; len.min(12) as usize];
    read_exact_at(file, &mut head, 0).map_err(io)?;
    let dict_len = match head.get(6) {
        Some(1) if head.len() >= 10 => u16::from_le_bytes([head[8], head[9]]) as u64 + 10,
        Some(2 | 3) if head.len() >= 12 => {
            u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as u64 + 12
        }
        _ => head.len() as u64,
    };
    let mut bytes = vec![0u8; dict_len.min(len) as usize];
    read_exact_at(file, &mut bytes, 0).map_err(io)?;
    parse_header(path, &bytes)
}

pub(crate) fn parse_header(path: &Path, bytes: &[u8]) -> Result<NpyHeader> {
    let err = |msg: String| Error::parse(path, None, None, msg);
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err("not a .npy file (missing the \\x93NUMPY magic)".into()));
    }
    let major = bytes[6];
    let (len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize, 12),
        _ => return Err(err(format!("unsupported .npy format version {major}"))),
    };
    let end = start + len;
    if bytes.len() < end {
        return Err(err("truncated .npy header".into()));
    }
    let text = std::str::from_utf8(&bytes[start..end]).map_err(|_| err("header is not valid text".into()))?;
    let descr = dict_value(text, "descr").ok_or_else(|| err("header has no 'descr'".into()))?;
    let descr = descr.trim().trim_matches(|c| c == '\'' || c == '"');
    let (big_endian, dtype) = match descr {
        "<f4" | "=f4" => (false, NpyDtype::F32),
        "<f8" | "=f8" => (false, NpyDtype::F64),
        "<i4" | "=i4" => (false, NpyDtype::I32),
        "<i8" | "=i8" => (false, NpyDtype::I64),
        ">f4" => (true, NpyDtype::F32),
        ">f8" => (true, NpyDtype::F64),
        ">i4" => (true, NpyDtype::I32),
        ">i8" => (true, NpyDtype::I64),
        other => {
            return Err(err(format!(
                "unsupported dtype {other}: expected float32, float64, int32 or int64"
            )))
        }
    };
    let fortran =
        dict_value(text, "fortran_order").ok_or_else(|| err("header has no 'fortran_order'".into()))?;
    let fortran_order = match fortran.trim() {
        "True" => true,
        "False" => false,
        other => return Err(err(format!("bad fortran_order {other}"))),
    };
    let shape_text = dict_value(text, "shape").ok_or_else(|| err("header has no 'shape'".into()))?;
    let shape = shape_text
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| err(format!("bad shape {shape_text}")))?;
    Ok(NpyHeader {
        dtype,
        big_endian,
        fortran_order,
        shape,
        data_offset: end,
    })
}

/// The text of `key`'s value in a Python dict literal (up to the next top-level comma).
fn dict_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let pos = text
        .find(&format!("'{key}'"))
        .or_else(|| text.find(&format!("\"{key}\"")))?;
    let rest = &text[pos + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?;
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

/// The bytes of an .npy version-1 header (padded to 64 bytes) for a C-order array.
pub(crate) fn header_bytes(descr: &str, shape: &[usize]) -> Vec<u8> {
    let shape_text = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    let unpadded = MAGIC.len() + 4 + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let mut out = Vec::with_capacity(unpadded + pad);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&((dict.len() + pad + 1) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// Streams an `rows × cols` little-endian C-order .npy of `F` to `path`, one block of rows at
/// a time, so a matrix larger than memory can be written. The content goes to a temporary file
/// in the same folder, renamed over `path` by [`NpyWriter::finish`] once every row is written;
/// a writer dropped before that (an error, a panic) removes its temporary file.
pub struct NpyWriter<F> {
    path: PathBuf,
    tmp: super::output::TempOutput,
    out: std::io::BufWriter<File>,
    rows: usize,
    cols: usize,
    written: usize,
    _f: std::marker::PhantomData<F>,
}

impl<F: Scalar> NpyWriter<F> {
    /// Starts writing `path`.
    pub fn create(path: impl AsRef<Path>, rows: usize, cols: usize) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let tmp = super::output::temp_beside(&path)?;
        let file = tmp.reopen().map_err(|e| Error::io(&path, e))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let descr = if F::DTYPE == "float32" { "<f4" } else { "<f8" };
        out.write_all(&header_bytes(descr, &[rows, cols]))
            .map_err(|e| Error::io(&path, e))?;
        Ok(NpyWriter {
            path,
            tmp,
            out,
            rows,
            cols,
            written: 0,
            _f: std::marker::PhantomData,
        })
    }

    /// Appends the next rows.
    pub fn write_rows(&mut self, block: ArrayView2<F>) -> Result<()> {
        if block.ncols() != self.cols || self.written + block.nrows() > self.rows {
            return Err(Error::ShapeMismatch {
                what: format!("rows written to {}", self.path.display()),
                expected: format!("{} more rows of {} columns", self.rows - self.written, self.cols),
                got: format!("{} x {}", block.nrows(), block.ncols()),
            });
        }
        let io = |e| Error::io(&self.path, e);
        let mut bytes = Vec::with_capacity(self.cols * std::mem::size_of::<F>());
        for row in block.rows() {
            match row.as_slice() {
                Some(vals) if cfg!(target_endian = "little") => {
                    // SAFETY: f32/f64 have no padding; the bytes of a contiguous slice are the
                    // little-endian values the format stores.
                    let raw = unsafe {
                        std::slice::from_raw_parts(vals.as_ptr() as *const u8, std::mem::size_of_val(vals))
                    };
                    self.out.write_all(raw).map_err(io)?;
                }
                _ => {
                    bytes.clear();
                    for v in row {
                        if F::DTYPE == "float32" {
                            bytes.extend_from_slice(&(v.to_f64_exact() as f32).to_le_bytes());
                        } else {
                            bytes.extend_from_slice(&v.to_f64_exact().to_le_bytes());
                        }
                    }
                    self.out.write_all(&bytes).map_err(io)?;
                }
            }
        }
        self.written += block.nrows();
        Ok(())
    }

    /// Checks that every row was written and moves the file into place.
    pub fn finish(self) -> Result<()> {
        if self.written != self.rows {
            return Err(Error::ShapeMismatch {
                what: format!("rows written to {}", self.path.display()),
                expected: self.rows.to_string(),
                got: self.written.to_string(),
            });
        }
        let NpyWriter { path, tmp, out, .. } = self;
        out.into_inner().map_err(|e| Error::io(&path, e.into_error()))?;
        tmp.persist()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_raw(dir: &Path, name: &str, header: &str, version: u8, data: &[u8]) -> PathBuf {
        let p = dir.join(name);
        let mut f = File::create(&p).unwrap();
        f.write_all(MAGIC).unwrap();
        f.write_all(&[version, 0]).unwrap();
        if version == 1 {
            f.write_all(&(header.len() as u16).to_le_bytes()).unwrap();
        } else {
            f.write_all(&(header.len() as u32).to_le_bytes()).unwrap();
        }
        f.write_all(header.as_bytes()).unwrap();
        f.write_all(data).unwrap();
        p
    }

    #[test]
    fn reads_versions_orders_and_dtypes() {
        let dir = tempfile::tempdir().unwrap();
        let vals = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        for v in [1u8, 2, 3] {
            let p = write_raw(
                dir.path(),
                &format!("v{v}.npy"),
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n",
                v,
                &le,
            );
            let a = NpyFile::open(&p).unwrap().to_array::<f64>().unwrap();
            assert_eq!(a, ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        }
        let p = write_raw(
            dir.path(),
            "f.npy",
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }\n",
            1,
            &le,
        );
        let a = NpyFile::open(&p).unwrap().to_array::<f32>().unwrap();
        assert_eq!(a, ndarray::array![[1.0f32, 3.0, 5.0], [2.0, 4.0, 6.0]]);
        let be: Vec<u8> = [7i32, -8].iter().flat_map(|v| v.to_be_bytes()).collect();
        let p = write_raw(
            dir.path(),
            "be.npy",
            "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n",
            1,
            &be,
        );
        assert_eq!(NpyFile::open(&p).unwrap().to_labels().unwrap(), vec![7, -8]);
        let i8s: Vec<u8> = [3i64, 4].iter().flat_map(|v| v.to_le_bytes()).collect();
        let p = write_raw(
            dir.path(),
            "i8.npy",
            "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }\n",
            1,
            &i8s,
        );
        assert_eq!(
            NpyFile::open(&p).unwrap().to_array::<f64>().unwrap(),
            ndarray::array![[3.0, 4.0]]
        );
    }

    #[test]
    fn malformed_files_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_raw(
            dir.path(),
            "t.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n",
            1,
            &[0u8; 40],
        );
        let e = NpyFile::open(&p).err().unwrap().to_string();
        assert!(e.contains("t.npy") && e.contains("truncated"), "{e}");
        let p = write_raw(
            dir.path(),
            "u.npy",
            "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }\n",
            1,
            &[0u8; 2],
        );
        assert!(NpyFile::open(&p)
            .err()
            .unwrap()
            .to_string()
            .contains("unsupported dtype <f2"));
        let p = dir.path().join("bad.npy");
        std::fs::write(&p, b"hello world").unwrap();
        assert!(NpyFile::open(&p)
            .err()
            .unwrap()
            .to_string()
            .contains("not a .npy file"));
        let p = dir.path().join("empty.npy");
        std::fs::write(&p, b"").unwrap();
        assert!(NpyFile::open(&p)
            .err()
            .unwrap()
            .to_string()
            .contains("file is empty"));
    }

    #[test]
    fn written_matrix_round_trips_and_failure_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.npy");
        let mut w = NpyWriter::<f32>::create(&p, 3, 2).unwrap();
        w.write_rows(ndarray::array![[0.0f32, 1.0], [2.0, 3.0]].view())
            .unwrap();
        w.write_rows(ndarray::array![[4.0f32, 5.0]].view()).unwrap();
        assert!(w.write_rows(ndarray::array![[6.0f32, 7.0]].view()).is_err());
        w.finish().unwrap();
        let f = NpyFile::open(&p).unwrap();
        assert_eq!(f.header().data_offset % 64, 0);
        assert_eq!(
            f.to_array::<f32>().unwrap(),
            ndarray::array![[0.0f32, 1.0], [2.0, 3.0], [4.0, 5.0]]
        );
        let q = dir.path().join("fail.npy");
        let mut w = NpyWriter::<f64>::create(&q, 2, 2).unwrap();
        w.write_rows(ndarray::array![[1.0, 2.0]].view()).unwrap();
        assert!(w.finish().unwrap_err().to_string().contains("expected 2, got 1"));
        let w = NpyWriter::<f64>::create(&q, 2, 2).unwrap();
        drop(w);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only m.npy remains"
        );
    }
}

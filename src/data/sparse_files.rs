//! Sparse matrices from files: scipy's `.npz` (`scipy.sparse.save_npz`: CSR, CSC or COO,
//! stored or deflated, zip64 as numpy writes it), Matrix Market `.mtx` (coordinate — real,
//! integer or pattern; general, symmetric or skew-symmetric — and dense `array` files) and
//! svmlight / libsvm text (`.svm`, `.svmlight`, `.libsvm`: `label index:value ...`, indices
//! one-based unless a 0 appears, as scikit-learn's `load_svmlight_file(zero_based="auto")`;
//! the labels are not read).
//!
//! Every reader ends in [`Csr::new`] or [`Csr::from_triplets`], so what it returns passed the
//! checks of a CSR matrix. CSR members of an `.npz` must already be canonical (sorted, distinct
//! indices per row: scipy's `has_canonical_format`); COO and CSC entries, Matrix Market
//! entries and svmlight rows may come in any order and repeat a place, and are summed there
//! (scipy's `tocsr()`), except that an svmlight row's indices must increase, as scikit-learn
//! requires. Sizes are checked against the memory limit before the arrays are allocated.

use super::sparse::{csr_bytes, Csr};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use std::path::Path;

/// The sparse file kinds, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseKind {
    /// scipy's `save_npz`.
    Npz,
    /// Matrix Market.
    Mtx,
    /// svmlight / libsvm text.
    Svmlight,
}

impl SparseKind {
    /// The sparse kind of `path`'s extension, if it is one.
    pub fn of(path: &Path) -> Option<SparseKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "npz" => Some(SparseKind::Npz),
            "mtx" => Some(SparseKind::Mtx),
            "svm" | "svmlight" | "libsvm" => Some(SparseKind::Svmlight),
            _ => None,
        }
    }
}

/// Reads the sparse matrix in `path` (its kind from the extension, see [`SparseKind`]).
pub fn read_sparse<F: Scalar>(path: impl AsRef<Path>) -> Result<Csr<F>> {
    let path = path.as_ref();
    let kind = SparseKind::of(path).ok_or_else(|| {
        Error::parse(
            path,
            None,
            None,
            "not a sparse file: expected .npz, .mtx, .svm, .svmlight or .libsvm",
        )
    })?;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    crate::memory::check(
        || format!("reading {}", path.display()),
        meta.len(),
        crate::error::hints::READ_ROWS,
    )?;
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let parsed = match kind {
        SparseKind::Npz => npz::read(path, &bytes),
        SparseKind::Mtx => text(path, &bytes).and_then(|t| mtx(path, t)),
        SparseKind::Svmlight => text(path, &bytes).and_then(|t| svmlight(path, t)),
    };
    // (a structural error names the file)
    parsed.map_err(|e| match e {
        Error::MalformedSparse(m) | Error::ShapeMismatch { what: m, .. } => Error::parse(path, None, None, m),
        other => other,
    })
}

fn text<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| Error::parse(path, None, None, format!("not UTF-8 text: {e}")))
}

/// Checks the memory the triplets and the matrix of `nnz` entries will take.
fn check_entries(path: &Path, nrows: usize, nnz: usize, elem: usize) -> Result<()> {
    crate::memory::check(
        || format!("reading {nnz} sparse entries of {}", path.display()),
        csr_bytes(nrows, nnz, elem).saturating_add(crate::memory::product(&[nnz, 16 + elem])),
        crate::error::hints::READ_ROWS,
    )
}

/// A number in a text file, or an error naming its line.
fn number<T: std::str::FromStr>(path: &Path, line: usize, s: &str, what: &str) -> Result<T> {
    s.parse()
        .map_err(|_| Error::parse(path, Some(line), None, format!("{what} {s:?} is not a number")))
}

/// Matrix Market: the banner, comments, the size line, then the entries.
fn mtx<F: Scalar>(path: &Path, text: &str) -> Result<Csr<F>> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let bad = |line: usize, msg: String| Error::parse(path, Some(line), None, msg);
    let (_, banner) = lines.next().ok_or_else(|| bad(1, "empty file".into()))?;
    let words: Vec<String> = banner.split_whitespace().map(str::to_ascii_lowercase).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(bad(
            1,
            "not a Matrix Market file: expected %%MatrixMarket matrix FORMAT FIELD SYMMETRY".into(),
        ));
    }
    let coordinate = match words[2].as_str() {
        "coordinate" => true,
        "array" => false,
        other => {
            return Err(bad(
                1,
                format!("unknown format {other}: expected coordinate or array"),
            ))
        }
    };
    let pattern = match words[3].as_str() {
        "real" | "double" | "integer" => false,
        "pattern" if coordinate => true,
        other => {
            return Err(bad(
                1,
                format!("unsupported field {other}: expected real, integer or pattern"),
            ))
        }
    };
    let mirror = match words[4].as_str() {
        "general" => None,
        "symmetric" => Some(1.0),
        "skew-symmetric" => Some(-1.0),
        other => {
            return Err(bad(
                1,
                format!("unsupported symmetry {other}: expected general, symmetric or skew-symmetric"),
            ))
        }
    };
    let mut body = lines.filter(|(_, l)| !l.trim_start().starts_with('%') && !l.trim().is_empty());
    let (size_line, size) = body.next().ok_or_else(|| bad(1, "no size line".into()))?;
    let dims: Vec<usize> = size
        .split_whitespace()
        .map(|s| number(path, size_line, s, "size"))
        .collect::<Result<_>>()?;
    let (nrows, ncols, declared) = match (coordinate, &dims[..]) {
        (true, &[m, n, nnz]) => (m, n, nnz),
        (false, &[m, n]) => (m, n, m.saturating_mul(n)),
        _ => return Err(bad(size_line, format!("bad size line {size:?}"))),
    };
    if mirror.is_some() && nrows != ncols {
        return Err(bad(
            size_line,
            format!("a symmetric matrix must be square, got {nrows} x {ncols}"),
        ));
    }
    check_entries(
        path,
        nrows,
        declared.saturating_mul(if mirror.is_some() { 2 } else { 1 }),
        size_of::<F>(),
    )?;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::<F>::new());
    let mut count = 0usize;
    for (line, entry) in body {
        if count == declared {
            return Err(bad(line, format!("more entries than the {declared} declared")));
        }
        let fields: Vec<&str> = entry.split_whitespace().collect();
        let (i, j, v) = if coordinate {
            let want = if pattern { 2 } else { 3 };
            if fields.len() != want {
                return Err(bad(line, format!("expected {want} fields, got {}", fields.len())));
            }
            let i: usize = number(path, line, fields[0], "row index")?;
            let j: usize = number(path, line, fields[1], "column index")?;
            if i == 0 || j == 0 || i > nrows || j > ncols {
                return Err(bad(
                    line,
                    format!("entry ({i}, {j}) is outside 1..={nrows} x 1..={ncols}"),
                ));
            }
            let v = if pattern {
                1.0
            } else {
                number(path, line, fields[2], "value")?
            };
            (i - 1, j - 1, v)
        } else {
            if fields.len() != 1 {
                return Err(bad(line, format!("expected 1 value, got {}", fields.len())));
            }
            // (column-major)
            (
                count % nrows.max(1),
                count / nrows.max(1),
                number(path, line, fields[0], "value")?,
            )
        };
        if !f64::is_finite(v) {
            return Err(bad(line, format!("non-finite value {v}")));
        }
        count += 1;
        if v == 0.0 && !coordinate {
            continue;
        }
        rows.push(i);
        cols.push(j);
        vals.push(F::from_f64_lossy(v));
        if let Some(sign) = mirror.filter(|_| i != j) {
            rows.push(j);
            cols.push(i);
            vals.push(F::from_f64_lossy(sign * v));
        }
    }
    if count != declared {
        return Err(Error::parse(
            path,
            None,
            None,
            format!("{count} entries, but {declared} declared"),
        ));
    }
    Csr::from_triplets(nrows, ncols, &rows, &cols, &vals)
}

/// svmlight / libsvm: `label [qid:q] index:value ... [# comment]` per row.
fn svmlight<F: Scalar>(path: &Path, text: &str) -> Result<Csr<F>> {
    let mut rows: Vec<(usize, Vec<(u64, f64)>)> = Vec::new();
    let mut zero_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut fields = content.split_whitespace();
        fields.next(); // the label
        let mut entries: Vec<(u64, f64)> = Vec::new();
        for field in fields {
            let (index, value) = field.split_once(':').ok_or_else(|| {
                Error::parse(path, Some(line), None, format!("{field:?} is not index:value"))
            })?;
            if index == "qid" {
                continue;
            }
            let index: u64 = number(path, line, index, "feature index")?;
            let value: f64 = number(path, line, value, "value")?;
            if !value.is_finite() {
                return Err(Error::parse(
                    path,
                    Some(line),
                    None,
                    format!("non-finite value {value}"),
                ));
            }
            if entries.last().is_some_and(|&(last, _)| index <= last) {
                return Err(Error::parse(
                    path,
                    Some(line),
                    None,
                    "feature indices must be sorted and distinct within a row (as scikit-learn's load_svmlight_file)",
                ));
            }
            zero_seen |= index == 0;
            entries.push((index, value));
        }
        rows.push((line, entries));
    }
    let shift = u64::from(!zero_seen);
    let nnz: usize = rows.iter().map(|r| r.1.len()).sum();
    check_entries(path, rows.len(), nnz, size_of::<F>())?;
    let ncols = rows
        .iter()
        .filter_map(|r| r.1.last())
        .map(|&(j, _)| j + 1 - shift)
        .max()
        .unwrap_or(0);
    let ncols = usize::try_from(ncols)
        .ok()
        .filter(|&c| c <= u32::MAX as usize + 1)
        .ok_or_else(|| {
            Error::parse(
                path,
                None,
                None,
                format!("feature index {ncols} is beyond 2^32 columns"),
            )
        })?;
    let mut indptr = Vec::with_capacity(rows.len() + 1);
    indptr.push(0);
    let (mut indices, mut data) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
    for (_, entries) in &rows {
        for &(j, v) in entries {
            indices.push((j - shift) as u32);
            data.push(F::from_f64_lossy(v));
        }
        indptr.push(data.len());
    }
    Csr::new(ncols, indptr, indices, data)
}

/// scipy's `save_npz` files: a zip archive of .npy members.
mod npz {
    use super::*;

    /// The members of a zip archive: name → (compression method, compressed bytes, size,
    /// CRC-32).
    struct Member<'a> {
        name: String,
        method: u16,
        data: &'a [u8],
        size: u64,
        crc: u32,
    }

    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
    }
    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    }
    fn u64_at(b: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    }

    /// The central directory's entries (zip64 sizes and offsets where the 32-bit fields are
    /// saturated).
    fn members(b: &[u8]) -> Option<Vec<Member<'_>>> {
        let eocd = (0..=b.len().checked_sub(22)?)
            .rev()
            .find(|&i| u32_at(b, i) == Some(0x0605_4b50))?;
        let mut count = u64::from(u16_at(b, eocd + 10)?);
        let mut dir = u64::from(u32_at(b, eocd + 16)?);
        if count == 0xFFFF || dir == 0xFFFF_FFFF {
            // the zip64 end record, through its locator just before the end record
            let locator = eocd.checked_sub(20)?;
            (u32_at(b, locator)? == 0x0706_4b50).then_some(())?;
            let end64 = usize::try_from(u64_at(b, locator + 8)?).ok()?;
            (u32_at(b, end64)? == 0x0606_4b50).then_some(())?;
            count = u64_at(b, end64 + 32)?;
            dir = u64_at(b, end64 + 48)?;
        }
        let mut at = usize::try_from(dir).ok()?;
        let mut out = Vec::new();
        for _ in 0..count {
            (u32_at(b, at)? == 0x0201_4b50).then_some(())?;
            let method = u16_at(b, at + 10)?;
            let crc = u32_at(b, at + 16)?;
            let mut compressed = u64::from(u32_at(b, at + 20)?);
            let mut size = u64::from(u32_at(b, at + 24)?);
            let (name_len, extra_len, comment_len) = (
                u16_at(b, at + 28)? as usize,
                u16_at(b, at + 30)? as usize,
                u16_at(b, at + 32)? as usize,
            );
            let mut local = u64::from(u32_at(b, at + 42)?);
            let name = String::from_utf8_lossy(b.get(at + 46..at + 46 + name_len)?).into_owned();
            // zip64 extra field: the saturated fields, in the order size, compressed, offset
            let mut e = at + 46 + name_len;
            let extra_end = e + extra_len;
            while e + 4 <= extra_end {
                let (id, len) = (u16_at(b, e)?, u16_at(b, e + 2)? as usize);
                if id == 1 {
                    let mut f = e + 4;
                    for field in [&mut size, &mut compressed, &mut local] {
                        if *field == 0xFFFF_FFFF {
                            *field = u64_at(b, f)?;
                            f += 8;
                        }
                    }
                }
                e += 4 + len;
            }
            let local = usize::try_from(local).ok()?;
            (u32_at(b, local)? == 0x0403_4b50).then_some(())?;
            let start = local + 30 + u16_at(b, local + 26)? as usize + u16_at(b, local + 28)? as usize;
            let data = b.get(start..start.checked_add(usize::try_from(compressed).ok()?)?)?;
            out.push(Member {
                name,
                method,
                data,
                size,
                crc,
            });
            at = extra_end + comment_len;
        }
        Some(out)
    }

    /// CRC-32 (IEEE), as zip stores it.
    fn crc32(bytes: &[u8]) -> u32 {
        static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
        let table = TABLE.get_or_init(|| {
            let mut t = [0u32; 256];
            for (i, e) in t.iter_mut().enumerate() {
                let mut c = i as u32;
                for _ in 0..8 {
                    c = if c & 1 != 0 {
                        0xEDB8_8320 ^ (c >> 1)
                    } else {
                        c >> 1
                    };
                }
                *e = c;
            }
            t
        });
        !bytes.iter().fold(!0u32, |c, &b| {
            table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
        })
    }

    /// A member's bytes, inflated and checked against its CRC.
    fn contents(path: &Path, m: &Member<'_>) -> Result<Vec<u8>> {
        let bad = |msg: String| Error::parse(path, None, None, format!("{}: {msg}", m.name));
        crate::memory::check(
            || format!("reading {} of {}", m.name, path.display()),
            m.size,
            crate::error::hints::READ_ROWS,
        )?;
        let bytes = match m.method {
            0 => m.data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(m.data, m.size as usize)
                .map_err(|e| bad(format!("cannot inflate: {e:?}")))?,
            other => return Err(bad(format!("unsupported zip compression method {other}"))),
        };
        if bytes.len() as u64 != m.size || crc32(&bytes) != m.crc {
            return Err(bad("corrupt member (size or CRC-32 does not match)".into()));
        }
        Ok(bytes)
    }

    /// A 1-D numeric .npy member: its values as f64 (floats) or i64 (integers).
    enum Values {
        Float(Vec<f64>),
        Int(Vec<i64>),
    }

    fn npy(path: &Path, name: &str, bytes: &[u8]) -> Result<Values> {
        let h = crate::data::npy::parse_header(path, bytes)?;
        let n: usize = h.shape.iter().product();
        use crate::data::npy::NpyDtype::*;
        let size = match h.dtype {
            F32 | I32 => 4,
            F64 | I64 => 8,
        };
        let body = bytes
            .get(h.data_offset..h.data_offset + n * size)
            .ok_or_else(|| Error::parse(path, None, None, format!("{name}: truncated")))?;
        let word = |c: &[u8]| -> [u8; 8] {
            let mut w = [0u8; 8];
            if h.big_endian {
                w[..c.len()].copy_from_slice(&c.iter().rev().copied().collect::<Vec<u8>>());
            } else {
                w[..c.len()].copy_from_slice(c);
            }
            w
        };
        let chunks = body.chunks_exact(size);
        Ok(match h.dtype {
            F32 => Values::Float(
                chunks
                    .map(|c| f64::from(f32::from_le_bytes(word(c)[..4].try_into().expect("4 bytes"))))
                    .collect(),
            ),
            F64 => Values::Float(chunks.map(|c| f64::from_le_bytes(word(c))).collect()),
            I32 => Values::Int(
                chunks
                    .map(|c| i64::from(i32::from_le_bytes(word(c)[..4].try_into().expect("4 bytes"))))
                    .collect(),
            ),
            I64 => Values::Int(chunks.map(|c| i64::from_le_bytes(word(c))).collect()),
        })
    }

    /// The matrix format the `format` member names: a 0-d array of bytes (`b'csr'`, as
    /// scipy writes it) or of unicode (UTF-32) text, whose value ends the member.
    fn format(bytes: &[u8]) -> Option<&'static str> {
        let utf32 = |f: &str| f.bytes().flat_map(|c| [c, 0, 0, 0]).collect::<Vec<u8>>();
        ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"]
            .into_iter()
            .find(|f| bytes.ends_with(f.as_bytes()) || bytes.ends_with(&utf32(f)))
            .filter(|_| bytes.starts_with(b"\x93NUMPY"))
    }

    pub(super) fn read<F: Scalar>(path: &Path, bytes: &[u8]) -> Result<Csr<F>> {
        let members = members(bytes)
            .ok_or_else(|| Error::parse(path, None, None, "not a readable .npz (zip) archive"))?;
        let get = |name: &str| -> Result<Vec<u8>> {
            let m = members
                .iter()
                .find(|m| m.name == format!("{name}.npy"))
                .ok_or_else(|| {
                    Error::parse(
                        path,
                        None,
                        None,
                        format!("no {name}.npy member: not a scipy.sparse.save_npz file"),
                    )
                })?;
            contents(path, m)
        };
        let ints = |name: &str| -> Result<Vec<usize>> {
            match npy(path, name, &get(name)?)? {
                Values::Int(v) => v
                    .into_iter()
                    .map(|x| {
                        usize::try_from(x).map_err(|_| {
                            Error::parse(path, None, None, format!("{name}: negative value {x}"))
                        })
                    })
                    .collect(),
                Values::Float(_) => Err(Error::parse(
                    path,
                    None,
                    None,
                    format!("{name}: expected integers"),
                )),
            }
        };
        let data: Vec<F> = match npy(path, "data", &get("data")?)? {
            Values::Float(v) => v.into_iter().map(F::from_f64_lossy).collect(),
            Values::Int(v) => v.into_iter().map(|x| F::from_f64_lossy(x as f64)).collect(),
        };
        let shape = ints("shape")?;
        let [nrows, ncols] = shape[..] else {
            return Err(Error::parse(
                path,
                None,
                None,
                format!("shape {shape:?} is not 2-D"),
            ));
        };
        let fmt = format(&get("format")?)
            .ok_or_else(|| Error::parse(path, None, None, "unreadable format member"))?;
        check_entries(path, nrows, data.len(), size_of::<F>())?;
        match fmt {
            "csr" => {
                let indptr = ints("indptr")?;
                if indptr.len() != nrows + 1 {
                    return Err(Error::parse(
                        path,
                        None,
                        None,
                        format!("indptr has {} offsets for {nrows} rows", indptr.len()),
                    ));
                }
                let indices = ints("indices")?
                    .into_iter()
                    .map(|j| {
                        u32::try_from(j)
                            .map_err(|_| Error::MalformedSparse(format!("column index {j} beyond 2^32")))
                    })
                    .collect::<Result<Vec<u32>>>()?;
                Csr::new(ncols, indptr, indices, data)
            }
            "csc" => {
                let (indptr, indices) = (ints("indptr")?, ints("indices")?);
                if indptr.len() != ncols + 1
                    || indices.len() != data.len()
                    || indptr.last() != Some(&data.len())
                {
                    return Err(Error::parse(
                        path,
                        None,
                        None,
                        "CSC arrays do not agree with the shape and values",
                    ));
                }
                let mut cols = vec![0usize; data.len()];
                for j in 0..ncols {
                    if indptr[j] > indptr[j + 1] {
                        return Err(Error::parse(
                            path,
                            None,
                            None,
                            format!("column offsets decrease at column {j}"),
                        ));
                    }
                    cols[indptr[j]..indptr[j + 1]].fill(j);
                }
                Csr::from_triplets(nrows, ncols, &indices, &cols, &data)
            }
            "coo" => {
                let (rows, cols) = (ints("row")?, ints("col")?);
                Csr::from_triplets(nrows, ncols, &rows, &cols, &data)
            }
            other => Err(Error::parse(
                path,
                None,
                None,
                format!(
                    "a {other} matrix: clustr reads csr, csc and coo (convert with .tocsr() before save_npz)"
                ),
            )),
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn crc32_of_a_known_string() {
            assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
        }
    }
}

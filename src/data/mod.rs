//! Data in and out: .npy and .csv matrices, sparse matrices ([`sparse`], read by
//! [`sparse_files`]), label files, output files that never lose data ([`output`]), and the
//! input checks every algorithm shares ([`validate`]).

pub mod columns;
pub mod csv;
pub mod npy;
pub mod output;
pub mod shards;
pub mod sparse;
pub mod sparse_files;
pub mod validate;

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::Array2;
use std::io::{BufWriter, Write};
use std::path::Path;

pub use self::csv::{read_csv, CsvOptions, LabelColumn, Table};
pub use npy::NpyFile;
pub use output::{atomic_write, check_writable, remove_pending_outputs};
pub use shards::NpyRows;
pub use sparse::{Csr, CsrView};
pub use sparse_files::{read_sparse, SparseKind};

/// `v` itself when its rows are contiguous, otherwise a C-order copy (rows must be slices for
/// the distance kernels).
pub fn standard_layout<'a, T: Clone>(
    v: ndarray::ArrayView2<'a, T>,
) -> ndarray::CowArray<'a, T, ndarray::Ix2> {
    if v.is_standard_layout() {
        v.into()
    } else {
        v.as_standard_layout().into_owned().into()
    }
}

/// The kind of a data file, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// NumPy .npy.
    Npy,
    /// Delimited text (.csv, .tsv, .txt).
    Csv,
}

impl FileKind {
    /// The kind of `path`, or an error naming the extensions accepted.
    pub fn of(path: &Path) -> Result<FileKind> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("npy") => Ok(FileKind::Npy),
            Some("csv" | "tsv" | "txt") => Ok(FileKind::Csv),
            None if is_stream(path) => Ok(FileKind::Csv),
            _ => Err(Error::parse(
                path,
                None,
                None,
                "unknown file type: expected .npy or .csv (.tsv, .txt)",
            )),
        }
    }
}

/// Reads a data matrix (rows = points) from .npy or delimited text, without validating values.
pub fn read_matrix<F: Scalar>(path: impl AsRef<Path>) -> Result<Array2<F>> {
    read_matrix_with(path, &CsvOptions::default())
}

/// [`read_matrix`] with options for delimited text (such as a forced header).
/// The path `-` is standard input, read as CSV; `csv.columns` selects the columns of either
/// kind of file.
pub fn read_matrix_with<F: Scalar>(path: impl AsRef<Path>, csv: &CsvOptions) -> Result<Array2<F>> {
    let path = path.as_ref();
    if path == Path::new(STDIN) {
        return Ok(self::csv::parse_csv(&read_stdin()?, path, csv)?.data);
    }
    if SparseKind::of(path).is_some() {
        return csv.columns.apply(densify(read_sparse::<F>(path)?.view(), path)?);
    }
    match FileKind::of(path)? {
        FileKind::Npy => csv.columns.apply(NpyFile::open(path)?.to_array()?),
        FileKind::Csv => Ok(read_csv(path, csv)?.data),
    }
}

/// The dense form of a sparse file's matrix, for a method that needs dense rows, after checking
/// its size against the memory limit.
fn densify<F: Scalar>(x: CsrView<F>, path: &Path) -> Result<Array2<F>> {
    let (n, d) = (x.nrows(), x.ncols());
    crate::memory::check(
        || {
            format!(
                "the dense form ({n} x {d}) of the sparse matrix in {}",
                path.display()
            )
        },
        crate::memory::product(&[n, d, size_of::<F>()]),
        crate::error::hints::READ_ROWS,
    )?;
    Ok(x.to_dense())
}

/// Whether `path` is a pipe or a character device (`/dev/stdin`, a shell's process
/// substitution `<(...)`): read as CSV text, as `-` is.
fn is_stream(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_char_device())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The input path that names standard input.
pub const STDIN: &str = "-";

/// All of standard input: CSV text (a .npy stream is refused: its shape is in its header, and
/// `-` is read as text).
fn read_stdin() -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(STDIN, e))?;
    if bytes.starts_with(b"\x93NUMPY") {
        return Err(Error::parse(
            STDIN,
            None,
            None,
            "standard input holds a .npy file, but - is read as CSV; name the .npy file instead",
        ));
    }
    Ok(bytes)
}

/// Reads labels: a 1-D integer .npy, or a text file with one column (or a column named
/// `label`, `labels`, `target`, `class` or `cluster`). Integer labels (also written as
/// integral floats, `1.0`) are kept; a file of names is numbered by first appearance. A file
/// of numbers with a cell that is not an integer (`x`, `NaN`, `1.5`) is an error naming its
/// line, not a set of names.
pub fn read_labels(path: impl AsRef<Path>) -> Result<Vec<i64>> {
    let path = path.as_ref();
    match FileKind::of(path)? {
        FileKind::Npy => NpyFile::open(path)?.to_labels(),
        FileKind::Csv => {
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            let text = String::from_utf8_lossy(&bytes);
            // A UTF-8 byte-order mark (as spreadsheets write) is not part of the first cell.
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let mut lines = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .peekable();
            let Some(&(_, first)) = lines.peek() else {
                return Err(Error::parse(path, None, None, "file has no labels"));
            };
            let delim = [',', ';', '\t'].into_iter().find(|d| first.contains(*d));
            let split = |l: &str| -> Vec<String> {
                match delim {
                    Some(d) => l.split(d).map(|s| s.trim().to_string()).collect(),
                    None => vec![l.trim().to_string()],
                }
            };
            let names = split(first);
            let known = ["label", "labels", "target", "class", "cluster"];
            let named = names
                .iter()
                .position(|n| known.contains(&n.to_ascii_lowercase().as_str()));
            let header = named.is_some();
            let col = match (named, names.len()) {
                (Some(c), _) => c,
                (None, 1) => 0,
                (None, n) => {
                    return Err(Error::parse(
                        path,
                        Some(1),
                        None,
                        format!("{n} columns and none named label/target/class/cluster"),
                    ))
                }
            };
            if header {
                lines.next();
            }
            let mut raw = Vec::new();
            for (i, l) in lines {
                let cells = split(l);
                let cell = cells.get(col).ok_or_else(|| {
                    Error::parse(
                        path,
                        Some(i + 1),
                        None,
                        format!("expected {} fields, found {}", names.len(), cells.len()),
                    )
                })?;
                raw.push((i + 1, cell.clone()));
            }
            if raw.is_empty() {
                return Err(Error::parse(path, None, None, "file has no labels"));
            }
            if raw.iter().all(|(_, c)| c.parse::<f64>().is_err()) {
                let names: Vec<String> = raw.into_iter().map(|(_, c)| c).collect();
                return Ok(self::csv::factorize(&names));
            }
            raw.iter()
                .map(|(line, c)| match (c.parse::<i64>(), c.parse::<f64>()) {
                    (Ok(v), _) => Ok(v),
                    (_, Ok(v)) if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 => Ok(v as i64),
                    _ => Err(Error::parse(
                        path,
                        Some(*line),
                        None,
                        format!("label {c:?} is not an integer (the other labels are numbers)"),
                    )),
                })
                .collect()
        }
    }
}

/// Writes labels (−1 = noise) as .npy int32 or as a one-column text file with header `label`.
pub fn write_labels(path: impl AsRef<Path>, labels: &[i64]) -> Result<()> {
    let path = path.as_ref();
    let kind = FileKind::of(path)?;
    atomic_write(path, |file| {
        let mut w = BufWriter::new(file);
        match kind {
            FileKind::Npy => {
                w.write_all(&npy::header_bytes("<i4", &[labels.len()]))
                    .map_err(|e| Error::io(path, e))?;
                for &l in labels {
                    let v =
                        i32::try_from(l).map_err(|_| Error::param("label", l, "does not fit in int32"))?;
                    w.write_all(&v.to_le_bytes()).map_err(|e| Error::io(path, e))?;
                }
            }
            FileKind::Csv => {
                writeln!(w, "label").map_err(|e| Error::io(path, e))?;
                for &l in labels {
                    writeln!(w, "{l}").map_err(|e| Error::io(path, e))?;
                }
            }
        }
        w.flush().map_err(|e| Error::io(path, e))
    })
}

/// Writes a data matrix as .npy (f64) or as delimited text with a header of column names
/// (`x0, x1, ...` when `names` is empty).
pub fn write_matrix(path: impl AsRef<Path>, data: ndarray::ArrayView2<f64>, names: &[String]) -> Result<()> {
    let path = path.as_ref();
    match FileKind::of(path)? {
        FileKind::Npy => {
            let mut w = npy::NpyWriter::<f64>::create(path, data.nrows(), data.ncols())?;
            w.write_rows(data)?;
            w.finish()
        }
        FileKind::Csv => atomic_write(path, |file| {
            let mut w = ::csv::Writer::from_writer(BufWriter::new(file));
            // A failed write (a full disk) is an I/O error, not bad input.
            let to_err = |e: ::csv::Error| match e.into_kind() {
                ::csv::ErrorKind::Io(io) => Error::io(path, io),
                kind => Error::Unsupported(format!("{}: {kind:?}", path.display())),
            };
            if names.len() == data.ncols() {
                w.write_record(names).map_err(to_err)?;
            } else {
                w.write_record((0..data.ncols()).map(|j| format!("x{j}")))
                    .map_err(to_err)?;
            }
            for row in data.rows() {
                // `{:?}` is the shortest round-tripping form, in exponent notation for tiny
                // and huge values (1e-35, not 35 zeros), and `inf`/`NaN` as NumPy reads them.
                w.write_record(row.iter().map(|v| format!("{v:?}")))
                    .map_err(to_err)?;
            }
            w.flush().map_err(|e| Error::io(path, e))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_in_both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let labels = vec![0i64, 2, -1, 1];
        for name in ["l.npy", "l.csv"] {
            let p = dir.path().join(name);
            write_labels(&p, &labels).unwrap();
            assert_eq!(read_labels(&p).unwrap(), labels, "{name}");
        }
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "x,target\n1.0,a\n2.0,b\n3.0,a\n").unwrap();
        assert_eq!(read_labels(&p).unwrap(), vec![0, 1, 0]);
        let p = dir.path().join("plain.txt");
        std::fs::write(&p, "3\n3\n5\n").unwrap();
        assert_eq!(read_labels(&p).unwrap(), vec![3, 3, 5]);
        std::fs::write(&p, "1.0\n-1.0\n9223372036854775807\n").unwrap();
        assert_eq!(read_labels(&p).unwrap(), vec![1, -1, i64::MAX]);
    }

    /// A file of numbers with one bad cell is an error on its line, not a file of names.
    #[test]
    fn a_bad_cell_among_numeric_labels_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.csv");
        for (text, line) in [
            ("0\nx\n1\n", 2),
            ("0\n1\nNaN\n", 3),
            ("1.5\n2\n", 1),
            ("2\ninf\n", 2),
        ] {
            std::fs::write(&p, text).unwrap();
            match read_labels(&p) {
                Err(Error::Parse { line: Some(l), .. }) => assert_eq!(l, line, "{text:?}"),
                r => panic!("{text:?}: {r:?}"),
            }
        }
    }

    #[test]
    fn unknown_extension_is_an_error() {
        let e = read_matrix::<f64>("data.parquet").unwrap_err().to_string();
        assert!(
            e.contains("data.parquet") && e.contains("expected .npy or .csv"),
            "{e}"
        );
    }
}

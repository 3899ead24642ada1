//! Data in and out: .npy and .csv matrices, label files, atomic output, and the input checks
//! every algorithm shares ([`validate`]).

pub mod csv;
pub mod npy;
pub mod shards;
pub mod validate;

use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::Array2;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub use self::csv::{read_csv, CsvOptions, LabelColumn, Table};
pub use npy::NpyFile;
pub use shards::NpyRows;

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
    let path = path.as_ref();
    match FileKind::of(path)? {
        FileKind::Npy => NpyFile::open(path)?.to_array(),
        FileKind::Csv => Ok(read_csv(path, &CsvOptions::default())?.data),
    }
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

/// Writes to `path` atomically: the content goes to a temporary file in the same folder,
/// which is renamed over `path` only when `write` succeeds. On failure nothing is left.
pub fn atomic_write(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let mut tmp = temp_beside(path)?;
    write(tmp.as_file_mut())?;
    tmp.persist(path)
}

/// Whether a file can be created at `path` (its folder exists and is writable), checked by
/// creating and removing a temporary file beside it; the error names `path`.
pub fn check_writable(path: &Path) -> Result<()> {
    temp_beside(path).map(drop)
}

/// Temporary output files being written, so that an interrupted run can remove them
/// ([`remove_pending_outputs`]).
static PENDING: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every temporary output file still being written: for a Ctrl-C handler, which
/// then exits, so that an interrupted run leaves no partial output.
pub fn remove_pending_outputs() {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for p in pending.drain(..) {
        let _ = std::fs::remove_file(p);
    }
}

/// A temporary output file, registered in [`PENDING`] from creation until it is persisted
/// or dropped (which deletes it).
pub(crate) struct TempOutput {
    file: Option<tempfile::NamedTempFile>,
    path: std::path::PathBuf,
}

impl TempOutput {
    /// The open file.
    pub(crate) fn as_file_mut(&mut self) -> &mut File {
        self.file.as_mut().expect("present until persisted").as_file_mut()
    }

    /// A second handle on the file.
    pub(crate) fn reopen(&self) -> std::io::Result<File> {
        self.file.as_ref().expect("present until persisted").reopen()
    }

    /// Moves the file into place.
    pub(crate) fn persist(mut self, path: &Path) -> Result<()> {
        let file = self.file.take().expect("present until persisted");
        file.persist(path).map_err(|e| Error::io(path, e.error))?;
        Ok(())
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|p| *p != self.path);
    }
}

/// A temporary file in `path`'s folder (so the final rename stays on one file system),
/// removed when dropped unless persisted.
pub(crate) fn temp_beside(path: &Path) -> Result<TempOutput> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".clustr-").suffix(".tmp");
    // Output files get the usual permissions (0666 less the umask), not tempfile's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let file = builder.tempfile_in(dir).map_err(|e| {
        // Name the output the user asked for, not the temporary file.
        use std::io::ErrorKind::*;
        let why = match e.kind() {
            NotFound => "cannot create the file: its folder does not exist".to_string(),
            NotADirectory => "cannot create the file: part of its folder path is not a folder".into(),
            PermissionDenied => "cannot create the file: permission denied".into(),
            ReadOnlyFilesystem => "cannot create the file: read-only file system".into(),
            other => format!("cannot create the file: {other}"),
        };
        Error::io(path, std::io::Error::new(e.kind(), why))
    })?;
    let path = file.path().to_path_buf();
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.clone());
    Ok(TempOutput {
        file: Some(file),
        path,
    })
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
            let to_err = |e: ::csv::Error| Error::parse(path, None, None, e.to_string());
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

//! Rows of one .npy file or of a directory of .npy shards, read as one matrix, and a window of
//! them: what each process of a distributed run reads (its contiguous slice of the rows,
//! without touching the others' bytes).

use super::npy::NpyFile;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use ndarray::{Array2, Axis};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The rows of one .npy file, or of the `*.npy` files of a directory in file-name order
/// (every shard with the same number of columns), restricted to a window of rows.
pub struct NpyRows {
    files: Vec<NpyFile>,
    /// Global row where each file starts, and the total at the end.
    starts: Vec<usize>,
    ncols: usize,
    window: Range<usize>,
}

impl NpyRows {
    /// Opens a .npy file or a directory of .npy shards (headers only; the data are read on demand).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let paths = if path.is_dir() {
            shard_paths(path)?
        } else {
            vec![path.to_path_buf()]
        };
        let mut files = Vec::with_capacity(paths.len());
        let mut starts = vec![0];
        let mut ncols = None;
        for p in &paths {
            let file = NpyFile::open(p)?;
            let (n, d) = file.dim()?;
            if *ncols.get_or_insert(d) != d {
                return Err(Error::parse(
                    p,
                    None,
                    None,
                    format!(
                        "shard has {d} columns, {} has {}",
                        paths[0].display(),
                        ncols.unwrap_or(0)
                    ),
                ));
            }
            starts.push(starts[starts.len() - 1] + n);
            files.push(file);
        }
        let total = starts[starts.len() - 1];
        Ok(NpyRows {
            files,
            starts,
            ncols: ncols.unwrap_or(0),
            window: 0..total,
        })
    }

    /// Rows in all the files.
    pub fn total_rows(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// Only rows `range` of all (global indices) from now on.
    pub fn window(mut self, range: Range<usize>) -> Result<Self> {
        if range.start > range.end || range.end > self.total_rows() {
            return Err(Error::param(
                "rows",
                format!("{}..{}", range.start, range.end),
                format!("the input has {} rows", self.total_rows()),
            ));
        }
        self.window = range;
        Ok(self)
    }

    /// The window's first row among all.
    pub fn offset(&self) -> usize {
        self.window.start
    }

    /// Rows in the window.
    pub fn nrows(&self) -> usize {
        self.window.len()
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The files' pieces that hold window rows `start..end`: (file, its rows).
    fn pieces(&self, start: usize, end: usize) -> impl Iterator<Item = (&NpyFile, Range<usize>)> {
        let (lo, hi) = (self.window.start + start, self.window.start + end);
        self.files.iter().enumerate().filter_map(move |(f, file)| {
            let (a, b) = (self.starts[f].max(lo), self.starts[f + 1].min(hi));
            (a < b).then(|| (file, a - self.starts[f]..b - self.starts[f]))
        })
    }

    fn check(&self, start: usize, end: usize) -> Result<()> {
        if start > end || end > self.nrows() {
            return Err(Error::param(
                "rows",
                format!("{start}..{end}"),
                format!("the window has {} rows", self.nrows()),
            ));
        }
        Ok(())
    }

    /// Window rows `start..end`, read from the files (no memory check: a streaming reader's
    /// chunk, already sized to the limit).
    pub fn rows_unchecked<F: Scalar>(&self, start: usize, end: usize) -> Result<Array2<F>> {
        self.check(start, end)?;
        let mut pieces = self.pieces(start, end);
        let Some((file, r)) = pieces.next() else {
            return Ok(Array2::zeros((0, self.ncols)));
        };
        let mut out = file.rows::<F>(r.start, r.end)?;
        for (file, r) in pieces {
            out.append(Axis(0), file.rows::<F>(r.start, r.end)?.view())
                .map_err(|e| Error::Unsupported(e.to_string()))?;
        }
        Ok(out)
    }

    /// Window rows `start..end`, after the memory check.
    pub fn rows<F: Scalar>(&self, start: usize, end: usize) -> Result<Array2<F>> {
        self.check(start, end)?;
        crate::memory::check(
            || format!("reading {} x {} {} values", end - start, self.ncols, F::DTYPE),
            crate::memory::product(&[end - start, self.ncols, size_of::<F>()]),
            crate::error::hints::READ_SHARD,
        )?;
        self.rows_unchecked(start, end)
    }

    /// Whether every file stores its rows contiguously (C order), as streaming needs.
    pub fn c_order(&self) -> bool {
        self.files.iter().all(|f| !f.header().fortran_order)
    }
}

/// The `*.npy` files of a directory, by file name.
fn shard_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy")))
        .collect();
    if paths.is_empty() {
        return Err(Error::EmptyInput {
            what: format!("{}: a folder of shards without any .npy file", dir.display()),
        });
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::npy::NpyWriter;
    use ndarray::s;

    fn write(path: &Path, x: &Array2<f64>) {
        let mut w = NpyWriter::<f64>::create(path, x.nrows(), x.ncols()).unwrap();
        w.write_rows(x.view()).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn shards_read_as_one_matrix_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let x = Array2::from_shape_fn((10, 3), |(i, j)| (i * 3 + j) as f64);
        write(&dir.path().join("part-1.npy"), &x.slice(s![4.., ..]).to_owned());
        write(&dir.path().join("part-0.npy"), &x.slice(s![..4, ..]).to_owned());
        std::fs::write(dir.path().join("README"), "not a shard").unwrap();
        let rows = NpyRows::open(dir.path()).unwrap();
        assert_eq!((rows.total_rows(), rows.ncols()), (10, 3));
        assert_eq!(rows.rows::<f64>(0, 10).unwrap(), x);
        // A window across the two shards, and chunks within it.
        let w = rows.window(2..9).unwrap();
        assert_eq!((w.offset(), w.nrows()), (2, 7));
        assert_eq!(
            w.rows::<f32>(0, 7).unwrap(),
            x.slice(s![2..9, ..]).mapv(|v| v as f32)
        );
        assert_eq!(w.rows_unchecked::<f64>(3, 5).unwrap(), x.slice(s![5..7, ..]));
        assert!(w.rows::<f64>(3, 8).is_err());
    }

    #[test]
    fn bad_shard_folders_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(NpyRows::open(dir.path()), Err(Error::EmptyInput { .. })));
        write(&dir.path().join("a.npy"), &Array2::zeros((2, 3)));
        write(&dir.path().join("b.npy"), &Array2::zeros((2, 4)));
        let e = NpyRows::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("4 columns"), "{e}");
        let one = NpyRows::open(dir.path().join("a.npy")).unwrap();
        assert!(one.window(1..3).is_err());
    }
}

//! The one error type of clustr.
//!
//! Every message names what is wrong in terms the caller can act on: the parameter and its
//! value, the row and column of a bad value, the shapes that disagree, or the file, line and
//! column of a malformed cell.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in clustr.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input has no rows (or no columns, or no labels).
    #[error("empty input: {what}")]
    EmptyInput {
        /// What was empty, e.g. "data has 0 rows".
        what: String,
    },
    /// A parameter has a value outside its domain.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        /// Parameter name as in the builder or CLI flag.
        name: &'static str,
        /// The offending value, formatted.
        value: String,
        /// What the value must satisfy.
        reason: String,
    },
    /// A NaN or infinite value in the input.
    #[error("non-finite value {value} in {what} at row {row}, column {col}")]
    NonFinite {
        /// Which input, e.g. "data" or "dissimilarity matrix".
        what: &'static str,
        /// Zero-based row.
        row: usize,
        /// Zero-based column.
        col: usize,
        /// The value (NaN, inf or -inf).
        value: f64,
    },
    /// Two inputs whose shapes must agree do not.
    #[error("shape mismatch: {what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// What is being compared.
        what: String,
        /// The expected shape or length.
        expected: String,
        /// The actual shape or length.
        got: String,
    },
    /// A precomputed dissimilarity matrix that is not square.
    #[error("dissimilarity matrix must be square, got {rows} x {cols}")]
    NotSquare {
        /// Number of rows.
        rows: usize,
        /// Number of columns.
        cols: usize,
    },
    /// A precomputed dissimilarity matrix that is not symmetric within tolerance.
    #[error("dissimilarity matrix is not symmetric: d[{i}][{j}] = {a} but d[{j}][{i}] = {b}")]
    NotSymmetric {
        /// Row of the first entry.
        i: usize,
        /// Column of the first entry.
        j: usize,
        /// d\[i\]\[j\].
        a: f64,
        /// d\[j\]\[i\].
        b: f64,
    },
    /// A negative entry in a dissimilarity matrix.
    #[error("negative dissimilarity d[{i}][{j}] = {value}")]
    NegativeDissimilarity {
        /// Row.
        i: usize,
        /// Column.
        j: usize,
        /// The value.
        value: f64,
    },
    /// A malformed input file.
    #[error("{}: {}{msg}", path.display(), location(*line, *col))]
    Parse {
        /// The file.
        path: PathBuf,
        /// One-based line, where it applies.
        line: Option<usize>,
        /// One-based column (field), where it applies.
        col: Option<usize>,
        /// What is wrong.
        msg: String,
    },
    /// An I/O failure on a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A result that would not fit in memory.
    #[error("{what} needs {} but only {} is allowed; {hint}", human_bytes(*needed), human_bytes(*limit))]
    TooLarge {
        /// What was to be allocated.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes allowed.
        limit: u64,
        /// What to use instead.
        hint: String,
    },
    /// Finite input values too large (or too spread) for the algorithm's arithmetic: the
    /// message names the column, its values and the range the algorithm can take.
    #[error("{0}")]
    OutOfRange(String),
    /// An output that would replace an input or another output, or that is not a file.
    #[error("{0}")]
    OutputConflict(String),
    /// A request this build or this data cannot serve (e.g. an unknown name).
    #[error("{0}")]
    Unsupported(String),
    /// The caller stopped the fit through its progress callback (e.g. Ctrl-C in Python).
    #[error("interrupted")]
    Interrupted,
    /// A failure of the compute device (CUDA driver, compiler or memory).
    #[error("CUDA: {0}")]
    Device(String),
}

fn location(line: Option<usize>, col: Option<usize>) -> String {
    match (line, col) {
        (Some(l), Some(c)) => format!("line {l}, column {c}: "),
        (Some(l), None) => format!("line {l}: "),
        (None, Some(c)) => format!("column {c}: "),
        (None, None) => String::new(),
    }
}

/// Formats a byte count with a binary unit, e.g. `1.5 GiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

impl Error {
    /// True when the error is the caller's input or parameters (CLI exit code 2), false for
    /// failures of the environment such as I/O (exit code 1).
    pub fn is_input_error(&self) -> bool {
        match self {
            Error::Io { source, .. } => {
                use std::io::ErrorKind::*;
                matches!(
                    source.kind(),
                    NotFound
                        | InvalidData
                        | InvalidInput
                        | UnexpectedEof
                        | NotADirectory
                        | IsADirectory
                        | PermissionDenied
                        | ReadOnlyFilesystem
                )
            }
            Error::Device(_) | Error::Interrupted => false,
            _ => true,
        }
    }

    /// Shorthand for [`Error::InvalidParameter`].
    pub fn param(name: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::Parse`].
    pub fn parse(
        path: impl Into<PathBuf>,
        line: Option<usize>,
        col: Option<usize>,
        msg: impl Into<String>,
    ) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            col,
            msg: msg.into(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

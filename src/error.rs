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
        hint: Hint,
    },
    /// A request the chosen device cannot serve and the CPU backend can.
    #[error("{0}; {hint}", hint = hints::CPU_BACKEND)]
    NotOnDevice(String),
    /// Finite input values too large (or too spread) for the algorithm's arithmetic: the
    /// message names the column, its values and the range the algorithm can take.
    #[error("{0}")]
    OutOfRange(String),
    /// Sparse (CSR) arrays that do not form a matrix: the message says which rule they break
    /// and where.
    #[error("malformed sparse matrix: {0}")]
    MalformedSparse(String),
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

/// One thing the caller can change, as data, so that each interface names it in its own
/// words: the library by its parameter and method names, the command line by its flags and
/// subcommands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suggestion {
    /// Set a parameter to a value, e.g. `covariance_type` = `diag`.
    Set(&'static str, &'static str),
    /// Give a parameter a smaller value, e.g. `n_features`.
    Lower(&'static str),
    /// Use another method, by its command-line name, e.g. `fasterclara`.
    Method(&'static str),
    /// Anything else, in words, e.g. "a sample of the rows".
    Other(&'static str),
}

impl std::fmt::Display for Suggestion {
    /// The library's wording: `covariance_type = diag`, `a smaller n_features`, `fasterclara`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suggestion::Set(p, v) => write!(f, "{p} = {v}"),
            Suggestion::Lower(p) => write!(f, "a smaller {p}"),
            Suggestion::Method(m) | Suggestion::Other(m) => f.write_str(m),
        }
    }
}

/// What to do instead: suggestions and why they help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The alternatives, best first.
    pub suggestions: &'static [Suggestion],
    /// Why they help, in words ("" for none), e.g. "memory is n·D".
    pub why: &'static str,
}

impl Hint {
    /// The hint in words, each suggestion by `name`: "use A, B or C (why)".
    pub fn render(&self, name: impl Fn(&Suggestion) -> String) -> String {
        let names: Vec<String> = self.suggestions.iter().map(name).collect();
        let list = match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        };
        match self.why {
            "" => format!("use {list}"),
            why => format!("use {list} ({why})"),
        }
    }
}

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(|s| s.to_string()))
    }
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

    /// The message, with the suggestions of its hint named by `name` instead of the library's
    /// parameter and method names (the command line passes its flags and subcommands).
    pub fn render(&self, name: impl Fn(&Suggestion) -> String) -> String {
        match self {
            Error::TooLarge {
                what,
                needed,
                limit,
                hint,
            } => format!(
                "{what} needs {} but only {} is allowed; {}",
                human_bytes(*needed),
                human_bytes(*limit),
                hint.render(name)
            ),
            Error::NotOnDevice(what) => format!("{what}; {}", hints::CPU_BACKEND.render(name)),
            e => e.to_string(),
        }
    }

    /// Shorthand for [`Error::InvalidParameter`]; a number is shown in a readable form
    /// ([`crate::scalar::readable`]: `1e-300`, not 300 digits).
    pub fn param(name: &'static str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        let value = value.to_string();
        // (a long decimal is a float printed in full; an integer stays exact)
        let long_float = value.len() > 17 && value.parse::<i128>().is_err();
        let value = match value.parse::<f64>() {
            Ok(v) if long_float => crate::scalar::readable(v),
            _ => value,
        };
        Error::InvalidParameter {
            name,
            value,
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

/// Every hint of the library, named by where it applies; [`hints::ALL`] lists them so that an
/// interface can check that it names each suggestion.
pub mod hints {
    use super::Hint;
    use super::Suggestion::{Lower, Method, Other, Set};

    /// Reading a whole .npy file into memory.
    pub const READ_ROWS: Hint = Hint {
        suggestions: &[Method("minibatch-kmeans"), Other("a sample of the rows")],
        why: "mini-batch k-means streams a .npy file",
    };
    /// Reading a label file.
    pub const READ_LABELS: Hint = Hint {
        suggestions: &[Other("fewer labels")],
        why: "",
    };
    /// Reading one process's rows of a sharded input.
    pub const READ_SHARD: Hint = Hint {
        suggestions: &[Method("minibatch-kmeans"), Other("more processes")],
        why: "mini-batch k-means streams a .npy file",
    };
    /// Generating a data set.
    pub const GENERATE: Hint = Hint {
        suggestions: &[Lower("n")],
        why: "fewer points",
    };
    /// A full n × n distance matrix.
    pub const DISTANCE_MATRIX: Hint = Hint {
        suggestions: &[Method("fasterclara")],
        why: "it computes distances on the fly, in O(n·k) memory",
    };
    /// The k-medoids swap methods' n × n matrix.
    pub const MEDOIDS_FROM_SAMPLES: Hint = Hint {
        suggestions: &[Method("fasterclara")],
        why: "medoids from samples",
    };
    /// CLARA's sample matrix.
    pub const CLARA_SAMPLE: Hint = Hint {
        suggestions: &[Lower("sample_size")],
        why: "",
    };
    /// The density methods' neighbourhoods and trees.
    pub const DENSITY: Hint = Hint {
        suggestions: &[Other("a sample of the points"), Method("fasterclara")],
        why: "its memory is linear in n",
    };
    /// k-means with Elkan's n·k bounds.
    pub const ELKAN_BOUNDS: Hint = Hint {
        suggestions: &[
            Set("algorithm", "lloyd"),
            Set("algorithm", "hamerly"),
            Method("minibatch-kmeans"),
        ],
        why: "Lloyd and Hamerly keep no n·k bounds; mini-batch k-means streams a .npy input",
    };
    /// k-means' data and assignment.
    pub const KMEANS: Hint = Hint {
        suggestions: &[Method("minibatch-kmeans"), Other("fewer points or clusters")],
        why: "it streams a .npy input in chunks",
    };
    /// Mini-batch k-means' batches.
    pub const MINIBATCH: Hint = Hint {
        suggestions: &[Lower("batch_size"), Other("a sample of the data")],
        why: "",
    };
    /// Power k-means' weights.
    pub const POWER: Hint = Hint {
        suggestions: &[Method("minibatch-kmeans")],
        why: "it streams a .npy input",
    };
    /// Exact kernel power k-means' n × n kernel matrix.
    pub const KERNEL_MATRIX: Hint = Hint {
        suggestions: &[Method("rff-kpkm")],
        why: "random Fourier features, O(n·D) memory",
    };
    /// RFF-KPKM's features.
    pub const RFF_FEATURES: Hint = Hint {
        suggestions: &[Lower("n_features")],
        why: "memory is n·D",
    };
    /// IP-RFF-MKPKM's features of every kernel.
    pub const MULTI_KERNEL_FEATURES: Hint = Hint {
        suggestions: &[Lower("n_features"), Other("fewer kernels")],
        why: "memory is kernels·n·D",
    };
    /// A Gaussian mixture's responsibilities and covariances.
    pub const GMM: Hint = Hint {
        suggestions: &[
            Set("covariance_type", "diag"),
            Set("covariance_type", "spherical"),
            Lower("k"),
            Method("minibatch-kmeans"),
        ],
        why: "",
    };
    /// PPP's mixtures over a range of k.
    pub const PPP: Hint = Hint {
        suggestions: &[Lower("k_max"), Lower("n_runs"), Method("gmm")],
        why: "gmm fits one k",
    };
    /// MagmaClust's fit.
    pub const MAGMACLUST_FIT: Hint = Hint {
        suggestions: &[Other("fewer tasks"), Other("a coarser grid of inputs")],
        why: "memory grows as K·N² + Σ Nᵢ²",
    };
    /// MagmaClust's prediction.
    pub const MAGMACLUST_PREDICT: Hint = Hint {
        suggestions: &[Other("fewer prediction inputs")],
        why: "memory grows as K·(N + P)² for P inputs on a training grid of N",
    };
    /// Reading a model file.
    pub const READ_MODEL: Hint = Hint {
        suggestions: &[Other(
            "a larger memory limit, if the file is a model clustr wrote",
        )],
        why: "",
    };
    /// A request a device cannot serve ([`super::Error::NotOnDevice`]).
    pub const CPU_BACKEND: Hint = Hint {
        suggestions: &[Set("backend", "cpu")],
        why: "",
    };

    /// Every hint above.
    pub const ALL: &[Hint] = &[
        READ_ROWS,
        READ_LABELS,
        READ_SHARD,
        GENERATE,
        DISTANCE_MATRIX,
        MEDOIDS_FROM_SAMPLES,
        CLARA_SAMPLE,
        DENSITY,
        ELKAN_BOUNDS,
        KMEANS,
        MINIBATCH,
        POWER,
        KERNEL_MATRIX,
        RFF_FEATURES,
        MULTI_KERNEL_FEATURES,
        GMM,
        PPP,
        MAGMACLUST_FIT,
        MAGMACLUST_PREDICT,
        READ_MODEL,
        CPU_BACKEND,
    ];
}

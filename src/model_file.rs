//! Model files: a fitted model saved to disk and loaded back, by this or any later clustr, to
//! assign new points.
//!
//! A model file is one JSON object:
//!
//! ```json
//! {"format": "clustr-model", "format_version": 1, "clustr_version": "0.1.0",
//!  "algorithm": "kmeans", "parameters": {"k": 8, "seed": 0}, "model": {"centers": …}}
//! ```
//!
//! - `format_version` is the major version of the layout: a file is read by any clustr of the
//!   same major version (fields added later are ignored by earlier readers) and refused, with
//!   both versions named, otherwise.
//! - `algorithm` names the model type ([`SaveLoad::ALGORITHM`]); `parameters` records the fit's
//!   parameters as the caller gives them (the command line writes its options); `model` holds
//!   what prediction needs, the fitted arrays included. Training labels are not kept: the
//!   file assigns new points.
//! - Arrays ([`StoredArray`]) keep their shape and element type. Up to [`INLINE_MAX`]
//!   elements they are JSON numbers (shortest round-trip form, so exact); above it they are
//!   the base64 of their little-endian bytes, also exact, 2.3–3.8× faster to read, faster
//!   to write and 57 % of the size (paper-repro/results/model_files.md).
//!
//! Files are written whole or not at all ([`crate::data::output::atomic_write`]).

use crate::data::output::atomic_write;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use base64::Engine;
use ndarray::{Array, Array1, Array2, ArrayD, Dimension, IxDyn};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;

/// The format tag of every model file.
pub const FORMAT: &str = "clustr-model";

/// The major version of the layout this clustr writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// Arrays with more elements than this are stored as base64 bytes, not JSON numbers.
pub const INLINE_MAX: usize = 4096;

/// An array in a model file: its shape, element type (`float64`, `float32` or `int64`), and
/// its elements in row-major order, as JSON numbers (`data`) or as the base64 of their
/// little-endian bytes (`base64`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredArray {
    /// Shape.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: String,
    /// The elements as numbers (small arrays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<f64>>,
    /// The elements as base64 little-endian bytes (large arrays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

/// How a [`StoredArray`] holds its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// JSON numbers.
    Numbers,
    /// Base64 of the little-endian bytes.
    Base64,
}

impl Encoding {
    /// The encoding of an array of `len` elements: numbers up to [`INLINE_MAX`].
    pub fn for_len(len: usize) -> Self {
        if len <= INLINE_MAX {
            Encoding::Numbers
        } else {
            Encoding::Base64
        }
    }
}

impl StoredArray {
    /// Stores `a`, whose elements are of type `dtype` (`float64`, `float32` or `int64`) and
    /// exactly representable in f64 (for int64: |v| ≤ 2⁵³).
    fn from_values<D: Dimension>(a: &Array<f64, D>, dtype: &str, encoding: Encoding) -> Self {
        let shape = a.shape().to_vec();
        let values = a.iter().copied();
        if encoding == Encoding::Numbers {
            return StoredArray {
                shape,
                dtype: dtype.into(),
                data: Some(values.collect()),
                base64: None,
            };
        }
        let bytes: Vec<u8> = match dtype {
            "float32" => values.flat_map(|v| (v as f32).to_le_bytes()).collect(),
            "int64" => values.flat_map(|v| (v as i64).to_le_bytes()).collect(),
            _ => values.flat_map(|v| v.to_le_bytes()).collect(),
        };
        StoredArray {
            shape,
            dtype: dtype.into(),
            data: None,
            base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// Stores an array of the computation's element type, in the encoding for its size.
    pub fn from_array<F: Scalar, D: Dimension>(a: &Array<F, D>) -> Self {
        Self::encoded(a, Encoding::for_len(a.len()))
    }

    /// Stores an array in the given encoding.
    pub fn encoded<F: Scalar, D: Dimension>(a: &Array<F, D>, encoding: Encoding) -> Self {
        Self::from_values(&a.mapv(|v| v.to_f64_exact()), F::DTYPE, encoding)
    }

    /// Stores integers (indices, labels).
    pub fn from_ints(v: &[i64]) -> Self {
        let encoding = Encoding::for_len(v.len());
        Self::from_values(&Array1::from_iter(v.iter().map(|&i| i as f64)), "int64", encoding)
    }

    /// The elements as f64 (exact for every stored type), checked against the shape.
    fn values(&self, what: &str) -> Result<ArrayD<f64>> {
        let bad = |why: String| Error::Unsupported(format!("model file: {what}: {why}"));
        let width = match self.dtype.as_str() {
            "float64" | "int64" => 8,
            "float32" => 4,
            other => return Err(bad(format!("unknown element type {other:?}"))),
        };
        let values: Vec<f64> = match (&self.data, &self.base64) {
            (Some(d), None) => {
                // Numbers must be values of the element type the array is tagged with.
                let fits = |v: f64| match self.dtype.as_str() {
                    "float32" => !v.is_finite() || v.abs() <= f32::MAX as f64,
                    "int64" => v.fract() == 0.0 && v.abs() <= 2f64.powi(53),
                    _ => true,
                };
                if let Some((i, v)) = d.iter().enumerate().find(|(_, v)| !fits(**v)) {
                    return Err(bad(format!("element {i}, {v:e}, is not a {} value", self.dtype)));
                }
                d.clone()
            }
            (None, Some(b)) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| bad(format!("bad base64: {e}")))?;
                if bytes.len() % width != 0 {
                    return Err(bad(format!("{} bytes is not whole elements", bytes.len())));
                }
                bytes
                    .chunks_exact(width)
                    .map(|c| {
                        let mut b = [0u8; 8];
                        b[..width].copy_from_slice(c);
                        match self.dtype.as_str() {
                            "float32" => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                            "int64" => i64::from_le_bytes(b) as f64,
                            _ => f64::from_le_bytes(b),
                        }
                    })
                    .collect()
            }
            _ => return Err(bad("needs exactly one of data and base64".into())),
        };
        ArrayD::from_shape_vec(IxDyn(&self.shape), values)
            .map_err(|_| bad(format!("its elements do not fill the shape {:?}", self.shape)))
    }

    /// The array with `D`'s number of dimensions, in element type `F` (exact when stored as
    /// `F`; a float64 array loaded as float32 is rounded).
    pub fn to_array<F: Scalar, D: Dimension>(&self, what: &str) -> Result<Array<F, D>> {
        let v = self.values(what)?;
        if self.dtype == "int64" {
            return Err(Error::Unsupported(format!(
                "model file: {what}: holds integers, not numbers"
            )));
        }
        if let Some((i, v)) = v.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::Unsupported(format!(
                "model file: {what}: element {i} is {v}, not a finite number"
            )));
        }
        if F::DTYPE == "float32" {
            if let Some((i, v)) = v.iter().enumerate().find(|(_, v)| v.abs() > f32::MAX as f64) {
                return Err(Error::Unsupported(format!(
                    "model file: {what}: element {i}, {v:e}, is beyond float32's range"
                )));
            }
        }
        v.mapv(F::from_f64_lossy).into_dimensionality::<D>().map_err(|_| {
            Error::Unsupported(format!(
                "model file: {what}: shape {:?} has the wrong number of dimensions",
                self.shape
            ))
        })
    }

    /// A 2-d array of element type `F`.
    pub fn to_matrix<F: Scalar>(&self, what: &str) -> Result<Array2<F>> {
        self.to_array::<F, ndarray::Ix2>(what)
    }

    /// The stored integers.
    pub fn to_ints(&self, what: &str) -> Result<Vec<i64>> {
        if self.dtype != "int64" {
            return Err(Error::Unsupported(format!(
                "model file: {what}: expected integers"
            )));
        }
        Ok(self.values(what)?.iter().map(|&v| v as i64).collect())
    }
}

/// A fitted model that can be saved to a model file and loaded back.
pub trait SaveLoad: Sized {
    /// The `algorithm` of the file.
    const ALGORITHM: &'static str;
    /// What the file's `model` field holds.
    type Stored: Serialize + DeserializeOwned;
    /// The model's stored form.
    fn to_stored(&self) -> Self::Stored;
    /// The model from its stored form, checked.
    fn from_stored(stored: Self::Stored) -> Result<Self>;

    /// Writes the model to `path` (atomically), with no parameters recorded.
    fn save(&self, path: &Path) -> Result<()> {
        self.save_with(path, serde_json::json!({}))
    }

    /// Writes the model to `path` (atomically), recording the fit's `parameters`.
    fn save_with(&self, path: &Path, parameters: serde_json::Value) -> Result<()> {
        let file = Envelope {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            clustr_version: env!("CARGO_PKG_VERSION").into(),
            algorithm: Self::ALGORITHM.into(),
            parameters,
            model: self.to_stored(),
        };
        atomic_write(path, |f| {
            let mut w = std::io::BufWriter::new(f);
            serde_json::to_writer(&mut w, &file).map_err(|e| Error::io(path, e.into()))?;
            w.write_all(b"\n").map_err(|e| Error::io(path, e))?;
            w.flush().map_err(|e| Error::io(path, e))
        })
    }

    /// Reads a model of this type from `path`; a file of another format version or algorithm
    /// is refused with a message naming both.
    fn load(path: &Path) -> Result<Self> {
        let (bytes, algorithm) = read_checked(path)?;
        if algorithm != Self::ALGORITHM {
            return Err(Error::Unsupported(format!(
                "{}: a {algorithm} model, not {}",
                path.display(),
                Self::ALGORITHM
            )));
        }
        let file: Envelope<Self::Stored> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::parse(path, None, None, format!("model: {e}")))?;
        Self::from_stored(file.model).map_err(|e| match e {
            Error::Unsupported(m) => Error::Unsupported(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}

/// The outer object of a model file.
#[derive(Serialize, Deserialize)]
struct Envelope<M> {
    format: String,
    format_version: u64,
    clustr_version: String,
    algorithm: String,
    #[serde(default)]
    parameters: serde_json::Value,
    model: M,
}

/// The fields of a model file read before its model (the rest is skipped, not kept).
#[derive(Deserialize)]
struct Header {
    format: Option<String>,
    format_version: Option<serde_json::Value>,
    clustr_version: Option<String>,
    algorithm: Option<String>,
}

/// Bytes of memory reading a model takes per byte of its file: the text, the decoded arrays
/// (a base64 byte is up to 1.5 bytes of f64 values) and the model's own copy of them.
pub const READ_BYTES_PER_FILE_BYTE: u64 = 5;

/// Reads a model file and checks its format and version: its bytes, and its algorithm. The
/// memory it takes ([`READ_BYTES_PER_FILE_BYTE`] per byte) is checked against the limit before
/// reading (from the file's size) and while reading (a device or pipe has no size).
fn read_checked(path: &Path) -> Result<(Vec<u8>, String)> {
    let io = |e| Error::io(path, e);
    let file = std::fs::File::open(path).map_err(io)?;
    let check = |bytes: u64, at_least: &str| {
        crate::memory::check(
            || format!("reading a model file of {at_least}{bytes} bytes"),
            bytes.saturating_mul(READ_BYTES_PER_FILE_BYTE),
            crate::error::hints::READ_MODEL,
        )
    };
    let size = file.metadata().map_err(io)?.len();
    check(size, "")?;
    let most = crate::memory::max_memory() / READ_BYTES_PER_FILE_BYTE;
    let mut bytes = Vec::with_capacity(size.min(most) as usize);
    file.take(most + 1).read_to_end(&mut bytes).map_err(io)?;
    check(bytes.len() as u64, "at least ")?;
    let not_model = || Error::parse(path, None, None, "not a clustr model file".to_string());
    let header: Header = serde_json::from_slice(&bytes).map_err(|_| not_model())?;
    if header.format.as_deref() != Some(FORMAT) {
        return Err(not_model());
    }
    let version = header.format_version.as_ref().and_then(|v| v.as_u64());
    if version != Some(FORMAT_VERSION) {
        return Err(Error::Unsupported(format!(
            "{}: model format version {}, written by clustr {}; this clustr ({}) reads version {}",
            path.display(),
            version.map_or("?".into(), |v| v.to_string()),
            header.clustr_version.as_deref().unwrap_or("?"),
            env!("CARGO_PKG_VERSION"),
            FORMAT_VERSION
        )));
    }
    let algorithm = header.algorithm.ok_or_else(not_model)?;
    Ok((bytes, algorithm))
}

/// The `algorithm` of the model file at `path` (checked to be a model file of this format
/// version), so a caller can choose the type to load.
pub fn algorithm_of(path: &Path) -> Result<String> {
    Ok(read_checked(path)?.1)
}

//! # clustr
//!
//! Scalable clustering in Rust: the k-medoids family (PAM, FastPAM1/2, FasterPAM, CLARA,
//! CLARANS), k-means with Gaussian-mixture validation (PPP), DBSCAN and OPTICS, kernel power
//! k-means with random Fourier features, and MagmaClust.
//!
//! This crate root holds the foundation every algorithm stands on:
//! - [`Error`] and input validation ([`data::validate`]);
//! - [`Metric`] / [`MetricKind`] and [`Dissimilarity`] (dense, packed, on the fly);
//! - the [`Backend`] of hot kernels with its CPU implementation [`CpuBackend`];
//! - the estimator pattern ([`estimator`]);
//! - evaluation measures ([`eval`]), data I/O ([`data`]) and data sets ([`datasets`]).

#![warn(missing_docs)]

// The README's library section compiles and runs, as a crate depending on clustr would use it.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeLibrarySection;

pub mod backend;
pub mod comm;
pub mod data;
pub mod datasets;
pub mod density;
pub mod dissim;
pub mod error;
pub mod estimator;
pub mod eval;
pub mod gp;
pub mod kernel;
pub mod kmeans;
pub mod kmedoids;
pub mod linalg;
pub mod memory;
pub mod methods;
pub mod metric;
pub mod mixture;
pub mod model_file;
#[cfg(feature = "cli")]
pub mod plot;
pub mod rng;
pub mod scalar;
pub mod select_k;

pub use backend::{AnyBackend, Backend, BackendChoice, CpuBackend, Nearest, NearestTwo};
pub use dissim::{DenseMatrix, Dissimilarity, LowerTriangle, OnTheFly};
pub use error::{Error, Result};
pub use estimator::{Clustering, Fit, Predict, Progress, ProgressFn};
pub use metric::{Metric, MetricKind};
pub use scalar::Scalar;

/// The label of a point assigned to no cluster (DBSCAN/OPTICS noise).
pub const NOISE: i64 = -1;

/// Everything a typical user needs.
pub mod prelude {
    pub use crate::{
        Backend, Clustering, CpuBackend, DenseMatrix, Dissimilarity, Error, Fit, LowerTriangle, Metric,
        MetricKind, OnTheFly, Predict, Result, Scalar, NOISE,
    };
}

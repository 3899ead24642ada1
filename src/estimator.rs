//! The estimator pattern every algorithm follows.
//!
//! - A `Params` struct with documented defaults and builder setters
//!   (`FasterPam::new(k).max_iter(100).seed(7)`), validated once in [`Fit::fit`].
//! - `fit(&input) -> Result<Model>`; the model implements [`Clustering`] (labels, number of
//!   clusters, objective, iterations, convergence) plus its own results (medoids, centres...).
//! - Where assigning new points is defined, the model implements [`Predict`].
//! - Every random choice comes from a `seed: u64`; the same seed gives the same result for any
//!   thread count.
//! - Long runs report [`Progress`] through an optional [`ProgressFn`].
//! - Non-convergence is reported by [`Clustering::converged`], not as an error.

use crate::error::Result;
use std::fmt;
use std::sync::Arc;

/// One progress report of an iterative algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Iterations (or steps) done so far.
    pub iteration: usize,
    /// Upper bound on iterations, when known.
    pub max_iter: Option<usize>,
    /// The current objective, when defined.
    pub objective: Option<f64>,
}

/// A progress callback; the CLI turns it into a progress bar. It is also the fit's
/// cancellation point: a callback made with [`ProgressFn::cancellable`] that returns an error
/// (e.g. [`crate::Error::Interrupted`]) stops the fit at the step that reported, and the fit
/// returns that error.
#[derive(Clone)]
pub struct ProgressFn(Arc<ProgressCallback>);

/// What a [`ProgressFn`] calls at each step.
type ProgressCallback = dyn Fn(&Progress) -> Result<()> + Send + Sync;

impl ProgressFn {
    /// Wraps a closure that only observes.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        ProgressFn(Arc::new(move |p| {
            f(p);
            Ok(())
        }))
    }

    /// Wraps a closure that may stop the fit by returning an error.
    pub fn cancellable(f: impl Fn(&Progress) -> Result<()> + Send + Sync + 'static) -> Self {
        ProgressFn(Arc::new(f))
    }

    /// Reports one step; an error means the caller asked to stop.
    pub fn report(&self, p: &Progress) -> Result<()> {
        (self.0)(p)
    }
}

impl fmt::Debug for ProgressFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressFn")
    }
}

/// Fitting an algorithm's parameters to an input.
pub trait Fit<Input: ?Sized> {
    /// The fitted model.
    type Model;
    /// Validates the parameters against the input and fits.
    fn fit(&self, input: &Input) -> Result<Self::Model>;
}

/// Assigning new inputs with a fitted model.
pub trait Predict<Input: ?Sized> {
    /// What is returned per input (usually labels).
    type Output;
    /// Assigns `input`.
    fn predict(&self, input: &Input) -> Result<Self::Output>;
}

/// What every fitted clustering model reports.
pub trait Clustering {
    /// Cluster label of each point (−1 = noise, see [`crate::NOISE`]).
    fn labels(&self) -> &[i64];
    /// Number of clusters found: the distinct labels in use, noise excluded (with fewer
    /// distinct points than k, a method may leave clusters empty; they are not counted).
    fn n_clusters(&self) -> usize {
        let mut used: Vec<i64> = self.labels().iter().copied().filter(|&l| l >= 0).collect();
        used.sort_unstable();
        used.dedup();
        used.len()
    }
    /// The algorithm's objective at the end (`None` where it has none).
    fn loss(&self) -> Option<f64>;
    /// Iterations run.
    fn n_iter(&self) -> usize;
    /// Whether the stopping rule was met before the iteration limit.
    fn converged(&self) -> bool;
    /// Number of points labelled noise.
    fn n_noise(&self) -> usize {
        self.labels().iter().filter(|&&l| l < 0).count()
    }
}

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
pub struct ProgressFn(Arc<ProgressCallback>, Option<Arc<PhaseCallback>>, bool);

/// What a [`ProgressFn`] calls when a fit enters a phase (before its iterations, or the
/// convergence it declares).
type PhaseCallback = dyn Fn(&str) + Send + Sync;

/// What a [`ProgressFn`] calls at each step.
type ProgressCallback = dyn Fn(&Progress) -> Result<()> + Send + Sync;

impl ProgressFn {
    /// Wraps a closure that only observes.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        ProgressFn(
            Arc::new(move |p| {
                f(p);
                Ok(())
            }),
            None,
            false,
        )
    }

    /// Wraps a closure that may stop the fit by returning an error.
    pub fn cancellable(f: impl Fn(&Progress) -> Result<()> + Send + Sync + 'static) -> Self {
        ProgressFn(Arc::new(f), None, false)
    }

    /// Asks for the objective at every step, also where the fit would not compute it (the
    /// bound-keeping k-means steps; scikit-learn's `verbose` prints it at a pass's cost).
    pub fn with_objective(mut self) -> Self {
        self.2 = true;
        self
    }

    /// Whether [`ProgressFn::with_objective`] asked for the objective at every step.
    pub fn wants_objective(&self) -> bool {
        self.2
    }

    /// Also told the phases a fit goes through before it iterates (`"distances"`,
    /// `"features"`, `"init"`), so a progress bar can say what the time is spent on, and the
    /// convergence an iterative fit declares (k-means: scikit-learn's `verbose` line, such as
    /// `"Converged at iteration 7: strict convergence."`).
    pub fn with_phases(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.1 = Some(Arc::new(f));
        self
    }

    /// Says that the fit enters `phase`.
    pub fn phase(&self, phase: &str) {
        if let Some(f) = &self.1 {
            f(phase);
        }
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

/// An estimator's parameters checked against the input they fit (linfa's `ParamGuard`
/// idea): made only by [`Check::checked`], so code that takes one knows the check ran, for
/// this input, and has no reason to run it again.
pub(crate) struct Checked<'a, E: ?Sized> {
    params: &'a E,
}

impl<E: ?Sized> Clone for Checked<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: ?Sized> Copy for Checked<'_, E> {}

impl<E: ?Sized> std::ops::Deref for Checked<'_, E> {
    type Target = E;
    fn deref(&self) -> &E {
        self.params
    }
}

/// The check of an estimator's parameters against what it fits (`I`: the input's size, or the
/// input itself).
pub(crate) trait Check<I> {
    /// Whether the parameters hold for `input`.
    fn check(&self, input: I) -> Result<()>;

    /// The parameters as [`Checked`] for `input`, or the first thing wrong with them.
    fn checked(&self, input: I) -> Result<Checked<'_, Self>> {
        self.check(input)?;
        Ok(Checked { params: self })
    }
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

/// The builder setters estimators share, written once: `shared_setters!(KMeans { seed,
/// progress, backend("the assignment step"), communicator })` writes `seed`, `progress`,
/// `backend` and `communicator` for the fields `seed`, `progress`, `backend` and `comm`; a
/// string after a name says what that setter covers in this estimator.
macro_rules! shared_setters {
    ($ty:ty { $($setter:ident $(($what:literal))?),* $(,)? }) => {
        impl $ty {
            $( $crate::estimator::shared_setters!(@ $setter $($what)?); )*
        }
    };
    (@ seed $($what:literal)?) => {
        /// The seed of every random choice of the fit: the same seed gives the same result, on
        /// any number of threads.
        $(#[doc = ""] #[doc = $what])?
        pub fn seed(mut self, seed: u64) -> Self {
            self.seed = seed;
            self
        }
    };
    (@ progress $($what:literal)?) => {
        /// A callback told of the fit's progress, which can also stop it (see
        /// [`crate::estimator::Progress`]).
        $(#[doc = ""] #[doc = $what])?
        pub fn progress(mut self, progress: $crate::estimator::ProgressFn) -> Self {
            self.progress = Some(progress);
            self
        }
    };
    (@ backend $($what:literal)?) => {
        /// The backend of the hot loops (default: the CPU); a device takes over the work it
        /// offers a capability for (see [`crate::backend::device`]).
        $(#[doc = ""] #[doc = $what])?
        pub fn backend(mut self, backend: $crate::backend::AnyBackend) -> Self {
            self.backend = backend;
            self
        }
    };
    (@ communicator $($what:literal)?) => {
        /// The processes of a distributed run (see [`crate::comm`]): each holds its slice of
        /// the rows.
        $(#[doc = ""] #[doc = $what])?
        pub fn communicator(mut self, comm: $crate::comm::SharedComm) -> Self {
            self.comm = comm;
            self
        }
    };
}
pub(crate) use shared_setters;

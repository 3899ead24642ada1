"""clustr's estimators in scikit-learn's shape: a thin layer over the Rust core (``_clustr``).

Parameter names and defaults are scikit-learn's where it has the estimator; the docstring
of each class says where clustr differs and why. Every estimator takes ``n_threads`` (None:
every core); its results do not depend on it.
"""

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    DensityMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.metrics.pairwise import PAIRWISE_BOOLEAN_FUNCTIONS
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, _num_samples, check_array, check_is_fitted, check_non_negative

from ._base import _clustr
from ._trees import CondensedTree, MinimumSpanningTree, SingleLinkageTree
from ._base import BACKEND, ANY_METRIC, TREE_OR_ANY_METRIC, RANDOM_STATE, Metric, THREADS, sparse_rows_metric, n_threads, nearest, params, pairwise, points, rows, seed


def _weights(sample_weight, X, allow_negative=False):
    """scikit-learn's check of ``sample_weight`` (None stays None), as a list for the binding."""
    if sample_weight is None:
        return None
    return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=not allow_negative).tolist()


# What the package exports (clustr/__init__.py reads it): the estimators and the list of the
# scikit-learn checks that cannot apply to them.
__all__ = [
    "KMeans",
    "MiniBatchKMeans",
    "BisectingKMeans",
    "GaussianMixture",
    "KMedoids",
    "DBSCAN",
    "OPTICS",
    "HDBSCAN",
    "approximate_predict",
    "membership_vector",
    "all_points_membership_vectors",
    "PowerKMeans",
    "RffKpkm",
    "IpRffMkpkm",
    "expected_failed_checks",
]


class _Centroids(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator):
    """Shared by the estimators whose model is k centres in the input space: ``predict``
    (nearest centre), ``transform`` (Euclidean distance to each centre) and ``score``
    (minus the sum of squared distances to the nearest centre), as scikit-learn's KMeans."""

    # Whether fit, predict, transform and score take scipy.sparse input.
    _sparse = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._sparse
        return tags

    def predict(self, X):
        check_is_fitted(self)
        X = points(self, X, reset=False, accept_sparse=self._sparse)
        return nearest(X, self.cluster_centers_, "sqeuclidean", n_threads(self))[0]

    def _fit(self, X, sample_weight):
        # (not every centroid estimator takes sample weights)
        return self.fit(X) if sample_weight is None else self.fit(X, sample_weight=sample_weight)

    def fit_predict(self, X, y=None, sample_weight=None):
        return self._fit(X, sample_weight).labels_

    def transform(self, X):
        check_is_fitted(self)
        X = points(self, X, reset=False, accept_sparse=self._sparse)
        return pairwise(X, self.cluster_centers_, "euclidean", n_threads(self))

    def fit_transform(self, X, y=None, sample_weight=None):
        return self._fit(X, sample_weight).transform(X)

    def score(self, X, y=None, sample_weight=None):
        check_is_fitted(self)
        X = points(self, X, reset=False, accept_sparse=self._sparse)
        sq = nearest(X, self.cluster_centers_, "sqeuclidean", n_threads(self))[1]
        if sample_weight is not None:
            sq = sq * _check_sample_weight(sample_weight, X, dtype=np.float64)
        return -float(sq.sum())

    @property
    def _n_features_out(self):
        return self.cluster_centers_.shape[0]

    def _set_centres(self, out, X):
        self.cluster_centers_ = out["cluster_centers"]
        self.labels_ = out["labels"]
        self.n_iter_ = int(out["n_iter"])

    def _init_centers(self, X, random_state=None):
        """``init`` as (name, given centres or None), checked against X; a callable ``init`` is
        called as scikit-learn calls it, ``init(X, n_clusters, random_state=...)``."""
        if isinstance(self.init, str):
            return self.init, None
        if callable(self.init):
            rs = check_random_state(self.random_state) if random_state is None else random_state
            c = np.asarray(self.init(X, self.n_clusters, random_state=rs), dtype=np.float64, order="C")
        else:
            c = np.asarray(self.init, dtype=np.float64, order="C")
        # (scikit-learn's messages, which its tests match)
        if c.shape[0] != self.n_clusters:
            raise ValueError(
                f"The shape of the initial centers {c.shape} does not match the number of "
                f"clusters {self.n_clusters}."
            )
        if c.ndim != 2 or c.shape[1] != X.shape[1]:
            raise ValueError(
                f"The shape of the initial centers {c.shape} does not match the number of "
                f"features of the data {X.shape[1]}."
            )
        return "k-means++", c

    def _starts(self, X):
        """The fits to run, as (init, given centres, n_init): one, or with a callable ``init``
        one per run, each from its own call (scikit-learn calls it ``n_init`` times; "auto":
        ``_callable_runs``); the fit of lowest inertia is kept."""
        if X.shape[0] < self.n_clusters:
            raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={self.n_clusters}.")
        if not callable(self.init):
            init, given = self._init_centers(X)
            n_init = self._explicit_n_init(given)
            # (scikit-learn's private count of the runs, which its tests read)
            self._n_init = n_init or (1 if init == "k-means++" else self._callable_runs)
            return [(init, given, n_init)]
        rs = check_random_state(self.random_state)
        runs = self._callable_runs if self.n_init == "auto" else int(self.n_init)
        self._n_init = runs
        return [self._init_centers(X, rs) + (1,) for _ in range(runs)]

    def _explicit_n_init(self, given):
        """The runs to ask of the fit: 1 from given centres (warning when ``n_init`` asked
        more, as scikit-learn), ``n_init``, or None for "auto" (the fit's own rule: one run of
        k-means++, several of random)."""
        if given is not None and self.n_init != "auto" and self.n_init != 1:
            warnings.warn(
                f"Explicit initial center position passed: performing only one init in "
                f"{type(self).__name__} instead of n_init={self.n_init}.",
                RuntimeWarning,
            )
            return 1
        return None if self.n_init == "auto" else int(self.n_init)


class KMeans(_Centroids):
    """k-means (Lloyd's objective) with scikit-learn's interface.

    Parameters as scikit-learn's ``KMeans``, except ``algorithm``: ``"auto"`` (the default)
    chooses Hamerly's or Lloyd's assignment step from n, k and d; ``"lloyd"``, ``"elkan"``
    and ``"hamerly"`` force one. All four give Lloyd's result from the same start, so only
    the time depends on it. ``copy_x`` is accepted and changes nothing: X is never modified
    (scikit-learn centres X in place when it is False). ``verbose`` prints scikit-learn's
    lines while the fit runs (for Elkan's and Hamerly's steps the inertia then costs a pass
    over the points each iteration, as in scikit-learn).

    From the same initial centres, labels and inertia equal scikit-learn's (its
    ``algorithm="lloyd"``), with or without ``sample_weight``. ``random_state`` seeds
    clustr's own generator, so the k-means++ centres differ from scikit-learn's for the same
    integer.
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
        "copy_x": ["boolean"],
        "algorithm": [StrOptions({"auto", "lloyd", "elkan", "hamerly"})],
        "verbose": ["verbose"],
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="auto",
        backend="auto", n_threads=None,
    ):
        self.verbose = verbose
        self.copy_x = copy_x
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.algorithm = algorithm
        self.backend = backend
        self.n_threads = n_threads

    _sparse = True
    _callable_runs = 10

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=True, accept_sparse=True)
        w = _weights(sample_weight, X)
        if self.algorithm == "elkan" and self.n_clusters == 1:
            warnings.warn(
                "algorithm='elkan' doesn't make sense for a single cluster. Using 'lloyd' instead.",
                RuntimeWarning,
                stacklevel=2,
            )
        out = None
        for init, given, n_init in self._starts(X):
            report = _KMeansReport(self) if self.verbose else None
            run = _clustr.kmeans_fit(rows(X), params(self, init=init, init_centers=given, n_init=n_init, report=report), w)
            if out is None or run["inertia"] < out["inertia"]:
                out = run
        self.backend_ = out["backend"]
        self._set_centres(out, X)
        self.inertia_ = float(out["inertia"])
        distinct = len(np.unique(self.labels_))
        if distinct < self.n_clusters:
            warnings.warn(
                f"Number of distinct clusters ({distinct}) found smaller than n_clusters "
                f"({self.n_clusters}). Possibly due to duplicate points in X.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self


class _KMeansReport:
    """Prints scikit-learn's ``verbose`` lines for a k-means or mini-batch k-means fit from the
    binding's progress: each Lloyd iteration's inertia, each mini-batch epoch's smoothed
    (exponentially weighted) batch inertia — scikit-learn prints every step — and the
    convergence the fit declares, in scikit-learn's words."""

    def __init__(self, estimator):
        self.minibatch = isinstance(estimator, MiniBatchKMeans)
        self.max_iter = estimator.max_iter

    def __call__(self, kind, iteration, objective):
        if kind == "step" and self.minibatch:
            if objective is not None:
                print(f"Minibatch epoch {iteration}/{self.max_iter}: ewa inertia: {objective}")
        elif kind == "step":
            if iteration == 1:
                print("Initialization complete")
            print(f"Iteration {iteration - 1}" + ("" if objective is None else f", inertia {objective}."))
        elif kind.startswith("Converged"):
            print(kind)


class BisectingKMeans(_Centroids):
    """Bisecting k-means with scikit-learn's interface, names and defaults: k − 1 times, the
    cluster of largest inertia (``bisecting_strategy="biggest_inertia"``) or of most points
    (``"largest_cluster"``) is split in two by 2-means (``n_init`` runs from ``init``).

    ``predict`` descends the tree of splits to the nearer half at each node, as
    scikit-learn's (not always the nearest centre). From the same starts at every split the
    labels, centres and inertia equal scikit-learn's; ``random_state`` seeds clustr's own
    generator, so its random starts differ from scikit-learn's, and ``init`` takes no
    callable. ``verbose`` and ``copy_x`` are not taken (X is never modified).
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"})],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE,
        "algorithm": [StrOptions({"lloyd", "elkan"})],
        "bisecting_strategy": [StrOptions({"biggest_inertia", "largest_cluster"})],
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="random",
        n_init=1,
        random_state=None,
        max_iter=300,
        tol=1e-4,
        algorithm="lloyd",
        bisecting_strategy="biggest_inertia",
        backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.algorithm = algorithm
        self.bisecting_strategy = bisecting_strategy
        self.backend = backend
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=True)
        w = _weights(sample_weight, X)
        out = _clustr.bisecting_kmeans_fit(X, params(self), w)
        self.backend_ = out["backend"]
        self._set_centres(out, X)
        self.inertia_ = float(out["inertia"])
        self._tree_centers = out["tree_centers"]
        self._tree_children = out["tree_children"]
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = points(self, X, reset=False)
        centres = self._tree_centers.astype(X.dtype, copy=False)
        return _clustr.bisecting_kmeans_predict(X, centres, self._tree_children, n_threads(self))


class MiniBatchKMeans(_Centroids):
    """Mini-batch k-means (Sculley 2010, with scikit-learn's step sizes and reassignment).

    Parameters as scikit-learn's ``MiniBatchKMeans``: ``max_iter`` counts passes over the
    data, ``max_no_improvement`` stops after that many mini-batches without an improvement
    of the smoothed batch inertia; ``compute_labels=False`` leaves ``labels_`` and
    ``inertia_`` unset, as scikit-learn's. ``verbose`` prints scikit-learn's convergence
    line and, per pass over the data (scikit-learn: per mini-batch), the smoothed batch
    inertia. X may be dense or scipy.sparse (never densified).

    Where clustr differs: ``fit`` visits every point once per pass (the data in chunks in a
    random order, each chunk's rows in a random order, in batches), where scikit-learn draws
    each batch with replacement from all the rows; so that a file larger than memory can be
    streamed. ``partial_fit`` takes the batches it is given, as scikit-learn's: from the
    same initial centres and the same batches, the labels equal scikit-learn's.
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"}), callable, "array-like"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_no_improvement": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "init_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_init": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
        "reassignment_ratio": [Interval(numbers.Real, 0, None, closed="left")],
        "compute_labels": ["boolean"],
        "verbose": ["verbose"],
        "random_state": RANDOM_STATE,
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    _sparse = True
    _callable_runs = 3

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        max_iter=100,
        batch_size=1024,
        verbose=0,
        compute_labels=True,
        tol=0.0,
        max_no_improvement=10,
        init_size=None,
        n_init="auto",
        reassignment_ratio=0.01,
        random_state=None,
        backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.random_state = random_state
        self.backend = backend
        self.n_threads = n_threads

    def _check_init_size(self, X):
        """Warns as scikit-learn of an ``init_size`` below k, and sets its private
        ``_init_size`` (the rows the seeding draws from: ``init_size``, else 3 × the batch,
        at least 3k when that is below k, at most n), the fit's own rule."""
        n = X.shape[0]
        init_size = self.init_size
        if init_size is None:
            init_size = 3 * min(self.batch_size, n)
            if init_size < self.n_clusters:
                init_size = 3 * self.n_clusters
        elif init_size < self.n_clusters:
            warnings.warn(
                f"init_size={self.init_size} should be larger than n_clusters={self.n_clusters}. "
                "Setting it to min(3*n_clusters, n_samples)",
                RuntimeWarning,
                stacklevel=3,
            )
            init_size = 3 * self.n_clusters
        self._init_size = min(init_size, n)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=True, accept_sparse=True)
        w = _weights(sample_weight, X)
        self._check_init_size(X)
        out = None
        for init, given, n_init in self._starts(X):
            report = _KMeansReport(self) if self.verbose else None
            run = _clustr.minibatch_kmeans_fit(
                rows(X), params(self, init=init, init_centers=given, n_init=n_init, report=report), w
            )
            if out is None or run["inertia"] < out["inertia"]:
                out = run
        self.backend_ = out["backend"]
        self._set_centres(out, X)
        self.inertia_ = float(out["inertia"])
        self.n_steps_ = int(out["n_steps"])
        self._counts = out["counts"]
        self._since_reassign = 0
        if not self.compute_labels:
            del self.labels_, self.inertia_
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """One mini-batch step on X (scikit-learn's ``partial_fit``): the first call starts the
        centres from X (which needs at least ``n_clusters`` rows); ``labels_`` and ``inertia_``
        become X's with the updated centres."""
        started = hasattr(self, "cluster_centers_")
        X = points(self, X, reset=not started, accept_sparse=True)
        w = _weights(sample_weight, X)
        self._random_state = getattr(self, "_random_state", None) or check_random_state(self.random_state)
        if not started:
            self._check_init_size(X)
            init, given = self._init_centers(X, self._random_state)
            resolved = params(self, init=init, init_centers=given, n_init=self._explicit_n_init(given))
            resolved["seed"] = int(self._random_state.randint(0, 2**32, dtype=np.uint64))
            state = None
        else:
            resolved = params(self, init="k-means++", init_centers=None, n_init=None)
            resolved["seed"] = int(self._random_state.randint(0, 2**32, dtype=np.uint64))
            centres = self.cluster_centers_.astype(X.dtype, copy=False)
            state = (centres, [float(c) for c in self._counts], int(self._since_reassign))
        out = _clustr.minibatch_kmeans_partial_fit(rows(X), resolved, w, state)
        self.cluster_centers_ = out["cluster_centers"]
        self._counts = out["counts"]
        self._since_reassign = int(out["since_reassign"])
        self.labels_, sq = nearest(X, self.cluster_centers_, "sqeuclidean", n_threads(self))
        self.inertia_ = float(np.dot(sq, w) if w is not None else sq.sum())
        self.n_steps_ = getattr(self, "n_steps_", 0) + 1
        self.backend_ = "cpu"
        return self


def _precisions_to_covariances(precisions, covariance_type):
    p = np.asarray(precisions, dtype=np.float64)
    inverse = np.linalg.inv(p) if covariance_type in ("full", "tied") else 1.0 / p
    return np.ascontiguousarray(inverse)


def _precisions_from_cholesky(prec_chol, covariance_type):
    if covariance_type == "full":
        return np.einsum("kij,klj->kil", prec_chol, prec_chol)
    if covariance_type == "tied":
        return prec_chol @ prec_chol.T
    return prec_chol**2


def _cholesky_from_precisions(precisions, covariance_type):
    """The upper-triangular U with U·Uᵀ = P of each precision matrix (scikit-learn's
    ``precisions_cholesky_`` layout): with J the exchange matrix, U = J·chol(J·P·J)·J."""
    if covariance_type in ("diag", "spherical"):
        return np.sqrt(precisions)
    flip = lambda a: a[..., ::-1, ::-1]  # noqa: E731
    return np.ascontiguousarray(flip(np.linalg.cholesky(flip(precisions))))


def _check_mixture_parameter(value, shape, name):
    """A given mixture parameter as float64, with scikit-learn's message for a wrong shape."""
    value = check_array(value, dtype=[np.float64, np.float32], ensure_2d=False, allow_nd=True)
    if value.shape != shape:
        raise ValueError(f"The parameter '{name}' should have the shape of {shape}, but got {value.shape}")
    return np.ascontiguousarray(value, dtype=np.float64)


class GaussianMixture(DensityMixin, BaseEstimator):
    """Gaussian mixture fitted by EM, with scikit-learn's ``GaussianMixture`` interface.

    Parameters, fitted attributes, methods (``sample``, ``bic``, ``aic``, ...), warnings and
    messages are scikit-learn's, and so are the starts: ``weights_init``, ``means_init`` and
    ``precisions_init`` replace the parameters drawn by ``init_params`` (all three given: EM
    starts from exactly them, one run). Where clustr differs:

    - The starts ``init_params`` draws come from clustr's random stream (the same seed gives
      the same fit, but not scikit-learn's).
    - The computation is in float64 whatever the input's type.
    - ``verbose`` prints scikit-learn's lines while the fit runs; the time lapses are those
      the Python layer sees (each line at most 50 ms after its iteration ended).
    - ``sample_weight`` (scikit-learn's GaussianMixture has none): weighted EM, an integer
      weight counting as that many copies of the row. The starts ``init_params`` draws are
      unweighted, so equality with repeated rows holds from a given start (all three
      ``*_init``).
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "covariance_type": [StrOptions({"full", "tied", "diag", "spherical"})],
        "tol": [Interval(numbers.Real, 0.0, None, closed="left")],
        "reg_covar": [Interval(numbers.Real, 0.0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_params": [StrOptions({"kmeans", "random", "random_from_data", "k-means++"})],
        "weights_init": ["array-like", None],
        "means_init": ["array-like", None],
        "precisions_init": ["array-like", None],
        "random_state": RANDOM_STATE,
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "verbose_interval": [Interval(numbers.Integral, 1, None, closed="left")],
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=100,
        n_init=1,
        init_params="kmeans",
        weights_init=None,
        means_init=None,
        precisions_init=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        backend="auto", n_threads=None,
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.weights_init = weights_init
        self.means_init = means_init
        self.precisions_init = precisions_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.backend = backend
        self.n_threads = n_threads

    def _given(self, n_features):
        """The given ``*_init`` parameters, checked as scikit-learn checks them (its messages),
        as (weights, means, precisions), None where not given."""
        k, d, kind = self.n_components, n_features, self.covariance_type
        weights = means = precisions = None
        if self.weights_init is not None:
            weights = _check_mixture_parameter(self.weights_init, (k,), "weights")
            if (weights < 0).any() or (weights > 1).any():
                raise ValueError(
                    "The parameter 'weights' should be in the range [0, 1], but got max value "
                    f"{weights.min():.5f}, min value {weights.max():.5f}"
                )
            if not np.isclose(abs(1.0 - weights.sum()), 0.0, atol=1e-8):
                raise ValueError(f"The parameter 'weights' should be normalized, but got sum(weights) = {weights.sum():.5f}")
        if self.means_init is not None:
            means = _check_mixture_parameter(self.means_init, (k, d), "means")
        if self.precisions_init is not None:
            shape = {"full": (k, d, d), "tied": (d, d), "diag": (k, d), "spherical": (k,)}[kind]
            precisions = _check_mixture_parameter(self.precisions_init, shape, f"{kind} precision")
            if kind in ("full", "tied"):
                for p in precisions.reshape(-1, d, d):
                    if not (np.allclose(p, p.T) and (np.linalg.eigvalsh(p) > 0).all()):
                        raise ValueError(f"'{kind} precision' should be symmetric, positive-definite")
            elif (precisions <= 0).any():
                raise ValueError(f"'{kind} precision' should be positive")
        return weights, means, precisions

    def _fit_run(self, X, w, random_seed, report=True, **start):
        """One call of the binding, seeded by ``random_seed``: EM from ``start`` (see
        ``gmm_fit``; default: one run from a start ``init_params`` draws), printing
        ``verbose``'s lines when ``report``."""
        report = _MixtureReport(self) if self.verbose and report else None
        given = dict(n_init=1, start=None, start_lower_bound=-np.inf, responsibilities=None, report=report)
        given.update(start)
        out = _clustr.gmm_fit(X, params(self, seed=random_seed, **given), w)
        if report is not None:
            report("end", 0, None)
        return out

    def _start_from(self, drawn, given):
        """(weights, means, covariances): the given ``*_init`` parameters, the others those
        ``drawn`` (a ``max_iter=0`` run) estimated."""
        weights, means, precisions = given
        covariances = (
            drawn["covariances"] if precisions is None
            else _precisions_to_covariances(precisions, self.covariance_type)
        )
        return (
            drawn["weights"] if weights is None else weights,
            drawn["means"] if means is None else means,
            np.ascontiguousarray(covariances),
        )

    def _initialize(self, X, resp):
        """scikit-learn's initialisation from responsibilities ``resp`` (n × k, k taken from
        it): the M-step's parameters, the given ``*_init`` ones in their place (unchecked, as
        scikit-learn's, whose ``fit`` checks them first)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        resp = np.ascontiguousarray(resp, dtype=np.float64)
        given = tuple(None if g is None else np.ascontiguousarray(g, dtype=np.float64)
                      for g in (self.weights_init, self.means_init, self.precisions_init))
        drawn = self._fit_run(X, None, 0, report=False, max_iter=0, n_components=resp.shape[1], responsibilities=resp)
        self.weights_, self.means_, self.covariances_ = self._start_from(drawn, given)
        self.precisions_cholesky_ = (
            drawn["precisions_cholesky"] if given[2] is None
            else _cholesky_from_precisions(given[2], self.covariance_type)
        )

    def fit(self, X, y=None, sample_weight=None):
        self.fit_predict(X, y, sample_weight=sample_weight)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, sample_weight=None):
        warm = self.warm_start and hasattr(self, "converged_")
        X = points(self, X, reset=not warm, dtype=[np.float64])
        w = _weights(sample_weight, X)
        if X.shape[0] < self.n_components:
            raise ValueError(
                f"Expected n_samples >= n_components but got n_components = "
                f"{self.n_components}, n_samples = {X.shape[0]}"
            )
        given = self._given(X.shape[1])
        if warm:
            start = (self.weights_, self.means_, self.covariances_)
            out = self._fit_run(X, w, 0, start=start, start_lower_bound=self.lower_bound_)
        elif all(g is not None for g in given):
            out = self._fit_run(X, w, 0, start=self._start_from(None, given))
        elif any(g is not None for g in given):
            # (scikit-learn: each initialisation draws by init_params, then the given
            # parameters replace the drawn ones; the best lower bound wins. The first draw is
            # the one of the same estimator without the given parameters.)
            first, out = seed(self.random_state), None
            for i in range(self.n_init):
                draw_seed = (first + i) % 2**64
                drawn = self._fit_run(X, w, draw_seed, report=False, max_iter=0)
                run = self._fit_run(X, w, draw_seed, start=self._start_from(drawn, given))
                if out is None or run["lower_bound"] > out["lower_bound"] or out["lower_bound"] == -np.inf:
                    out = run
        else:
            out = self._fit_run(X, w, seed(self.random_state), n_init=self.n_init)
        self.backend_ = out["backend"]
        self._set_parameters((out["weights"], out["means"], out["covariances"], out["precisions_cholesky"]))
        self.converged_ = bool(out["converged"])
        self.n_iter_ = int(out["n_iter"])
        self.lower_bound_ = float(out["lower_bound"])
        self.lower_bounds_ = out["lower_bounds"]
        if not self.converged_ and self.max_iter > 0:
            warnings.warn(
                "Best performing initialization did not converge. Try different init "
                "parameters, or increase max_iter, tol, or check for degenerate data.",
                ConvergenceWarning,
            )
        return out["labels"]

    def _get_parameters(self):
        """(weights, means, covariances, precisions_cholesky), scikit-learn's mixture protocol."""
        return self.weights_, self.means_, self.covariances_, self.precisions_cholesky_

    def _set_parameters(self, parameters):
        """Sets the fitted parameters from (weights, means, covariances, precisions_cholesky),
        ``precisions_`` from the last (scikit-learn's mixture protocol)."""
        self.weights_, self.means_, self.covariances_, self.precisions_cholesky_ = parameters
        self.precisions_ = _precisions_from_cholesky(self.precisions_cholesky_, self.covariance_type)

    def _e_step(self, X):
        check_is_fitted(self)
        X = points(self, X, reset=False, dtype=[np.float64])
        return _clustr.gmm_e_step(
            X, self.covariance_type, (self.weights_, self.means_, self.covariances_), n_threads(self)
        )

    def predict_proba(self, X):
        return self._e_step(X)[0]

    def predict(self, X):
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X):
        return self._e_step(X)[1]

    def score(self, X, y=None):
        return float(self.score_samples(X).mean())

    def _n_parameters(self):
        """The number of free parameters of the fitted mixture (scikit-learn's)."""
        k, d = self.means_.shape
        covariance = {"full": k * d * (d + 1) / 2, "diag": k * d, "tied": d * (d + 1) / 2, "spherical": k}
        return int(covariance[self.covariance_type] + k * d + k - 1)

    def _criterion(self, X, per_parameter):
        """−2·n·score + per_parameter · (free parameters), from one pass over X."""
        _, scores, n_parameters = self._e_step(X)
        return -2 * scores.sum() + per_parameter * n_parameters

    def bic(self, X):
        """Bayesian information criterion (lower is better)."""
        return self._criterion(X, np.log(_num_samples(X)))

    def aic(self, X):
        """Akaike information criterion (lower is better)."""
        return self._criterion(X, 2.0)

    def sample(self, n_samples=1):
        """``n_samples`` points drawn from the fitted mixture, and their components (scikit-learn's
        draws from ``random_state``: a component count from the multinomial of the weights,
        then each component's normal, in component order)."""
        check_is_fitted(self)
        if n_samples < 1:
            raise ValueError(
                f"Invalid value for 'n_samples': {self.n_components} . The sampling requires at least one sample."
            )
        rng = check_random_state(self.random_state)
        counts = rng.multinomial(n_samples, self.weights_)
        d = self.means_.shape[1]
        if self.covariance_type in ("full", "tied"):
            covs = self.covariances_ if self.covariance_type == "full" else [self.covariances_] * self.n_components
            X = np.vstack([rng.multivariate_normal(m, c, int(n)) for m, c, n in zip(self.means_, covs, counts)])
        else:
            X = np.vstack([
                m + rng.standard_normal(size=(n, d)) * np.sqrt(c)
                for m, c, n in zip(self.means_, self.covariances_, counts)
            ])
        y = np.concatenate([np.full(n, j, dtype=int) for j, n in enumerate(counts)])
        return X, y


class _MixtureReport:
    """Prints scikit-learn's ``verbose`` lines for a Gaussian mixture fit, from the binding's
    progress (an "init" phase per initialisation, then a step per EM iteration with its lower
    bound)."""

    def __init__(self, estimator):
        self.verbose, self.interval, self.tol = estimator.verbose, estimator.verbose_interval, estimator.tol
        self.start_bound = getattr(estimator, "lower_bound_", -np.inf) if estimator.warm_start else -np.inf
        self.n_init, self.bound = -1, None

    def _end(self):
        if self.n_init < 0:
            return
        change = np.inf if self.bound is None else self.bound - self.previous
        converged = "converged" if abs(change) < self.tol else "did not converge"
        if self.verbose == 1:
            print(f"Initialization {converged}.")
        else:
            print(f"Initialization {converged}. time lapse {time.time() - self.init_time:.5f}s\t "
                  f"lower bound {self.bound if self.bound is not None else -np.inf:.5f}.")

    def __call__(self, kind, iteration, objective):
        if kind == "init":
            self._end()
            self.n_init += 1
            self.init_time = self.iter_time = time.time()
            self.bound, self.previous = None, self.start_bound
            print(f"Initialization {self.n_init}")
        elif kind == "step":
            if self.bound is not None:
                self.previous = self.bound
            self.bound = objective
            if iteration % self.interval == 0:
                if self.verbose == 1:
                    print(f"  Iteration {iteration}")
                else:
                    now = time.time()
                    print(f"  Iteration {iteration}\t time lapse {now - self.iter_time:.5f}s\t "
                          f"ll change {self.bound - self.previous:.5f}")
                    self.iter_time = now
        elif kind == "end":
            self._end()


class KMedoids(ClusterMixin, TransformerMixin, BaseEstimator):
    """k-medoids: the medoids are data points, for any metric or a precomputed matrix.

    ``method``: ``"pam"`` (BUILD + SWAP, Kaufman & Rousseeuw), ``"fastpam1"``,
    ``"fastpam2"`` (Schubert & Rousseeuw 2019), ``"fasterpam"`` (2021; the default, as the
    ``kmedoids`` package), ``"alternating"`` (Voronoi iteration, scikit-learn-extra's
    ``"alternate"``, also taken by that name), ``"clara"``, ``"fastclara"``, ``"fasterclara"`` (medoids of samples,
    no n × n matrix), ``"clarans"``, ``"fastclarans"`` (randomised search, dissimilarities
    computed when needed).

    ``metric``: a clustr metric (``euclidean``, ``sqeuclidean``, ``manhattan``, ``cosine``,
    ``chebyshev``, ``minkowski`` with ``p``, ``haversine`` on (latitude, longitude) in
    degrees, giving km), any other metric of scikit-learn's ``pairwise_distances`` or a
    callable (as scikit-learn-extra: the n × n matrix by ``pairwise_distances``, checked
    against the memory limit first; the swap methods only), or
    ``"precomputed"`` (X is a square dissimilarity matrix; then ``predict`` and
    ``transform`` take the dissimilarities of new points to the training points,
    n_new × n_train). ``init``: ``"auto"`` (BUILD for pam and fastpam1, random otherwise),
    ``"build"``, ``"lab"``, ``"random"``, ``"k-means++"`` (scikit-learn-extra's
    ``"k-medoids++"``, also taken by that name), ``"heuristic"`` (scikit-learn-extra's: the
    k points of least dissimilarity sum), ``"first"``, or k indices. The defaults are the
    ``kmedoids`` package's (FasterPAM), not scikit-learn-extra's (``method="alternate"``,
    ``init="heuristic"``, ``max_iter=300``), whose results FasterPAM's loss matches or
    improves. ``samples``/``sample_size`` are CLARA's, ``numlocal``/``maxneighbor``
    CLARANS's (None: the method's default).

    ``sample_weight`` (scikit-learn-extra and ``kmedoids`` have none): the loss
    ``inertia_`` becomes Σ wᵢ·d(i, medoid of i), so an integer weight counts as that many
    copies of the row; random and LAB starts and CLARA's samples stay uniform draws.

    The swap methods keep the n × n dissimilarity matrix (of X's dtype) in memory; above the
    memory limit (``clustr.set_max_memory``) the fit raises ``MemoryError`` with the
    estimate before allocating.

    scipy.sparse X is taken under euclidean, sqeuclidean, cosine and manhattan without a
    dense copy (the swap methods on the matrix of its rows' distances, the sampling methods
    with distances computed when needed); ``cluster_centers_`` is then the medoids' rows as a
    sparse matrix, as scikit-learn-extra's, and ``predict``/``transform`` take dense or sparse
    rows.
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "metric": ANY_METRIC,
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "method": [
            StrOptions(
                {"pam", "fastpam1", "fastpam2", "fasterpam", "alternating", "alternate", "clara", "fastclara",
                 "fasterclara", "clarans", "fastclarans"}
            )
        ],
        "init": [
            StrOptions({"auto", "build", "lab", "random", "k-means++", "k-medoids++", "heuristic", "first"}),
            "array-like",
        ],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "sample_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "numlocal": [Interval(numbers.Integral, 1, None, closed="left")],
        "maxneighbor": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": RANDOM_STATE,
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        metric="euclidean",
        p=None,
        method="fasterpam",
        init="auto",
        max_iter=100,
        samples=5,
        sample_size=None,
        numlocal=2,
        maxneighbor=None,
        random_state=None,
        backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.metric = metric
        self.p = p
        self.method = method
        self.init = init
        self.max_iter = max_iter
        self.samples = samples
        self.sample_size = sample_size
        self.numlocal = numlocal
        self.maxneighbor = maxneighbor
        self.random_state = random_state
        self.backend = backend
        self.n_threads = n_threads

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        precomputed = self.metric == "precomputed"
        tags.input_tags.sparse = sparse_rows_metric(self.metric, self.p)
        tags.input_tags.pairwise = precomputed
        # Dissimilarities are non-negative.
        tags.input_tags.positive_only = precomputed
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=True, accept_sparse=sparse_rows_metric(self.metric, self.p))
        w = _weights(sample_weight, X)
        metric = Metric(self.metric, self.p)
        self._foreign = None if metric.native or metric.precomputed else metric
        if self._foreign and self.method in ("clara", "fastclara", "fasterclara", "clarans", "fastclarans"):
            raise ValueError(
                f"method={self.method!r} never forms the n x n matrix, which a metric clustr does not compute "
                f"({self.metric!r}) needs: use a swap method (fasterpam, alternate, ...) or one of clustr's metrics"
            )
        precomputed = self.metric == "precomputed"
        if precomputed:
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"A precomputed dissimilarity matrix must be square, got {X.shape}")
            check_non_negative(X, "KMedoids (precomputed)")
        # (the matrix of a metric clustr does not compute, fitted as a precomputed one)
        D = self._foreign.distances(X) if self._foreign else None
        if self.init == "heuristic":
            init, given = None, self._least_sums(X if D is None else D, precomputed or D is not None)
        elif isinstance(self.init, str):
            init = {"auto": None, "k-medoids++": "k-means++"}.get(self.init, self.init)
            given = None
        else:
            given = [int(i) for i in np.asarray(self.init).ravel()]
            if any(not 0 <= i < X.shape[0] for i in given):
                raise ValueError(
                    f"init: the medoids are row indices in [0, {X.shape[0]}), got {given}"
                )
            init = None
        p = params(self, init=init, medoids_init=given, method={"alternate": "alternating"}.get(self.method, self.method))
        if precomputed or D is not None:
            p["metric"] = "precomputed"
        metric = p["metric"]
        out = _clustr.kmedoids_fit(rows(X if D is None else D), p, w)
        self.backend_ = out["backend"]
        self.medoid_indices_ = out["medoid_indices"]
        self.labels_ = out["labels"]
        self.inertia_ = float(out["inertia"])
        self.n_iter_ = int(out["n_iter"])
        self.n_swaps_ = int(out["n_swaps"])
        self.converged_ = bool(out["converged"])
        self.cluster_centers_ = None if precomputed else X[self.medoid_indices_]
        self._metric = metric if D is None else "foreign"
        return self

    def _least_sums(self, X, is_matrix):
        """scikit-learn-extra's "heuristic" start: the k rows of least dissimilarity sum (by
        blocks of rows: no n × n matrix beyond a given one)."""
        if is_matrix:
            sums = np.asarray(X.sum(axis=1)).ravel()
        else:
            dense = X.toarray() if sp.issparse(X) else X
            sums = np.concatenate([d.sum(axis=1) for d in Metric(self.metric, self.p).blocks(dense, dense, n_threads(self))])
        return [int(i) for i in np.argsort(sums, kind="stable")[: self.n_clusters]]

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def _to_medoids(self, X):
        """Dissimilarities of X's rows to the medoids (n × k), and their nearest medoid."""
        check_is_fitted(self)
        X = points(self, X, reset=False, accept_sparse=sparse_rows_metric(self._metric))
        if self._foreign is not None:
            d = self._foreign.distances(X, self.cluster_centers_)
            return d, np.argmin(d, axis=1).astype(np.int64)
        if self._metric == "precomputed":
            d = X[:, self.medoid_indices_]
            return d, np.argmin(d, axis=1).astype(np.int64)
        medoids = self.cluster_centers_
        if sp.issparse(X) or sp.issparse(medoids):
            # (the fit's own distances between sparse rows)
            dtype = medoids.dtype
            X, medoids = sp.csr_matrix(X, dtype=dtype), sp.csr_matrix(medoids, dtype=dtype)
            d = _clustr.sparse_distances(rows(X), rows(medoids), self._metric, n_threads(self)).astype(dtype, copy=False)
            return d, np.argmin(d, axis=1).astype(np.int64)
        return pairwise(X, medoids, self._metric, n_threads(self)), None

    def predict(self, X):
        """The nearest medoid of each new point (lowest index on ties)."""
        check_is_fitted(self)
        if self._metric in ("precomputed", "foreign") or sp.issparse(X) or sp.issparse(self.cluster_centers_):
            return self._to_medoids(X)[1]
        X = points(self, X, reset=False)
        return nearest(X, self.cluster_centers_, self._metric, n_threads(self))[0]

    def transform(self, X):
        """Dissimilarity of each point to each medoid (n × k)."""
        return self._to_medoids(X)[0]


class DBSCAN(ClusterMixin, BaseEstimator):
    """DBSCAN with scikit-learn's semantics: core points have at least ``min_samples``
    points (or that much ``sample_weight``) within ``eps``, themselves included; labels
    are scikit-learn's (border points join the first cluster that reaches them).

    Unlike scikit-learn, the neighbourhoods are never all stored: memory is O(n) beyond the
    spatial index. ``metric`` is a clustr metric (``minkowski`` with ``p``; ``haversine``
    on (latitude, longitude) in degrees with ``eps`` in km, where scikit-learn takes
    radians), ``"precomputed"``, or any other metric of scikit-learn's
    ``pairwise_distances`` or a callable (with ``metric_params``; these are computed into
    the graph of the pairs within ``eps``, by blocks of rows). ``algorithm`` chooses the
    index (``auto``, ``kd_tree``, ``ball_tree``, ``brute``; the trees refuse the metrics
    scikit-learn's trees refuse). ``leaf_size`` is accepted and changes nothing (clustr's
    trees choose their leaves); ``n_jobs`` is the thread count (None: every core), ``n_threads`` its clustr name (it wins).
    """

    _parameter_constraints = {
        "eps": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "min_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "metric": ANY_METRIC,
        "metric_params": [dict, None],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "backend": BACKEND,
        "n_jobs": [numbers.Integral, None],
        "n_threads": THREADS,
    }

    def __init__(self, eps=0.5, *, min_samples=5, metric="euclidean", metric_params=None, algorithm="auto",
                 leaf_size=30, p=None, n_jobs=None, backend="auto", n_threads=None):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.backend = backend
        self.n_jobs = n_jobs
        self.n_threads = n_threads

    def _sparse_metric(self):
        """Whether the metric takes sparse input: computed on sparse rows (by brute force over
        the rows sharing a term), or a precomputed sparse neighbourhood graph."""
        return self.metric == "precomputed" or sparse_rows_metric(self.metric, self.p)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._sparse_metric()
        tags.input_tags.pairwise = self.metric == "precomputed"
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        metric = Metric(self.metric, self.p, self.metric_params)
        if not metric.precomputed:
            metric.check_algorithm(self.algorithm)
        X = points(self, X, reset=True, accept_sparse=self._sparse_metric())
        w = _weights(sample_weight, X, allow_negative=True)
        if metric.native:
            out = _clustr.dbscan_fit(rows(X), params(self, metric=metric.name), w)
        else:
            graph = _neighbourhood_graph(X, self.eps) if metric.precomputed else metric.within(X, self.eps, n_jobs=self.n_jobs)
            out = _clustr.dbscan_graph_fit(rows(graph), params(self, metric="euclidean"), w)
        self.backend_ = out["backend"]
        self.labels_ = out["labels"]
        self.core_sample_indices_ = out["core_sample_indices"]
        self.components_ = X[self.core_sample_indices_].copy()
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_


def _neighbourhood_graph(D, eps):
    """A precomputed distance matrix as the neighbourhood graph DBSCAN and OPTICS read: a sparse one
    as it is (only its stored entries are neighbours, as scikit-learn's), a dense one as the
    CSR matrix of its entries within ``eps`` (explicit zeros kept)."""
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"a precomputed distance matrix must be square, got {D.shape}")
    if sp.issparse(D):
        return D
    r, c = np.nonzero(D <= eps)
    return sp.csr_matrix((D[r, c], (r, c)), shape=D.shape)


# The hdbscan package's algorithm names, as scikit-learn's (clustr's Borůvka runs for each).
_HDBSCAN_ALGORITHMS = {
    "best": "auto", "generic": "brute", "prims_kdtree": "kd_tree", "boruvka_kdtree": "kd_tree",
    "prims_balltree": "ball_tree", "boruvka_balltree": "ball_tree",
}


class HDBSCAN(ClusterMixin, BaseEstimator):
    """HDBSCAN with scikit-learn's semantics, parameter names and defaults, and the hdbscan
    package's attributes and methods; the spanning tree from Borůvka's algorithm over a
    k-d/ball tree (memory linear in n, no n × n matrix).

    Labels and ``probabilities_`` are scikit-learn's, with one difference: where two edges of
    the spanning tree weigh the same, scikit-learn orders them by numpy's unstable sort, this
    by a stable one (the points such a tie decides may differ). ``metric`` as :class:`DBSCAN`
    (haversine on degrees, in km; a metric clustr does not compute, with ``metric_params``,
    through an n × n matrix) or ``"precomputed"`` (a dense matrix, or a sparse one whose
    stored entries are the known distances, as scikit-learn: each point needs
    ``min_samples`` of them and the graph one component). ``algorithm`` chooses the index
    (the hdbscan package's names too: ``best``, ``generic``, ``prims_kdtree``, ...).
    ``copy``, ``leaf_size``, ``memory``, ``approx_min_span_tree``, ``gen_min_span_tree`` and
    ``core_dist_n_jobs`` are accepted and change nothing (X is never modified; the trees
    choose their leaves; nothing is cached; the spanning tree is always exact and kept);
    ``n_jobs`` is the thread count (None: every core). Keyword arguments beyond these are the metric's (the
    hdbscan package's ``**kwargs``), kept in ``metric_params``. The hdbscan package's
    ``cluster_selection_epsilon_max`` (excess of mass selects no cluster born above that
    distance) and ``cluster_selection_persistence`` (splits less persistent than that λ are
    undone first; the package keeps the simplified tree's λ in single precision, clustr in
    double) are taken.

    ``min_samples`` counts the point itself, as scikit-learn's; the hdbscan package counts
    it without (its ``min_samples=m`` is ``m + 1`` here). Left unset it is
    ``min_cluster_size``, at most n.

    As scikit-learn, rows with an infinite value are labelled −2 and rows with a NaN −3, the
    others fitted without them (the trees then number the finite rows only); their
    probability is 0 (scikit-learn gives a NaN row NaN: clustr presents no NaN) and their
    ``outlier_scores_`` 1, the most outlying. (The hdbscan package labels both −1.)

    Fitted, beyond scikit-learn's ``labels_`` and ``probabilities_``: the hdbscan package's
    ``outlier_scores_`` (GLOSH), ``cluster_persistence_``, ``condensed_tree_``,
    ``single_linkage_tree_`` (also usable as its linkage matrix) and
    ``minimum_spanning_tree_`` (see ``clustr._trees``: numpy, pandas, networkx, plots).
    ``store_centers`` ("centroid", "medoid", "both") sets ``centroids_`` and ``medoids_`` as
    scikit-learn's, from ``weighted_cluster_centroid`` and ``weighted_cluster_medoid``;
    ``dbscan_clustering(cut_distance, min_cluster_size)`` cuts the single-linkage tree as
    scikit-learn's.

    Prediction and soft clustering as the hdbscan package's functions of the same names (its
    semantics and numbers, from the fitted tree; the package's ``min_samples``, one less than
    clustr's): ``approximate_predict(X)``, ``membership_vector(X)`` and
    ``all_points_membership_vectors()`` (n × clusters, written row by row into its output), also
    as the functions ``clustr.approximate_predict(clusterer, X)`` and so on. They need the
    points under a metric clustr computes: not for a precomputed matrix, a foreign metric or
    sparse rows. ``prediction_data`` is accepted (what prediction needs is kept by every fit).
    """

    _parameter_constraints = {
        "min_cluster_size": [Interval(numbers.Integral, 2, None, closed="left")],
        "min_samples": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "cluster_selection_epsilon": [Interval(numbers.Real, 0, None, closed="left")],
        "cluster_selection_epsilon_max": [Interval(numbers.Real, 0, np.inf, closed="right")],
        "cluster_selection_persistence": [Interval(numbers.Real, 0, None, closed="left")],
        # (0: no limit, the hdbscan package's default)
        "max_cluster_size": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "metric": TREE_OR_ANY_METRIC,
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "algorithm": [StrOptions({"auto", "brute", "kd_tree", "ball_tree"} | set(_HDBSCAN_ALGORITHMS))],
        "cluster_selection_method": [StrOptions({"eom", "leaf"})],
        "allow_single_cluster": ["boolean"],
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "metric_params": [dict, None],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "store_centers": [None, StrOptions({"centroid", "medoid", "both"})],
        "copy": ["boolean"],
        "memory": [None, str, HasMethods("cache")],
        "approx_min_span_tree": ["boolean"],
        "gen_min_span_tree": ["boolean"],
        "core_dist_n_jobs": [numbers.Integral, None],
        "prediction_data": ["boolean"],
        "backend": BACKEND,
        "n_jobs": [numbers.Integral, None],
        "n_threads": THREADS,
    }

    def __init__(
        self,
        min_cluster_size=5,
        min_samples=None,
        cluster_selection_epsilon=0.0,
        max_cluster_size=None,
        metric="euclidean",
        metric_params=None,
        alpha=1.0,
        algorithm="auto",
        leaf_size=40,
        cluster_selection_method="eom",
        allow_single_cluster=False,
        store_centers=None,
        copy=False,
        p=None,
        memory=None,
        approx_min_span_tree=True,
        gen_min_span_tree=False,
        core_dist_n_jobs=None,
        cluster_selection_epsilon_max=float("inf"),
        cluster_selection_persistence=0.0,
        prediction_data=False,
        n_jobs=None, backend="auto", n_threads=None,
        **kwargs,
    ):
        if kwargs and (metric_params is None or isinstance(metric_params, dict)):
            # (the hdbscan package's metric keywords, where get_params and clone see them)
            metric_params = {**(metric_params or {}), **kwargs}
        self.metric_params = metric_params
        self.leaf_size = leaf_size
        self.store_centers = store_centers
        self.copy = copy
        self.min_cluster_size = min_cluster_size
        self.min_samples = min_samples
        self.cluster_selection_epsilon = cluster_selection_epsilon
        self.max_cluster_size = max_cluster_size
        self.metric = metric
        self.alpha = alpha
        self.algorithm = algorithm
        self.cluster_selection_method = cluster_selection_method
        self.allow_single_cluster = allow_single_cluster
        self.p = p
        self.memory = memory
        self.approx_min_span_tree = approx_min_span_tree
        self.gen_min_span_tree = gen_min_span_tree
        self.core_dist_n_jobs = core_dist_n_jobs
        self.cluster_selection_epsilon_max = cluster_selection_epsilon_max
        self.cluster_selection_persistence = cluster_selection_persistence
        self.prediction_data = prediction_data
        self.backend = backend
        self.n_jobs = n_jobs
        self.n_threads = n_threads

    def set_params(self, **params):
        """scikit-learn's ``set_params``; a key that is not a parameter is the metric's, as in
        ``__init__`` (the hdbscan package's ``**kwargs``), kept in ``metric_params``."""
        known = self.get_params(deep=False)
        extra = {k: params.pop(k) for k in list(params) if k not in known and "__" not in k}
        if extra:
            given = params.get("metric_params", self.metric_params)
            params["metric_params"] = {**given, **extra} if isinstance(given, dict) else extra if given is None else given
        return super().set_params(**params)

    def _metric(self):
        return Metric(self.metric, self.p, self.metric_params)

    def _sparse_metric(self):
        """Whether the metric takes sparse input: computed on sparse rows, or a sparse
        precomputed matrix."""
        metric = self._metric()
        return metric.precomputed or (metric.native and sparse_rows_metric(metric.name))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = self._sparse_metric()
        # (rows with inf or NaN are labelled apart, as scikit-learn's)
        tags.input_tags.allow_nan = self.metric != "precomputed"
        # Dissimilarities are non-negative.
        tags.input_tags.positive_only = self.metric == "precomputed"
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        metric = self._metric()
        precomputed = metric.precomputed
        algorithm = _HDBSCAN_ALGORITHMS.get(self.algorithm, self.algorithm)
        if precomputed and self.store_centers is not None:
            raise ValueError("Cannot store centers when using a precomputed distance matrix.")
        X = points(self, X, reset=True, accept_sparse=self._sparse_metric(), finite=False)
        metric.check_algorithm(algorithm, callable_ball_tree=False)
        if sp.issparse(X) and not precomputed and algorithm not in ("auto", "brute"):
            raise ValueError("Sparse data matrices only support algorithm `brute`.")
        if X.shape[0] == 1:
            raise ValueError("n_samples=1 while HDBSCAN requires more than one sample")
        # (scikit-learn's messages, which its tests match; a min_samples taken from
        # min_cluster_size is at most n, as the hdbscan package's: all noise, not an error
        # about a parameter not given)
        min_samples = min(self.min_cluster_size, X.shape[0]) if self.min_samples is None else self.min_samples
        if min_samples > X.shape[0]:
            raise ValueError(
                f"min_samples ({min_samples}) must be at most the number of samples in X ({X.shape[0]})"
            )
        if precomputed:
            _check_precomputed(X)
        # (rows with inf or NaN set apart, as scikit-learn: a NaN anywhere in a row, an inf and
        # a -inf included, makes it "missing")
        n = X.shape[0]
        with np.errstate(invalid="ignore", over="ignore"):
            row_sums = np.asarray(X.sum(axis=1)).ravel() if not precomputed else np.zeros(n)
        missing, infinite = np.isnan(row_sums), np.isinf(row_sums)
        finite = ~(missing | infinite)
        fitted = X if finite.all() else X[finite]
        # (a metric clustr does not compute: fitted as its precomputed matrix)
        p = params(self, algorithm=algorithm, metric=metric.name if metric.native else "precomputed",
                   min_samples=min_samples, max_cluster_size=self.max_cluster_size or None)
        if precomputed and sp.issparse(X):
            out = _sparse_precomputed_fit(X, min_samples, self.alpha, metric.kwargs.get("max_distance", 0.0), p)
        elif metric.native or precomputed:
            out = _clustr.hdbscan_fit(rows(fitted), p)
        else:
            out = _clustr.hdbscan_fit(metric.distances(fitted, n_jobs=self.n_jobs), p)
        self.backend_ = out["backend"]
        self.labels_ = np.full(n, -1, dtype=np.int64)
        self.probabilities_ = np.zeros(n)
        self.outlier_scores_ = np.ones(n)
        self.labels_[finite] = out["labels"]
        self.labels_[infinite] = -2
        self.labels_[missing] = -3
        self.probabilities_[finite] = out["probabilities"]
        self.outlier_scores_[finite] = out["outlier_scores"]
        self.single_linkage_tree_ = SingleLinkageTree(out["single_linkage_tree"])
        self.condensed_tree_ = CondensedTree(out["condensed_tree"], out["selected_clusters"])
        self.minimum_spanning_tree_ = MinimumSpanningTree(out["minimum_spanning_tree"], None if precomputed else fitted)
        self.cluster_persistence_ = _persistence(out["condensed_tree"], out["selected_clusters"], out["labels"])
        self._raw_data = None if precomputed else X
        self._prediction = None if precomputed or not metric.native or sp.issparse(X) else dict(
            points=np.ascontiguousarray(fitted, dtype=np.float64), finite=finite, metric=p["metric"],
            min_samples=min_samples, condensed=np.ascontiguousarray(out["condensed_tree"], dtype=np.float64),
            selected=[int(c) for c in out["selected_clusters"]])
        k, d = len(self.cluster_persistence_), X.shape[1]
        if self.store_centers in ("centroid", "both"):
            self.centroids_ = np.array([self.weighted_cluster_centroid(c) for c in range(k)]).reshape(k, d)
        if self.store_centers in ("medoid", "both"):
            self.medoids_ = np.array([self.weighted_cluster_medoid(c) for c in range(k)]).reshape(k, d)
        return self

    @property
    def _single_linkage_tree_(self):
        """The single-linkage tree as scikit-learn's private structured array (its helpers
        such as ``_condense_tree`` read it)."""
        m = np.asarray(self.single_linkage_tree_)
        out = np.empty(len(m), dtype=[("left_node", np.intp), ("right_node", np.intp), ("value", np.float64),
                                      ("cluster_size", np.intp)])
        out["left_node"], out["right_node"], out["value"], out["cluster_size"] = m[:, 0], m[:, 1], m[:, 2], m[:, 3]
        return out

    def _members(self, cluster_id, what):
        check_is_fitted(self)
        if cluster_id < 0:
            raise ValueError(f"Cannot calculate weighted {what} for -1 cluster since it is a noise cluster")
        if self._raw_data is None:
            raise ValueError(f"Cannot calculate a weighted {what} from a precomputed distance matrix")
        members = self.labels_ == cluster_id
        if not members.any():
            raise ValueError(f"there is no cluster {cluster_id} (labels are 0 to {self.labels_.max()})")
        data = self._raw_data[members]
        data = np.asarray(data.toarray() if sp.issparse(data) else data, dtype=np.float64)
        return data, self.probabilities_[members]

    def weighted_cluster_centroid(self, cluster_id):
        """The mean of cluster ``cluster_id``'s points weighted by their membership strength
        (``probabilities_``; the hdbscan package's and scikit-learn's centroid)."""
        data, strength = self._members(cluster_id, "centroid")
        return np.average(data, weights=strength, axis=0)

    def weighted_cluster_medoid(self, cluster_id):
        """The point of cluster ``cluster_id`` whose distances to the others, weighted by their
        membership strength, sum least (under the fit's metric; by blocks of rows, no
        cluster-size-squared matrix)."""
        data, strength = self._members(cluster_id, "medoid")
        sums = np.concatenate([d @ strength for d in self._metric().blocks(data, data, n_threads(self))])
        return data[np.argmin(sums)]

    def dbscan_clustering(self, cut_distance, min_cluster_size=5):
        """The flat clustering of DBSCAN* at ``cut_distance`` (scikit-learn's): the points
        joined by merges of the single-linkage tree below the cut, groups smaller than
        ``min_cluster_size`` noise (−1); rows with inf −2, with NaN −3, as in ``labels_``."""
        check_is_fitted(self)
        labels = np.full(len(self.labels_), -1, dtype=np.int64)
        labels[self.labels_ > -2] = _cut_single_linkage(np.asarray(self.single_linkage_tree_), cut_distance, min_cluster_size)
        labels[self.labels_ == -2] = -2
        labels[self.labels_ == -3] = -3
        return labels

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def _predict(self, what, X=None):
        """The binding's prediction ``what`` from this fit (see ``approximate_predict``)."""
        check_is_fitted(self)
        pred = self._prediction
        if pred is None:
            raise ValueError(
                "prediction needs the points under a metric clustr computes: not a precomputed "
                "matrix, a foreign metric or sparse rows"
            )
        new = None
        if X is not None:
            new = np.ascontiguousarray(check_array(X, dtype=np.float64), dtype=np.float64)
            if new.shape[1] != pred["points"].shape[1]:
                raise ValueError("New points dimension does not match fit data!")
        return _clustr.hdbscan_prediction(pred["points"], pred["metric"], pred["min_samples"], pred["condensed"],
                                          pred["selected"], what, new, n_threads(self))

    def approximate_predict(self, X, return_connecting_points=False):
        """The clusters of new points in this fit (the hdbscan package's
        ``approximate_predict``): each joins the tree next to its nearest training point in
        mutual reachability, without changing it. Returns the labels (−1 noise) and membership
        strengths, and with ``return_connecting_points`` that training point's index."""
        if self._prediction is not None and not self._prediction["selected"]:
            warnings.warn("Clusterer does not have any defined clusters, new data will be automatically "
                          "predicted as noise.", UserWarning)
        out = self._predict("approximate_predict", X)
        labels, strengths = out["labels"], out["probabilities"]
        if not return_connecting_points:
            return labels, strengths
        neighbors = out["neighbors"]
        finite = np.flatnonzero(self._prediction["finite"])
        return labels, strengths, np.where(neighbors >= 0, finite[np.maximum(neighbors, 0)], -1)

    def membership_vector(self, X):
        """Soft cluster membership of new points, n × clusters (the hdbscan package's
        ``membership_vector``): each row sums to the probability that the point is in some
        cluster."""
        return self._predict("membership_vector", X)["membership"]

    def all_points_membership_vectors(self):
        """Soft cluster membership of every training point, n × clusters (the hdbscan
        package's ``all_points_membership_vectors``; rows with inf or NaN are 0; with no cluster,
        zeros of length n, as the package)."""
        m = self._predict("all_points_membership_vectors")["membership"]
        finite = self._prediction["finite"]
        if m.shape[1] == 0:
            return np.zeros(len(finite))
        if finite.all():
            return m
        full = np.zeros((len(finite), m.shape[1]))
        full[finite] = m
        return full


def approximate_predict(clusterer, points_to_predict, return_connecting_points=False):
    """The hdbscan package's ``approximate_predict`` for a fitted :class:`HDBSCAN`."""
    return clusterer.approximate_predict(points_to_predict, return_connecting_points)


def membership_vector(clusterer, points_to_predict):
    """The hdbscan package's ``membership_vector`` for a fitted :class:`HDBSCAN`."""
    return clusterer.membership_vector(points_to_predict)


def all_points_membership_vectors(clusterer):
    """The hdbscan package's ``all_points_membership_vectors`` for a fitted :class:`HDBSCAN`."""
    return clusterer.all_points_membership_vectors()


def _check_precomputed(D):
    """A precomputed distance matrix (dense or sparse) as scikit-learn's HDBSCAN takes it, with
    its messages."""
    if not sp.issparse(D) and np.isnan(D).any():
        raise ValueError("np.nan values found in precomputed-dense (Input contains NaN)")
    values = D.data if sp.issparse(D) else D
    if np.isinf(values).any():
        # (scikit-learn takes an infinite dissimilarity as no link; clustr refuses it)
        raise ValueError("a precomputed dissimilarity matrix must be finite (Input contains infinity)")
    if D.shape[0] != D.shape[1]:
        raise ValueError(
            f"The precomputed distance matrix is expected to be symmetric, however it has "
            f"shape {D.shape}. Please verify that the distance matrix was constructed correctly."
        )
    asymmetric = abs(D - D.T).max() > 1e-8 + 1e-5 * abs(D).max() if sp.issparse(D) else not np.allclose(D, D.T)
    if asymmetric:
        raise ValueError(
            "The precomputed distance matrix is expected to be symmetric, however its "
            "values appear to be asymmetric. Please verify that the distance matrix was "
            "constructed correctly."
        )
    check_non_negative(D, "HDBSCAN (precomputed)")


def _sparse_precomputed_fit(D, min_samples, alpha, max_distance, p):
    """HDBSCAN on a sparse distance matrix whose stored entries are the known distances
    (scikit-learn's semantics and messages): the core distance of a point is its
    ``min_samples``-th smallest stored entry, the mutual reachability of the stored pairs
    (``max_distance`` in place of an infinite one) gives scipy's minimum spanning tree, and
    the hierarchy is built on that tree."""
    D = sp.csr_matrix(D, dtype=np.float64, copy=True)
    D.sum_duplicates()
    D.data /= alpha
    n, counts = D.shape[0], np.diff(D.indptr)
    if (counts < min_samples).any():
        raise ValueError(
            f"There exists points with fewer than {min_samples} neighbors. Ensure your distance matrix has "
            f"non-zero values for at least `min_sample`={min_samples} neighbors for each points (i.e. K-nn graph), "
            "or specify a `max_distance` in `metric_params` to use when distances are missing."
        )
    core = np.array([np.partition(D.data[a:b], min_samples - 1)[min_samples - 1]
                     for a, b in zip(D.indptr[:-1], D.indptr[1:])])
    rows_of = np.repeat(np.arange(n), counts)
    reach = np.maximum(np.maximum(core[rows_of], core[D.indices]), D.data)
    if max_distance > 0:
        reach[~np.isfinite(reach)] = max_distance
    graph = sp.csr_matrix((reach, D.indices, D.indptr), shape=D.shape)
    n_components = csgraph.connected_components(graph, directed=False, return_labels=False)
    if n_components > 1:
        raise ValueError(
            f"Sparse mutual reachability matrix has {n_components} connected components. HDBSCAN cannot be "
            "performed on a disconnected graph. Ensure that the sparse distance matrix has only one connected "
            "component."
        )
    tree = csgraph.minimum_spanning_tree(graph).tocoo()
    if len(tree.data) != n - 1:
        # (scipy drops the edges of weight 0: zero distances between distinct points)
        raise ValueError("the sparse distance matrix has zero distances between distinct points; "
                         "give them as a small positive value or use a dense matrix")
    return _clustr.hdbscan_tree_fit(n, (tree.row.astype(np.int64), tree.col.astype(np.int64), tree.data), core, p)


def _persistence(condensed, selected, labels):
    """The hdbscan package's ``cluster_persistence_``: each selected cluster's stability over
    (its size × the tree's largest lambda), 1 where that lambda is infinite or 0."""
    parent, lam, size = condensed[:, 0].astype(np.int64), condensed[:, 2], condensed[:, 3]
    child = condensed[:, 1].astype(np.int64)
    birth = dict(zip(child, lam))
    root = parent.min() if len(parent) else 0
    out = np.ones(len(selected))
    lam_max = lam.max() if len(lam) else 0.0
    counts = np.bincount(labels[labels >= 0], minlength=len(selected))
    for i, c in enumerate(selected):
        rows = parent == c
        stability = ((lam[rows] - (0.0 if c == root else birth[c])) * size[rows]).sum()
        if np.isfinite(lam_max) and lam_max > 0 and counts[i] > 0:
            out[i] = stability / (counts[i] * lam_max)
    return out


def _cut_single_linkage(tree, cut_distance, min_cluster_size):
    """The flat clustering of a single-linkage tree (scipy's layout) at ``cut_distance``:
    scikit-learn's union by rank over the merges below the cut (merge i makes node m + i),
    whose roots number the clusters; groups smaller than ``min_cluster_size`` are noise."""
    m = len(tree) + 1
    parent, rank = list(range(2 * m - 1)), [0] * (2 * m - 1)

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, (left, right, distance, _) in enumerate(tree):
        if distance < cut_distance:
            for x in (int(left), int(right)):
                a, b = find(x), find(m + i)
                if rank[a] < rank[b]:
                    parent[a] = b
                elif rank[a] > rank[b]:
                    parent[b] = a
                else:
                    parent[b] = a
                    rank[a] += 1
    root = np.array([find(i) for i in range(m)], dtype=np.int64)
    roots, sizes = np.unique(root, return_counts=True)
    big = roots[sizes >= min_cluster_size]
    numbered = np.full(2 * m - 1, -1)
    numbered[big] = np.arange(len(big))
    return numbered[root]


class OPTICS(ClusterMixin, BaseEstimator):
    """OPTICS with scikit-learn's semantics and defaults: the reachability plot, then
    clusters by the ξ method (``cluster_method="xi"``) or at a DBSCAN radius
    (``"dbscan"``, ``eps``). ``min_samples`` and ``min_cluster_size`` may be fractions of
    n as in scikit-learn. Memory is O(n) beyond the spatial index. ``metric`` as
    :class:`DBSCAN`, ``"precomputed"`` included (a dense distance matrix, or a sparse
    neighbourhood graph whose stored entries are the neighbours: a point with fewer than
    ``min_samples`` of them is not a core point, where scikit-learn raises); a metric
    clustr does not compute (with ``metric_params``) gives the graph of the pairs within
    ``max_eps``. ``leaf_size`` and ``memory`` are accepted and change nothing (clustr's
    trees choose their leaves; nothing is cached); ``n_jobs`` is the thread count (None: every core), ``n_threads`` its clustr name.
    """

    _parameter_constraints = {
        "min_samples": [
            Interval(numbers.Integral, 2, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="both"),
        ],
        "max_eps": [Interval(numbers.Real, 0, None, closed="both")],
        "metric": ANY_METRIC,
        "p": [Interval(numbers.Real, 1, None, closed="left")],
        "metric_params": [dict, None],
        "cluster_method": [StrOptions({"dbscan", "xi"})],
        "eps": [Interval(numbers.Real, 0, None, closed="both"), None],
        "xi": [Interval(numbers.Real, 0, 1, closed="both")],
        "predecessor_correction": ["boolean"],
        "min_cluster_size": [
            Interval(numbers.Integral, 2, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="right"),
            None,
        ],
        "algorithm": [StrOptions({"auto", "brute", "ball_tree", "kd_tree"})],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "memory": [str, HasMethods("cache"), None],
        "backend": BACKEND,
        "n_jobs": [numbers.Integral, None],
        "n_threads": THREADS,
    }

    def __init__(
        self,
        *,
        min_samples=5,
        max_eps=np.inf,
        metric="minkowski",
        p=2,
        metric_params=None,
        cluster_method="xi",
        eps=None,
        xi=0.05,
        predecessor_correction=True,
        min_cluster_size=None,
        algorithm="auto",
        leaf_size=30,
        memory=None,
        n_jobs=None, backend="auto", n_threads=None,
    ):
        self.min_samples = min_samples
        self.max_eps = max_eps
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.cluster_method = cluster_method
        self.eps = eps
        self.xi = xi
        self.predecessor_correction = predecessor_correction
        self.min_cluster_size = min_cluster_size
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.memory = memory
        self.backend = backend
        self.n_jobs = n_jobs
        self.n_threads = n_threads

    @staticmethod
    def _count(v, n):
        """A count, or a fraction of n as scikit-learn (at least 2)."""
        if v is None:
            return None
        if isinstance(v, numbers.Integral) and v > 1:
            return int(v)
        return max(2, int(v * n))

    def _sparse_metric(self):
        """Whether the metric takes sparse input: computed on sparse rows, or a precomputed
        sparse neighbourhood graph."""
        return self.metric == "precomputed" or sparse_rows_metric(self.metric, self.p)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._sparse_metric()
        tags.input_tags.pairwise = self.metric == "precomputed"
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        # (one sample passes validation: the min_samples check below refuses it with
        # scikit-learn's message)
        metric = Metric(self.metric, self.p, self.metric_params)
        if not metric.precomputed:
            metric.check_algorithm(self.algorithm)
        dtype = (np.float64, np.float32)
        if isinstance(self.metric, str) and self.metric in PAIRWISE_BOOLEAN_FUNCTIONS:
            # (scikit-learn's OPTICS computes boolean metrics on boolean data)
            dtype = (bool,)
            if getattr(X, "dtype", None) != bool:
                warnings.warn(
                    f"Data will be converted to boolean for metric {self.metric}, to avoid this warning, "
                    "you may convert the data prior to calling fit.",
                    DataConversionWarning,
                )
        X = points(self, X, reset=True, dtype=dtype, accept_sparse=self._sparse_metric())
        n = X.shape[0]
        min_samples = self._count(self.min_samples, n)
        if min_samples > n:
            raise ValueError(
                f"min_samples must be no greater than the number of samples ({n}). Got {min_samples}"
                + (" (one sample cannot be clustered)" if n == 1 else "")
            )
        min_cluster_size = self._count(self.min_cluster_size, n)
        if min_cluster_size is not None and min_cluster_size > n:
            raise ValueError(
                f"min_cluster_size must be no greater than the number of samples ({n}). Got {min_cluster_size}"
            )
        if self.cluster_method == "dbscan" and self.eps is not None and self.eps > self.max_eps:
            raise ValueError(f"Specify an epsilon smaller than {self.max_eps}. Got {self.eps}.")
        w = _weights(sample_weight, X)
        if metric.native:
            p = params(self, metric=metric.name, min_samples=min_samples, min_cluster_size=min_cluster_size)
            out = _clustr.optics_fit(rows(X), p, w)
        else:
            # (a dense matrix: its entries within max_eps; a sparse one: its stored entries,
            # each point its own neighbour at its diagonal value, as scikit-learn)
            graph = _neighbourhood_graph(X, self.max_eps) if metric.precomputed else metric.within(X, self.max_eps, n_jobs=self.n_jobs)
            p = params(self, metric="euclidean", min_samples=min_samples, min_cluster_size=min_cluster_size)
            out = _clustr.optics_graph_fit(rows(graph), p, w)
        self.backend_ = out["backend"]
        self.ordering_ = out["ordering"]
        self.reachability_ = out["reachability"]
        self.core_distances_ = out["core_distances"]
        self.predecessor_ = out["predecessor"]
        self.labels_ = out["labels"]
        self.cluster_hierarchy_ = out["cluster_hierarchy"]
        if np.isinf(self.reachability_).all():
            warnings.warn("All reachability values are inf. Set a larger max_eps.", UserWarning, stacklevel=2)
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_


_POWER = {
    "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
    "s0": [Interval(numbers.Real, None, 0, closed="neither"), None],
    "eta": [Interval(numbers.Real, 1, None, closed="neither")],
    "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
    "init": [StrOptions({"k-means++", "random"})],
    "random_state": RANDOM_STATE,
    "backend": BACKEND,
    "n_threads": THREADS,
}


class PowerKMeans(_Centroids):
    """Power k-means (Xu & Lange, ICML 2019): k-means' objective approached through power
    means of the distances, annealing s from ``s0`` towards −∞, which escapes poor local
    optima. ``s0=None`` is clustr's default for data coordinates (−1); ``n_init`` runs
    from k-means++ seeds, the best objective kept."""

    _parameter_constraints = _POWER

    def __init__(
        self, n_clusters=8, *, s0=None, eta=1.04, max_iter=200, tol=1e-4, n_init=10,
        init="k-means++", random_state=None, backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.s0 = s0
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.random_state = random_state
        self.backend = backend
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=True)
        out = _clustr.power_kmeans_fit(X, params(self), _weights(sample_weight, X))
        self.backend_ = out["backend"]
        self._set_centres(out, X)
        self.objective_ = float(out["objective"])
        self.converged_ = bool(out["converged"])
        self.s_ = float(out["s"])
        return self


class RffKpkm(ClusterMixin, BaseEstimator):
    """Kernel power k-means on ``n_components`` random Fourier features of a Gaussian
    kernel of bandwidth ``sigma`` (None: the median distance of a seeded sample of 1,000
    points); ``predict`` maps new points with the fitted features and assigns the nearest
    centroid in feature space. ``s0=None`` is clustr's default for kernel methods (−10)."""

    _parameter_constraints = {
        **_POWER,
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self, n_clusters=8, *, n_components=1000, sigma=None, s0=None, eta=1.04, max_iter=200,
        tol=1e-4, n_init=10, init="k-means++", random_state=None, backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.sigma = sigma
        self.s0 = s0
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.random_state = random_state
        self.backend = backend
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        # The median-heuristic bandwidth needs two points.
        X = points(self, X, reset=True, min_samples=1 if self.sigma else 2)
        out = _clustr.rff_kpkm_fit(X, params(self), _weights(sample_weight, X))
        self.backend_ = out["backend"]
        self.cluster_centers_ = out["cluster_centers"]
        self.labels_ = out["labels"]
        self.random_weights_ = out["random_weights"]
        self.random_offset_ = out["random_offset"]
        self.sigma_ = float(out["sigma"])
        self.objective_ = float(out["objective"])
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def predict(self, X):
        check_is_fitted(self)
        X = points(self, X, reset=False)
        z = _clustr.rff_transform(X, self.random_weights_, self.random_offset_, self.sigma_, n_threads(self))
        return nearest(z, self.cluster_centers_, "sqeuclidean", n_threads(self))[0]


class IpRffMkpkm(ClusterMixin, BaseEstimator):
    """IP-RFF-MKPKM: kernel power k-means over several Gaussian kernels (bandwidths
    ``sigma_factors`` × the median heuristic, or ``sigmas``), each by ``n_components``
    random Fourier features, with learnt kernel weights and, when ``possibilistic``,
    typicalities (``typicality_``: low values flag outliers). clustr's reconstruction from
    the paper's abstract; see the Rust documentation of ``clustr::kernel::mkpkm``. No
    ``predict``: the model is defined on the training points."""

    _parameter_constraints = {
        **_POWER,
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma_factors": ["array-like", None],
        "sigmas": ["array-like", None],
        "possibilistic": ["boolean"],
        "m_p": [Interval(numbers.Real, 1, None, closed="neither")],
    }

    def __init__(
        self, n_clusters=8, *, n_components=500, sigma_factors=None, sigmas=None, possibilistic=True,
        m_p=2.0, s0=None, eta=1.04, max_iter=200, tol=1e-4, n_init=10, init="k-means++",
        random_state=None, backend="auto", n_threads=None,
    ):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.sigma_factors = sigma_factors
        self.sigmas = sigmas
        self.possibilistic = possibilistic
        self.m_p = m_p
        self.s0 = s0
        self.eta = eta
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.random_state = random_state
        self.backend = backend
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        X = points(self, X, reset=True, min_samples=1 if self.sigmas is not None else 2)
        floats = lambda v: None if v is None else [float(f) for f in np.ravel(v)]  # noqa: E731
        out = _clustr.ip_rff_mkpkm_fit(
            X, params(self, sigma_factors=floats(self.sigma_factors), sigmas=floats(self.sigmas))
        )
        self.backend_ = out["backend"]
        self.labels_ = out["labels"]
        self.kernel_weights_ = out["kernel_weights"]
        self.sigmas_ = out["sigmas"]
        self.typicality_ = out["typicality"]
        self.typicalities_ = out["typicalities"]
        self.objective_ = float(out["objective"])
        self.n_iter_ = int(out["n_iter"])
        self.converged_ = bool(out["converged"])
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_


def expected_failed_checks(estimator):
    """The scikit-learn estimator checks that cannot apply to ``estimator``, with the
    reason: pass it as ``expected_failed_checks`` to ``check_estimator`` or
    ``parametrize_with_checks``."""
    if isinstance(estimator, HDBSCAN) and estimator.metric == "precomputed":
        return {
            "check_clustering": "the check fits points (n × 2), not a square dissimilarity "
            "matrix, whatever the pairwise tag says",
        }
    if isinstance(estimator, KMedoids):
        failing = {}
        if estimator.metric == "precomputed":
            failing["check_clustering"] = (
                "the check fits points (n × 2), not a square dissimilarity matrix, whatever "
                "the pairwise tag says"
            )
        init = estimator.init if isinstance(estimator.init, str) else "given"
        build = init in ("build", "first", "given") or (
            init == "auto" and estimator.method in ("pam", "fastpam1")
        )
        if estimator.method in ("clarans", "fastclarans") or (
            not build and "clara" not in estimator.method
        ):
            why = (
                "random starts and CLARANS' tries draw among the rows, so weighted and repeated "
                "rows make different draws; from BUILD the fits are equal"
            )
            failing["check_sample_weight_equivalence_on_dense_data"] = why
            if sparse_rows_metric(estimator.metric, estimator.p):
                failing["check_sample_weight_equivalence_on_sparse_data"] = why
        return failing
    if isinstance(estimator, (KMeans, BisectingKMeans, MiniBatchKMeans, GaussianMixture, PowerKMeans, RffKpkm)):
        # scikit-learn declares the same for its KMeans and MiniBatchKMeans.
        why = (
            "seeding draws points in proportion to their weights, so weighted and repeated "
            "rows start from different draws of the same distribution; from the same start the "
            "fits are equal"
        )
        failing = {"check_sample_weight_equivalence_on_dense_data": why}
        if getattr(estimator, "_sparse", False):
            failing["check_sample_weight_equivalence_on_sparse_data"] = why
        return failing
    return {}

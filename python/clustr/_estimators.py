"""clustr's estimators in scikit-learn's shape: a thin layer over the Rust core (``_clustr``).

Parameter names and defaults are scikit-learn's where it has the estimator; the docstring
of each class says where clustr differs and why. Every estimator takes ``n_threads`` (None:
every core); its results do not depend on it.
"""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    DensityMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, _num_samples, check_is_fitted, check_non_negative

from ._base import _clustr
from ._base import BACKEND, METRICS, RANDOM_STATE, THREADS, metric_name, sparse_rows_metric, n_threads, nearest, params, pairwise, points, rows


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
    (scikit-learn centres X in place when it is False). ``verbose`` is not taken.

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
        random_state=None,
        copy_x=True,
        algorithm="auto",
        backend="auto", n_threads=None,
    ):
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
            run = _clustr.kmeans_fit(rows(X), params(self, init=init, init_centers=given, n_init=n_init), w)
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
    of the smoothed batch inertia. ``verbose`` and ``compute_labels`` are not taken (labels
    are always computed). X may be dense or scipy.sparse (never densified).

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
            run = _clustr.minibatch_kmeans_fit(rows(X), params(self, init=init, init_centers=given, n_init=n_init), w)
            if out is None or run["inertia"] < out["inertia"]:
                out = run
        self.backend_ = out["backend"]
        self._set_centres(out, X)
        self.inertia_ = float(out["inertia"])
        self.n_steps_ = int(out["n_steps"])
        self._counts = out["counts"]
        self._since_reassign = 0
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


class GaussianMixture(DensityMixin, BaseEstimator):
    """Gaussian mixture fitted by EM, with scikit-learn's ``GaussianMixture`` interface.

    Parameters and fitted attributes are scikit-learn's. Where clustr differs:

    - ``weights_init``, ``means_init`` and ``precisions_init`` given together start EM from
      exactly these parameters (as scikit-learn). ``means_init`` alone starts from the
      partition of the points by their nearest given mean (scikit-learn takes the other
      parameters from ``init_params``); other partial combinations raise ``ValueError``.
    - ``warm_start=True`` continues from the previous fit's parameters (one run), as
      scikit-learn, but the first iteration's improvement is measured from −∞.
    - The computation is in float64 whatever the input's type.
    - ``sample_weight`` (scikit-learn's GaussianMixture has none): weighted EM, an integer
      weight counting as that many copies of the row. The default k-means start is
      unweighted, so equality with repeated rows holds from a given start (``means_init``,
      or all three ``*_init``).
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
        self.backend = backend
        self.n_threads = n_threads

    def _start(self):
        """The (weights, means, covariances) EM starts from, or None; and means alone."""
        if self.warm_start and hasattr(self, "converged_"):
            return (self.weights_, self.means_, self.covariances_), None
        given = [self.weights_init is not None, self.means_init is not None, self.precisions_init is not None]
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        if all(given):
            covs = _precisions_to_covariances(self.precisions_init, self.covariance_type)
            return (f64(self.weights_init), f64(self.means_init), covs), None
        if given == [False, True, False]:
            return None, f64(self.means_init)
        if any(given):
            raise ValueError(
                "clustr's GaussianMixture takes weights_init, means_init and precisions_init "
                "together, or means_init alone"
            )
        return None, None

    def fit(self, X, y=None, sample_weight=None):
        self.fit_predict(X, y, sample_weight=sample_weight)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, sample_weight=None):
        X = points(self, X, reset=not (self.warm_start and hasattr(self, "converged_")), dtype=[np.float64])
        w = _weights(sample_weight, X)
        if X.shape[0] < self.n_components:
            raise ValueError(
                f"Expected n_samples >= n_components but got n_components = "
                f"{self.n_components}, n_samples = {X.shape[0]}"
            )
        start, means = self._start()
        n_init = 1 if start is not None or means is not None else self.n_init
        out = _clustr.gmm_fit(X, params(self, n_init=n_init, start=start, means_init=means), w)
        self.backend_ = out["backend"]
        self.weights_ = out["weights"]
        self.means_ = out["means"]
        self.covariances_ = out["covariances"]
        self.precisions_cholesky_ = out["precisions_cholesky"]
        self.precisions_ = _precisions_from_cholesky(self.precisions_cholesky_, self.covariance_type)
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


class KMedoids(ClusterMixin, TransformerMixin, BaseEstimator):
    """k-medoids: the medoids are data points, for any metric or a precomputed matrix.

    ``method``: ``"pam"`` (BUILD + SWAP, Kaufman & Rousseeuw), ``"fastpam1"``,
    ``"fastpam2"`` (Schubert & Rousseeuw 2019), ``"fasterpam"`` (2021; the default, as the
    ``kmedoids`` package), ``"alternating"`` (Voronoi iteration, scikit-learn-extra's
    ``"alternate"``), ``"clara"``, ``"fastclara"``, ``"fasterclara"`` (medoids of samples,
    no n × n matrix), ``"clarans"``, ``"fastclarans"`` (randomised search, dissimilarities
    computed when needed).

    ``metric``: a clustr metric (``euclidean``, ``sqeuclidean``, ``manhattan``, ``cosine``,
    ``chebyshev``, ``minkowski`` with ``p``, ``haversine`` on (latitude, longitude) in
    degrees, giving km) or ``"precomputed"`` (X is a square dissimilarity matrix; then
    ``predict`` and ``transform`` take the dissimilarities of new points to the training
    points, n_new × n_train). ``init``: ``"auto"`` (BUILD for pam and fastpam1, random
    otherwise), ``"build"``, ``"lab"``, ``"random"``, ``"k-means++"``, ``"first"``, or k
    indices. ``samples``/``sample_size`` are CLARA's, ``numlocal``/``maxneighbor``
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
        "metric": [METRICS, StrOptions({"precomputed"})],
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "method": [
            StrOptions(
                {"pam", "fastpam1", "fastpam2", "fasterpam", "alternating", "clara", "fastclara",
                 "fasterclara", "clarans", "fastclarans"}
            )
        ],
        "init": [StrOptions({"auto", "build", "lab", "random", "k-means++", "first"}), "array-like"],
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
        precomputed = self.metric == "precomputed"
        if precomputed:
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"A precomputed dissimilarity matrix must be square, got {X.shape}")
            check_non_negative(X, "KMedoids (precomputed)")
        if isinstance(self.init, str):
            init, given = (None if self.init == "auto" else self.init), None
        else:
            given = [int(i) for i in np.asarray(self.init).ravel()]
            if any(not 0 <= i < X.shape[0] for i in given):
                raise ValueError(
                    f"init: the medoids are row indices in [0, {X.shape[0]}), got {given}"
                )
            init = None
        p = params(self, init=init, medoids_init=given)
        if precomputed:
            p["metric"] = "precomputed"
        metric = p["metric"]
        out = _clustr.kmedoids_fit(rows(X), p, w)
        self.backend_ = out["backend"]
        self.medoid_indices_ = out["medoid_indices"]
        self.labels_ = out["labels"]
        self.inertia_ = float(out["inertia"])
        self.n_iter_ = int(out["n_iter"])
        self.n_swaps_ = int(out["n_swaps"])
        self.converged_ = bool(out["converged"])
        self.cluster_centers_ = None if precomputed else X[self.medoid_indices_]
        self._metric = metric
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def _to_medoids(self, X):
        """Dissimilarities of X's rows to the medoids (n × k), and their nearest medoid."""
        check_is_fitted(self)
        X = points(self, X, reset=False, accept_sparse=sparse_rows_metric(self._metric))
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
        if self._metric == "precomputed" or sp.issparse(X) or sp.issparse(self.cluster_centers_):
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
    radians); ``algorithm`` chooses the index (``auto``, ``kd_tree``, ``ball_tree``,
    ``brute``). ``leaf_size``, ``metric_params`` and ``n_jobs`` are not taken
    (``n_threads`` replaces ``n_jobs``).
    """

    _parameter_constraints = {
        "eps": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "min_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "metric": [METRICS, StrOptions({"precomputed"})],
        "algorithm": [StrOptions({"auto", "ball_tree", "kd_tree", "brute"})],
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(self, eps=0.5, *, min_samples=5, metric="euclidean", algorithm="auto", p=None, backend="auto", n_threads=None):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.algorithm = algorithm
        self.p = p
        self.backend = backend
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
        X = points(self, X, reset=True, accept_sparse=self._sparse_metric())
        w = _weights(sample_weight, X, allow_negative=True)
        if self.metric == "precomputed":
            out = _clustr.dbscan_graph_fit(rows(_neighbourhood_graph(X, self.eps)), params(self, metric="euclidean"), w)
        else:
            out = _clustr.dbscan_fit(rows(X), params(self), w)
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


class HDBSCAN(ClusterMixin, BaseEstimator):
    """HDBSCAN with scikit-learn's semantics, parameter names and defaults; the spanning tree
    from Borůvka's algorithm over a k-d/ball tree (memory linear in n, no n × n matrix).

    Labels and ``probabilities_`` are scikit-learn's, with one difference: where two edges of
    the spanning tree weigh the same, scikit-learn orders them by numpy's unstable sort, this
    by a stable one (the points such a tie decides may differ). ``outlier_scores_`` are the
    GLOSH scores of the ``hdbscan`` package. ``metric`` as :class:`DBSCAN` (haversine on
    degrees, in km) or ``"precomputed"``; ``metric_params`` may give ``p`` (minkowski) only;
    ``algorithm`` chooses the index. ``copy`` and ``leaf_size`` are accepted and change
    nothing (X is never modified; the trees choose their own leaves); ``n_threads`` replaces
    ``n_jobs``.

    As scikit-learn, rows with an infinite value are labelled −2 and rows with a NaN −3, the
    others fitted without them (``single_linkage_tree_`` then numbers the finite rows only);
    their probability is 0 (scikit-learn gives a NaN row NaN: clustr presents no NaN) and
    their ``outlier_scores_`` 1, the most outlying.
    ``store_centers`` ("centroid", "medoid", "both") sets ``centroids_`` (each cluster's
    mean weighted by ``probabilities_``) and ``medoids_`` (its row of least
    probability-weighted distance sum, under the metric), as scikit-learn's;
    ``dbscan_clustering(cut_distance, min_cluster_size)`` cuts the single-linkage tree as
    scikit-learn's.
    """

    _parameter_constraints = {
        "min_cluster_size": [Interval(numbers.Integral, 2, None, closed="left")],
        "min_samples": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "cluster_selection_epsilon": [Interval(numbers.Real, 0, None, closed="left")],
        "max_cluster_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "metric": [METRICS, StrOptions({"precomputed"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "algorithm": [StrOptions({"auto", "brute", "kd_tree", "ball_tree"})],
        "cluster_selection_method": [StrOptions({"eom", "leaf"})],
        "allow_single_cluster": ["boolean"],
        "p": [Interval(numbers.Real, 1, None, closed="left"), None],
        "metric_params": [dict, None],
        "leaf_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "store_centers": [None, StrOptions({"centroid", "medoid", "both"})],
        "copy": ["boolean"],
        "backend": BACKEND,
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
        backend="auto", n_threads=None,
    ):
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
        self.backend = backend
        self.n_threads = n_threads

    def _p(self):
        """Minkowski's p, from ``p`` or ``metric_params``."""
        extra = dict(self.metric_params or {})
        p = extra.pop("p", self.p)
        if extra:
            raise ValueError(f"metric_params: only p is taken, got {sorted(extra)}")
        return p

    def _sparse_metric(self):
        """Whether the metric is one computed on sparse rows."""
        return sparse_rows_metric(self.metric, self._p())

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
        precomputed = self.metric == "precomputed"
        if precomputed and self.store_centers is not None:
            raise ValueError("Cannot store centers when using a precomputed distance matrix.")
        X = points(self, X, reset=True, accept_sparse=self._sparse_metric(), finite=False)
        if X.shape[0] == 1:
            raise ValueError("n_samples=1 while HDBSCAN requires more than one sample")
        # (scikit-learn's messages, which its tests match)
        min_samples = self.min_cluster_size if self.min_samples is None else self.min_samples
        if min_samples > X.shape[0]:
            raise ValueError(
                f"min_samples ({min_samples}) must be at most the number of samples in X ({X.shape[0]})"
            )
        if precomputed:
            if self.algorithm not in ("auto", "brute"):
                raise ValueError(f"precomputed is not a valid metric for algorithm {self.algorithm!r}")
            if np.isnan(X).any():
                raise ValueError("np.nan values found in precomputed-dense (Input contains NaN)")
            if np.isinf(X).any():
                # (scikit-learn takes an infinite dissimilarity as no link; clustr refuses it)
                raise ValueError("a precomputed dissimilarity matrix must be finite (Input contains infinity)")
            if X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"The precomputed distance matrix is expected to be symmetric, however it has "
                    f"shape {X.shape}. Please verify that the distance matrix was constructed correctly."
                )
            if not np.allclose(X, X.T):
                raise ValueError(
                    "The precomputed distance matrix is expected to be symmetric, however its "
                    "values appear to be asymmetric. Please verify that the distance matrix was "
                    "constructed correctly."
                )
            check_non_negative(X, "HDBSCAN (precomputed)")
        # (rows with inf or NaN set apart, as scikit-learn: a NaN anywhere in a row, an inf and
        # a -inf included, makes it "missing")
        n = X.shape[0]
        with np.errstate(invalid="ignore", over="ignore"):
            row_sums = np.asarray(X.sum(axis=1)).ravel() if not precomputed else np.zeros(n)
        missing, infinite = np.isnan(row_sums), np.isinf(row_sums)
        finite = ~(missing | infinite)
        fitted = X if finite.all() else X[finite]
        out = _clustr.hdbscan_fit(rows(fitted), params(self, p=self._p()))
        self.backend_ = out["backend"]
        self.labels_ = np.full(n, -1, dtype=np.int64)
        self.probabilities_ = np.zeros(n)
        self.outlier_scores_ = np.ones(n)
        self.labels_[finite] = out["labels"]
        self.labels_[infinite] = -2
        self.labels_[missing] = -3
        self.probabilities_[finite] = out["probabilities"]
        self.outlier_scores_[finite] = out["outlier_scores"]
        self.single_linkage_tree_ = out["single_linkage_tree"]
        if self.store_centers is not None:
            self._store_centers(X)
        return self

    def _store_centers(self, X):
        """``centroids_`` and/or ``medoids_`` of the clusters (scikit-learn's definitions);
        the medoid's distance sums by blocks of rows (no cluster-size-squared matrix)."""
        k = int(self.labels_.max()) + 1 if (self.labels_ >= 0).any() else 0
        centroids, medoids = np.empty((k, X.shape[1])), np.empty((k, X.shape[1]))
        metric = metric_name(self.metric, self._p())
        for c in range(k):
            members = self.labels_ == c
            data = X[members]
            data = np.asarray(data.toarray() if sp.issparse(data) else data, dtype=np.float64)
            strength = self.probabilities_[members]
            centroids[c] = np.average(data, weights=strength, axis=0)
            if self.store_centers in ("medoid", "both"):
                sums = np.concatenate([
                    pairwise(data[a:a + 1024], data, metric, n_threads(self)) @ strength
                    for a in range(0, len(data), 1024)
                ])
                medoids[c] = data[np.argmin(sums)]
        if self.store_centers in ("centroid", "both"):
            self.centroids_ = centroids
        if self.store_centers in ("medoid", "both"):
            self.medoids_ = medoids

    def dbscan_clustering(self, cut_distance, min_cluster_size=5):
        """The flat clustering of DBSCAN* at ``cut_distance`` (scikit-learn's): the points
        joined by merges of the single-linkage tree below the cut, groups smaller than
        ``min_cluster_size`` noise (−1); rows with inf −2, with NaN −3, as in ``labels_``."""
        check_is_fitted(self)
        tree = self.single_linkage_tree_
        m = len(tree) + 1
        # scikit-learn's union by rank over the merges below the cut (merge i makes node
        # m + i): its roots decide the clusters' numbering
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
        labels = np.full(len(self.labels_), -1, dtype=np.int64)
        labels[self.labels_ > -2] = numbered[root]
        labels[self.labels_ == -2] = -2
        labels[self.labels_ == -3] = -3
        return labels

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_


class OPTICS(ClusterMixin, BaseEstimator):
    """OPTICS with scikit-learn's semantics and defaults: the reachability plot, then
    clusters by the ξ method (``cluster_method="xi"``) or at a DBSCAN radius
    (``"dbscan"``, ``eps``). ``min_samples`` and ``min_cluster_size`` may be fractions of
    n as in scikit-learn. Memory is O(n) beyond the spatial index. ``metric`` as
    :class:`DBSCAN`, ``"precomputed"`` included (a dense distance matrix, or a sparse
    neighbourhood graph whose stored entries are the neighbours: a point with fewer than
    ``min_samples`` of them is not a core point, where scikit-learn raises); ``leaf_size``,
    ``metric_params``, ``memory`` and ``n_jobs`` are not taken.
    """

    _parameter_constraints = {
        "min_samples": [
            Interval(numbers.Integral, 2, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="both"),
        ],
        "max_eps": [Interval(numbers.Real, 0, None, closed="both")],
        "metric": [METRICS, StrOptions({"precomputed"})],
        "p": [Interval(numbers.Real, 1, None, closed="left")],
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
        "backend": BACKEND,
        "n_threads": THREADS,
    }

    def __init__(
        self,
        *,
        min_samples=5,
        max_eps=np.inf,
        metric="minkowski",
        p=2,
        cluster_method="xi",
        eps=None,
        xi=0.05,
        predecessor_correction=True,
        min_cluster_size=None,
        algorithm="auto",
        backend="auto", n_threads=None,
    ):
        self.min_samples = min_samples
        self.max_eps = max_eps
        self.metric = metric
        self.p = p
        self.cluster_method = cluster_method
        self.eps = eps
        self.xi = xi
        self.predecessor_correction = predecessor_correction
        self.min_cluster_size = min_cluster_size
        self.algorithm = algorithm
        self.backend = backend
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
        X = points(self, X, reset=True, accept_sparse=self._sparse_metric())
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
        if self.metric == "precomputed":
            # (a dense matrix: its entries within max_eps; a sparse one: its stored entries,
            # each point its own neighbour at its diagonal value, as scikit-learn)
            graph = rows(_neighbourhood_graph(X, self.max_eps))
            p = params(self, metric="euclidean", min_samples=min_samples, min_cluster_size=min_cluster_size)
            out = _clustr.optics_graph_fit(graph, p, w)
        else:
            p = params(self, min_samples=min_samples, min_cluster_size=min_cluster_size)
            out = _clustr.optics_fit(rows(X), p, w)
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

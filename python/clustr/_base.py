"""What every clustr estimator shares: input validation (scikit-learn's own), seeds, threads.

The estimators keep scikit-learn's conventions: parameters are stored unchanged by
``__init__`` and checked by ``fit``; fitted state lives in trailing-underscore attributes
holding numpy arrays (so ``pickle`` and ``copy.deepcopy`` work as for scikit-learn's), and
prediction rebuilds what it needs from them.
"""

import numbers
import os
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances, pairwise_distances_chunked
from sklearn.neighbors import VALID_METRICS, BallTree, KDTree
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from . import _clustr as _extension


class _Native:
    """The Rust extension's functions, whose integer arguments are 64-bit: a Python integer
    beyond that range (``n_clusters=2**64``, a negative index) is a ValueError, as every other
    bad parameter value, not the OverflowError of the conversion."""

    def __getattr__(self, name):
        function = getattr(_extension, name)
        if not callable(function):
            return function

        def call(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except OverflowError as e:
                raise ValueError(f"a parameter is out of range for {name}: {e}") from e

        return call


_clustr = _Native()

#: ``n_threads``: None (every core) or a positive count. Results do not depend on it.
THREADS = [Interval(numbers.Integral, 1, None, closed="left"), None]
# ``backend``: where the hot loops run ("auto": a CUDA device when the package is built with
# one; "cuda" is refused by a method that gives a device no work). ``backend_`` says where the
# fit ran.
BACKEND = [StrOptions({"auto", "cpu", "cuda"})]
RANDOM_STATE = ["random_state"]
METRICS = StrOptions(
    {"euclidean", "sqeuclidean", "manhattan", "cityblock", "l1", "cosine", "chebyshev",
     "minkowski", "haversine"}
)


#: ``metric`` where any metric is taken (the density estimators, KMedoids): clustr's metrics, or
#: any other metric of scikit-learn's ``pairwise_distances`` (scipy's included) or a callable,
#: which `Metric` computes through it; or "precomputed".
ANY_METRIC = [StrOptions(set(METRICS.options) | set(VALID_METRICS["brute"]) | {"precomputed"}), callable]
#: HDBSCAN's ``metric``: as scikit-learn's HDBSCAN, also the names only its KDTree and BallTree
#: know ("pyfunc", ...), which `Metric.check_algorithm` then refuses with scikit-learn's message
#: unless a tree computes them.
TREE_OR_ANY_METRIC = [
    StrOptions(ANY_METRIC[0].options | set(VALID_METRICS["kd_tree"]) | set(VALID_METRICS["ball_tree"])),
    callable,
]
# (scikit-learn's other spellings of clustr's metrics)
_ALIASES = {"l2": "euclidean", "infinity": "chebyshev", "p": "minkowski"}


class Metric:
    """An estimator's ``metric`` resolved against ``p`` and ``metric_params``: clustr's own
    (``native``, by ``name``), or a callable or a metric clustr does not compute, which
    ``pairwise_distances`` computes into a precomputed matrix or neighbourhood graph (its
    memory: n² distances for HDBSCAN, unbounded OPTICS and KMedoids, the pairs within the
    radius for DBSCAN and OPTICS; the user's callable runs once per pair).

    ``check_algorithm`` refuses what scikit-learn's trees refuse, with scikit-learn's message:
    ``algorithm="kd_tree"`` or ``"ball_tree"`` names scikit-learn's KDTree or BallTree, whose
    metrics are those it accepts (clustr's own indexes take more: use ``"auto"``)."""

    def __init__(self, metric, p=None, metric_params=None):
        self.metric = metric
        self.kwargs = dict(metric_params or {})
        if p is not None and "p" in self.kwargs:
            warnings.warn(
                "Parameter p is found in metric_params. The corresponding parameter from __init__ is ignored.",
                SyntaxWarning,
                stacklevel=3,
            )
        elif p is not None and metric in ("minkowski", "p"):
            self.kwargs["p"] = p
        if metric == "mahalanobis" and "V" in self.kwargs and "VI" not in self.kwargs:
            # (scikit-learn's trees take the covariance V, scipy's distance its inverse VI)
            self.kwargs["VI"] = np.linalg.inv(self.kwargs.pop("V"))
        self.precomputed = metric == "precomputed"
        name = _ALIASES.get(metric, metric) if isinstance(metric, str) else None
        extra = set(self.kwargs) - {"p"} if name == "minkowski" else set(self.kwargs)
        if name in METRICS.options and name != "minkowski" and extra:
            raise ValueError(f"metric_params: {metric} takes no parameters, got {sorted(extra)}")
        # (minkowski with weights w is scipy's)
        self.native = name in METRICS.options and not extra
        self.name = metric_name(name, self.kwargs.get("p")) if self.native else None

    def check_algorithm(self, algorithm, callable_ball_tree=True):
        """Refuses a tree scikit-learn's would refuse; ``callable_ball_tree``: scikit-learn's
        BallTree takes a callable (its NearestNeighbors does, its HDBSCAN does not)."""
        for kind, tree in (("kd_tree", KDTree), ("ball_tree", BallTree)):
            takes_callable = kind == "ball_tree" and callable_ball_tree
            refused = (not takes_callable) if callable(self.metric) else self.metric not in tree.valid_metrics
            if algorithm == kind and refused:
                raise ValueError(
                    f"{self.metric} is not a valid metric for a {tree.__name__}-based algorithm. "
                    "Please select a different metric."
                )

    def distances(self, X, Y=None, n_jobs=None):
        """The dense matrix of distances (rows of X to rows of Y, default X) by
        ``pairwise_distances``, its size checked against ``clustr.max_memory()`` first."""
        rows, cols = X.shape[0], (X if Y is None else Y).shape[0]
        needed, limit = 8 * rows * cols, _extension.max_memory()
        if needed > limit:
            raise MemoryError(
                f"the {rows} x {cols} matrix of {self.metric} distances needs {needed / 2**30:.2f} GiB but only "
                f"{limit / 2**30:.2f} GiB is allowed; raise the limit (clustr.set_max_memory) or use one of "
                f"clustr's own metrics ({', '.join(sorted(METRICS.options))}), which need no matrix"
            )
        return pairwise_distances(X, Y, metric=self.metric, n_jobs=n_jobs, **self.kwargs)

    def blocks(self, X, Y, threads, rows=1024):
        """The distances of X's rows to Y's, by blocks of ``rows`` rows of X (clustr's own for
        a native metric, on ``threads`` threads): no len(X) × len(Y) matrix at once."""
        for a in range(0, len(X), rows):
            if self.native:
                yield pairwise(X[a:a + rows], Y, self.name, threads)
            else:
                yield self.distances(X[a:a + rows], Y)

    def within(self, X, radius, n_jobs=None):
        """The CSR neighbourhood graph of X: every pair within ``radius`` (the diagonal kept as
        explicit entries), computed by blocks of rows so that only these pairs are stored."""
        def reduce(block, start):
            r, c = np.nonzero(block <= radius)
            return sp.csr_matrix((block[r, c], (r, c)), shape=block.shape)

        blocks = pairwise_distances_chunked(X, metric=self.metric, n_jobs=n_jobs, reduce_func=reduce, **self.kwargs)
        return sp.vstack(list(blocks), format="csr")


def n_threads(estimator):
    """The thread count for the Rust side (0: rayon's default, every core): ``n_threads``, or
    else scikit-learn's ``n_jobs`` where the estimator takes it (joblib's meaning: −1 every
    core, −2 all but one; None here every core, as clustr's default — results do not depend
    on it)."""
    if estimator.n_threads is not None:
        return int(estimator.n_threads)
    n_jobs = getattr(estimator, "n_jobs", None)
    if n_jobs is None:
        return 0
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning (joblib's convention: -1 is every core)")
    return int(n_jobs) if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


def seed(random_state):
    """A 64-bit seed: the integer itself, or a draw from a RandomState (None: fresh)."""
    if isinstance(random_state, numbers.Integral):
        return int(random_state) % 2**64
    return int(check_random_state(random_state).randint(0, 2**32, dtype=np.uint64))


def points(estimator, X, reset, dtype=(np.float64, np.float32), min_samples=1, accept_sparse=False,
           finite=True):
    """X validated as scikit-learn does, as a C-contiguous float32 or float64 array (no copy
    when it already is one); with ``accept_sparse``, a scipy.sparse matrix or array becomes
    CSR (CSC and COO converted, their values copied once; never densified); with
    ``finite=False``, inf and NaN pass (for the estimator to set those rows apart)."""
    return validate_data(
        estimator,
        X,
        reset=reset,
        dtype=list(dtype),
        order="C",
        ensure_min_samples=min_samples,
        accept_sparse="csr" if accept_sparse else False,
        ensure_all_finite=finite,
    )


def rows(X):
    """X as the binding takes it: a dense array unchanged; a CSR matrix as ``(data, indices,
    indptr, n_columns)`` in canonical form — sorted, distinct indices per row, as scipy's
    ``has_canonical_format`` (otherwise a copy of the sparse arrays with duplicates summed)."""
    if not sp.issparse(X):
        return X
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return (X.data, X.indices, X.indptr, X.shape[1])


def params(estimator, **resolved):
    """The estimator's parameters as the one dict the binding reads: ``get_params()`` by
    scikit-learn's names, with ``random_state`` as clustr's ``seed``, ``n_threads`` as a
    count, ``metric`` as clustr's name, and what this fit resolved (``resolved``: given
    starts, counts from fractions) in place of the given values."""
    p = estimator.get_params(deep=False)
    if "random_state" in p:
        random_state = p.pop("random_state")
        if "seed" not in resolved:
            p["seed"] = seed(random_state)
    p["n_threads"] = n_threads(estimator)
    resolved_metric = "metric" in resolved
    p.update(resolved)
    if "metric" in p and not resolved_metric:
        p["metric"] = metric_name(p["metric"], p.get("p"))
    return p


def metric_name(metric, p=None):
    """clustr's name of a scikit-learn metric spelling (``minkowski`` with ``p``)."""
    metric = _ALIASES.get(metric, metric)
    if metric == "minkowski":
        p = 2 if p is None else p
        if p == 2:
            return "euclidean"
        if p == 1:
            return "manhattan"
        if np.isinf(p):
            return "chebyshev"
        return f"minkowski:{float(p)}"
    return metric


def sparse_rows_metric(metric, p=None):
    """Whether clustr computes the metric on sparse rows (euclidean, sqeuclidean, cosine,
    manhattan) without densifying them."""
    return metric != "precomputed" and metric_name(metric, p) in (
        "euclidean", "sqeuclidean", "cosine", "manhattan", "cityblock", "l1")


def nearest(X, centres, metric, threads):
    """Index of the nearest centre of each row, as int64, and its distance (sparse rows:
    squared Euclidean only)."""
    if sp.issparse(X):
        assert metric == "sqeuclidean", metric
        return _clustr.sparse_nearest(rows(X.astype(centres.dtype, copy=False)), centres, threads)
    X = np.ascontiguousarray(X, dtype=centres.dtype)
    return _clustr.nearest(X, centres, metric, threads)


def pairwise(X, centres, metric, threads):
    """Distances of each row to each centre (n × k; sparse rows: Euclidean only)."""
    if sp.issparse(X):
        assert metric == "euclidean", metric
        return _clustr.sparse_transform(rows(X.astype(centres.dtype, copy=False)), centres, threads)
    X = np.ascontiguousarray(X, dtype=centres.dtype)
    return _clustr.pairwise(X, centres, metric, threads)

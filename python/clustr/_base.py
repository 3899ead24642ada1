"""What every clustr estimator shares: input validation (scikit-learn's own), seeds, threads.

The estimators keep scikit-learn's conventions: parameters are stored unchanged by
``__init__`` and checked by ``fit``; fitted state lives in trailing-underscore attributes
holding numpy arrays (so ``pickle`` and ``copy.deepcopy`` work as for scikit-learn's), and
prediction rebuilds what it needs from them.
"""

import numbers

import numpy as np
import scipy.sparse as sp
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


def n_threads(estimator):
    """The thread count for the Rust side (0: rayon's default, every core)."""
    return 0 if estimator.n_threads is None else int(estimator.n_threads)


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
        p["seed"] = seed(p.pop("random_state"))
    p["n_threads"] = n_threads(estimator)
    resolved_metric = "metric" in resolved
    p.update(resolved)
    if "metric" in p and not resolved_metric:
        p["metric"] = metric_name(p["metric"], p.get("p"))
    return p


def metric_name(metric, p=None):
    """clustr's name of a scikit-learn metric spelling (``minkowski`` with ``p``)."""
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

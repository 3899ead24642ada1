"""clustr's functions in scikit-learn's shape (``sklearn.cluster``'s functions of the same
names)."""

import numbers

import numpy as np
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import _check_sample_weight

from ._base import _clustr, seed

__all__ = ["kmeans_plusplus"]


@validate_params(
    {
        "X": ["array-like"],
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "sample_weight": ["array-like", None],
        "x_squared_norms": ["array-like", None],
        "random_state": ["random_state"],
        "n_local_trials": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def kmeans_plusplus(
    X, n_clusters, *, sample_weight=None, x_squared_norms=None, random_state=None, n_local_trials=None,
    n_threads=None,
):
    """Greedy k-means++ seeding, as scikit-learn's ``kmeans_plusplus``: returns
    ``(centers, indices)``, the chosen rows of X and their indices.

    The first centre is drawn with probability ∝ ``sample_weight``, then at each step
    ``n_local_trials`` candidates (default 2 + ⌊ln k⌋) ∝ weight × squared distance to the
    nearest centre, and the one of lowest potential kept. ``random_state`` seeds clustr's own
    generator, so the rows differ from scikit-learn's for the same integer.
    ``x_squared_norms`` is accepted for compatibility and not needed (distances are computed
    directly). ``n_threads``: None for every core; the result does not depend on it.
    """
    X = check_array(X, dtype=[np.float64, np.float32], order="C", ensure_min_samples=1)
    if n_clusters > X.shape[0]:
        raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={n_clusters}.")
    w = None
    if sample_weight is not None:
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True).tolist()
    params = {
        "n_clusters": n_clusters,
        "n_local_trials": n_local_trials,
        "seed": seed(random_state),
        "n_threads": 0 if n_threads is None else int(n_threads),
    }
    indices = _clustr.kmeans_plusplus_indices(X, params, w)
    return X[indices], indices

"""clustr: scalable clustering with scikit-learn's interface, on a Rust core.

k-means, bisecting k-means, mini-batch k-means, Gaussian mixtures, k-medoids (PAM, FastPAM,
FasterPAM, CLARA, CLARANS), DBSCAN, OPTICS, HDBSCAN and kernel power k-means. Fits release the GIL, run on
``n_threads`` threads with the same result for any count, and stop on Ctrl-C.
"""

from ._clustr import __version__, max_memory, set_max_memory
from . import _estimators
from ._estimators import *  # noqa: F401,F403 (the estimators, listed in _estimators.__all__)
from ._functions import kmeans_plusplus

__all__ = [*_estimators.__all__, "kmeans_plusplus", "set_max_memory", "max_memory", "__version__"]

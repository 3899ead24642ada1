"""clustr: scalable clustering with scikit-learn's interface, on a Rust core.

k-means, bisecting k-means, mini-batch k-means, Gaussian mixtures, k-medoids (PAM, FastPAM, FasterPAM, CLARA,
CLARANS), DBSCAN, OPTICS, HDBSCAN and kernel power k-means. Fits release the GIL, run on
``n_threads`` threads with the same result for any count, and stop on Ctrl-C.
"""

from ._clustr import __version__, max_memory, set_max_memory
from ._estimators import (
    BisectingKMeans,
    DBSCAN,
    OPTICS,
    HDBSCAN,
    GaussianMixture,
    IpRffMkpkm,
    KMeans,
    KMedoids,
    MiniBatchKMeans,
    PowerKMeans,
    RffKpkm,
    expected_failed_checks,
)

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
    "set_max_memory",
    "max_memory",
    "expected_failed_checks",
    "__version__",
]

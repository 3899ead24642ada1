"""Unit weights are no weights: for every estimator that takes ``sample_weight``, a fit with
``np.ones(n)`` gives bit-identical fitted attributes (labels, centres, inertia, ...) to a fit
without weights, as scikit-learn's do."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import clustr

X = make_blobs(300, n_features=4, centers=4, cluster_std=1.5, random_state=42)[0]

ESTIMATORS = [
    clustr.KMeans(4, n_init=3, random_state=0, algorithm="lloyd"),
    clustr.KMeans(4, n_init=3, random_state=0, algorithm="elkan"),
    clustr.KMeans(4, n_init=3, random_state=0, algorithm="hamerly"),
    clustr.KMeans(4, init="random", n_init=3, random_state=0),
    clustr.BisectingKMeans(4, random_state=0),
    clustr.MiniBatchKMeans(4, batch_size=64, n_init=3, random_state=0),
    clustr.GaussianMixture(4, n_init=2, random_state=0),
    clustr.GaussianMixture(4, covariance_type="diag", init_params="k-means++", random_state=0),
    clustr.KMedoids(4, random_state=0),
    clustr.KMedoids(4, method="alternate", random_state=0),
    clustr.DBSCAN(eps=1.0, min_samples=6),
    clustr.OPTICS(min_samples=8),
    clustr.PowerKMeans(4, random_state=0),
    clustr.RffKpkm(4, random_state=0),
]


def fitted(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: f"{type(e).__name__}-{e.get_params().get('algorithm', '')}")
def test_unit_weights_give_the_fit_without_weights(est):
    plain = fitted(est.fit(X))
    weighted = fitted(est.fit(X, sample_weight=np.ones(len(X))))
    assert plain.keys() == weighted.keys()
    for name, value in plain.items():
        if isinstance(value, (np.ndarray, float, int, np.floating, np.integer)):
            np.testing.assert_array_equal(weighted[name], value, err_msg=name)


def test_unit_weights_in_partial_fit():
    a, b = clustr.MiniBatchKMeans(4, random_state=0), clustr.MiniBatchKMeans(4, random_state=0)
    for start in range(0, 300, 100):
        a.partial_fit(X[start:start + 100])
        b.partial_fit(X[start:start + 100], sample_weight=np.ones(100))
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)

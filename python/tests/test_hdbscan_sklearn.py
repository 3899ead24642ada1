"""HDBSCAN's scikit-learn surface beyond the fit: rows with inf or NaN set apart (−2, −3),
``store_centers``, ``dbscan_clustering``, and the parameters accepted as scikit-learn's."""

import numpy as np
import pytest
from sklearn.cluster import HDBSCAN as SkHDBSCAN
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import clustr


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(400, centers=5, random_state=0)[0]


def test_non_finite_rows_are_labelled_as_sklearn(blobs):
    X = blobs.copy()
    X[5] = np.inf
    X[7, 0] = np.nan
    X[9] = [np.inf, -np.inf]  # (a NaN sum: "missing", as scikit-learn)
    got = clustr.HDBSCAN().fit(X)
    ref = SkHDBSCAN(copy=True).fit(X)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_array_equal(got.labels_[[5, 7, 9]], [-2, -3, -3])
    # (scikit-learn's probability of a NaN row is NaN; clustr's is 0: no NaN in a result)
    present = ~np.isnan(ref.probabilities_)
    np.testing.assert_allclose(got.probabilities_[present], ref.probabilities_[present], rtol=1e-12)
    assert (got.probabilities_[[5, 7, 9]] == 0).all()
    assert np.isfinite(got.outlier_scores_).all() and (got.outlier_scores_[[5, 7, 9]] == 1).all()
    # the finite rows as their own fit
    clean = clustr.HDBSCAN().fit(np.delete(X, [5, 7, 9], axis=0))
    np.testing.assert_array_equal(np.delete(got.labels_, [5, 7, 9]), clean.labels_)


@pytest.mark.parametrize("store", ["centroid", "medoid", "both"])
def test_store_centers_equals_sklearn(blobs, store):
    got = clustr.HDBSCAN(store_centers=store).fit(blobs)
    ref = SkHDBSCAN(store_centers=store, copy=True).fit(blobs)
    for name in ("centroids_", "medoids_"):
        assert hasattr(got, name) == hasattr(ref, name)
        if hasattr(ref, name):
            np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-12)
    with pytest.raises(ValueError, match="precomputed"):
        clustr.HDBSCAN(metric="precomputed", store_centers=store).fit(np.zeros((3, 3)))


@pytest.mark.parametrize("cut", [0.2, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("min_cluster_size", [2, 5])
def test_dbscan_clustering_equals_sklearn(blobs, cut, min_cluster_size):
    X = blobs.copy()
    X[3] = np.inf
    got = clustr.HDBSCAN().fit(X).dbscan_clustering(cut, min_cluster_size)
    ref = SkHDBSCAN(copy=True).fit(X).dbscan_clustering(cut, min_cluster_size)
    # the same partition and noise; the numbering follows the tree's left/right order, which
    # tied mutual-reachability weights may swap
    np.testing.assert_array_equal(got < 0, ref < 0)
    np.testing.assert_array_equal(got[ref < 0], ref[ref < 0])
    assert adjusted_rand_score(got, ref) == 1.0
    assert len(set(ref)) > 2 or cut >= 3.0


def test_sklearns_parameters_are_accepted(blobs):
    base = clustr.HDBSCAN().fit(blobs).labels_
    for kw in ({"copy": True}, {"leaf_size": 10}, {"metric": "minkowski", "metric_params": {"p": 2}}):
        np.testing.assert_array_equal(clustr.HDBSCAN(**kw).fit(blobs).labels_, base, err_msg=str(kw))
    with pytest.raises(ValueError, match="takes no parameters"):
        clustr.HDBSCAN(metric_params={"w": 1}).fit(blobs)

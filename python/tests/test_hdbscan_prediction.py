"""HDBSCAN's prediction and soft clustering against the hdbscan package's functions of the same
names (same data, the package's min_samples + 1 for clustr's): labels, strengths, connecting
points and membership vectors. The fixture data is tests/fixtures/hdbscan/predict_blobs_*,
where clustr's fit gives the package's labels (with min_samples ≥ 2 the two trees can differ
at tied heights: tests/hdbscan.rs computes from the package's own tree, within 1e-9)."""

from pathlib import Path

import numpy as np
import pytest

import clustr

hdbscan = pytest.importorskip("hdbscan")
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "hdbscan"


@pytest.fixture(scope="module")
def fits():
    X = np.load(FIXTURES / "predict_blobs_x.npy")
    new = np.load(FIXTURES / "predict_blobs_new.npy")
    ours = clustr.HDBSCAN(min_cluster_size=20, min_samples=6).fit(X)
    theirs = hdbscan.HDBSCAN(min_cluster_size=20, min_samples=5, prediction_data=True,
                             approx_min_span_tree=False).fit(X)
    np.testing.assert_array_equal(ours.labels_, theirs.labels_)
    return X, new, ours, theirs


def test_approximate_predict_equals_the_package(fits):
    X, new, ours, theirs = fits
    labels, strengths, neighbours = clustr.approximate_predict(ours, new, return_connecting_points=True)
    ref = hdbscan.approximate_predict(theirs, new, return_connecting_points=True)
    np.testing.assert_array_equal(labels, ref[0])
    np.testing.assert_allclose(strengths, ref[1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(neighbours, ref[2])
    assert set(labels) >= {-1, 0, 1, 2, 3}
    l2, s2 = ours.approximate_predict(new)
    np.testing.assert_array_equal(l2, labels)


def test_membership_vectors_equal_the_package(fits):
    X, new, ours, theirs = fits
    m = clustr.membership_vector(ours, new)
    np.testing.assert_allclose(m, hdbscan.membership_vector(theirs, new), rtol=0, atol=1e-9)
    assert m.shape == (len(new), 4) and np.isfinite(m).all()
    all_points = clustr.all_points_membership_vectors(ours)
    ref = hdbscan.all_points_membership_vectors(theirs)
    assert all_points.shape == ref.shape == (len(X), 4)
    # (a few training points leave a tied split from the other sibling cluster: their rows
    # differ; see the module's docstring)
    close = np.isclose(all_points, ref, rtol=0, atol=1e-9).all(axis=1)
    assert close.mean() > 0.99, close.mean()
    np.testing.assert_allclose(all_points.sum(axis=1)[close], ref.sum(axis=1)[close], atol=1e-9)


def test_non_finite_rows_and_what_prediction_needs(fits):
    X, new, _, _ = fits
    Xn = X.copy()
    Xn[3] = np.nan
    Xn[10] = np.inf
    fit = clustr.HDBSCAN(min_cluster_size=20, min_samples=6).fit(Xn)
    m = fit.all_points_membership_vectors()
    assert m.shape == (len(X), fit.labels_.max() + 1)
    assert (m[[3, 10]] == 0).all() and np.isfinite(m).all()
    _, _, neighbours = fit.approximate_predict(new, return_connecting_points=True)
    assert not np.isin(neighbours, [3, 10]).any() and neighbours.max() < len(X)
    with pytest.raises(ValueError, match="dimension"):
        fit.approximate_predict(new[:, :1])
    D = np.sqrt(((X[:200, None] - X[None, :200]) ** 2).sum(-1))
    with pytest.raises(ValueError, match="precomputed"):
        clustr.HDBSCAN(metric="precomputed").fit(D).approximate_predict(new)
    none = clustr.HDBSCAN(min_cluster_size=500).fit(X[:300])
    with pytest.warns(UserWarning, match="any defined clusters"):
        labels, strengths = none.approximate_predict(new)
    assert (labels == -1).all() and (strengths == 0).all()
    np.testing.assert_array_equal(none.all_points_membership_vectors(), np.zeros(300))

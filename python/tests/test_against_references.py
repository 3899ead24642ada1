"""Equality with scikit-learn and kmedoids from the same start, on the same data."""

import numpy as np
import pytest
import sklearn.cluster as skc
import sklearn.mixture as skm
from sklearn.datasets import load_iris, make_blobs

import clustr


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(n_samples=600, centers=5, cluster_std=1.5, n_features=3, random_state=1)
    return X


@pytest.mark.parametrize("algorithm", ["lloyd", "elkan", "hamerly", "auto"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kmeans_equals_sklearn_from_the_same_centres(blobs, algorithm, dtype):
    X = blobs.astype(dtype)
    init = X[np.random.RandomState(3).choice(len(X), 5, replace=False)].astype(np.float64)
    ref = skc.KMeans(5, init=init, n_init=1, algorithm="lloyd", tol=1e-4, max_iter=300).fit(X)
    ours = clustr.KMeans(5, init=init, algorithm=algorithm, tol=1e-4, max_iter=300).fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-9 if dtype == np.float64 else 1e-5)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    np.testing.assert_allclose(ours.transform(X[:50]), ref.transform(X[:50]), rtol=1e-5, atol=1e-5)
    assert ours.score(X) == pytest.approx(ref.score(X), rel=1e-5)


@pytest.mark.parametrize("algorithm", ["auto", "lloyd", "elkan", "hamerly"])
@pytest.mark.parametrize("weights", ["float", "zeros"])
def test_weighted_kmeans_equals_sklearn_from_the_same_centres(blobs, algorithm, weights):
    rng = np.random.default_rng(7)
    w = rng.uniform(0.1, 3.0, len(blobs))
    if weights == "zeros":
        w[rng.random(len(blobs)) < 0.3] = 0.0
    init = blobs[np.random.RandomState(3).choice(len(blobs), 5, replace=False)]
    ref = skc.KMeans(5, init=init, n_init=1, algorithm="lloyd", tol=1e-4, max_iter=300).fit(blobs, sample_weight=w)
    ours = clustr.KMeans(5, init=init, algorithm=algorithm, tol=1e-4, max_iter=300).fit(blobs, sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-9)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert ours.score(blobs, sample_weight=w) == pytest.approx(ref.score(blobs, sample_weight=w), rel=1e-9)
    np.testing.assert_array_equal(ours.fit_predict(blobs, sample_weight=w), ref.labels_)


def test_weighted_minibatch_inertia_and_errors(blobs):
    w = np.random.default_rng(1).integers(0, 4, len(blobs)).astype(float)
    m = clustr.MiniBatchKMeans(5, batch_size=64, random_state=0).fit(blobs, sample_weight=w)
    d2 = ((blobs[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(m.labels_, d2.argmin(1))
    assert m.inertia_ == pytest.approx((d2.min(1) * w).sum(), rel=1e-9)
    for bad in [-w, np.zeros_like(w), w[:-1]]:
        for est in [clustr.KMeans(5), clustr.MiniBatchKMeans(5), clustr.PowerKMeans(5), clustr.RffKpkm(5)]:
            with pytest.raises(ValueError):
                est.fit(blobs, sample_weight=bad)


@pytest.mark.parametrize("make", [clustr.PowerKMeans, clustr.RffKpkm])
def test_weighted_power_methods_never_seed_on_zero_weight(blobs, make):
    w = np.ones(len(blobs))
    w[::2] = 0.0
    m = make(5, n_init=1, random_state=3).fit(blobs, sample_weight=w)
    assert m.objective_ > 0 and np.isfinite(m.objective_)
    ones = make(5, n_init=1, random_state=3).fit(blobs, sample_weight=np.ones(len(blobs)))
    assert len(np.unique(ones.labels_)) == 5


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_gmm_log_likelihood_equals_sklearn_from_the_same_start(blobs, covariance_type):
    start = skm.GaussianMixture(5, covariance_type=covariance_type, max_iter=1, random_state=0).fit(blobs)
    params = dict(
        weights_init=start.weights_, means_init=start.means_, precisions_init=start.precisions_,
        covariance_type=covariance_type, tol=1e-6, max_iter=200,
    )
    ref = skm.GaussianMixture(5, **params).fit(blobs)
    ours = clustr.GaussianMixture(5, **params).fit(blobs)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-9)
    assert ours.score(blobs) == pytest.approx(ref.score(blobs), rel=1e-9)
    np.testing.assert_allclose(ours.score_samples(blobs), ref.score_samples(blobs), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ours.predict_proba(blobs), ref.predict_proba(blobs), atol=1e-8)
    np.testing.assert_allclose(ours.means_, ref.means_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.precisions_, ref.precisions_, rtol=1e-6, atol=1e-9)
    assert ours.bic(blobs) == pytest.approx(ref.bic(blobs), rel=1e-9)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "cosine"])
def test_dbscan_labels_equal_sklearn(metric):
    X, _ = make_blobs(n_samples=1500, centers=6, cluster_std=0.9, random_state=7)
    eps = {"euclidean": 0.4, "manhattan": 0.5, "cosine": 0.002}[metric]
    ref = skc.DBSCAN(eps=eps, min_samples=8, metric=metric).fit(X)
    ours = clustr.DBSCAN(eps=eps, min_samples=8, metric=metric).fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_array_equal(ours.core_sample_indices_, ref.core_sample_indices_)


def test_dbscan_sample_weight_equals_sklearn():
    X, _ = make_blobs(n_samples=800, centers=4, random_state=2)
    w = np.random.RandomState(0).randint(0, 4, size=len(X)).astype(float)
    ref = skc.DBSCAN(eps=0.5, min_samples=10).fit(X, sample_weight=w)
    ours = clustr.DBSCAN(eps=0.5, min_samples=10).fit(X, sample_weight=w)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)


@pytest.mark.parametrize("cluster_method", ["xi", "dbscan"])
def test_optics_equals_sklearn(cluster_method):
    X, _ = make_blobs(n_samples=700, centers=4, cluster_std=[0.5, 1.0, 1.5, 0.7], random_state=4)
    kw = dict(min_samples=10, cluster_method=cluster_method, eps=0.8 if cluster_method == "dbscan" else None)
    ref = skc.OPTICS(**kw).fit(X)
    ours = clustr.OPTICS(**kw).fit(X)
    np.testing.assert_array_equal(ours.ordering_, ref.ordering_)
    np.testing.assert_allclose(ours.reachability_, ref.reachability_, rtol=1e-12)
    np.testing.assert_allclose(ours.core_distances_, ref.core_distances_, rtol=1e-12)
    np.testing.assert_array_equal(ours.predecessor_, ref.predecessor_)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)


@pytest.mark.parametrize("method", ["fasterpam", "fastpam1", "pam"])
def test_kmedoids_equals_the_kmedoids_package(blobs, method):
    kmedoids = pytest.importorskip("kmedoids")
    from sklearn.metrics import pairwise_distances

    D = pairwise_distances(blobs)
    medoids = [3, 50, 100, 200, 400]
    ref = {
        "fasterpam": kmedoids.fasterpam,
        "fastpam1": kmedoids.fastpam1,
        "pam": kmedoids.pam,
    }[method](D, np.array(medoids), max_iter=100)
    ours = clustr.KMedoids(5, metric="precomputed", method=method, init=medoids).fit(D)
    assert ours.inertia_ == pytest.approx(ref.loss, rel=1e-12)
    np.testing.assert_array_equal(np.sort(ours.medoid_indices_), np.sort(ref.medoids))
    np.testing.assert_array_equal(ours.medoid_indices_, ref.medoids)
    np.testing.assert_array_equal(ours.labels_, ref.labels)
    # The same from points, the matrix computed by clustr.
    points = clustr.KMedoids(5, method=method, init=medoids).fit(blobs)
    np.testing.assert_array_equal(points.medoid_indices_, ref.medoids)
    assert points.inertia_ == pytest.approx(ref.loss, rel=1e-9)


def test_kmedoids_predicts_new_points_to_the_nearest_medoid(blobs):
    km = clustr.KMedoids(5, method="fasterclara", random_state=0).fit(blobs[:500])
    new = blobs[500:]
    d = np.linalg.norm(new[:, None, :] - km.cluster_centers_[None, :, :], axis=2)
    np.testing.assert_array_equal(km.predict(new), np.argmin(d, axis=1))
    np.testing.assert_allclose(km.transform(new), d, rtol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: clustr.KMeans(4, random_state=1, n_threads=t),
        lambda t: clustr.GaussianMixture(4, random_state=1, n_threads=t),
        lambda t: clustr.KMedoids(4, random_state=1, n_threads=t),
        lambda t: clustr.KMedoids(4, method="fasterclara", random_state=1, n_threads=t),
        lambda t: clustr.OPTICS(min_samples=8, n_threads=t),
        lambda t: clustr.PowerKMeans(4, random_state=1, n_threads=t),
        lambda t: clustr.RffKpkm(4, n_components=100, random_state=1, n_threads=t),
    ],
)
def test_same_result_for_any_thread_count(blobs, make):
    one = make(1).fit_predict(blobs)
    for t in (2, 3, None):
        np.testing.assert_array_equal(make(t).fit_predict(blobs), one)


def test_iris_runs_end_to_end():
    X = load_iris().data
    for est in [clustr.KMeans(3, random_state=0), clustr.KMedoids(3, random_state=0), clustr.GaussianMixture(3, random_state=0)]:
        labels = est.fit_predict(X)
        assert sorted(np.unique(labels)) == [0, 1, 2]


def test_gmm_integer_weights_equal_repeated_rows(blobs):
    w = np.arange(len(blobs)) % 3
    repeated = np.repeat(blobs, w, axis=0)
    # (from a given start: the start init_params draws is unweighted)
    means = blobs[[0, 10, 20, 30, 40]]
    precisions = np.repeat(np.eye(blobs.shape[1])[None], 5, axis=0)
    kw = dict(weights_init=np.full(5, 0.2), means_init=means, precisions_init=precisions, tol=1e-8, max_iter=500)
    weighted = clustr.GaussianMixture(5, **kw).fit(blobs, sample_weight=w)
    copies = clustr.GaussianMixture(5, **kw).fit(repeated)
    assert weighted.lower_bound_ == pytest.approx(copies.lower_bound_, rel=1e-10)
    np.testing.assert_allclose(weighted.means_, copies.means_, rtol=1e-8)
    np.testing.assert_allclose(weighted.covariances_, copies.covariances_, rtol=1e-7)
    with pytest.raises(ValueError):
        clustr.GaussianMixture(2).fit(blobs, sample_weight=-np.ones(len(blobs)))


def test_weighted_optics_core_distances_equal_repeated_rows(blobs):
    w = np.arange(len(blobs)) % 3 + 1
    weighted = clustr.OPTICS(min_samples=6).fit(blobs, sample_weight=w.astype(float))
    repeated = clustr.OPTICS(min_samples=6).fit(np.repeat(blobs, w, axis=0))
    first = np.concatenate([[0], np.cumsum(w)[:-1]])
    np.testing.assert_array_equal(weighted.core_distances_, repeated.core_distances_[first])
    ones = clustr.OPTICS(min_samples=6).fit(blobs, sample_weight=np.ones(len(blobs)))
    plain = clustr.OPTICS(min_samples=6).fit(blobs)
    np.testing.assert_array_equal(ones.ordering_, plain.ordering_)
    np.testing.assert_array_equal(ones.labels_, plain.labels_)


@pytest.mark.parametrize("method", ["pam", "fastpam1", "fastpam2", "fasterpam", "alternating", "fasterclara"])
def test_kmedoids_integer_weights_equal_repeated_rows(blobs, method):
    X = np.round(blobs[:150] * 4)  # whole coordinates: Manhattan losses are exact
    w = np.arange(len(X)) % 3 + 1
    repeated = np.repeat(X, w, axis=0)
    origin = np.repeat(np.arange(len(X)), w)
    kw = dict(method=method, metric="manhattan", init="build", sample_size=10_000)
    weighted = clustr.KMedoids(4, **kw).fit(X, sample_weight=w)
    copies = clustr.KMedoids(4, **kw).fit(repeated)
    np.testing.assert_array_equal(weighted.medoid_indices_, origin[copies.medoid_indices_])
    assert weighted.inertia_ == copies.inertia_
    d = np.abs(X[:, None, :] - X[weighted.medoid_indices_][None, :, :]).sum(axis=2)
    assert weighted.inertia_ == pytest.approx((w * d.min(axis=1)).sum(), rel=1e-12)
    assert (d[np.arange(len(X)), weighted.labels_] == d.min(axis=1)).all()
    with pytest.raises(ValueError):
        clustr.KMedoids(4, method=method).fit(X, sample_weight=np.zeros(len(X)))


@pytest.mark.parametrize("method", ["eom", "leaf"])
def test_hdbscan_equals_sklearn_where_the_tree_has_no_ties(blobs, method):
    # min_samples = 1: the mutual reachability is the distance, no two tree edges weigh the same.
    kw = dict(min_cluster_size=10, min_samples=1, cluster_selection_method=method)
    ref = skc.HDBSCAN(copy=True, **kw).fit(blobs)
    ours = clustr.HDBSCAN(**kw).fit(blobs)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.probabilities_, ref.probabilities_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours.single_linkage_tree_[:, 2], ref._single_linkage_tree_["value"], rtol=1e-12)
    # From the distance matrix: the same.
    D = np.sqrt(((blobs[:, None, :] - blobs[None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_array_equal(clustr.HDBSCAN(metric="precomputed", **kw).fit(D).labels_, ref.labels_)


def test_hdbscan_with_ties_agrees_with_sklearn(blobs):
    ref = skc.HDBSCAN(min_cluster_size=15, copy=True).fit(blobs)
    ours = clustr.HDBSCAN(min_cluster_size=15).fit(blobs)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(ref.labels_, ours.labels_) > 0.99
    assert ((ours.outlier_scores_ >= 0) & (ours.outlier_scores_ <= 1)).all()
    # A min_cluster_size above n selects no cluster (min_samples, taken from it, is at most n);
    # a min_samples above n is an error, as scikit-learn's.
    assert (clustr.HDBSCAN(min_cluster_size=len(blobs) + 1).fit(blobs).labels_ == -1).all()
    with pytest.raises(ValueError, match="min_samples"):
        clustr.HDBSCAN(min_samples=len(blobs) + 1).fit(blobs)


def test_kmeans_plusplus_has_sklearns_interface_and_semantics(blobs):
    """``clustr.kmeans_plusplus`` as ``sklearn.cluster.kmeans_plusplus``: (centers, indices),
    the centres the rows at those indices, distinct rows; zero-weight rows never chosen; the
    same for any thread count; scikit-learn's errors. Its greedy choice keeps the candidate of
    lowest potential, so from the first centre on the potential is never above a one-trial
    run's on average (checked over seeds)."""
    X = blobs
    for dtype in (np.float64, np.float32):
        Xt = X.astype(dtype)
        centres, indices = clustr.kmeans_plusplus(Xt, 7, random_state=3)
        sk_centres, sk_indices = skc.kmeans_plusplus(Xt, 7, random_state=3)
        assert centres.shape == sk_centres.shape and centres.dtype == sk_centres.dtype
        assert indices.shape == sk_indices.shape
        np.testing.assert_array_equal(centres, Xt[indices])
        assert len(set(indices.tolist())) == 7
    w = np.ones(len(X))
    w[::2] = 0.0
    _, indices = clustr.kmeans_plusplus(X, 9, sample_weight=w, random_state=0)
    assert all(i % 2 == 1 for i in indices)
    one = clustr.kmeans_plusplus(X, 9, random_state=5, n_threads=1)[1]
    np.testing.assert_array_equal(one, clustr.kmeans_plusplus(X, 9, random_state=5, n_threads=2)[1])

    def potential(c):
        return ((X[:, None, :] - c[None]) ** 2).sum(-1).min(1).sum()

    greedy = np.mean([potential(clustr.kmeans_plusplus(X, 5, random_state=s)[0]) for s in range(20)])
    single = np.mean([potential(clustr.kmeans_plusplus(X, 5, random_state=s, n_local_trials=1)[0]) for s in range(20)])
    assert greedy <= single
    with pytest.raises(ValueError, match="n_samples"):
        clustr.kmeans_plusplus(X[:3], 4)
    with pytest.raises(ValueError):
        clustr.kmeans_plusplus(X, 0)
    with pytest.raises(ValueError):
        clustr.kmeans_plusplus(X, 3, n_local_trials=0)

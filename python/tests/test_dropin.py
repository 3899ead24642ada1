"""What the scikit-learn and hdbscan-package drop-in adds (issue #42), checked against the
reference libraries: any metric through pairwise_distances, HDBSCAN's sparse precomputed
input and the hdbscan package's attributes, GaussianMixture's partial starts, warm start and
verbose, KMedoids' scikit-learn-extra names."""

import hdbscan
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.cluster as skc
import sklearn.mixture as skm
from scipy.spatial.distance import cdist
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import kneighbors_graph

import clustr

X = make_blobs(400, n_features=3, centers=4, cluster_std=0.8, random_state=3)[0]


@pytest.mark.parametrize("metric, params", [("braycurtis", None), ("canberra", None), ("seuclidean", {"V": np.ones(3) * 2}),
                                            (lambda a, b: np.abs(a - b).max(), None)])
def test_any_metric_equals_its_precomputed_matrix(metric, params):
    D = pairwise_distances(X, metric=metric, **(params or {}))
    eps = np.quantile(D, 0.02)
    for make in (lambda **kw: clustr.DBSCAN(eps=eps, min_samples=5, **kw), lambda **kw: clustr.HDBSCAN(min_cluster_size=10, **kw),
                 lambda **kw: clustr.OPTICS(min_samples=5, **kw)):
        via_metric = make(metric=metric, metric_params=params).fit(X).labels_
        np.testing.assert_array_equal(via_metric, make(metric="precomputed").fit(D).labels_)
    # and scikit-learn's own answer
    np.testing.assert_array_equal(clustr.DBSCAN(eps=eps, metric=metric, metric_params=params).fit(X).labels_,
                                  skc.DBSCAN(eps=eps, metric=metric, metric_params=params).fit(X).labels_)


def test_trees_refuse_what_sklearns_trees_refuse():
    for est in (clustr.DBSCAN(metric="cosine", algorithm="kd_tree"), clustr.OPTICS(metric="braycurtis", algorithm="kd_tree"),
                clustr.HDBSCAN(metric="cosine", algorithm="ball_tree"), clustr.HDBSCAN(metric=np.dot, algorithm="ball_tree")):
        with pytest.raises(ValueError, match="not a valid metric"):
            est.fit(X)
    # (the callable on scikit-learn's ball tree: taken by its NearestNeighbors)
    clustr.DBSCAN(metric=lambda a, b: np.abs(a - b).sum(), algorithm="ball_tree").fit(X[:50])


def test_hdbscan_sparse_precomputed_equals_sklearn():
    G = kneighbors_graph(X, 150, mode="distance")  # (one component across the blobs)
    G = G.maximum(G.T).tocsr()
    ours = clustr.HDBSCAN(metric="precomputed", min_cluster_size=10).fit(G)
    ref = skc.HDBSCAN(metric="precomputed", min_cluster_size=10, copy=True).fit(G)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.probabilities_, ref.probabilities_, rtol=1e-12)
    with pytest.raises(ValueError, match="fewer than 160 neighbors"):
        clustr.HDBSCAN(metric="precomputed", min_samples=160).fit(G)
    two = sp.block_diag([G[:200, :200], G[:200, :200]]).tocsr()
    with pytest.raises(ValueError, match="connected components"):
        clustr.HDBSCAN(metric="precomputed", min_cluster_size=10).fit(two)


def test_hdbscan_package_attributes_equal_the_package():
    # The package counts min_samples without the point itself: its m is clustr's m + 1.
    ref = hdbscan.HDBSCAN(min_cluster_size=12, min_samples=4, algorithm="generic", gen_min_span_tree=True).fit(X)
    ours = clustr.HDBSCAN(min_cluster_size=12, min_samples=5, algorithm="generic", gen_min_span_tree=True).fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    # (the package computes its distances its own way: agreement to rounding)
    np.testing.assert_allclose(ours.probabilities_, ref.probabilities_, rtol=1e-9)
    np.testing.assert_allclose(ours.outlier_scores_, ref.outlier_scores_, rtol=1e-9)
    np.testing.assert_allclose(ours.cluster_persistence_, ref.cluster_persistence_, rtol=1e-9)
    a, b = ours.condensed_tree_.to_numpy(), ref.condensed_tree_.to_numpy()
    order_a, order_b = np.lexsort((a["child"], a["parent"])), np.lexsort((b["child"], b["parent"]))
    for field in ("parent", "child", "child_size"):
        np.testing.assert_array_equal(a[field][order_a], b[field][order_b])
    np.testing.assert_allclose(a["lambda_val"][order_a], b["lambda_val"][order_b], rtol=1e-9)
    np.testing.assert_allclose(np.sort(ours.minimum_spanning_tree_.to_numpy()[:, 2]),
                               np.sort(ref.minimum_spanning_tree_.to_numpy()[:, 2]), rtol=1e-9)
    np.testing.assert_allclose(ours.single_linkage_tree_.to_numpy()[:, 2], ref.single_linkage_tree_.to_numpy()[:, 2], rtol=1e-9)
    for c in range(ours.labels_.max() + 1):
        np.testing.assert_allclose(ours.weighted_cluster_centroid(c), ref.weighted_cluster_centroid(c), rtol=1e-12)
        np.testing.assert_array_equal(ours.weighted_cluster_medoid(c), ref.weighted_cluster_medoid(c))
    assert ours.condensed_tree_.to_pandas().shape == ref.condensed_tree_.to_pandas().shape
    assert ours.minimum_spanning_tree_.to_networkx().number_of_edges() == len(X) - 1
    with pytest.raises(ValueError, match="noise"):
        ours.weighted_cluster_centroid(-1)


def test_hdbscan_epsilon_max_and_keywords_as_the_package():
    # (min_cluster_size 12: below it, tied mutual-reachability edges make the package's
    # condensed tree differ from clustr's, each by its own order of the ties)
    found = set()
    for eps_max in (1.0, 7.0, np.inf):
        ref = hdbscan.HDBSCAN(min_cluster_size=12, min_samples=3, cluster_selection_epsilon_max=eps_max,
                              algorithm="generic").fit(X)
        ours = clustr.HDBSCAN(min_cluster_size=12, min_samples=4, cluster_selection_epsilon_max=eps_max).fit(X)
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
        found.add(ours.labels_.max() + 1)
    assert found == {0, 2, 4}
    # The package's metric keywords: kept in metric_params, seen by clone.
    from sklearn.base import clone
    est = clustr.HDBSCAN(metric="seuclidean", V=np.ones(3))
    assert "V" in clone(est).metric_params
    np.testing.assert_array_equal(est.fit(X).labels_, clustr.HDBSCAN().fit(X).labels_)


def test_hdbscan_plots(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est = clustr.HDBSCAN(min_cluster_size=15).fit(X)
    for tree, kw in ((est.condensed_tree_, dict(select_clusters=True, label_clusters=True)),
                     (est.single_linkage_tree_, dict(truncate_mode="lastp", p=20)),
                     (est.minimum_spanning_tree_, {})):
        fig, ax = plt.subplots()
        assert tree.plot(axis=ax, **kw) is ax
        assert ax.get_title()
        fig.savefig(tmp_path / "tree.png")
        plt.close(fig)


def test_gmm_partial_starts_as_sklearn():
    # The same responsibilities through _initialize: scikit-learn's parameters, the given ones kept.
    resp = np.eye(4)[np.argmin(cdist(X, X[[0, 100, 200, 300]]), axis=1)]
    for kind in ("full", "tied", "diag", "spherical"):
        for given in ({"weights_init": np.full(4, 0.25)}, {"means_init": X[[1, 2, 3, 4]]}):
            ours, ref = clustr.GaussianMixture(4, covariance_type=kind, **given), skm.GaussianMixture(4, covariance_type=kind, **given)
            ours._initialize(X, resp)
            ref._initialize(X, resp)
            for name in ("weights_", "means_", "precisions_cholesky_"):
                np.testing.assert_allclose(getattr(ours, name), getattr(ref, name), rtol=1e-9, atol=1e-12, err_msg=f"{kind} {name}")
    with pytest.raises(ValueError, match="should have the shape"):
        clustr.GaussianMixture(4, means_init=X[:3]).fit(X)


def test_gmm_warm_start_converges_and_verbose_prints(capsys):
    gmm = clustr.GaussianMixture(4, warm_start=True, max_iter=1, random_state=0)
    for _ in range(200):
        if gmm.fit(X).converged_:
            break
    assert gmm.converged_ and gmm.n_iter_ == 1
    clustr.GaussianMixture(4, verbose=2, verbose_interval=1, random_state=0).fit(X)
    out = capsys.readouterr().out
    assert "Initialization 0" in out and "Iteration 1\t time lapse" in out and "Initialization converged." in out


def test_kmedoids_scikit_learn_extra_names():
    D = pairwise_distances(X)
    heuristic = clustr.KMedoids(4, init="heuristic", method="alternate", max_iter=0).fit(X)
    np.testing.assert_array_equal(np.sort(heuristic.medoid_indices_), np.sort(np.argsort(D.sum(axis=1), kind="stable")[:4]))
    manhattan = clustr.KMedoids(4, metric="cityblock", random_state=0).fit(X)
    foreign = clustr.KMedoids(4, metric=lambda a, b: np.abs(a - b).sum(), random_state=0).fit(X)
    np.testing.assert_array_equal(foreign.labels_, manhattan.labels_)
    np.testing.assert_array_equal(foreign.predict(X[:20]), manhattan.predict(X[:20]))
    np.testing.assert_allclose(foreign.transform(X[:20]), manhattan.transform(X[:20]), rtol=1e-12)


def test_kmeans_verbose_prints_each_iterations_inertia(capsys):
    """The printed inertias never increase, are the same for every assignment step from the
    same start, and the run ends on scikit-learn's convergence line."""
    start = X[[0, 100, 200, 300]]
    printed = {}
    for algorithm in ("lloyd", "elkan", "hamerly"):
        km = clustr.KMeans(4, init=start, n_init=1, tol=0, algorithm=algorithm, verbose=1).fit(X)
        out = capsys.readouterr().out.splitlines()
        assert out[0] == "Initialization complete"
        assert out[-1] == f"Converged at iteration {km.n_iter_ - 1}: strict convergence."
        printed[algorithm] = [float(line.split("inertia ")[1].rstrip(".")) for line in out if line.startswith("Iteration")]
        assert len(printed[algorithm]) == km.n_iter_
        assert all(b <= a * (1 + 1e-12) for a, b in zip(printed[algorithm], printed[algorithm][1:]))
    np.testing.assert_allclose(printed["elkan"], printed["lloyd"], rtol=1e-9)
    np.testing.assert_allclose(printed["hamerly"], printed["lloyd"], rtol=1e-9)
    clustr.KMeans(4, init=start, n_init=1, tol=1e-2, verbose=1).fit(X)
    assert "within tolerance" in capsys.readouterr().out
    clustr.MiniBatchKMeans(4, init=start, n_init=1, batch_size=20, max_iter=50, max_no_improvement=3, verbose=1,
                           random_state=0).fit(X)
    assert "Converged (lack of improvement in inertia) at step" in capsys.readouterr().out


def test_n_jobs_is_the_thread_count():
    for make in (lambda **kw: clustr.DBSCAN(eps=0.8, **kw), lambda **kw: clustr.OPTICS(**kw), lambda **kw: clustr.HDBSCAN(**kw)):
        labels = [make(n_jobs=j).fit(X).labels_ for j in (None, 1, 2, -1)]
        for other in labels[1:]:
            np.testing.assert_array_equal(other, labels[0])
        with pytest.raises(ValueError, match="n_jobs == 0"):
            make(n_jobs=0).fit(X)


def test_hdbscan_persistence_as_the_package():
    # (min_samples 2, the package's 1: no two spanning-tree edges weigh the same here, so
    # neither order of tied merges decides the tree)
    found = set()
    for threshold in (0.0, 0.1, 0.5, 1.0, 2.0):
        kw = dict(min_cluster_size=5, cluster_selection_persistence=threshold, cluster_selection_method="leaf")
        ref = hdbscan.HDBSCAN(min_samples=1, algorithm="generic", **kw).fit(X)
        ours = clustr.HDBSCAN(min_samples=2, **kw).fit(X)
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
        # (the package keeps the simplified tree's λ in single precision)
        np.testing.assert_allclose(ours.probabilities_, ref.probabilities_, rtol=1e-6, atol=1e-7)
        found.add(ours.labels_.max() + 1)
    assert found == {26, 23, 12, 7, 4}, found


def test_a_foreign_metrics_matrix_is_checked_before_it_is_made():
    limit = clustr.max_memory()
    try:
        clustr.set_max_memory(100_000)  # bytes: X's 400 x 400 matrix needs 1.28 MB
        for est in (clustr.HDBSCAN(metric="braycurtis"), clustr.KMedoids(4, metric="canberra")):
            with pytest.raises(MemoryError, match="400 x 400 matrix"):
                est.fit(X)
    finally:
        clustr.set_max_memory(limit)
    with pytest.raises(ValueError, match="never forms the n x n matrix"):
        clustr.KMedoids(4, metric="braycurtis", method="clara").fit(X)

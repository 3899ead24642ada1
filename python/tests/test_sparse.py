"""scipy.sparse input: clustr's sparse k-means against scikit-learn's from the same initial
centres (labels identical, inertia within 1e-9), every sparse format, both element types, and
no dense copy of the data."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SkKMeans
from sklearn.cluster import MiniBatchKMeans as SkMiniBatchKMeans
from sklearn.preprocessing import normalize

import clustr


def tfidf(n, d, per_row, seed=0):
    """Zipf-distributed terms (rows as bags of words), idf weights, L2-normalised rows."""
    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.3, size=4 * n * per_row)
    ranks = ranks[ranks <= d][: n * per_row] - 1
    cols = rng.permutation(d)[ranks]
    X = sp.csr_matrix((np.ones(len(cols)), (np.repeat(np.arange(n), per_row), cols)), shape=(n, d))
    X.sum_duplicates()
    idf = np.log((1 + n) / (1 + np.bincount(X.indices, minlength=d))) + 1
    return normalize((X @ sp.diags(idf)).tocsr())


@pytest.fixture(scope="module")
def X():
    return tfidf(1500, 800, 40)


@pytest.mark.parametrize("k", [3, 12])
@pytest.mark.parametrize("weighted", [False, True])
def test_lloyd_equals_sklearn_from_the_same_centres(X, k, weighted):
    rng = np.random.default_rng(k)
    C = X[rng.choice(X.shape[0], k, replace=False)].toarray()
    w = rng.uniform(0.5, 3.0, X.shape[0]) if weighted else None
    ref = SkKMeans(k, init=C, n_init=1, algorithm="lloyd").fit(X, sample_weight=w)
    got = clustr.KMeans(k, init=C, n_init=1, algorithm="lloyd").fit(X, sample_weight=w)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert got.n_iter_ == ref.n_iter_
    assert abs(got.inertia_ - ref.inertia_) <= 1e-9 * ref.inertia_
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-12)
    new = X[::7]
    np.testing.assert_array_equal(got.predict(new), ref.predict(new))
    np.testing.assert_allclose(got.transform(new), ref.transform(new), rtol=1e-12, atol=1e-12)
    assert abs(got.score(new) - ref.score(new)) <= 1e-9 * abs(ref.score(new))


def test_elkan_and_hamerly_equal_sklearns_elkan_without_ties():
    # (denser rows: no row is equidistant from two centres, so every algorithm gives Lloyd's
    # result; with exact ties scikit-learn's own Elkan and Lloyd part ways too)
    X = normalize(sp.random(1200, 300, density=0.08, format="csr", random_state=3))
    C = X[:6].toarray()
    ref = SkKMeans(6, init=C, n_init=1, algorithm="elkan").fit(X)
    for algorithm in ["elkan", "hamerly", "auto"]:
        got = clustr.KMeans(6, init=C, n_init=1, algorithm=algorithm).fit(X)
        np.testing.assert_array_equal(got.labels_, ref.labels_)
        assert abs(got.inertia_ - ref.inertia_) <= 1e-9 * ref.inertia_


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_format_and_dtype_fits_as_its_dense_form(X, fmt, container, dtype):
    Xs = container(X.astype(dtype)).asformat(fmt)
    C = X[:4].toarray()
    dense = clustr.KMeans(4, init=C, n_init=1).fit(X.toarray().astype(dtype))
    got = clustr.KMeans(4, init=C, n_init=1).fit(Xs)
    assert got.cluster_centers_.dtype == dtype
    agree = (got.labels_ == dense.labels_).mean()
    assert agree == 1.0 if dtype == np.float64 else agree > 0.98
    assert np.isclose(got.inertia_, dense.inertia_, rtol=1e-9 if dtype == np.float64 else 1e-4)


def test_non_canonical_matrices_are_summed_as_scipy_does():
    # duplicates and unsorted indices within rows: scipy's meaning is the sum
    data, indices, indptr = [1.0, 2.0, 3.0, 4.0, 0.5], [2, 0, 2, 1, 1], [0, 3, 5]
    X = sp.csr_matrix((data, indices, indptr), shape=(2, 3))
    assert not X.has_canonical_format
    m = clustr.KMeans(2, n_init=1, random_state=0).fit(X)
    np.testing.assert_allclose(np.sort(m.cluster_centers_, axis=0), np.sort(X.toarray(), axis=0))
    assert not X.has_canonical_format  # the caller's matrix is left as it was


def test_bad_sparse_values_are_value_errors():
    X = tfidf(50, 30, 5)
    for bad in [np.nan, np.inf]:
        Y = X.copy()
        Y.data[3] = bad
        with pytest.raises(ValueError):
            clustr.KMeans(2).fit(Y)
    with pytest.raises(ValueError):
        clustr.KMeans(2).fit(X).predict(tfidf(5, 31, 3))


def test_no_dense_copy():
    # 20,000 rows of 200,000 columns: 32 GB dense, 4.8 MB sparse; the fit's peak memory
    # beyond the interpreter's must stay near the sparse matrix and the centres.
    script = textwrap.dedent(
        """
        import resource, numpy as np, scipy.sparse as sp, clustr
        rng = np.random.default_rng(0)
        cols = np.sort(rng.integers(0, 200000, size=(20000, 20)), axis=1)
        X = sp.csr_matrix((rng.random(cols.size), cols.ravel(), np.arange(0, cols.size + 1, 20)), shape=(20000, 200000))
        X.sum_duplicates()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        m = clustr.KMeans(3, n_init=1, random_state=0, max_iter=5).fit(X)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) / 1024)
        """
    )
    grown = float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert grown < 200, f"the fit grew the peak by {grown:.0f} MiB"


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ratio", [0.0, 0.01])
def test_minibatch_partial_fit_equals_sklearn_on_the_same_batches(X, sparse, weighted, ratio):
    # (with the default ratio no centre falls low enough to be re-seeded: the draws, which
    # differ between the two generators, never happen; the first step re-seeds nothing when
    # every centre is given points)
    rng = np.random.default_rng(5)
    k = 5
    C = X[rng.choice(X.shape[0], k, replace=False)].toarray()
    data = X if sparse else X.toarray()
    w = rng.uniform(0.5, 3.0, X.shape[0]) if weighted else np.ones(X.shape[0])
    ref = SkMiniBatchKMeans(k, init=C, n_init=1, reassignment_ratio=ratio, random_state=0)
    got = clustr.MiniBatchKMeans(k, init=C, n_init=1, reassignment_ratio=ratio, random_state=0)
    for step in range(8):
        rows = rng.choice(X.shape[0], 300, replace=False)
        sw = w[rows] if weighted else None
        ref.partial_fit(data[rows], sample_weight=sw)
        got.partial_fit(data[rows], sample_weight=sw)
        np.testing.assert_array_equal(got.labels_, ref.labels_, err_msg=f"step {step}")
        np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got._counts, ref._counts, rtol=1e-12)
        assert abs(got.inertia_ - ref.inertia_) <= 1e-9 * ref.inertia_
    assert got.n_steps_ == ref.n_steps_ == 8
    np.testing.assert_array_equal(got.predict(data), ref.predict(data))


def test_minibatch_fit_on_sparse_rows_equals_its_dense_form(X):
    C = X[:6].toarray()
    for dtype in [np.float64, np.float32]:
        kw = dict(init=C, n_init=1, batch_size=200, random_state=3)
        dense = clustr.MiniBatchKMeans(6, **kw).fit(X.toarray().astype(dtype))
        got = clustr.MiniBatchKMeans(6, **kw).fit(X.astype(dtype))
        assert got.cluster_centers_.dtype == dtype
        agree = (got.labels_ == dense.labels_).mean()
        assert agree == 1.0 if dtype == np.float64 else agree > 0.98
        assert got.n_steps_ == dense.n_steps_
        assert np.isclose(got.inertia_, dense.inertia_, rtol=1e-9 if dtype == np.float64 else 1e-4)
    with pytest.warns(RuntimeWarning, match="init_size"):
        clustr.MiniBatchKMeans(20, init_size=10, random_state=0).fit(X)


def grouped(n=800, d=200, seed=0):
    """Bags of words in four topics (each row: most of its topic's 8 terms, 2 random ones),
    L2-normalised: clusters for DBSCAN."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    for i in range(n):
        g = i % 4
        terms = np.arange(g * 8, g * 8 + 8)[rng.random(8) < 0.8]
        X[i, terms] = 1 + rng.random(len(terms))
        X[i, rng.integers(32, d, 2)] += rng.random(2)
    return normalize(sp.csr_matrix(X))


@pytest.mark.parametrize(
    "metric,eps", [("euclidean", 0.5), ("cosine", 0.15), ("cosine", 1.0), ("manhattan", 1.2)]
)
@pytest.mark.parametrize("min_samples", [2, 6])
def test_dbscan_on_sparse_rows_equals_sklearn(metric, eps, min_samples):
    from sklearn.cluster import DBSCAN as SkDBSCAN

    X = grouped()
    ref = SkDBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X)
    got = clustr.DBSCAN(eps=eps, min_samples=min_samples, metric=metric).fit(X)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_array_equal(got.core_sample_indices_, ref.core_sample_indices_)
    assert sp.issparse(got.components_) and got.components_.shape == ref.components_.shape
    assert (metric == "cosine" and eps >= 1) or len(set(ref.labels_)) > 3


@pytest.mark.parametrize("dense", [False, True])
def test_dbscan_on_a_precomputed_graph_equals_sklearn(dense):
    from sklearn.cluster import DBSCAN as SkDBSCAN
    from sklearn.neighbors import radius_neighbors_graph

    G = radius_neighbors_graph(grouped(), radius=0.5, mode="distance")
    D = G.toarray() if dense else G
    if dense:
        D[D == 0] = 10.0  # (in a dense matrix every entry is a distance)
        np.fill_diagonal(D, 0.0)
    ref = SkDBSCAN(eps=0.5, min_samples=4, metric="precomputed").fit(D)
    got = clustr.DBSCAN(eps=0.5, min_samples=4, metric="precomputed").fit(D)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert len(set(ref.labels_)) > 2


def test_an_all_zero_row_under_cosine_is_at_distance_one_as_in_sklearn():
    from sklearn.cluster import DBSCAN as SkDBSCAN

    Y = grouped().tolil()
    Y[3, :] = 0
    Y = Y.tocsr()
    ref = SkDBSCAN(eps=1.0, min_samples=4, metric="cosine").fit(Y)
    for data in (Y, Y.toarray()):
        got = clustr.DBSCAN(eps=1.0, min_samples=4, metric="cosine").fit(data)
        np.testing.assert_array_equal(got.labels_, ref.labels_)
    got = clustr.DBSCAN(eps=0.15, min_samples=4, metric="cosine").fit(Y)
    assert got.labels_[3] == -1


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_optics_on_sparse_rows_equals_sklearn(metric):
    # (scikit-learn's OPTICS refuses its default "minkowski" on sparse rows; clustr takes it as
    # euclidean)
    from sklearn.cluster import OPTICS as SkOPTICS

    X = grouped(300)
    ref = SkOPTICS(min_samples=5, metric=metric).fit(X)
    got = clustr.OPTICS(min_samples=5, metric=metric).fit(X)
    np.testing.assert_array_equal(got.ordering_, ref.ordering_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.reachability_, ref.reachability_, rtol=1e-12)


@pytest.mark.parametrize("graph", ["knn", "radius", "dense"])
@pytest.mark.parametrize("cluster_method", ["xi", "dbscan"])
def test_optics_on_a_precomputed_graph_equals_sklearn(graph, cluster_method):
    from sklearn.cluster import OPTICS as SkOPTICS
    from sklearn.metrics import pairwise_distances
    from sklearn.neighbors import kneighbors_graph, radius_neighbors_graph

    X = grouped(300, seed=4).toarray()
    G = {
        "knn": lambda: kneighbors_graph(X, n_neighbors=12, mode="distance"),
        "radius": lambda: radius_neighbors_graph(X, radius=0.9, mode="distance"),
        "dense": lambda: pairwise_distances(X),
    }[graph]()
    kw = dict(min_samples=6, metric="precomputed", cluster_method=cluster_method, eps=0.5)
    if graph == "radius":
        kw["max_eps"] = 0.9
    before = G.copy()
    ref = SkOPTICS(**kw).fit(G)
    got = clustr.OPTICS(**kw).fit(G)
    np.testing.assert_array_equal(got.ordering_, ref.ordering_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.reachability_, ref.reachability_, rtol=1e-12)
    np.testing.assert_allclose(got.core_distances_, ref.core_distances_, rtol=1e-12)
    # the caller's matrix untouched (no diagonal made explicit)
    if sp.issparse(G):
        assert G.nnz == before.nnz and (G != before).nnz == 0


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
@pytest.mark.parametrize("min_samples", [None, 3])
def test_hdbscan_on_sparse_rows_equals_sklearn(metric, min_samples):
    from sklearn.cluster import HDBSCAN as SkHDBSCAN

    X = grouped(300, seed=6)
    ref = SkHDBSCAN(min_cluster_size=10, min_samples=min_samples, metric=metric).fit(X)
    got = clustr.HDBSCAN(min_cluster_size=10, min_samples=min_samples, metric=metric).fit(X)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.probabilities_, ref.probabilities_, rtol=1e-9, atol=1e-12)
    with pytest.raises(TypeError):
        clustr.HDBSCAN(metric="chebyshev").fit(X)


@pytest.mark.parametrize("method", ["fasterpam", "pam", "fasterclara", "clarans"])
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_kmedoids_on_sparse_rows_equals_its_dense_form(method, metric):
    X = grouped(200, seed=8)
    dense = X.toarray()
    kw = dict(n_clusters=4, method=method, metric=metric, random_state=3)
    got = clustr.KMedoids(**kw).fit(X)
    ref = clustr.KMedoids(**kw).fit(dense)
    np.testing.assert_array_equal(got.medoid_indices_, ref.medoid_indices_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert got.inertia_ == pytest.approx(ref.inertia_, rel=1e-12)
    assert sp.issparse(got.cluster_centers_)
    np.testing.assert_array_equal(got.cluster_centers_.toarray(), ref.cluster_centers_)
    # predict and transform on sparse or dense rows, the fit's own distances
    for data in (X, dense):
        np.testing.assert_array_equal(got.predict(data), got.labels_)
        np.testing.assert_allclose(got.transform(data), ref.transform(dense), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(ref.predict(X[:50]), ref.labels_[:50])


def test_kmedoids_refuses_sparse_rows_under_other_metrics():
    with pytest.raises(TypeError):
        clustr.KMedoids(3, metric="chebyshev").fit(grouped(50))


def test_kmedoids_on_sparse_rows_without_a_dense_copy():
    # 20,000 rows of 200,000 columns (32 GB dense): CLARA's samples and its n x k distances
    script = textwrap.dedent(
        """
        import resource, numpy as np, scipy.sparse as sp, clustr
        rng = np.random.default_rng(0)
        cols = np.sort(rng.integers(0, 200000, size=(20000, 20)), axis=1)
        X = sp.csr_matrix((rng.random(cols.size), cols.ravel(), np.arange(0, cols.size + 1, 20)), shape=(20000, 200000))
        X.sum_duplicates()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        m = clustr.KMedoids(5, method="fasterclara", metric="cosine", random_state=0).fit(X)
        m.predict(X[:1000])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) / 1024)
        """
    )
    grown = float(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert grown < 200, f"the fit grew the peak by {grown:.0f} MiB"

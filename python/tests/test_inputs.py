"""Bad inputs give scikit-learn's exception types; good inputs of every layout work; fitted
estimators survive pickle and deepcopy; Ctrl-C stops a long fit."""

import copy
import pickle
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError

import clustr

X, _ = make_blobs(n_samples=300, centers=3, random_state=0)

ALL = [
    lambda: clustr.KMeans(3, random_state=0),
    lambda: clustr.MiniBatchKMeans(3, random_state=0),
    lambda: clustr.GaussianMixture(3, random_state=0),
    lambda: clustr.KMedoids(3, random_state=0),
    lambda: clustr.KMedoids(3, method="clara", random_state=0),
    lambda: clustr.DBSCAN(eps=0.8),
    lambda: clustr.OPTICS(),
    lambda: clustr.PowerKMeans(3, random_state=0),
    lambda: clustr.RffKpkm(3, n_components=64, random_state=0),
    lambda: clustr.IpRffMkpkm(3, n_components=32, n_init=2, random_state=0),
]


@pytest.mark.parametrize("make", ALL)
def test_nan_and_inf_are_value_errors(make):
    for bad in (np.nan, np.inf):
        Y = X.copy()
        Y[5, 1] = bad
        with pytest.raises(ValueError):
            make().fit(Y)


@pytest.mark.parametrize("make", ALL)
def test_wrong_shapes_are_value_errors(make):
    with pytest.raises(ValueError):
        make().fit(X[:, 0])
    with pytest.raises(ValueError):
        make().fit(np.empty((0, 2)))


@pytest.mark.parametrize("make", [m for i, m in enumerate(ALL) if i not in (5, 6)])
def test_more_clusters_than_points_is_a_value_error(make):
    with pytest.raises(ValueError):
        make().fit(X[:2])


def test_values_near_the_limit_of_the_arithmetic_are_value_errors_not_crashes():
    Y = X * 1e155
    for est in (clustr.KMeans(3), clustr.GaussianMixture(3), clustr.KMedoids(3)):
        with pytest.raises(ValueError):
            est.fit(Y)


@pytest.mark.parametrize("make", ALL)
def test_layouts_and_types_give_the_same_labels(make):
    ref = make().fit_predict(X)
    fortran = np.asfortranarray(X)
    strided = np.repeat(X, 2, axis=1)[:, ::2]
    assert not strided.flags.c_contiguous
    for variant in (fortran, strided, X.tolist()):
        np.testing.assert_array_equal(make().fit_predict(variant), ref)
    ints = np.round(X * 100).astype(np.int64)
    assert make().fit_predict(ints).shape == (len(X),)


def test_pandas_dataframes_work_and_record_feature_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=["a", "b"])
    km = clustr.KMeans(3, random_state=0).fit(df)
    assert list(km.feature_names_in_) == ["a", "b"]
    np.testing.assert_array_equal(km.predict(df), clustr.KMeans(3, random_state=0).fit(X).labels_)
    with pytest.warns(UserWarning):
        km.predict(X)


def test_predict_before_fit_and_wrong_width_after():
    with pytest.raises(NotFittedError):
        clustr.KMeans(3).predict(X)
    km = clustr.KMedoids(3, random_state=0).fit(X)
    with pytest.raises(ValueError):
        km.predict(np.ones((4, 5)))


def test_bad_parameters_are_value_errors():
    for est in (
        clustr.KMeans(0), clustr.KMeans(3, algorithm="fast"), clustr.KMedoids(3, method="pam2"),
        clustr.DBSCAN(eps=-1), clustr.GaussianMixture(2, covariance_type="round"),
        clustr.GaussianMixture(2, weights_init=[0.7, 0.7]), clustr.KMedoids(3, init=[0, 0, 1]),
        clustr.KMeans(3, n_threads=0),
        # Integers beyond 64 bits or negative indices: ValueError, not OverflowError.
        clustr.KMeans(n_clusters=2**64), clustr.KMedoids(init=[-1, 2, 3]),
        clustr.MiniBatchKMeans(3, batch_size=2**70),
    ):
        with pytest.raises(ValueError):
            est.fit(X)


def test_a_precomputed_matrix_must_be_square_and_non_negative():
    with pytest.raises(ValueError):
        clustr.KMedoids(2, metric="precomputed").fit(np.ones((4, 3)))
    with pytest.raises(ValueError):
        clustr.KMedoids(2, metric="precomputed").fit(-np.ones((4, 4)))


def test_above_the_memory_limit_is_a_memory_error_with_the_estimate():
    old = clustr.max_memory()
    try:
        clustr.set_max_memory("1M")
        with pytest.raises(MemoryError, match="needs .* but only .* is allowed"):
            clustr.KMedoids(3).fit(np.random.RandomState(0).rand(2000, 2))
    finally:
        clustr.set_max_memory(old)


@pytest.mark.parametrize("make", ALL)
def test_pickle_and_deepcopy_keep_the_fitted_model(make):
    est = make().fit(X)
    for clone in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        if hasattr(est, "labels_"):
            np.testing.assert_array_equal(clone.labels_, est.labels_)
        if hasattr(est, "predict"):
            np.testing.assert_array_equal(clone.predict(X), est.predict(X))


def test_ctrl_c_interrupts_a_long_fit_within_a_second():
    # EM iterations of about 0.1 s here, and never converging (tol = 0): only Ctrl-C ends it.
    big, _ = make_blobs(n_samples=60_000, centers=30, n_features=10, random_state=0)
    est = clustr.GaussianMixture(30, max_iter=1_000_000, tol=0, init_params="random", random_state=0)
    timer = threading.Timer(1.0, lambda: signal.raise_signal(signal.SIGINT))
    # Python leaves SIGINT ignored when it starts with it ignored (as a background job of a
    # shell does): install the handler Ctrl-C has in a terminal, for this test only.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(big)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    waited = time.perf_counter() - start - 1.0
    assert waited < 1.0, f"the fit stopped {waited:.2f} s after Ctrl-C"
    assert not hasattr(est, "weights_")


def test_c_contiguous_float_arrays_reach_rust_without_a_copy():
    from clustr._base import points

    for dtype in (np.float32, np.float64):
        A = np.ascontiguousarray(X, dtype=dtype)
        validated = points(clustr.KMeans(3), A, reset=True)
        assert validated.dtype == dtype and np.shares_memory(validated, A)
    # Other layouts and types are converted once, to float64 C order.
    validated = points(clustr.KMeans(3), np.asfortranarray(X.astype(np.int32)), reset=True)
    assert validated.dtype == np.float64 and validated.flags.c_contiguous


def test_large_sample_weights_give_finite_results():
    """Weights near f64::MAX: the labels of unit weights, or a ValueError for an inertia
    beyond f64's range; never a RuntimeError from a panic."""
    base = clustr.KMeans(3, n_init=1, random_state=0).fit(X, sample_weight=np.ones(len(X)))
    for w in (np.full(len(X), 1e307), np.full(len(X), 2.0**-1074), np.full(len(X), 2.0**1000)):
        try:
            km = clustr.KMeans(3, n_init=1, random_state=0).fit(X, sample_weight=w)
        except ValueError as e:
            assert "sample weights" in str(e)
            continue
        assert np.isfinite(km.inertia_)
        assert (km.labels_ == base.labels_).all()
    gm = clustr.GaussianMixture(3, random_state=0).fit(X, sample_weight=np.full(len(X), 1e307))
    assert np.isfinite(gm.predict_proba(X)).all()


def test_far_points_are_refused_by_predict_not_nan():
    gm = clustr.GaussianMixture(3, random_state=0).fit(X)
    km = clustr.KMeans(3, random_state=0).fit(X)
    far = np.array([[1e160, 0.0]])
    for call in (gm.predict_proba, gm.score_samples, km.transform, km.predict):
        with pytest.raises(ValueError):
            call(far)


@pytest.mark.parametrize(
    "make",
    [
        lambda b: clustr.KMeans(2, backend=b, random_state=0),
        lambda b: clustr.MiniBatchKMeans(2, backend=b, random_state=0),
        lambda b: clustr.KMedoids(2, method="fasterpam", backend=b, random_state=0),
        lambda b: clustr.PowerKMeans(2, backend=b, random_state=0),
        lambda b: clustr.RffKpkm(2, n_components=20, backend=b, random_state=0),
    ],
)
def test_backend_is_chosen_and_reported(make):
    """``backend="cpu"`` runs on the CPU and says so in ``backend_``; ``"auto"`` names where it
    ran; a CPU-only k-medoids method refuses ``"cuda"`` with a ValueError naming it."""
    X, _ = make_blobs(60, 2, centers=2, random_state=1)
    assert make("cpu").fit(X).backend_ == "cpu"
    assert make("auto").fit(X).backend_ in ("cpu", "cuda")
    with pytest.raises(ValueError, match="pam runs on the CPU only"):
        clustr.KMedoids(2, method="pam", backend="cuda").fit(X)
    with pytest.raises(ValueError):
        make("tpu").fit(X)

"""scikit-learn's own estimator checks on every clustr estimator; the only checks allowed to
fail are those `clustr.expected_failed_checks` declares, with its reason."""

import clustr
from sklearn.utils.estimator_checks import parametrize_with_checks

ESTIMATORS = [
    clustr.KMeans(3, random_state=0),
    clustr.KMeans(3, algorithm="elkan", random_state=0),
    clustr.BisectingKMeans(3, random_state=0),
    clustr.MiniBatchKMeans(3, random_state=0),
    clustr.GaussianMixture(2, random_state=0),
    clustr.GaussianMixture(2, covariance_type="diag", random_state=0),
    *[
        clustr.KMedoids(3, method=m, random_state=0)
        for m in [
            "pam", "fastpam1", "fastpam2", "fasterpam", "alternating",
            "clara", "fastclara", "fasterclara", "clarans", "fastclarans",
        ]
    ],
    clustr.KMedoids(3, metric="precomputed", random_state=0),
    clustr.KMedoids(3, metric="manhattan", random_state=0),
    clustr.DBSCAN(),
    clustr.OPTICS(),
    clustr.HDBSCAN(),
    clustr.HDBSCAN(metric="precomputed"),
    clustr.PowerKMeans(3, random_state=0),
    clustr.RffKpkm(3, n_components=50, random_state=0),
    clustr.IpRffMkpkm(3, n_components=50, n_init=2, random_state=0),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=clustr.expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_every_described_method_is_checked():
    """Every method of the library's description with a Python estimator is exported and in
    ESTIMATORS (the k-medoids methods each as a KMedoids method)."""
    from clustr import _clustr

    checked = {type(e).__name__ for e in ESTIMATORS}
    kmedoids = {e.method for e in ESTIMATORS if type(e).__name__ == "KMedoids"}
    described = _clustr.methods()
    assert len(described) >= 25
    for name, python, _, _ in described:
        if python is None:
            continue
        assert python in clustr.__all__, name
        assert python in checked, name
        if python == "KMedoids":
            assert name in kmedoids, name


def test_defaults_are_the_described_ones():
    """Each Python estimator's defaults are those of the library's description, which reads
    them from the Rust estimator (so a default changed on one side only fails here)."""
    import json

    from clustr import _clustr

    compared = 0
    for name, python, defaults, _ in _clustr.methods():
        if python is None:
            continue
        params = getattr(clustr, python)().get_params()
        for key, value in json.loads(defaults).items():
            assert key in params, f"{name}: {key} is not a parameter of {python}"
            assert params[key] == value, f"{name}: {key} = {params[key]!r}, described {value!r}"
            compared += 1
    assert compared >= 40


def test_every_estimator_takes_backend():
    """Every estimator takes ``backend=`` and says in ``backend_`` where it ran: ``"cpu"``
    runs on the CPU; ``"auto"`` on the CPU or a device; ``"cuda"`` is refused by a method
    that gives a device no work (naming it), and by every method in a build without CUDA."""
    import numpy as np
    from sklearn.base import clone
    from sklearn.datasets import make_blobs

    from clustr import _clustr

    device = {}
    for name, python, _, on_device in _clustr.methods():
        device[name if python == "KMedoids" else python] = on_device
    X, _ = make_blobs(60, 2, centers=3, random_state=1)
    seen = 0
    for estimator in ESTIMATORS:
        if estimator.get_params().get("metric") == "precomputed":
            continue
        python = type(estimator).__name__
        key = estimator.method if python == "KMedoids" else python
        assert clone(estimator).set_params(backend="cpu").fit(X).backend_ == "cpu", key
        assert clone(estimator).set_params(backend="auto").fit(X).backend_ in ("cpu", "cuda"), key
        if not device[key]:
            with np.testing.assert_raises_regex(ValueError, "runs on the CPU only"):
                clone(estimator).set_params(backend="cuda").fit(X)
        seen += 1
    assert seen == len(ESTIMATORS) - 2

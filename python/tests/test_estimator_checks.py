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
    for name, python, _ in described:
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
    for name, python, defaults in _clustr.methods():
        if python is None:
            continue
        params = getattr(clustr, python)().get_params()
        for key, value in json.loads(defaults).items():
            assert key in params, f"{name}: {key} is not a parameter of {python}"
            assert params[key] == value, f"{name}: {key} = {params[key]!r}, described {value!r}"
            compared += 1
    assert compared >= 40

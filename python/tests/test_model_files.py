"""Model files written by the command line (`--model-out`), read here without clustr: the
parameters they hold give scikit-learn's predictions, equal to `clustr predict`'s."""

import base64
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sklearn.cluster as skc
import sklearn.mixture as skm
from sklearn.datasets import make_blobs
from sklearn.mixture._gaussian_mixture import _compute_precision_cholesky

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CLUSTR_BIN", ROOT / "target" / "release" / "clustr"))


def stored_array(a):
    """An array of a model file: JSON numbers or base64 little-endian bytes."""
    dtype = {"float64": "<f8", "float32": "<f4", "int64": "<i8"}[a["dtype"]]
    if "data" in a:
        values = np.asarray(a["data"], dtype=dtype)
    else:
        values = np.frombuffer(base64.b64decode(a["base64"]), dtype=dtype)
    return values.reshape(a["shape"])


def clustr(*args):
    assert BIN.exists(), f"{BIN}: build it with cargo build --release (CI's cargo test does)"
    subprocess.run([str(BIN), *map(str, args), "--quiet"], check=True)


@pytest.fixture
def split(tmp_path):
    X, _ = make_blobs(2500, 4, centers=5, cluster_std=1.5, random_state=4)
    train, new = X[::2], X[1::2]
    np.save(tmp_path / "train.npy", train)
    np.save(tmp_path / "new.npy", new)
    return tmp_path, new


def test_kmeans_model_predicts_as_sklearn_with_its_centres(split):
    d, new = split
    clustr("kmeans", d / "train.npy", "--k", 5, "--model-out", d / "km.json")
    clustr("predict", d / "km.json", d / "new.npy", "--labels-out", d / "l.npy", "--transform-out", d / "t.npy")
    f = json.loads((d / "km.json").read_text())
    assert (f["format"], f["format_version"], f["algorithm"]) == ("clustr-model", 1, "kmeans")
    centres = stored_array(f["model"]["centers"])
    ref = skc.KMeans(5)
    ref.cluster_centers_, ref.n_features_in_, ref._n_threads = centres, 4, 1
    np.testing.assert_array_equal(np.load(d / "l.npy"), ref.predict(new))
    np.testing.assert_allclose(np.load(d / "t.npy"), ref.transform(new), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("covariance_type", ["full", "tied", "diag", "spherical"])
def test_gmm_model_predicts_as_sklearn_with_its_parameters(split, covariance_type):
    d, new = split
    clustr("gmm", d / "train.npy", "--k", 5, "--covariance", covariance_type, "--model-out", d / "g.json")
    clustr("predict", d / "g.json", d / "new.npy", "--labels-out", d / "l.npy", "--proba-out", d / "p.npy")
    m = json.loads((d / "g.json").read_text())["model"]
    assert m["covariance_type"] == covariance_type
    ref = skm.GaussianMixture(5, covariance_type=covariance_type)
    ref.weights_ = stored_array(m["weights"])
    ref.means_ = stored_array(m["means"])
    ref.covariances_ = stored_array(m["covariances"])
    ref.precisions_cholesky_ = _compute_precision_cholesky(ref.covariances_, covariance_type)
    ref.n_features_in_ = 4
    np.testing.assert_array_equal(np.load(d / "l.npy"), ref.predict(new))
    np.testing.assert_allclose(np.load(d / "p.npy"), ref.predict_proba(new), rtol=0, atol=1e-12)


def test_large_arrays_are_base64_and_exact(split):
    d, new = split
    clustr("dbscan", d / "train.npy", "--eps", 3.0, "--model-out", d / "db.json")
    m = json.loads((d / "db.json").read_text())["model"]
    cores = stored_array(m["core_points"])
    assert "base64" in m["core_points"] and cores.size > 4096
    train = np.load(d / "train.npy")
    # Every stored core point is a training point, bit for bit.
    assert {tuple(r) for r in cores} <= {tuple(r) for r in train}

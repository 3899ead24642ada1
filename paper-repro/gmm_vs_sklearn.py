"""Times `clustr gmm` against scikit-learn's GaussianMixture on the same data, from the same
initial responsibilities (one-hot k-means labels), at the same thread count, and checks that
the fits agree.

    cargo build --release
    /tmp/refs/bin/pip install -r tests/fixtures/requirements.txt
    /tmp/refs/bin/python paper-repro/gmm_vs_sklearn.py --n 5000 --d 10 --k 20 --threads 1 2

clustr's time is the fit phase it reports in --json (reading the file excluded); scikit-learn's
the fit call. Best of --repeats.
"""
import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=5000)
ap.add_argument("--d", type=int, default=10)
ap.add_argument("--k", type=int, default=20)
ap.add_argument("--covariance", nargs="+", default=["full", "tied", "diag", "spherical"])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--std", type=float, default=4.0, help="cluster standard deviation of the blobs (overlap)")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
args = ap.parse_args()

X, _ = make_blobs(args.n, args.d, centers=args.k, cluster_std=args.std, random_state=0)
init_labels = KMeans(args.k, n_init=1, random_state=0).fit(X).labels_
resp = np.eye(args.k)[init_labels]
rows = []
with tempfile.TemporaryDirectory() as tmp:
    xp, ip, lp = Path(tmp) / "x.npy", Path(tmp) / "init.npy", Path(tmp) / "l.npy"
    np.save(xp, X)
    np.save(ip, init_labels.astype(np.int64))
    for cov in args.covariance:
        for t in args.threads:
            theirs = []
            with threadpool_limits(limits=t):
                for _ in range(args.repeats):
                    gm = GaussianMixture(args.k, covariance_type=cov)
                    gm._initialize_parameters = lambda X_, rs_, xp=None, gm=gm: gm._initialize(X_, resp)
                    t0 = time.perf_counter()
                    gm.fit(X)
                    theirs.append(time.perf_counter() - t0)
            ours = []
            for _ in range(args.repeats):
                out = subprocess.run(
                    [args.clustr, "gmm", str(xp), "--k", str(args.k), "--covariance", cov, "--init-labels", str(ip),
                     "--threads", str(t), "--json", "--quiet", "--labels-out", str(lp)],
                    check=True, capture_output=True, text=True)
                v = json.loads(out.stdout)
                ours.append(v["seconds"]["fit"])
            ari = adjusted_rand_score(gm.predict(X), np.load(lp))
            rows.append((cov, t, min(ours), min(theirs), v["mean_log_likelihood"], float(gm.lower_bound_),
                         v["n_iter"], int(gm.n_iter_), ari))

lines = header(args.threads) + [
    f"`clustr gmm` vs scikit-learn {sklearn.__version__} `GaussianMixture`, {args.n} x {args.d} blobs, "
    f"k = {args.k}, cluster_std = {args.std}, same initial responsibilities, best of {args.repeats}.",
    "",
    "| covariance | threads | clustr fit (s) | sklearn fit (s) | clustr / sklearn | mean log-likelihood (clustr / sklearn) | iterations | ARI between labels |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
]
for cov, t, a, b, la, lb, na, nb, ari in rows:
    lines.append(f"| {cov} | {t} | {a:.4f} | {b:.4f} | {a / b:.2f} | {la:.10f} / {lb:.10f} | {na} / {nb} | {ari:.6f} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

"""Times `clustr kmeans` against scikit-learn's KMeans(algorithm="lloyd") on the same data,
from the same initial centres, at the same thread count, and checks that the results agree.

    cargo build --release
    /tmp/refs/bin/pip install scikit-learn threadpoolctl
    /tmp/refs/bin/python paper-repro/kmeans_vs_sklearn.py --n 200000 --d 32 --k 64 --threads 1 2

clustr's time is the fit phase it reports in --json (reading the .npy excluded); scikit-learn's
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
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=200000)
ap.add_argument("--d", type=int, default=32)
ap.add_argument("--k", type=int, default=64)
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--max-iter", type=int, default=300)
ap.add_argument("--algorithms", nargs="+", default=["lloyd", "hamerly"], help="clustr's assignment steps to time")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
args = ap.parse_args()

X, _ = make_blobs(args.n, args.d, centers=args.k, cluster_std=4.0, random_state=0)
init, _ = kmeans_plusplus(X, args.k, random_state=0)
rows = []
with tempfile.TemporaryDirectory() as tmp:
    xp, cp, lp = Path(tmp) / "x.npy", Path(tmp) / "c.npy", Path(tmp) / "l.npy"
    np.save(xp, X)
    np.save(cp, init)
    for t in args.threads:
        theirs = []
        with threadpool_limits(limits=t):
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                km = KMeans(args.k, init=init, n_init=1, algorithm="lloyd", max_iter=args.max_iter).fit(X)
                theirs.append(time.perf_counter() - t0)
        for alg in args.algorithms:
            ours = []
            for _ in range(args.repeats):
                out = subprocess.run(
                    [args.clustr, "kmeans", str(xp), "--k", str(args.k), "--init", str(cp), "--max-iter",
                     str(args.max_iter), "--algorithm", alg, "--threads", str(t), "--json", "--quiet",
                     "--labels-out", str(lp)],
                    check=True, capture_output=True, text=True)
                v = json.loads(out.stdout)
                ours.append(v["seconds"]["fit"])
            ari = adjusted_rand_score(km.labels_, np.load(lp))
            rows.append((t, alg, min(ours), min(theirs), v["inertia"], float(km.inertia_), v["n_iter"],
                         int(km.n_iter_), ari))

lines = header(args.threads) + [
    f"`clustr kmeans` vs scikit-learn {sklearn.__version__} `KMeans(algorithm='lloyd')`, {args.n} x {args.d} blobs, "
    f"k = {args.k}, same initial centres, n_init = 1, best of {args.repeats}.",
    "",
    "| threads | clustr algorithm | clustr fit (s) | sklearn lloyd (s) | clustr / sklearn | inertia (clustr / sklearn) | iterations | ARI between labels |",
    "|---:|---|---:|---:|---:|---:|---:|---:|",
]
for t, alg, a, b, ia, ib, na, nb, ari in rows:
    lines.append(f"| {t} | {alg} | {a:.3f} | {b:.3f} | {a / b:.2f} | {ia:.6e} / {ib:.6e} | {na} / {nb} | {ari:.6f} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

"""Which neighbour index is fastest for the density methods above 16 dimensions, and what
`--index auto` chooses (issue #43, item 3; a first, reduced grid): whole-process time of
`clustr dbscan` and `clustr hdbscan` with each index on data with structure (10 Gaussian blobs,
std 2) and without (one standard Gaussian). DBSCAN's eps is the median distance to the 10th
neighbour (a sample of 2,000 points), so its neighbourhoods are of the density's scale.

    target/pyvenv/bin/python paper-repro/index_crossover.py --n 10000 --dims 20 40 64 \\
        --repeats 3 --out paper-repro/results/index_crossover.md
"""
import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.neighbors import NearestNeighbors

from provenance import header

ROOT = Path(__file__).resolve().parents[1]
ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10000)
ap.add_argument("--dims", type=int, nargs="+", default=[20, 40, 64])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--clustr", default=str(ROOT / "target/release/clustr"))
ap.add_argument("--out", type=Path)
args = ap.parse_args()
INDEXES = ["kdtree", "balltree", "brute", "auto"]

rows = []
with tempfile.TemporaryDirectory() as tmp:
    for d in args.dims:
        for kind in ["blobs", "gaussian"]:
            if kind == "blobs":
                X = make_blobs(args.n, n_features=d, centers=10, cluster_std=2.0, random_state=0)[0]
            else:
                X = np.random.default_rng(0).normal(size=(args.n, d))
            path = f"{tmp}/x.npy"
            np.save(path, X)
            sample = X[:: max(1, args.n // 2000)]
            eps = float(np.median(NearestNeighbors(n_neighbors=10).fit(sample).kneighbors(sample)[0][:, -1]))
            for method, extra in [("dbscan", ["--eps", repr(eps)]), ("hdbscan", ["--min-cluster-size", "20"])]:
                times = {i: [] for i in INDEXES}
                for _ in range(args.repeats):
                    for i in INDEXES:  # (alternated)
                        start = time.perf_counter()
                        subprocess.run([args.clustr, method, path, *extra, "--index", i, "--quiet"], check=True)
                        times[i].append(time.perf_counter() - start)
                med = {i: statistics.median(t) for i, t in times.items()}
                best = min(med[i] for i in INDEXES[:3])
                rows.append(f"| {d} | {kind} | {method} | " + " | ".join(
                    f"{med[i]:.2f} ({min(times[i]):.2f}–{max(times[i]):.2f})" for i in INDEXES)
                    + f" | {med['auto'] / best:.2f} |")
                print(rows[-1], flush=True)
lines = ["# Neighbour index above 16 dimensions: what is fastest, what auto chooses", ""] + header([2]) + [
    f"n = {args.n:,}; whole process (read, fit, no outputs), seconds, median (min–max) of {args.repeats}, "
    "indexes alternated. `auto` above 16 dimensions builds a ball tree and keeps it if the 10 "
    "nearest neighbours of 32 sample points read at most half of the points, else uses brute force.",
    "",
    "| d | data | method | kdtree | balltree | brute | auto | auto / best |",
    "|---:|---|---|---|---|---|---|---:|",
    *rows,
]
text = "\n".join(lines) + "\n"
print(text)
if args.out:
    args.out.write_text(text)

"""Which neighbour index is fastest for each density method, and how `--index auto` compares
(issue #43, item 3): whole-process time of `clustr dbscan`, `optics` (max_eps unbounded),
`hdbscan` and `single-linkage` with each index, on data with structure (10 Gaussian blobs,
std 2) and without (one standard Gaussian), over a grid of dimensions, metrics and sizes.
DBSCAN's eps is the median distance to the 10th neighbour (a sample of 2,000 points, in the
metric), so its neighbourhoods are of the density's scale. For single linkage, brute force is
Prim's algorithm over every pair and a tree is Borůvka's over it.

A run longer than --cap seconds is not repeated and shows as "> cap"; "auto / best" compares
medians with the fastest index that was measured in full.

    target/pyvenv/bin/python paper-repro/index_crossover.py --n 10000 --dims 2 5 10 20 40 64 \\
        --metrics euclidean manhattan --repeats 3 --out paper-repro/results/index_crossover.md
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
ap.add_argument("--n", type=int, nargs="+", default=[10000])
ap.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10, 20, 40, 64])
ap.add_argument("--metrics", nargs="+", default=["euclidean"])
ap.add_argument("--methods", nargs="+", default=["dbscan", "optics", "hdbscan", "single-linkage"])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--cap", type=float, default=20.0)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--clustr", default=str(ROOT / "target/release/clustr"))
ap.add_argument("--out", type=Path)
args = ap.parse_args()
INDEXES = ["kdtree", "balltree", "brute", "auto"]
SKLEARN_METRIC = {"euclidean": "euclidean", "manhattan": "manhattan", "cosine": "cosine"}

rows, worst = [], 0.0
with tempfile.TemporaryDirectory() as tmp:
    for n in args.n:
        for d in args.dims:
            for kind in ["blobs", "gaussian"]:
                if kind == "blobs":
                    X = make_blobs(n, n_features=d, centers=10, cluster_std=2.0, random_state=0)[0]
                else:
                    X = np.random.default_rng(0).normal(size=(n, d))
                path = f"{tmp}/x.npy"
                np.save(path, X)
                for metric in args.metrics:
                    sample = X[:: max(1, n // 2000)]
                    nn = NearestNeighbors(n_neighbors=10, metric=SKLEARN_METRIC[metric]).fit(sample)
                    eps = float(np.median(nn.kneighbors(sample)[0][:, -1]))
                    extra = {"dbscan": ["--eps", repr(eps)], "optics": [], "hdbscan": ["--min-cluster-size", "20"],
                             "single-linkage": ["--n-clusters", "10"]}
                    for method in args.methods:
                        times = {i: [] for i in INDEXES}
                        capped = set()
                        for _ in range(args.repeats):
                            for i in INDEXES:  # (alternated)
                                if i in capped:
                                    continue
                                start = time.perf_counter()
                                subprocess.run([args.clustr, method, path, *extra[method], "--metric", metric,
                                                "--index", i, "--threads", str(args.threads), "--quiet"], check=True)
                                times[i].append(time.perf_counter() - start)
                                if times[i][-1] > args.cap:
                                    capped.add(i)
                        med = {i: statistics.median(t) for i, t in times.items()}
                        best = min(med[i] for i in INDEXES[:3] if i not in capped)
                        ratio = med["auto"] / best
                        worst = max(worst, ratio)

                        def cell(i):
                            if i in capped:
                                return f"> {args.cap:.0f} ({times[i][0]:.1f})"
                            return f"{med[i]:.3f} ({min(times[i]):.3f}–{max(times[i]):.3f})"
                        rows.append(f"| {n:,} | {d} | {kind} | {metric} | {method} | "
                                    + " | ".join(cell(i) for i in INDEXES) + f" | {ratio:.2f} |")
                        print(rows[-1], flush=True)
lines = ["# Neighbour index for the density methods: what is fastest, what auto chooses", ""] + header(
    [args.threads]) + [
    f"Whole process (read, fit, no outputs), seconds, median (min–max) of {args.repeats}, indexes alternated. "
    "`auto`: a k-d tree up to 16 dimensions; above, a tree (k-d for Euclidean up to 30 dimensions, else ball) "
    "if the 10 nearest neighbours of 32 sample points read at most half of the points, else brute force "
    "(squared Euclidean: brute force). Single linkage's auto takes Prim's over every pair up to "
    "max(250·d, 15,000 at d = 10–11, 40,000 at d = 12–16, 50,000 above) points, else Borůvka's over the tree "
    "(Prim's where the probe finds no structure). OPTICS with max_eps unbounded.",
    "",
    f"Largest auto / best: **{worst:.2f}**.",
    "",
    "| n | d | data | metric | method | kdtree | balltree | brute | auto | auto / best |",
    "|---:|---:|---|---|---|---|---|---|---|---:|",
    *rows,
]
text = "\n".join(lines) + "\n"
print(text)
if args.out:
    args.out.write_text(text)

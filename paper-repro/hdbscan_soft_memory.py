"""All-points soft clustering of HDBSCAN at scale (issue #43): the memory that
``all_points_membership_vectors`` takes beyond its n × k output, sampled while it runs, and
its time; the hdbscan package's figure on the same data where it fits in memory.

    target/pyvenv/bin/python paper-repro/hdbscan_soft_memory.py --n 1000000 --clusters 50 \\
        --out paper-repro/results/hdbscan_soft_memory.md

The data: make_blobs(n, 2 features, `clusters` centres on a grid far apart, std 1), fitted
with min_cluster_size = n / (4 · clusters) so each blob is one cluster.
"""
import argparse
import threading
import time
from pathlib import Path

import numpy as np

import clustr
from provenance import header

PAGE = 4096


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def peak_during(work):
    """work()'s result, its time and the largest RSS seen while it ran (sampled every 2 ms)."""
    peak, done = [rss()], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            time.sleep(0.002)

    t = threading.Thread(target=sample)
    t.start()
    start = time.perf_counter()
    try:
        out = work()
    finally:
        seconds = time.perf_counter() - start
        done.set()
        t.join()
    return out, seconds, max(peak[0], rss())


ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1_000_000)
ap.add_argument("--clusters", type=int, default=50)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--out", type=Path)
args = ap.parse_args()

side = int(np.ceil(np.sqrt(args.clusters)))
centres = np.array([[30.0 * (i % side), 30.0 * (i // side)] for i in range(args.clusters)])
rng = np.random.default_rng(0)
X = centres[rng.integers(0, args.clusters, args.n)] + rng.normal(size=(args.n, 2))
mcs = max(5, args.n // (4 * args.clusters))
fit_start = time.perf_counter()
model = clustr.HDBSCAN(min_cluster_size=mcs, min_samples=10, n_threads=args.threads).fit(X)
fit_s = time.perf_counter() - fit_start
k = int(model.labels_.max()) + 1
before = rss()
m, seconds, peak = peak_during(model.all_points_membership_vectors)
output = m.nbytes
growth = peak - before
beyond = growth - output
lines = ["# HDBSCAN all-points soft clustering: memory beyond the output", ""] + header([args.threads]) + [
    f"clustr {clustr.__version__}. Data: {args.n:,} × 2 points in {args.clusters} blobs (std 1, 30 apart); "
    f"HDBSCAN(min_cluster_size={mcs}, min_samples=10): {k} clusters, fit {fit_s:.1f} s.",
    "",
    "`all_points_membership_vectors()`: resident memory sampled every 2 ms while it runs, against "
    "the memory before the call (the fitted model and the data already resident).",
    "",
    "| n | clusters | time (s) | output n × k × 8 (MiB) | peak growth (MiB) | beyond the output (MiB) | beyond, bytes per point |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    f"| {args.n:,} | {k} | {seconds:.2f} | {output / 2**20:.1f} | {growth / 2**20:.1f} | {beyond / 2**20:.1f} | "
    f"{beyond / args.n:.0f} |",
    "",
    f"Rows sum to the probability of being in some cluster: min {m.sum(1).min():.4f}, max {m.sum(1).max():.4f}; "
    f"finite everywhere: {bool(np.isfinite(m).all())}.",
    "",
    "What the call holds besides the output, all O(n): a float64 copy of the points and the "
    "condensed tree in the binding, the predictor's per-point tree row (cluster, λ) and its "
    "prediction core distances (from a k-d tree built on the copy), and a vector of k per thread.",
]
text = "\n".join(lines) + "\n"
print(text)
if args.out:
    args.out.write_text(text)

"""All-points soft clustering of HDBSCAN at scale (issue #43): the memory that
``all_points_membership_vectors`` takes beyond its n × k output, sampled while it runs, and
its time; beside it, clustr and the hdbscan package on a smaller set of the same kind
(`--package-n`; the package's function is single-threaded).

    target/pyvenv/bin/python paper-repro/hdbscan_soft_memory.py --n 1000000 --clusters 50 \\
        --package-n 100000 --out paper-repro/results/hdbscan_soft_memory.md

The data: make_blobs(n, 2 features, `clusters` centres on a grid far apart, std 1), fitted
with min_cluster_size = n / (4 · clusters) so each blob is one cluster.
"""
import argparse
import json
import subprocess
import sys
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
ap.add_argument("--package-n", type=int, default=0, help="also the hdbscan package at this n")
ap.add_argument("--one", help=argparse.SUPPRESS)
ap.add_argument("--out", type=Path)
args = ap.parse_args()



def blobs(n):
    side = int(np.ceil(np.sqrt(args.clusters)))
    centres = np.array([[30.0 * (i % side), 30.0 * (i // side)] for i in range(args.clusters)])
    rng = np.random.default_rng(0)
    return centres[rng.integers(0, args.clusters, n)] + rng.normal(size=(n, 2))


def clustr_soft(X):
    mcs = max(5, len(X) // (4 * args.clusters))
    start = time.perf_counter()
    model = clustr.HDBSCAN(min_cluster_size=mcs, min_samples=10, n_threads=args.threads).fit(X)
    fit_s = time.perf_counter() - start
    before = rss()
    m, seconds, peak = peak_during(model.all_points_membership_vectors)
    return mcs, fit_s, int(model.labels_.max()) + 1, m, seconds, peak - before


def package_soft(X):
    import hdbscan

    package = hdbscan.HDBSCAN(min_cluster_size=max(5, len(X) // (4 * args.clusters)), min_samples=9,
                              prediction_data=True, approx_min_span_tree=False).fit(X)
    before = rss()
    m, seconds, peak = peak_during(lambda: hdbscan.all_points_membership_vectors(package))
    return None, None, m.shape[1], m, seconds, peak - before


if args.one:
    # (one measurement in a fresh process, so the memory before the call holds no freed pages
    # of an earlier one)
    library, n = args.one.split(":")
    mcs, fit_s, k, m, seconds, growth = (clustr_soft if library == "clustr" else package_soft)(blobs(int(n)))
    print(json.dumps(dict(mcs=mcs, fit_s=fit_s, k=k, seconds=seconds, growth=growth, nbytes=m.nbytes,
                          row_min=float(m.sum(1).min()), row_max=float(m.sum(1).max()),
                          finite=bool(np.isfinite(m).all()))))
    sys.exit(0)


def measure(library, n):
    out = subprocess.run([sys.executable, __file__, "--one", f"{library}:{n}", "--clusters", str(args.clusters),
                          "--threads", str(args.threads)], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def row(library, n, r):
    beyond = r["growth"] - r["nbytes"]
    return (f"| {library} | {n:,} | {r['k']} | {r['seconds']:.2f} | {r['nbytes'] / 2**20:.1f} | "
            f"{r['growth'] / 2**20:.1f} | {beyond / 2**20:.1f} | {beyond / n:.0f} |")


main = measure("clustr", args.n)
mcs, fit_s, k = main["mcs"], main["fit_s"], main["k"]
table = ["| library | n | clusters | time (s) | output n × k × 8 (MiB) | peak growth (MiB) | beyond the output (MiB) | beyond, bytes per point |",
         "|---|---:|---:|---:|---:|---:|---:|---:|", row("clustr", args.n, main)]
compared = []
if args.package_n:
    compared = ["", f"The same function, {args.package_n:,} points of the same kind, clustr ({args.threads} threads) "
                "and the hdbscan package (its min_samples 9 = clustr's 10; single-threaded):", "",
                *table[:2], row("clustr", args.package_n, measure("clustr", args.package_n)),
                row("hdbscan", args.package_n, measure("hdbscan", args.package_n))]
lines = ["# HDBSCAN all-points soft clustering: memory beyond the output", ""] + header([args.threads]) + [
    f"clustr {clustr.__version__}. Data: {args.n:,} × 2 points in {args.clusters} blobs (std 1, 30 apart); "
    f"HDBSCAN(min_cluster_size={mcs}, min_samples=10): {k} clusters, fit {fit_s:.1f} s.",
    "",
    "`all_points_membership_vectors()`: resident memory sampled every 2 ms while it runs, against "
    "the memory before the call (the fitted model and the data already resident).",
    "",
    *table,
    "",
    f"Rows sum to the probability of being in some cluster: min {main['row_min']:.4f}, max {main['row_max']:.4f}; "
    f"finite everywhere: {main['finite']}. Each figure from a fresh process.",
    "",
    "What the call holds besides the output, all O(n): a float64 copy of the points and the "
    "condensed tree in the binding, the predictor's per-point tree row (cluster, λ), its "
    "prediction core distances (from a k-d tree built on the copy) and a k-d tree over each "
    "cluster's exemplars, and a vector of k per thread.",
    *compared,
]
text = "\n".join(lines) + "\n"
print(text)
if args.out:
    args.out.write_text(text)

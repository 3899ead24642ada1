"""The mutual-reachability spanning tree against the fastest code for it, side by side in one
run: clustr's whole `hdbscan` and `single-linkage` processes (start-up, reading the .npy, the
tree, the clustering, writing nothing) against quitefastmst's `mst_euclid(X, M)` alone (inside
its process, after loading) and scipy's `linkage(X, "single")`.

1. HDBSCAN, min_samples = M = 10, blobs (scikit-learn's make_blobs, 20 centres, seed 0),
   n = 100,000 and 400,000, d = 2 and 5, one thread; the growth from 100k to 400k.
2. Single linkage against quitefastmst with M = 1 (same data), and against scipy at
   n = 1,000 and 10,000, d = 8, 32 and 64.

Each time is the median of --repeat runs (default 5) with min–max, the tools alternated.

    python3 -m venv /tmp/mstvenv && /tmp/mstvenv/bin/pip install scikit-learn scipy quitefastmst
    cargo build --release
    /tmp/mstvenv/bin/python paper-repro/mst_vs_quitefastmst.py --out paper-repro/results/mst_vs_quitefastmst.md
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import header
from sklearn.datasets import make_blobs

ap = argparse.ArgumentParser()
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--out")
args = ap.parse_args()

PEER = """
import sys, time, json, numpy as np
tool, path, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
X = np.load(path)
if tool == "quitefastmst":
    import quitefastmst
    t = time.perf_counter(); quitefastmst.mst_euclid(X, M=m); s = time.perf_counter() - t
else:
    from scipy.cluster.hierarchy import linkage
    t = time.perf_counter(); linkage(X, method="single"); s = time.perf_counter() - t
print(json.dumps(s))
"""
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", RAYON_NUM_THREADS="1")


def clustr(cmd, path):
    t = time.perf_counter()
    subprocess.run([args.clustr] + cmd + [str(path), "--threads", "1", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t


def peer(tool, path, m=1):
    out = subprocess.run([sys.executable, "-c", PEER, tool, str(path), str(m)], check=True, capture_output=True,
                         text=True, env=ENV).stdout
    return json.loads(out)


def med(ts):
    return statistics.median(ts), min(ts), max(ts)


def fmt(s):
    return f"{s[0]:.3f} ({s[1]:.3f}–{s[2]:.3f})"


def side_by_side(runs):
    """Times of each named run, alternated, --repeat times."""
    times = {name: [] for name in runs}
    for _ in range(args.repeat):
        for name, run in runs.items():
            times[name].append(run())
    return {name: med(t) for name, t in times.items()}


out = header([1]) + [
    "Spanning trees: clustr's whole process against quitefastmst's `mst_euclid` alone and scipy's "
    "`linkage`, one thread, the same data in one run; median (min–max) seconds of "
    f"{args.repeat} runs, the tools alternated. Blobs: make_blobs(n, d, centers=20, random_state=0).", ""]
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    data = {}
    for n in (100_000, 400_000):
        for d in (2, 5):
            x, _ = make_blobs(n_samples=n, n_features=d, centers=20, random_state=0)
            data[n, d] = tmp / f"blobs_{n}_{d}.npy"
            np.save(data[n, d], x)
    for title, cmd, m in [("HDBSCAN, min_samples = M = 10", ["hdbscan", "--min-cluster-size", "10",
                                                               "--min-samples", "10"], 10),
                          ("Single linkage, M = 1", ["single-linkage", "--n-clusters", "2"], 1)]:
        out += [f"## {title}", "", "| n × d | clustr (whole process) | quitefastmst mst_euclid | ratio |",
                "|---|---:|---:|---:|"]
        growth = {}
        for (n, d), path in data.items():
            s = side_by_side({"clustr": lambda: clustr(cmd, path), "qfm": lambda: peer("quitefastmst", path, m)})
            growth[n, d] = s
            out.append(f"| {n:,} × {d} | {fmt(s['clustr'])} | {fmt(s['qfm'])} | "
                       f"{s['clustr'][0] / s['qfm'][0]:.2f}× |")
            print(out[-1], flush=True)
        out.append("")
        for d in (2, 5):
            g = [growth[400_000, d][t][0] / growth[100_000, d][t][0] for t in ("clustr", "qfm")]
            out.append(f"Growth 100k → 400k at d = {d}: clustr {g[0]:.2f}×, quitefastmst {g[1]:.2f}×.")
        out.append("")
    out += ["## Single linkage against scipy", "", "| n × d | clustr (whole process) | scipy linkage | ratio |",
            "|---|---:|---:|---:|"]
    for n in (1_000, 10_000):
        for d in (8, 32, 64):
            x, _ = make_blobs(n_samples=n, n_features=d, centers=10, random_state=0)
            path = tmp / f"sl_{n}_{d}.npy"
            np.save(path, x)
            s = side_by_side({"clustr": lambda: clustr(["single-linkage", "--n-clusters", "2"], path),
                              "scipy": lambda: peer("scipy", path)})
            out.append(f"| {n:,} × {d} | {fmt(s['clustr'])} | {fmt(s['scipy'])} | "
                       f"{s['clustr'][0] / s['scipy'][0]:.2f}× |")
            print(out[-1], flush=True)
text = "\n".join(out) + "\n"
if args.out:
    Path(args.out).write_text(text)
print(text)

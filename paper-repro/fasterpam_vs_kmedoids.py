"""Times `clustr fasterpam` against the Python `kmedoids` package's FasterPAM (Rust core) on
the same precomputed float64 matrix, from the same initial medoids, at the same thread
count, and checks that the losses agree. Prints a markdown table with the ratios.

    cargo build --release
    /tmp/refs/bin/pip install kmedoids scikit-learn
    /tmp/refs/bin/python paper-repro/fasterpam_vs_kmedoids.py --n 10000 --k 10 100 --threads 1 2

clustr's time is the fit phase it reports in --json (the matrix is read from .npy and
checked before that); kmedoids' is the call on the in-memory matrix. Best of --repeats.
"""
import argparse
import json
import subprocess
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import kmedoids
import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10000)
ap.add_argument("--d", type=int, default=10)
ap.add_argument("--k", type=int, nargs="+", default=[10, 100])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
args = ap.parse_args()

X, _ = make_blobs(args.n, args.d, centers=20, random_state=0)
D = pairwise_distances(X)
rows = []
with tempfile.TemporaryDirectory() as tmp:
    dp = Path(tmp) / "D.npy"
    np.save(dp, D)
    for k in args.k:
        start = sorted(np.random.default_rng(k).choice(args.n, k, replace=False).tolist())
        for t in args.threads:
            ours, theirs = [], []
            for _ in range(args.repeats):
                out = subprocess.run(
                    [args.clustr, "fasterpam", str(dp), "--precomputed", "--dtype", "f64", "--k", str(k),
                     "--medoids", ",".join(map(str, start)), "--threads", str(t), "--json", "--quiet"],
                    check=True, capture_output=True, text=True)
                v = json.loads(out.stdout)
                ours.append(v["seconds"]["fit"])
                t0 = time.perf_counter()
                r = kmedoids.fasterpam(D, np.array(start), max_iter=100, n_cpu=t)
                theirs.append(time.perf_counter() - t0)
            rows.append((k, t, min(ours), min(theirs), v["loss"], float(r.loss), v["n_swaps"], r.n_swap))

lines = [
    f"`clustr fasterpam` vs kmedoids {version('kmedoids')} `fasterpam`, {args.n} blobs points (d = {args.d}), "
    f"precomputed float64 matrix, same initial medoids, best of {args.repeats}.",
    "",
    "| k | threads | clustr fit (s) | kmedoids (s) | clustr / kmedoids | clustr loss | kmedoids loss | swaps (clustr / kmedoids) |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for k, t, a, b, la, lb, sa, sb in rows:
    lines.append(f"| {k} | {t} | {a:.3f} | {b:.3f} | {a / b:.2f} | {la:.6f} | {lb:.6f} | {sa} / {sb} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

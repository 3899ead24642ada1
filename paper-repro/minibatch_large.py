"""Mini-batch k-means on a .npy larger than the memory it is allowed: writes a 4 GB file of
blobs chunk by chunk (never whole in memory), runs `clustr minibatch-kmeans` on it under
/usr/bin/time -v and reports the peak resident memory, the time and the agreement with the
true blobs on a sample.

    cargo build --release
    /tmp/refs/bin/python paper-repro/minibatch_large.py --gb 4 --d 32 --k 16 --out paper-repro/results/minibatch_large.md
"""
import argparse
import json
import re
import subprocess
from pathlib import Path

from provenance import header

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--gb", type=float, default=4.0)
ap.add_argument("--d", type=int, default=32)
ap.add_argument("--k", type=int, default=16)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--path", default="/tmp/clustr_large.npy")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
args = ap.parse_args()

n = int(args.gb * 1e9) // (8 * args.d)
rng = np.random.default_rng(0)
centers = rng.uniform(-20, 20, size=(args.k, args.d))
path = Path(args.path)
labels_path = path.with_suffix(".truth.npy")
if not path.exists() or np.load(path, mmap_mode="r").shape != (n, args.d):
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, args.d))
    truth = np.lib.format.open_memmap(labels_path, mode="w+", dtype=np.int32, shape=(n,))
    step = 1 << 18
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        lab = rng.integers(0, args.k, hi - lo)
        out[lo:hi] = centers[lab] + rng.normal(scale=2.0, size=(hi - lo, args.d))
        truth[lo:hi] = lab
        out.flush()
    del out, truth
size = path.stat().st_size
lp = path.with_suffix(".labels.npy")
cmd = ["/usr/bin/time", "-v", args.clustr, "minibatch-kmeans", str(path), "--k", str(args.k), "--threads",
       str(args.threads), "--json", "--quiet", "--labels-out", str(lp)]
run = subprocess.run(cmd, capture_output=True, text=True, check=True)
v = json.loads(run.stdout)
peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", run.stderr).group(1)
truth = np.load(labels_path, mmap_mode="r")
ours = np.load(lp, mmap_mode="r")
sample = np.random.default_rng(1).choice(n, 200_000, replace=False)
sample.sort()
from sklearn.metrics import adjusted_rand_score
ari = adjusted_rand_score(truth[sample], ours[sample])
lines = header([args.threads]) + [
    f"`clustr minibatch-kmeans` on a {size / 1e9:.2f} GB .npy ({n} x {args.d} float64, k = {args.k}, "
    f"{args.threads} threads, defaults: batch 1024, max_no_improvement 10), under /usr/bin/time -v.",
    "",
    "| file size | peak resident memory | wall time | steps | epochs | inertia | ARI vs truth (200k sample) |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    f"| {size / 1e9:.2f} GB | {peak_kb / 1024:.0f} MiB | {wall} | {v['n_steps']} | {v['n_iter']} | {v['inertia']:.6e} | {ari:.4f} |",
    "",
    "Command: `" + " ".join(cmd[2:]) + "`",
]
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

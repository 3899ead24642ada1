"""DBSCAN and OPTICS, clustr against scikit-learn, side by side on the same data with one
thread: fit time (inside each process) and whole-process peak memory (/usr/bin/time -v), and
the agreement of the labels. Also DBSCAN on 2,000,000 2-d points (clustr only: scikit-learn
would store every neighbourhood).

    cargo build --release
    /tmp/refs/bin/python paper-repro/density_vs_sklearn.py --out paper-repro/results/density_vs_sklearn.md
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from provenance import header

import numpy as np
import sklearn
from sklearn.datasets import make_blobs

ap = argparse.ArgumentParser()
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--big", type=int, default=2_000_000)
ap.add_argument("--out")
args = ap.parse_args()
EARTH_KM = 6371.0088


def timed(cmd):
    run = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, check=True,
                         env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1)) / 1024
    return run.stdout, peak


SK = """
import sys, time, json, numpy as np
from sklearn.cluster import DBSCAN, OPTICS
X = np.load(sys.argv[2])
kind, params = sys.argv[1], json.loads(sys.argv[3])
t = time.perf_counter()
if kind == "dbscan":
    if params.get("metric") == "haversine":
        m = DBSCAN(eps=params["eps"] / 6371.0088, min_samples=params["min_samples"], metric="haversine",
                   algorithm="ball_tree").fit(np.radians(X))
    else:
        m = DBSCAN(eps=params["eps"], min_samples=params["min_samples"]).fit(X)
else:
    m = OPTICS(min_samples=params["min_samples"], max_eps=params["max_eps"], metric="minkowski", p=2,
               min_cluster_size=params["min_cluster_size"]).fit(X)
secs = time.perf_counter() - t
np.save(sys.argv[4], m.labels_)
print(json.dumps({"fit": secs}))
"""

rng = np.random.default_rng(5)
n, n_noise = 50_000, 15_000
lines = rng.uniform([34.0, -84.0], [36.5, -76.0], size=(40, 2))
direction = rng.normal(size=(40, 2))
direction /= np.linalg.norm(direction, axis=1, keepdims=True)
which = rng.integers(0, 40, n - n_noise)
along = rng.uniform(0, 0.08, n - n_noise)[:, None]
geo = lines[which] + along * direction[which] + rng.normal(scale=0.003, size=(n - n_noise, 2))
geo = np.vstack([geo, rng.uniform([33.8, -84.3], [36.6, -75.5], size=(n_noise, 2))])
three, _ = make_blobs(10_000, 2, centers=[[0, 0], [8, 8], [-8, 6]], cluster_std=[0.3, 1.0, 2.5], random_state=3)

rows = []
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    cases = [
        ("DBSCAN, 50,000 points, haversine, eps 0.4 km, min_samples 10", "dbscan", geo,
         {"eps": 0.4, "min_samples": 10, "metric": "haversine"},
         ["dbscan", "--metric", "haversine", "--eps", "0.4", "--min-samples", "10"]),
        ("OPTICS, 10,000 points of three densities, max_eps 3, min_samples 10, xi 0.05", "optics", three,
         {"min_samples": 10, "max_eps": 3.0, "min_cluster_size": 50},
         ["optics", "--min-samples", "10", "--max-eps", "3", "--min-cluster-size", "50"]),
    ]
    for title, kind, X, params, ours in cases:
        xp = tmp / f"{kind}.npy"
        np.save(xp, X)
        out, sk_peak = timed([sys.executable, "-c", SK, kind, str(xp), json.dumps(params), str(tmp / "sk.npy")])
        sk_fit = json.loads(out)["fit"]
        out, our_peak = timed([args.clustr] + ours[:1] + [str(xp)] + ours[1:] +
                              ["--threads", "1", "--json", "--quiet", "--labels-out", str(tmp / "ours.npy")])
        our_fit = json.loads(out)["seconds"]["fit"]
        same = np.array_equal(np.load(tmp / "sk.npy"), np.load(tmp / "ours.npy"))
        rows.append((title, our_fit, sk_fit, our_peak, sk_peak, "identical" if same else "DIFFER"))

    # 2,000,000 points: 60% in 200 Gaussian hotspots, 40% uniform; eps for ~50 neighbours.
    m = args.big
    centres = rng.uniform(0, 1, size=(200, 2))
    k = int(0.6 * m)
    big = np.vstack([centres[rng.integers(0, 200, k)] + rng.normal(scale=0.01, size=(k, 2)),
                     rng.uniform(0, 1, size=(m - k, 2))])
    sample = big[rng.choice(m, 2000, replace=False)]
    from sklearn.neighbors import KDTree
    tree = KDTree(big)
    eps = 0.004
    for _ in range(20):
        mean_hood = tree.query_radius(sample, eps, count_only=True).mean()
        if abs(mean_hood - 50) < 2:
            break
        eps *= (50 / mean_hood) ** 0.5
    bp = tmp / "big.npy"
    np.save(bp, big)
    out, peak = timed([args.clustr, "dbscan", str(bp), "--eps", repr(float(eps)), "--min-samples", "10", "--threads", "2",
                       "--json", "--quiet"])
    v = json.loads(out)
    big_row = (m, eps, mean_hood, v["seconds"]["fit"], peak, v["n_clusters"], v["n_noise"])

lines = header([1]) + [f"clustr vs scikit-learn {sklearn.__version__}, one thread, same data; time = the fit inside each process, "
         "memory = whole-process peak RSS (/usr/bin/time -v).", "",
         "| case | clustr fit (s) | sklearn fit (s) | time ratio | clustr peak (MiB) | sklearn peak (MiB) | memory ratio | labels |",
         "|---|---:|---:|---:|---:|---:|---:|---|"]
for title, a, b, pa, pb, same in rows:
    lines.append(f"| {title} | {a:.3f} | {b:.3f} | {a / b:.3f} | {pa:.0f} | {pb:.0f} | {pa / pb:.3f} | {same} |")
m, eps, hood, secs, peak, nc, nn = big_row
lines += ["", f"DBSCAN on {m:,} 2-d points (60% in 200 hotspots, 40% uniform), eps = {eps:.5f} (mean neighbourhood "
          f"{hood:.1f} points), min_samples 10, 2 threads: {secs:.2f} s, peak RSS {peak:.0f} MiB, {nc} clusters, "
          f"{nn:,} noise points."]
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

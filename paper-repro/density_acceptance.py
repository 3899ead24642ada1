"""Issue 43's two acceptance timings against scikit-learn, one thread, the same data: OPTICS
with an unbounded max_eps on 10,000 moons, and DBSCAN on 50,000 haversine points at eps 1 km.
clustr's whole process (wall time, reading the file included) against scikit-learn's fit alone;
the two alternate, 5 runs each; best, median and range. Labels (and for OPTICS the ordering,
reachabilities and predecessors) are compared.

    cargo build --release
    <venv with scikit-learn>/bin/python paper-repro/density_acceptance.py --out paper-repro/results/density_acceptance.md
"""
import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import header

import numpy as np
import sklearn
from sklearn.datasets import make_moons

ap = argparse.ArgumentParser()
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--out")
args = ap.parse_args()
EARTH_KM = 6371.0088
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}

SK = """
import sys, time, json, numpy as np
from sklearn.cluster import DBSCAN, OPTICS
X = np.load(sys.argv[2])
t = time.perf_counter()
if sys.argv[1] == "dbscan":
    m = DBSCAN(eps=1.0 / 6371.0088, min_samples=10, metric="haversine", algorithm="ball_tree").fit(np.radians(X))
else:
    m = OPTICS(min_samples=5).fit(X)
    np.save(sys.argv[3] + ".order.npy", m.ordering_)
    np.save(sys.argv[3] + ".reach.npy", m.reachability_)
    np.save(sys.argv[3] + ".pred.npy", m.predecessor_)
print(json.dumps({"fit": time.perf_counter() - t}))
np.save(sys.argv[3], m.labels_)
"""


def geo_points():
    """The haversine data of density_vs_sklearn.py: 35,000 points along 40 short roads
    (latitude, longitude in degrees), 15,000 uniform."""
    rng = np.random.default_rng(5)
    n, n_noise = 50_000, 15_000
    lines = rng.uniform([34.0, -84.0], [36.5, -76.0], size=(40, 2))
    direction = rng.normal(size=(40, 2))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    which = rng.integers(0, 40, n - n_noise)
    along = rng.uniform(0, 0.08, n - n_noise)[:, None]
    geo = lines[which] + along * direction[which] + rng.normal(scale=0.003, size=(n - n_noise, 2))
    return np.vstack([geo, rng.uniform([33.8, -84.3], [36.6, -75.5], size=(n_noise, 2))])


def stats(v):
    v = sorted(v)
    return f"{v[0]:.3f}", f"{np.median(v):.3f} ({v[0]:.3f}–{v[-1]:.3f})"


rows = []
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    cases = [
        ("OPTICS, 10,000 moons (noise 0.05), max_eps unbounded, min_samples 5", "optics",
         make_moons(10_000, noise=0.05, random_state=0)[0], ["optics"], "0.05"),
        ("DBSCAN, 50,000 points, haversine, eps 1 km, min_samples 10", "dbscan", geo_points(),
         ["dbscan", "--metric", "haversine", "--eps", "1", "--min-samples", "10"], "0.5"),
    ]
    for title, kind, X, ours, goal in cases:
        xp = tmp / f"{kind}.npy"
        np.save(xp, X)
        sk_times, our_times = [], []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, "-c", SK, kind, str(xp), str(tmp / "sk.npy")],
                                 capture_output=True, text=True, check=True, env=ENV).stdout
            sk_times.append(json.loads(out)["fit"])
            cmd = [args.clustr] + ours[:1] + [str(xp)] + ours[1:] + [
                "--threads", "1", "--quiet", "--labels-out", str(tmp / "ours.npy")]
            if kind == "optics":
                cmd += ["--reachability-out", str(tmp / "reach.csv")]
            t = time.perf_counter()
            subprocess.run(cmd, check=True, env=ENV)
            our_times.append(time.perf_counter() - t)
        same = np.array_equal(np.load(tmp / "sk.npy"), np.load(tmp / "ours.npy"))
        if kind == "optics":
            table = np.array([[float(v) for v in r] for r in list(csv.reader(open(tmp / "reach.csv")))[1:]])
            idx = table[:, 1].astype(int)
            same = same and np.array_equal(idx, np.load(tmp / "sk.npy.order.npy"))
            same = same and np.array_equal(table[:, 2], np.load(tmp / "sk.npy.reach.npy")[idx])
            same = same and np.array_equal(table[:, 4].astype(int), np.load(tmp / "sk.npy.pred.npy")[idx])
        (ob, om), (sb, sm) = stats(our_times), stats(sk_times)
        rows.append(f"| {title} | {ob} | {om} | {sb} | {sm} | {min(our_times) / min(sk_times):.3f} | "
                    f"{np.median(our_times) / np.median(sk_times):.3f} | ≤ {goal} | "
                    f"{'identical' if same else 'DIFFER'} |")

lines = header([1]) + [
    f"clustr's whole process (wall time) against scikit-learn {sklearn.__version__}'s fit alone, one thread, "
    f"the same data; {args.repeats} runs each, alternated. For OPTICS, 'identical' covers the labels, the "
    "ordering, the reachabilities and the predecessors, bit for bit.", "",
    "| case | clustr best (s) | clustr median (min–max) | sklearn best (s) | sklearn median (min–max) | "
    "ratio of bests | ratio of medians | goal | result |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|"] + rows
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

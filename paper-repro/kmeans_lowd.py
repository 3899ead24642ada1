"""k-means on low-dimensional data, in one process, side by side with scikit-learn: greedy
k-means++ seeding (clustr.kmeans_plusplus against sklearn.cluster.kmeans_plusplus) and Lloyd
iterations from the same centres (clustr.KMeans against sklearn's KMeans, algorithm "lloyd"),
at the same thread count, on the same data.

Needs the clustr Python package (pip install ./python) and scikit-learn with threadpoolctl in
the same environment, e.g. target/pyvenv after .ci/run:

    target/pyvenv/bin/python paper-repro/kmeans_lowd.py --out paper-repro/results/kmeans_lowd.md

Data: make_blobs(n, d, centers=k, cluster_std=4, random_state=0), float64. Seeding: both with
random_state=0 (clustr's generator is its own, so the rows differ; the work per step is the
same: 2 + ln k candidates, n distances each). Lloyd: from scikit-learn's kmeans_plusplus
centres, tol=0 and --iters iterations (a run reaching a fixed point earlier stops; each time
is divided by its own iteration count). The repeats alternate the libraries; each cell gives
the median and the min-max of --repeats runs, and the ratio of the medians (clustr /
scikit-learn: below 1 is faster).
"""
import argparse
import statistics
import time

import numpy as np
import sklearn
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from threadpoolctl import threadpool_limits

import clustr
from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--seed-n", type=int, default=100_000)
ap.add_argument("--seed-d", type=int, nargs="+", default=[2, 8, 32, 128])
ap.add_argument("--seed-k", type=int, nargs="+", default=[8, 100, 1000])
ap.add_argument("--lloyd", nargs="+", default=["8000x2x8", "10000x2x8", "10000x8x64", "100000x2x8",
                                              "100000x8x64", "100000x32x64", "200000x32x64", "50000x4x12"],
                help="shapes n x d x k for the Lloyd iterations")
ap.add_argument("--algorithms", nargs="+", default=["lloyd", "auto"])
ap.add_argument("--threads", type=int, nargs="+", default=[1])
ap.add_argument("--iters", type=int, default=10)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--skip-seeding", action="store_true")
ap.add_argument("--out")
args = ap.parse_args()


def cell(times):
    return statistics.median(times), min(times), max(times)


def fmt(times, unit=1e3):
    m, lo, hi = cell(times)
    return f"{m * unit:.3g} ({lo * unit:.3g}–{hi * unit:.3g})"


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


lines = []
for t in args.threads:
    if not args.skip_seeding:
        lines += [f"\n## Greedy k-means++, n = {args.seed_n:,}, {t} thread(s) (ms)\n",
                  "| d | k | scikit-learn | clustr | clustr / scikit-learn |", "|---|---|---|---|---|"]
        for d in args.seed_d:
            X, _ = make_blobs(args.seed_n, d, centers=max(args.seed_k), cluster_std=4.0, random_state=0)
            for k in args.seed_k:
                theirs, ours = [], []
                for _ in range(args.repeats):
                    with threadpool_limits(limits=t):
                        theirs.append(timed(lambda: kmeans_plusplus(X, k, random_state=0))[0])
                    ours.append(timed(lambda: clustr.kmeans_plusplus(X, k, random_state=0, n_threads=t))[0])
                ratio = cell(ours)[0] / cell(theirs)[0]
                lines.append(f"| {d} | {k} | {fmt(theirs)} | {fmt(ours)} | {ratio:.2f} |")
                print(lines[-1], flush=True)
    lines += [f"\n## Lloyd per iteration from the same centres, {t} thread(s) (ms per iteration)\n",
              "| n × d, k | iterations | scikit-learn lloyd | " + " | ".join(f"clustr {a}" for a in args.algorithms)
              + " | " + " | ".join(f"{a} / sklearn" for a in args.algorithms) + " | inertia equal |",
              "|---|---|---|" + "---|" * (2 * len(args.algorithms) + 1)]
    for shape in args.lloyd:
        n, d, k = (int(v) for v in shape.split("x"))
        X, _ = make_blobs(n, d, centers=k, cluster_std=4.0, random_state=0)
        init, _ = kmeans_plusplus(X, k, random_state=0)
        theirs, ours = [], {a: [] for a in args.algorithms}
        iters, same = set(), True
        for _ in range(args.repeats):
            with threadpool_limits(limits=t):
                s, km = timed(lambda: KMeans(k, init=init, n_init=1, algorithm="lloyd", tol=0,
                                             max_iter=args.iters).fit(X))
            theirs.append(s / km.n_iter_)
            iters.add(km.n_iter_)
            for a in args.algorithms:
                s, cm = timed(lambda: clustr.KMeans(k, init=init, n_init=1, algorithm=a, tol=0,
                                                    max_iter=args.iters, n_threads=t).fit(X))
                ours[a].append(s / cm.n_iter_)
                iters.add(cm.n_iter_)
                same &= bool(np.isclose(cm.inertia_, km.inertia_, rtol=1e-9))
        ratios = [cell(ours[a])[0] / cell(theirs)[0] for a in args.algorithms]
        lines.append(f"| {n:,} × {d}, {k} | {'/'.join(map(str, sorted(iters)))} | {fmt(theirs)} | "
                     + " | ".join(fmt(ours[a]) for a in args.algorithms) + " | "
                     + " | ".join(f"{r:.2f}" for r in ratios) + f" | {'yes' if same else 'NO'} |")
        print(lines[-1], flush=True)

text = "\n".join(["# k-means on low-dimensional data: clustr against scikit-learn", "", *header(args.threads),
                  f"scikit-learn {sklearn.__version__}, clustr {clustr.__version__}", *lines]) + "\n"
if args.out:
    open(args.out, "w").write(text)
print(text)

"""k-means over a grid of shapes (issue #40): time per iteration of clustr (Lloyd, Hamerly, Elkan
and auto) against scikit-learn's Lloyd, scikit-learn-intelex's Lloyd and faiss-cpu, from the
same initial centres, at the same thread count; and the whole-process time of the command line's
defaults (`clustr kmeans X --k K`: one greedy k-means++ run, then auto) against scikit-learn's
`KMeans(K).fit(X)` (n_init="auto": one k-means++ run, then Lloyd), summed over seeds.

Needs (installed by you, not by this script): numpy, scikit-learn, scikit-learn-intelex,
faiss-cpu, threadpoolctl and matplotlib in a virtual environment outside the repository, e.g.
`python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install scikit-learn==1.9.1
scikit-learn-intelex faiss-cpu threadpoolctl matplotlib`; and clustr built with
`cargo build --release`.

    /tmp/benchvenv/bin/python paper-repro/kmeans_grid.py \\
        --out paper-repro/results/kmeans_grid.md --plot paper-repro/results/kmeans_grid.png

Data: make_blobs(n, d, centers=k, cluster_std=4.0, random_state=0), float64 (faiss: the same points in float32,
its only type). Initial centres: scikit-learn's kmeans_plusplus(random_state=0). Every library
runs --iters iterations with tol = 0 (a run that stops earlier is divided by its own count);
clustr's time is the fit its --json reports (reading the .npy excluded), the others' their fit
call (faiss: `train`, no subsampling). Each cell is the median (min-max) of --repeats runs,
the libraries alternating. A cell whose work n·d·k exceeds --max-ndk is skipped (the time
budget of one run on this machine), as is Elkan where n·k exceeds --elkan-max-nk (its n × k
bounds).
"""
import argparse
import importlib.metadata
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import daal4py
import faiss
import numpy as np
import sklearn
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from sklearnex.cluster import KMeans as IntelKMeans
from threadpoolctl import threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
ap.add_argument("--d", type=int, nargs="+", default=[2, 8, 32, 128])
ap.add_argument("--k", type=int, nargs="+", default=[8, 64, 512])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--max-ndk", type=float, default=4e9)
ap.add_argument("--elkan-max-nk", type=float, default=1.1e8)
ap.add_argument("--whole-d", type=int, nargs="+", default=[2, 8], help="dimensions of the whole-process comparison")
ap.add_argument("--seeds", type=int, default=3, help="seeds summed in the whole-process comparison")
ap.add_argument("--whole-max-nk", type=float, default=1.1e8, help="largest n·k of the whole-process comparison")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
ap.add_argument("--plot")
args = ap.parse_args()

ALGS = ["lloyd", "hamerly", "elkan", "auto"]
LIBS = [f"clustr {a}" for a in ALGS] + ["scikit-learn lloyd", "sklearnex lloyd", "faiss-cpu (f32)"]


def med(v):
    return statistics.median(v)


def cell(v):
    return f"{med(v) * 1e3:.3g} ({min(v) * 1e3:.3g}–{max(v) * 1e3:.3g})"


def clustr_run(*argv):
    out = subprocess.run([args.clustr, "kmeans", *map(str, argv), "--json", "--quiet"], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def report():
    """The results so far: printed and written to --out (after every cell, so a stopped run keeps them)."""
    versions = (f"scikit-learn {sklearn.__version__}, scikit-learn-intelex {importlib.metadata.version('scikit-learn-intelex')}, "
                f"faiss-cpu {faiss.__version__}")
    lines = header(args.threads) + [
        "",
        f"{versions}. make_blobs(n, d, centers=k, cluster_std=4.0, random_state=0), float64 (faiss float32); "
        f"{args.iters} iterations from scikit-learn's k-means++ centres, tol = 0; median (min–max) of "
        f"{args.repeats} alternating runs. Ratios are medians over scikit-learn's Lloyd at the same point.",
        "",
        "## Time per iteration (ms)",
        "",
        "| n | d | k | threads | iterations | " + " | ".join(LIBS) + " | auto ran | lloyd / sklearn | auto / sklearn | "
        "lloyd / sklearnex |",
        "|---:|---:|---:|---:|---|" + "---|" * len(LIBS) + "---|---:|---:|---:|",
    ]
    for key, runs in per_iter.items():
        sk, ix = med(runs["scikit-learn lloyd"]), med(runs["sklearnex lloyd"])
        lines.append(f"| {key[0]:,} | {key[1]} | {key[2]} | {key[3]} | {'/'.join(map(str, sorted(iterations[key])))} | "
                     + " | ".join(cell(runs[lib]) if lib in runs else "–" for lib in LIBS)
                     + f" | {auto_ran.get(key, '?')} | {med(runs['clustr lloyd']) / sk:.2f} | "
                     f"{med(runs['clustr auto']) / sk:.2f} | {med(runs['clustr lloyd']) / ix:.2f} |")
    if skipped:
        lines += ["", "Skipped (n·d·k above --max-ndk): " + ", ".join(f"{n:,} × {d}, k = {k}" for n, d, k in skipped)
                  + "."]
    if whole:
        lines += ["", f"## Whole process, the CLI's defaults against scikit-learn's KMeans(k).fit, summed over "
                  f"{args.seeds} seeds (s)", "",
                  "`clustr kmeans x.npy --k K --seed S` (process start, reading the .npy, one greedy k-means++ run, "
                  "auto, writing the report) against `KMeans(K, random_state=S).fit(X)` timed in Python.", "",
                  "| n | d | k | threads | clustr | scikit-learn | clustr / scikit-learn |", "|---:|---:|---:|---:|---|---|---:|"]
        for key, (ours, theirs) in whole.items():
            lines.append(f"| {key[0]:,} | {key[1]} | {key[2]} | {key[3]} | {med(ours):.4g} ({min(ours):.4g}–"
                         f"{max(ours):.4g}) | {med(theirs):.4g} ({min(theirs):.4g}–{max(theirs):.4g}) | "
                         f"{med(ours) / med(theirs):.2f} |")
    text = "# k-means over a grid of shapes: clustr against scikit-learn, scikit-learn-intelex and faiss-cpu\n\n" \
           + "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)


per_iter = {}  # (n, d, k, threads) -> library -> list of seconds per iteration
iterations = {}  # (n, d, k, threads) -> the iteration counts seen
auto_ran = {}
skipped = []
whole = {}  # (n, d, k, threads) -> (clustr list, sklearn list), each a sum over seeds
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    for n in args.n:
        for d in args.d:
            for k in args.k:
                if n * d * k > args.max_ndk:
                    skipped.append((n, d, k))
                    continue
                X, _ = make_blobs(n, d, centers=k, cluster_std=4.0, random_state=0)
                X32 = X.astype(np.float32)
                init, _ = kmeans_plusplus(X, k, random_state=0)
                np.save(tmp / "x.npy", X)
                np.save(tmp / "c.npy", init)
                for t in args.threads:
                    runs = {lib: [] for lib in LIBS}
                    for _ in range(args.repeats):
                        for alg in ALGS:
                            if alg == "elkan" and n * k > args.elkan_max_nk:
                                continue
                            v = clustr_run(tmp / "x.npy", "--k", k, "--init", tmp / "c.npy", "--max-iter", args.iters,
                                           "--tol", 0, "--algorithm", alg, "--threads", t)
                            runs[f"clustr {alg}"].append(v["seconds"]["fit"] / max(v["n_iter"], 1))
                            iterations.setdefault((n, d, k, t), set()).add(v["n_iter"])
                            if alg == "auto":
                                auto_ran[(n, d, k, t)] = v["kmeans_algorithm"]
                        with threadpool_limits(limits=t):
                            t0 = time.perf_counter()
                            km = KMeans(k, init=init, n_init=1, max_iter=args.iters, tol=0, algorithm="lloyd").fit(X)
                            runs["scikit-learn lloyd"].append((time.perf_counter() - t0) / km.n_iter_)
                            iterations[(n, d, k, t)].add(km.n_iter_)
                        daal4py.daalinit(t)
                        t0 = time.perf_counter()
                        ik = IntelKMeans(k, init=init, n_init=1, max_iter=args.iters, tol=0, algorithm="lloyd").fit(X)
                        runs["sklearnex lloyd"].append((time.perf_counter() - t0) / max(ik.n_iter_, 1))
                        faiss.omp_set_num_threads(t)
                        fk = faiss.Kmeans(d, k, niter=args.iters, max_points_per_centroid=n, seed=0)
                        t0 = time.perf_counter()
                        fk.train(X32, init_centroids=init.astype(np.float32))
                        runs["faiss-cpu (f32)"].append((time.perf_counter() - t0) / args.iters)
                    per_iter[(n, d, k, t)] = {lib: v for lib, v in runs.items() if v}
                    sk = med(runs["scikit-learn lloyd"])
                    print(f"n={n} d={d} k={k} t={t}: " + ", ".join(f"{lib} {med(v) / sk:.2f}"
                                                               for lib, v in runs.items() if v), flush=True)
                    if d in args.whole_d and n * k <= args.whole_max_nk:
                        # The whole process with the CLI's defaults against scikit-learn's fit,
                        # each summed over the same seeds.
                        ours, theirs = [], []
                        for _ in range(args.repeats):
                            s = 0.0
                            for seed in range(args.seeds):
                                t0 = time.perf_counter()
                                clustr_run(tmp / "x.npy", "--k", k, "--seed", seed, "--threads", t)
                                s += time.perf_counter() - t0
                            ours.append(s)
                            s = 0.0
                            with threadpool_limits(limits=t):
                                for seed in range(args.seeds):
                                    t0 = time.perf_counter()
                                    KMeans(k, random_state=seed).fit(X)
                                    s += time.perf_counter() - t0
                            theirs.append(s)
                        whole[(n, d, k, t)] = (ours, theirs)
                        print(f"  whole process, {args.seeds} seeds: clustr {med(ours):.3f} s, scikit-learn "
                              f"{med(theirs):.3f} s ({med(ours) / med(theirs):.2f})", flush=True)
                    report()

report()
print(Path(args.out).read_text() if args.out else "")

if args.plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns, ds = sorted({key[0] for key in per_iter}), sorted({key[1] for key in per_iter})
    fig, axes = plt.subplots(len(ns), len(ds), figsize=(4.2 * len(ds), 3.4 * len(ns)), squeeze=False)
    for r, n in enumerate(ns):
        for c, d in enumerate(ds):
            ax = axes[r][c]
            for i, lib in enumerate(LIBS):
                for t, style in zip(args.threads, ["-", ":"]):
                    pts = sorted((key[2], med(runs[lib])) for key, runs in per_iter.items()
                                 if key[0] == n and key[1] == d and key[3] == t and lib in runs)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", color=f"C{i}",
                                linestyle=style, label=f"{lib}, {t} thr.")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("k (clusters)")
            ax.set_ylabel("ms per iteration")
            ax.set_title(f"n = {n:,}, d = {d}")
            ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7)
    fig.suptitle("k-means time per iteration (lower is better; solid: 1 thread, dotted: 2)")
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    fig.savefig(args.plot, dpi=100)

"""k-means at high k: time per iteration of clustr (each algorithm and auto), scikit-learn
(Lloyd and Elkan) and faiss-cpu, from the same initial centres, for the same number of
iterations, at the same thread count; and whether clustr's labels equal scikit-learn's.

Needs (installed by you, not by this script): numpy, scikit-learn, threadpoolctl, faiss-cpu and
matplotlib, e.g. `python3 -m venv /tmp/refs && /tmp/refs/bin/pip install scikit-learn
threadpoolctl faiss-cpu matplotlib`; and clustr built with `cargo build --release`.

    /tmp/refs/bin/python paper-repro/highk_kmeans.py --threads 1 2 \\
        --out paper-repro/results/highk_kmeans.md --plot paper-repro/results/highk_kmeans.png

Data: make_blobs(n, d, centers=k, random_state=0); initial centres: scikit-learn's
kmeans_plusplus(random_state=0) in float64, cast for float32 runs. Every library runs
`--iters` iterations with tol = 0 (a run that reaches a fixed point earlier stops; each time is
divided by that run's own iteration count, reported). clustr's time is the fit it reports in
--json (reading the .npy excluded), scikit-learn's the fit call, faiss's `train` (float32 only,
no subsampling: max_points_per_centroid = n). The repeats alternate the libraries; the table
gives the median and the min-max. Elkan (both libraries) keeps n x k bounds and is skipped where
n x k exceeds --elkan-max-nk.
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from threadpoolctl import threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=100_000)
ap.add_argument("--k", type=int, nargs="+", default=[16, 64, 256, 1024, 4096])
ap.add_argument("--d", type=int, nargs="+", default=[16, 64, 256])
ap.add_argument("--dtypes", nargs="+", default=["f32", "f64"], choices=["f32", "f64"])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--elkan-max-nk", type=float, default=1.1e8)
ap.add_argument("--no-faiss", action="store_true")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
ap.add_argument("--plot")
ap.add_argument("--from-table", help="only redraw --plot from the table of an earlier --out")
args = ap.parse_args()
if args.from_table:
    args.no_faiss = True
if not args.no_faiss:
    import faiss

ALGS = ["lloyd", "hamerly", "elkan", "auto"]
results = []  # dicts: d, k, dtype, threads, library, times (s/iter), iters, note


def median_range(v):
    return statistics.median(v), min(v), max(v)


with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    for d in ([] if args.from_table else args.d):
        for k in args.k:
            X, _ = make_blobs(args.n, d, centers=k, random_state=0)
            init, _ = kmeans_plusplus(X, k, random_state=0)
            np.save(tmp / "c.npy", init)
            for dtype in args.dtypes:
                Xt = X.astype(np.float32 if dtype == "f32" else np.float64)
                np.save(tmp / "x.npy", Xt)
                elkan_ok = args.n * k <= args.elkan_max_nk
                for t in args.threads:
                    runs = {}  # library -> (times, iterations)
                    labels = {}

                    def add(name, secs, iters):
                        runs.setdefault(name, ([], iters))[0].append(secs / max(iters, 1))

                    for rep in range(args.repeats):
                        for alg in ALGS:
                            if alg == "elkan" and not elkan_ok:
                                continue
                            out = subprocess.run(
                                [args.clustr, "kmeans", str(tmp / "x.npy"), "--k", str(k), "--init", str(tmp / "c.npy"),
                                 "--max-iter", str(args.iters), "--tol", "0", "--algorithm", alg, "--dtype", dtype,
                                 "--threads", str(t), "--json", "--quiet", "--labels-out", str(tmp / "l.npy")],
                                check=True, capture_output=True, text=True)
                            v = json.loads(out.stdout)
                            name = f"clustr {alg}" + (f" ({v['kmeans_algorithm']})" if alg == "auto" else "")
                            add(name, v["seconds"]["fit"], v["n_iter"])
                            if rep == 0 and alg == "lloyd":
                                labels["clustr"] = np.load(tmp / "l.npy")
                        with threadpool_limits(limits=t):
                            for alg in ["lloyd", "elkan"]:
                                if alg == "elkan" and not elkan_ok:
                                    continue
                                t0 = time.perf_counter()
                                km = KMeans(k, init=init.astype(Xt.dtype), n_init=1, max_iter=args.iters, tol=0,
                                            algorithm=alg).fit(Xt)
                                add(f"scikit-learn {alg}", time.perf_counter() - t0, km.n_iter_)
                                if rep == 0 and alg == "lloyd":
                                    labels["sklearn"] = km.labels_
                        if dtype == "f32" and not args.no_faiss:
                            faiss.omp_set_num_threads(t)
                            fk = faiss.Kmeans(d, k, niter=args.iters, max_points_per_centroid=args.n, seed=0)
                            t0 = time.perf_counter()
                            fk.train(Xt, init_centroids=init.astype(np.float32))
                            add("faiss-cpu", time.perf_counter() - t0, args.iters)
                    same = float((labels["clustr"] == labels["sklearn"]).mean())
                    for name, (times, iters) in runs.items():
                        results.append(dict(d=d, k=k, dtype=dtype, threads=t, library=name, times=times, iters=iters,
                                            same=same))
                    best3 = min(statistics.median(runs[f"clustr {a}"][0]) for a in ["lloyd", "hamerly", "elkan"]
                                if f"clustr {a}" in runs)
                    auto = next(statistics.median(v[0]) for n_, v in runs.items() if n_.startswith("clustr auto"))
                    print(f"d={d} k={k} {dtype} threads={t}: " + ", ".join(
                        f"{n_} {statistics.median(v[0]):.4f}" for n_, v in runs.items())
                        + f"; auto/best {auto / best3:.2f}; labels equal to sklearn {same:.6f}", flush=True)

if args.from_table:
    for line in Path(args.from_table).read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[0].isdigit():
            med = float(cells[5].split()[0])
            results.append(dict(d=int(cells[0]), k=int(cells[1]), dtype=cells[2], threads=int(cells[3]),
                                library=cells[4], times=[med], iters=int(cells[6]), same=None))
    args.d = sorted({r["d"] for r in results})
else:
    faiss_version = "" if args.no_faiss else f", faiss-cpu {faiss.__version__}"
    lines = header(args.threads) + [
        f"k-means time per iteration (s), n = {args.n} blobs, {args.iters} iterations from scikit-learn's k-means++ "
        f"centres, tol = 0; median (min-max) of {args.repeats} alternating runs. scikit-learn {sklearn.__version__}"
        f"{faiss_version}. 'same labels' is the fraction of clustr Lloyd's labels equal to scikit-learn Lloyd's in the "
        f"same dtype; 'auto / best' is clustr auto's median over the best of clustr's three algorithms.",
        "",
        "| d | k | dtype | threads | library | s / iteration | iterations | vs scikit-learn lloyd |",
        "|---:|---:|---|---:|---|---:|---:|---:|",
    ]
    summary = ["", "| d | k | dtype | threads | auto ran | auto / best of three | clustr lloyd / sklearn lloyd | "
               "clustr best / faiss | same labels |", "|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    cells = sorted({(r["d"], r["k"], r["dtype"], r["threads"]) for r in results})
    for cell in cells:
        rows = [r for r in results if (r["d"], r["k"], r["dtype"], r["threads"]) == cell]
        med = {r["library"]: statistics.median(r["times"]) for r in rows}
        sk = med.get("scikit-learn lloyd")
        for r in rows:
            m, lo, hi = median_range(r["times"])
            lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | {cell[3]} | {r['library']} | {m:.4f} ({lo:.4f}-{hi:.4f}) "
                         f"| {r['iters']} | {m / sk:.2f} |")
        auto_name = next(n for n in med if n.startswith("clustr auto"))
        best3 = min(med[f"clustr {a}"] for a in ["lloyd", "hamerly", "elkan"] if f"clustr {a}" in med)
        best = min(v for n, v in med.items() if n.startswith("clustr"))
        vs_faiss = f"{best / med['faiss-cpu']:.2f}" if "faiss-cpu" in med else "-"
        summary.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | {cell[3]} | {auto_name.split('(')[-1].rstrip(')')} | "
                       f"{med[auto_name] / best3:.2f} | {med['clustr lloyd'] / sk:.2f} | {vs_faiss} | {rows[0]['same']:.6f} |")
    text = "\n".join(lines + summary) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)

if args.plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    LIBRARIES = ["clustr lloyd", "clustr hamerly", "clustr elkan", "clustr auto", "scikit-learn lloyd",
                 "scikit-learn elkan", "faiss-cpu"]
    configs = sorted({(r["dtype"], r["threads"]) for r in results})
    fig, axes = plt.subplots(len(configs), len(args.d), figsize=(4.5 * len(args.d), 3.6 * len(configs)), squeeze=False)
    for row, (dtype, t) in enumerate(configs):
        for col, d in enumerate(args.d):
            ax = axes[row][col]
            for i, lib in enumerate(LIBRARIES):
                pts = sorted((r["k"], statistics.median(r["times"])) for r in results
                             if r["d"] == d and r["dtype"] == dtype and r["threads"] == t
                             and r["library"].split(" (")[0] == lib)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=lib, color=f"C{i}",
                            linestyle="-" if lib.startswith("clustr") else "--")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("k (number of clusters)")
            ax.set_ylabel("seconds per iteration")
            ax.set_title(f"d = {d}, {dtype}, {t} thread{'s' if t > 1 else ''}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"k-means time per iteration, n = {args.n} (lower is better)")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)

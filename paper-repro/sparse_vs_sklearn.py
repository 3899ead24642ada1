"""Sparse k-means and DBSCAN (issue #41): clustr against scikit-learn on a TF-IDF-like matrix —
k-means' time per Lloyd iteration from the same initial centres, the whole default fit, and
peak memory; DBSCAN's (cosine) whole fit and peak memory — at 1 and 2 threads, with the labels
of the two compared.

Needs (installed by you, not by this script): numpy, scipy, scikit-learn and clustr's Python
package in one virtual environment outside the repository, e.g. the project's own
`target/pyvenv` (`CARGO_TARGET_DIR=target/python target/pyvenv/bin/pip install ./python`).

    target/pyvenv/bin/python paper-repro/sparse_vs_sklearn.py --out paper-repro/results/sparse_kmeans.md

Data: n documents of `--terms` distinct terms each drawn from a Zipf law (s = 1.1) over d terms
(a random permutation of ranks), term counts weighted by smoothed idf and each row scaled to
unit L2 norm (scikit-learn's TfidfVectorizer defaults), float64, CSR with int32 indices.
Initial centres: k rows drawn with numpy's default_rng(1). Per iteration: the fit with
max_iter = 1 + --iters and tol = 0 minus the fit with max_iter = 1, divided by --iters (the
seeding, the final assignment and the call's fixed costs cancel), both libraries from the same
centres with algorithm="lloyd", alternating, --repeats times, median (min-max). Whole fit:
`KMeans(k, n_init=1, random_state=0).fit(X)` with each library's defaults (their k-means++
draws differ, so the iteration counts are reported beside the times). Peak memory: a fresh
process loads the matrix, resets its peak resident size (Linux: /proc/self/clear_refs), fits once
(same centres, 10 iterations) and reports how far the peak rose above the resident size before
the fit; beside it the matrix's own bytes, the centres' and the labels'. DBSCAN: the first
--dbscan-n rows, `DBSCAN(eps, min_samples, metric="cosine")` with each library limited to the
same threads (scikit-learn's n_jobs), --whole-repeats runs alternating, median (min-max). On the
Zipf matrix above no two documents share a topic, so at any useful eps every row is noise;
`--dbscan-data topics` draws the DBSCAN rows from `--topics` topics instead (each document takes
60 % of its terms from its topic's vocabulary of 4 × --terms terms, Zipf within it, the rest
from the background Zipf law; the same weighting), where DBSCAN finds clusters.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=100_000)
ap.add_argument("--d", type=int, default=50_000)
ap.add_argument("--terms", type=int, default=100, help="distinct terms per document")
ap.add_argument("--k", type=int, nargs="+", default=[20, 100])
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--whole-repeats", type=int, default=3, help="runs of the whole default fit")
ap.add_argument("--parts", nargs="+", default=["per-iteration", "whole", "memory", "dbscan"],
                choices=["per-iteration", "whole", "memory", "dbscan"], help="what to measure")
ap.add_argument("--dbscan-n", type=int, default=20_000, help="DBSCAN: the first rows of the matrix")
ap.add_argument("--dbscan-eps", type=float, default=0.5, help="DBSCAN: eps (cosine distance)")
ap.add_argument("--dbscan-min-samples", type=int, default=5)
ap.add_argument("--dbscan-data", choices=["zipf", "topics"], default="zipf",
                help="DBSCAN's rows: the first of the k-means matrix, or documents in topics")
ap.add_argument("--topics", type=int, default=50, help="--dbscan-data topics: how many")
ap.add_argument("--out")
args = ap.parse_args()


def tfidf(n, d, terms, seed=0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(d)
    rows, cols = [], []
    # draw Zipf ranks until each row holds `terms` distinct ones (or all d)
    want = min(terms, d)
    for start in range(0, n, 10_000):
        m = min(10_000, n - start)
        block = np.empty((m, want), dtype=np.int64)
        for i in range(m):
            seen = np.unique(rng.zipf(1.1, size=4 * want))
            seen = seen[seen <= d]
            while len(seen) < want:
                more = rng.zipf(1.1, size=4 * want)
                seen = np.unique(np.concatenate([seen, more[more <= d]]))
            block[i] = rng.permutation(seen)[:want] - 1
        rows.append(np.repeat(np.arange(start, start + m), want))
        cols.append(perm[block.ravel()])
    return weighted(np.concatenate(rows), np.concatenate(cols), n, d, rng)


def topical(n, d, terms, topics, seed=2):
    """Documents in topics: 60 % of each document's terms from its topic's vocabulary (Zipf
    ranks within it), the rest from the background Zipf law over all d terms."""
    rng = np.random.default_rng(seed)
    vocab = [rng.choice(d, size=4 * terms, replace=False) for _ in range(topics)]
    p = 1.0 / np.arange(1, 4 * terms + 1) ** 1.1
    p /= p.sum()
    own = int(0.6 * terms)
    rows, cols = [], []
    for i in range(n):
        background = rng.zipf(1.1, size=8 * terms)
        background = background[background <= d][: terms - own] - 1
        picked = np.concatenate([vocab[i % topics][rng.choice(4 * terms, size=own, p=p)], background])
        rows.append(np.full(len(picked), i))
        cols.append(picked)
    return weighted(np.concatenate(rows), np.concatenate(cols), n, d, rng)


def weighted(rows, cols, n, d, rng):
    """Term counts (geometric) at (rows, cols), duplicates summed, weighted by smoothed idf,
    rows scaled to unit L2 norm; CSR with int32 indices."""
    counts = rng.geometric(0.6, size=len(cols)).astype(np.float64)
    X = sp.csr_matrix((counts, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    idf = np.log((1 + n) / (1 + np.bincount(X.indices, minlength=d))) + 1
    X = (X @ sp.diags(idf)).tocsr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1 / norms) @ X
    X = X.tocsr()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


def fit(lib, k, init, max_iter, threads, X):
    if lib == "clustr":
        import clustr

        est = clustr.KMeans(k, init=init, n_init=1, max_iter=max_iter, tol=0, algorithm="lloyd", n_threads=threads)
    else:
        from sklearn.cluster import KMeans

        est = KMeans(k, init=init, n_init=1, max_iter=max_iter, tol=0, algorithm="lloyd")
    with threadpool_limits(threads):
        t = time.perf_counter()
        est.fit(X)
        return time.perf_counter() - t, est


def whole(lib, k, threads, X):
    if lib == "clustr":
        import clustr

        est = clustr.KMeans(k, n_init=1, random_state=0, n_threads=threads)
    else:
        from sklearn.cluster import KMeans

        est = KMeans(k, n_init=1, random_state=0)
    with threadpool_limits(threads):
        t = time.perf_counter()
        est.fit(X)
        return time.perf_counter() - t, est.n_iter_


def dbscan(lib, threads, X):
    kw = dict(eps=args.dbscan_eps, min_samples=args.dbscan_min_samples, metric="cosine")
    if lib == "clustr":
        import clustr

        est = clustr.DBSCAN(**kw, n_threads=threads)
    else:
        from sklearn.cluster import DBSCAN

        est = DBSCAN(**kw, n_jobs=threads)
    with threadpool_limits(threads):
        t = time.perf_counter()
        est.fit(X)
        return time.perf_counter() - t, est.labels_


PEAK = """
import sys, numpy as np, scipy.sparse as sp
from threadpoolctl import threadpool_limits
lib, what, threads, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
X = sp.load_npz(path).tocsr()
if what == "dbscan":
    n, eps, ms = int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
    X = X[:n]  # (the DBSCAN rows' own file holds exactly n)
    if lib == "clustr":
        import clustr
        est = clustr.DBSCAN(eps=eps, min_samples=ms, metric="cosine", n_threads=threads)
    else:
        from sklearn.cluster import DBSCAN
        est = DBSCAN(eps=eps, min_samples=ms, metric="cosine", n_jobs=threads)
else:
    k = int(what)
    init = X[np.random.default_rng(1).choice(X.shape[0], k, replace=False)].toarray()
    if lib == "clustr":
        import clustr
        est = clustr.KMeans(k, init=init, n_init=1, max_iter=10, tol=0, algorithm="lloyd", n_threads=threads)
    else:
        from sklearn.cluster import KMeans
        est = KMeans(k, init=init, n_init=1, max_iter=10, tol=0, algorithm="lloyd")
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
# (the peak reset to the current resident size: loading's transients do not count)
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS")
with threadpool_limits(threads):
    est.fit(X)
print(status("VmHWM") - before)
"""


def mib(b):
    return b / 2**20


def cell(values):
    return f"{statistics.median(values):.4g} ({min(values):.4g}–{max(values):.4g})"


t0 = time.perf_counter()
X = tfidf(args.n, args.d, args.terms)
gen_s = time.perf_counter() - t0
csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
lines = header(args.threads) + [
    f"# Sparse k-means and DBSCAN: clustr against scikit-learn",
    "",
    f"Data: {args.n:,} × {args.d:,} TF-IDF-like, {X.nnz:,} stored values ({X.nnz / args.n:.1f} per row), "
    f"CSR {mib(csr_bytes):.1f} MiB (float64 values, int32 indices); generated in {gen_s:.0f} s.",
    "",
]
import sklearn  # noqa: E402

lines += [f"scikit-learn {sklearn.__version__}; numpy {np.__version__}.", ""]
per_iter, wholes, peaks, agreement = [], [], [], []
with tempfile.TemporaryDirectory() as tmp:
    path = str(Path(tmp) / "x.npz")
    sp.save_npz(path, X, compressed=False)
    for k in args.k:
        init = X[np.random.default_rng(1).choice(args.n, k, replace=False)].toarray()
        for threads in args.threads:
            times = {"clustr": [], "sklearn": []}
            last = {}
            for _ in range(args.repeats if "per-iteration" in args.parts else 0):
                for lib in ["sklearn", "clustr"]:
                    t1, _ = fit(lib, k, init, 1, threads, X)
                    tn, est = fit(lib, k, init, 1 + args.iters, threads, X)
                    times[lib].append((tn - t1) / args.iters)
                    last[lib] = est
            if last:
                ratios = [c / s for c, s in zip(times["clustr"], times["sklearn"])]
                per_iter.append((k, threads, cell(times["clustr"]), cell(times["sklearn"]), cell(ratios)))
                a, b = last["clustr"], last["sklearn"]
                agreement.append((k, threads, bool((a.labels_ == b.labels_).all()), a.n_iter_, b.n_iter_,
                                  abs(a.inertia_ - b.inertia_) / b.inertia_))
            w = {"clustr": [], "sklearn": []}
            iters = {}
            for _ in range(args.whole_repeats if "whole" in args.parts else 0):
                for lib in ["sklearn", "clustr"]:
                    s, it = whole(lib, k, threads, X)
                    w[lib].append(s)
                    iters[lib] = it
            if iters:
                wholes.append((k, threads, cell(w["clustr"]), iters["clustr"], cell(w["sklearn"]), iters["sklearn"]))
            for lib in ["clustr", "sklearn"] if "memory" in args.parts else []:
                out = subprocess.run([sys.executable, "-c", PEAK, lib, str(k), str(threads), path],
                                     capture_output=True, text=True, check=True).stdout
                grown = float(out)
                base = csr_bytes + k * args.d * 8 + args.n * 8
                peaks.append((k, threads, lib, mib(grown), (csr_bytes + grown) / base))
            print(per_iter[-1:], wholes[-1:], peaks[-2:], flush=True)
    dbscans = []
    Xd = topical(args.dbscan_n, args.d, args.terms, args.topics) if args.dbscan_data == "topics" else X[: args.dbscan_n]
    dpath = str(Path(tmp) / "dbscan.npz")
    sp.save_npz(dpath, Xd, compressed=False)
    Xd_bytes = Xd.data.nbytes + Xd.indices.nbytes + Xd.indptr.nbytes
    for threads in args.threads if "dbscan" in args.parts else []:
        times, labels = {"clustr": [], "sklearn": []}, {}
        for _ in range(args.whole_repeats):
            for lib in ["sklearn", "clustr"]:
                s, labels[lib] = dbscan(lib, threads, Xd)
                times[lib].append(s)
        ratios = [c / s for c, s in zip(times["clustr"], times["sklearn"])]
        grown = {}
        for lib in ["clustr", "sklearn"]:
            out = subprocess.run([sys.executable, "-c", PEAK, lib, "dbscan", str(threads), dpath, str(args.dbscan_n),
                                  str(args.dbscan_eps), str(args.dbscan_min_samples)],
                                 capture_output=True, text=True, check=True).stdout
            grown[lib] = mib(float(out))
        a, b = labels["clustr"], labels["sklearn"]
        dbscans.append((threads, cell(times["clustr"]), cell(times["sklearn"]), cell(ratios), bool((a == b).all()),
                        int(b.max()) + 1, int((b == -1).sum()), grown["clustr"], grown["sklearn"]))
        print(dbscans[-1], flush=True)

if per_iter:
    lines += [
        "## Lloyd per iteration (seconds), same initial centres",
        "",
        "| k | threads | clustr | scikit-learn | clustr / scikit-learn |",
        "|---|---|---|---|---|",
    ] + [f"| {k} | {t} | {c} | {s} | {r} |" for k, t, c, s, r in per_iter] + [
        "",
        "Same start, " + f"{1 + args.iters} iterations: labels identical, iterations, relative inertia difference:",
        "",
    ] + [f"- k = {k}, {t} thread(s): labels identical {same}, iterations {ic} / {isk}, |Δinertia| / inertia {d:.1e}"
         for k, t, same, ic, isk, d in agreement] + [""]
if wholes:
    lines += [
        "## Whole default fit (seconds; each library's own k-means++ start, so iteration counts differ)",
        "",
        "| k | threads | clustr | iterations | scikit-learn | iterations |",
        "|---|---|---|---|---|---|",
    ] + [f"| {k} | {t} | {c} | {ic} | {s} | {isk} |" for k, t, c, ic, s, isk in wholes] + [""]
if peaks:
    lines += [
        "## Peak memory of a fit (10 iterations), beyond the loaded matrix",
        "",
        "Ratio: (CSR bytes + growth of the peak during the fit) / (CSR bytes + centres + labels).",
        "",
        "| k | threads | library | growth (MiB) | ratio |",
        "|---|---|---|---|---|",
    ] + [f"| {k} | {t} | {lib} | {g:.1f} | {r:.2f} |" for k, t, lib, g, r in peaks] + [""]
if dbscans:
    rows_from = (f"{args.dbscan_n:,} documents in {args.topics} topics (--dbscan-data topics)"
                 if args.dbscan_data == "topics" else f"the first {args.dbscan_n:,} rows")
    lines += [
        f"## DBSCAN, cosine (whole fit, seconds): {rows_from}, {Xd.nnz:,} stored values ({mib(Xd_bytes):.1f} MiB CSR), "
        f"eps = {args.dbscan_eps}, min_samples = {args.dbscan_min_samples}",
        "",
        "Peak: growth of the resident peak during the fit beyond the loaded matrix (MiB), as above.",
        "",
        "| threads | clustr | scikit-learn | clustr / scikit-learn | labels identical | clusters | noise | peak clustr | peak scikit-learn |",
        "|---|---|---|---|---|---|---|---|---|",
    ] + [f"| {t} | {c} | {s} | {r} | {same} | {k} | {noise} | {gc:.1f} | {gs:.1f} |"
         for t, c, s, r, same, k, noise, gc, gs in dbscans] + [""]
text = "\n".join(lines)
print(text)
if args.out:
    Path(args.out).write_text(text)

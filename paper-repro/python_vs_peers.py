"""clustr's Python package against its peers, in one Python process: scikit-learn, kmedoids and
(where it installs) scikit-learn-extra, on the same data, from the same start where the
algorithm has one, at the same thread count. Also each clustr fit called from Python against
the same fit by the CLI (`--json` fit seconds), which should be within 10 %.

    cargo build --release && pip install ./python   # into a venv with the references
    pip install -r python/tests/requirements.txt
    python paper-repro/python_vs_peers.py --threads 2 --out paper-repro/results/python_vs_peers.md \
        [--sklearn-extra-python VENV/bin/python]   # a venv with scikit-learn-extra, numpy<2, scikit-learn<1.6

Times: median (min–max) of --repeats runs. Peak memory: the process's high-water mark (VmHWM)
reset before each call through /proc/self/clear_refs, minus the resident size before it, so
it is what that call added. The DBSCAN table grows n on dense 2-d data until scikit-learn's
neighbourhood lists would exceed --sklearn-budget-gb (its peak grows 4× per doubling of n at
fixed eps); at that n scikit-learn runs in a child process whose address space is capped at
the budget (RLIMIT_AS), and the table says what happened. The Python-vs-CLI runs alternate
one Python fit and one CLI run, so drift of the machine falls on both.
"""
import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn
import sklearn.cluster as skc
import sklearn.mixture as skm
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score, pairwise_distances
from threadpoolctl import threadpool_limits

import clustr
from provenance import header

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--dbscan-n", type=int, nargs="+", default=[25_000, 50_000, 100_000, 200_000, 400_000, 800_000])
ap.add_argument("--dbscan-repeats", type=int, default=3)
ap.add_argument("--sklearn-budget-gb", type=float, default=6.0)
ap.add_argument("--sklearn-extra-python", help="an interpreter with scikit-learn-extra (numpy < 2)")
ap.add_argument("--clustr", default=str(Path(__file__).resolve().parents[1] / "target/release/clustr"))
ap.add_argument("--out")
args = ap.parse_args()
T = args.threads


def rss_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def measured(fn, repeats):
    """(result of the last call, list of seconds, peak MiB added by the calls)."""
    secs, peaks, out = [], [], None
    for _ in range(repeats):
        out = None
        Path("/proc/self/clear_refs").write_text("5")
        before = rss_kib("VmRSS")
        t0 = time.perf_counter()
        out = fn()
        secs.append(time.perf_counter() - t0)
        peaks.append((rss_kib("VmHWM") - before) / 1024)
    return out, secs, max(peaks)


def fmt(secs):
    return f"{statistics.median(secs):.3f} ({min(secs):.3f}–{max(secs):.3f})"


def ratio(a, b):
    ma, mb = statistics.median(a), statistics.median(b)
    return f"{ma / mb:.2f}"


def versus_cli(tmp, fit, sub, X, *flags):
    """(Python seconds, CLI fit seconds) of the same fit, the two interleaved run by run so
    that the machine's drift falls on both; the CLI's are its --json fit seconds (distances
    included for k-medoids)."""
    xp = Path(tmp) / "x.npy"
    np.save(xp, X)
    py, secs = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        fit()
        py.append(time.perf_counter() - t0)
        out = subprocess.run([args.clustr, sub, str(xp), "--threads", str(T), "--json", "--quiet", *flags],
                             check=True, capture_output=True, text=True)
        v = json.loads(out.stdout)
        secs.append(sum(s for k, s in v["seconds"].items() if k in ("fit", "distances")))
    return py, secs


def sklearn_dbscan_capped(tmp, X, eps, ms, budget_gb):
    """scikit-learn's DBSCAN in a child process whose address space is capped at the budget:
    what happens when its neighbourhood lists do not fit (measured, not predicted)."""
    xp = Path(tmp) / "dbscan.npy"
    np.save(xp, X)
    child = (
        "import resource, time, numpy as np\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({int(budget_gb * 2**30)}, {int(budget_gb * 2**30)}))\n"
        "from sklearn.cluster import DBSCAN\n"
        f"X = np.load({str(xp)!r}); t0 = time.perf_counter()\n"
        "try:\n"
        f"    DBSCAN(eps={eps}, min_samples={ms}, n_jobs={T}).fit(X); print('fitted', time.perf_counter() - t0)\n"
        "except MemoryError as e:\n"
        "    print('MemoryError after %.1f s' % (time.perf_counter() - t0))\n"
    )
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    return (r.stdout.strip() or r.stderr.strip().splitlines()[-1:] or ["exit %d" % r.returncode])


rows, cli_rows, notes = [], [], []
with threadpool_limits(limits=T), tempfile.TemporaryDirectory() as tmp:
    # k-means: the same k-means++ centres to both.
    X, _ = make_blobs(100_000, 32, centers=64, cluster_std=4.0, random_state=0)
    init, _ = skc.kmeans_plusplus(X, 64, random_state=0)
    ours, a, pa = measured(lambda: clustr.KMeans(64, init=init, n_threads=T).fit(X), args.repeats)
    ref, b, pb = measured(lambda: skc.KMeans(64, init=init, n_init=1, algorithm="lloyd").fit(X), args.repeats)
    rows.append(("k-means 100,000 × 32, k = 64 (same centres)", "scikit-learn KMeans(lloyd)", a, b, pa, pb,
                 f"ARI {adjusted_rand_score(ours.labels_, ref.labels_):.4f}, inertia ratio {ours.inertia_ / ref.inertia_:.6f}"))
    cli_rows.append(("KMeans 100,000 × 32, k = 64", *versus_cli(
        tmp, lambda: clustr.KMeans(64, random_state=3, n_threads=T).fit(X), "kmeans", X, "--k", "64", "--seed", "3")))

    # Gaussian mixture: the same starting parameters to both.
    X, _ = make_blobs(50_000, 8, centers=10, cluster_std=5.0, random_state=1)
    start = skm.GaussianMixture(10, max_iter=1, random_state=0).fit(X)
    init = dict(weights_init=start.weights_, means_init=start.means_, precisions_init=start.precisions_, max_iter=500)
    ours, a, pa = measured(lambda: clustr.GaussianMixture(10, n_threads=T, **init).fit(X), args.repeats)
    ref, b, pb = measured(lambda: skm.GaussianMixture(10, **init).fit(X), args.repeats)
    rows.append(("GMM full, 50,000 × 8, k = 10 (same start)", "scikit-learn GaussianMixture", a, b, pa, pb,
                 f"lower bound {ours.lower_bound_:.9f} / {ref.lower_bound_:.9f}, iterations {ours.n_iter_} / {ref.n_iter_}"))
    cli_rows.append(("GaussianMixture 50,000 × 8, k = 10", *versus_cli(
        tmp, lambda: clustr.GaussianMixture(10, random_state=3, n_threads=T).fit(X), "gmm", X, "--k", "10",
        "--seed", "3")))

    # k-medoids: FasterPAM from the same medoids, from points (distances included on both sides).
    X, _ = make_blobs(10_000, 8, centers=20, cluster_std=2.0, random_state=2)
    medoids = np.random.RandomState(0).choice(len(X), 20, replace=False)
    try:
        import kmedoids

        ours, a, pa = measured(lambda: clustr.KMedoids(20, init=medoids, n_threads=T).fit(X), args.repeats)
        ref, b, pb = measured(lambda: kmedoids.fasterpam(pairwise_distances(X), medoids, max_iter=100, n_cpu=T),
                              args.repeats)
        rows.append(("FasterPAM 10,000 × 8, k = 20 (same medoids, distances included)",
                     f"kmedoids {importlib.metadata.version('kmedoids')} fasterpam", a, b, pa, pb,
                     f"loss {ours.inertia_:.6f} / {ref.loss:.6f}, same medoids: {sorted(ours.medoid_indices_) == sorted(ref.medoids)}"))
    except ImportError:
        notes.append("kmedoids is not installed: no FasterPAM comparison.")
    cli_rows.append(("KMedoids fasterpam 10,000 × 8, k = 20", *versus_cli(
        tmp, lambda: clustr.KMedoids(20, random_state=3, n_threads=T).fit(X), "fasterpam", X, "--k", "20",
        "--seed", "3", "--dtype", "f64")))

    # CLARA-type on more points than scikit-learn-extra handles.
    X, _ = make_blobs(200_000, 8, centers=20, cluster_std=2.0, random_state=3)
    ours, a, pa = measured(lambda: clustr.KMedoids(20, method="fasterclara", random_state=0, n_threads=T).fit(X),
                           args.repeats)
    if args.sklearn_extra_python:
        # scikit-learn-extra 0.3.0 needs numpy < 2 and scikit-learn < 1.6, so it cannot share
        # this process; it runs in its own interpreter on the same data (time and peak from there).
        xp = Path(tmp) / "clara.npy"
        np.save(xp, X)
        child = (
            "import json, resource, sys, time, numpy as np\n"
            "from sklearn_extra.cluster import CLARA\n"
            f"X = np.load({str(xp)!r}); secs = []\n"
            f"for _ in range({args.repeats}):\n"
            "    t0 = time.perf_counter(); m = CLARA(20, random_state=0).fit(X); secs.append(time.perf_counter() - t0)\n"
            "print(json.dumps({'secs': secs, 'peak': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,\n"
            "                  'inertia': float(m.inertia_)}))\n"
        )
        try:
            r = json.loads(subprocess.run([args.sklearn_extra_python, "-c", child], check=True, capture_output=True,
                                          text=True, env={**os.environ, "OMP_NUM_THREADS": str(T), "OPENBLAS_NUM_THREADS": str(T)}).stdout)
            rows.append(("CLARA-type 200,000 × 8, k = 20", "scikit-learn-extra 0.3.0 CLARA (own process, numpy 1)",
                         a, r["secs"], pa, r["peak"],
                         f"loss {ours.inertia_:.1f} / {r['inertia']:.1f}; peer peak is its whole process"))
        except subprocess.CalledProcessError as e:
            notes.append(f"scikit-learn-extra CLARA failed: {e.stderr.strip().splitlines()[-1][:200]}")
    else:
        notes.append(f"scikit-learn-extra is not installable beside numpy 2 and scikit-learn >= 1.6 (give "
                     f"--sklearn-extra-python); clustr FasterCLARA on 200,000 × 8, k = 20: {fmt(a)} s.")
    cli_rows.append(("KMedoids fasterclara 200,000 × 8, k = 20", *versus_cli(
        tmp, lambda: clustr.KMedoids(20, method="fasterclara", random_state=3, n_threads=T).fit(X), "fasterclara",
        X, "--k", "20", "--seed", "3", "--dtype", "f64")))

    # DBSCAN on dense 2-d data at growing n (uniform square, fixed eps: neighbours grow with n).
    dbscan = []
    predicted = 0.0
    for n in args.dbscan_n:
        X = np.random.RandomState(n).rand(n, 2)
        eps, ms = 0.02, 50
        ours, a, pa = measured(lambda: clustr.DBSCAN(eps=eps, min_samples=ms, n_threads=T).fit(X),
                               args.dbscan_repeats)
        if predicted > args.sklearn_budget_gb * 1024:
            outcome = sklearn_dbscan_capped(tmp, X, eps, ms, args.sklearn_budget_gb)
            dbscan.append((n, a, None, pa, None, f"scikit-learn capped at {args.sklearn_budget_gb:g} GB "
                                                 f"(its lists would need ≈ {predicted / 1024:.1f} GB): {outcome}"))
            break
        ref, b, pb = measured(lambda: skc.DBSCAN(eps=eps, min_samples=ms, n_jobs=T).fit(X), args.dbscan_repeats)
        same = bool(np.array_equal(ours.labels_, ref.labels_))
        dbscan.append((n, a, b, pa, pb, f"labels equal: {same}"))
        predicted = 4 * pb
    X = np.random.RandomState(args.dbscan_n[-2]).rand(args.dbscan_n[-2], 2)
    cli_rows.append((f"DBSCAN {len(X):,} × 2", *versus_cli(
        tmp, lambda: clustr.DBSCAN(eps=0.02, min_samples=50, n_threads=T).fit(X), "dbscan", X, "--eps", "0.02",
        "--min-samples", "50")))

lines = header([T]) + [
    f"clustr {clustr.__version__} (Python) vs scikit-learn {sklearn.__version__} and peers, one Python process, "
    f"{T} threads each (threadpoolctl for the peers, n_threads for clustr). Seconds: median (min–max) of "
    f"{args.repeats} runs; peak: memory the call added (VmHWM − RSS before).",
    "",
    "| task | peer | clustr (s) | peer (s) | clustr / peer | clustr peak (MiB) | peer peak (MiB) | agreement |",
    "|---|---|---:|---:|---:|---:|---:|---|",
]
for task, peer, a, b, pa, pb, agree in rows:
    lines.append(f"| {task} | {peer} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} | {pa:.0f} | {pb:.0f} | {agree} |")
lines += ["", *[f"- {n}" for n in notes], "",
          f"DBSCAN, uniform points in the unit square, eps = 0.02, min_samples = 50 (about n·π·0.02² "
          f"neighbours each); median (min–max) of {args.dbscan_repeats} runs:", "",
          "| n | clustr (s) | scikit-learn (s) | clustr / sklearn | clustr peak (MiB) | scikit-learn peak (MiB) | note |",
          "|---:|---:|---:|---:|---:|---:|---|"]
for n, a, b, pa, pb, note in dbscan:
    if b is None:
        lines.append(f"| {n:,} | {fmt(a)} | — | — | {pa:.0f} | — | {note} |")
    else:
        lines.append(f"| {n:,} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} | {pa:.0f} | {pb:.0f} | {note} |")
lines += ["", "The same fit from Python and from the CLI (`--json` seconds: fit, plus distances for k-medoids; "
          "Python: the whole call, validation included), same seed and threads:", "",
          "| fit | Python (s) | CLI (s) | Python / CLI |", "|---|---:|---:|---:|"]
for task, py, c in cli_rows:
    lines.append(f"| {task} | {fmt(py)} | {fmt(c)} | {ratio(py, c)} |")
print("\n".join(lines))
if args.out:
    Path(args.out).write_text("\n".join(lines) + "\n")

"""scikit-learn's (and the hdbscan package's) own test modules run against clustr's estimators.

Each module is copied from the installed package, and right after its imports the classes under
test are rebound to clustr's (module-level helpers such as `k_means`, `hdbscan` or
`approximate_predict` and private functions stay the package's); then pytest runs it. Nothing of
the packages is kept in the repository. With --sparse only the tests whose id names sparse input
run (parametrised `sparse`, `csr`, `csc`, or with `sparse` in the test's name).

Prints, per module, the counts of passed, failed, skipped and xfailed tests and the failures;
--out writes the same as a results file (a table, then every failure by module); --junit keeps
pytest's reports. The pass rate counts the tests that ran to a verdict (passed + failed);
--require-total and --require-module make the exit status 1 when the rate over all modules, or
of any one module, is below the given fraction (CI: 0.9 and 0.8).

Needs scikit-learn, hdbscan, scipy, pytest and clustr's Python package in one environment, e.g.
the project's target/pyvenv (python/tests/requirements.txt):

    target/pyvenv/bin/python scripts/sklearn-suite.py --sparse
    target/pyvenv/bin/python scripts/sklearn-suite.py --module sklearn/cluster/tests/test_k_means.py
"""
import argparse
import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
import tempfile
from pathlib import Path


# module (package/path inside the installed package) -> the names rebound to clustr's classes
MODULES = {
    "sklearn/cluster/tests/test_k_means.py": ["KMeans", "MiniBatchKMeans"],
    "sklearn/cluster/tests/test_dbscan.py": ["DBSCAN"],
    "sklearn/cluster/tests/test_optics.py": ["OPTICS"],
    "sklearn/cluster/tests/test_hdbscan.py": ["HDBSCAN"],
    "sklearn/mixture/tests/test_gaussian_mixture.py": ["GaussianMixture"],
    "hdbscan/tests/test_hdbscan.py": ["HDBSCAN"],
}

ap = argparse.ArgumentParser()
ap.add_argument("--module", action="append", help="a module of MODULES (default: all)")
ap.add_argument("--sparse", action="store_true", help="only the tests of sparse input")
ap.add_argument("--junit", help="a folder for pytest's junit reports")
ap.add_argument("--keep", help="write the rebound copies into this folder (kept, to rerun with pytest)")
ap.add_argument("--show", type=int, default=40, help="failures listed per module")
ap.add_argument("--out", help="a results file (markdown) for the table and the failures")
ap.add_argument("--require-total", type=float, help="least pass rate over all modules (exit 1 below)")
ap.add_argument("--require-module", type=float, help="least pass rate of each module (exit 1 below)")
args = ap.parse_args()


def rebound(source, names):
    """`source` with `from clustr import NAMES` after its last top-level import."""
    tree = ast.parse(source)
    last = max(node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    lines = source.splitlines(keepends=True)
    binding = f"from clustr import {', '.join(names)}  # (rebound by scripts/sklearn-suite.py)\n"
    return "".join(lines[:last]) + binding + "".join(lines[last:])




def installed(module):
    """The file of `module` (package/path) in the installed package."""
    package, path = module.split("/", 1)
    return Path(importlib.import_module(package).__file__).parent / path


total = {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0, "error": 0}
rows, failed_tests = [], {}


def rate(counts):
    ran = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("error", 0)
    return counts.get("passed", 0) / ran if ran else 1.0


with tempfile.TemporaryDirectory() as scratch:
    tmp = args.keep or scratch
    Path(tmp).mkdir(parents=True, exist_ok=True)
    for module in args.module or MODULES:
        names = MODULES[module]
        copy = Path(tmp) / module.replace("/tests/", "_").replace("/", "_")
        copy.write_text(rebound(installed(module).read_text(), names))
        # (scikit-learn's conftest as a plugin: its fixtures, such as global_random_seed)
        cmd = [sys.executable, "-m", "pytest", str(copy), "-q", "-rfE", "-p", "no:cacheprovider", "-p", "sklearn.conftest",
               "--rootdir", tmp, "-W", "ignore::DeprecationWarning"]
        if args.sparse:
            cmd += ["-k", "sparse or csr or csc"]
        if args.junit:
            Path(args.junit).mkdir(parents=True, exist_ok=True)
            cmd += ["--junitxml", str(Path(args.junit) / (copy.stem + ".xml"))]
        run = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        out = run.stdout
        counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|error)", out.splitlines()[-1] if out else "")}
        for k in total:
            total[k] += counts.get(k, 0)
        print(f"{module} ({', '.join(names)} rebound{', sparse tests' if args.sparse else ''}): "
              + ", ".join(f"{counts.get(k, 0)} {k}" for k in total))
        failures = [l for l in out.splitlines() if l.startswith(("FAILED", "ERROR"))]
        for line in failures[: args.show]:
            print("   ", line[:220])
        if len(failures) > args.show:
            print(f"    ... and {len(failures) - args.show} more")
        rows.append((module, names, counts))
        failed_tests[module] = failures
print("total: " + ", ".join(f"{v} {k}" for k, v in total.items()) + f"; pass rate {rate(total):.1%}")

if args.out:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper-repro"))
    from provenance import header

    import clustr

    lines = ["# scikit-learn's and the hdbscan package's tests against clustr's estimators", ""]
    lines += header(["every core"]) + [
        f"- packages: clustr {clustr.__version__}, "
        + ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("scikit-learn", "hdbscan", "numpy", "scipy")),
        "",
        "Pass rate: passed / (passed + failed) — the tests that ran to a verdict. The reasons for "
        "each remaining failure are in python/README.md.",
        "",
        "| module | rebound | passed | failed | skipped | xfailed | pass rate |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for module, names, counts in rows:
        lines.append(f"| {module} | {', '.join(names)} | " + " | ".join(str(counts.get(k, 0)) for k in ("passed", "failed", "skipped", "xfailed")) + f" | {rate(counts):.1%} |")
    lines.append("| **all** | | " + " | ".join(str(total[k]) for k in ("passed", "failed", "skipped", "xfailed")) + f" | **{rate(total):.1%}** |")
    lines += ["", "## Failures", ""]
    for module, failures in failed_tests.items():
        if failures:
            lines += [f"### {module}", ""] + [f"- `{l.split(' ', 1)[1].split(' - ')[0]}`" for l in failures] + [""]
    Path(args.out).write_text("\n".join(lines) + "\n")

short = [m for m, _, c in rows if args.require_module is not None and rate(c) < args.require_module]
if short or (args.require_total is not None and rate(total) < args.require_total):
    print(f"below the required pass rate: total {rate(total):.1%}" + (f"; modules {', '.join(short)}" if short else ""))
    sys.exit(1)

"""scikit-learn's own test modules run against clustr's estimators.

Each module is copied from the installed scikit-learn, and right after its imports the classes
under test are rebound to clustr's (module-level helpers such as `k_means` and private
functions stay scikit-learn's); then pytest runs it. With --sparse only the tests whose id names
sparse input run (parametrised `sparse`, `csr`, `csc`, or with `sparse` in the test's name).
Prints, per module, the counts of passed, failed, skipped and xfailed tests, and the failures'
first lines; --junit keeps pytest's reports.

Needs scikit-learn, scipy, pytest and clustr's Python package in one environment, e.g. the
project's target/pyvenv:

    target/pyvenv/bin/python scripts/sklearn-suite.py --sparse
    target/pyvenv/bin/python scripts/sklearn-suite.py --module cluster/tests/test_k_means.py
"""
import argparse
import ast
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import sklearn

# module (relative to the sklearn package) -> the names rebound to clustr's classes
MODULES = {
    "cluster/tests/test_k_means.py": ["KMeans", "MiniBatchKMeans"],
    "cluster/tests/test_dbscan.py": ["DBSCAN"],
    "cluster/tests/test_optics.py": ["OPTICS"],
    "cluster/tests/test_hdbscan.py": ["HDBSCAN"],
}

ap = argparse.ArgumentParser()
ap.add_argument("--module", action="append", help="a module of MODULES (default: all)")
ap.add_argument("--sparse", action="store_true", help="only the tests of sparse input")
ap.add_argument("--junit", help="a folder for pytest's junit reports")
ap.add_argument("--show", type=int, default=40, help="failures listed per module")
args = ap.parse_args()


def rebound(source, names):
    """`source` with `from clustr import NAMES` after its last top-level import."""
    tree = ast.parse(source)
    last = max(node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    lines = source.splitlines(keepends=True)
    binding = f"from clustr import {', '.join(names)}  # (rebound by scripts/sklearn-suite.py)\n"
    return "".join(lines[:last]) + binding + "".join(lines[last:])


root = Path(sklearn.__file__).parent
total = {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0, "error": 0}
with tempfile.TemporaryDirectory() as tmp:
    for module in args.module or MODULES:
        names = MODULES[module]
        copy = Path(tmp) / Path(module).name
        copy.write_text(rebound((root / module).read_text(), names))
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
print("total: " + ", ".join(f"{v} {k}" for k, v in total.items()))

"""Exports scikit-learn's bundled copies of four classic data sets to CSV (run once).

    python datasets/export.py   # needs scikit-learn
"""
import csv
from pathlib import Path

from sklearn import datasets

HERE = Path(__file__).parent
for name, loader in [
    ("iris", datasets.load_iris),
    ("wine", datasets.load_wine),
    ("breast_cancer", datasets.load_breast_cancer),
    ("digits", datasets.load_digits),
]:
    b = loader()
    names = list(getattr(b, "feature_names", [])) or [f"x{j}" for j in range(b.data.shape[1])]
    with open(HERE / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names + ["target"])
        for row, t in zip(b.data, b.target):
            w.writerow([repr(float(v)) if not float(v).is_integer() else str(int(v)) for v in row] + [int(t)])
    print(name, b.data.shape)

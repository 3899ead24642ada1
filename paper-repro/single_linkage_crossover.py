"""Single linkage: Borůvka's algorithm over a k-d tree against Prim's over every pair
(`clustr single-linkage --index kdtree` / `--index brute`), whole process, one thread, best
of 2, on 10 Gaussian blobs (std 2) and one standard Gaussian, n = 10,000 to 40,000 and
d = 6 to 16: where single linkage's `auto` switches from one to the other.

    target/pyvenv/bin/python paper-repro/single_linkage_crossover.py target/release/clustr
"""
import subprocess, sys, tempfile, time

import numpy as np
from sklearn.datasets import make_blobs
B = sys.argv[1]
PATH = tempfile.mkdtemp() + "/x.npy"
for n in [10000, 20000, 40000]:
    for d in [6, 8, 10, 12, 16]:
        for kind in ["blobs", "gaussian"]:
            X = make_blobs(n, n_features=d, centers=10, cluster_std=2.0, random_state=0)[0] if kind=="blobs" else np.random.default_rng(0).normal(size=(n, d))
            np.save(PATH, X)
            out=[]
            for i in ["kdtree", "brute"]:
                ts=[]
                for _ in range(2):
                    t=time.perf_counter(); subprocess.run([B,"single-linkage",PATH,"--n-clusters","10","--index",i,"--threads","1","--quiet"],check=True); ts.append(time.perf_counter()-t)
                out.append(min(ts))
            print(n, d, kind, "kd %.3f brute %.3f ratio brute/kd %.2f" % (out[0], out[1], out[1]/out[0]), flush=True)

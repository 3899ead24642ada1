#!/usr/bin/env python3
"""Scaling model of clustr's distributed algorithms over MPI (issue #10).

Per iteration (a Lloyd or EM iteration, a power-k-means iteration, a mini-batch step, a CLARA
sample), each of P processes does its share of the work on n/P rows, the work every process
repeats (the replicated part: a mini-batch update, CLARA's inner FasterPAM on the gathered
sample), and C collectives. clustr's collectives are all-gathers (sums are then added in rank
order, so every process and every run get the same bits): a process receives P times the
message. With latency ALPHA and bandwidth BETA per link:

    T(P) = T_par / P + T_rep + C * ALPHA * log2(P) + P * m * 8 / BETA

T_par and T_rep come from the one- and two-process runs measured on this 2-core machine
(paper-repro/mpi_compare.sh; the figures are in paper-repro/results/mpi_scaling.md); m is the
number of f64 values one process sends per iteration. ALPHA and BETA are assumptions for an
InfiniBand / 100 GbE cluster. Usage: python3 paper-repro/mpi_model.py > table.md
"""
import math

ALPHA = 2e-6  # s per collective step
BETA = 10e9  # bytes / s

# name: (rows n of the measurement, seconds per iteration on one process (T1), on two (T2),
#        replicated work? (then T_rep is fitted as 2*T2 - T1), collectives per iteration,
#        values sent per process per iteration as a function of (n, P), description)
ALGORITHMS = {
    "k-means (Lloyd), 2 M x 32, k = 16": (
        2_000_000, 20.23 / 36, 11.13 / 36, False, 4,
        lambda n, p: 16 * 32 + 16 + 2,
        "k x d sums, k counts, inertia, changed flag",
    ),
    "GMM (full covariances), 1 M x 16, k = 16": (
        1_000_000, None, None, False, 4,
        lambda n, p: 16 * (1 + 16 + 16 * 16) + 1,
        "n_k, k x d sums, k x d x d scatter, lower bound",
    ),
    "mini-batch k-means, 1 M x 16, k = 16, batch 1024 (per step)": (
        1_000_000, None, None, True, 2,
        lambda n, p: 3 + math.ceil(1024 / p * 1.1) * (16 + 2),
        "batch rows held (+ label, distance), padded to the largest share",
    ),
    "FasterCLARA, 1 M x 16, k = 16, sample 144 (per sample)": (
        1_000_000, None, None, True, 6,
        lambda n, p: 3 + math.ceil(144 / p * 1.2) * 16 + 3 + 16 * 16 + 1,
        "sample rows, medoid rows, loss",
    ),
    "RFF-KPKM, 1 M x 16, D = 256, k = 16": (
        1_000_000, 167.71 / 200, 84.23 / 200, False, 1,
        lambda n, p: 16 * 256 + 16 + 2,
        "k x D weighted sums, k weight totals, objective, hardness",
    ),
}


def exchange(p, c, m):
    return 0.0 if p == 1 else c * ALPHA * math.log2(p) + p * m * 8 / BETA


def table(name, n, t1, t2, replicated, c, values, what, measured=None):
    t_rep = max(0.0, 2 * t2 - t1 - 2 * exchange(2, c, values(n, 2))) if replicated else 0.0
    t_par = t1 - t_rep
    print(f"### {name}\n")
    print(f"Exchanged per iteration: {what}. T1 = {t1 * 1e3:.2f} ms per iteration, of which "
          f"replicated {t_rep * 1e3:.2f} ms" + (" (fitted from the 2-process run)" if replicated else "") + ".\n")
    print("| P | strong: ms / iteration | speed-up | efficiency | weak (n/P = n): efficiency | exchange per iteration |")
    print("|---|---|---|---|---|---|")
    for p in [1, 2, 4, 8, 16, 32, 64]:
        x = exchange(p, c, values(n, p))
        strong = t_par / p + t_rep + x
        weak = t_par + t_rep + exchange(p, c, values(n * p, p))
        # weak scaling: every process keeps n rows; replicated work per iteration is unchanged
        print(f"| {p} | {strong * 1e3:.2f} | {t1 / strong:.1f}x | {t1 / strong / p:.0%} | "
              f"{t1 / weak:.0%} | {x * 1e6:.0f} us |")
    print()


if __name__ == "__main__":
    import sys
    measured = {}
    # Optional overrides: NAME_PREFIX=T1,T2 (seconds per iteration)
    for arg in sys.argv[1:]:
        key, vals = arg.split("=")
        measured[key] = tuple(float(v) for v in vals.split(","))
    for name, (n, t1, t2, rep, c, values, what) in ALGORITHMS.items():
        for key, (a, b) in measured.items():
            if name.startswith(key):
                t1, t2 = a, b
        if t1 is None:
            print(f"### {name}\n\n(not measured: pass '{name.split(',')[0]}=T1,T2')\n")
            continue
        table(name, n, t1, t2, rep, c, values, what)

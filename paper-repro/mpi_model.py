#!/usr/bin/env python3
"""Scaling model of clustr's distributed algorithms over MPI (issue #10).

Per iteration (a Lloyd or EM iteration, a power-k-means iteration, a mini-batch step, a CLARA
sample), each of P processes does its share of the work on n/P rows, the work every process
repeats (the replicated part: a mini-batch update, CLARA's inner FasterPAM on the gathered
sample), and C collectives. clustr's collectives are all-gathers (sums are then added in rank
order, so every process and every run get the same bits): a process receives P times the
message. With latency ALPHA and bandwidth BETA per link:

    T(P) = T_par / P + T_rep + C * ALPHA * log2(P) + P * m * 8 / BETA

T1 = T_par + T_rep comes from the runs measured on this 2-core machine (paper-repro/
mpi_compare.sh; figures in paper-repro/results/mpi_scaling.md); m is the number of 8-byte
values one process sends per iteration. ALPHA and BETA are assumptions for an
InfiniBand / 100 GbE cluster. Usage: python3 paper-repro/mpi_model.py > table.md
"""
import math

ALPHA = 2e-6  # s per collective step
BETA = 10e9  # bytes / s

# name: (rows n of the measurement, T1 = seconds per iteration on one process, T_rep = the part
#        every process repeats, collectives per iteration, values one process sends per
#        iteration as a function of P, what is exchanged). Measured with
#        paper-repro/mpi_compare.sh (one thread per process, this 2-core machine).
ALGORITHMS = {
    "k-means (Lloyd), 2 M x 32, k = 16": (
        17.35 / 36, 0.0, 4,
        lambda p: 16 * 32 + 16 + 2,
        "k x d sums, k counts, inertia, changed flag",
    ),
    "GMM (full covariances), 1 M x 16, k = 16": (
        11.14 / 7, 0.0, 4,
        lambda p: 16 * (1 + 16 + 16 * 16) + 1,
        "n_k, k x d sums, k x d x d scatter, lower bound",
    ),
    # per step; T1 and T_rep from an instrumented run at k = 128 (nearest centres of the batch:
    # 0.399 ms per step, split; gathering and the update: 0.040 ms, repeated everywhere)
    "mini-batch k-means, 1 M x 16, k = 128, batch 1024 (per step)": (
        0.439e-3, 0.040e-3, 2,
        lambda p: 3 + math.ceil(1024 / p * 1.1) * (16 + 2),
        "the batch rows a process holds with their labels and distances, padded to the largest share",
    ),
    # per sample; T_rep fitted from the two-process run (2 T2 - T1: FasterPAM on the sample)
    "FasterCLARA, 1 M x 16, k = 16, sample 144 (per sample)": (
        0.68 / 5, 2 * 0.36 / 5 - 0.68 / 5, 6,
        lambda p: 3 + math.ceil(144 / p * 1.2) * 16 + 3 + 16 * 16 + 1,
        "sample rows, medoid rows, loss",
    ),
    "RFF-KPKM, 1 M x 16, D = 256, k = 16": (
        174.60 / 200, 0.0, 2,
        lambda p: 2 * (16 * 256 + 16 + 2) + 1,
        "per-element maxima, then the integer sums of the k x D weighted sums, k weight totals, objective, hardness",
    ),
}


def exchange(p, c, m):
    return 0.0 if p == 1 else c * ALPHA * math.log2(p) + p * m * 8 / BETA


def table(name, t1, t_rep, c, values, what):
    t_par = t1 - t_rep
    print(f"### {name}\n")
    print(f"Exchanged per iteration: {what}. T1 = {t1 * 1e3:.3f} ms per iteration, of which "
          f"{t_rep * 1e3:.3f} ms repeated on every process.\n")
    print("| P | strong scaling: ms / iteration | speed-up | efficiency | weak scaling (same rows per process): efficiency | exchange per iteration |")
    print("|---|---|---|---|---|---|")
    for p in [1, 2, 4, 8, 16, 32, 64]:
        x = exchange(p, c, values(p))
        strong = t_par / p + t_rep + x
        weak = t1 + exchange(p, c, values(p))
        print(f"| {p} | {strong * 1e3:.3f} | {t1 / strong:.1f}x | {t1 / strong / p:.0%} | "
              f"{t1 / weak:.0%} | {x * 1e6:.0f} us |")
    print()


if __name__ == "__main__":
    print(f"Assumed: latency {ALPHA * 1e6:.0f} us per collective step, bandwidth {BETA / 1e9:.0f} GB/s.\n")
    for name, (t1, t_rep, c, values, what) in ALGORITHMS.items():
        table(name, t1, t_rep, c, values, what)

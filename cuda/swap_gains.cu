// FastPAM1's candidate deltas for a batch of swap candidates (issue #8): the O(n) scan of
// src/kmedoids/swap.rs (State::candidate_deltas) for many candidates at once, one thread
// block per candidate. The eager FasterPAM loop and FastPAM1/FastPAM2 consume the results on
// the host.
//
// The points come grouped by their nearest medoid: members[offsets[m] .. offsets[m + 1]] are
// the points whose nearest medoid is at position m (ascending), and near_d / seco_d hold
// their nearest and second-nearest dissimilarities in the same order, so every warp reads
// them contiguously. Warp w handles medoid positions w, w + warps, ...: its lanes stride over
// the medoid's points and the warp adds its lanes' sums with shuffles, so each delta is
// summed in an order fixed by the launch, never by atomics: the results are the same on
// every run. The shared gain of adding the candidate (acc) is summed over the block's
// threads in a fixed tree. Contributions are computed and summed in double, as the CPU's.
//
// Inputs: rows + row_start[b] is candidate b's row of the dissimilarity (n values);
// removal[m] is the removal loss of medoid position m. Outputs per candidate: the best
// position (lowest on ties) and its delta, and all k deltas (nc x k) when want_deltas != 0.
// Dynamic shared memory: k doubles.

#define GAIN_THREADS 256

template <typename T>
__device__ void swap_gains(const T *__restrict__ rows, const long long *__restrict__ row_start,
                           int nc, int k, const int *__restrict__ members,
                           const int *__restrict__ offsets, const T *__restrict__ near_d,
                           const T *__restrict__ seco_d, const double *__restrict__ removal,
                           int want_deltas, double *__restrict__ deltas, int *__restrict__ best_pos,
                           double *__restrict__ best_delta) {
    extern __shared__ double delta_sh[];
    __shared__ double acc_sh[GAIN_THREADS];
    int b = blockIdx.x;
    if (b >= nc) return;
    const T *row = rows + row_start[b];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    double acc = 0.0;
    for (int m = warp; m < k; m += warps) {
        double dm = 0.0;
        int end = offsets[m + 1];
        for (int j = offsets[m] + lane; j < end; j += 32) {
            T dox = row[members[j]];
            T nd = near_d[j], sd = seco_d[j];
            if (dox < nd) {
                acc += (double)dox - (double)nd;
                dm += (double)nd - (double)sd;
            } else if (dox < sd) {
                dm += (double)dox - (double)sd;
            }
        }
        for (int off = 16; off > 0; off >>= 1) dm += __shfl_down_sync(0xffffffffu, dm, off);
        if (lane == 0) delta_sh[m] = removal[m] + dm;
    }
    acc_sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) acc_sh[threadIdx.x] += acc_sh[threadIdx.x + s];
        __syncthreads();
    }
    acc = acc_sh[0];
    if (want_deltas)
        for (int m = threadIdx.x; m < k; m += blockDim.x)
            deltas[(long long)b * k + m] = delta_sh[m] + acc;
    if (threadIdx.x == 0) {
        int bi = 0;
        double bv = delta_sh[0] + acc;
        for (int m = 1; m < k; ++m) {
            double v = delta_sh[m] + acc;
            if (v < bv) {
                bv = v;
                bi = m;
            }
        }
        best_pos[b] = bi;
        best_delta[b] = bv;
    }
}

#define SWAP_GAINS(T, NAME)                                                                     \
    extern "C" __global__ void __launch_bounds__(GAIN_THREADS) NAME(                            \
        const T *rows, const long long *row_start, int nc, int k, const int *members,           \
        const int *offsets, const T *near_d, const T *seco_d, const double *removal,            \
        int want_deltas, double *deltas, int *best_pos, double *best_delta) {                                    \
        swap_gains<T>(rows, row_start, nc, k, members, offsets, near_d, seco_d, removal,        \
                      want_deltas, deltas, best_pos, best_delta);                                            \
    }

SWAP_GAINS(float, swap_gains_f32)
SWAP_GAINS(double, swap_gains_f64)

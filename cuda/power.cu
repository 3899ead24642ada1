// Random Fourier features and the power k-means iteration (issue #8), for clustr's CUDA
// backend: the same formulas as src/kernel/rff.rs and src/kernel/power.rs (Features::step),
// the weights in double.
//
// rff_map:            z[i][f] = scale * cos(sum_c x[i][c] * omega[f][c] + offset[f])
// rff_epilogue:       the same after cuBLAS's GEMM: z[i][f] = scale * cos(z[i][f] + offset[f])
// power_distances:    (one warp per row) d[i][j] = max(|z_i|^2 + |c_j|^2 - 2 z_i.c_j, 0)
// power_weights:      (one warp per row) the MM weights of each row (power_weights in power.rs), its power mean
//                     and hardness (largest weight's share)
// power_block_sums:   per block of `block` rows, in row order: sum_i w[i][j] z[i][c] (k x dim),
//                     sum_i w[i][j] (k), sum_i objective_i, sum_i hardness_i: the partials
//                     the host adds with reproducible_sum, as the CPU's blocks.

#define POWER_MAX_K 64

template <typename T>
__device__ void rff_map(const T *__restrict__ x, const T *__restrict__ omega,
                        const T *__restrict__ offset, T *__restrict__ z, int n, int d, int nf,
                        T scale) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)n * nf) return;
    int i = (int)(t / nf), f = (int)(t % nf);
    const T *xi = x + (long long)i * d;
    const T *of = omega + (long long)f * d;
    T acc = 0;
    for (int c = 0; c < d; ++c) acc += xi[c] * of[c];
    z[t] = (T)cos((double)acc + (double)offset[f]) * scale;
}

template <typename T>
__device__ void rff_epilogue(T *__restrict__ z, const T *__restrict__ offset, long long total, int nf,
                             T scale) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    z[t] = (T)cos((double)z[t] + (double)offset[t % nf]) * scale;
}

// One warp per row: the lanes stride over the coordinates (coalesced reads of z) and add
// their partial dot products with shuffles, so every lane ends with the row's k squared
// distances.
template <typename T>
__device__ __forceinline__ void row_distances(const T *__restrict__ zi, double norm,
                                              const T *__restrict__ centers,
                                              const double *__restrict__ center_norms, int dim,
                                              int k, int lane, double *out) {
    for (int j = 0; j < k; ++j) {
        const T *cj = centers + (long long)j * dim;
        T dot = 0;
        for (int c = lane; c < dim; c += 32) dot += zi[c] * cj[c];
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        out[j] = fmax(norm + center_norms[j] - 2.0 * (double)dot, 0.0);
    }
}

template <typename T>
__device__ void power_distances(const T *__restrict__ z, const double *__restrict__ norms,
                                const T *__restrict__ centers,
                                const double *__restrict__ center_norms, int n, int dim, int k,
                                double *__restrict__ d) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (i >= n) return;
    double di[POWER_MAX_K];
    row_distances(z + i * dim, norms[i], centers, center_norms, dim, k, lane, di);
    if (lane == 0)
        for (int j = 0; j < k; ++j) d[i * k + j] = di[j];
}

template <typename T>
__device__ void power_weights(const T *__restrict__ z, const double *__restrict__ norms,
                              const T *__restrict__ centers, const double *__restrict__ center_norms,
                              int n, int dim, int k, double s, double *__restrict__ w,
                              double *__restrict__ objective, double *__restrict__ hard) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (i >= n) return;
    double d[POWER_MAX_K];
    row_distances(z + i * dim, norms[i], centers, center_norms, dim, k, lane, d);
    if (lane != 0) return;
    if (isinf(s)) {
        // s = -inf, the k-means limit: the hard assignment to the nearest (lowest index among
        // equals) centroid, as power_weights in power.rs.
        int nearest = 0;
        for (int j = 1; j < k; ++j)
            if (d[j] < d[nearest]) nearest = j;
        for (int j = 0; j < k; ++j) w[i * k + j] = j == nearest ? 1.0 : 0.0;
        objective[i] = d[nearest];
        hard[i] = 1.0;
        return;
    }
    double top = 0.0, lo = __longlong_as_double(0x7ff0000000000000LL); // +inf
    for (int j = 0; j < k; ++j) {
        top = fmax(top, d[j]);
        lo = fmin(lo, d[j]);
    }
    double guard = 1e-12 * top + 2.2250738585072014e-308;
    double mn = lo + guard, sum = 0.0;
    double *wi = w + i * k;
    for (int j = 0; j < k; ++j) {
        double r = (d[j] + guard) / mn;
        double rs = exp(s * log(r));
        wi[j] = rs / r;
        sum += rs;
    }
    double mean = sum / (double)k;
    double common = pow(mean, 1.0 / s - 1.0) / (double)k;
    double wmax = 0.0, wsum = 0.0;
    for (int j = 0; j < k; ++j) {
        wi[j] *= common;
        wmax = fmax(wmax, wi[j]);
        wsum += wi[j];
    }
    objective[i] = mn * pow(mean, 1.0 / s);
    hard[i] = wmax / wsum;
}

template <typename T>
__device__ void power_block_sums(const T *__restrict__ z, const double *__restrict__ w,
                                 const double *__restrict__ objective,
                                 const double *__restrict__ hard, int n, int dim, int k, int block,
                                 double *__restrict__ out) {
    int b = blockIdx.x;
    int width = k * dim + k + 2;
    int t = blockIdx.y * blockDim.x + threadIdx.x;
    if (t >= width) return;
    int start = b * block, end = min(n, start + block);
    double acc = 0.0;
    if (t < k * dim) {
        int j = t / dim, c = t % dim;
        for (int i = start; i < end; ++i) acc += w[(long long)i * k + j] * (double)z[(long long)i * dim + c];
    } else if (t < k * dim + k) {
        int j = t - k * dim;
        for (int i = start; i < end; ++i) acc += w[(long long)i * k + j];
    } else if (t == k * dim + k) {
        for (int i = start; i < end; ++i) acc += objective[i];
    } else {
        for (int i = start; i < end; ++i) acc += hard[i];
    }
    out[(long long)b * width + t] = acc;
}

#define POWER_KERNELS(T, S)                                                                     \
    extern "C" __global__ void rff_map_##S(const T *x, const T *omega, const T *offset, T *z,   \
                                           int n, int d, int nf, T scale) {                     \
        rff_map<T>(x, omega, offset, z, n, d, nf, scale);                                       \
    }                                                                                           \
    extern "C" __global__ void rff_epilogue_##S(T *z, const T *offset, long long total, int nf, \
                                                T scale) {                                      \
        rff_epilogue<T>(z, offset, total, nf, scale);                                           \
    }                                                                                           \
    extern "C" __global__ void power_distances_##S(const T *z, const double *norms,             \
                                                   const T *centers, const double *center_norms, \
                                                   int n, int dim, int k, double *d) {          \
        power_distances<T>(z, norms, centers, center_norms, n, dim, k, d);                      \
    }                                                                                           \
    extern "C" __global__ void power_weights_##S(const T *z, const double *norms,               \
                                                 const T *centers, const double *center_norms,  \
                                                 int n, int dim, int k, double s, double *w,    \
                                                 double *objective, double *hard) {             \
        power_weights<T>(z, norms, centers, center_norms, n, dim, k, s, w, objective, hard);    \
    }                                                                                           \
    extern "C" __global__ void power_block_sums_##S(const T *z, const double *w,                \
                                                    const double *objective, const double *hard, \
                                                    int n, int dim, int k, int block,           \
                                                    double *out) {                              \
        power_block_sums<T>(z, w, objective, hard, n, dim, k, block, out);                      \
    }

POWER_KERNELS(float, f32)
POWER_KERNELS(double, f64)

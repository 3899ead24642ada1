// Pairwise distances and nearest-centre assignment for clustr's CUDA backend (issue #8),
// compiled at run time with NVRTC. Same metrics and conventions as the CPU backend
// (src/backend/cpu.rs, src/metric.rs): squared Euclidean clamped at 0, cosine in [0, 2] with
// 0 between two zero vectors and 1 between a zero and a non-zero vector, haversine in km on
// (latitude, longitude) rows in degrees, computed in double precision.
//
// Metric codes (src/backend/cuda.rs keeps the same table):
//   0 sqeuclidean, 1 euclidean, 2 manhattan, 3 cosine, 4 minkowski(p), 5 chebyshev, 6 haversine

#define TILE 16

template <typename T> struct Acc {
    T a;  // sum of (x - y)^2, |x - y|, |x - y|^p, max |x - y|, or x.y for cosine
    T nx; // cosine: |x|^2
    T ny; // cosine: |y|^2
};

template <typename T>
__device__ __forceinline__ void accumulate(Acc<T> &s, T x, T y, int metric, double p) {
    T diff = x - y;
    switch (metric) {
    case 0:
    case 1:
        s.a += diff * diff;
        break;
    case 2:
        s.a += fabs(diff);
        break;
    case 3:
        s.a += x * y;
        s.nx += x * x;
        s.ny += y * y;
        break;
    case 4:
        s.a += (T)pow((double)fabs(diff), p);
        break;
    case 5:
        s.a = fmax(s.a, (T)fabs(diff));
        break;
    default:
        break;
    }
}

template <typename T> __device__ __forceinline__ T finish(const Acc<T> &s, int metric, double p) {
    switch (metric) {
    case 0:
        return fmax(s.a, (T)0);
    case 1:
        return sqrt(fmax(s.a, (T)0));
    case 3: {
        bool zx = s.nx == (T)0, zy = s.ny == (T)0;
        if (zx && zy) return (T)0;
        if (zx || zy) return (T)1;
        T c = s.a / (sqrt(s.nx) * sqrt(s.ny));
        return fmin(fmax((T)1 - c, (T)0), (T)2);
    }
    case 4:
        return (T)pow((double)s.a, 1.0 / p);
    default:
        return s.a;
    }
}

__device__ __forceinline__ double haversine_km(double lat1, double lon1, double lat2, double lon2) {
    const double rad = 3.14159265358979323846 / 180.0;
    double p1 = lat1 * rad, p2 = lat2 * rad;
    double dphi = sin((p2 - p1) * 0.5), dlam = sin((lon2 - lon1) * rad * 0.5);
    double h = dphi * dphi + cos(p1) * cos(p2) * dlam * dlam;
    h = fmin(fmax(h, 0.0), 1.0);
    return 2.0 * 6371.0088 * asin(sqrt(h));
}

// out[i * ld_out + j] = d(x[i], y[j]) for i < nx, j < ny; rows of x and y are contiguous with
// d columns. Tiles of TILE x TILE outputs; the coordinates go through shared memory in chunks
// of TILE columns.
template <typename T>
__device__ void pairwise(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ out,
                         int nx, int ny, int d, long long ld_out, int metric, double p) {
    __shared__ T xs[TILE][TILE + 1];
    __shared__ T ys[TILE][TILE + 1];
    int i = blockIdx.y * TILE + threadIdx.y;
    int j = blockIdx.x * TILE + threadIdx.x;
    if (metric == 6) {
        if (i < nx && j < ny) {
            out[(long long)i * ld_out + j] = (T)haversine_km((double)x[(long long)i * 2], (double)x[(long long)i * 2 + 1],
                                                             (double)y[(long long)j * 2], (double)y[(long long)j * 2 + 1]);
        }
        return;
    }
    Acc<T> s = {(T)0, (T)0, (T)0};
    for (int c0 = 0; c0 < d; c0 += TILE) {
        int ix = blockIdx.y * TILE + threadIdx.y, cx = c0 + threadIdx.x;
        xs[threadIdx.y][threadIdx.x] = (ix < nx && cx < d) ? x[(long long)ix * d + cx] : (T)0;
        int jy = blockIdx.x * TILE + threadIdx.y;
        ys[threadIdx.y][threadIdx.x] = (jy < ny && cx < d) ? y[(long long)jy * d + cx] : (T)0;
        __syncthreads();
        int width = min(TILE, d - c0);
        for (int c = 0; c < width; ++c) {
            accumulate(s, xs[threadIdx.y][c], ys[threadIdx.x][c], metric, p);
        }
        __syncthreads();
    }
    if (i < nx && j < ny) out[(long long)i * ld_out + j] = finish(s, metric, p);
}

template <typename T>
__device__ T distance(const T *a, const T *b, int d, int metric, double p) {
    if (metric == 6) return (T)haversine_km((double)a[0], (double)a[1], (double)b[0], (double)b[1]);
    Acc<T> s = {(T)0, (T)0, (T)0};
    for (int c = 0; c < d; ++c) accumulate(s, a[c], b[c], metric, p);
    // Ranking by squared distance is the same as by distance; the caller takes the root.
    return finish(s, metric == 1 ? 0 : metric, p);
}

// For each row of x: the nearest centre (lowest index on ties) and the second nearest
// (second = -1 when k = 1). Euclidean ranks by squared distances and returns their roots.
template <typename T>
__device__ void nearest_two(const T *__restrict__ x, const T *__restrict__ centres, int n, int k, int d,
                            int metric, double p, int *__restrict__ first, T *__restrict__ first_d,
                            int *__restrict__ second, T *__restrict__ second_d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const T *a = x + (long long)i * d;
    int b1 = -1, b2 = -1;
    T d1 = (T)0, d2 = (T)0;
    for (int c = 0; c < k; ++c) {
        T v = distance(a, centres + (long long)c * d, d, metric, p);
        if (b1 < 0 || v < d1) {
            b2 = b1;
            d2 = d1;
            b1 = c;
            d1 = v;
        } else if (b2 < 0 || v < d2) {
            b2 = c;
            d2 = v;
        }
    }
    if (metric == 1) {
        d1 = sqrt(d1);
        d2 = sqrt(d2);
    }
    first[i] = b1;
    first_d[i] = d1;
    second[i] = b2;
    second_d[i] = d2;
}

extern "C" __global__ void pairwise_f32(const float *x, const float *y, float *out, int nx, int ny, int d,
                                        long long ld_out, int metric, double p) {
    pairwise<float>(x, y, out, nx, ny, d, ld_out, metric, p);
}

extern "C" __global__ void pairwise_f64(const double *x, const double *y, double *out, int nx, int ny, int d,
                                        long long ld_out, int metric, double p) {
    pairwise<double>(x, y, out, nx, ny, d, ld_out, metric, p);
}

extern "C" __global__ void nearest_two_f32(const float *x, const float *centres, int n, int k, int d, int metric,
                                           double p, int *first, float *first_d, int *second, float *second_d) {
    nearest_two<float>(x, centres, n, k, d, metric, p, first, first_d, second, second_d);
}

extern "C" __global__ void nearest_two_f64(const double *x, const double *centres, int n, int k, int d, int metric,
                                           double p, int *first, double *first_d, int *second, double *second_d) {
    nearest_two<double>(x, centres, n, k, d, metric, p, first, first_d, second, second_d);
}

// The epilogue of the GEMM form of squared Euclidean distances, in place: `out` holds
// -2 xc_i.yc_j (cuBLAS, on rows centred on the mean of y) and becomes
// max(out + |xc_i|^2 + |yc_j|^2, 0), recomputed directly where cancellation could cost
// accuracy (value <= tau (|xc_i|^2 + |yc_j|^2)), then its root when `root` (Euclidean): the
// CPU backend's GEMM form (src/backend/cpu.rs).
template <typename T>
__device__ void sq_epilogue(T *__restrict__ out, const T *__restrict__ xc, const T *__restrict__ yc,
                            const T *__restrict__ nx, const T *__restrict__ ny, int nb, int n_y,
                            int d, T tau, int root) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)nb * n_y) return;
    int i = (int)(t / n_y), j = (int)(t % n_y);
    T v = fmax(out[t] + nx[i] + ny[j], (T)0);
    if (v <= tau * (nx[i] + ny[j])) {
        const T *a = xc + (long long)i * d, *b = yc + (long long)j * d;
        T s = 0;
        for (int c = 0; c < d; ++c) {
            T diff = a[c] - b[c];
            s += diff * diff;
        }
        v = s;
    }
    out[t] = root ? sqrt(v) : v;
}

extern "C" __global__ void sq_epilogue_f32(float *out, const float *xc, const float *yc, const float *nx,
                                           const float *ny, int nb, int n_y, int d, float tau, int root) {
    sq_epilogue<float>(out, xc, yc, nx, ny, nb, n_y, d, tau, root);
}

extern "C" __global__ void sq_epilogue_f64(double *out, const double *xc, const double *yc, const double *nx,
                                           const double *ny, int nb, int n_y, int d, double tau, int root) {
    sq_epilogue<double>(out, xc, yc, nx, ny, nb, n_y, d, tau, root);
}

// out[idx[t]] = 0 for t < m: the zero self-dissimilarities of a matrix or of candidates' rows.
template <typename T> __device__ void set_zero(T *__restrict__ out, const long long *__restrict__ idx, int m) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < m) out[idx[t]] = (T)0;
}

extern "C" __global__ void set_zero_f32(float *out, const long long *idx, int m) { set_zero<float>(out, idx, m); }
extern "C" __global__ void set_zero_f64(double *out, const long long *idx, int m) { set_zero<double>(out, idx, m); }

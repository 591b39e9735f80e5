/* The synchrotron corrections on the GPU (the context's first GPU), the same
 * algorithms as the CPU's (src/parbeam/cpu/stripes_cpu.c, paganin_cpu.c;
 * docs/synchrotron.md): dezinger, stripe removal by sorting (Vo et al. 2018)
 * and by the Fourier-wavelet filter (Muench et al. 2009), Paganin's filter
 * (Paganin et al. 2002) with cuFFT. Host arrays in and out: the sorting
 * filter and Paganin's in batches of slices (images) with asynchronous
 * copies, the others a slice at a time. */
#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "gpu/host_transfer.h"
#include "filter/filter.h"
#include "parbeam/cuda/parbeam_cuda.h"

#include <math.h>
#include <string.h>
/* No NVTX ranges in thrust/CUB: NVTX's loader reads the environment
 * (NVTX_INJECTION64_PATH), and the library reads none (tests/check_no_hooks.sh). */
#define CCCL_DISABLE_NVTX
#include <cub/device/device_segmented_sort.cuh>

__device__ static inline int clampi(int i, int n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

__device__ static inline long long reflect_edge(long long i, long long n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

/* Index i of the periodic even extension of n samples (period 2n, mirrored
 * between samples), as stripes_cpu.c's mirror(). */
__device__ static inline long long mirror(long long i, long long n) {
  i %= 2 * n;
  if (i < 0) i += 2 * n;
  return i < n ? i : 2 * n - 1 - i;
}

/* The median of v[0 .. n) (n odd, at most 255): the value with as many
 * values below as above, by counting (no sort of the window); a zero
 * unsigned, as the CPU's (ctr__zero_unsigned). */
__device__ static float window_median(const float *v, int n) {
  const int k = n / 2;
  for (int i = 0; i < n; i++) {
    int below = 0, equal = 0;
    for (int j = 0; j < n; j++) {
      below += v[j] < v[i];
      equal += v[j] == v[i];
    }
    if (below <= k && k < below + equal) return ctr__zero_unsigned(v[i]);
  }
  return ctr__zero_unsigned(v[k]);
}

/* ---- Dezinger -------------------------------------------------------------------- */

__global__ static void dezinger_kernel(const float *__restrict__ in, float *__restrict__ out, int nb,
                                       int na, int r, float thr, unsigned long long *count) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x, a = blockIdx.y;
  if (b >= nb) return;
  float win[15 * 15];
  int n = 0;
  for (int da = -r; da <= r; da++)
    for (int db = -r; db <= r; db++) win[n++] = in[(long long)clampi(a + da, na) * nb + clampi(b + db, nb)];
  const float m = window_median(win, n), v = in[(long long)a * nb + b];
  if (fabsf(v - m) > thr) {
    out[(long long)a * nb + b] = m;
    atomicAdd(count, 1ull);
  } else {
    out[(long long)a * nb + b] = v;
  }
}

extern "C" ctr_status ctr__dezinger_cuda(const ctr_context *ctx, double threshold, int size,
                                         int64_t nb, int64_t na, int64_t ns, float *sino,
                                         int64_t *replaced) {
  ctr_status st = CTR_OK;
  ctr__xfer xf; /* the caller's sinograms or images (gpu/host_transfer.h) */
  memset(&xf, 0, sizeof xf);
  float *d_in = NULL, *d_out = NULL;
  unsigned long long *d_count = NULL, h_count = 0;
  const size_t bytes = sizeof(float) * (size_t)(nb * na);
  const dim3 grid((unsigned)((nb + 127) / 128), (unsigned)na);
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  GPU_GET(ctx, d_in, bytes, "dezinger input sinogram");
  GPU_GET(ctx, d_out, bytes, "dezinger output sinogram");
  GPU_GET(ctx, d_count, sizeof *d_count, "dezinger counter");
  CU(cudaMemset(d_count, 0, sizeof *d_count));
  CTR_CHECK_GOTO(st, ctr__xfer_init(&xf, ctx));
  for (int64_t s = 0; s < ns; s++) {
    CTR_CHECK_GOTO(st, ctr__xfer_h2d(&xf, d_in, sino + s * nb * na, bytes, 0, 0, NULL));
    dezinger_kernel<<<grid, 128>>>(d_in, d_out, (int)nb, (int)na, size / 2, (float)threshold, d_count);
    CU_LAUNCHED("dezinger_kernel");
    CTR_CHECK_GOTO(st, ctr__xfer_d2h(&xf, sino + s * nb * na, d_out, bytes, 0, 1, NULL));
  }
  CU(cudaMemcpy(&h_count, d_count, sizeof h_count, cudaMemcpyDeviceToHost));
  *replaced = (int64_t)h_count;
cleanup:
  ctr__xfer_free(&xf); /* after its DMAs */
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_in, bytes);
  GPU_PUT(ctx, d_out, bytes);
  GPU_PUT(ctx, d_count, sizeof *d_count);
  return st;
}

/* ---- Sorting-based stripe removal --------------------------------------------------- */

/* A batch of sinograms (x: (s, angle, bin), bins fastest) as columns for
 * the segmented sort: key[(s nb + b) na + a] = x's value (-0 as +0: the
 * CPU's comparison finds them equal and orders them by angle, as the
 * stable sort does here), the angle as payload; off[c] = c na. */
__global__ static void sort_keys(const float *__restrict__ x, int nb, int na, long long n,
                                 float *__restrict__ key, int *__restrict__ ang, int *__restrict__ off) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long per = (long long)na * nb, s = i / per, rem = i % per;
  const int a = (int)(rem / nb), b = (int)(rem % nb);
  const long long col = s * nb + b;
  key[col * na + a] = ctr__zero_unsigned(x[i]);
  ang[col * na + a] = a;
  if (a == 0) off[col] = (int)(col * na);
  if (i == n - 1) off[n / na] = (int)n;
}

/* The sorted values of each column, from the sinograms by their angles (the
 * values themselves, -0 included, as the CPU's sort keeps them). */
__global__ static void sorted_values(const float *__restrict__ x, const int *__restrict__ ang, int nb,
                                     int na, long long n, float *__restrict__ val) {
  const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const long long col = j / na, s = col / nb, b = col % nb;
  val[j] = x[(s * na + ang[j]) * nb + b];
}

/* sorted values of bin b at [b * na, (b + 1) * na); the median across bins
 * of rank k, into filtered[k * nb + b]; sinogram blockIdx.z of the batch */
__global__ static void rank_median(const float *__restrict__ sorted, int nb, int na, int r,
                                   float *__restrict__ filtered) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
  if (b >= nb) return;
  const long long off = (long long)blockIdx.z * na * nb;
  sorted += off;
  filtered += off;
  float win[255];
  int n = 0;
  for (int d = -r; d <= r; d++) win[n++] = sorted[reflect_edge(b + d, nb) * na + k];
  filtered[(long long)k * nb + b] = window_median(win, n);
}

__global__ static void unsort(const float *__restrict__ filtered, const int *__restrict__ ang,
                              int nb, int na, float *__restrict__ x) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
  if (b >= nb) return;
  const long long off = (long long)blockIdx.z * na * nb;
  filtered += off;
  ang += off;
  x += off;
  x[(long long)ang[(long long)b * na + k] * nb + b] = filtered[(long long)k * nb + b];
}

/* Vo et al. 2018's sorting filter on the GPU, sinograms in batches: one
 * stable segmented sort (a column of na angles a segment, sorted in shared
 * memory) sorts every column of the batch (two global stable sorts of a
 * sinogram's values a sinogram before); copies asynchronous, from pinned
 * memory where the caller pinned it (the streamed FBP pins its band). */
#define SORTING_BATCH_BYTES (1536ull << 20)
static ctr_status sorting_cuda(const ctr_context *ctx, const ctr_corrections *c, int64_t nb,
                               int64_t na, int64_t ns, float *sino) {
  ctr_status st = CTR_OK;
  ctr__xfer xf; /* the caller's sinograms or images (gpu/host_transfer.h) */
  memset(&xf, 0, sizeof xf);
  const long long per = nb * na;
  /* per element: the sinogram, keys and angles in and out, the sorted and
   * the filtered values: 28 bytes */
  int64_t batch = (int64_t)(SORTING_BATCH_BYTES / (28ull * (unsigned long long)per));
  if (batch < 1) batch = 1;
  if (batch > ns) batch = ns;
  if (batch > 65535) batch = 65535;
  const long long nmax = batch * per;
  if (nmax > 0x7fffffffLL)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "sorting stripe filter on the GPU: a sinogram of %lld x %lld "
             "values is more than it sorts at once (2^31)", (long long)nb, (long long)na);
  float *d_x = NULL, *d_val = NULL, *d_f = NULL, *d_key[2] = {NULL, NULL};
  int *d_ang[2] = {NULL, NULL}, *d_off = NULL;
  void *d_tmp = NULL;
  size_t tmp_bytes = 0;
  cudaStream_t s = NULL;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GPU_GET(ctx, d_x, sizeof(float) * (size_t)nmax, "stripe filter sinograms");
  GPU_GET(ctx, d_val, sizeof(float) * (size_t)nmax, "stripe filter sorted values");
  GPU_GET(ctx, d_f, sizeof(float) * (size_t)nmax, "stripe filter filtered values");
  GPU_GET(ctx, d_off, sizeof(int) * (size_t)(batch * nb + 1), "stripe filter column offsets");
  for (int k = 0; k < 2; k++) {
    GPU_GET(ctx, d_key[k], sizeof(float) * (size_t)nmax, "stripe filter sort keys");
    GPU_GET(ctx, d_ang[k], sizeof(int) * (size_t)nmax, "stripe filter sort angles");
  }
  CU(cub::DeviceSegmentedSort::StableSortPairs(NULL, tmp_bytes, d_key[0], d_key[1], d_ang[0], d_ang[1],
                                               nmax, batch * nb, d_off, d_off + 1, s));
  GPU_GET(ctx, d_tmp, tmp_bytes, "stripe filter sort work area");
  CTR_CHECK_GOTO(st, ctr__xfer_init(&xf, ctx));
  for (int64_t s0 = 0; s0 < ns; s0 += batch) {
    const int64_t nsl = ns - s0 < batch ? ns - s0 : batch;
    const long long n = nsl * per;
    CTR_CHECK_GOTO(st, ctr__xfer_h2d(&xf, d_x, sino + s0 * per, sizeof(float) * (size_t)n, s, 0, NULL));
    sort_keys<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(d_x, (int)nb, (int)na, n, d_key[0], d_ang[0],
                                                         d_off);
    CU_LAUNCHED("sort_keys");
    CU(cub::DeviceSegmentedSort::StableSortPairs(d_tmp, tmp_bytes, d_key[0], d_key[1], d_ang[0], d_ang[1],
                                                 n, nsl * nb, d_off, d_off + 1, s));
    sorted_values<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(d_x, d_ang[1], (int)nb, (int)na, n, d_val);
    CU_LAUNCHED("sorted_values");
    const dim3 grid((unsigned)((nb + 63) / 64), (unsigned)na, (unsigned)nsl);
    rank_median<<<grid, 64, 0, s>>>(d_val, (int)nb, (int)na, c->stripe_size / 2, d_f);
    CU_LAUNCHED("rank_median");
    unsort<<<grid, 64, 0, s>>>(d_f, d_ang[1], (int)nb, (int)na, d_x);
    CU_LAUNCHED("unsort");
    CTR_CHECK_GOTO(st, ctr__xfer_d2h(&xf, sino + s0 * per, d_x, sizeof(float) * (size_t)n, s, 0, NULL));
  }
  CU(cudaStreamSynchronize(s));
cleanup:
  ctr__xfer_free(&xf); /* after its DMAs */
  if (s) cudaStreamSynchronize(s);
  GPU_PUT(ctx, d_x, sizeof(float) * (size_t)nmax);
  GPU_PUT(ctx, d_val, sizeof(float) * (size_t)nmax);
  GPU_PUT(ctx, d_f, sizeof(float) * (size_t)nmax);
  GPU_PUT(ctx, d_off, sizeof(int) * (size_t)(batch * nb + 1));
  for (int k = 0; k < 2; k++) {
    GPU_PUT(ctx, d_key[k], sizeof(float) * (size_t)nmax);
    GPU_PUT(ctx, d_ang[k], sizeof(int) * (size_t)nmax);
  }
  GPU_PUT(ctx, d_tmp, tmp_bytes);
  if (s) cudaStreamDestroy(s);
  return st;
}

/* ---- Fourier-wavelet stripe removal ---------------------------------------------------- */

/* The wavelet's filter taps, a kernel parameter (constant bank, fixed at
 * launch): a __constant__ table would be shared by every run of the process
 * and rewritten by one run while another's kernels read it. */
struct dwt_taps {
  double lo[20], hi[20];
};

/* One periodic analysis step along rows (stride 1, len wd, h rows) or along
 * columns (stride N1, len h, wd columns) of the region at x (row pitch N1):
 * out gets lows then highs, copied back by copy_region. */
__global__ static void dwt_rows(const __grid_constant__ dwt_taps w, const float *__restrict__ x,
                                float *__restrict__ y, int N1, int h, int wd, int len,
                                int along_cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, line = blockIdx.y;
  const int n = along_cols ? h : wd, half = n / 2;
  if (i >= half || line >= (along_cols ? wd : h)) return;
  double a = 0, d = 0;
  for (int k = 0; k < len; k++) {
    const int j = (2 * i + k) % n;
    const float v = along_cols ? x[(long long)j * N1 + line] : x[(long long)line * N1 + j];
    a += w.lo[k] * v;
    d += w.hi[k] * v;
  }
  if (along_cols) {
    y[(long long)i * N1 + line] = (float)a;
    y[(long long)(half + i) * N1 + line] = (float)d;
  } else {
    y[(long long)line * N1 + i] = (float)a;
    y[(long long)line * N1 + half + i] = (float)d;
  }
}

/* The inverse step: output sample j gathers the coefficients whose taps
 * reach it. */
__global__ static void idwt_rows(const __grid_constant__ dwt_taps w, const float *__restrict__ x,
                                 float *__restrict__ y, int N1, int h, int wd, int len,
                                 int along_cols) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, line = blockIdx.y;
  const int n = along_cols ? h : wd, half = n / 2;
  if (j >= n || line >= (along_cols ? wd : h)) return;
  double v = 0;
  for (int k = 0; k < len; k++) {
    /* 2 i + k = j (mod n) */
    const int t = ((j - k) % n + n) % n;
    if (t % 2) continue;
    const int i = t / 2;
    const float a = along_cols ? x[(long long)i * N1 + line] : x[(long long)line * N1 + i];
    const float d = along_cols ? x[(long long)(half + i) * N1 + line] : x[(long long)line * N1 + half + i];
    v += w.lo[k] * a + w.hi[k] * d;
  }
  if (along_cols) y[(long long)j * N1 + line] = (float)v;
  else y[(long long)line * N1 + j] = (float)v;
}

__global__ static void copy_region(const float *__restrict__ y, float *__restrict__ x, int N1, int h,
                                   int wd) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c < wd && r < h) x[(long long)r * N1 + c] = y[(long long)r * N1 + c];
}

/* band rows [0, m), columns [c0, c0 + nc) <-> columns contiguous */
__global__ static void band_gather(const float *__restrict__ x, float *__restrict__ col, int N1,
                                   int m, int c0, int nc) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (r < m && c < nc) col[(long long)c * m + r] = x[(long long)r * N1 + c0 + c];
}

__global__ static void band_scatter(const float *__restrict__ col, float *__restrict__ x, int N1,
                                    int m, int c0, int nc) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (r < m && c < nc) x[(long long)r * N1 + c0 + c] = col[(long long)c * m + r];
}

__global__ static void notch(cufftComplex *spec, int nf, int ncols, int m, float sigma) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
  if (k >= nf || c >= ncols) return;
  const float g = (float)(-expm1(-(double)k * k / (2.0 * sigma * sigma)) / (double)m);
  spec[(long long)c * nf + k].x *= g;
  spec[(long long)c * nf + k].y *= g;
}

__global__ static void pad_reflect(const float *__restrict__ s, float *__restrict__ x, int nb,
                                   int na, int N1, int N0, int left) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (b >= N1 || r >= N0) return;
  x[(long long)r * N1 + b] = s[mirror(r, na) * nb + reflect_edge(b - left, nb)];
}

__global__ static void crop(const float *__restrict__ x, float *__restrict__ s, int nb, int na,
                            int N1, int left) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (b < nb && r < na) s[(long long)r * nb + b] = x[(long long)r * N1 + left + b];
}

static ctr_status wavelet_cuda(const ctr_context *ctx, const ctr_corrections *c, int64_t nb,
                               int64_t na, int64_t ns, float *sino) {
  ctr_status st = CTR_OK;
  ctr__xfer xf; /* the caller's sinograms or images (gpu/host_transfer.h) */
  memset(&xf, 0, sizeof xf);
  dwt_taps w;
  const int len = 2 * c->stripe_wavelet, L = c->stripe_level;
  const int64_t q = (int64_t)1 << L;
  /* as stripes_cpu.c: the angles mirrored to a period of 2 na, the bins reflected */
  const int64_t N0 = (2 * na + q - 1) / q * q, N1 = (nb + nb / 4 + q - 1) / q * q, left = (N1 - nb) / 2;
  float *d_s = NULL, *d_x = NULL, *d_y = NULL, *d_col = NULL;
  cufftComplex *d_spec = NULL;
  cufftHandle plans[2 * 8];
  int nplans = 0;
  memset(&w, 0, sizeof w);
  CTR_CHECK(ctr__daubechies(c->stripe_wavelet, w.lo));
  for (int k = 0; k < len; k++) w.hi[k] = (k % 2 ? -1.0 : 1.0) * w.lo[len - 1 - k];
  GPU_GET(ctx, d_s, sizeof(float) * (size_t)(nb * na), "wavelet filter sinogram");
  GPU_GET(ctx, d_x, sizeof(float) * (size_t)(N0 * N1), "wavelet filter padded sinogram");
  GPU_GET(ctx, d_y, sizeof(float) * (size_t)(N0 * N1), "wavelet filter coefficients");
  GPU_GET(ctx, d_col, sizeof(float) * (size_t)(N0 * N1), "wavelet filter columns");
  GPU_GET(ctx, d_spec, sizeof(cufftComplex) * (size_t)((N0 / 2 + 1) * N1), "wavelet filter spectra");
  /* per level: forward and inverse plans of the band's columns (length
   * h / 2, w / 2 of them) */
  for (int l = 0; l < L; l++) {
    int m = (int)((N0 >> l) / 2), ncols = (int)((N1 >> l) / 2), nf = m / 2 + 1;
    CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
      return cufftPlanMany(&plans[2 * l], 1, &m, NULL, 1, m, NULL, 1, nf, CUFFT_R2C, ncols);
    }));
    nplans++;
    CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
      return cufftPlanMany(&plans[2 * l + 1], 1, &m, NULL, 1, nf, NULL, 1, m, CUFFT_C2R, ncols);
    }));
    nplans++;
  }
  CTR_CHECK_GOTO(st, ctr__xfer_init(&xf, ctx));
  for (int64_t s = 0; s < ns; s++) {
    CTR_CHECK_GOTO(st, ctr__xfer_h2d(&xf, d_s, sino + s * nb * na, sizeof(float) * (size_t)(nb * na), 0, 0, NULL));
    pad_reflect<<<dim3((unsigned)((N1 + 127) / 128), (unsigned)N0), 128>>>(d_s, d_x, (int)nb, (int)na,
                                                                           (int)N1, (int)N0, (int)left);
    CU_LAUNCHED("pad_reflect");
    for (int l = 0; l < L; l++) {
      const int h = (int)(N0 >> l), wd = (int)(N1 >> l);
      dwt_rows<<<dim3((unsigned)((wd / 2 + 127) / 128), (unsigned)h), 128>>>(w, d_x, d_y, (int)N1, h, wd, len, 0);
      CU_LAUNCHED("dwt rows");
      copy_region<<<dim3((unsigned)((wd + 127) / 128), (unsigned)h), 128>>>(d_y, d_x, (int)N1, h, wd);
      CU_LAUNCHED("copy_region");
      dwt_rows<<<dim3((unsigned)((h / 2 + 127) / 128), (unsigned)wd), 128>>>(w, d_x, d_y, (int)N1, h, wd, len, 1);
      CU_LAUNCHED("dwt columns");
      copy_region<<<dim3((unsigned)((wd + 127) / 128), (unsigned)h), 128>>>(d_y, d_x, (int)N1, h, wd);
      CU_LAUNCHED("copy_region");
    }
    for (int l = 0; l < L; l++) {
      const int h = (int)(N0 >> l), wd = (int)(N1 >> l), m = h / 2, ncols = wd / 2, nf = m / 2 + 1;
      const dim3 g((unsigned)((m + 127) / 128), (unsigned)ncols);
      band_gather<<<g, 128>>>(d_x, d_col, (int)N1, m, wd / 2, ncols);
      CU_LAUNCHED("band_gather");
      CUFFT(cufftExecR2C(plans[2 * l], d_col, d_spec));
      notch<<<dim3((unsigned)((nf + 127) / 128), (unsigned)ncols), 128>>>(d_spec, nf, ncols, m,
                                                                         (float)c->stripe_sigma);
      CU_LAUNCHED("notch");
      CUFFT(cufftExecC2R(plans[2 * l + 1], d_spec, d_col));
      band_scatter<<<g, 128>>>(d_col, d_x, (int)N1, m, wd / 2, ncols);
      CU_LAUNCHED("band_scatter");
    }
    for (int l = L - 1; l >= 0; l--) {
      const int h = (int)(N0 >> l), wd = (int)(N1 >> l);
      idwt_rows<<<dim3((unsigned)((h + 127) / 128), (unsigned)wd), 128>>>(w, d_x, d_y, (int)N1, h, wd, len, 1);
      CU_LAUNCHED("idwt columns");
      copy_region<<<dim3((unsigned)((wd + 127) / 128), (unsigned)h), 128>>>(d_y, d_x, (int)N1, h, wd);
      CU_LAUNCHED("copy_region");
      idwt_rows<<<dim3((unsigned)((wd + 127) / 128), (unsigned)h), 128>>>(w, d_x, d_y, (int)N1, h, wd, len, 0);
      CU_LAUNCHED("idwt rows");
      copy_region<<<dim3((unsigned)((wd + 127) / 128), (unsigned)h), 128>>>(d_y, d_x, (int)N1, h, wd);
      CU_LAUNCHED("copy_region");
    }
    crop<<<dim3((unsigned)((nb + 127) / 128), (unsigned)na), 128>>>(d_x, d_s, (int)nb, (int)na, (int)N1, (int)left);
    CU_LAUNCHED("crop");
    CTR_CHECK_GOTO(st, ctr__xfer_d2h(&xf, sino + s * nb * na, d_s, sizeof(float) * (size_t)(nb * na), 0, 1, NULL));
  }
cleanup:
  ctr__xfer_free(&xf); /* after its DMAs */
  cudaDeviceSynchronize(); /* the buffers go back unused */
  for (int i = 0; i < nplans; i++) cufftDestroy(plans[i]);
  GPU_PUT(ctx, d_s, sizeof(float) * (size_t)(nb * na));
  GPU_PUT(ctx, d_x, sizeof(float) * (size_t)(N0 * N1));
  GPU_PUT(ctx, d_y, sizeof(float) * (size_t)(N0 * N1));
  GPU_PUT(ctx, d_col, sizeof(float) * (size_t)(N0 * N1));
  GPU_PUT(ctx, d_spec, sizeof(cufftComplex) * (size_t)((N0 / 2 + 1) * N1));
  return st;
}

extern "C" ctr_status ctr__stripes_cuda(const ctr_context *ctx, const ctr_corrections *c,
                                        int64_t nb, int64_t na, int64_t ns, float *sino) {
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  if (c->stripe == CTR_STRIPE_SORTING) return sorting_cuda(ctx, c, nb, na, ns, sino);
  if (c->stripe == CTR_STRIPE_WAVELET) return wavelet_cuda(ctx, c, nb, na, ns, sino);
  return CTR_OK;
}

/* ---- Paganin ------------------------------------------------------------------------------ */

/* Image blockIdx.z of a batch: images w x h apart by w h floats, padded
 * planes W x H (rows of `pitch` floats) apart by H pitch floats. */
__global__ static void paganin_pad(const float *__restrict__ im, float *__restrict__ buf, int w, int h,
                                   int W, int H, int ox, int oy, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= W || y >= H) return;
  im += (long long)blockIdx.z * w * h;
  buf += (long long)blockIdx.z * H * pitch;
  long long sy = y - oy, sx = x - ox;
  while (sy < 0 || sy >= h) sy = sy < 0 ? -sy - 1 : 2LL * h - 1 - sy;
  while (sx < 0 || sx >= w) sx = sx < 0 ? -sx - 1 : 2LL * w - 1 - sx;
  buf[(long long)y * pitch + x] = im[sy * w + sx];
}

/* a = pi lambda z delta / beta / pixel^2 (frequencies in cycles per pixel) */
__global__ static void paganin_multiply(cufftComplex *spec, int W, int H, int nf, double a) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= nf || y >= H) return;
  spec += (long long)blockIdx.z * H * nf;
  const double fx = (double)x / W, fy = (double)(y <= H / 2 ? y : y - H) / H;
  const float g = (float)(1.0 / (1.0 + a * (fx * fx + fy * fy)) / ((double)W * H));
  spec[(long long)y * nf + x].x *= g;
  spec[(long long)y * nf + x].y *= g;
}

__global__ static void paganin_crop(const float *__restrict__ buf, float *__restrict__ im, int w, int h,
                                    int H, int ox, int oy, int pitch) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  buf += (long long)blockIdx.z * H * pitch;
  im += (long long)blockIdx.z * w * h;
  if (x < w && y < h) im[(long long)y * w + x] = buf[(long long)(y + oy) * pitch + x + ox];
}

/* Paganin's filter of n images: batches of images, each copied up, padded,
 * transformed (one batched R2C and C2R), filtered, cropped and copied down,
 * on two streams that take the batches in turn, so that one batch's
 * transfers overlap the other's transforms (a call per image with
 * synchronous copies from pageable memory cost far more: bench/NOTES.md). img is
 * fastest pinned (ctr_host_register): the streamed FBP pins its window. */
#define PAGANIN_SET_BYTES (512ull << 20) /* device bytes of one stream's batch */
extern "C" ctr_status ctr__paganin_cuda(const ctr_context *ctx, const ctr_corrections *c,
                                        double pixel_mm, int64_t m, int64_t w, int64_t h,
                                        int64_t n, float *img) {
  ctr_status st = CTR_OK;
  ctr__xfer xf; /* the caller's sinograms or images (gpu/host_transfer.h) */
  memset(&xf, 0, sizeof xf);
  const int64_t W = ctr__fft_good_size(w + 2 * m), H = ctr__fft_good_size(h + 2 * m), nf = W / 2 + 1;
  const int64_t ox = (W - w) / 2, oy = (H - h) / 2;
  /* ctr_paganin_response's a, in cycles per pixel */
  const double a = 3.14159265358979323846 * 1.23984198e-6 / c->energy_kev * c->distance_mm *
                   c->paganin_delta_beta / (pixel_mm * pixel_mm);
  const size_t per = sizeof(float) * (size_t)(w * h) + sizeof(cufftComplex) * (size_t)(H * nf);
  int64_t batch = (int64_t)(PAGANIN_SET_BYTES / per);
  if (batch < 1) batch = 1;
  if (batch > n) batch = n;
  if (batch > 65535) batch = 65535;
  float *d_im[2] = {NULL, NULL}, *d_buf[2] = {NULL, NULL};
  cufftHandle fw[2] = {0, 0}, bw[2] = {0, 0};
  int have_f[2] = {0, 0}, have_b[2] = {0, 0};
  cudaStream_t s[2] = {NULL, NULL};
  int dims[2] = {(int)H, (int)W}, real_embed[2] = {(int)H, (int)(2 * nf)}, spec_embed[2] = {(int)H, (int)nf};
  const int sets = n > batch ? 2 : 1;
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  for (int k = 0; k < sets; k++) {
    CU(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    GPU_GET(ctx, d_im[k], sizeof(float) * (size_t)(w * h * batch), "Paganin images");
    GPU_GET(ctx, d_buf[k], sizeof(cufftComplex) * (size_t)(H * nf * batch), "Paganin spectra");
    /* in place: rows of the real planes padded to 2 (W / 2 + 1) floats */
    CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
      return cufftPlanMany(&fw[k], 2, dims, real_embed, 1, (int)(H * 2 * nf), spec_embed, 1,
                           (int)(H * nf), CUFFT_R2C, (int)batch);
    }));
    have_f[k] = 1;
    CUFFT(ctr__gpu_retry(ctx, CUFFT_SUCCESS, [&] {
      return cufftPlanMany(&bw[k], 2, dims, spec_embed, 1, (int)(H * nf), real_embed, 1,
                           (int)(H * 2 * nf), CUFFT_C2R, (int)batch);
    }));
    have_b[k] = 1;
    CUFFT(cufftSetStream(fw[k], s[k]));
    CUFFT(cufftSetStream(bw[k], s[k]));
  }
  CTR_CHECK_GOTO(st, ctr__xfer_init(&xf, ctx));
  for (int64_t i0 = 0, j = 0; i0 < n; i0 += batch, j++) {
    const int k = (int)(j % sets);
    const int64_t nb = n - i0 < batch ? n - i0 : batch; /* the last batch's other planes: unused */
    CTR_CHECK_GOTO(st, ctr__xfer_h2d(&xf, d_im[k], img + i0 * w * h, sizeof(float) * (size_t)(w * h * nb),
                                     s[k], 0, NULL));
    paganin_pad<<<dim3((unsigned)((W + 127) / 128), (unsigned)H, (unsigned)nb), 128, 0, s[k]>>>(
        d_im[k], d_buf[k], (int)w, (int)h, (int)W, (int)H, (int)ox, (int)oy, (int)(2 * nf));
    CU_LAUNCHED("paganin_pad");
    CUFFT(cufftExecR2C(fw[k], d_buf[k], (cufftComplex *)d_buf[k]));
    paganin_multiply<<<dim3((unsigned)((nf + 127) / 128), (unsigned)H, (unsigned)nb), 128, 0, s[k]>>>(
        (cufftComplex *)d_buf[k], (int)W, (int)H, (int)nf, a);
    CU_LAUNCHED("paganin_multiply");
    CUFFT(cufftExecC2R(bw[k], (cufftComplex *)d_buf[k], d_buf[k]));
    paganin_crop<<<dim3((unsigned)((w + 127) / 128), (unsigned)h, (unsigned)nb), 128, 0, s[k]>>>(
        d_buf[k], d_im[k], (int)w, (int)h, (int)H, (int)ox, (int)oy, (int)(2 * nf));
    CU_LAUNCHED("paganin_crop");
    CTR_CHECK_GOTO(st, ctr__xfer_d2h(&xf, img + i0 * w * h, d_im[k], sizeof(float) * (size_t)(w * h * nb),
                                     s[k], 0, NULL));
  }
  for (int k = 0; k < sets; k++) CU(cudaStreamSynchronize(s[k]));
cleanup:
  ctr__xfer_free(&xf); /* after its DMAs */
  for (int k = 0; k < 2; k++) {
    if (s[k]) cudaStreamSynchronize(s[k]);
    if (have_f[k]) cufftDestroy(fw[k]);
    if (have_b[k]) cufftDestroy(bw[k]);
    GPU_PUT(ctx, d_im[k], sizeof(float) * (size_t)(w * h * batch));
    GPU_PUT(ctx, d_buf[k], sizeof(cufftComplex) * (size_t)(H * nf * batch));
    if (s[k]) cudaStreamDestroy(s[k]);
  }
  return st;
}

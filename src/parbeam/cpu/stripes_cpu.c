/* Sinogram corrections on the CPU (docs/synchrotron.md): dezinger, stripe
 * (ring) removal by sorting (Vo et al. 2018, algorithm 3) and by the
 * Fourier-wavelet filter (Muench et al. 2009), with the Daubechies filters
 * of daubechies.c. The wavelet transform is written here: Debian's C
 * wavelet library (GSL's gsl_wavelet) takes power-of-two lengths only and is
 * GPL, and the GPU needs the same transform in CUDA anyway. */
#include "filter/filter.h"
#include "parbeam/sync.h"

#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Dezinger ----------------------------------------------------------------- */

static float median_of(float *v, int n) {
  return ctr__zero_unsigned(ctr__select_kth(v, n, n / 2));
}

static inline int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

int64_t ctr__dezinger_cpu(const ctr_context *ctx, double threshold, int size, int64_t nb,
                          int64_t na, int64_t ns, float *sino) {
  const int r = size / 2;
  int64_t replaced = 0;
  float *copy = ctr__aligned_alloc(sizeof(float) * (size_t)(nb * na), "dezinger copy");
  if (!copy) return -1;
  for (int64_t s = 0; s < ns; s++) {
    float *x = sino + s * nb * na;
    memcpy(copy, x, sizeof(float) * (size_t)(nb * na));
#pragma omp parallel for schedule(static) reduction(+ : replaced) num_threads(ctr__num_threads(ctx))
    for (int64_t a = 0; a < na; a++) {
      float win[15 * 15];
      for (int64_t b = 0; b < nb; b++) {
        int n = 0;
        for (int da = -r; da <= r; da++)
          for (int db = -r; db <= r; db++)
            win[n++] = copy[clampi(a + da, na) * nb + clampi(b + db, nb)];
        const float m = median_of(win, n);
        if (fabsf(copy[a * nb + b] - m) > (float)threshold) {
          x[a * nb + b] = m;
          replaced++;
        }
      }
    }
  }
  ctr__aligned_free(copy);
  return replaced;
}

/* ---- Sorting-based stripe removal (Vo et al. 2018, algorithm 3) --------------- */

typedef struct ranked {
  float v;
  int32_t a;
} ranked;

static int by_value(const void *x, const void *y) {
  const ranked *p = x, *q = y;
  if (p->v != q->v) return p->v < q->v ? -1 : 1;
  return (p->a > q->a) - (p->a < q->a);
}

/* Reflection about the edge pixel (d c b | a b c d | c b a). */
static inline int64_t reflect(int64_t i, int64_t n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

static ctr_status sorting_slice(const ctr_context *ctx, int size, int64_t nb, int64_t na,
                                float *x, ranked *sorted, float *filtered) {
  /* each bin's column sorted over the angles (ties by angle: deterministic) */
#pragma omp parallel for schedule(static) num_threads(ctr__num_threads(ctx))
  for (int64_t b = 0; b < nb; b++) {
    ranked *col = sorted + b * na;
    for (int64_t a = 0; a < na; a++) col[a] = (ranked){x[a * nb + b], (int32_t)a};
    qsort(col, (size_t)na, sizeof *col, by_value);
  }
  /* a median across bins of each rank's row, written back to the angles the
   * values came from */
  const int r = size / 2;
#pragma omp parallel for schedule(static) num_threads(ctr__num_threads(ctx))
  for (int64_t k = 0; k < na; k++) {
    float win[255];
    for (int64_t b = 0; b < nb; b++) {
      int n = 0;
      for (int d = -r; d <= r; d++) win[n++] = sorted[reflect(b + d, nb) * na + k].v;
      filtered[k * nb + b] = median_of(win, n);
    }
  }
#pragma omp parallel for schedule(static) num_threads(ctr__num_threads(ctx))
  for (int64_t b = 0; b < nb; b++)
    for (int64_t k = 0; k < na; k++) x[(int64_t)sorted[b * na + k].a * nb + b] = filtered[k * nb + b];
  return CTR_OK;
}

/* ---- Fourier-wavelet stripe removal (Muench et al. 2009) ------------------------ */

/* Index i of the periodic even extension of n samples (period 2n, mirrored
 * between samples: ... x1 x0 | x0 x1 ... x(n-1) | x(n-1) ...). */
static inline int64_t mirror(int64_t i, int64_t n) {
  i %= 2 * n;
  if (i < 0) i += 2 * n;
  return i < n ? i : 2 * n - 1 - i;
}

typedef struct wavelet {
  int len;
  double lo[20], hi[20]; /* analysis low and high pass */
} wavelet;

static ctr_status wavelet_make(int order, wavelet *w) {
  CTR_CHECK(ctr__daubechies(order, w->lo));
  w->len = 2 * order;
  for (int k = 0; k < w->len; k++) w->hi[k] = (k % 2 ? -1.0 : 1.0) * w->lo[w->len - 1 - k];
  return CTR_OK;
}

/* One periodic analysis step of n (even) values x[i * stride], for nc
 * neighbouring columns at once (x + c, c < nc: rows of nc contiguous values,
 * so a column pass reads whole cache lines): lows into the first n/2, highs
 * into the last n/2 (through tmp, n x nc). Each output sums its len products
 * in k order (the same arithmetic for every nc); the wrap-around of the
 * period is taken only by the last outputs, whose taps pass n. */
static void dwt_step(const wavelet *w, float *x, int64_t n, int64_t stride, int64_t nc,
                     double *tmp) {
  const int64_t h = n / 2;
  for (int64_t i = 0; i < h; i++) {
    double *a = tmp + i * nc, *d = tmp + (h + i) * nc;
    for (int64_t c = 0; c < nc; c++) a[c] = d[c] = 0;
    for (int k = 0; k < w->len; k++) {
      int64_t j = 2 * i + k;
      while (j >= n) j -= n; /* the period wraps (more than once where n < len) */
      const float *v = x + j * stride;
      const double lo = w->lo[k], hi = w->hi[k];
      for (int64_t c = 0; c < nc; c++) {
        a[c] += lo * v[c];
        d[c] += hi * v[c];
      }
    }
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < nc; c++) x[i * stride + c] = (float)tmp[i * nc + c];
}

/* Its inverse (the transform is orthogonal: the transpose), the same way. */
static void idwt_step(const wavelet *w, float *x, int64_t n, int64_t stride, int64_t nc,
                      double *tmp) {
  const int64_t h = n / 2;
  for (int64_t i = 0; i < n * nc; i++) tmp[i] = 0;
  for (int64_t i = 0; i < h; i++) {
    const float *a = x + i * stride, *d = x + (h + i) * stride;
    for (int k = 0; k < w->len; k++) {
      int64_t j = 2 * i + k;
      while (j >= n) j -= n;
      double *t = tmp + j * nc;
      const double lo = w->lo[k], hi = w->hi[k];
      for (int64_t c = 0; c < nc; c++) t[c] += lo * a[c] + hi * d[c];
    }
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t c = 0; c < nc; c++) x[i * stride + c] = (float)tmp[i * nc + c];
}

/* Columns a pass transforms together: 16 floats, one 64-byte line a row. */
#define WAVELET_COLUMNS 16

/* The row pass (each row alone) and the column pass (in blocks of columns)
 * of one level over the h x wd corner of x (row pitch N1). */
static void dwt_level(const ctr_context *ctx, const wavelet *w, float *x, int64_t h, int64_t wd,
                      int64_t N1, int inverse) {
  const int64_t blocks = (wd + WAVELET_COLUMNS - 1) / WAVELET_COLUMNS;
#pragma omp parallel num_threads(ctr__num_threads(ctx))
  {
    const int64_t longest = h > wd ? h : wd;
    double *tmp = malloc(sizeof(double) * (size_t)(longest * WAVELET_COLUMNS));
    if (!inverse) {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < h; r++)
        if (tmp) dwt_step(w, x + r * N1, wd, 1, 1, tmp);
    }
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
      const int64_t c0 = b * WAVELET_COLUMNS;
      const int64_t nc = wd - c0 < WAVELET_COLUMNS ? wd - c0 : WAVELET_COLUMNS;
      if (!tmp) continue;
      if (inverse) idwt_step(w, x + c0, h, N1, nc, tmp);
      else dwt_step(w, x + c0, h, N1, nc, tmp);
    }
    if (inverse) {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < h; r++)
        if (tmp) idwt_step(w, x + r * N1, wd, 1, 1, tmp);
    }
    free(tmp);
  }
}

/* Levels of the 2D transform of an N0 (angles) x N1 (bins) array, x
 * fastest along bins: the band of low angular and high bin frequency of each
 * level (vertical stripes live there) is damped along the angles by
 * 1 - exp(-k^2 / (2 sigma^2)). */
static ctr_status wavelet_slice(const ctr_context *ctx, const ctr_corrections *c,
                                const wavelet *w, int64_t N0, int64_t N1, float *x) {
  ctr_status st = CTR_OK;
  const int L = c->stripe_level;
  int64_t h = N0, wd = N1;
  for (int l = 0; l < L; l++, h /= 2, wd /= 2) dwt_level(ctx, w, x, h, wd, N1, 0);
  /* the notch on each level's band rows [0, h/2), columns [w/2, w): one plan
   * a level, executed on each thread's own (equally aligned) buffers */
  h = N0;
  wd = N1;
  for (int l = 0; l < L; l++, h /= 2, wd /= 2) {
    const int64_t m = h / 2, nf = m / 2 + 1;
    float *gain = malloc(sizeof(float) * (size_t)nf);
    float *pin = fftwf_malloc(sizeof(float) * (size_t)m);
    fftwf_complex *pout = fftwf_malloc(sizeof(fftwf_complex) * (size_t)nf);
    ctr__fftw_lock();
    fftwf_plan fw = pin && pout ? fftwf_plan_dft_r2c_1d((int)m, pin, pout, FFTW_ESTIMATE) : NULL;
    fftwf_plan bw = pin && pout ? fftwf_plan_dft_c2r_1d((int)m, pout, pin, FFTW_ESTIMATE) : NULL;
    ctr__fftw_unlock();
    if (!gain) st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "stripe removal: a notch of %lld values",
                                   (long long)nf);
    else if (!fw || !bw)
      st = ctr__error_set(CTR_E_FFT, "FFTW could not plan transforms of length %lld", (long long)m);
    for (int64_t k = 0; st == CTR_OK && k < nf; k++)
      gain[k] = (float)(-expm1(-(double)(k * k) / (2.0 * c->stripe_sigma * c->stripe_sigma)) /
                        (double)m);
    int failed = 0;
    if (st == CTR_OK) {
#pragma omp parallel num_threads(ctr__num_threads(ctx)) reduction(| : failed)
      {
        float *in = fftwf_malloc(sizeof(float) * (size_t)m);
        fftwf_complex *out = fftwf_malloc(sizeof(fftwf_complex) * (size_t)nf);
        failed = !in || !out;
#pragma omp for schedule(static)
        for (int64_t col = wd / 2; col < wd; col++) {
          if (failed) continue;
          for (int64_t r = 0; r < m; r++) in[r] = x[r * N1 + col];
          fftwf_execute_dft_r2c(fw, in, out);
          for (int64_t k = 0; k < nf; k++) {
            out[k][0] *= gain[k];
            out[k][1] *= gain[k];
          }
          fftwf_execute_dft_c2r(bw, out, in);
          for (int64_t r = 0; r < m; r++) x[r * N1 + col] = in[r];
        }
        fftwf_free(in);
        fftwf_free(out);
      }
      if (failed) st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "stripe removal: FFT buffers of %lld values",
                                      (long long)m);
    }
    ctr__fftw_lock();
    if (fw) fftwf_destroy_plan(fw);
    if (bw) fftwf_destroy_plan(bw);
    ctr__fftw_unlock();
    fftwf_free(pin);
    fftwf_free(pout);
    free(gain);
    if (st != CTR_OK) return st;
  }
  /* back up the levels */
  for (int l = L - 1; l >= 0; l--) dwt_level(ctx, w, x, N0 >> l, N1 >> l, N1, 1);
  return CTR_OK;
}

ctr_status ctr__stripes_cpu(const ctr_context *ctx, const ctr_corrections *c, int64_t nb,
                            int64_t na, int64_t ns, float *sino) {
  ctr_status st = CTR_OK;
  if (c->stripe == CTR_STRIPE_SORTING) {
    ranked *sorted = malloc(sizeof(ranked) * (size_t)(nb * na));
    float *filtered = malloc(sizeof(float) * (size_t)(nb * na));
    if (!sorted || !filtered)
      st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "stripe removal: cannot allocate %lld x %lld values",
                          (long long)nb, (long long)na);
    for (int64_t s = 0; st == CTR_OK && s < ns; s++)
      st = sorting_slice(ctx, c->stripe_size, nb, na, sino + s * nb * na, sorted, filtered);
    free(sorted);
    free(filtered);
    return st;
  }
  if (c->stripe != CTR_STRIPE_WAVELET) return CTR_OK;
  wavelet w;
  CTR_CHECK(wavelet_make(c->stripe_wavelet, &w));
  /* The transform is periodic: the angles are extended by their mirror
   * image (x0 .. x(n-1) x(n-1) .. x0, continuous around the period) to a
   * multiple of 2^L, the bins by reflection by a quarter more. */
  const int64_t q = (int64_t)1 << c->stripe_level;
  const int64_t N0 = (2 * na + q - 1) / q * q, N1 = (nb + nb / 4 + q - 1) / q * q;
  const int64_t left = (N1 - nb) / 2;
  float *x = ctr__aligned_alloc(sizeof(float) * (size_t)(N0 * N1), "stripe removal");
  if (!x) return CTR_E_OUT_OF_MEMORY;
  for (int64_t s = 0; st == CTR_OK && s < ns; s++) {
    float *src = sino + s * nb * na;
    for (int64_t r = 0; r < N0; r++)
      for (int64_t b = 0; b < N1; b++) x[r * N1 + b] = src[mirror(r, na) * nb + reflect(b - left, nb)];
    st = wavelet_slice(ctx, c, &w, N0, N1, x);
    for (int64_t r = 0; st == CTR_OK && r < na; r++)
      memcpy(src + r * nb, x + r * N1 + left, sizeof(float) * (size_t)nb);
  }
  ctr__aligned_free(x);
  return st;
}

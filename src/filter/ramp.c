/* Ramp filter: windows, the sampled Ram-Lak kernel and FFTW row filtering. */
#include "filter/filter.h"

#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#define CTR__PI 3.14159265358979323846

/* FFTW's planner is not thread-safe; execution with new arrays is. */
static pthread_mutex_t g_plan_lock = PTHREAD_MUTEX_INITIALIZER;

/* FFTW's planner is not thread-safe: every plan of the library is made and
 * destroyed under this lock (filter.h). */
void ctr__fftw_lock(void) { pthread_mutex_lock(&g_plan_lock); }
void ctr__fftw_unlock(void) { pthread_mutex_unlock(&g_plan_lock); }

struct ctr__ramp {
  int64_t n, padded;
  double l1;     /* sum |h| of the windowed spatial kernel: |output| <= l1 max|input| */
  float *kernel; /* padded/2 + 1 values, includes 1/padded */
  fftwf_plan fwd, inv;
};

struct ctr__ramp_work {
  float *buf;
  fftwf_complex *spec;
};

const char *ctr_window_name(ctr_window w) {
  switch (w) {
    case CTR_WINDOW_RAM_LAK: return "ram-lak";
    case CTR_WINDOW_SHEPP_LOGAN: return "shepp-logan";
    case CTR_WINDOW_COSINE: return "cosine";
    case CTR_WINDOW_HAMMING: return "hamming";
    case CTR_WINDOW_HANN: return "hann";
  }
  return "unknown";
}

ctr_status ctr_window_parse(const char *name, ctr_window *out) {
  static const ctr_window all[] = {CTR_WINDOW_RAM_LAK, CTR_WINDOW_SHEPP_LOGAN, CTR_WINDOW_COSINE,
                                   CTR_WINDOW_HAMMING, CTR_WINDOW_HANN};
  for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(name, ctr_window_name(all[i]))) {
      *out = all[i];
      return CTR_OK;
    }
  if (name && !strcmp(name, "ramp")) {
    *out = CTR_WINDOW_RAM_LAK;
    return CTR_OK;
  }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "unknown filter window '%s': expected ram-lak, shepp-logan, cosine, hamming or hann",
           name ? name : "(null)");
}

/* Window value at frequency f (cycles/sample) for cut-off fc = cutoff / 2. */
static double window_value(ctr_window w, double cutoff, double f) {
  const double fc = 0.5 * cutoff;
  f = fabs(f);
  if (f > fc) return 0.0;
  const double x = f / fc; /* 0 .. 1 */
  switch (w) {
    case CTR_WINDOW_RAM_LAK: return 1.0;
    case CTR_WINDOW_SHEPP_LOGAN: return x == 0.0 ? 1.0 : sin(0.5 * CTR__PI * x) / (0.5 * CTR__PI * x);
    case CTR_WINDOW_COSINE: return cos(0.5 * CTR__PI * x);
    case CTR_WINDOW_HAMMING: return 0.54 + 0.46 * cos(CTR__PI * x);
    case CTR_WINDOW_HANN: return 0.5 + 0.5 * cos(CTR__PI * x);
  }
  return 0.0;
}

double ctr_ramp_response(ctr_window w, double cutoff, double f) {
  return fabs(f) * window_value(w, cutoff, f);
}

int64_t ctr__fft_good_size(int64_t n) {
  for (int64_t m = n < 1 ? 1 : n;; m++) {
    int64_t r = m;
    static const int primes[] = {2, 3, 5, 7};
    for (int i = 0; i < 4; i++)
      while (r % primes[i] == 0) r /= primes[i];
    if (r == 1) return m;
  }
}

static ctr_status check_window(ctr_window w, double cutoff) {
  if (!(cutoff > 0.0 && cutoff <= 1.0))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "filter cutoff = %g: expected 0 < cutoff <= 1 (fraction of Nyquist)",
             cutoff);
  if (!strcmp(ctr_window_name(w), "unknown"))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "filter window %d: unknown", (int)w);
  return CTR_OK;
}

/* An equiangular fan's kernel from a windowed ramp's spectrum k (padded/2
 * + 1 real values, unit pixel), in place: the spatial kernel h(m) times
 * (m a / sin(m a))^2 at the lags |m| < n a row's convolution uses (a =
 * fan_step radians a column), back to its spectrum. Kak & Slaney 1988,
 * Sec. 3.4.2 (equiangular rays): the kernel g(gamma) = (gamma / sin
 * gamma)^2 h(gamma) / 2, whose 1/2 and 1/a^2 are the FDK scale's
 * (docs/geometry.md, "Curved (cylindrical) detectors"). Lags |m| >= n meet
 * the zero padding only. */
static ctr_status fan_kernel(double *k, int64_t padded, int64_t n, double fan_step) {
  const int64_t nf = padded / 2 + 1;
  fftw_complex *spec = fftw_malloc((size_t)nf * sizeof(fftw_complex));
  double *h = fftw_malloc((size_t)padded * sizeof(double));
  ctr_status st = CTR_OK;
  if (!spec || !h) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate the fan-beam ramp kernel");
    goto done;
  }
  pthread_mutex_lock(&g_plan_lock);
  fftw_plan inv = fftw_plan_dft_c2r_1d((int)padded, spec, h, FFTW_ESTIMATE);
  fftw_plan fwd = fftw_plan_dft_r2c_1d((int)padded, h, spec, FFTW_ESTIMATE);
  pthread_mutex_unlock(&g_plan_lock);
  if (!inv || !fwd) {
    st = ctr__error_set(CTR_E_FFT, "FFTW could not plan a transform of length %lld",
                        (long long)padded);
  } else {
    for (int64_t i = 0; i < nf; i++) spec[i][0] = k[i], spec[i][1] = 0.0;
    fftw_execute(inv);
    for (int64_t i = 0; i < padded; i++) {
      const int64_t m = i <= padded / 2 ? i : i - padded;
      const double a = (double)m * fan_step;
      const double f = m != 0 && (m < n && m > -n) ? a / sin(a) : 1.0;
      h[i] *= f * f / (double)padded;
    }
    fftw_execute(fwd);
    for (int64_t i = 0; i < nf; i++) k[i] = spec[i][0];
  }
  pthread_mutex_lock(&g_plan_lock);
  if (inv) fftw_destroy_plan(inv);
  if (fwd) fftw_destroy_plan(fwd);
  pthread_mutex_unlock(&g_plan_lock);
done:
  fftw_free(spec);
  fftw_free(h);
  return st;
}

ctr_status ctr__ramp_kernel(int64_t padded, ctr_window w, double cutoff, double **out) {
  return ctr__ramp_kernel_fan(padded, 0, w, cutoff, 0.0, out);
}

ctr_status ctr__ramp_kernel_fan(int64_t padded, int64_t n, ctr_window w, double cutoff,
                                double fan_step, double **out) {
  *out = NULL;
  CTR_CHECK(check_window(w, cutoff));
  if (padded < 2 || padded % 2)
    CTR_FAIL(CTR_E_INTERNAL, "ramp kernel length %lld: expected an even length >= 2", (long long)padded);
  const int64_t nf = padded / 2 + 1;
  double *h = ctr__malloc((size_t)padded * sizeof(double), "ramp kernel");
  double *k = ctr__malloc((size_t)nf * sizeof(double), "ramp kernel");
  fftw_complex *spec = fftw_malloc((size_t)nf * sizeof(fftw_complex));
  ctr_status st = CTR_OK;
  if (!h || !k || !spec) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate the ramp kernel (%lld samples)",
                        (long long)padded);
    goto cleanup;
  }
  /* Spatial Ram-Lak samples, unit pixel: h(0) = 1/4, h(odd n) = -1/(pi n)^2. */
  for (int64_t i = 0; i < padded; i++) {
    int64_t n = i <= padded / 2 ? i : i - padded;
    h[i] = n == 0 ? 0.25 : (n % 2 ? -1.0 / (CTR__PI * CTR__PI * (double)n * (double)n) : 0.0);
  }
  pthread_mutex_lock(&g_plan_lock);
  fftw_plan p = fftw_plan_dft_r2c_1d((int)padded, h, spec, FFTW_ESTIMATE);
  pthread_mutex_unlock(&g_plan_lock);
  if (!p) {
    st = ctr__error_set(CTR_E_FFT, "FFTW could not plan a transform of length %lld", (long long)padded);
    goto cleanup;
  }
  fftw_execute(p);
  pthread_mutex_lock(&g_plan_lock);
  fftw_destroy_plan(p);
  pthread_mutex_unlock(&g_plan_lock);
  /* The kernel is real and even, so its spectrum is real. */
  for (int64_t i = 0; i < nf; i++)
    k[i] = spec[i][0] * window_value(w, cutoff, (double)i / (double)padded);
  if (fan_step > 0.0) {
    st = fan_kernel(k, padded, n, fan_step);
    if (st != CTR_OK) goto cleanup;
  }
  *out = k;
  k = NULL;
cleanup:
  free(h);
  free(k);
  fftw_free(spec);
  return st;
}

/* Sum |h| of the spatial kernel whose spectrum is k (padded/2 + 1 real
 * values): an inverse real FFT in double. 0 if FFTW cannot plan. */
static double kernel_l1(const double *k, int64_t L) {
  const int64_t nf = L / 2 + 1;
  fftw_complex *spec = fftw_malloc((size_t)nf * sizeof(fftw_complex));
  double *h = fftw_malloc((size_t)L * sizeof(double));
  double l1 = 0.0;
  if (spec && h) {
    for (int64_t i = 0; i < nf; i++) spec[i][0] = k[i], spec[i][1] = 0.0;
    pthread_mutex_lock(&g_plan_lock);
    fftw_plan p = fftw_plan_dft_c2r_1d((int)L, spec, h, FFTW_ESTIMATE);
    pthread_mutex_unlock(&g_plan_lock);
    if (p) {
      fftw_execute(p);
      for (int64_t i = 0; i < L; i++) l1 += fabs(h[i]) / (double)L;
      pthread_mutex_lock(&g_plan_lock);
      fftw_destroy_plan(p);
      pthread_mutex_unlock(&g_plan_lock);
    }
  }
  fftw_free(spec);
  fftw_free(h);
  return l1;
}

ctr_status ctr__ramp_create(int64_t n, ctr_window w, double cutoff, ctr__ramp **out) {
  return ctr__ramp_create_fan(n, w, cutoff, 0.0, out);
}

ctr_status ctr__ramp_create_fan(int64_t n, ctr_window w, double cutoff, double fan_step,
                                ctr__ramp **out) {
  *out = NULL;
  if (!(fan_step >= 0.0 && fan_step * (double)n < CTR__PI))
    CTR_FAIL(CTR_E_INTERNAL, "fan-beam ramp filter: %lld columns of %g radians span 180 degrees",
             (long long)n, fan_step);
  if (n < 1 || n > (1 << 24)) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ramp filter row length %lld", (long long)n);
  ctr__ramp *r = ctr__calloc(1, sizeof *r, "ramp filter");
  if (!r) return CTR_E_OUT_OF_MEMORY;
  r->n = n;
  r->padded = ctr__ramp_padded_length(n);
  double *k = NULL;
  ctr_status st = ctr__ramp_kernel_fan(r->padded, n, w, cutoff, fan_step, &k);
  if (st != CTR_OK) goto fail;
  const int64_t nf = r->padded / 2 + 1;
  r->kernel = fftwf_malloc((size_t)nf * sizeof(float));
  float *buf = fftwf_malloc((size_t)r->padded * sizeof(float));
  fftwf_complex *spec = fftwf_malloc((size_t)nf * sizeof(fftwf_complex));
  if (!r->kernel || !buf || !spec) {
    fftwf_free(buf);
    fftwf_free(spec);
    free(k);
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate ramp filter buffers");
    goto fail;
  }
  for (int64_t i = 0; i < nf; i++) r->kernel[i] = (float)(k[i] / (double)r->padded);
  r->l1 = kernel_l1(k, r->padded);
  free(k);
  pthread_mutex_lock(&g_plan_lock);
  r->fwd = fftwf_plan_dft_r2c_1d((int)r->padded, buf, spec, FFTW_ESTIMATE);
  r->inv = fftwf_plan_dft_c2r_1d((int)r->padded, spec, buf, FFTW_ESTIMATE);
  pthread_mutex_unlock(&g_plan_lock);
  fftwf_free(buf);
  fftwf_free(spec);
  if (!r->fwd || !r->inv) {
    st = ctr__error_set(CTR_E_FFT, "FFTW could not plan a transform of length %lld", (long long)r->padded);
    goto fail;
  }
  *out = r;
  return CTR_OK;
fail:
  ctr__ramp_free(r);
  return st;
}

void ctr__ramp_free(ctr__ramp *r) {
  if (!r) return;
  pthread_mutex_lock(&g_plan_lock);
  if (r->fwd) fftwf_destroy_plan(r->fwd);
  if (r->inv) fftwf_destroy_plan(r->inv);
  pthread_mutex_unlock(&g_plan_lock);
  fftwf_free(r->kernel);
  free(r);
}

int64_t ctr__ramp_padded(const ctr__ramp *r) { return r->padded; }

int64_t ctr__ramp_padded_length(int64_t n) {
  /* 2^a x {1, 3, 5, 7}: FFT libraries run these in fewer passes than
   * lengths with several odd factors (2500 = 4 x 5^4 ran at half the speed
   * of 2560 = 2^9 x 5 on cuFFT, bench/NOTES.md). */
  int64_t best = 0;
  static const int odd[] = {1, 3, 5, 7};
  for (int k = 0; k < 4; k++) {
    int64_t L = 2 * odd[k];
    while (L < 2 * n) L *= 2;
    if (!best || L < best) best = L;
  }
  return best;
}

double ctr__ramp_kernel_l1(const ctr__ramp *r) { return r->l1; }

void ctr__ramp_copy_kernel(const ctr__ramp *r, float *out) {
  memcpy(out, r->kernel, (size_t)(r->padded / 2 + 1) * sizeof(float));
}

ctr__ramp_work *ctr__ramp_work_create(const ctr__ramp *r) {
  ctr__ramp_work *w = ctr__calloc(1, sizeof *w, "filter work buffers");
  if (!w) return NULL;
  w->buf = fftwf_malloc((size_t)r->padded * sizeof(float));
  w->spec = fftwf_malloc((size_t)(r->padded / 2 + 1) * sizeof(fftwf_complex));
  if (!w->buf || !w->spec) {
    ctr__ramp_work_free(w);
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate filter work buffers");
    return NULL;
  }
  return w;
}

void ctr__ramp_work_free(ctr__ramp_work *w) {
  if (!w) return;
  fftwf_free(w->buf);
  fftwf_free(w->spec);
  free(w);
}

void ctr__ramp_apply(const ctr__ramp *r, ctr__ramp_work *w, float *row, const float *pre,
                     float scale) {
  const int64_t n = r->n, L = r->padded, nf = L / 2 + 1;
  float *buf = w->buf;
  if (pre)
    for (int64_t i = 0; i < n; i++) buf[i] = row[i] * pre[i];
  else
    memcpy(buf, row, (size_t)n * sizeof(float));
  memset(buf + n, 0, (size_t)(L - n) * sizeof(float));
  fftwf_execute_dft_r2c(r->fwd, buf, w->spec);
  for (int64_t i = 0; i < nf; i++) {
    w->spec[i][0] *= r->kernel[i];
    w->spec[i][1] *= r->kernel[i];
  }
  fftwf_execute_dft_c2r(r->inv, w->spec, buf);
  for (int64_t i = 0; i < n; i++) row[i] = buf[i] * scale;
}

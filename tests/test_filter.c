/* Ramp filter: the sampled response against |f| x window, the FFT path
 * against direct spatial convolution with the Ram-Lak kernel, and the gain on
 * sinusoids (the frequency response as a user sees it). */
#include "harness.h"

#include "filter/filter.h"

#define PI 3.14159265358979323846

static double ramlak(int64_t n) {
  return n == 0 ? 0.25 : (n % 2 ? -1.0 / (PI * PI * (double)n * (double)n) : 0.0);
}

static void test_good_size(void) {
  CHECK(ctr__fft_good_size(1) == 1);
  CHECK(ctr__fft_good_size(11) == 12);
  CHECK(ctr__fft_good_size(512) == 512);
  CHECK(ctr__fft_good_size(2 * 1248) == 2500);
  CHECK(ctr__fft_good_size(127) == 128);
}

/* The sampled kernel equals |f| x window up to the truncation of the spatial
 * kernel to one period, which perturbs each bin by at most
 * sum_{|n| > L/2} 1/(pi n)^2 ~ 2 / (pi^2 L / 2) (= 7.9e-4 for L = 512). */
static void test_kernel_response(void) {
  const ctr_window ws[] = {CTR_WINDOW_RAM_LAK, CTR_WINDOW_SHEPP_LOGAN, CTR_WINDOW_COSINE,
                           CTR_WINDOW_HAMMING, CTR_WINDOW_HANN};
  const int64_t L = 512;
  const double tol = 4.0 / (PI * PI * L);
  for (int wi = 0; wi < 5; wi++) {
    for (double cutoff = 0.5; cutoff <= 1.0; cutoff += 0.5) {
      double *k = NULL;
      CHECK_OK(ctr__ramp_kernel(L, ws[wi], cutoff, &k));
      if (!k) continue;
      double worst = 0;
      for (int64_t i = 0; i <= L / 2; i++) {
        double f = (double)i / L;
        double d = fabs(k[i] - ctr_ramp_response(ws[wi], cutoff, f));
        if (d > worst) worst = d;
      }
      CHECK_MSG(worst < tol, "window %s cutoff %g: max deviation %g", ctr_window_name(ws[wi]),
                cutoff, worst);
      CHECK(k[0] > 0); /* the DC term is not zero: no DC shift after padding */
      free(k);
    }
  }
  /* Window shapes at the cut-off frequency and beyond. */
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_RAM_LAK, 1.0, 0.3), 0.3, 1e-15);
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_HANN, 0.8, 0.4), 0.0, 1e-15);
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_HAMMING, 0.8, 0.4), 0.4 * 0.08, 1e-15);
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_COSINE, 1.0, 0.5), 0.0, 1e-15);
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_SHEPP_LOGAN, 1.0, 0.5), 0.5 * 2 / PI, 1e-15);
  CHECK_NEAR(ctr_ramp_response(CTR_WINDOW_HANN, 0.5, 0.3), 0.0, 0.0);
  ctr_window w;
  CHECK_OK(ctr_window_parse("hamming", &w));
  CHECK(w == CTR_WINDOW_HAMMING);
  CHECK_FAILS(ctr_window_parse("gauss", &w), CTR_E_INVALID_ARGUMENT, "hann");
  double *k = NULL;
  CHECK_FAILS(ctr__ramp_kernel(64, CTR_WINDOW_HANN, 0.0, &k), CTR_E_INVALID_ARGUMENT, "cutoff");
}

/* With zero padding to >= 2n, FFT filtering with the Ram-Lak kernel is the
 * linear convolution sum_k x[k] h(i - k) exactly (up to float rounding). */
static void test_fft_equals_convolution(void) {
  const int64_t n = 100;
  ctr__ramp *r = NULL;
  CHECK_OK(ctr__ramp_create(n, CTR_WINDOW_RAM_LAK, 1.0, &r));
  if (!r) return;
  CHECK(ctr__ramp_padded(r) >= 2 * n);
  ctr__ramp_work *w = ctr__ramp_work_create(r);
  float x[100], pre[100], y[100];
  for (int i = 0; i < n; i++) {
    x[i] = (float)th_uniform(-1, 1);
    pre[i] = (float)th_uniform(0.5, 1.5);
    y[i] = x[i];
  }
  ctr__ramp_apply(r, w, y, pre, 2.5f);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; i++) {
    double ref = 0;
    for (int64_t k = 0; k < n; k++) ref += (double)x[k] * pre[k] * ramlak(i - k);
    ref *= 2.5;
    err += (y[i] - ref) * (y[i] - ref);
    norm += ref * ref;
  }
  CHECK_MSG(sqrt(err / norm) < 1e-5, "relative error %g", sqrt(err / norm));
  ctr__ramp_work_free(w);
  ctr__ramp_free(r);
}

/* A sinusoid of frequency f in the middle of a long row comes out scaled by
 * |f| x window(f) (edges excluded: the row is finite). */
static void test_sinusoid_gain(void) {
  const int64_t n = 2048;
  ctr__ramp *r = NULL;
  CHECK_OK(ctr__ramp_create(n, CTR_WINDOW_HAMMING, 0.9, &r));
  if (!r) return;
  ctr__ramp_work *w = ctr__ramp_work_create(r);
  float *row = malloc(n * sizeof(float));
  const double freqs[] = {0.05, 0.125, 0.2, 0.3, 0.44};
  for (int fi = 0; fi < 5; fi++) {
    const double f = freqs[fi];
    for (int64_t i = 0; i < n; i++) row[i] = (float)cos(2 * PI * f * i);
    ctr__ramp_apply(r, w, row, NULL, 1.0f);
    const double gain = ctr_ramp_response(CTR_WINDOW_HAMMING, 0.9, f);
    double worst = 0;
    for (int64_t i = n / 4; i < 3 * n / 4; i++)
      worst = fmax(worst, fabs(row[i] - gain * cos(2 * PI * f * i)));
    /* The tail of the kernel beyond the middle half is ~ 1/(pi^2 n/4): 2e-4. */
    CHECK_MSG(worst < 2e-3, "f = %g: max deviation %g from gain %g", f, worst, gain);
  }
  free(row);
  ctr__ramp_work_free(w);
  ctr__ramp_free(r);
}

/* Padded lengths are 2^a x {1,3,5,7}, at least twice the row; the kernel's
 * l1 norm bounds the gain (Ram-Lak: 1/4 + 2 sum_odd 1/(pi n)^2 = 1/2). */
static void test_padding_and_gain(void) {
  CHECK(ctr__ramp_padded_length(1248) == 2560);
  CHECK(ctr__ramp_padded_length(1024) == 2048);
  CHECK(ctr__ramp_padded_length(97) == 224);
  CHECK(ctr__ramp_padded_length(1) == 2);
  for (int64_t n = 1; n < 3000; n += 37) {
    const int64_t L = ctr__ramp_padded_length(n);
    int64_t m = L;
    while (m % 2 == 0) m /= 2;
    CHECK_MSG(L >= 2 * n && (m == 1 || m == 3 || m == 5 || m == 7), "n %lld: L %lld", (long long)n, (long long)L);
  }
  ctr__ramp *r = NULL;
  CHECK_OK(ctr__ramp_create(256, CTR_WINDOW_RAM_LAK, 1.0, &r));
  if (!r) return;
  CHECK_NEAR(ctr__ramp_kernel_l1(r), 0.5, 0.01);
  ctr__ramp_work *w = ctr__ramp_work_create(r);
  float row[256];
  for (int trial = 0; trial < 20; trial++) {
    for (int i = 0; i < 256; i++) row[i] = (float)(trial % 2 ? th_uniform(-1, 1) : (i % 2 ? 1 : -1));
    ctr__ramp_apply(r, w, row, NULL, 1.0f);
    for (int i = 0; i < 256; i++) CHECK(fabsf(row[i]) <= ctr__ramp_kernel_l1(r) * 1.0001);
  }
  ctr__ramp_work_free(w);
  ctr__ramp_free(r);
}

int main(void) {
  test_good_size();
  test_padding_and_gain();
  test_kernel_response();
  test_fft_equals_convolution();
  test_sinusoid_gain();
  return th_finish("test_filter");
}

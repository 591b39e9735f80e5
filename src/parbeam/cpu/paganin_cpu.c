/* Paganin's filter on the CPU (Paganin et al. 2002): each image reflected
 * into a plane padded by the margin, filtered by the response (paganin.c)
 * with FFTW. */
#include "filter/filter.h"
#include "parbeam/sync.h"

#include <fftw3.h>
#include <stdlib.h>
#include <string.h>

/* The padded size of one side: the image plus the margin on both sides,
 * rounded up to a size FFTW transforms fast. */
static int64_t padded(int64_t n, int64_t margin) { return ctr__fft_good_size(n + 2 * margin); }

ctr_status ctr__paganin_cpu(const ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                            int64_t m, int64_t w, int64_t h, int64_t n, float *img) {
  ctr_status st = CTR_OK;
  const int64_t W = padded(w, m), H = padded(h, m), nf = W / 2 + 1;
  const int64_t ox = (W - w) / 2, oy = (H - h) / 2;
  float *filt = malloc(sizeof(float) * (size_t)(nf * H));
  if (!filt) return ctr__error_set(CTR_E_OUT_OF_MEMORY, "Paganin filter of %lld x %lld", (long long)W, (long long)H);
  for (int64_t y = 0; y < H; y++) {
    const double fy = (double)(y <= H / 2 ? y : y - H) / (double)H;
    for (int64_t x = 0; x < nf; x++)
      filt[y * nf + x] = (float)(ctr_paganin_response(c, pixel_mm, (double)x / (double)W, fy) /
                                 ((double)W * (double)H));
  }
  float *buf = fftwf_malloc(sizeof(float) * (size_t)(H * 2 * nf));
  fftwf_plan fw = NULL, bw = NULL;
  if (buf) {
    ctr__fftw_lock();
    fw = fftwf_plan_dft_r2c_2d((int)H, (int)W, buf, (fftwf_complex *)buf, FFTW_ESTIMATE);
    bw = fftwf_plan_dft_c2r_2d((int)H, (int)W, (fftwf_complex *)buf, buf, FFTW_ESTIMATE);
    ctr__fftw_unlock();
  }
  if (!buf || !fw || !bw) {
    st = ctr__error_set(CTR_E_FFT, "FFTW could not plan Paganin's %lld x %lld transforms",
                        (long long)W, (long long)H);
    goto cleanup;
  }
  const int threads = ctr__num_threads(ctx);
  for (int64_t i = 0; i < n; i++) {
    float *im = img + i * w * h;
    /* reflected into the padded plane (rows of 2 nf floats, in place) */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t y = 0; y < H; y++) {
      int64_t sy = y - oy;
      while (sy < 0 || sy >= h) sy = sy < 0 ? -sy - 1 : 2 * h - 1 - sy;
      for (int64_t x = 0; x < W; x++) {
        int64_t sx = x - ox;
        while (sx < 0 || sx >= w) sx = sx < 0 ? -sx - 1 : 2 * w - 1 - sx;
        buf[y * 2 * nf + x] = im[sy * w + sx];
      }
    }
    fftwf_execute(fw);
    fftwf_complex *spec = (fftwf_complex *)buf;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t k = 0; k < H * nf; k++) {
      spec[k][0] *= filt[k];
      spec[k][1] *= filt[k];
    }
    fftwf_execute(bw);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t y = 0; y < h; y++)
      memcpy(im + y * w, buf + (y + oy) * 2 * nf + ox, sizeof(float) * (size_t)w);
  }
cleanup:
  ctr__fftw_lock();
  if (fw) fftwf_destroy_plan(fw);
  if (bw) fftwf_destroy_plan(bw);
  ctr__fftw_unlock();
  fftwf_free(buf);
  free(filt);
  return st;
}

/* The CRC-versus-noise plot (Ha et al. 2013, Fig. 9): one line through the
 * points in order with a marker on each, noise in percent against CRC, drawn
 * by the line plots of src/io (io/plot.h). */
#include "core/internal.h"
#include "plot/plot.h"

#include <math.h>

static const ctr__plot_series SERIES = {NULL, NULL, 0, {31, 119, 180}, {12, 60, 120}, 1, NULL};

ctr_status ctr_pet_plot_crc_noise(const char *path, const double *noise, const double *crc,
                                  int64_t n, const char *title, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_plot_crc_noise: empty path");
  if (!noise || !crc)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': %s is NULL", path, !noise ? "noise" : "crc");
  if (n < 1 || n > 1000000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': %lld points: expected 1 .. 1000000", path,
             (long long)n);
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(noise[i]) || !isfinite(crc[i]) || fabs(noise[i]) > 1e12 || fabs(crc[i]) > 1e12)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "plot '%s': point %lld (noise %g, crc %g): expected finite values of magnitude "
               "<= 1e12",
               path, (long long)i, noise[i], crc[i]);
  /* noise is a relative standard deviation (ctr_pet_metrics.noise), shown in %. */
  const ctr__plot plot = {title, "noise (%)", "CRC", 100.0, 0, 0};
  ctr__plot_series s = SERIES;
  s.x = noise;
  s.y = crc;
  s.n = n;
  return ctr__plot_png(path, &plot, &s, 1, overwrite);
}

/* The convergence plot of an iterative run: the relative residual and,
 * when known, the relative error per iteration on a logarithmic axis, drawn
 * by the line plots of src/io (io/plot.h). */
#include "plot/plot.h"
#include "iterative/iterative.h"

#include <math.h>

ctr_status ctr_iterate_plot(const char *path, const double *relative_residual, const double *error,
                            int64_t n, const char *title, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_iterate_plot: empty path");
  if (!relative_residual)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': relative_residual is NULL", path);
  if (n < 1 || n > 1000000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "plot '%s': %lld iterations: expected 1 .. 1000000", path,
             (long long)n);
  /* A logarithmic axis: values <= 0 (a residual of exactly 0) are shown a
   * decade below the smallest positive one. */
  double least = INFINITY;
  for (int64_t i = 0; i < n; i++) {
    const double r = relative_residual[i], e = error ? error[i] : 1.0;
    if (!isfinite(r) || !isfinite(e) || fabs(r) > 1e30 || fabs(e) > 1e30)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "plot '%s': iteration %lld (residual %g, error %g): expected finite values", path,
               (long long)(i + 1), r, e);
    if (r > 0 && r < least) least = r;
    if (e > 0 && e < least) least = e;
  }
  const double floor_value = isfinite(least) ? least / 10.0 : 1e-12;
  double *x = ctr__malloc(sizeof(double) * 3 * (size_t)n, "plot points");
  if (!x) return CTR_E_OUT_OF_MEMORY;
  double *r = x + n, *e = r + n;
  for (int64_t i = 0; i < n; i++) {
    x[i] = (double)(i + 1);
    r[i] = relative_residual[i] > 0 ? relative_residual[i] : floor_value;
    if (error) e[i] = error[i] > 0 ? error[i] : floor_value;
  }
  const ctr__plot plot = {title, "iteration",
                         error ? "relative residual, error" : "relative residual", 1.0, 1, 1};
  const ctr__plot_series s[2] = {
      {x, r, n, {31, 119, 180}, {12, 60, 120}, n <= 40, "residual"},
      {x, e, n, {214, 96, 24}, {140, 56, 10}, n <= 40, "error"}};
  ctr_status st = ctr__plot_png(path, &plot, s, error ? 2 : 1, overwrite);
  free(x);
  return st;
}

/* Double-precision semantics of the GPU backprojection kernels that
 * ctr_fbp_backproject_reference does not cover, shared by the GPU tests. */
#ifndef CTR_TEST_FBP_REFERENCE_H
#define CTR_TEST_FBP_REFERENCE_H

#include "parbeam/parbeam.h"

#include <math.h>
#include <stdlib.h>

/* The oversampling kernels' own semantics in double: the sinogram linearly
 * interpolated at the position rounded to a quarter bin (the weighting as
 * the reference's). */
static inline void oversampled_reference(const ctr_parallel_geometry *g, int64_t ns, const float *sino,
                                         double *out) {
  const ctr_parallel_params *p = ctr_parallel_get_params(g);
  const int64_t nb = p->nbins, na = p->nangles;
  ctr__par_angle *pa = malloc(sizeof *pa * (size_t)na);
  ctr__par_angles(g, 0, na, pa);
  for (int64_t s = 0; s < ns; s++)
    for (int64_t j = 0; j < p->ny; j++)
      for (int64_t i = 0; i < p->nx; i++) {
        double acc = 0;
        for (int64_t a = 0; a < na; a++) {
          const double t = floor(4.0 * (pa[a].t0 + (double)i * pa[a].c + (double)j * pa[a].s) + 0.5) / 4.0;
          const double f = floor(t), w = t - f;
          const int64_t b = (int64_t)f;
          const float *row = sino + (s * na + a) * nb;
          const double v0 = b >= 0 && b < nb ? row[b] : 0.0, v1 = b + 1 >= 0 && b + 1 < nb ? row[b + 1] : 0.0;
          acc += pa[a].w * (v0 + w * (v1 - v0));
        }
        out[(s * p->ny + j) * p->nx + i] = acc;
      }
  free(pa);
}

/* Relative RMS of a against the reference b (harness.h, included first). */
static inline double rel_rms(const float *a, const double *b, int64_t n) {
  return th_rel_rms_d(a, b, n);
}

#endif

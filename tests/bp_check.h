/* The fast CPU backprojector (ctr_fdk_backproject, float) against the
 * double-precision reference (ctr__bp_reference) on random filtered views:
 * shared by test_fdk (flat detectors, any orbit) and test_curved
 * (cylindrical detectors). Include after harness.h. */
#ifndef CTR_TEST_BP_CHECK_H
#define CTR_TEST_BP_CHECK_H

#include "conebeam/cpu/backproject.h"

/* The relative RMS difference over slices [z0, z0 + nzs) of g's volume
 * between the two, for views of values uniform in [-1, 1] (th_uniform),
 * backprojected `batch` views at a time; INFINITY when the reference is
 * zero or the backprojection fails (a failed check says so). */
static inline double th_bp_vs_reference(ctr_context *ctx, const ctr_geometry *g, int64_t z0,
                                        int64_t nzs, int64_t batch) {
  int64_t nu, nv;
  ctr_geometry_get_detector(g, &nu, &nv, NULL, NULL);
  const int64_t nviews = ctr_geometry_get_view_count(g);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
  const int64_t nvox = vol.nx * vol.ny * nzs;
  float *filt = malloc(sizeof(float) * (size_t)(nu * nv * nviews));
  for (int64_t i = 0; i < nu * nv * nviews; i++) filt[i] = (float)th_uniform(-1, 1);
  float *out = calloc((size_t)nvox, sizeof(float));
  double *ref = calloc((size_t)nvox, sizeof(double));
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  o.z0 = z0;
  o.nz = nzs;
  o.views_per_batch = batch;
  const int64_t vd[3] = {vol.nx, vol.ny, nzs};
  ctr_array va = ctr_array_make(out, CTR_DTYPE_FLOAT32, 3, vd);
  const ctr_status st = ctr_fdk_backproject(ctx, g, &o, 0, nviews, filt, &va);
  CHECK_OK(st);
  ctr__bp_reference(g, 0, nviews, filt, ref, z0, nzs);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < nvox; i++) {
    err += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  free(filt);
  free(out);
  free(ref);
  return st == CTR_OK && norm > 0 ? sqrt(err / norm) : INFINITY;
}

#endif

/* The CPU backend's entry in the backend table (parbeam/backend.h): the
 * backprojector of fbp_cpu.c (of lamino_cpu.c for a tilted axis), the dezinger and stripe filters of
 * stripes_cpu.c and Paganin's filter of paganin_cpu.c; ctr_fbp and
 * ctr_fbp_projections by fbp.c's host drivers. */
#include "parbeam/backend.h"

static ctr_status cpu_backproject(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                  const ctr_fbp_options *o, int64_t nslices, const float *sino,
                                  float *slices, int64_t *bad) {
  ctr__fbp_bp_cpu(ctx, g, o->interp, nslices, sino, slices);
  *bad = ctr__values_sanitize(slices, g->p.nx * g->p.ny * nslices);
  return CTR_OK;
}

static ctr_status cpu_lamino_backproject(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                         const ctr_fbp_options *o, int64_t nz, const float *sino,
                                         float *slices, int64_t *bad) {
  CTR_CHECK(ctr__lamino_bp_cpu(ctx, g, o->interp, nz, sino, slices));
  *bad = ctr__values_sanitize(slices, g->p.nx * g->p.ny * nz);
  return CTR_OK;
}

static ctr_status cpu_dezinger(const ctr_context *ctx, double threshold, int size, int64_t nb,
                               int64_t na, int64_t ns, float *sino, int64_t *replaced) {
  const int64_t n = ctr__dezinger_cpu(ctx, threshold, size, nb, na, ns, sino);
  if (n < 0) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "ctr_sinogram_dezinger: no memory for a sinogram copy");
  *replaced = n;
  return CTR_OK;
}

const ctr__par_backend ctr__par_backend_cpu = {
    .head = {"cpu", CTR_DEVICE_CPU, 1},
    .backproject = cpu_backproject,
    .dezinger = cpu_dezinger,
    .stripes = ctr__stripes_cpu,
    .paganin = ctr__paganin_cpu,
    .lamino_backproject = cpu_lamino_backproject,
};

/* The projector object and the FFT reference: argument checks and dispatch
 * to the context's backend (backend.h). */
#include "pet/backend.h"

#include <math.h>
#include <stdlib.h>

ctr_status ctr_pet_projector_create(ctr_context *ctx, ctr_pet_system *s, ctr_pet_projector **out) {
  if (!s || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_projector_create: NULL argument");
  *out = NULL;
  ctr_pet_projector *p = ctr__calloc(1, sizeof *p, "PET projector");
  if (!p) return CTR_E_OUT_OF_MEMORY;
  p->ctx = ctx, p->sys = s;
  ctr__context_hold(ctx); /* its buffers go back to ctx's cache when it is freed */
  ctr_status st = ctr__pet_backend_of(ctx, &p->be);
  if (st == CTR_OK) st = p->be->create(ctx, ctr__context_gpu(ctx, 0), s, &p->impl);
  if (st != CTR_OK) {
    ctr__context_drop(ctx);
    free(p);
    return st;
  }
  *out = p;
  return CTR_OK;
}

void ctr_pet_projector_free(ctr_pet_projector *p) {
  if (!p) return;
  p->be->destroy(p->impl);
  ctr__context_drop(p->ctx);
  free(p);
}

ctr_status ctr_pet_project(ctr_pet_projector *p, ctr_pet_direction dir, int64_t view,
                           const float *in, float *out) {
  if (!p || !in || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_project: NULL argument");
  if (dir != CTR_PET_FORWARD && dir != CTR_PET_BACK)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_project: direction %d: expected forward or back",
             (int)dir);
  if (view < 0 || view >= p->sys->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "view %lld: expected 0..%lld", (long long)view,
             (long long)p->sys->nviews - 1);
  CTR_CHECK(ctr__gpu_rule(p->ctx, "ctr_pet_project", 1, in, "in", out, "out"));
  return ctr__pet_project(p, dir, view, in, out);
}

ctr_status ctr__pet_project(ctr_pet_projector *p, ctr_pet_direction dir, int64_t view,
                            const float *in, float *out) {
  return p->be->project(p->impl, dir, view, in, out);
}

static ctr_status check(ctr_pet_system *s, int64_t view, int64_t pad, const float *in,
                        const float *out) {
  if (!s || !in || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_project_fft: NULL argument");
  if (view < 0 || view >= s->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "view %lld: expected 0..%lld", (long long)view,
             (long long)s->nviews - 1);
  if (pad < 0 || pad > 4096)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "FFT zero padding %lld voxels: expected 0..4096",
             (long long)pad);
  if (!ctr_pet_system_is_kernel_invariant(s))
    CTR_FAIL(CTR_E_UNSUPPORTED,
             "the FFT reference needs symmetric invariant kernels (same LOR-radial FWHM at "
             "centre and edge, not asymmetric, not custom)");
  return CTR_OK;
}

ctr_status ctr_pet_project_fft(ctr_context *ctx, ctr_pet_system *s, int64_t view, int64_t pad,
                               const float *in, float *out) {
  CTR_CHECK(check(s, view, pad, in, out));
  CTR_CHECK(ctr__gpu_rule(ctx, "ctr_pet_project_fft", 1, in, "in", out, "out"));
  const ctr__pet_backend *be;
  CTR_CHECK(ctr__pet_backend_of(ctx, &be));
  return be->fft(ctx, ctr__context_gpu(ctx, 0), s, view, pad, in, out);
}

/* The projector object: argument checks and dispatch to the CPU or CUDA
 * backend. */
#include "pet/pet.h"

#include <math.h>
#include <stdlib.h>

ctr_status ctr_pet_projector_create(ctr_context *ctx, ctr_pet_system *s, ctr_pet_projector **out) {
  if (!s || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_projector_create: NULL argument");
  *out = NULL;
  ctr_pet_projector *p = ctr__calloc(1, sizeof *p, "PET projector");
  if (!p) return CTR_E_OUT_OF_MEMORY;
  p->ctx = ctx, p->sys = s;
#if CTR_HAVE_CUDA
  if (ctx && ctr_context_get_device(ctx) == CTR_DEVICE_CUDA) {
    int dev = ctr__context_gpu(ctx, 0);
    ctr_status st = ctr__pet_cuda_create(ctx, dev, s, &p->cuda);
    if (st != CTR_OK) {
      free(p);
      return st;
    }
  }
#endif
  *out = p;
  return CTR_OK;
}

void ctr_pet_projector_free(ctr_pet_projector *p) {
  if (!p) return;
#if CTR_HAVE_CUDA
  ctr__pet_cuda_free(p->cuda);
#endif
  free(p->cpu_pad);
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
#if CTR_HAVE_CUDA
  if (p->cuda) return ctr__pet_cuda_project(p->cuda, dir, view, in, out);
#endif
  const ctr__pet_lut *L = ctr__pet_lut_get(p->sys, view);
  if (!L) return CTR_E_OUT_OF_MEMORY;
  if (!p->cpu_pad &&
      !(p->cpu_pad = ctr__calloc((size_t)ctr__pet_padded_voxels(p->sys), sizeof(float),
                                 "PET padded image")))
    return CTR_E_OUT_OF_MEMORY;
  return ctr__pet_project_cpu(p->sys, L, dir, in, p->cpu_pad, out);
}

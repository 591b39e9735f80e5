/* The CUDA backend's entry in the backend table (pet/backend.h): in a CUDA
 * build the entry points of pet_cuda.cu, pet_recon_cuda.cu and
 * pet_fft_cuda.cu; without CUDA a known backend with no operations. */
#include "pet/backend.h"
#include "pet/cuda/pet_cuda.h"

#if CTR_HAVE_CUDA
static ctr_status cuda_create(ctr_context *ctx, int device, ctr_pet_system *s, void **out) {
  ctr__pet_cuda *c = NULL;
  const ctr_status st = ctr__pet_cuda_create(ctx, device, s, &c);
  *out = c;
  return st;
}

static void cuda_destroy(void *impl) { ctr__pet_cuda_free(impl); }

static ctr_status cuda_project(void *impl, ctr_pet_direction dir, int64_t view, const float *in,
                               float *out) {
  return ctr__pet_cuda_project(impl, dir, view, in, out);
}

static ctr_status cuda_reconstruct(void *impl, const ctr_pet_histo *h,
                                   const ctr_pet_recon_options *o, ctr__pet_data_check check,
                                   void *user, float *image, ctr_pet_recon_timings *t,
                                   int64_t *bad) {
  return ctr__pet_cuda_reconstruct(impl, h, o, check, user, image, t, bad);
}

const ctr__pet_backend ctr__pet_backend_cuda = {
    .head = {"cuda", CTR_DEVICE_CUDA, 1},
    .create = cuda_create,
    .destroy = cuda_destroy,
    .project = cuda_project,
    .reconstruct = cuda_reconstruct,
    .fft = ctr__pet_cuda_fft,
    .tune = ctr__pet_cuda_tune,
};
#else
const ctr__pet_backend ctr__pet_backend_cuda = {.head = {"cuda", CTR_DEVICE_CUDA, 0}};
#endif

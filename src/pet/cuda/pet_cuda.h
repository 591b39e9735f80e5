/* The CUDA backend's entry points of TOF-PET DIRECT (pet_cuda.cu,
 * pet_recon_cuda.cu, pet_fft_cuda.cu); backend_cuda.c puts them in the
 * backend table of pet/backend.h, through which the rest of the library
 * reaches them. */
#ifndef CTR_PET_CUDA_H
#define CTR_PET_CUDA_H

#include "pet/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA backend (src/pet/cuda/pet_cuda.cu): device-resident padded image and
 * histo-image buffers and the tables of the views used so far, all from the
 * context's GPU buffer cache (src/gpu/gpu_buffers.h) and given back by
 * ctr__pet_cuda_free (the context outlives the projector). */
typedef struct ctr__pet_cuda ctr__pet_cuda;
ctr_status ctr__pet_cuda_create(ctr_context *ctx, int device, ctr_pet_system *s,
                                ctr__pet_cuda **out);
void ctr__pet_cuda_free(ctr__pet_cuda *c);
/* ctr__pet_cuda_create with the launch shape's autotuning forced (force)
 * and reported (r, may be NULL); create is this with 0, NULL. */
ctr_status ctr__pet_cuda_create_tuned(ctr_context *ctx, int device, ctr_pet_system *s, int force,
                                      ctr_tune_report *r, ctr__pet_cuda **out);
/* The backend's tune (backend.h). */
ctr_status ctr__pet_cuda_tune(ctr_context *ctx, int device, ctr_pet_system *s, int force,
                              ctr_tune_report *r);
/* in and out: host or GPU memory (copied with cudaMemcpyDefault). */
ctr_status ctr__pet_cuda_project(ctr__pet_cuda *c, ctr_pet_direction dir, int64_t view,
                                 const float *in, float *out);
/* The backend's reconstruct (backend.h): the histo-images are checked on
 * the GPU after their upload; image: host or GPU memory (copied with
 * cudaMemcpyDefault), filled on the device when it is all 0, and the data
 * policy on the result runs there too; *bad gets the count of result voxels
 * stored as 0. */
ctr_status ctr__pet_cuda_reconstruct(ctr__pet_cuda *c, const ctr_pet_histo *h,
                                     const ctr_pet_recon_options *opts, ctr__pet_data_check check,
                                     void *user, float *image,
                                     ctr_pet_recon_timings *t, int64_t *bad);
/* cuFFT reference convolution (same contract as ctr_pet_project_fft; in and
 * out host or GPU memory) on GPU `device`, its buffers from ctx's GPU buffer
 * cache (ctx NULL: allocated and freed). */
ctr_status ctr__pet_cuda_fft(const ctr_context *ctx, int device, ctr_pet_system *s, int64_t view,
                             int64_t pad, const float *in, float *out);

#ifdef __cplusplus
}
#endif
#endif

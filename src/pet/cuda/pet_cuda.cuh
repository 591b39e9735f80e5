/* Shared state of the CUDA DIRECT backend (pet_cuda.cu: projectors,
 * pet_recon_cuda.cu: reconstruction). */
#ifndef CTR_PET_CUDA_CUH
#define CTR_PET_CUDA_CUH

#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "pet/cuda/pet_cuda.h"

#define PET_MAX_SPLIT 8

typedef struct dev_view {
  int ready;
  unsigned long long tag; /* unique, to know whose runs sit in constant memory */
  int ncols, nent, nk;
  int *pid;    /* padded LORmap */
  float *w;    /* kernel values, id fastest */
  int3 *cols;  /* runs (global copy; the constant bank's source, copied device to device) */
} dev_view;

struct ctr__pet_cuda {
  ctr_context *ctx; /* progress and cancellation; the GPU buffer cache of every buffer below */
  int device;
  ctr_pet_system *sys;
  int nx, ny, nz, nzr;
  int Z, LC, bx, by, split; /* launch shape (pet_cuda.cu) */
  int const_runs;            /* runs in constant memory when they fit */
  int sms;                   /* multiprocessors */
  int HX, HY, HZ, PX, PY, PZ;
  long long nvox, npad;
  float *d_in, *d_out, *d_tmp; /* padded input, unpadded output, unpadded staging */
  float *d_part;               /* PET_MAX_SPLIT partial outputs */
  cudaStream_t stream;
  dev_view *views;
};

/* d_out (unpadded) = A_v d_pin (forward) or A_v^T d_pin (back); d_pin is in
 * the padded layout. Asynchronous on c->stream. */
ctr_status ctr__pet_project_device(ctr__pet_cuda *c, ctr_pet_direction dir, int64_t v,
                                   const float *d_pin, float *d_out);
/* Unpadded src -> interior of padded dst, on c->stream. */
void ctr__pet_pad_device(const ctr__pet_cuda *c, const float *src, float *dst);

#endif

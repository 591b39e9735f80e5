/* Parallel-beam GPU backprojection internals shared by the kernels' file
 * (fbp_cuda.cu) and the end-to-end pipeline (fbp_pipeline.cu). */
#ifndef CTR_FBP_CUDA_CUH
#define CTR_FBP_CUDA_CUH

#include "cuda/cuda_util.h"
#include "parbeam/parbeam.h"

/* Angles whose constants one launch holds (constant memory). */
#define MAX_CONST_ANGLES 2048

typedef enum fbp_kernel {
  K_TEX = 0, K_TEX2 = 1, K_ALU = 2, K_ALU2 = 3, K_ALU_OS = 4, K_ALU2_OS = 5, K_COUNT
} fbp_kernel;
static const char *const kernel_names[K_COUNT] = {"tex", "tex2", "alu", "alu2", "alu-os", "alu2-os"};


/* Device state of a run: sinograms (filtered, weighted) and slices. */
typedef struct fbp_gpu {
  const ctr_parallel_geometry *g;
  fbp_kernel kernel;
  int nearest;
  float *d_sino;  /* nslices filtered, weighted sinograms */
  float *d_out;   /* nslices slices */
  float *d_w;
  cudaArray_t arr;
  int arr_pair;
  float2 *d_pair;         /* tex2: two slices interleaved */
  cudaTextureObject_t tex;
  int64_t angles_loaded;  /* first angle of the constants in constant memory; -1: none */
  int auto_kernel;        /* the kernel is to be chosen by ctr__fbp_autotune */
} fbp_gpu;

/* The kernel for a name (NULL / "auto": the default for the interpolation). */
ctr_status ctr__fbp_parse_kernel(const char *name, int nearest, fbp_kernel *k);
/* Backprojects slice s0 (and s0 + 1 when pair) of f->d_sino into f->d_out,
 * adding, on stream s. */
ctr_status ctr__fbp_run_kernel(fbp_gpu *f, int64_t s0, int pair, cudaStream_t s);
/* For an automatic kernel choice: the cached choice for this GPU and size,
 * or a short timing run of the exact candidates on slices 0 (and 1) of
 * f->d_sino (f->d_out is clobbered), recorded in the cache (fbp_tune.h). */
ctr_status ctr__fbp_autotune(fbp_gpu *f, int64_t nslices, cudaStream_t s);
/* Frees what f owns (d_sino, d_out, d_w, textures) and zeroes it. */
void ctr__fbp_gpu_free(fbp_gpu *f);

#endif

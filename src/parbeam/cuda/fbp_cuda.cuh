/* Parallel-beam GPU backprojection internals shared by the kernels' file
 * (fbp_cuda.cu) and the end-to-end pipeline (fbp_pipeline.cu). */
#ifndef CTR_FBP_CUDA_CUH
#define CTR_FBP_CUDA_CUH

#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "parbeam/cuda/parbeam_cuda.h"

/* Angles one launch backprojects at most: the layers of a 1D layered texture
 * (maxTexture1DLayered[1] is 2048 on every GPU since Fermi). */
#define MAX_TEX_LAYERS CTR__FBP_TEX_LAYERS

typedef enum fbp_kernel {
  K_TEX = 0, K_TEX2 = 1, K_ALU = 2, K_ALU2 = 3, K_ALU_OS = 4, K_ALU2_OS = 5,
  K_TEX_MP = 6, K_TEX4H = 7, K_ALU2_H = 8, K_HYBRID = 9, K_COUNT
} fbp_kernel;
static const char *const kernel_names[K_COUNT] = {"tex",    "tex2",  "alu",    "alu2",   "alu-os",
                                                  "alu2-os", "tex-mp", "tex4h", "alu2-h", "hybrid"};

/* Slices one launch of kernel k reconstructs at most: the pair kernels 2,
 * tex4h 4 (callers pass fewer for the last slices of a stack). */
static inline int ctr__fbp_kernel_slices(fbp_kernel k) {
  switch (k) {
  case K_TEX2: case K_ALU2: case K_ALU2_OS: case K_ALU2_H: case K_HYBRID: return 2;
  case K_TEX4H: return 4;
  default: return 1;
  }
}

/* The hybrid kernel's texture blocks per SM when ctr_tuning.fbp_hybrid_tex
 * is 0 (docs/parallel-beam.md, docs/tuning.md). */
#define HYBRID_TEX_DEFAULT 1

/* Device state of a run: sinograms (filtered, weighted) and slices. */
typedef struct fbp_gpu {
  const ctr_context *ctx; /* its tuning table (ctr__tuning) */
  const ctr_parallel_geometry *g;
  fbp_kernel kernel;
  int nearest;
  float *d_sino;  /* nslices filtered, weighted sinograms */
  float *d_out;   /* nslices slices */
  size_t sino_bytes, out_bytes; /* d_sino's and d_out's sizes (the GPU buffer cache's keys: every
                                   device buffer of f comes from it and goes back to it) */
  float *d_w;
  cudaArray_t arr;
  int arr_kind;           /* texel of arr: 0 float, 1 float2 (tex2, hybrid), 2 half4 (tex4h) */
  void *d_stage;          /* tex2 / hybrid float2, tex4h half4: interleaved slices (8 bytes a texel) */
  unsigned *d_amax;       /* tex4h, alu2-h: bits of the largest |value| of the launch's data */
  void *d_hyb;            /* hybrid: work queue and per-SM block counters, cleared per launch */
  cudaTextureObject_t tex;
  float4 *d_ang;          /* every angle's (c, s, t0, 0), uploaded on the first launch */
  double *d_t0d;          /* every angle's t0 in double (the ALU kernels' block origins) */
  float4 *h_ang;          /* d_ang's host copy (the texture kernels' parameters) */
  int auto_kernel;        /* the kernel is to be chosen by ctr__fbp_autotune */
} fbp_gpu;

/* The kernel for a name (NULL / "auto": the default for the interpolation). */
ctr_status ctr__fbp_parse_kernel(const char *name, int nearest, fbp_kernel *k);
/* Backprojects slices [s0, s0 + count) of f->d_sino into f->d_out, adding,
 * on stream s; 1 <= count <= ctr__fbp_kernel_slices(f->kernel). */
ctr_status ctr__fbp_run_slices(fbp_gpu *f, int64_t s0, int count, cudaStream_t s);
/* The live FBP's continued sum (fbp_pipeline.cu's accumulator): whether
 * kernel k continues one (the ALU kernels without half data: their sums
 * are per pixel, in angle order, with no launch-wide scale), and the
 * launch: `count` slices (1 .. the kernel's) of filtered, weighted
 * sinograms `sino` (n angles of nbins each, sino_stride floats between
 * slices) for the geometry's angles [a0, a0 + n), all within one launch
 * group of MAX_TEX_LAYERS angles, continuing the sums in `out` (count
 * slices of nx x ny from there: each pixel's accumulators loaded, the
 * angles added in order, stored back), on stream s. */
int ctr__fbp_kernel_continues(fbp_kernel k);
ctr_status ctr__fbp_run_continue(fbp_gpu *f, const float *sino, long long sino_stride, int count,
                                 int64_t a0, int64_t n, float *out, cudaStream_t s);
/* The same for slice s0 (and s0 + 1 when pair). */
ctr_status ctr__fbp_run_kernel(fbp_gpu *f, int64_t s0, int pair, cudaStream_t s);
/* For an automatic kernel choice: the cached choice for this GPU and size,
 * or a short timing run of the exact candidates on slices 0 (and 1) of
 * f->d_sino (f->d_out is clobbered), recorded in the cache (fbp_tune.h). */
ctr_status ctr__fbp_autotune(fbp_gpu *f, int64_t nslices, cudaStream_t s);
/* Gives back what f owns (d_sino, d_out, d_w, textures, scratch: the buffers
 * to f->ctx's GPU buffer cache) and zeroes it. The device is current and
 * done with them. */
void ctr__fbp_gpu_free(fbp_gpu *f);

#endif

/* The CUDA backend's entry points of parallel-beam reconstruction and the
 * synchrotron corrections (fbp_cuda.cu, fbp_pipeline.cu,
 * corrections_cuda.cu); backend_cuda.c puts them in the backend table of
 * parbeam/backend.h, through which the rest of the library reaches them. */
#ifndef CTR_PARBEAM_CUDA_H
#define CTR_PARBEAM_CUDA_H

#include "parbeam/sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPU backprojection with the named kernel (NULL: default); sino and
 * slices in host or GPU memory (cudaMemcpyDefault). bad not NULL: the data
 * policy on the device, bad slice values replaced by 0 and counted there. */
ctr_status ctr__fbp_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                            const ctr_fbp_options *o, int64_t nslices, const float *sino,
                            float *slices, int64_t *bad);
/* ctr_fbp_projections on the GPU (arguments checked by the caller). The
 * data policy runs on the device: bad[0] counts input values replaced by 0
 * (-log values of infinite projections), bad[1] slice values replaced by 0. */
ctr_status ctr__fbp_projections_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                     const ctr_fbp_options *o, const void *proj, ctr_dtype dtype,
                                     int64_t nrows, const float *flat, const float *dark,
                                     int64_t row0, int64_t nslices, float *slices, int64_t bad[2]);
/* ctr_fbp on the GPU: sinograms filtered with cuFFT and backprojected on
 * the device, chunk by chunk on two streams; bad[0] counts the sinogram
 * values replaced by 0, bad[1] the slice values. sino and slices may be
 * host or GPU memory (read in place on the GPU that runs a chunk, else
 * copied with cudaMemcpyDefault); the caller has waited for their
 * producers. */
ctr_status ctr__fbp_sinograms_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                   const ctr_fbp_options *o, const float *sino, int64_t nslices,
                                   float *slices, int64_t bad[2]);
/* Benchmark: the same with the sinograms resident on the device, `repeats`
 * timed passes after a warm-up; the median pass in *median_ms; slices (may
 * be NULL) get the result. */
ctr_status ctr__fbp_bench_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *o, int64_t nslices, const float *sino,
                               float *slices, int repeats, double *median_ms);
/* What the CUDA runtime says of the ALU kernel instance a backprojection
 * with options o on g would launch for `count` slices (1, or 2 for the
 * pair kernels) under ctx's tuning (ctr_tuning.fbp_occupancy,
 * fbp_angle_cache, fbp_carveout): cudaFuncGetAttributes and
 * cudaOccupancyMaxActiveBlocksPerMultiprocessor, for the benchmark's
 * study of Chilingaryan et al. 2020, Tables 18 and 19 (bench_fbp --study). The ALU
 * kernels only (alu, alu2, alu-os, alu2-os, alu2-h): CTR_E_UNSUPPORTED
 * for the others. */
typedef struct ctr__fbp_kernel_attrs {
  int registers;          /* per thread */
  int local_bytes;        /* local memory per thread (register spills) */
  int shared_bytes;       /* shared memory per block, static and dynamic */
  int threads;            /* per block */
  int min_blocks;         /* the instance's __launch_bounds__ minimum of blocks per SM (0: none) */
  int blocks_per_sm;      /* resident at once (registers, shared memory and the carveout) */
  int max_threads_per_sm; /* the GPU's: theoretical occupancy = blocks_per_sm * threads / this */
} ctr__fbp_kernel_attrs;
ctr_status ctr__fbp_kernel_info(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                const ctr_fbp_options *o, int count, ctr__fbp_kernel_attrs *info);
/* The live FBP's full volume summed on the context's first GPU
 * (parbeam/backend.h's acc_*; fbp_pipeline.cu). */
struct ctr__fbp_acc;
ctr_status ctr__fbp_acc_open(const ctr_context *ctx, const ctr_parallel_geometry *g,
                             const ctr_fbp_options *o, ctr_dtype dtype, int64_t W, int64_t H,
                             int64_t row0, int64_t nslices, int64_t band_rows, const float *flat,
                             const float *dark, int64_t maxk, struct ctr__fbp_acc **out);
ctr_status ctr__fbp_acc_add(struct ctr__fbp_acc *a, const void *proj, int64_t k,
                            double device_s[2]);
ctr_status ctr__fbp_acc_get(struct ctr__fbp_acc *a, int64_t s0, int64_t ns, float *dst,
                            int64_t *bad_input);
void ctr__fbp_acc_free(struct ctr__fbp_acc *a);
/* The laminographic backprojection (parbeam/backend.h's lamino_backproject)
 * on the context's first GPU: host arrays in and out, the CPU's bits
 * (lamino_cuda.cu). */
ctr_status ctr__lamino_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *o, int64_t nz, const float *sino,
                               float *slices, int64_t *bad);
/* GPU versions on the context's first GPU (host arrays in and out). */
ctr_status ctr__dezinger_cuda(const ctr_context *ctx, double threshold, int size, int64_t nb,
                              int64_t na, int64_t ns, float *sino, int64_t *replaced);
ctr_status ctr__stripes_cuda(const ctr_context *ctx, const ctr_corrections *c, int64_t nb,
                             int64_t na, int64_t ns, float *sino);
/* margin: ctr_paganin_margin (paganin.c) */
ctr_status ctr__paganin_cuda(const ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                             int64_t margin, int64_t w, int64_t h, int64_t n, float *img);

#ifdef __cplusplus
}
#endif
#endif

/* Laminographic backprojection on the GPU (a tilted rotation axis,
 * docs/geometry.md "Laminography"): the terms of parbeam/lamino_math.h, the
 * CPU's (src/parbeam/cpu/lamino_cpu.c), added per voxel in view order, so
 * the two give the same bits.
 *
 * One thread per voxel. Every slice needs every detector row, so a pass
 * holds a slab of slices and a chunk of views (all their rows) on the GPU;
 * within the context's GPU budget (ctr_fbp_options.gpu_budget, or the
 * detected one) the slab is as thick as fits half of it, the chunk as many
 * views as fit the rest. A slab's voxels carry their float sums from one
 * chunk to the next, which continues the one sum the CPU makes. */
#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "parbeam/cuda/parbeam_cuda.h"
#include "parbeam/parbeam.h"

#include <stdlib.h>

/* Voxels (i, j, z0 + k) of a slab of nzs slices of nx x ny: out += the terms
 * of views [0, nc) of the chunk (views a0 + c of the scan; their filtered
 * rows nb x nc x nr in `sino`). */
__global__ static void lamino_bp_kernel(const ctr__lamino_view *__restrict__ views,
                                        const float *__restrict__ sino, int nb, int nc, int nr,
                                        int nx, int ny, int nzs, int z0, int nearest,
                                        float *__restrict__ out) {
  const long long n = (long long)nx * ny * nzs;
  const long long id = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= n) return;
  const int i = (int)(id % nx), j = (int)((id / nx) % ny), k = (int)(id / ((long long)nx * ny));
  float acc = out[id];
  for (int c = 0; c < nc; c++)
    acc = __fadd_rn(acc, (float)ctr__lamino_term(&views[c], sino, nb, nc, nr, c, i, j, z0 + k,
                                                  nearest));
  out[id] = acc;
}

/* The slab (slices) and chunk (views) of a pass within `budget` bytes;
 * CTR_E_DEVICE_OUT_OF_MEMORY when one slice and one view do not fit. */
static ctr_status lamino_pass_sizes(const ctr_parallel_geometry *g, int64_t nz, uint64_t budget,
                                    const char *field, int64_t *slab, int64_t *chunk) {
  const uint64_t plane = 4ull * (uint64_t)(g->p.nx * g->p.ny);
  const uint64_t view = 4ull * (uint64_t)(g->p.nbins * g->p.nrows) + sizeof(ctr__lamino_view);
  int64_t s = (int64_t)((budget / 2) / plane);
  if (s > nz) s = nz;
  if (s < 1) s = budget > plane ? 1 : 0;
  const uint64_t left = s > 0 ? budget - (uint64_t)s * plane : 0;
  int64_t c = (int64_t)(left / view);
  if (c > g->p.nangles) c = g->p.nangles;
  if (s < 1 || c < 1)
    CTR_FAIL_FIELD(CTR_E_DEVICE_OUT_OF_MEMORY, field ? field : "ctr_fbp_options.gpu_budget",
                   "ctr_fbp (tilted axis) on the GPU: one slice (%.3g MB) and one view's %lld "
                   "filtered rows (%.3g MB) do not fit in the GPU budget "
                   "(ctr_fbp_options.gpu_budget) of %.3g MB: raise the budget, or use a CPU "
                   "context (ctrecon: --device cpu)",
                   (double)plane / 1e6, (long long)g->p.nrows, (double)view / 1e6,
                   (double)budget / 1e6);
  *slab = s;
  *chunk = c;
  return CTR_OK;
}

extern "C" ctr_status ctr__lamino_bp_cuda(const ctr_context *ctx, const ctr_parallel_geometry *g,
                                          const ctr_fbp_options *o, int64_t nz, const float *sino,
                                          float *slices, int64_t *bad) {
  const int64_t nb = g->p.nbins, na = g->p.nangles, nr = g->p.nrows;
  const int64_t plane = g->p.nx * g->p.ny;
  const uint64_t given = o ? o->gpu_budget : 0;
  uint64_t budget = given;
  int64_t S, C;
  CU_DEVICE(ctr__context_gpu(ctx, 0));
  if (!budget) CTR_CHECK(ctr__gpu_budget_detect(ctx, ctr__context_gpu(ctx, 0), &budget));
  CTR_CHECK(lamino_pass_sizes(g, nz, budget, given ? "ctr_fbp_options.gpu_budget" : NULL, &S, &C));
  ctr_status st = CTR_OK;
  ctr__lamino_view *views = (ctr__lamino_view *)ctr__malloc(sizeof *views * (size_t)na,
                                                            "laminography views");
  ctr__lamino_view *d_views = NULL;
  float *d_sino = NULL, *d_out = NULL;
  unsigned long long *d_bad = NULL, h_bad = 0;
  const size_t vbytes = sizeof *views * (size_t)na, sbytes = 4 * (size_t)(nb * C * nr),
               obytes = 4 * (size_t)(plane * S);
  if (!views) return CTR_E_OUT_OF_MEMORY;
  ctr__lamino_views(g, nz, 0, na, views);
  GPU_GET(ctx, d_views, vbytes, "laminography view constants");
  GPU_GET(ctx, d_sino, sbytes, "laminography filtered views");
  GPU_GET(ctx, d_out, obytes, "laminography slices");
  GPU_GET(ctx, d_bad, sizeof h_bad, "laminography value counter");
  CU(cudaMemcpy(d_views, views, vbytes, cudaMemcpyHostToDevice));
  CU(cudaMemset(d_bad, 0, sizeof h_bad));
  for (int64_t z0 = 0; z0 < nz; z0 += S) {
    const int64_t ns = nz - z0 < S ? nz - z0 : S, n = plane * ns;
    CU(cudaMemset(d_out, 0, 4 * (size_t)n));
    for (int64_t a0 = 0; a0 < na; a0 += C) {
      const int64_t nc = na - a0 < C ? na - a0 : C;
      /* rows of the chunk's views: nb x nc of each of the nr rows */
      CU(cudaMemcpy2D(d_sino, 4 * (size_t)(nb * nc), sino + a0 * nb, 4 * (size_t)(nb * na),
                      4 * (size_t)(nb * nc), (size_t)nr, cudaMemcpyHostToDevice));
      lamino_bp_kernel<<<(unsigned)((n + 255) / 256), 256>>>(
          d_views + a0, d_sino, (int)nb, (int)nc, (int)nr, (int)g->p.nx, (int)g->p.ny, (int)ns,
          (int)z0, o->interp == CTR_FBP_NEAREST, d_out);
      CU_LAUNCHED("lamino_bp_kernel");
      CTR_CHECK_GOTO(st, ctr__progress(ctx, "fbp", (double)(z0 * na + (a0 + nc) * ns) /
                                                       (double)(nz * na)));
    }
    CTR_CHECK_GOTO(st, ctr__gpu_sanitize(d_out, (long long)n, d_bad, 0));
    CU(cudaMemcpy(slices + z0 * plane, d_out, 4 * (size_t)n, cudaMemcpyDeviceToHost));
  }
  CU(cudaMemcpy(&h_bad, d_bad, sizeof h_bad, cudaMemcpyDeviceToHost));
  *bad = (int64_t)h_bad;
cleanup:
  cudaDeviceSynchronize(); /* the buffers go back unused */
  GPU_PUT(ctx, d_views, vbytes);
  GPU_PUT(ctx, d_sino, sbytes);
  GPU_PUT(ctx, d_out, obytes);
  GPU_PUT(ctx, d_bad, sizeof h_bad);
  free(views);
  return st;
}

/* The device memory models of the GPU FBP pipeline (cuda/fbp_pipeline.cu)
 * and of the GPU backprojection of filtered sinograms (ctr_fbp_backproject,
 * cuda/fbp_cuda.cu): pure functions of sizes (no GPU is touched), so their
 * plans and refusals can be made and tested anywhere; the GPU code allocates
 * what they count. */
#include "parbeam/parbeam.h"
#include "filter/filter.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

uint64_t ctr__fbp_gpu_bytes(const ctr_parallel_params *p, size_t raw_elem, int64_t calib_rows,
                            int64_t chunk) {
  const uint64_t nb = (uint64_t)p->nbins, na = (uint64_t)p->nangles, S = (uint64_t)chunk;
  const uint64_t nf = (uint64_t)ctr__ramp_padded_length(p->nbins) / 2 + 1, ld = 2 * nf;
  const uint64_t layers = (uint64_t)min64(CTR__FBP_TEX_LAYERS, p->nangles);
  /* one buffer set: raw rows (none when read in place), the padded FFT
   * rows and cuFFT's work areas for them (counted as large as the rows),
   * the filtered sinograms, the slices, the backprojector's texture array
   * and staging (8-byte texels at most) and its angle tables */
  const uint64_t set = raw_elem * nb * na * S + 2u * 4u * ld * na * S + 4u * nb * na * S +
                       4u * (uint64_t)(p->nx * p->ny) * S + 2u * 8u * nb * layers + 24u * na;
  /* the filter's kernel, the weights, the counters, flat and dark rows */
  const uint64_t fixed = 4u * nf + 4u * na + 16u + 2u * 4u * nb * (uint64_t)calib_rows;
  return fixed + 2u * set; /* two sets alternate on two streams */
}

/* A budget too small for the least working set `least`: refused naming
 * `what` (the field the caller gave), else nothing. */
static ctr_status refuse(const ctr_parallel_params *p, uint64_t budget, uint64_t least,
                         const char *what, const char *kind, const char *set) {
  if (!what || least <= budget) return CTR_OK;
  char b1[32], b2[32];
  CTR_FAIL_FIELD_VALUE(CTR_E_DEVICE_OUT_OF_MEMORY, what, CTR__V_UINT(budget),
                 "%s of %s is too small for %s of %lld bins x %lld angles into %lld x %lld "
                 "slices: the smallest working set (%s) needs %s of GPU memory per GPU",
                 what, ctr__format_bytes((double)budget, b1, sizeof b1), kind,
                 (long long)p->nbins, (long long)p->nangles, (long long)p->nx, (long long)p->ny,
                 set, ctr__format_bytes((double)least, b2, sizeof b2));
}

ctr_status ctr__fbp_gpu_chunk(const ctr_parallel_params *p, size_t raw_elem, int64_t calib_rows,
                              int64_t nslices, uint64_t budget, const char *what,
                              int64_t *chunk) {
  int64_t S = min64(CTR__FBP_GPU_CHUNK, nslices < 1 ? 1 : nslices);
  while (S > 1 && ctr__fbp_gpu_bytes(p, raw_elem, calib_rows, S) > budget) S--;
  *chunk = S;
  return refuse(p, budget, ctr__fbp_gpu_bytes(p, raw_elem, calib_rows, 1), what, "FBP",
                calib_rows ? "chunks of one slice, flat and dark rows of the range"
                           : "chunks of one slice");
}

uint64_t ctr__fbp_bp_gpu_bytes(const ctr_parallel_params *p, int64_t chunk) {
  const uint64_t nb = (uint64_t)p->nbins, na = (uint64_t)p->nangles, S = (uint64_t)chunk;
  const uint64_t layers = (uint64_t)min64(CTR__FBP_TEX_LAYERS, p->nangles);
  /* the chunk's sinograms and slices; the angular weights and the angle
   * tables (float4 and double per angle); a texture kernel's layered array
   * and staging (8-byte texels at most); counters and the hybrid kernel's
   * work queue */
  return 4u * nb * na * S + 4u * (uint64_t)(p->nx * p->ny) * S + (4u + 16u + 8u) * na +
         2u * 8u * nb * layers + CTR__FBP_BP_SMALL;
}

ctr_status ctr__fbp_bp_gpu_chunk(const ctr_parallel_params *p, int64_t nslices, uint64_t budget,
                                 const char *what, int64_t *chunk) {
  const int64_t n = nslices < 1 ? 1 : nslices;
  int64_t S = n;
  if (ctr__fbp_bp_gpu_bytes(p, S) > budget) {
    /* the largest that fits (bisection: the bytes grow with S) */
    int64_t lo = 1, hi = n - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (ctr__fbp_bp_gpu_bytes(p, mid) <= budget) lo = mid;
      else hi = mid - 1;
    }
    S = lo;
    /* whole launches of the 2- and 4-slice kernels fall as in one pass */
    if (S >= CTR__FBP_BP_ALIGN) S -= S % CTR__FBP_BP_ALIGN;
  }
  *chunk = S;
  return refuse(p, budget, ctr__fbp_bp_gpu_bytes(p, 1), what, "the GPU backprojection",
                "chunks of one slice");
}

/* The CUDA backend's backprojection kernels as seen from C: variants, launch
 * configuration (with the tuning table applied), and the kernel-level entry
 * points for tests and benchmarks (kernel_harness.cu). */
#ifndef CTR_BP_CONFIG_H
#define CTR_BP_CONFIG_H

#include "filter/filter.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Backprojection kernel variants (docs/cuda.md):
 *  TEX        Lu et al. 2016, Alg. 1: layered float texture, hardware bilinear
 *  TEX_PAIR   float2 layered texture holding each view and its mirror about
 *             the central row: one fetch updates a voxel and its mirror about
 *             the source plane (circular orbits, symmetric detector/volume)
 *  TEX_PAIR_HALF  TEX_PAIR stored as half2 (half the cache footprint), each
 *             batch scaled by a power of two so that half cannot overflow
 *  EXACT      fp32 software bilinear from zero-padded global memory
 *  EXACT_PAIR EXACT with the mirrored pair interleaved as float2
 *  ALU        EXACT's interpolation from a per-block shared-memory cache of
 *             the detector rectangle a tile of voxels sees (bp_alu.cuh):
 *             orbits with u and c constant along z, flat detectors; others
 *             run EXACT (ctr__bp_config_resolve) */
typedef enum ctr__bp_variant {
  CTR__BP_AUTO = 0,
  CTR__BP_TEX = 1,
  CTR__BP_TEX_PAIR = 2,
  CTR__BP_EXACT = 3,
  CTR__BP_EXACT_PAIR = 4,
  CTR__BP_TEX_PAIR_HALF = 5,
  CTR__BP_PRECISE = 6,     /* EXACT at double-precision positions */
  CTR__BP_PRECISE_PAIR = 7, /* EXACT_PAIR at double-precision positions */
  CTR__BP_PRECISE_GENERAL = 8, /* PRECISE for any orbit: cells of bilinear
                                  coefficients, runs outside the detector
                                  skipped (bp_general.cuh) */
  CTR__BP_ALU = 9 /* EXACT from shared memory (bp_alu.cuh) */
} ctr__bp_variant;

typedef struct ctr__bp_config {
  ctr__bp_variant variant;
  int views_per_launch; /* N' (<= CTR__BP_MAX_VIEWS) */
  int slices_per_thread; /* Z': 1, 2, 4, 8 or 16 (PRECISE_GENERAL: also 32) */
  int block_x, block_y;  /* threads per block in x and y */
  int default_shape;     /* PRECISE_GENERAL with Z' and block left to the defaults: each
                            launch picks its registers from its views (bp_general.cu) */
  int regs;              /* PRECISE_GENERAL at Z' = 16: 64 or 80 registers forced
                            (ctr_tuning.bp_regs); 0 = per launch */
  int alu;               /* exact interpolation (AUTO resolved to EXACT or EXACT_PAIR) on
                            an orbit the ALU kernel takes: 1 = the ALU kernel, -1 = not,
                            0 = the default (ctr_tuning.bp_alu) */
} ctr__bp_config;

/* req (NULL: all defaults) with the context's tuning table applied to the
 * fields it leaves at 0: ctr_tuning.bp_slices, bp_block_x/y (both or
 * neither), bp_regs. Pass the result to ctr__bp_config_resolve. */
static inline ctr__bp_config ctr__bp_config_tuned(const ctr_context *ctx,
                                                  const ctr__bp_config *req) {
  ctr__bp_config c;
  memset(&c, 0, sizeof c);
  if (req) c = *req;
  const ctr_tuning *t = ctr__tuning(ctx);
  if (c.slices_per_thread <= 0 && t->bp_slices > 0) c.slices_per_thread = t->bp_slices;
  if (c.block_x <= 0 && c.block_y <= 0 && t->bp_block_x > 0)
    c.block_x = t->bp_block_x, c.block_y = t->bp_block_y;
  if (!c.regs) c.regs = t->bp_regs;
  if (!c.alu) c.alu = t->bp_alu;
  return c;
}

#define CTR__BP_MAX_VIEWS 64

/* The variant's name (ctrecon's and the benchmarks' word for it); inline, so
 * that every kernel source can say it without an edge between their objects. */
static inline const char *ctr__bp_variant_name(ctr__bp_variant v) {
  switch (v) {
    case CTR__BP_AUTO: return "auto";
    case CTR__BP_TEX: return "tex";
    case CTR__BP_TEX_PAIR: return "tex-pair";
    case CTR__BP_EXACT: return "exact";
    case CTR__BP_EXACT_PAIR: return "exact-pair";
    case CTR__BP_PRECISE: return "precise";
    case CTR__BP_PRECISE_PAIR: return "precise-pair";
    case CTR__BP_TEX_PAIR_HALF: return "tex-pair-half";
    case CTR__BP_PRECISE_GENERAL: return "precise-general";
    case CTR__BP_ALU: return "alu";
  }
  return "unknown";
}


/* Resolves AUTO and zero fields to the tuned defaults for the geometry. */
ctr__bp_config ctr__bp_config_resolve(const ctr_geometry *g, const ctr_fdk_options *o,
                                      const ctr__bp_config *req);

/* Filters n views on the GPU exactly as ctr_fdk_filter does on the CPU
 * (host in, host out, unpadded float32). For tests. */
ctr_status ctr__cuda_fdk_filter(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, int64_t v0, int64_t n,
                                const float *in, float *out);

/* Backprojection only, for tests and benchmarks: uploads already filtered
 * views (host, unpadded) into the variant's device layout, then runs the
 * backprojection `repeats` times into a zeroed device volume, reporting the
 * median kernel time; copies the last volume to vol (may be NULL). */
ctr_status ctr__cuda_backproject(const ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_fdk_options *o, const ctr__bp_config *cfg,
                                 const float *filtered, float *vol, int repeats,
                                 double *median_ms);

/* Two kernels side by side (issue 48's hybrid, measured): req_a backprojects the
 * first share_a of the views on one stream while req_b backprojects the rest on
 * another, each into its own zeroed volume, then the second volume is added to the
 * first; the median of `repeats` of the whole (both launched to the sum done) in
 * *median_ms and each stream's own time in parts_ms (may be NULL); the summed volume
 * to vol (may be NULL). For benchmarks. */
ctr_status ctr__cuda_backproject_hybrid(const ctr_context *ctx, const ctr_geometry *g,
                                        const ctr_fdk_options *o, const ctr__bp_config *req_a,
                                        const ctr__bp_config *req_b, double share_a,
                                        const float *filtered, float *vol, int repeats,
                                        double *median_ms, double parts_ms[2]);

/* Autotuning of cfg's Z' and block (bp_tune.cu; core/autotune.h): cfg is
 * a resolved configuration of the kernel a run uses on `device` for (g, o);
 * unless ctr_tuning.tune is off, both fields were set by hand, or the
 * variant is the general kernel (its shape is chosen per launch), its
 * slices_per_thread and block_x/y become the tuned ones for the problem's
 * class: the context's or the cache's, else found by a timed trial run
 * (force: always), which r (may be NULL) reports. The trial times whole
 * launches as the run makes them: N' views over a slab of `slab` slices (the
 * run's plan's; 0: o->nz, the whole volume) about the volume's centre. The
 * trial's buffers come from and go back to the context's GPU buffer cache;
 * when they do not fit the GPU budget (or `cap` bytes, when not 0: a run's
 * planned GPU memory, which its trial never exceeds) cfg stays as it is. */
ctr_status ctr__bp_tune(ctr_context *ctx, int device, const ctr_geometry *g,
                        const ctr_fdk_options *o, ctr__bp_config *cfg, int64_t slab,
                        uint64_t cap, int force, ctr_tune_report *r);

#ifdef __cplusplus
}
#endif
#endif

/* The general-orbit backprojection kernel (variant PRECISE_GENERAL): any
 * projection matrices, positions good to double precision, one 16-byte load
 * and three FMAs of interpolation per update, and blocks of voxels that see
 * nothing of a view skip it (docs/cuda.md, bench/NOTES.md issue 7).
 *
 * Layout of a view (CTR__STORE_COEF): a padded float4 image of cells. Cell
 * (g, h), g in [-2, nu], h in [-2, nv], holds the bilinear polynomial of the
 * pixels (g..g+1, h..h+1) (zero outside the detector) in centred fractions
 * s, t in [-1/2, 1/2]:
 *     value = x + y s + z t + w s t
 * with x the mean of the four pixels, y and z the mean slopes along u and v,
 * w the cross term. Rows are `pitch` cells apart (pitch >= nu + 3, chosen by
 * ctr__bpg_pitch), views `pitch * (nv + 3)` cells; cell (0, 0) sits
 * CTR__BPG_ORIGIN(pitch) cells after the start of the view (the constants
 * are in common/projmath.h, which the planner's memory model shares). */
#ifndef CTR_BP_GENERAL_CUH
#define CTR_BP_GENERAL_CUH

#include "core/projmath.h"
#include "conebeam/cuda/bp_kernels.cuh"

/* Row length in cells for a detector nu wide: at least nu + 3, chosen so
 * that the kernel's wrapped 32-bit cell indices never wrap (see
 * bp_general.cu). */
int ctr__bpg_pitch(int64_t nu);

/* Whether the general kernel applies to g's volume (slab [z0, z0 + nz)):
 * every voxel in front of every source and at most CTR__BPG_MAX_STEP pixels
 * between neighbouring slices on the detector. */
int ctr__bpg_possible(const ctr_geometry *g, int64_t z0, int64_t nz);

/* The cell of pixels (g..g+1, h..h+1), q00 = Q[h][g], q01 = Q[h][g+1],
 * q10 = Q[h+1][g], q11 = Q[h+1][g+1]; computed in double, rounded once. */
static __device__ __forceinline__ float4 ctr__bpg_cell(float q00, float q01, float q10,
                                                        float q11) {
  const double a = q00, b = q01, c = q10, d = q11;
  return make_float4((float)(0.25 * ((a + b) + (c + d))), (float)(0.5 * ((b - a) + (d - c))),
                     (float)(0.5 * ((c - a) + (d - b))), (float)((d - c) - (b - a)));
}

/* Launches the general kernel (ZP in 1, 2, 4, 8, 16, 32). */
ctr_status ctr__bpg_launch(const ctr__bp_config *cfg, const ctr__bp_args *args,
                           const ctr__bp_views *bv, cudaStream_t s);

#endif

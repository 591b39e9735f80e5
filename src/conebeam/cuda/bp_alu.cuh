/* The shared-memory ("ALU") cone-beam backprojection kernel (variant ALU):
 * exact interpolation for orbits on which u and the depth c do not change
 * along z (ctr_geometry_is_circular) and a flat detector, in the manner of
 * the parallel-beam alu kernels (src/parbeam/cuda/fbp_cuda.cu): each block
 * caches, per view, the detector rectangle its tile of voxels projects to
 * in shared memory and interpolates from there in software; each thread
 * accumulates a column's Z' slices (docs/cuda.md, "The ALU kernel"; the
 * count in bench/NOTES.md, "Cone-beam ALU backprojection (issue 48 item 3)").
 *
 * Views are read from the plain zero-padded float layout (CTR__STORE_LINEAR,
 * ctr__padded_pitch); a.pad points at pixel (0, 0) of view 0. */
#ifndef CTR_BP_ALU_CUH
#define CTR_BP_ALU_CUH

#include "conebeam/cuda/bp_kernels.cuh"

/* Columns of voxels a block covers in x and in y (its threads: one column
 * each, ALU_TILE^2 of them). The launch configuration's block shape does not
 * apply: ctr__bp_config_resolve sets it to this tile. */
#define CTR__BPA_TILE 16

/* Launches the ALU kernel (Z' = cfg->slices_per_thread in 1, 2, 4, 8, 16)
 * over bv's views; args as for ctr__bp_launch with the padded float layout.
 * The caller has checked that the orbit is circular and the detector flat. */
ctr_status ctr__bpa_launch(const ctr__bp_config *cfg, const ctr__bp_args *args,
                           const ctr__bp_views *bv, cudaStream_t s);

#endif

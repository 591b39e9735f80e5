/* Backprojection kernels: launch interface shared by the CUDA sources. */
#ifndef CTR_BP_KERNELS_CUH
#define CTR_BP_KERNELS_CUH

#include "conebeam/cuda/bp_config.h"
#include "gpu/cuda_util.h"

/* Per-launch view constants, passed as a kernel parameter (constant bank, so
 * warps read them by broadcast): for each view, the rows a, b, c of the
 * canonical matrix evaluated on the voxel grid, a(i,j,k) = m[0] + i m[1] +
 * j m[2] + k m[3] (b: m[4..7], c: m[8..11]); texture variants have the
 * +0.5 texel-centre shift folded in. 9 KB: kernel parameters may hold up to
 * 32 KB since CUDA 12.1. */
struct ctr__bp_views {
  int n;     /* views in this launch */
  int first; /* layer / view index of the first one in the device layout */
  float m[CTR__BP_MAX_VIEWS][12];
  double md[CTR__BP_MAX_VIEWS][12]; /* the same in double: exact variants' coordinates */
  /* helical geometries (PRECISE_GENERAL; a curved detector's EXACT, bp_kernel's CYL HELIX):
     each view's window argument at grid slice 0,
     2 pi (src_z - z(slice 0)) / pitch_mm (filter/helix_weight_math.h); else 0 */
  double hz[CTR__BP_MAX_VIEWS];
};

struct ctr__bp_args {
  cudaTextureObject_t tex; /* TEX, TEX_PAIR */
  const void *pad;         /* EXACT*: pixel (0, 0) of view 0 in the padded buffer */
  long long view_stride;   /* EXACT*: elements between views */
  int pitch, nu, nv;
  float *vol;
  int nx, ny;
  int nzs;       /* slices in the device volume */
  int k_begin;   /* first slice the grid covers */
  int nz_thread; /* one past the last slice the grid covers (pairs: of the lower half) */
  long long slice; /* nx * ny */
  const float *wscale; /* per layer/view weight factor (TEX_PAIR_HALF), else NULL */
  /* helical FDK's window (PRECISE_GENERAL, and a curved detector's EXACT: bp_kernel's CYL
     HELIX; docs/geometry.md, "Helical orbits"):
     helix 1 weights view n's update of grid slice k by w(hz[n] - k helix_dk, helix_s) and
     clamps v to the detector's edge rows [0, nv - 1] */
  int helix;
  float helix_s;  /* the window's smoothing width, radians */
  float helix_dk; /* the argument's change per slice, 2 pi voxel_z / pitch_mm */
};

/* The hardware reciprocal (MUFU, ~1 ulp): for the per-update reciprocals of
 * non-circular orbits, where the IEEE-rounded __frcp_rn costs several
 * instructions per update; 1 ulp is far inside every mode's error budget. */
static __device__ __forceinline__ float ctr__rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

/* Launches one backprojection of bv's views into args->vol. */
ctr_status ctr__bp_launch(const ctr__bp_config *cfg, int circular, const ctr__bp_args *args,
                          const ctr__bp_views *bv, cudaStream_t s);

/* The same for a cylindrical detector (bp_kernel with CYL; bv filled by
 * ctr__bp_views_fill from such a geometry): the tex, tex-pair(-half),
 * exact and exact-pair variants. */
ctr_status ctr__bp_launch_cyl(const ctr__bp_config *cfg, const ctr__bp_args *args,
                              const ctr__bp_views *bv, cudaStream_t s);
/* Fills bv with n views of g (view k: idx[k], or first + k when idx is NULL)
 * for slab z0 (voxel grid folded in), their samples in layers/slots from
 * `layer`; `texture` adds the texel-centre shift; alpha[k] (NULL: 1) scales
 * view k's matrix (same u, v; weight x 1 / alpha^2). A cylindrical
 * detector's views get that kernel's constants instead of matrix rows. */
void ctr__bp_views_fill(const ctr_geometry *g, const int64_t *idx, int64_t first, int n,
                        int64_t layer, int64_t z0, int texture, const double *alpha,
                        ctr__bp_views *bv);

#endif

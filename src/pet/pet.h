/* TOF-PET DIRECT internals: the per-view SR-kernel look-up tables (Ha et al.
 * 2013, section 4.1) in the form both backends consume, the kernel model, and the
 * projector's backend interface. Not installed. */
#ifndef CTR_PET_H
#define CTR_PET_H

#include "core/internal.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One z-run of the kernel support mSR: the offsets (dx, dy, dz0 .. dz0 + len - 1)
 * are support entries e0 .. e0 + len - 1. Entries are ordered by (dx, dy, dz)
 * lexicographically, so the support being point-symmetric, entry e holds the
 * offset -o of entry (nent - 1 - e): the forward projector (a gather with the
 * neighbours' kernels at -o) reads entry nent - 1 - e (Ha et al. 2013, Fig. 2). */
typedef struct ctr__pet_column {
  int16_t dx, dy, dz0, len;
  int32_t e0;
} ctr__pet_column;

/* A view's frame: TOF direction d, LOR-radial r, LOR-axial a (unit vectors). */
typedef struct ctr__pet_frame {
  double phi, theta; /* radians */
  double d[3], r[3], a[3];
} ctr__pet_frame;

/* The tables of one view.
 * lormap[y * nx + x]: kernel identifier of lattice column (x, y): the signed
 *   radial position rho = (x, y, 0) . r in steps of epsilon, offset by nk / 2
 *   and clamped to [0, nk). (r has no z component, so one 2D map serves every
 *   slice, tilted views included.)
 * w[e * nk + id]: value of kernel id at support entry e (mSRval), normalised
 *   to unit sum over the support. Kernel id is the fastest index (transposed
 *   from the paper's per-kernel rows) so that neighbouring voxels, whose ids
 *   are close, read neighbouring words.
 * norm[id]: the normalisation factor (value = raw model * norm), so the FFT
 *   reference can apply the identical kernel untruncated.
 * pid: LORmap padded by the system's halo on each side ((nx + 2 halo[0]) x
 *   (ny + 2 halo[1])), ids clamped to the lattice's edge outside it (they
 *   meet zero input there): both backends gather from it without bounds
 *   checks. */
typedef struct ctr__pet_lut {
  ctr__pet_frame f;
  int32_t ncols, nent, nk;
  ctr__pet_column *cols;
  float *w;
  double *norm;
  int32_t *lormap;
  int32_t *pid;
  int hx, hy, hz; /* largest |dx|, |dy|, |dz| in the support */
} ctr__pet_lut;

struct ctr_pet_system {
  ctr_pet_params p;
  ctr_pet_kernel_params k;
  double *radial_table;     /* owned copy (2 * n doubles) */
  int64_t nviews;
  double sigma_tof, sigma_axial; /* mm */
  double edge_radius;       /* mm, resolved */
  int nk;                   /* kernels per view (same for every view) */
  int halo[3];              /* largest support half-extent over all views (voxels) */
  ctr__pet_lut **luts;      /* nviews, built on first use */
  pthread_mutex_t lock;
};

/* ---- The SR-kernel model (pet_kernel.c) ---------------------------------- */

/* A Gaussian's sigma per unit FWHM (1 / (2 sqrt(2 ln 2))). */
#define CTR__PET_FWHM_TO_SIGMA (1.0 / 2.3548200450309493)

/* The frame of view v. */
void ctr__pet_frame_of(const ctr_pet_system *s, int64_t v, ctr__pet_frame *f);
/* Signed LOR-radial position (mm) at the centre of kernel id. */
double ctr__pet_kernel_rho(const ctr_pet_system *s, int id);
/* Kernel id of a signed radial position (mm). */
int ctr__pet_kernel_id(const ctr_pet_system *s, double rho_mm);
/* LOR-radial sigma (mm) at radial distance |rho|. */
double ctr__pet_sigma_radial(const ctr_pet_system *s, double rho_mm);
/* Unnormalised model value of the kernel centred at rho for an offset o (mm,
 * lattice axes) in frame f. */
double ctr__pet_kernel_raw(const ctr_pet_system *s, const ctr__pet_frame *f, double rho_mm,
                           const double o[3]);
/* Half-widths (mm) of the kernel support along d, r, a, and its bounding
 * half-extent (voxels) along the lattice axes in frame f. */
void ctr__pet_support_axes(const ctr_pet_system *s, double h[3]);
void ctr__pet_support_box(const ctr_pet_system *s, const ctr__pet_frame *f, int box[3]);

/* ---- The view tables (pet_lut.c) ------------------------------------------ */

/* The tables of view v (built on first use; thread-safe). NULL on failure
 * (detail set). */
const ctr__pet_lut *ctr__pet_lut_get(ctr_pet_system *s, int64_t v);
void ctr__pet_lut_free(ctr__pet_lut *L);

/* CPU projector of one view: out (nx ny nz) = A_v in (forward) or A_v^T in
 * (back). */
/* pad: scratch of ctr__pet_padded_voxels(s) floats whose halo is zero. */
ctr_status ctr__pet_project_cpu(const ctr_pet_system *s, const ctr__pet_lut *L,
                                ctr_pet_direction dir, const float *in, float *pad, float *out);
/* Voxels of the lattice padded by the system's halo on every side. */
int64_t ctr__pet_padded_voxels(const ctr_pet_system *s);

/* Argument checks of ctr_pet_reconstruct, and the value of its uniform
 * start (for an image that is all 0). */
ctr_status ctr__pet_recon_check(const ctr_pet_system *s, const ctr_pet_histo *h,
                                const ctr_pet_recon_options *o, const float *image);
/* The uniform start: the total activity of the data (`total`: the sum of
 * the counts, from the data check's pass, ctr__values_count_nonneg) spread
 * evenly over nvox voxels (1 when there is none); for the CPU and the CUDA
 * reconstructions alike. */
static inline float ctr__pet_uniform_value(double total, int64_t nvox) {
  return total > 0 ? (float)(total / (double)nvox) : 1.0f;
}
/* ctr_pet_project after its checks (arrays in host memory on a CPU
 * projector). */
ctr_status ctr__pet_project(ctr_pet_projector *p, ctr_pet_direction dir, int64_t view,
                            const float *in, float *out);

/* The CPU's FFT reference (cpu/pet_fft.c; arguments checked by
 * ctr_pet_project_fft). */
ctr_status ctr__pet_fft_cpu(ctr_pet_system *s, int64_t view, int64_t pad, const float *in,
                            float *out);

struct ctr__pet_backend;

struct ctr_pet_projector {
  ctr_context *ctx;
  ctr_pet_system *sys;
  const struct ctr__pet_backend *be; /* the context's backend (backend.h) */
  void *impl;                        /* its state (be->create) */
};

/* The kernel of an invariant system sampled at every offset of a cyclic
 * lattice of n[0] x n[1] x n[2] voxels (minimal-image offsets), with the
 * normalisation of the truncated kernel: the FFT reference's kernel.
 * out: n0 n1 n2 doubles, x fastest. */
ctr_status ctr__pet_fft_kernel(ctr_pet_system *s, int64_t view, const int64_t n[3], double *out);

#ifdef __cplusplus
}
#endif
#endif

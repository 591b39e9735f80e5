/* ctrecon/pet.h — TOF-PET DIRECT reconstruction from histo-images. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_PET_H
#define CTRECON_PET_H

#include "ctrecon/core.h"
#include "ctrecon/tuning.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* TOF-PET: DIRECT reconstruction from histo-images (Matej et al. 2009)      */
/* ------------------------------------------------------------------------- */

/* The image lattice is nx x ny x nz cubic voxels of `voxel` mm centred on the
 * scanner: voxel (i, j, k) sits at x = (i - (nx - 1) / 2) * voxel (same for
 * y, z), x fastest. Events are grouped into views: n_azimuth intervals of the
 * azimuth phi over [0, 180) degrees times n_copolar intervals of the
 * co-polar (tilt) angle theta over [-acceptance, +acceptance]; view
 * v = c * n_azimuth + a has the interval centres (phi_a, theta_c) and the
 * LOR direction d = (cos theta cos phi, cos theta sin phi, sin theta). Each
 * view owns one histo-image on the image lattice (DIRECT, Matej et al. 2009).
 * The kernel frame of a view: TOF along d, LOR-radial along
 * r = (-sin phi, cos phi, 0), LOR-axial along a = d x r. */
#define CTR_PET_PARAMS_VERSION 1u
typedef struct ctr_pet_params {
  unsigned version;
  int64_t nx, ny, nz;    /* lattice (144 x 144 x 48) */
  double voxel;          /* mm (4) */
  int n_azimuth;         /* azimuthal view intervals over 180 degrees (40) */
  int n_copolar;         /* co-polar view intervals (3) */
  double acceptance_deg; /* axial acceptance half-angle (10) */
} ctr_pet_params;

#define CTR_PET_PARAMS_INIT { CTR_PET_PARAMS_VERSION, 144, 144, 48, 4.0, 40, 3, 10.0 }
/* The defaults in the layout of `version`, 1 .. CTR_PET_PARAMS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_params_init(ctr_pet_params *s, unsigned version);

/* A user-supplied system-response kernel: the value at an offset of
 * (tof, radial, axial) mm from the kernel centre, in the view frame, for a
 * kernel centred at the signed LOR-radial position rho (mm; negative on the
 * -r side of the scanner axis). Values need not be normalised. */
typedef double (*ctr_pet_kernel_fn)(void *user, double tof_mm, double radial_mm,
                                    double axial_mm, double rho_mm);

/* System-response (SR) kernel model (Ha et al. 2013, section 4.1). The LOR-radial
 * FWHM varies with the radial distance |rho| of the kernel centre from the
 * scanner axis: linearly from the centre value to the edge value at
 * edge_radius_mm (constant beyond), or piecewise linearly through
 * radial_table (pairs radius_mm, fwhm_mm, radii ascending) when given.
 * Asymmetric kernels add a second Gaussian twice as wide, weighted
 * asym_weight and shifted by asym_shift_sigma narrow sigmas towards the
 * scanner axis (Ha et al. 2013, section 5.2). Each kernel is cut to the ellipsoid with
 * semi-axes cut_k sigma in each direction (the widest kernel of the view sets
 * the support, mSR) and normalised to unit sum over it. */
#define CTR_PET_KERNEL_PARAMS_VERSION 1u
typedef struct ctr_pet_kernel_params {
  unsigned version;
  double tof_fwhm_ps;           /* timing resolution; distance FWHM = c * dt / 2 (400) */
  double radial_fwhm_center_mm; /* LOR-radial FWHM at the axis (5.8) */
  double radial_fwhm_edge_mm;   /* at edge_radius_mm (5.8: invariant) */
  double edge_radius_mm;        /* 0 = half the lattice width */
  const double *radial_table;   /* optional (radius_mm, fwhm_mm) pairs, copied */
  int radial_table_n;           /* number of pairs */
  double axial_fwhm_mm;         /* LOR-axial FWHM (5.8) */
  int asymmetric;               /* 0 = Gaussian, 1 = sum of two Gaussians */
  double asym_weight;           /* weight of the wide Gaussian (0.5) */
  double asym_shift_sigma;      /* its shift towards the axis, in narrow sigmas (1) */
  double cut_k;                 /* support: cut_k sigma per direction (3) */
  double epsilon_mm;            /* LORmap step of the radial position (2) */
  ctr_pet_kernel_fn custom;     /* optional: replaces the Gaussian model */
  void *custom_user;
  double custom_extent_mm[3];   /* custom kernel support half-widths: tof, radial, axial */
} ctr_pet_kernel_params;

#define CTR_PET_KERNEL_PARAMS_INIT                                                      \
  { CTR_PET_KERNEL_PARAMS_VERSION, 400.0, 5.8, 5.8, 0.0, NULL, 0, 5.8, 0, 0.5, 1.0, 3.0, 2.0, \
    NULL, NULL, { 0.0, 0.0, 0.0 } }
/* The defaults in the layout of `version`, 1 .. CTR_PET_KERNEL_PARAMS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_kernel_params_init(ctr_pet_kernel_params *s, unsigned version);

/* Speed of light in mm per ps: TOF distance FWHM = tof_fwhm_ps * c / 2. */
#define CTR_PET_C_MM_PER_PS 0.299792458

/* Lattice, views and the SR-kernel look-up tables of every view (LORmap,
 * mSR, mSRval; built on first use of a view and kept). */
/* Threads: a system builds a view's tables on their first use, under its
 * lock, and keeps them: any number of threads and projectors may share one.
 * A projector serves one thread at a time (tests/test_backends.c: two
 * projectors of one system on two threads). */
typedef struct ctr_pet_system ctr_pet_system;

#define CTR_PET_VIEW_INFO_VERSION 1u
typedef struct ctr_pet_view_info {
  unsigned version;
  double azimuth_deg, copolar_deg; /* interval centres */
  double dir[3];                   /* TOF direction d */
  int64_t support;                 /* offsets in the kernel support (|mSR|) */
  int64_t columns;                 /* z-runs of the support ((dx, dy) pairs) */
  int64_t kernels;                 /* LORmap identifiers (N_kernel) */
  int half_extent[3];              /* largest |dx|, |dy|, |dz| of the support (voxels) */
} ctr_pet_view_info;
#define CTR_PET_VIEW_INFO_INIT \
  { CTR_PET_VIEW_INFO_VERSION, 0, 0, { 0, 0, 0 }, 0, 0, 0, { 0, 0, 0 } }
/* The defaults in the layout of `version`, 1 .. CTR_PET_VIEW_INFO_VERSION (core.h). */
CTR_API ctr_status ctr_pet_view_info_init(ctr_pet_view_info *s, unsigned version);

/* Validates (errors name the field) and copies the parameters. */
CTR_API ctr_status ctr_pet_system_create(const ctr_pet_params *p, const ctr_pet_kernel_params *k,
                                         ctr_pet_system **out);
CTR_API void ctr_pet_system_free(ctr_pet_system *s);
CTR_API const ctr_pet_params *ctr_pet_system_get_params(const ctr_pet_system *s);
CTR_API const ctr_pet_kernel_params *ctr_pet_system_get_kernel(const ctr_pet_system *s);
CTR_API int64_t ctr_pet_system_get_view_count(const ctr_pet_system *s);
/* Builds the view's tables if needed. */
CTR_API ctr_status ctr_pet_system_get_view_info(ctr_pet_system *s, int64_t view, ctr_pet_view_info *out);
/* LOR-radial FWHM (mm) of the model at radial distance |rho| mm. */
CTR_API double ctr_pet_system_radial_fwhm(const ctr_pet_system *s, double rho_mm);
/* 1 if every kernel is the same symmetric Gaussian (FFT-compatible). */
CTR_API int ctr_pet_system_is_kernel_invariant(const ctr_pet_system *s);

/* Histo-images of every view, plus optional per-view factors (sensitivity x
 * attenuation: the expected histo-image of view v is factors_v * (A_v f)). */
typedef struct ctr_pet_histo {
  ctr_pet_params params;  /* lattice and views the data belong to */
  double tof_fwhm_ps;     /* of the data (metadata; 0 = unknown) */
  double events;          /* events deposited (metadata) */
  int64_t nviews;         /* = n_azimuth * n_copolar */
  float *counts;          /* nviews x (nx ny nz), view slowest */
  float *factors;         /* NULL (all 1) or nviews x (nx ny nz) */
  int64_t replaced;       /* ctr_pet_histo_load: values of the file that were NaN, infinite,
                             negative or beyond 1e24, replaced by 0 (the data policy,
                             docs/architecture.md "Bad values"); 0 otherwise */
} ctr_pet_histo;

/* Allocates zeroed counts (factors if with_factors). Free with ctr_pet_histo_free. */
CTR_API ctr_status ctr_pet_histo_create(const ctr_pet_params *p, int with_factors,
                                        ctr_pet_histo **out);
CTR_API void ctr_pet_histo_free(ctr_pet_histo *h);
/* HDF5 when path ends in .h5/.hdf5 (and HDF5 is built): datasets /pet/counts
 * and /pet/factors with the parameters as attributes; otherwise <path> is a
 * JSON description next to raw float32 files <path minus .json>.counts.raw
 * (and .factors.raw). Written to temporary names and renamed when complete;
 * when any of these files exists, nothing is written unless overwrite (as
 * ctr_stack_create). The file format is in docs/file-formats.md. */
CTR_API ctr_status ctr_pet_histo_save(const char *path, const ctr_pet_histo *h, int overwrite);
/* Reads either form; errors name the file and what was expected (sizes,
 * view counts, missing or unknown fields, truncated data). Counts or factors
 * that are NaN, infinite, negative or beyond 1e24 are replaced by 0 and
 * counted in (*out)->replaced: the caller reports them, or refuses the data
 * (ctr_pet_recon_options.strict does). */
CTR_API ctr_status ctr_pet_histo_load(const char *path, ctr_pet_histo **out);

/* Activity phantoms (kBq/ml, arbitrary units) for simulation and metrics:
 * a cylinder along z with spheres and point sources inside. */
#define CTR_PET_MAX_SPHERES 16
typedef struct ctr_pet_sphere {
  double x, y, z, diameter; /* mm */
  double activity;          /* spheres: activity per unit volume inside, replacing the
                               background; points: total activity */
} ctr_pet_sphere;
typedef struct ctr_pet_phantom {
  double cylinder_diameter, cylinder_length; /* mm; 0 = no cylinder */
  double background;                         /* activity of the cylinder */
  double mu_per_mm;                          /* attenuation of the cylinder (water 0.0096) */
  int nspheres;
  ctr_pet_sphere spheres[CTR_PET_MAX_SPHERES];
  int npoints;                                /* point sources (diameter ignored) */
  ctr_pet_sphere points[CTR_PET_MAX_SPHERES];
} ctr_pet_phantom;

/* Ha et al. 2013, section 6.1: 350 mm water cylinder (mu 0.0096 / mm), 192 mm long
 * (the default lattice's axial extent), background 1, six 10 mm spheres of
 * activity `contrast` at 75 mm radius, 60 degrees apart, at z = 2 mm: the
 * centre of the default lattice's central slice (z = 0 is a slice boundary
 * when the number of slices is even). */
CTR_API void ctr_pet_phantom_spheres(ctr_pet_phantom *ph, double contrast);
/* Three point sources along y (0, 60, 120 mm) at z = 2 mm, no cylinder. */
CTR_API void ctr_pet_phantom_points(ctr_pet_phantom *ph);
/* The phantom's activity on the lattice, each voxel the mean of
 * supersample^3 point samples (points go to their voxel). image: host
 * memory. */
CTR_API ctr_status ctr_pet_phantom_voxelize(const ctr_pet_phantom *ph, const ctr_pet_params *p,
                                            int supersample, float *image);

#define CTR_PET_SIM_OPTIONS_VERSION 1u
typedef struct ctr_pet_sim_options {
  unsigned version;
  double events;            /* expected number of emitted events (Poisson); attenuation and the
                               lattice's edges remove some: the histo-set's `events` counts
                               those deposited */
  int attenuation;          /* 1: events survive with exp(-mu * chord) along their LOR */
  int detector_blur;        /* 1: radial/axial blur from the kernel model */
  uint64_t seed;            /* random seed (same seed, same data) */
  const float *activity;    /* optional voxel phantom on the lattice (replaces the analytic one) */
  int with_factors;         /* 1: store each view's factors when attenuation applies:
                               exp(-mu chord) times the view's share of the solid angle,
                               normalised to mean 1 (else factors stay NULL) */
} ctr_pet_sim_options;

#define CTR_PET_SIM_OPTIONS_INIT { CTR_PET_SIM_OPTIONS_VERSION, 2.0e7, 0, 1, 1, NULL, 1 }
/* The defaults in the layout of `version`, 1 .. CTR_PET_SIM_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_sim_options_init(ctr_pet_sim_options *s, unsigned version);

/* List-mode simulation: a Poisson number of events, each emitted from the
 * phantom (or the voxel activity), along a random LOR direction within the
 * acceptance (uniform in azimuth and in sin(tilt)), with a TOF error drawn
 * from the system's TOF resolution along the LOR and detector blur across
 * it, optionally attenuated; each event is deposited into the nearest voxel
 * of its view's histo-image. Memory: the simulation runs on the host on
 * every context and its histo-images are host memory; opts->activity must be
 * host memory (GPU memory is CTR_E_INVALID_ARGUMENT naming activity). */
CTR_API ctr_status ctr_pet_simulate(ctr_context *ctx, const ctr_pet_system *s,
                                    const ctr_pet_phantom *ph, const ctr_pet_sim_options *opts,
                                    ctr_pet_histo **out);

/* Projectors of one view with that view's spatially variant kernels:
 * forward (image -> histo-image, each voxel spreads with its own kernel,
 * computed as a gather with the neighbours' kernels, Ha et al. 2013, Fig. 2) and back
 * (its exact adjoint: each voxel gathers with its own kernel). A projector
 * keeps the backend's tables (on the GPU for a CUDA context). */
typedef struct ctr_pet_projector ctr_pet_projector;
typedef enum ctr_pet_direction { CTR_PET_FORWARD = 0, CTR_PET_BACK = 1 } ctr_pet_direction;

CTR_API ctr_status ctr_pet_projector_create(ctr_context *ctx, ctr_pet_system *s,
                                            ctr_pet_projector **out);
CTR_API void ctr_pet_projector_free(ctr_pet_projector *p);
/* in and out: nx ny nz floats; out is overwritten. A projector serves one
 * thread at a time (it keeps its scratch buffers). Memory: on a CUDA
 * projector (created on a CUDA context) in and out may each be host or GPU
 * memory (device or managed: cudaMalloc, CuPy, PyTorch; detected per
 * pointer), copied into and out of the projector's device buffers with
 * cudaMemcpyDefault (device to device for GPU memory: nothing passes
 * through host memory); the producers of GPU arrays, on any stream, finish
 * first, and the call returns when out is written. The same bits as from
 * host arrays. A CPU projector refuses a GPU array (CTR_E_INVALID_ARGUMENT
 * naming in or out). */
CTR_API ctr_status ctr_pet_project(ctr_pet_projector *p, ctr_pet_direction dir, int64_t view,
                                   const float *in, float *out);
/* FFT reference for symmetric invariant kernels (error otherwise): the same
 * kernel untruncated, applied as a cyclic convolution on the lattice zero
 * padded by `pad` voxels on each side (FFTW on the CPU, cuFFT on a CUDA
 * context). Forward and back are the same operation. Memory: as
 * ctr_pet_project's, for ctx (host or GPU memory on a CUDA context; a GPU
 * array is CTR_E_INVALID_ARGUMENT naming in or out on a CPU context). */
CTR_API ctr_status ctr_pet_project_fft(ctr_context *ctx, ctr_pet_system *s, int64_t view,
                                       int64_t pad, const float *in, float *out);

typedef enum ctr_pet_algorithm {
  CTR_PET_RAMLA = 0, /* block-RAMLA, one view per sub-iteration */
  CTR_PET_OSEM = 1,  /* OSEM, one view per subset */
  CTR_PET_MLEM = 2
} ctr_pet_algorithm;
CTR_API const char *ctr_pet_algorithm_name(ctr_pet_algorithm a);
CTR_API ctr_status ctr_pet_algorithm_parse(const char *name, ctr_pet_algorithm *out);

/* Called after each iteration with the current image (nx ny nz floats, valid
 * during the call): the image array given to ctr_pet_reconstruct, so GPU
 * memory when that is. Return non-zero to stop. */
typedef int (*ctr_pet_iteration_fn)(void *user, int iteration, const float *image);

#define CTR_PET_RECON_OPTIONS_VERSION 2u /* 2: strict */
typedef struct ctr_pet_recon_options {
  unsigned version;
  ctr_pet_algorithm algorithm;
  int iterations;             /* full passes over the views (10) */
  double relax0;              /* RAMLA relaxation at iteration 0 (0.1: lambda 1 is OSEM with one
                                 view per subset, noisy after one pass at clinical counts) */
  double relax_decay;         /* lambda_k = relax0 / (1 + relax_decay * k) (0.1) */
  ctr_pet_iteration_fn on_iteration;
  void *user;
  int strict;                 /* data policy (docs/architecture.md, "Bad values"): 0 = counts or
                                 factors that are NaN, infinite, negative or beyond 1e24 are
                                 used as 0 and a non-finite result voxel is stored as 0, each
                                 with a warning through the context's log; 1 = either, or
                                 h->replaced > 0, is a CTR_E_FORMAT error */
} ctr_pet_recon_options;

#define CTR_PET_RECON_OPTIONS_INIT \
  { CTR_PET_RECON_OPTIONS_VERSION, CTR_PET_RAMLA, 10, 0.1, 0.1, NULL, NULL, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PET_RECON_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_recon_options_init(ctr_pet_recon_options *s, unsigned version);

#define CTR_PET_RECON_TIMINGS_VERSION 1u
typedef struct ctr_pet_recon_timings {
  unsigned version;
  double forward, back, discrepancy, update, upload, download, total; /* seconds */
} ctr_pet_recon_timings;
#define CTR_PET_RECON_TIMINGS_INIT { CTR_PET_RECON_TIMINGS_VERSION, 0, 0, 0, 0, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PET_RECON_TIMINGS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_recon_timings_init(ctr_pet_recon_timings *s, unsigned version);

/* Reconstructs the activity from the histo-images (whose params must match
 * the projector's system). image: nx ny nz floats; on entry the initial
 * estimate (all > 0) or, if every value is 0, a uniform start; on return the
 * result. timings may be NULL. On a CUDA context the image, the data and the
 * tables stay on the GPU; discrepancy and update run there.
 * Memory: h is a host object (counts and factors in host memory, uploaded
 * once on a CUDA context). On a CUDA projector image may be host or GPU
 * memory (device or managed: cudaMalloc, CuPy, PyTorch; detected by
 * pointer): it is copied to the GPU with cudaMemcpyDefault (device to device
 * for GPU memory), the uniform start (image all 0) and the data policy on
 * the result run on the device, and the result is copied into image the same
 * way: nothing of the image passes through host memory (on_iteration gets
 * image itself, updated). The producers of a GPU image, on any stream,
 * finish first; the call returns when image is written, with the same bits
 * as from a host image. A CPU projector refuses a GPU image
 * (CTR_E_INVALID_ARGUMENT naming image). */
CTR_API ctr_status ctr_pet_reconstruct(ctr_pet_projector *p, const ctr_pet_histo *h,
                                       const ctr_pet_recon_options *opts, float *image,
                                       ctr_pet_recon_timings *timings);

/* Contrast recovery and noise, Ha et al. 2013, section 6.1: for each sphere,
 * CRC = ((p_s - p_b) / p_b) / c with p_s the mean in a 2D circular ROI of the
 * sphere's diameter on the sphere's central slice, p_b the mean in the
 * annulus of inner diameter (diameter + 14 mm) and 8 mm thickness around it,
 * c = sphere activity / background - 1; noise = standard deviation / mean
 * inside a 50 mm diameter ROI at the phantom centre on the central slice.
 * ROI membership is the pixel area inside (supersampled). */
#define CTR_PET_METRICS_VERSION 1u
typedef struct ctr_pet_metrics {
  unsigned version;
  double crc;                            /* mean over the spheres */
  double crc_sphere[CTR_PET_MAX_SPHERES];
  double noise;                          /* relative standard deviation */
  double background_mean;
  int nspheres;
} ctr_pet_metrics;
#define CTR_PET_METRICS_INIT { CTR_PET_METRICS_VERSION, 0, { 0 }, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PET_METRICS_VERSION (core.h). */
CTR_API ctr_status ctr_pet_metrics_init(ctr_pet_metrics *s, unsigned version);

/* image: host memory. */
CTR_API ctr_status ctr_pet_metrics_compute(const ctr_pet_params *p, const ctr_pet_phantom *ph,
                                           const float *image, ctr_pet_metrics *out);
/* A CRC-versus-noise plot (PNG, axes with ticks and labels, one line with a
 * marker per point in order): noise[i], crc[i] for i < n. An existing path
 * is refused unless overwrite (as ctr_stack_create). */
CTR_API ctr_status ctr_pet_plot_crc_noise(const char *path, const double *noise, const double *crc,
                                          int64_t n, const char *title, int overwrite);

/* Autotunes the PET projectors for system s on ctx's first GPU
 * (docs/tuning.md, "Autotuning"): slices per thread, block shape and split
 * (pet_z x pet_block x pet_split, those left at 0), from the cache or the
 * context's earlier result, else (and always with force) by timing forward
 * and back projections of a few of s's views; the winner is cached, so the
 * projectors and reconstructions of that class use it. report (required)
 * is filled as by ctr_tune_fdk. CTR_E_UNSUPPORTED on a CPU context. */
CTR_API ctr_status ctr_tune_pet(ctr_context *ctx, ctr_pet_system *s, int force,
                                ctr_tune_report *report);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_PET_H */

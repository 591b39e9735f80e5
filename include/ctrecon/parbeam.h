/* ctrecon/parbeam.h — parallel-beam CT (synchrotron): sinograms and filtered back projection. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_PARBEAM_H
#define CTRECON_PARBEAM_H

#include "ctrecon/phantom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Parallel-beam CT (synchrotron): sinograms and filtered back projection    */
/* ------------------------------------------------------------------------- */

/* A sinogram holds one detector row of every projection: nangles rows of
 * nbins values (bins fastest); a stack of sinograms is nbins x nangles x
 * nslices. The slice grid is nx x ny pixels of `voxel` bins, x fastest,
 * centred on the rotation axis: pixel (i, j) sits at
 *   x = (i - (nx - 1) / 2) * voxel,  y = (j - (ny - 1) / 2) * voxel   (bins)
 * and projects in projection a (angle theta_a) to the bin
 *   t = x cos(theta_a) + y sin(theta_a) + axis + axis_shift[a]
 * (pixel centres at integer t). Angles in degrees, any order, any range;
 * each angle's weight in the sum is half the angular distance between its
 * neighbours (modulo 180 degrees), which is pi / nangles for a uniform
 * half-turn. Values are line integrals with lengths in mm (-log(I / I0);
 * density x mm for phantoms); the backprojection weights are the angular
 * weights divided by pixel_size (mm per bin), so slices come out as the
 * density (1/mm). */
#define CTR_PARALLEL_PARAMS_VERSION 2u /* 2: tilt_deg, nrows */
typedef struct ctr_parallel_params {
  unsigned version;
  int64_t nbins, nangles;
  const double *angles_deg; /* nangles entries (copied), or NULL: */
  double angle_start_deg, angle_range_deg; /* angle_start + a * range / nangles */
  double axis;              /* rotation axis in bins; CTR_AXIS_CENTER = (nbins - 1) / 2 */
  const double *axis_shift; /* optional per-projection correction (bins;
                               c_a of Chilingaryan et al. 2020) */
  int64_t nx, ny;           /* slice size; 0 = nbins */
  double voxel;             /* slice pixel in bins; 0 = 1 */
  double pixel_size;        /* mm per bin (scales the result); 0 = 1 */
  /* Laminography (docs/geometry.md, "Laminography"): the rotation axis
   * tilted by tilt_deg degrees from the detector plane towards the beam
   * (0 = tomography, |tilt_deg| < 90). With a tilt, a detector row is no
   * longer a slice: sinograms are nbins x nangles x nrows (nrows >= 1, the
   * detector rows, required), the slices nx x ny x nz of any nz (pitch
   * pixel_size mm, centred on the axis point that projects to row
   * (nrows - 1) / 2), the angular weights are taken on the full circle
   * (a full turn: pi cos(tilt) / nangles each) and pixel (i, j) of slice k
   * at (x, y, z) mm projects to
   *   t = (x cos(theta) + y sin(theta)) / pixel_size + axis + axis_shift[a]
   *   r = ((x sin(theta) - y cos(theta)) sin(tilt) + z cos(tilt)) / pixel_size
   *       + (nrows - 1) / 2.
   * tilt_deg 0: nrows is 0 or the slices' count (rows are slices). */
  double tilt_deg;
  int64_t nrows;
} ctr_parallel_params;

#define CTR_AXIS_CENTER (-1.0e300)
#define CTR_PARALLEL_PARAMS_INIT \
  { CTR_PARALLEL_PARAMS_VERSION, 0, 0, NULL, 0.0, 180.0, CTR_AXIS_CENTER, NULL, 0, 0, 0.0, 0.0, \
    0.0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_PARALLEL_PARAMS_VERSION (core.h). */
CTR_API ctr_status ctr_parallel_params_init(ctr_parallel_params *s, unsigned version);

/* Threads: immutable once created; any number of threads may share one. */
typedef struct ctr_parallel_geometry ctr_parallel_geometry;

/* Validates and copies (angles, shifts). Errors name the field. */
CTR_API ctr_status ctr_parallel_create(const ctr_parallel_params *p, ctr_parallel_geometry **out);
CTR_API void ctr_parallel_free(ctr_parallel_geometry *g);
/* The resolved parameters (angles_deg and axis_shift point into g). */
CTR_API const ctr_parallel_params *ctr_parallel_get_params(const ctr_parallel_geometry *g);
/* Angle a's weight in the backprojection sum (radians). */
CTR_API double ctr_parallel_get_weight(const ctr_parallel_geometry *g, int64_t a);

/* Parallel-beam geometry files (docs/parallel-beam.md, "Geometry files"):
 * JSON {"type": "parallel", "nbins", "angles": {"count", "start_deg",
 * "range_deg"} or "angles_deg": [...], "axis" (a bin or "center"),
 * "axis_shift": [...], "nx", "ny", "voxel", "pixel_size", "tilt_deg",
 * "nrows"}, the fields of ctr_parallel_params (absent: their defaults). An
 * unknown member is CTR_E_FORMAT naming the nearest known one; a value
 * ctr_parallel_create refuses, its error with the file's name. Saving
 * writes the resolved parameters (numbers with 17 significant digits:
 * loading gives the same geometry to the bit) through a temporary name;
 * an existing path is CTR_E_INVALID_ARGUMENT (field overwrite) unless overwrite. `name` (NULL: "parallel
 * geometry") names the text in errors. *out from to_json_string is freed
 * with free(). */
CTR_API ctr_status ctr_parallel_load_json(const char *path, ctr_parallel_geometry **out);
CTR_API ctr_status ctr_parallel_save_json(const ctr_parallel_geometry *g, const char *path,
                                          int overwrite);
CTR_API ctr_status ctr_parallel_from_json_string(const char *json, const char *name,
                                                 ctr_parallel_geometry **out);
CTR_API ctr_status ctr_parallel_to_json_string(const ctr_parallel_geometry *g, char **out);

/* The parallel-beam scan of ASTRA's `parallel3d_vec` rows, when
 * ctr_parallel_params can hold it (docs/geometry.md, "Vector geometries"):
 * 12 numbers a view, nviews * 12 doubles,
 *   (rayX, rayY, rayZ, dX, dY, dZ, uX, uY, uZ, vX, vY, vZ)
 * in world mm (the ray direction, the detector centre, the vectors from
 * pixel (0, 0) to (1, 0) and to (0, 1)), a detector of nu columns and nv
 * rows. Representable: rays perpendicular to the rotation axis z, u
 * perpendicular to z and to the ray (|u| the same in every view), v along
 * z, and the rows at the same heights in every view. Then each detector
 * row is a slice: angles_deg[a] (nviews entries, the caller's) is the
 * direction of u, axis_shift[a] (nviews, the caller's) the shift of the
 * axis from axis = (nu - 1)/2 in bins, pixel_size = |u|; *out is filled
 * (version CTR_PARALLEL_PARAMS_VERSION, angles_deg and axis_shift pointing
 * at the caller's arrays, nx = ny = nbins, voxel 1 bin) and row_z (nv
 * entries, NULL: not written) gets each row's height z in mm, the slice
 * planes of ctr_phantom_sinogram. A tilted scan (laminography: view 0's v
 * leaning from z) is representable when every view has u horizontal with
 * one length, v = |u| (sin(tilt) (sin t, -cos t, 0) + cos(tilt) z) with view
 * 0's tilt, the ray along v x u and the detector centre on the axis point's
 * row (d . v = 0): then tilt_deg and nrows = nv are set and row_z gets the
 * rows' heights along v. Any other view is CTR_E_UNSUPPORTED
 * naming the view and what ctr_parallel_params cannot hold (field
 * "vectors"); a non-finite number or a zero u or v is CTR_E_GEOMETRY. */
CTR_API ctr_status ctr_parallel_params_from_vectors(int64_t nu, int64_t nv, int64_t nviews,
                                                    const double *vectors, double *angles_deg,
                                                    double *axis_shift, ctr_parallel_params *out,
                                                    double *row_z);

/* Exact parallel-beam line integrals of a phantom's ellipsoids through the
 * slice planes z = z[s] (mm; one bin = pixel_size mm), in density x mm:
 * out is nbins x nangles x nslices float32. Each value is the mean of
 * supersample exact integrals across the bin (1 = the bin centre). With a
 * tilted axis (tilt_deg != 0) row s is the detector row at height z[s] mm
 * along the detector's rows (the tilted planes of docs/geometry.md,
 * "Laminography"); z NULL = the geometry's rows, z[s] = (s - (nrows - 1) /
 * 2) pixel_size, nslices = nrows. */
CTR_API ctr_status ctr_phantom_sinogram(const ctr_phantom *ph, const ctr_parallel_geometry *g,
                                        int64_t nslices, const double *z, int supersample,
                                        float *out);
/* The phantom's density on the slice grid at plane z (mm), nx x ny floats,
 * each the mean of supersample^2 point samples. */
CTR_API ctr_status ctr_phantom_slice(const ctr_phantom *ph, const ctr_parallel_geometry *g,
                                     double z, int supersample, float *out);

/* Flat-field correction and -log, then transposition into sinograms:
 * proj holds nangles projections of nbins x nrows (float32 or uint16, bins
 * fastest); flat and dark are nbins x nrows float32 images (averaged beams;
 * dark may be NULL = 0). Rows [row0, row0 + nslices) become sinograms:
 * sino[(s * nangles + a) * nbins + b] = -log(max((p - d) / (f - d), eps))
 * with eps = 1e-6 (dead or saturated pixels stay finite; they are counted in
 * *clamped if not NULL); a pixel whose flat and dark are not finite or have
 * f - d <= 0 holds no calibration: its value is 0 (ctr_fbp_projections
 * counts those pixels as ctr_value_counts.calibration). */
CTR_API ctr_status ctr_flatfield_sinograms(const void *proj, ctr_dtype dtype, int64_t nbins,
                                           int64_t nrows, int64_t nangles, const float *flat,
                                           const float *dark, int64_t row0, int64_t nslices,
                                           float *sino, int64_t *clamped);
/* Averages n images (float32 or uint16) of npix pixels into out (float32). */
CTR_API ctr_status ctr_flatfield_average(const void *images, ctr_dtype dtype, int64_t npix, int64_t n,
                                      float *out);

typedef enum ctr_fbp_interp {
  CTR_FBP_LINEAR = 0, /* linear interpolation between bins */
  CTR_FBP_NEAREST = 1 /* nearest bin */
} ctr_fbp_interp;

/* Bad data met by a call under the data policy (docs/architecture.md, "Bad
 * values"), each replaced as said. */
#define CTR_VALUE_COUNTS_VERSION 1u
typedef struct ctr_value_counts {
  unsigned version;
  int64_t input;       /* input values NaN, infinite or beyond +-1e24: replaced by 0 */
  int64_t calibration; /* flat/dark pixels with flat <= dark or non-finite: sinogram value 0 */
  int64_t clamped;     /* transmissions (p - dark) / (flat - dark) below 1e-6 or NaN: clamped
                          to 1e-6 (CPU; the GPU path does not count them) */
  int64_t output;      /* results NaN, infinite or beyond +-1e24: replaced by 0 */
} ctr_value_counts;
#define CTR_VALUE_COUNTS_INIT { CTR_VALUE_COUNTS_VERSION, 0, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_VALUE_COUNTS_VERSION (core.h). */
CTR_API ctr_status ctr_value_counts_init(ctr_value_counts *s, unsigned version);

/* Per-GPU busy times of ctr_fbp and ctr_fbp_projections on a CUDA context
 * (the breakdown of Okitsu et al. 2010, Fig. 4), measured with CUDA events
 * on each GPU's streams around each step of each chunk of slices. The steps
 * of the two chunks a GPU has in flight overlap one another, so a GPU's
 * times may add up to more than the call's wall time. */
#define CTR_FBP_MAX_DEVICES 16
typedef struct ctr_fbp_device_times {
  int device;         /* CUDA ordinal */
  int64_t chunks;     /* chunks of slices this GPU reconstructed */
  double upload;      /* projections or sinograms copied to the GPU, seconds */
  double filter;      /* flat/dark correction, -log and transposition, ramp filter, weights */
  double backproject; /* backprojection and the output's data policy (the first chunk
                         also times the automatic kernel choice, when it runs) */
  double download;    /* slices copied into place (host or GPU memory) */
} ctr_fbp_device_times;

#define CTR_FBP_TIMINGS_VERSION 1u
typedef struct ctr_fbp_timings {
  unsigned version;
  int ndevices;       /* entries of device[] in use: the GPUs that took chunks */
  ctr_fbp_device_times device[CTR_FBP_MAX_DEVICES];
} ctr_fbp_timings;
#define CTR_FBP_TIMINGS_INIT { CTR_FBP_TIMINGS_VERSION, 0, { { 0, 0, 0.0, 0.0, 0.0, 0.0 } } }
/* The defaults (zeros) in the layout of `version` (core.h). */
CTR_API ctr_status ctr_fbp_timings_init(ctr_fbp_timings *s, unsigned version);

#define CTR_FBP_OPTIONS_VERSION 4u /* 2: strict, counts; 3: timings; 4: gpu_budget */
typedef struct ctr_fbp_options {
  unsigned version;
  ctr_window window;
  double cutoff;            /* (0, 1], fraction of Nyquist */
  ctr_fbp_interp interp;
  const char *kernel;       /* GPU kernel by name (docs/parallel-beam.md); NULL / "auto" = the
                               fastest exact one for this GPU and size, found by a short timing
                               run on first use and cached on disk (the context's
                               ctr_tuning.cache_dir; ctr_tuning.tune = -1: no tuning). CUDA
                               only, the CPU ignores it */
  int strict;               /* data policy (docs/architecture.md, "Bad values"): 0 = sinogram
                               values that are NaN, infinite or beyond +-1e24, flat/dark pixels
                               with flat <= dark or non-finite, and clamped transmissions are
                               counted, replaced and reported as a warning through the
                               context's log; 1 = any of them is a CTR_E_FORMAT error */
  ctr_value_counts *counts; /* optional: the counts are added here and no warning is logged
                               (for callers that report once over many calls) */
  ctr_fbp_timings *timings; /* optional, CUDA contexts (a CPU context leaves it as it is): each
                               GPU's busy times are added to the entry of its position in
                               the context (device[i] for the context's GPU i; ndevices
                               raised to cover it), so a caller timing several calls
                               zeroes it first (ctr_fbp_timings_init). Asking for them adds
                               events to the GPUs' streams, nothing else */
  uint64_t gpu_budget;      /* CUDA, ctr_fbp, ctr_fbp_projections and ctr_fbp_backproject:
                               bytes of GPU memory the call may use on each GPU; 0 =
                               detected (ctr_context_get_memory_budgets). The pipeline's
                               chunks (16 slices) shrink to fit; ctr_fbp_backproject takes
                               all its slices at once when they fit, else chunks of them (a
                               multiple of 4 slices: the same bits); a budget too small for
                               chunks of one slice is CTR_E_DEVICE_OUT_OF_MEMORY naming what
                               the smallest needs. The CPU ignores it */
} ctr_fbp_options;

#define CTR_FBP_OPTIONS_INIT \
  { CTR_FBP_OPTIONS_VERSION, CTR_WINDOW_RAM_LAK, 1.0, CTR_FBP_LINEAR, NULL, 0, NULL, NULL, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_FBP_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_fbp_options_init(ctr_fbp_options *s, unsigned version);

/* Ramp-filters nslices sinograms in place (nbins x nangles each), scaled so
 * that ctr_fbp_backproject of the result is the reconstruction. Bad values
 * follow opts->strict (replaced by 0 first, or an error before anything
 * changes); ctr_fbp, ctr_fbp_projections and ctr_fbp_backproject check their
 * slices the same way. Memory: the filter runs on the host on every
 * context; sino must be host memory (GPU memory is CTR_E_INVALID_ARGUMENT
 * naming sino). */
CTR_API ctr_status ctr_fbp_filter(ctr_context *ctx, const ctr_parallel_geometry *g,
                                  const ctr_fbp_options *opts, int64_t nslices, float *sino);
/* slices (nx x ny x nslices floats, overwritten) = the weighted
 * backprojection of nslices filtered sinograms (a tilted geometry: of its
 * nrows filtered rows into nslices slices, on the CPU only; a CUDA context
 * is CTR_E_UNSUPPORTED naming ctr_parallel_params.tilt_deg), on a CUDA context within
 * opts->gpu_budget (chunks of slices when all do not fit). Memory: on a CUDA context
 * sino and slices may each be host or GPU memory (device or managed, of any
 * of the context's GPUs; detected per pointer): sino is copied to the GPU
 * with cudaMemcpyDefault (device to device for GPU memory, no pinned
 * staging), the data policy runs on the device, the slices are copied into
 * place the same way; the producers of GPU arrays, on any stream, finish
 * first, and the call returns when the slices are written. The same bits
 * as from host arrays. A CPU context refuses a GPU array
 * (CTR_E_INVALID_ARGUMENT naming it). */
CTR_API ctr_status ctr_fbp_backproject(ctr_context *ctx, const ctr_parallel_geometry *g,
                                       const ctr_fbp_options *opts, int64_t nslices,
                                       const float *sino, float *slices);
/* Filter + backprojection of nbins x nangles x nslices sinograms (float32)
 * into nx x ny x nslices slices. A tilted geometry (laminography): the
 * sinograms are nbins x nangles x nrows, the slices nx x ny x nz of any nz,
 * reconstructed in memory on the CPU (a filtered copy of every row; a CUDA
 * context is CTR_E_UNSUPPORTED naming ctr_parallel_params.tilt_deg). Memory: on a CUDA context sinograms and
 * slices may each be host or GPU memory (device or managed: cudaMalloc,
 * CuPy, PyTorch; detected per pointer). Sinograms in the memory of the GPU
 * that runs a chunk are read in place (no upload, no staging); host memory
 * or another GPU's is copied with cudaMemcpyDefault. The slices are copied
 * from the GPU's work buffer into place with cudaMemcpyDefault (device to
 * device for GPU memory): nothing passes through host memory. The producers
 * of GPU arrays, on any stream, finish first (the device is synchronised),
 * and the call returns when the slices are written. The result has the same
 * bits as from host arrays. A CPU context (or ctx NULL) refuses a GPU array
 * with CTR_E_INVALID_ARGUMENT naming it ("sinograms" or "slices"). */
CTR_API ctr_status ctr_fbp(ctr_context *ctx, const ctr_parallel_geometry *g,
                           const ctr_fbp_options *opts, const ctr_array *sinograms,
                           ctr_array *slices);
/* Projections to slices in one call (host memory only: a GPU array is
 * CTR_E_INVALID_ARGUMENT naming it; a tilted geometry is CTR_E_UNSUPPORTED:
 * every slice needs every row): flat/dark correction and -log as
 * ctr_flatfield_sinograms, transposition, filter, backprojection. proj is
 * nbins x nrows x nangles (float32 or uint16, bins fastest); flat and dark
 * are nbins x nrows float32 (dark may be NULL); detector rows [row0, row0 +
 * nslices) become slices (nx x ny x nslices float32, overwritten). On a CUDA
 * context everything after one strided upload of each chunk of rows runs on
 * the GPU, chunk after chunk on two streams; pinned host memory
 * (ctr_host_alloc) transfers fastest. */
CTR_API ctr_status ctr_fbp_projections(ctr_context *ctx, const ctr_parallel_geometry *g,
                                       const ctr_fbp_options *opts, const ctr_array *proj,
                                       const float *flat, const float *dark, int64_t row0,
                                       ctr_array *slices);
/* Double-precision reference backprojection (CPU, OpenMP) of filtered
 * sinograms: the oracle for the tests. slices: nx x ny x nslices doubles
 * (a tilted geometry: from its nrows rows). */
CTR_API ctr_status ctr_fbp_backproject_reference(const ctr_parallel_geometry *g,
                                                 ctr_fbp_interp interp, int64_t nslices,
                                                 const float *sino, double *slices);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_PARBEAM_H */

/*
 * ctrecon.h — the one public header of libctrecon (C99).
 *
 * Conventions (docs/conventions.md has the full picture):
 *  - World coordinates in mm, right-handed, rotation axis z.
 *  - Volumes are float32, x fastest, then y, then z. Voxel i sits at
 *    x = offset_x + (i - (nx - 1) / 2) * voxel_x (same for y, z).
 *  - Projections: one image per view, u (detector column) fastest, then v (row),
 *    then the view. Pixel centres sit at integer (u, v) indices.
 *  - Every cone-beam geometry is converted once to a canonical per-view 3x4
 *    matrix P (row-major) with (a, b, c) = P (x, y, z, 1): u = a / c, v = b / c
 *    in pixel indices and c = depth / depth-of-origin (c = 1 at the origin), so
 *    the FDK distance weight is 1 / c^2.
 *  - Functions return ctr_status (0 = CTR_OK, negative = error). On error a
 *    thread-local detail string (ctr_error_detail) names the file, field or
 *    parameter and the expected value. The library never prints to stdout and
 *    never calls exit().
 */
#ifndef CTRECON_H
#define CTRECON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTR_VERSION_MAJOR 0
#define CTR_VERSION_MINOR 1
#define CTR_VERSION_PATCH 0
#define CTR_VERSION_STRING "0.1.0"

/* Version stamped into every option struct; bump when a struct grows. */
#define CTR_API_VERSION 2u /* 2: strict in ctr_fdk_options, ctr_fbp_options, ctr_pet_recon_options */

/* ------------------------------------------------------------------------- */
/* Status codes                                                              */
/* ------------------------------------------------------------------------- */

/* X(name, value, message): the one list that generates the enum, the names and
 * the messages. */
#define CTR_STATUS_LIST(X)                                                       \
  X(CTR_OK, 0, "success")                                                        \
  X(CTR_E_INVALID_ARGUMENT, -1, "invalid argument")                              \
  X(CTR_E_OUT_OF_MEMORY, -2, "out of host memory")                               \
  X(CTR_E_IO, -3, "file input/output error")                                     \
  X(CTR_E_FORMAT, -4, "malformed or unsupported file")                           \
  X(CTR_E_SIZE_MISMATCH, -5, "data size does not match the description")         \
  X(CTR_E_GEOMETRY, -6, "invalid geometry")                                      \
  X(CTR_E_UNSUPPORTED, -7, "feature not built or not supported")                 \
  X(CTR_E_NO_DEVICE, -8, "no usable GPU")                                        \
  X(CTR_E_DEVICE, -9, "GPU error")                                               \
  X(CTR_E_DEVICE_OUT_OF_MEMORY, -10, "GPU out of memory")                        \
  X(CTR_E_FFT, -11, "FFT library error")                                         \
  X(CTR_E_CANCELLED, -12, "cancelled")                                           \
  X(CTR_E_INTERNAL, -13, "internal error")

typedef enum ctr_status {
#define CTR__STATUS_ENUM(name, value, msg) name = value,
  CTR_STATUS_LIST(CTR__STATUS_ENUM)
#undef CTR__STATUS_ENUM
} ctr_status;

/* "CTR_E_IO" etc.; "CTR_E_UNKNOWN" for values not in the list. Static string. */
const char *ctr_status_name(ctr_status s);
/* Short human message for a status. Static string. */
const char *ctr_status_message(ctr_status s);
/* Detail of the last error raised on this thread ("" if none). Valid until the
 * next library call on this thread. */
const char *ctr_error_detail(void);
void ctr_error_clear(void);

/* ------------------------------------------------------------------------- */
/* Library information                                                       */
/* ------------------------------------------------------------------------- */

enum {
  CTR_FEATURE_OPENMP = 1u << 0,
  CTR_FEATURE_CUDA = 1u << 1,
  CTR_FEATURE_HDF5 = 1u << 2,
  CTR_FEATURE_MPI = 1u << 3,
  CTR_FEATURE_TIFF = 1u << 4,
  CTR_FEATURE_PNG = 1u << 5
};
const char *ctr_version_string(void);
/* Bit set of CTR_FEATURE_* compiled into this build. */
unsigned ctr_features(void);

typedef struct ctr_device_info {
  char name[256];
  size_t total_memory, free_memory; /* bytes */
  int cc_major, cc_minor;           /* compute capability */
  int multiprocessors;
} ctr_device_info;

/* Number of usable CUDA devices (0 when CUDA is not built or no GPU/driver). */
int ctr_cuda_device_count(void);
/* Properties of CUDA device `index`; CTR_E_NO_DEVICE if there is none. */
ctr_status ctr_cuda_device_info(int index, ctr_device_info *out);

/* Host memory for projections and volumes: page-locked (pinned) when a CUDA
 * device is usable, so transfers run at full PCIe speed and overlap the
 * computation; plain 64-byte aligned memory otherwise. Free with
 * ctr_host_free. NULL on failure (detail set). */
void *ctr_host_alloc(size_t bytes);
void ctr_host_free(void *p);
/* Pins existing host memory in place (page-locks it) so transfers from it run
 * at full speed: worth it for buffers reused many times. No-op (CTR_OK)
 * without a usable GPU. Undo with ctr_host_unregister before freeing. */
ctr_status ctr_host_register(void *p, size_t bytes);
void ctr_host_unregister(void *p);

/* ------------------------------------------------------------------------- */
/* Data types and array descriptors                                          */
/* ------------------------------------------------------------------------- */

typedef enum ctr_dtype { CTR_DTYPE_FLOAT32 = 1, CTR_DTYPE_UINT16 = 2 } ctr_dtype;

/* Bytes per element; 0 for an unknown dtype. */
size_t ctr_dtype_size(ctr_dtype t);
/* "float32" / "uint16"; "unknown" otherwise. */
const char *ctr_dtype_name(ctr_dtype t);
/* Parses "float32"/"f32"/"float" and "uint16"/"u16". CTR_E_INVALID_ARGUMENT
 * (detail lists the accepted names) otherwise. */
ctr_status ctr_dtype_parse(const char *name, ctr_dtype *out);

#define CTR_MAX_DIMS 4
/* A strided view of memory the caller owns. dims[0] is the fastest axis;
 * strides are in elements (0 = contiguous, filled by ctr_array_init). */
typedef struct ctr_array {
  void *data;
  ctr_dtype dtype;
  int ndim;
  int64_t dims[CTR_MAX_DIMS];
  int64_t strides[CTR_MAX_DIMS];
} ctr_array;

/* Fills a contiguous descriptor (dims[0] fastest). */
ctr_array ctr_array_init(void *data, ctr_dtype dtype, int ndim, const int64_t *dims);
/* Number of elements. */
int64_t ctr_array_count(const ctr_array *a);
/* 1 if the strides describe a dense, dims[0]-fastest layout. */
int ctr_array_is_contiguous(const ctr_array *a);

/* ------------------------------------------------------------------------- */
/* Context                                                                   */
/* ------------------------------------------------------------------------- */

typedef enum ctr_device_kind {
  CTR_DEVICE_AUTO = 0, /* a usable GPU if built and present, else the CPU */
  CTR_DEVICE_CPU = 1,
  CTR_DEVICE_CUDA = 2
} ctr_device_kind;

typedef enum ctr_log_level {
  CTR_LOG_ERROR = 0,
  CTR_LOG_WARNING = 1,
  CTR_LOG_INFO = 2,
  CTR_LOG_DEBUG = 3
} ctr_log_level;

/* Progress: stage name, fraction done in [0, 1]. Return non-zero to cancel
 * (the running call then returns CTR_E_CANCELLED). Called from the calling
 * thread only. */
typedef int (*ctr_progress_fn)(void *user, const char *stage, double fraction);
typedef void (*ctr_log_fn)(void *user, ctr_log_level level, const char *message);

typedef struct ctr_context_options {
  unsigned version;
  ctr_device_kind device;
  int device_index; /* CUDA device ordinal; -1 = choose */
  int num_threads;  /* CPU threads; 0 = OpenMP default */
  ctr_progress_fn progress;
  ctr_log_fn log;
  void *user; /* passed to progress and log */
} ctr_context_options;

#define CTR_CONTEXT_OPTIONS_INIT \
  { CTR_API_VERSION, CTR_DEVICE_AUTO, -1, 0, NULL, NULL, NULL }

typedef struct ctr_context ctr_context;

/* Creates a context; *out owned by the caller, release with ctr_context_free.
 * opts may be NULL (defaults). */
ctr_status ctr_context_create(const ctr_context_options *opts, ctr_context **out);
/* Frees a context; accepts NULL. */
void ctr_context_free(ctr_context *ctx);
/* The backend a context resolved to (CTR_DEVICE_CPU or CTR_DEVICE_CUDA). */
ctr_device_kind ctr_context_device(const ctr_context *ctx);

/* ------------------------------------------------------------------------- */
/* Geometry                                                                  */
/* ------------------------------------------------------------------------- */

typedef struct ctr_volume_geometry {
  int64_t nx, ny, nz;
  double voxel_x, voxel_y, voxel_z;    /* mm */
  double offset_x, offset_y, offset_z; /* volume centre in world mm */
} ctr_volume_geometry;

typedef enum ctr_rotation { CTR_ROTATION_CCW = 1, CTR_ROTATION_CW = -1 } ctr_rotation;

/* Circular cone-beam orbit. Source at angle t: s = sid * (cos t, sin t, 0);
 * the detector u axis is (-sin t, cos t, 0), v is +z; the principal ray hits
 * pixel ((nu-1)/2 - offset_u/du, (nv-1)/2 - offset_v/dv). Angles are either
 * the list `angles_deg` (nviews entries, not copied beyond the create call) or
 * angle_start_deg + direction * i * angle_range_deg / nviews. */
typedef struct ctr_circular_params {
  unsigned version;
  double sid; /* source to isocentre, mm */
  double sdd; /* source to detector, mm */
  int64_t nu, nv;
  double du, dv;             /* pixel pitch, mm */
  double offset_u, offset_v; /* detector shift, mm */
  int64_t nviews;
  const double *angles_deg; /* optional list */
  double angle_start_deg;
  double angle_range_deg;
  ctr_rotation direction;
} ctr_circular_params;

#define CTR_CIRCULAR_PARAMS_INIT \
  { CTR_API_VERSION, 0, 0, 0, 0, 1.0, 1.0, 0, 0, 0, NULL, 0.0, 360.0, CTR_ROTATION_CCW }

typedef struct ctr_geometry ctr_geometry;

/* Builds the canonical geometry of a circular orbit. Validates every field
 * (finite, positive sizes, source outside the volume). A detector that does
 * not cover the volume is allowed: check ctr_geometry_coverage and warn. */
ctr_status ctr_geometry_create_circular(const ctr_circular_params *p,
                                        const ctr_volume_geometry *vol,
                                        ctr_geometry **out);
/* Builds the canonical geometry from arbitrary per-view 3x4 matrices
 * (row-major, nviews * 12 doubles, mapping world mm to pixel indices up to
 * scale). du, dv are informative (mm); pass 0 if unknown. */
ctr_status ctr_geometry_create_matrices(int64_t nu, int64_t nv, double du, double dv,
                                        int64_t nviews, const double *matrices,
                                        const ctr_volume_geometry *vol,
                                        ctr_geometry **out);
/* Deep copy. */
ctr_status ctr_geometry_clone(const ctr_geometry *g, ctr_geometry **out);
void ctr_geometry_free(ctr_geometry *g);

/* Reads / writes a JSON geometry file (docs/geometry.md). Errors name the
 * file and the bad field. Save writes to a temporary name and renames. */
ctr_status ctr_geometry_load_json(const char *path, ctr_geometry **out);
ctr_status ctr_geometry_save_json(const ctr_geometry *g, const char *path);
/* Same from / to a string (the caller frees the string with free()). */
ctr_status ctr_geometry_from_json_string(const char *json, const char *name,
                                         ctr_geometry **out);
ctr_status ctr_geometry_to_json_string(const ctr_geometry *g, char **out);

int64_t ctr_geometry_nviews(const ctr_geometry *g);
void ctr_geometry_detector(const ctr_geometry *g, int64_t *nu, int64_t *nv, double *du,
                           double *dv);
ctr_volume_geometry ctr_geometry_volume(const ctr_geometry *g);
/* Replaces the volume grid (same checks as create). */
ctr_status ctr_geometry_set_volume(ctr_geometry *g, const ctr_volume_geometry *vol);
/* The canonical matrix of view i (12 doubles, row-major). */
void ctr_geometry_matrix(const ctr_geometry *g, int64_t i, double out[12]);
/* Source position of view i, mm. */
void ctr_geometry_source(const ctr_geometry *g, int64_t i, double out[3]);
/* 1 for a circular orbit (u, c independent of z), else 0. */
int ctr_geometry_is_circular(const ctr_geometry *g);
/* Fraction of the voxel centres inside the volume's inscribed cylinder (about
 * the z axis through the volume centre) that project inside the detector in
 * every view (1.0 = the field of view is fully covered). */
double ctr_geometry_coverage(const ctr_geometry *g);

/* ------------------------------------------------------------------------- */
/* Phantoms                                                                  */
/* ------------------------------------------------------------------------- */

/* An ellipsoid: centre (mm), semi-axes (mm), Euler angles (z-x-z, degrees)
 * and an additive density (attenuation in 1/mm or any unit you choose). */
typedef struct ctr_ellipsoid {
  double density;
  double cx, cy, cz;
  double ax, ay, az;
  double phi_deg, theta_deg, psi_deg;
} ctr_ellipsoid;

typedef struct ctr_phantom ctr_phantom;

/* The 3D modified (high-contrast) Shepp-Logan head scaled so that its unit
 * cube [-1, 1]^3 spans `radius` mm, times `scale` in density. */
ctr_status ctr_phantom_shepp_logan(double radius, double scale, ctr_phantom **out);
/* A phantom from a list of ellipsoids (copied). */
ctr_status ctr_phantom_from_ellipsoids(const ctr_ellipsoid *e, int64_t n, ctr_phantom **out);
/* JSON list of ellipsoids (docs/phantoms.md). */
ctr_status ctr_phantom_load_json(const char *path, ctr_phantom **out);
void ctr_phantom_free(ctr_phantom *p);
int64_t ctr_phantom_count(const ctr_phantom *p);
const ctr_ellipsoid *ctr_phantom_ellipsoids(const ctr_phantom *p);

/* Exact line integral from point `origin` along unit direction `dir`
 * (the whole line). */
double ctr_phantom_line_integral(const ctr_phantom *p, const double origin[3],
                                 const double dir[3]);
/* Density at a point. */
double ctr_phantom_density(const ctr_phantom *p, const double pt[3]);
/* Exact cone-beam projections for every view: out is nu x nv x nviews float32
 * (contiguous). Each pixel is the mean of supersample^2 exact ray integrals
 * (1 = the ray through the pixel centre). */
ctr_status ctr_phantom_project(ctr_context *ctx, const ctr_phantom *p, const ctr_geometry *g,
                               int supersample, ctr_array *out);
/* Voxelised phantom on the geometry's volume grid, each voxel the mean of
 * supersample^3 point samples. out: nx x ny x nz float32. Slices [z0, z0+nz)
 * of out's third dimension only, so big volumes can be made in slabs. */
ctr_status ctr_phantom_voxelize(ctr_context *ctx, const ctr_phantom *p,
                                const ctr_volume_geometry *vol, int supersample, int64_t z0,
                                ctr_array *out);

/* ------------------------------------------------------------------------- */
/* Filtering and FDK                                                         */
/* ------------------------------------------------------------------------- */

typedef enum ctr_window {
  CTR_WINDOW_RAM_LAK = 0,
  CTR_WINDOW_SHEPP_LOGAN = 1,
  CTR_WINDOW_COSINE = 2,
  CTR_WINDOW_HAMMING = 3,
  CTR_WINDOW_HANN = 4
} ctr_window;

const char *ctr_window_name(ctr_window w);
ctr_status ctr_window_parse(const char *name, ctr_window *out);

/* Frequency response of the ramp filter (discrete Ram-Lak times the window)
 * at frequency f in cycles per sample, 0 <= f <= 0.5; cutoff in (0, 1] is the
 * fraction of the Nyquist frequency beyond which the response is zero. */
double ctr_ramp_response(ctr_window w, double cutoff, double f);

typedef enum ctr_short_scan {
  CTR_SHORT_SCAN_AUTO = 0, /* Parker weights when the orbit covers < 360 deg */
  CTR_SHORT_SCAN_OFF = 1,
  CTR_SHORT_SCAN_PARKER = 2
} ctr_short_scan;

typedef enum ctr_interp {
  CTR_INTERP_DEFAULT = 0, /* backend's default (exact on CPU, texture on GPU) */
  CTR_INTERP_EXACT = 1,   /* fp32 software bilinear, ~1e-6 relative */
  CTR_INTERP_TEXTURE = 2, /* hardware texture bilinear (8-bit weights), ~1e-3; GPU only */
  CTR_INTERP_PRECISE = 3  /* software bilinear at double-precision positions, ~1e-7 on the
                             GPU (slower); the CPU treats it as exact */
} ctr_interp;

typedef struct ctr_fdk_options {
  unsigned version;
  ctr_window window;
  double cutoff;           /* (0, 1], fraction of Nyquist */
  ctr_short_scan short_scan;
  ctr_interp interp;
  int64_t z0, nz;          /* reconstruct slices [z0, z0+nz) only; nz = 0: all */
  int64_t views_per_batch; /* views filtered per batch (memory); 0 = automatic */
  int strict;              /* data policy (docs/architecture.md, "Bad values"): 0 = projection
                              values that are NaN, infinite or beyond +-1e24 and non-finite
                              voxels are replaced by 0 and counted (ctr_stream_report, a
                              warning through the context's log); 1 = any such value is a
                              CTR_E_FORMAT error */
} ctr_fdk_options;

#define CTR_FDK_OPTIONS_INIT \
  { CTR_API_VERSION, CTR_WINDOW_RAM_LAK, 1.0, CTR_SHORT_SCAN_AUTO, CTR_INTERP_DEFAULT, 0, 0, 0, 0 }

/* FDK reconstruction. proj: float32 nu x nv x nviews line integrals (uint16
 * is accepted and converted). vol: float32 nx x ny x nz_out where nz_out is
 * opts->nz (or the volume's nz), overwritten. The result is in the units of
 * the line integrals per mm (a Shepp-Logan phantom gives its own values). */
ctr_status ctr_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                   const ctr_array *proj, ctr_array *vol);

/* The two halves of FDK on the CPU backend, for callers that pipeline them
 * (ctr_backprojector is the incremental backprojection on either backend).
 * Filters views
 * [v0, v0+n) of proj (float32, contiguous, n views) in place: Parker and cosine
 * weights, ramp filter, angular weight. Bad values (NaN, infinite, beyond
 * +-1e24) follow opts->strict: replaced by 0 first with a warning, or an
 * error before anything changes; ctr_fdk_backproject reports bad filtered
 * values the same way. */
ctr_status ctr_fdk_filter(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                          int64_t v0, int64_t n, float *proj);
/* Adds the backprojection of filtered views [v0, v0+n) (n images in `filtered`)
 * into vol (float32, slices [opts->z0, opts->z0 + nz)). */
ctr_status ctr_fdk_backproject(ctr_context *ctx, const ctr_geometry *g,
                               const ctr_fdk_options *opts, int64_t v0, int64_t n,
                               const float *filtered, ctr_array *vol);

/* ------------------------------------------------------------------------- */
/* Incremental backprojection of filtered views                              */
/* ------------------------------------------------------------------------- */

/* Accumulates vol += sum_n weight_n * Q_n(u, v) / c^2 over already filtered
 * views, with g's canonical matrices (c = depth / depth of the origin), into
 * a volume the backend keeps (GPU memory for CUDA). Views may come in any
 * order and any number of calls; each call returns when its views are
 * backprojected. opts: interp, z0 / nz (may be NULL). */
typedef struct ctr_backprojector ctr_backprojector;

ctr_status ctr_backprojector_create(ctr_context *ctx, const ctr_geometry *g,
                                    const ctr_fdk_options *opts, ctr_backprojector **out);
/* Adds n views: view indices (into g), images (nu x nv float32 each, u
 * fastest) and per-view weights (NULL: all 1). */
ctr_status ctr_backprojector_add(ctr_backprojector *b, int64_t n, const int64_t *views,
                                 const float *const *images, const float *weights);
/* Copies the volume out (nx x ny x nz floats). */
ctr_status ctr_backprojector_read(ctr_backprojector *b, float *vol);
/* Double-precision reference of the same sum (bounds-checked bilinear,
 * double arithmetic throughout), into vol (nx x ny x nz doubles, added to).
 * Runs on the GPU in FP64 when ctx is CUDA, else on the CPU (OpenMP). The
 * oracle for tests and for RabbitCT reference volumes. */
ctr_status ctr_backproject_reference(ctr_context *ctx, const ctr_geometry *g, int64_t n,
                                     const int64_t *views, const float *const *images,
                                     const double *weights, double *vol);
/* Zeroes the volume. */
ctr_status ctr_backprojector_reset(ctr_backprojector *b);
void ctr_backprojector_free(ctr_backprojector *b);

/* ------------------------------------------------------------------------- */
/* RabbitCT (Rohkohl et al., Med. Phys. 36:3940, 2009)                       */
/* ------------------------------------------------------------------------- */

/* RabbitCT matrices are 12 doubles with element (row r, column c) at
 * A[c * 3 + r]; voxel (i, j, k) of an L^3 volume sits at (O_L + i R_L,
 * O_L + j R_L, O_L + k R_L); its value is sum_n Q_n(u, v) / w^2 with
 * (u w, v w, w) = A (x, y, z, 1). */

/* Canonical geometry of RabbitCT views with an L^3 volume of voxel R_L whose
 * first voxel sits at O_L. Backprojecting with weight ctr_rabbitct_weight(A)
 * per view reproduces RabbitCT's 1 / w^2. */
ctr_status ctr_geometry_from_rabbitct(int64_t width, int64_t height, int64_t nviews,
                                      const double *const *matrices, int64_t L, double R_L,
                                      double O_L, ctr_geometry **out);
/* 1 / A[2][3]^2: converts the canonical 1 / c^2 weight into RabbitCT's 1 / w^2. */
double ctr_rabbitct_weight(const double A[12]);

typedef struct ctr_rabbitct_header {
  uint32_t version;       /* 0 for files with the old header (no version word) */
  int64_t width, height;  /* projection S_x, S_y */
  int64_t nviews;
  float hu0, hu1;         /* HU = round(hu0 * f + hu1) for f > 0, else 0; clipped at 4095 */
  int nref;               /* reference volumes present */
  int64_t ref_sizes[8];   /* their L, ascending (128, 256, ...) */
} ctr_rabbitct_header;

typedef struct ctr_rabbitct ctr_rabbitct;
typedef struct ctr_rabbitct_writer ctr_rabbitct_writer;

/* Opens a RabbitCT data file (header with or without the version word, then
 * per view 12 doubles + width x height floats, then uint16 reference volumes
 * of 128^3, 256^3, ... concatenated). Errors name the file and what is
 * inconsistent. */
ctr_status ctr_rabbitct_open(const char *path, ctr_rabbitct **out);
const ctr_rabbitct_header *ctr_rabbitct_get_header(const ctr_rabbitct *r);
/* View i: its matrix (RabbitCT order) and image (width x height floats). */
ctr_status ctr_rabbitct_read_view(ctr_rabbitct *r, int64_t i, double matrix[12], float *image);
/* The L^3 uint16 reference volume; CTR_E_FORMAT naming the sizes present if
 * the file has none of that size. */
ctr_status ctr_rabbitct_read_reference(ctr_rabbitct *r, int64_t L, uint16_t *out);
void ctr_rabbitct_close(ctr_rabbitct *r);

/* Writes a RabbitCT file (with the version word). h->nref / ref_sizes
 * declare the reference volumes that will follow. Views in order 0, 1, ...,
 * then references in the declared order; temporary name + rename on commit. */
ctr_status ctr_rabbitct_create(const char *path, const ctr_rabbitct_header *h,
                               ctr_rabbitct_writer **out);
ctr_status ctr_rabbitct_write_view(ctr_rabbitct_writer *w, const double matrix[12],
                                   const float *image);
ctr_status ctr_rabbitct_write_reference(ctr_rabbitct_writer *w, int64_t L, const uint16_t *vol);
ctr_status ctr_rabbitct_commit(ctr_rabbitct_writer *w); /* frees w */
void ctr_rabbitct_abort(ctr_rabbitct_writer *w);        /* frees w; accepts NULL */

/* RabbitCT's scoring: HU conversion and errors against a reference. */
typedef struct ctr_rabbitct_score {
  double rmse, mse, max_error, psnr; /* in HU; PSNR with peak 4095 */
} ctr_rabbitct_score;
void ctr_rabbitct_to_hu(const float *f, int64_t n, float hu0, float hu1, uint16_t *out);
ctr_status ctr_rabbitct_score_volume(const float *f, const uint16_t *ref, int64_t L, float hu0,
                                     float hu1, ctr_rabbitct_score *out);

/* ------------------------------------------------------------------------- */
/* Metrics                                                                   */
/* ------------------------------------------------------------------------- */

typedef struct ctr_volume_error {
  double rmse_object; /* over voxels where the truth is non-zero */
  double rmse_flat;   /* same, restricted to voxels whose 3x3x3 truth
                         neighbourhood is constant (away from edges) */
  double max_abs;     /* largest |rec - truth| over the object */
  int64_t n_object, n_flat;
} ctr_volume_error;

/* Compares a reconstruction with a (voxelised) truth of nx x ny x nz float32
 * voxels, both x fastest. Slices within `margin` of the top and bottom are
 * left out (cone-beam FDK is approximate there; 0 = use all). */
ctr_status ctr_volume_compare(const float *rec, const float *truth, int64_t nx, int64_t ny,
                              int64_t nz, int64_t margin, ctr_volume_error *out);

/* ------------------------------------------------------------------------- */
/* File I/O                                                                  */
/* ------------------------------------------------------------------------- */

typedef enum ctr_file_format {
  CTR_FORMAT_AUTO = 0,       /* from the name: .raw/.bin, .tif/.tiff, .nrrd/.nhdr, '%' pattern */
  CTR_FORMAT_RAW = 1,        /* headerless little-endian; dims and dtype given */
  CTR_FORMAT_TIFF = 2,       /* one multi-page TIFF, one page per image */
  CTR_FORMAT_TIFF_STACK = 3, /* one TIFF per image: printf pattern "dir/img_%04d.tif" */
  CTR_FORMAT_NRRD = 4,       /* .nrrd (attached) or .nhdr + .raw (detached), raw encoding */
  CTR_FORMAT_HDF5 = 5        /* "file.h5:/dataset" (3D dataset, the last index fastest); needs
                                CTR_FEATURE_HDF5. Reading only. */
} ctr_file_format;

const char *ctr_format_name(ctr_file_format f);
ctr_status ctr_format_parse(const char *name, ctr_file_format *out);
/* Resolves CTR_FORMAT_AUTO from a path; CTR_E_INVALID_ARGUMENT if unknown. */
ctr_status ctr_format_guess(const char *path, ctr_file_format *out);

/* A stack of 2D images (projections, or volume slices): width x height x count. */
typedef struct ctr_stack_info {
  int64_t width, height, count;
  ctr_dtype dtype;
  double spacing[3];   /* mm; 0 if unknown */
  double origin[3];    /* mm of the first sample; NRRD only */
} ctr_stack_info;

typedef struct ctr_stack_reader ctr_stack_reader;
typedef struct ctr_stack_writer ctr_stack_writer;

/* Opens for reading. For RAW, `hint` must give width, height, count, dtype
 * (and `raw_offset` bytes are skipped); for other formats `hint` may be NULL
 * and, if given, its non-zero fields are checked against the file. */
ctr_status ctr_stack_open(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                          int64_t raw_offset, ctr_stack_reader **out);
const ctr_stack_info *ctr_stack_reader_info(const ctr_stack_reader *r);
/* Reads images [first, first+n) converted to `dtype` into out (contiguous). */
ctr_status ctr_stack_read(ctr_stack_reader *r, int64_t first, int64_t n, ctr_dtype dtype,
                          void *out);
/* A 1D numeric dataset of an HDF5 file (e.g. DXchange's /exchange/theta)
 * as n doubles (*out malloc'd, free with free()). CTR_E_UNSUPPORTED without
 * CTR_FEATURE_HDF5; errors name the file and dataset. */
ctr_status ctr_hdf5_read_vector(const char *file, const char *dataset, double **out, int64_t *n);
/* Rows [row0, row0 + nrows) of images [first, first+n), converted to
 * `dtype`, into out (n x nrows x width, image after image): a block of
 * detector rows of every projection without reading whole images where the
 * format allows (raw, NRRD). */
ctr_status ctr_stack_read_rows(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                               int64_t nrows, ctr_dtype dtype, void *out);
void ctr_stack_close(ctr_stack_reader *r);

/* Creates a writer. Data goes to a temporary name beside the target and is
 * renamed into place by ctr_stack_commit only when every image was written
 * and flushed; ctr_stack_abort (or freeing without commit) removes it. */
ctr_status ctr_stack_create(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                            ctr_stack_writer **out);
/* Writes images [first, first+n) from `data` (dtype `dtype`, converted to the
 * file's dtype; float -> uint16 rounds and clamps, NaN -> 0). RAW, NRRD and
 * TIFF stacks accept any order (pwrite at the slab's offset); a multi-page
 * TIFF must be written in order (the error names the expected image). */
ctr_status ctr_stack_write(ctr_stack_writer *w, int64_t first, int64_t n, ctr_dtype dtype,
                           const void *data);
ctr_status ctr_stack_commit(ctr_stack_writer *w); /* frees w */
void ctr_stack_abort(ctr_stack_writer *w);        /* frees w; accepts NULL */

/* Whole-array convenience wrappers. */
ctr_status ctr_stack_load(const char *path, ctr_file_format fmt, const ctr_stack_info *hint,
                          ctr_dtype dtype, ctr_stack_info *info_out, void **data_out);
ctr_status ctr_stack_save(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                          ctr_dtype dtype, const void *data);

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
typedef struct ctr_parallel_params {
  unsigned version;
  int64_t nbins, nangles;
  const double *angles_deg; /* nangles entries (copied), or NULL: */
  double angle_start_deg, angle_range_deg; /* angle_start + a * range / nangles */
  double axis;              /* rotation axis in bins; CTR_AXIS_CENTER = (nbins - 1) / 2 */
  const double *axis_shift; /* optional per-projection correction (bins, seed 004's c_a) */
  int64_t nx, ny;           /* slice size; 0 = nbins */
  double voxel;             /* slice pixel in bins; 0 = 1 */
  double pixel_size;        /* mm per bin (scales the result); 0 = 1 */
} ctr_parallel_params;

#define CTR_AXIS_CENTER (-1.0e300)
#define CTR_PARALLEL_PARAMS_INIT \
  { CTR_API_VERSION, 0, 0, NULL, 0.0, 180.0, CTR_AXIS_CENTER, NULL, 0, 0, 0.0, 0.0 }

typedef struct ctr_parallel_geometry ctr_parallel_geometry;

/* Validates and copies (angles, shifts). Errors name the field. */
ctr_status ctr_parallel_create(const ctr_parallel_params *p, ctr_parallel_geometry **out);
void ctr_parallel_free(ctr_parallel_geometry *g);
/* The resolved parameters (angles_deg and axis_shift point into g). */
const ctr_parallel_params *ctr_parallel_get(const ctr_parallel_geometry *g);
/* Angle a's weight in the backprojection sum (radians). */
double ctr_parallel_weight(const ctr_parallel_geometry *g, int64_t a);

/* Exact parallel-beam line integrals of a phantom's ellipsoids through the
 * slice planes z = z[s] (mm; one bin = pixel_size mm), in density x mm:
 * out is nbins x nangles x nslices float32. Each value is the mean of
 * supersample exact integrals across the bin (1 = the bin centre). */
ctr_status ctr_phantom_sinogram(const ctr_phantom *ph, const ctr_parallel_geometry *g,
                                int64_t nslices, const double *z, int supersample,
                                float *out);
/* The phantom's density on the slice grid at plane z (mm), nx x ny floats,
 * each the mean of supersample^2 point samples. */
ctr_status ctr_phantom_slice(const ctr_phantom *ph, const ctr_parallel_geometry *g, double z,
                             int supersample, float *out);

/* Flat-field correction and -log, then transposition into sinograms:
 * proj holds nangles projections of nbins x nrows (float32 or uint16, bins
 * fastest); flat and dark are nbins x nrows float32 images (averaged beams;
 * dark may be NULL = 0). Rows [row0, row0 + nslices) become sinograms:
 * sino[(s * nangles + a) * nbins + b] = -log(max((p - d) / (f - d), eps))
 * with eps = 1e-6 (dead or saturated pixels stay finite; they are counted in
 * *clamped if not NULL); a pixel whose flat and dark are not finite or have
 * f - d <= 0 holds no calibration: its value is 0 (ctr_fbp_projections
 * counts those pixels as ctr_value_counts.calibration). */
ctr_status ctr_flatfield_sinograms(const void *proj, ctr_dtype dtype, int64_t nbins,
                                   int64_t nrows, int64_t nangles, const float *flat,
                                   const float *dark, int64_t row0, int64_t nslices,
                                   float *sino, int64_t *clamped);
/* Averages n images (float32 or uint16) of npix pixels into out (float32). */
ctr_status ctr_average_images(const void *images, ctr_dtype dtype, int64_t npix, int64_t n,
                              float *out);

typedef enum ctr_fbp_interp {
  CTR_FBP_LINEAR = 0, /* linear interpolation between bins */
  CTR_FBP_NEAREST = 1 /* nearest bin */
} ctr_fbp_interp;

/* Bad data met by a call under the data policy (docs/architecture.md, "Bad
 * values"), each replaced as said. */
typedef struct ctr_value_counts {
  int64_t input;       /* input values NaN, infinite or beyond +-1e24: replaced by 0 */
  int64_t calibration; /* flat/dark pixels with flat <= dark or non-finite: sinogram value 0 */
  int64_t clamped;     /* transmissions (p - dark) / (flat - dark) below 1e-6 or NaN: clamped
                          to 1e-6 (CPU; the GPU path does not count them) */
  int64_t output;      /* results NaN, infinite or beyond +-1e24: replaced by 0 */
} ctr_value_counts;

typedef struct ctr_fbp_options {
  unsigned version;
  ctr_window window;
  double cutoff;            /* (0, 1], fraction of Nyquist */
  ctr_fbp_interp interp;
  const char *kernel;       /* GPU kernel by name (docs/parallel-beam.md); NULL / "auto" = the
                               fastest exact one for this GPU and size, found by a short timing
                               run on first use and cached on disk (CTRECON_CACHE_DIR, else
                               ~/.cache/ctrecon; CTRECON_TUNE=0: no tuning). CUDA only, the
                               CPU ignores it */
  int strict;               /* data policy (docs/architecture.md, "Bad values"): 0 = sinogram
                               values that are NaN, infinite or beyond +-1e24, flat/dark pixels
                               with flat <= dark or non-finite, and clamped transmissions are
                               counted, replaced and reported as a warning through the
                               context's log; 1 = any of them is a CTR_E_FORMAT error */
  ctr_value_counts *counts; /* optional: the counts are added here and no warning is logged
                               (for callers that report once over many calls) */
} ctr_fbp_options;

#define CTR_FBP_OPTIONS_INIT \
  { CTR_API_VERSION, CTR_WINDOW_RAM_LAK, 1.0, CTR_FBP_LINEAR, NULL, 0, NULL }

/* Ramp-filters nslices sinograms in place (nbins x nangles each), scaled so
 * that ctr_fbp_backproject of the result is the reconstruction. Bad values
 * follow opts->strict (replaced by 0 first, or an error before anything
 * changes); ctr_fbp, ctr_fbp_projections and ctr_fbp_backproject check their
 * slices the same way. */
ctr_status ctr_fbp_filter(ctr_context *ctx, const ctr_parallel_geometry *g,
                          const ctr_fbp_options *opts, int64_t nslices, float *sino);
/* slices (nx x ny x nslices floats, overwritten) = the weighted
 * backprojection of nslices filtered sinograms. */
ctr_status ctr_fbp_backproject(ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *opts, int64_t nslices, const float *sino,
                               float *slices);
/* Filter + backprojection of nbins x nangles x nslices sinograms (float32)
 * into nx x ny x nslices slices. */
ctr_status ctr_fbp(ctr_context *ctx, const ctr_parallel_geometry *g, const ctr_fbp_options *opts,
                   const ctr_array *sinograms, ctr_array *slices);
/* Projections to slices in one call: flat/dark correction and -log as
 * ctr_flatfield_sinograms, transposition, filter, backprojection. proj is
 * nbins x nrows x nangles (float32 or uint16, bins fastest); flat and dark
 * are nbins x nrows float32 (dark may be NULL); detector rows [row0, row0 +
 * nslices) become slices (nx x ny x nslices float32, overwritten). On a CUDA
 * context everything after one strided upload of each chunk of rows runs on
 * the GPU, chunk after chunk on two streams; pinned host memory
 * (ctr_host_alloc) transfers fastest. */
ctr_status ctr_fbp_projections(ctr_context *ctx, const ctr_parallel_geometry *g,
                               const ctr_fbp_options *opts, const ctr_array *proj,
                               const float *flat, const float *dark, int64_t row0,
                               ctr_array *slices);
/* Double-precision reference backprojection (CPU, OpenMP) of filtered
 * sinograms: the oracle for the tests. slices: nx x ny x nslices doubles. */
ctr_status ctr_fbp_backproject_reference(const ctr_parallel_geometry *g, ctr_fbp_interp interp,
                                         int64_t nslices, const float *sino, double *slices);

/* ------------------------------------------------------------------------- */
/* Memory planning and streamed (out-of-core) FDK                            */
/* ------------------------------------------------------------------------- */

/* Where filtered projections wait between subvolumes (each projection is
 * filtered once; later subvolumes reuse the filtered copy). */
typedef enum ctr_store {
  CTR_STORE_AUTO = 0,
  CTR_STORE_DEVICE = 1,  /* resident in GPU memory (CUDA only) */
  CTR_STORE_HOST = 2,    /* host memory, uploaded again for each later subvolume */
  CTR_STORE_SCRATCH = 3, /* a scratch file, read back for each later subvolume */
  CTR_STORE_NONE = 4     /* not kept: one subvolume needs each filtered view once */
} ctr_store;

const char *ctr_store_name(ctr_store s);

typedef struct ctr_plan_request {
  unsigned version;
  ctr_device_kind device;  /* CTR_DEVICE_CPU or CTR_DEVICE_CUDA */
  uint64_t gpu_budget;     /* bytes of GPU memory the run may use (CUDA) */
  uint64_t host_budget;    /* bytes of host memory the run may use */
  ctr_dtype proj_dtype;    /* projections as read */
  ctr_dtype vol_dtype;     /* volume as written */
  ctr_interp interp;
  int64_t z0, nz;          /* slices to reconstruct; nz = 0: all */
  int64_t views_per_batch; /* N'; 0 = automatic */
  int64_t max_slab_slices; /* upper bound on Z' (e.g. to force many subvolumes); 0 = none */
  ctr_store store;         /* CTR_STORE_AUTO: the cheapest that fits */
  int input_in_memory;     /* projections come from the caller's array (no read buffers) */
  int output_in_memory;    /* the volume goes to the caller's array (no write buffers) */
} ctr_plan_request;

#define CTR_PLAN_REQUEST_INIT                                                              \
  { CTR_API_VERSION, CTR_DEVICE_CPU, 0, 0, CTR_DTYPE_FLOAT32, CTR_DTYPE_FLOAT32,          \
    CTR_INTERP_DEFAULT, 0, 0, 0, 0, CTR_STORE_AUTO, 0, 0 }

/* A decomposition of one FDK run (seed 000 Alg. 2): the volume slices
 * [z0, z0+nz) in nslabs subvolumes of slab_slices slices (the last may be
 * shorter), the views in batches of views_per_batch, the filtered views kept
 * in `store`, and the buffers the executor allocates. */
typedef struct ctr_plan {
  ctr_device_kind device;
  int64_t z0, nz;
  int64_t slab_slices, nslabs;    /* Z' and the number of subvolumes */
  int64_t views_per_batch, nbatches; /* N' and the number of projection subsets */
  ctr_store store;
  int pair;                /* CUDA: mirrored-pair kernels (one symmetric subvolume) */
  int read_buffers;        /* host buffers of N' views between the reader and the GPU */
  int host_slab_buffers;   /* host buffers between the backend and the writer thread */
  int64_t chunk_slices;    /* slices per such buffer (a subvolume is written in chunks) */
  uint64_t gpu_bytes;      /* peak GPU memory of the plan */
  uint64_t host_bytes;     /* peak host memory of the plan */
  uint64_t scratch_bytes;  /* scratch file size (CTR_STORE_SCRATCH) */
} ctr_plan;

/* Chooses the decomposition for geometry g within the request's budgets (a
 * pure function: no GPU, no allocation). Prefers, in order: the whole volume
 * in one subvolume, filtered views resident on the device, then in host
 * memory, then in a scratch file; subvolumes as large as the budgets allow.
 * A budget too small for any plan is CTR_E_OUT_OF_MEMORY (GPU budget:
 * CTR_E_DEVICE_OUT_OF_MEMORY) whose detail gives the smallest budget that
 * works. */
ctr_status ctr_plan_fdk(const ctr_geometry *g, const ctr_plan_request *req, ctr_plan *out);
/* Budgets from the machine: free GPU memory of ctx's device less 1 GiB (0
 * for a CPU context) and available host memory less 10 % (at least 1 GiB
 * kept free). */
ctr_status ctr_plan_default_budgets(ctr_context *ctx, uint64_t *gpu_budget,
                                    uint64_t *host_budget);
/* One line describing the plan ("4 subvolumes of 512 slices, ..."). Returns
 * the length snprintf would have written. */
int ctr_plan_describe(const ctr_plan *p, char *buf, size_t n);
/* Parses a byte size: a number with an optional suffix K, M, G, T (powers of
 * 1024, optional trailing "B" or "iB"), e.g. "8G", "512MiB", "1.5T". */
ctr_status ctr_parse_size(const char *text, uint64_t *bytes);

/* Busy time of each step of the streamed pipeline (seed 000 Fig. 3, Table
 * 4), in seconds. The steps overlap, so they add up to more than total. */
typedef struct ctr_stream_timings {
  double read;        /* (1) storage -> host: reader thread busy */
  double upload;      /* (2) host -> device: raw projections */
  double filter;      /* (3) weighting and ramp filter */
  double store;       /* (4) filtered projections device -> host / scratch file */
  double reload;      /* (5) filtered projections host / scratch -> device */
  double backproject; /* (6) */
  double download;    /* (7) subvolume device -> host */
  double write;       /* (8) host -> storage: writer thread busy (incl. flushes) */
  double total;       /* wall time, setup to the last byte flushed */
  double setup;       /* allocations and plans before the first read */
} ctr_stream_timings;

/* Called from the writer thread with each finished subvolume (float32,
 * nx x ny x nz slices from slice z0 of the run) before it is written. */
typedef void (*ctr_slab_fn)(void *user, int64_t z0, int64_t nz, const float *slab);

typedef struct ctr_stream_options {
  unsigned version;
  ctr_fdk_options fdk;   /* filter, interpolation, slices (z0, nz) */
  uint64_t gpu_budget;   /* 0 = detected (ctr_plan_default_budgets) */
  uint64_t host_budget;  /* 0 = detected */
  int64_t max_slab_slices; /* force smaller subvolumes; 0 = as the budgets allow */
  ctr_store store;       /* force where filtered views wait; AUTO = planner's choice */
  const char *scratch_dir; /* for CTR_STORE_SCRATCH; NULL = beside the output */
  double input_scale;    /* projections are divided by this (0 = 1) */
  ctr_dtype out_dtype;   /* volume file dtype (0 = float32) */
  double out_scale;      /* uint16 stores value x out_scale, rounded, clamped (0 = 1) */
  int resume;            /* continue an interrupted run from <out>.partial */
  ctr_slab_fn on_slab;   /* optional */
  void *user;
} ctr_stream_options;

#define CTR_STREAM_OPTIONS_INIT \
  { CTR_API_VERSION, CTR_FDK_OPTIONS_INIT, 0, 0, 0, CTR_STORE_AUTO, NULL, 1.0, CTR_DTYPE_FLOAT32, 1.0, 0, NULL, NULL }

/* What a streamed run did. */
typedef struct ctr_stream_report {
  ctr_plan plan;
  ctr_stream_timings timings;
  int64_t nonfinite;        /* projection values NaN, infinite or beyond +-1e24, replaced by 0 */
  int64_t out_nonfinite;    /* voxels NaN, infinite or beyond +-1e24, replaced by 0 before writing */
  int64_t below, above;     /* uint16 output: voxels clamped to 0 / 65535 */
  int64_t slabs_resumed;    /* subvolumes found complete in the journal (and unchanged on
                               disk: their CRC-32 matched) */
  float min, max;           /* range of the reconstructed values: the whole output, resumed
                               subvolumes included (below, above too) */
  int64_t slices_resumed;   /* slices of those subvolumes; timings cover the others only */
} ctr_stream_report;

/* Streamed FDK from a projection file to a volume file (seed 000 Alg. 2):
 * a reader thread loads projection subsets, the backend filters each
 * projection once and backprojects subvolume after subvolume, a writer
 * thread stores each finished subvolume at its offset. Nothing needs the
 * whole projection set or volume in memory. Output goes to "<out>.partial"
 * with a journal "<out>.partial.journal" of finished subvolumes, renamed
 * onto `out` only when every slice is written and flushed; on error or
 * cancellation the partial output and journal stay for opts->resume, which
 * skips the journalled subvolumes and gives a result bit-identical to an
 * uninterrupted run. Each journal line holds the CRC-32 of its subvolume's
 * bytes; a resume reads the journalled subvolumes back and computes again
 * (logging a warning that names it) any whose bytes changed on disk. The
 * volume has the geometry's nx x ny and the slices of opts->fdk (uint16 input
 * is converted; bad values follow opts->fdk.strict).
 * report may be NULL. */
ctr_status ctr_fdk_stream(ctr_context *ctx, const ctr_geometry *g, const ctr_stream_options *opts,
                          ctr_stack_reader *projections, const char *out, ctr_file_format out_format,
                          ctr_stream_report *report);

/* The same pipeline between arrays in memory (proj: nu x nv x nviews float32
 * or uint16; vol: nx x ny x nz float32). ctr_fdk is this with default
 * budgets. */
ctr_status ctr_fdk_stream_memory(ctr_context *ctx, const ctr_geometry *g,
                                 const ctr_stream_options *opts, const ctr_array *proj,
                                 ctr_array *vol, ctr_stream_report *report);

/* PNG previews of the three central slices of a float32 volume (x fastest):
 * writes <prefix>_xy.png, <prefix>_xz.png, <prefix>_yz.png, 8-bit grey, the
 * window [lo, hi] mapped to 0..255 (lo == hi: the volume's 0.5/99.5 %
 * percentiles). */
ctr_status ctr_png_preview(const char *prefix, const float *vol, int64_t nx, int64_t ny,
                           int64_t nz, float lo, float hi);
/* The same previews from the three planes alone (for volumes that never sit
 * in memory whole): xy is nx x ny, xz is nx x nz and yz is ny x nz, the
 * first index fastest, z ascending; lo == hi: their 0.5/99.5 % percentiles. */
ctr_status ctr_png_preview_planes(const char *prefix, const float *xy, const float *xz,
                                  const float *yz, int64_t nx, int64_t ny, int64_t nz, float lo,
                                  float hi);
/* One 8-bit grey PNG of a float image. */
ctr_status ctr_png_write_gray(const char *path, const float *img, int64_t width, int64_t height,
                              float lo, float hi);


/* ------------------------------------------------------------------------- */
/* TOF-PET: DIRECT reconstruction from histo-images (seed 002)               */
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
typedef struct ctr_pet_params {
  unsigned version;
  int64_t nx, ny, nz;    /* lattice (144 x 144 x 48) */
  double voxel;          /* mm (4) */
  int n_azimuth;         /* azimuthal view intervals over 180 degrees (40) */
  int n_copolar;         /* co-polar view intervals (3) */
  double acceptance_deg; /* axial acceptance half-angle (10) */
} ctr_pet_params;

#define CTR_PET_PARAMS_INIT { CTR_API_VERSION, 144, 144, 48, 4.0, 40, 3, 10.0 }

/* A user-supplied system-response kernel: the value at an offset of
 * (tof, radial, axial) mm from the kernel centre, in the view frame, for a
 * kernel centred at the signed LOR-radial position rho (mm; negative on the
 * -r side of the scanner axis). Values need not be normalised. */
typedef double (*ctr_pet_kernel_fn)(void *user, double tof_mm, double radial_mm,
                                    double axial_mm, double rho_mm);

/* System-response (SR) kernel model (seed 002 section 4.1). The LOR-radial
 * FWHM varies with the radial distance |rho| of the kernel centre from the
 * scanner axis: linearly from the centre value to the edge value at
 * edge_radius_mm (constant beyond), or piecewise linearly through
 * radial_table (pairs radius_mm, fwhm_mm, radii ascending) when given.
 * Asymmetric kernels add a second Gaussian twice as wide, weighted
 * asym_weight and shifted by asym_shift_sigma narrow sigmas towards the
 * scanner axis (seed section 5.2). Each kernel is cut to the ellipsoid with
 * semi-axes cut_k sigma in each direction (the widest kernel of the view sets
 * the support, mSR) and normalised to unit sum over it. */
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

#define CTR_PET_KERNEL_PARAMS_INIT                                                    \
  { CTR_API_VERSION, 400.0, 5.8, 5.8, 0.0, NULL, 0, 5.8, 0, 0.5, 1.0, 3.0, 2.0, NULL, NULL, \
    { 0.0, 0.0, 0.0 } }

/* Speed of light in mm per ps: TOF distance FWHM = tof_fwhm_ps * c / 2. */
#define CTR_PET_C_MM_PER_PS 0.299792458

/* Lattice, views and the SR-kernel look-up tables of every view (LORmap,
 * mSR, mSRval; built on first use of a view and kept). */
typedef struct ctr_pet_system ctr_pet_system;

typedef struct ctr_pet_view_info {
  double azimuth_deg, copolar_deg; /* interval centres */
  double dir[3];                   /* TOF direction d */
  int64_t support;                 /* offsets in the kernel support (|mSR|) */
  int64_t columns;                 /* z-runs of the support ((dx, dy) pairs) */
  int64_t kernels;                 /* LORmap identifiers (N_kernel) */
  int half_extent[3];              /* largest |dx|, |dy|, |dz| of the support (voxels) */
} ctr_pet_view_info;

/* Validates (errors name the field) and copies the parameters. */
ctr_status ctr_pet_system_create(const ctr_pet_params *p, const ctr_pet_kernel_params *k,
                                 ctr_pet_system **out);
void ctr_pet_system_free(ctr_pet_system *s);
const ctr_pet_params *ctr_pet_system_params(const ctr_pet_system *s);
const ctr_pet_kernel_params *ctr_pet_system_kernel(const ctr_pet_system *s);
int64_t ctr_pet_num_views(const ctr_pet_system *s);
/* Builds the view's tables if needed. */
ctr_status ctr_pet_view_info_get(ctr_pet_system *s, int64_t view, ctr_pet_view_info *out);
/* LOR-radial FWHM (mm) of the model at radial distance |rho| mm. */
double ctr_pet_radial_fwhm(const ctr_pet_system *s, double rho_mm);
/* 1 if every kernel is the same symmetric Gaussian (FFT-compatible). */
int ctr_pet_kernel_is_invariant(const ctr_pet_system *s);

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
ctr_status ctr_pet_histo_create(const ctr_pet_params *p, int with_factors, ctr_pet_histo **out);
void ctr_pet_histo_free(ctr_pet_histo *h);
/* HDF5 when path ends in .h5/.hdf5 (and HDF5 is built): datasets /pet/counts
 * and /pet/factors with the parameters as attributes; otherwise <path> is a
 * JSON description next to raw float32 files <path minus .json>.counts.raw
 * (and .factors.raw). Written to temporary names and renamed when complete.
 * The file format is in docs/file-formats.md. */
ctr_status ctr_pet_histo_save(const char *path, const ctr_pet_histo *h);
/* Reads either form; errors name the file and what was expected (sizes,
 * view counts, missing or unknown fields, truncated data). Counts or factors
 * that are NaN, infinite, negative or beyond 1e24 are replaced by 0 and
 * counted in (*out)->replaced: the caller reports them, or refuses the data
 * (ctr_pet_recon_options.strict does). */
ctr_status ctr_pet_histo_load(const char *path, ctr_pet_histo **out);

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

/* Seed 002 section 6.1: 350 mm water cylinder (mu 0.0096 / mm), 192 mm long
 * (the default lattice's axial extent), background 1, six 10 mm spheres of
 * activity `contrast` at 75 mm radius, 60 degrees apart, at z = 2 mm: the
 * centre of the default lattice's central slice (z = 0 is a slice boundary
 * when the number of slices is even). */
void ctr_pet_phantom_spheres(ctr_pet_phantom *ph, double contrast);
/* Three point sources along y (0, 60, 120 mm) at z = 2 mm, no cylinder. */
void ctr_pet_phantom_points(ctr_pet_phantom *ph);
/* The phantom's activity on the lattice, each voxel the mean of
 * supersample^3 point samples (points go to their voxel). */
ctr_status ctr_pet_phantom_voxelize(const ctr_pet_phantom *ph, const ctr_pet_params *p,
                                    int supersample, float *image);

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

#define CTR_PET_SIM_OPTIONS_INIT { CTR_API_VERSION, 2.0e7, 0, 1, 1, NULL, 1 }

/* List-mode simulation: a Poisson number of events, each emitted from the
 * phantom (or the voxel activity), along a random LOR direction within the
 * acceptance (uniform in azimuth and in sin(tilt)), with a TOF error drawn
 * from the system's TOF resolution along the LOR and detector blur across
 * it, optionally attenuated; each event is deposited into the nearest voxel
 * of its view's histo-image. */
ctr_status ctr_pet_simulate(ctr_context *ctx, const ctr_pet_system *s, const ctr_pet_phantom *ph,
                            const ctr_pet_sim_options *opts, ctr_pet_histo **out);

/* Projectors of one view with that view's spatially variant kernels:
 * forward (image -> histo-image, each voxel spreads with its own kernel,
 * computed as a gather with the neighbours' kernels, seed Fig. 2) and back
 * (its exact adjoint: each voxel gathers with its own kernel). A projector
 * keeps the backend's tables (on the GPU for a CUDA context). */
typedef struct ctr_pet_projector ctr_pet_projector;
typedef enum ctr_pet_direction { CTR_PET_FORWARD = 0, CTR_PET_BACK = 1 } ctr_pet_direction;

ctr_status ctr_pet_projector_create(ctr_context *ctx, ctr_pet_system *s, ctr_pet_projector **out);
void ctr_pet_projector_free(ctr_pet_projector *p);
/* in and out: nx ny nz floats in host memory; out is overwritten. A projector
 * serves one thread at a time (it keeps its scratch buffers). */
ctr_status ctr_pet_project(ctr_pet_projector *p, ctr_pet_direction dir, int64_t view,
                           const float *in, float *out);
/* FFT reference for symmetric invariant kernels (error otherwise): the same
 * kernel untruncated, applied as a cyclic convolution on the lattice zero
 * padded by `pad` voxels on each side (FFTW on the CPU, cuFFT on a CUDA
 * context). Forward and back are the same operation. */
ctr_status ctr_pet_project_fft(ctr_context *ctx, ctr_pet_system *s, int64_t view, int64_t pad,
                               const float *in, float *out);

typedef enum ctr_pet_algorithm {
  CTR_PET_RAMLA = 0, /* block-RAMLA, one view per sub-iteration */
  CTR_PET_OSEM = 1,  /* OSEM, one view per subset */
  CTR_PET_MLEM = 2
} ctr_pet_algorithm;
const char *ctr_pet_algorithm_name(ctr_pet_algorithm a);
ctr_status ctr_pet_algorithm_parse(const char *name, ctr_pet_algorithm *out);

/* Called after each iteration with the current image (nx ny nz floats, valid
 * during the call). Return non-zero to stop. */
typedef int (*ctr_pet_iteration_fn)(void *user, int iteration, const float *image);

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
  { CTR_API_VERSION, CTR_PET_RAMLA, 10, 0.1, 0.1, NULL, NULL, 0 }

typedef struct ctr_pet_recon_timings {
  double forward, back, discrepancy, update, upload, download, total; /* seconds */
} ctr_pet_recon_timings;

/* Reconstructs the activity from the histo-images (whose params must match
 * the projector's system). image: nx ny nz floats; on entry the initial
 * estimate (all > 0) or, if every value is 0, a uniform start; on return the
 * result. timings may be NULL. On a CUDA context the image, the data and the
 * tables stay on the GPU; discrepancy and update run there. */
ctr_status ctr_pet_reconstruct(ctr_pet_projector *p, const ctr_pet_histo *h,
                               const ctr_pet_recon_options *opts, float *image,
                               ctr_pet_recon_timings *timings);

/* Contrast recovery and noise, seed 002 section 6.1: for each sphere,
 * CRC = ((p_s - p_b) / p_b) / c with p_s the mean in a 2D circular ROI of the
 * sphere's diameter on the sphere's central slice, p_b the mean in the
 * annulus of inner diameter (diameter + 14 mm) and 8 mm thickness around it,
 * c = sphere activity / background - 1; noise = standard deviation / mean
 * inside a 50 mm diameter ROI at the phantom centre on the central slice.
 * ROI membership is the pixel area inside (supersampled). */
typedef struct ctr_pet_metrics {
  double crc;                            /* mean over the spheres */
  double crc_sphere[CTR_PET_MAX_SPHERES];
  double noise;                          /* relative standard deviation */
  double background_mean;
  int nspheres;
} ctr_pet_metrics;

ctr_status ctr_pet_metrics_compute(const ctr_pet_params *p, const ctr_pet_phantom *ph,
                                   const float *image, ctr_pet_metrics *out);
/* A CRC-versus-noise plot (PNG, axes with ticks and labels, one line with a
 * marker per point in order): noise[i], crc[i] for i < n. */
ctr_status ctr_pet_plot_crc_noise(const char *path, const double *noise, const double *crc,
                                  int64_t n, const char *title);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_H */

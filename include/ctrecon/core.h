/*
 * ctrecon/core.h — status codes, library information, devices and host
 * memory, arrays, contexts, metrics, sizes and filter windows; included by
 * every other public header (<ctrecon.h> includes them all).
 *
 * Conventions (docs/design.md has the full picture):
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
#ifndef CTRECON_CORE_H
#define CTRECON_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrecon/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTR_VERSION_MAJOR 0
#define CTR_VERSION_MINOR 1
#define CTR_VERSION_PATCH 0
#define CTR_VERSION_STRING "0.1.0"

/* Structs a caller fills, or that the library fills and that may grow, are
 * versioned (docs/api.md): `unsigned version` is their first member, each has
 * its CTR_<NAME>_VERSION constant (the version this header describes), a
 * function ctr_<name>_init(s, version) that fills the defaults of any version
 * from 1 to that constant (the way for bindings) and a CTR_<NAME>_INIT macro
 * (the same for C, at the header's version). A struct grows only at its end;
 * every function that takes one accepts any version from 1 to the library's
 * constant and reads only the members that version has (the others take their
 * defaults); it fills only the members of the version the caller set. A
 * version 0 or above the library's is CTR_E_INVALID_ARGUMENT naming the
 * struct, the version and the accepted range.
 *
 * Structs without a version are value types that will not grow: each is a
 * complete mathematical object or a record of a fixed file format
 * (ctr_array, ctr_volume_geometry, ctr_ellipsoid, ctr_pet_sphere,
 * ctr_pet_phantom, ctr_rabbitct_header, ctr_rabbitct_score), or an object
 * the library allocates (ctr_pet_histo). A richer one is a new type. */

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
  X(CTR_E_INTERNAL, -13, "internal error")                                      \
  X(CTR_E_TIMEOUT, -14, "a process of a distributed run stopped making progress")

typedef enum ctr_status {
#define CTR__STATUS_ENUM(name, value, msg) name = value,
  CTR_STATUS_LIST(CTR__STATUS_ENUM)
#undef CTR__STATUS_ENUM
} ctr_status;

/* "CTR_E_IO" etc.; "CTR_E_UNKNOWN" for values not in the list. Static string. */
CTR_API const char *ctr_status_name(ctr_status s);
/* Short human message for a status. Static string. */
CTR_API const char *ctr_status_message(ctr_status s);
/* Detail of the last error raised on this thread ("" if none). Valid until the
 * next library call on this thread. */
CTR_API const char *ctr_error_detail(void);
/* The API field the last error on this thread is about, "" when it is about
 * none (or about several): the C name of a struct member,
 * "ctr_<struct>.<member>" ("ctr_iterate_options.subsets"), or the member
 * alone where the name is unique in the API ("gpu_budget", "host_budget",
 * "scratch_dir"). The detail names the field too; a binding or tool maps
 * this name to its own (a flag, a keyword) instead of reading the detail's
 * words (docs/api.md, "Library messages name API fields"). Valid as long as
 * ctr_error_detail; a detail raised again or wrapped on the same thread
 * ("rank R of N (HOST): ...") keeps it. */
CTR_API const char *ctr_error_get_field(void);
/* The offending value of the field the last error on this thread is about,
 * as the caller gave it, in text: a number ("0", "-3", "0.1", "1e+40",
 * "nan"; sizes and budgets in bytes, enumerations as their number), a path
 * or a name as given; "" when the error carries none (no field, or a value
 * the error is not about one of, such as a pair of fields found
 * inconsistent). Set and kept together with ctr_error_get_field: for a
 * binding or tool to show or check the value without reading the detail
 * (Python's exception .value). Valid as long as ctr_error_detail. */
CTR_API const char *ctr_error_get_value(void);
/* Clears the detail, the field and the value. */
CTR_API void ctr_error_clear(void);

/* ------------------------------------------------------------------------- */
/* Library information                                                       */
/* ------------------------------------------------------------------------- */

enum {
  CTR_FEATURE_OPENMP = 1u << 0,
  CTR_FEATURE_CUDA = 1u << 1,
  CTR_FEATURE_HDF5 = 1u << 2,
  CTR_FEATURE_MPI = 1u << 3, /* distributed runs over MPI (ctr_cluster_create) */
  CTR_FEATURE_TIFF = 1u << 4,
  CTR_FEATURE_PNG = 1u << 5,
  CTR_FEATURE_ZMQ = 1u << 6  /* projections from a ZeroMQ socket (ctr_source_open "tcp://...") */
};
CTR_API const char *ctr_version_string(void);
/* The name of `names` (n of them) nearest to s by edit distance (Levenshtein,
 * in bytes; the first of equals; "" when n is 0), the distance in *distance
 * (NULL: not wanted). What the JSON readers suggest for an unknown field and
 * the tool for an unknown option or command ("did you mean ...?"). */
CTR_API const char *ctr_nearest_name(const char *s, const char *const *names, int n,
                                     int *distance);
/* Bit set of CTR_FEATURE_* compiled into this build. */
CTR_API unsigned ctr_features(void);

/* Filled by the library: set version first (ctr_device_info_init or the INIT
 * macro); the library fills the members of that version. */
#define CTR_DEVICE_INFO_VERSION 1u
typedef struct ctr_device_info {
  unsigned version;
  char name[256];
  size_t total_memory, free_memory; /* bytes */
  int cc_major, cc_minor;           /* compute capability */
  int multiprocessors;
} ctr_device_info;
#define CTR_DEVICE_INFO_INIT { CTR_DEVICE_INFO_VERSION, "", 0, 0, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_DEVICE_INFO_VERSION (core.h). */
CTR_API ctr_status ctr_device_info_init(ctr_device_info *s, unsigned version);

/* Number of usable CUDA devices (0 when CUDA is not built or no GPU/driver). */
CTR_API int ctr_cuda_get_device_count(void);
/* Properties of CUDA device `index`; CTR_E_NO_DEVICE if there is none. */
CTR_API ctr_status ctr_cuda_get_device_info(int index, ctr_device_info *out);

/* Host memory for projections and volumes: page-locked (pinned) when a CUDA
 * device is usable, so transfers run at full PCIe speed and overlap the
 * computation; plain 64-byte aligned memory otherwise. Free with
 * ctr_host_free. NULL on failure (detail set). */
CTR_API void *ctr_host_alloc(size_t bytes);
CTR_API void ctr_host_free(void *p);
/* Pins existing host memory in place (page-locks it) so transfers from it run
 * at full speed: worth it for buffers reused many times. No-op (CTR_OK)
 * without a usable GPU. Undo with ctr_host_unregister before freeing. */
CTR_API ctr_status ctr_host_register(void *p, size_t bytes);
CTR_API void ctr_host_unregister(void *p);

/* ------------------------------------------------------------------------- */
/* Data types and array descriptors                                          */
/* ------------------------------------------------------------------------- */

/* CTR_DTYPE_FLOAT16 (IEEE 754 binary16) is a storage type of files: the
 * stack readers and writers convert it (ctr_stack_read, ctr_stack_write;
 * float -> half rounds to nearest even, beyond 65504 is infinite) and the
 * streamed FBP writes it (ctr_fbp_stream_options.out_dtype); computations
 * take float32 or uint16 arrays. */
typedef enum ctr_dtype { CTR_DTYPE_FLOAT32 = 1, CTR_DTYPE_UINT16 = 2, CTR_DTYPE_FLOAT16 = 3 } ctr_dtype;

/* Bytes per element; 0 for an unknown dtype. */
CTR_API size_t ctr_dtype_size(ctr_dtype t);
/* "float32" / "uint16" / "float16"; "unknown" otherwise. */
CTR_API const char *ctr_dtype_name(ctr_dtype t);
/* Parses "float32"/"f32"/"float", "uint16"/"u16" and "float16"/"f16"/"half".
 * CTR_E_INVALID_ARGUMENT (detail lists the accepted names) otherwise. */
CTR_API ctr_status ctr_dtype_parse(const char *name, ctr_dtype *out);

#define CTR_MAX_DIMS 4
/* A dense array in memory the caller owns: dims[0] x dims[1] x ... elements
 * of dtype with no gaps, dims[0] the fastest axis (element (i, j, k) of a 3D
 * array at i + dims[0] * (j + dims[1] * k)). Every function takes arrays in
 * this layout; copy strided data into one first. A value type (core.h). */
typedef struct ctr_array {
  void *data;
  ctr_dtype dtype;
  int ndim;
  int64_t dims[CTR_MAX_DIMS];
} ctr_array;

/* Fills a descriptor (ndim clamped to 0 .. CTR_MAX_DIMS). */
CTR_API ctr_array ctr_array_make(void *data, ctr_dtype dtype, int ndim, const int64_t *dims);
/* Number of elements. */
CTR_API int64_t ctr_array_get_element_count(const ctr_array *a);

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

/* Experiment and tuning switches (include/ctrecon/tuning.h). */
typedef struct ctr_tuning ctr_tuning;

#define CTR_CONTEXT_OPTIONS_VERSION 2u /* 2: ndevices, devices, tuning */
typedef struct ctr_context_options {
  unsigned version;
  ctr_device_kind device;
  int device_index; /* CUDA device ordinal when ndevices is 0; -1 = every visible GPU */
  int num_threads;  /* CPU threads; 0 = OpenMP default */
  ctr_progress_fn progress;
  ctr_log_fn log;
  void *user; /* passed to progress and log */
  /* the CUDA devices the context uses: devices[0 .. ndevices) (distinct
   * ordinals, copied); ndevices = 0: device_index alone, or every visible
   * GPU when it is -1 */
  int ndevices;
  const int *devices;
  const ctr_tuning *tuning; /* copied at creation; NULL = the defaults (ctr_tuning_init) */
} ctr_context_options;

#define CTR_CONTEXT_OPTIONS_INIT \
  { CTR_CONTEXT_OPTIONS_VERSION, CTR_DEVICE_AUTO, -1, 0, NULL, NULL, NULL, 0, NULL, NULL }
/* The defaults in the layout of `version`, 1 .. CTR_CONTEXT_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_context_options_init(ctr_context_options *s, unsigned version);

/* Threads (docs/api.md, "Threads"). A context may serve several threads at
 * once: calls on one context from different threads run concurrently and
 * give the bits each gives alone (the buffers and memo it keeps are locked;
 * tests/test_threads.c). Free it only when no call on it runs. Its progress
 * callback runs on the thread of the call that reports; its log callback
 * may run on the worker threads of a call (reader, writer, one per GPU), so
 * it must be thread-safe. The error detail (ctr_error_detail) is per thread. */
typedef struct ctr_context ctr_context;

/* Creates a context; *out owned by the caller, release with ctr_context_free.
 * opts may be NULL (defaults). */
CTR_API ctr_status ctr_context_create(const ctr_context_options *opts, ctr_context **out);
/* Frees a context; accepts NULL. A CUDA context keeps the GPU buffers of its
 * runs (every modality's: volumes, views, chunk buffers, vectors) for its
 * next run, which then skips their allocation (milliseconds each, more with
 * several GPUs); they are freed here, by ctr_context_release_memory, or as
 * soon as an allocation finds the GPU full. The objects made on a context
 * (ctr_projector, ctr_pet_projector, ctr_backprojector) use it until they
 * are freed, when their GPU buffers go back to it: a context they outlive
 * gives its kept buffers back here and the rest of it goes with the last of
 * them (they may be freed after it, not used). */
CTR_API void ctr_context_free(ctr_context *ctx);
/* The CUDA devices a context uses (0 for a CPU context) and the ordinal of the
 * i-th (-1 if there is none); the first is the device of single-GPU work. */
CTR_API int ctr_context_get_device_count(const ctr_context *ctx);
CTR_API int ctr_context_get_device_ordinal(const ctr_context *ctx, int i);
/* The backend a context resolved to (CTR_DEVICE_CPU or CTR_DEVICE_CUDA). */
CTR_API ctr_device_kind ctr_context_get_device(const ctr_context *ctx);
/* Memory budgets from the machine, the one rule behind every budget of the
 * library that is 0 ("detected": ctr_fdk_plan_request, ctr_fdk_stream_options,
 * ctr_fbp_stream_options, ctr_fbp_options, ctr_projector_options,
 * ctr_iterate_options) and every check of a GPU entry point:
 *  - GPU: free memory of the context's first GPU and the buffers the context
 *    keeps there, less 1 GiB (the CUDA context, cuFFT's and the kernels' work
 *    areas and other processes are in no plan); 0 for a CPU context. The
 *    library's runs reuse the kept buffers or give them back when the GPU is
 *    full; this function, whose caller's own allocations cannot, gives them
 *    back first (ctr_context_release_memory): the same figure;
 *  - host: available memory (MemAvailable) less 10 % of it, at least 1 GiB.
 * Either pointer may be NULL (not wanted). Thread-safe. */
CTR_API ctr_status ctr_context_get_memory_budgets(ctr_context *ctx, uint64_t *gpu_budget,
                                                  uint64_t *host_budget);
/* Frees the GPU buffers a CUDA context keeps between its runs (every
 * modality's: their next run on the same sizes skips the allocation) and
 * gives that memory back to other users without freeing the context;
 * ctr_context_free does it too. The buffers of runs in progress and of live
 * objects (projectors, backprojectors) are not kept ones: they stay (so it
 * may be called while runs go on). No run of the library needs it first.
 * Nothing for a CPU context or NULL. */
CTR_API void ctr_context_release_memory(ctr_context *ctx);

/* ------------------------------------------------------------------------- */
/* Distributed runs (MPI)                                                    */
/* ------------------------------------------------------------------------- */

/* The processes of one MPI job (docs/distributed.md). A streamed run given a
 * cluster (ctr_fdk_stream_options.cluster, ctr_fbp_stream_options.cluster) is
 * shared by its ranks: every rank calls the same function with the same
 * arguments, reconstructs its own slices and writes them into the one
 * output. */
/* Threads: a cluster serves one thread at a time (its steps are collective). */
typedef struct ctr_cluster ctr_cluster;

#define CTR_CLUSTER_OPTIONS_VERSION 1u
typedef struct ctr_cluster_options {
  unsigned version;
  double timeout; /* seconds a rank may go without progress (or rank 0 without answering)
                     before every rank stops the run as hung; 0 = 600 */
} ctr_cluster_options;
#define CTR_CLUSTER_OPTIONS_INIT { CTR_CLUSTER_OPTIONS_VERSION, 0.0 }
/* The defaults in the layout of `version`, 1 .. CTR_CLUSTER_OPTIONS_VERSION (core.h). */
CTR_API ctr_status ctr_cluster_options_init(ctr_cluster_options *s, unsigned version);

/* Joins the MPI job this process was started in (mpirun, srun): initialises
 * MPI (MPI_THREAD_MULTIPLE) unless the caller did, and uses a duplicate of
 * MPI_COMM_WORLD. Every rank calls it. opts may be NULL (defaults).
 * CTR_E_UNSUPPORTED in a build without MPI (ctr_features lacks
 * CTR_FEATURE_MPI) or when the MPI library lacks MPI_THREAD_MULTIPLE.
 * *out is owned by the caller: ctr_cluster_free. */
CTR_API ctr_status ctr_cluster_create(const ctr_cluster_options *opts, ctr_cluster **out);
/* This process's rank (0 .. size - 1) and the number of ranks; 0 and 1 for
 * NULL. */
CTR_API int ctr_cluster_get_rank(const ctr_cluster *c);
CTR_API int ctr_cluster_get_size(const ctr_cluster *c);
/* The rank that speaks for the job (prints its messages): 0, or 1 after a
 * run lost rank 0 (hung or gone). 0 for NULL. */
CTR_API int ctr_cluster_get_reporter(const ctr_cluster *c);
/* Collective: every rank passes its own status and, when it failed, what
 * went wrong (`detail`; NULL: the calling thread's ctr_error_detail).
 * Returns CTR_OK when every rank passed CTR_OK; otherwise every rank gets
 * the status of the first rank that failed and the detail "rank R of N
 * (HOST): <its detail>" - what a program checks before a distributed call
 * whose inputs each rank prepared (files it opened). When a rank does not
 * arrive within ctr_cluster_options.timeout, the others get CTR_E_TIMEOUT
 * (and the cluster can no longer be used). */
CTR_API ctr_status ctr_cluster_agree(ctr_cluster *c, ctr_status st, const char *detail);
/* Leaves the job: finalises MPI if ctr_cluster_create initialised it, except
 * after a run that lost a rank (hung or gone: MPI_Finalize would wait for it
 * forever; the launcher ends the job). Accepts NULL. */
CTR_API void ctr_cluster_free(ctr_cluster *c);

/* ------------------------------------------------------------------------- */
/* Metrics                                                                   */
/* ------------------------------------------------------------------------- */

#define CTR_VOLUME_ERROR_VERSION 1u
typedef struct ctr_volume_error {
  unsigned version;
  double rmse_object; /* over voxels where the truth is non-zero */
  double rmse_flat;   /* same, restricted to voxels whose 3x3x3 truth
                         neighbourhood is constant (away from edges) */
  double max_abs;     /* largest |rec - truth| over the object */
  int64_t n_object, n_flat;
} ctr_volume_error;
#define CTR_VOLUME_ERROR_INIT { CTR_VOLUME_ERROR_VERSION, 0, 0, 0, 0, 0 }
/* The defaults in the layout of `version`, 1 .. CTR_VOLUME_ERROR_VERSION (core.h). */
CTR_API ctr_status ctr_volume_error_init(ctr_volume_error *s, unsigned version);

/* Compares a reconstruction with a (voxelised) truth of nx x ny x nz float32
 * voxels, both x fastest. Slices within `margin` of the top and bottom are
 * left out (cone-beam FDK is approximate there; 0 = use all). */
CTR_API ctr_status ctr_volume_compare(const float *rec, const float *truth, int64_t nx, int64_t ny,
                                      int64_t nz, int64_t margin, ctr_volume_error *out);

/* Parses a byte size: a number with an optional suffix K, M, G, T (powers of
 * 1024, optional trailing "B" or "iB"), e.g. "8G", "512MiB", "1.5T". */
CTR_API ctr_status ctr_size_parse(const char *text, uint64_t *bytes);

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

CTR_API const char *ctr_window_name(ctr_window w);
CTR_API ctr_status ctr_window_parse(const char *name, ctr_window *out);

/* Frequency response of the ramp filter (discrete Ram-Lak times the window)
 * at frequency f in cycles per sample, 0 <= f <= 0.5; cutoff in (0, 1] is the
 * fraction of the Nyquist frequency beyond which the response is zero. */
CTR_API double ctr_ramp_response(ctr_window w, double cutoff, double f);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_CORE_H */

/* The live FBP (docs/synchrotron.md, "Live mode"): a scan taken from a
 * projection source (src/io/io_source.h) as it is acquired.
 *
 *  - Previews: each new projection is flat-fielded and -log'ed in the
 *    previewed detector rows, ramp-filtered (ctr_fbp_filter: rows are
 *    independent) and backprojected (ctr_fbp_backproject, the context's
 *    backend: the CPU's, or a GPU's) into the preview slices with its
 *    angle's weight in the finished scan, so that after every projection a
 *    preview is the FBP of the projections so far (incremental FBP: the
 *    backprojection is a sum over angles). The projections of one step are
 *    backprojected together; a batch's geometry weights its angles among
 *    themselves, so each filtered row is scaled by the finished scan's weight
 *    over the batch's first.
 *  - The projections of a socket are kept in a spool file (raw, at each
 *    projection's index); a file source keeps its own.
 *  - The end: ctr_fbp_stream of the finished file or the spool, with the
 *    source's angles, flat and dark averaged as `ctrecon fbp` averages them
 *    (ctr_flatfield_average of float32 images): the bytes of the offline run. */
#include "io/io_source.h"
#include "parbeam/backend.h"
#include "parbeam/fbp_stream_internal.h"
#include "parbeam/parbeam.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PREVIEWS 64
#define BATCH 32 /* projections backprojected together at most */
#define ACC_CHUNK 8 /* projections summed into the full volume together at most */
#define PREFIX_MAX 4096

/* The preview writer (ctr_fbp_live_queue_preview): one thread that writes
 * the latest state queued. The step's thread copies the previews into
 * `queued` under `mu`; the writer swaps it with `writing` and writes that
 * outside the lock, so a step waits for a copy at most, never for a write. */
typedef struct preview_writer {
  pthread_mutex_t mu;
  pthread_cond_t cv;         /* a state queued, a write done, or quit */
  pthread_t thread;
  int started, quit;
  float *queued, *writing;   /* npreview planes each */
  char queued_prefix[PREFIX_MAX], writing_prefix[PREFIX_MAX];
  int has_queued, busy;
  int64_t written, superseded;
  double write_s;
  ctr_status st;             /* a failed write's, until reported */
  char detail[1024], field[128], value[PREFIX_MAX];
} preview_writer;

struct ctr_fbp_live {
  ctr_context *ctx;
  ctr_source *src;
  ctr_parallel_params p;         /* the caller's (angles copied) */
  double *user_angles, *user_shift;
  ctr_live_options o;
  ctr_fbp_stream_options so;
  ctr_fbp_options fbp;
  int64_t rows[MAX_PREVIEWS];
  int npreview;
  /* the scan */
  int64_t W, H, count;
  ctr_dtype dtype;
  size_t frame_bytes;
  float *cal[2];                 /* flats, darks as float32 images, kept until the first
                                    projection */
  int64_t ncal[2];
  float *flat, *dark;            /* averaged (NULL: none) */
  float *ones;                   /* the previews' flat when there is none */
  int calibrated;
  /* previews */
  int64_t nx, ny;
  float *preview, *tmp, *sino;   /* npreview slices; a batch's backprojection; its sinograms */
  double *bangles;               /* a batch's angles */
  void *batch;                   /* a batch's projections */
  int64_t *bindex;
  int64_t done;                  /* projections in the previews */
  int64_t clamped;
  /* the spool (a socket's projections) and its state (SPOOL.index, SPOOL.cal) */
  char spool[4200], index_path[4300], cal_path[4300];
  int spool_fd, spool_own;
  int64_t *sp_index;             /* the projections in the spool, in the order received */
  double *sp_angle;              /* their frames' angles (NAN: none) */
  int64_t nspooled, sp_cap, sp_listed; /* ..., of them listed in SPOOL.index */
  int64_t resumed;               /* taken from a stopped run's state */
  int finished;                  /* the volume written: the spool and its state removed */
  int ended;
  /* the full volume summed as projections arrive (accumulate) */
  int acc;                       /* 0: not decided yet; 1: summing; -1: after the scan */
  ctr_parallel_geometry *gacc;   /* the final run's output geometry */
  int64_t acc_row0, acc_nslices; /* the rows reconstructed */
  float *vol, *acc_sino;         /* the volume; a chunk's sinograms */
  int64_t acc_next;              /* the next projection summed (in index order) */
  ctr_value_counts acc_counts;   /* the data policy's counts of the sums */
  int64_t acc_band_rows;         /* the final run's bands (a GPU's sum follows them) */
  const ctr__par_backend *acc_be; /* a device's sum (acc_open), else NULL: the host's */
  ctr__fbp_acc *dacc;
  /* where the last step's time went (ctr_live_state's seconds) */
  double t_filter, t_backproject, t_accumulate;
  double acc_device_s[2]; /* the device's seconds on the last batch summed (upload, kernels) */
  ctr_parallel_geometry *gfull;  /* the finished scan's geometry (its weights), once known */
  preview_writer pw;
};

/* ---- Opening -------------------------------------------------------------------- */

static ctr_status resume_state(ctr_fbp_live *l);

ctr_status ctr_fbp_live_open(ctr_context *ctx, ctr_source *src, const ctr_parallel_params *params,
                             const ctr_live_options *opts, ctr_fbp_live **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_open: out is NULL");
  *out = NULL;
  if (!src) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_open: the source is NULL");
  ctr_fbp_live *l = calloc(1, sizeof *l);
  if (!l) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a live run)");
  l->ctx = ctx;
  l->src = src;
  l->spool_fd = -1;
  pthread_mutex_init(&l->pw.mu, NULL);
  pthread_cond_init(&l->pw.cv, NULL);
  ctr_status st = CTR_OK;
  l->o = (ctr_live_options)CTR_LIVE_OPTIONS_INIT;
  l->so = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  l->fbp = (ctr_fbp_options)CTR_FBP_OPTIONS_INIT;
  l->p = (ctr_parallel_params)CTR_PARALLEL_PARAMS_INIT;
  CTR_CHECK_GOTO(st, ctr__struct_copy(&ctr__struct_live_options, &l->o, opts));
  CTR_CHECK_GOTO(st, ctr__struct_copy(&ctr__struct_fbp_stream_options, &l->so, l->o.stream));
  CTR_CHECK_GOTO(st, ctr__struct_copy(&ctr__struct_fbp_options, &l->fbp, l->so.fbp));
  if (params) CTR_CHECK_GOTO(st, ctr__struct_copy(&ctr__struct_parallel_params, &l->p, params));
  if (l->o.preview_rows && (l->o.npreview < 1 || l->o.npreview > MAX_PREVIEWS))
    CTR_FAIL_FIELD_VALUE_GOTO(st, CTR_E_INVALID_ARGUMENT, "ctr_live_options.npreview",
                              CTR__V_INT(l->o.npreview),
                              "ctr_live_options.npreview = %d: expected 1 to %d preview rows",
                              l->o.npreview, MAX_PREVIEWS);
  if (!(l->o.timeout_s >= 0))
    CTR_FAIL_FIELD_VALUE_GOTO(st, CTR_E_INVALID_ARGUMENT, "ctr_live_options.timeout_s",
                              CTR__V_REAL(l->o.timeout_s),
                              "ctr_live_options.timeout_s = %g: expected seconds >= 0 (0: 30)",
                              l->o.timeout_s);
  if (l->o.timeout_s == 0) l->o.timeout_s = 30;
  if (l->o.accumulate != CTR_LIVE_ACCUMULATE_OFF && l->o.accumulate != CTR_LIVE_ACCUMULATE_ON &&
      l->o.accumulate != CTR_LIVE_ACCUMULATE_AUTO)
    CTR_FAIL_FIELD_VALUE_GOTO(st, CTR_E_INVALID_ARGUMENT, "ctr_live_options.accumulate",
                              CTR__V_INT(l->o.accumulate),
                              "ctr_live_options.accumulate = %d: expected CTR_LIVE_ACCUMULATE_OFF, "
                              "_ON or _AUTO", (int)l->o.accumulate);
  if (l->so.sinograms)
    CTR_FAIL_FIELD_GOTO(st, CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.sinograms",
                        "ctr_fbp_stream_options.sinograms: a live scan brings projections");
  if (l->p.angles_deg) {
    if (l->p.nangles < 1)
      CTR_FAIL_FIELD_GOTO(st, CTR_E_INVALID_ARGUMENT, "ctr_parallel_params.nangles",
                          "ctr_parallel_params.angles_deg needs nangles");
    l->user_angles = ctr__malloc(sizeof(double) * (size_t)l->p.nangles, "angles");
    if (!l->user_angles) CTR_CHECK_GOTO(st, CTR_E_OUT_OF_MEMORY);
    memcpy(l->user_angles, l->p.angles_deg, sizeof(double) * (size_t)l->p.nangles);
    l->p.angles_deg = l->user_angles;
  }
  if (l->p.axis_shift) {
    l->user_shift = ctr__malloc(sizeof(double) * (size_t)l->p.nangles, "axis shifts");
    if (!l->user_shift) CTR_CHECK_GOTO(st, CTR_E_OUT_OF_MEMORY);
    memcpy(l->user_shift, l->p.axis_shift, sizeof(double) * (size_t)l->p.nangles);
    l->p.axis_shift = l->user_shift;
  }
  l->so.fbp = &l->fbp;
  if (l->o.resume) CTR_CHECK_GOTO(st, resume_state(l));
cleanup:
  if (st != CTR_OK) {
    ctr_fbp_live_free(l);
    return st;
  }
  *out = l;
  return CTR_OK;
}

/* ---- The first frames: sizes, flats and darks --------------------------------------- */

/* Sizes from the first frame; the previews' rows and buffers. */
static ctr_status first_frame(ctr_fbp_live *l, const ctr_frame *f) {
  l->W = f->width;
  l->H = f->height;
  l->dtype = f->dtype;
  l->frame_bytes = (size_t)(l->W * l->H) * ctr_dtype_size(l->dtype);
  if (l->p.nbins && l->p.nbins != l->W)
    CTR_FAIL_FIELD_VALUE(CTR_E_SIZE_MISMATCH, "ctr_parallel_params.nbins", CTR__V_INT(l->p.nbins),
                   "ctr_parallel_params.nbins = %lld: the source's projections are %lld wide",
                   (long long)l->p.nbins, (long long)l->W);
  const int64_t r0 = l->so.row0, n = l->so.nrows ? l->so.nrows : l->H - r0;
  if (r0 < 0 || r0 >= l->H || n < 1 || r0 + n > l->H)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.row0",
                   "ctr_fbp_stream_options.row0, nrows = %lld, %lld: the source's projections "
                   "have rows [0, %lld)", (long long)r0, (long long)l->so.nrows, (long long)l->H);
  if (l->o.preview_rows) {
    l->npreview = l->o.npreview;
    for (int k = 0; k < l->npreview; k++) {
      l->rows[k] = l->o.preview_rows[k];
      if (l->rows[k] < 0 || l->rows[k] >= l->H)
        CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_live_options.preview_rows",
                             CTR__V_INT(l->rows[k]),
                             "ctr_live_options.preview_rows: row %lld is not a row of the "
                             "projections [0, %lld)", (long long)l->rows[k], (long long)l->H);
    }
  } else {
    l->npreview = n >= 3 ? 3 : (int)n;
    const int64_t def[3] = {r0, r0 + n / 2, r0 + n - 1};
    for (int k = 0; k < l->npreview; k++) l->rows[k] = n >= 3 ? def[k] : r0 + k;
  }
  l->nx = l->p.nx ? l->p.nx : l->W;
  l->ny = l->p.ny ? l->p.ny : (l->p.nx ? l->p.nx : l->W);
  const size_t plane = (size_t)(l->nx * l->ny);
  l->preview = calloc(plane * (size_t)l->npreview, sizeof(float));
  l->tmp = ctr__malloc(sizeof(float) * plane * (size_t)l->npreview, "a preview batch");
  l->sino = ctr__malloc(sizeof(float) * (size_t)(l->W * BATCH * l->npreview), "preview sinograms");
  l->bangles = ctr__malloc(sizeof(double) * 2 * BATCH, "batch angles");
  l->bindex = ctr__malloc(sizeof(int64_t) * BATCH, "batch indices");
  /* pinned where a GPU is (ctr_host_alloc): the full volume's sum uploads a batch by
   * DMA, with no staging copy on host threads that the step and the preview writer
   * share (docs/synchrotron.md, "Where a preview step's time goes") */
  l->batch = ctr_host_alloc(l->frame_bytes * BATCH);
  if (!l->preview || !l->tmp || !l->sino || !l->bangles || !l->bindex || !l->batch)
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the previews of %lld x %lld)", (long long)l->nx,
             (long long)l->ny);
  return CTR_OK;
}

static ctr_status keep_calibration(ctr_fbp_live *l, const ctr_frame *f) {
  const int k = f->kind == CTR_FRAME_DARK;
  const int64_t npix = l->W * l->H;
  float *p = realloc(l->cal[k], sizeof(float) * (size_t)(npix * (l->ncal[k] + 1)));
  if (!p) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the flat and dark fields)");
  l->cal[k] = p;
  float *dst = p + npix * l->ncal[k];
  /* a frame's pixels may be unaligned (a socket message's bytes): loaded by memcpy */
  const unsigned char *src = f->pixels;
  for (int64_t i = 0; i < npix; i++) {
    if (f->dtype == CTR_DTYPE_UINT16) {
      uint16_t v;
      memcpy(&v, src + 2 * i, sizeof v);
      dst[i] = (float)v;
    } else {
      memcpy(&dst[i], src + 4 * i, sizeof dst[i]);
    }
  }
  l->ncal[k]++;
  return CTR_OK;
}

/* The calibration complete: a flat of ones where there is none. */
static ctr_status calibrated(ctr_fbp_live *l) {
  const int64_t npix = l->W * l->H;
  if (!l->flat) {
    l->ones = ctr__aligned_alloc(sizeof(float) * (size_t)npix, "the flat field (ones)");
    if (!l->ones) return CTR_E_OUT_OF_MEMORY;
    for (int64_t i = 0; i < npix; i++) l->ones[i] = 1.0f;
  }
  l->calibrated = 1;
  return CTR_OK;
}

/* At the first projection: the averaged flat and dark (the caller's, or the
 * source's frames averaged as `ctrecon fbp` averages a file's). */
static ctr_status calibrate(ctr_fbp_live *l) {
  const int64_t npix = l->W * l->H;
  const char *given[2] = {l->o.flat_file, l->o.dark_file};
  float **dst[2] = {&l->flat, &l->dark};
  for (int k = 0; k < 2; k++) {
    if (given[k]) { /* a file's stack instead of the source's frames */
      ctr_stack_info info = CTR_STACK_INFO_INIT;
      void *data = NULL;
      CTR_CHECK(ctr_stack_load(given[k], CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &data));
      if (info.width != l->W || info.height != l->H) {
        free(data);
        CTR_FAIL_FIELD_VALUE(CTR_E_SIZE_MISMATCH, k ? "ctr_live_options.dark_file"
                                                    : "ctr_live_options.flat_file", given[k],
                             "'%s' holds images of %lld x %lld, the projections are %lld x %lld",
                             given[k], (long long)info.width, (long long)info.height,
                             (long long)l->W, (long long)l->H);
      }
      free(l->cal[k]);
      l->cal[k] = data;
      l->ncal[k] = info.count;
    }
    if (!l->ncal[k]) continue;
    *dst[k] = ctr__aligned_alloc(sizeof(float) * (size_t)npix, k ? "the dark field" : "the flat field");
    if (!*dst[k]) return CTR_E_OUT_OF_MEMORY;
    CTR_CHECK(ctr_flatfield_average(l->cal[k], CTR_DTYPE_FLOAT32, npix, l->ncal[k], *dst[k]));
    free(l->cal[k]);
    l->cal[k] = NULL;
  }
  return calibrated(l);
}

/* ---- The spool and its state ------------------------------------------------------ */

/* The state of a run (docs/synchrotron.md, "Resuming a stopped run"):
 *   SPOOL        the projections' pixels, raw, each at index x frame bytes;
 *   SPOOL.cal    the averaged flat then dark field (float32 images, those the
 *                index says are there), written once before the first index;
 *   SPOOL.index  text: "ctrecon live spool 1", the frames' width, height,
 *                dtype, the scan's count (0: not known yet), flat and dark
 *                (1: in SPOOL.cal), "projections N", then N lines "INDEX
 *                ANGLE" (degrees, %.17g; nan: none) of the projections whose
 *                pixels are in SPOOL.
 * Each file is written to NAME.tmp, flushed to the disk (fsync) and renamed
 * into place, and the spool is flushed (fdatasync) before the index that
 * lists its new frames: a frame is valid only once the index lists it, so a
 * run killed at any point (or the machine losing power) leaves an index
 * that lists whole frames only; a frame half written is not listed and is
 * taken again when it is sent again. */
static ctr_status write_atomic(const char *path, const void *a, size_t na, const void *b,
                               size_t nb) {
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) CTR_FAIL(CTR_E_IO, "cannot create '%s': %s", tmp, strerror(errno));
  int ok = (!na || fwrite(a, 1, na, f) == na) && (!nb || fwrite(b, 1, nb, f) == nb);
  ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int err = errno;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    const int e = ok ? errno : err;
    unlink(tmp);
    CTR_FAIL(CTR_E_IO, "cannot write '%s': %s", path, strerror(e));
  }
  return CTR_OK;
}

static ctr_status write_cal(const ctr_fbp_live *l) {
  const size_t img = sizeof(float) * (size_t)(l->W * l->H);
  return write_atomic(l->cal_path, l->flat, l->flat ? img : 0, l->dark, l->dark ? img : 0);
}

/* The index of the frames spooled so far, after they are on the disk. */
static ctr_status write_index(ctr_fbp_live *l) {
  if (l->spool_fd < 0 || l->sp_listed == l->nspooled) return CTR_OK;
  if (fdatasync(l->spool_fd) != 0)
    CTR_FAIL(CTR_E_IO, "cannot flush the spool file '%s': %s", l->spool, strerror(errno));
  const size_t cap = 256 + 48 * (size_t)l->nspooled;
  char *text = ctr__malloc(cap, "the spool's index");
  if (!text) return CTR_E_OUT_OF_MEMORY;
  size_t n = (size_t)snprintf(text, cap, "ctrecon live spool 1\nwidth %lld\nheight %lld\n"
                              "dtype %s\ncount %lld\nflat %d\ndark %d\nprojections %lld\n",
                              (long long)l->W, (long long)l->H, ctr_dtype_name(l->dtype),
                              (long long)l->count, l->flat != NULL, l->dark != NULL,
                              (long long)l->nspooled);
  for (int64_t i = 0; i < l->nspooled && n < cap; i++)
    n += (size_t)snprintf(text + n, cap - n, "%lld %.17g\n", (long long)l->sp_index[i],
                          l->sp_angle[i]);
  const ctr_status st = n < cap ? write_atomic(l->index_path, text, n, NULL, 0)
                                : ctr__error_set(CTR_E_INTERNAL, "the spool's index overflows");
  free(text);
  if (st == CTR_OK) l->sp_listed = l->nspooled;
  return st;
}

static ctr_status spool_names(ctr_fbp_live *l) {
  snprintf(l->index_path, sizeof l->index_path, "%s.index", l->spool);
  snprintf(l->cal_path, sizeof l->cal_path, "%s.cal", l->spool);
  return CTR_OK;
}

static ctr_status spool_open(ctr_fbp_live *l) {
  if (l->o.spool) {
    snprintf(l->spool, sizeof l->spool, "%s", l->o.spool);
    l->spool_fd = open(l->spool, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } else { /* the system's temporary folder (no environment read here: docs/tuning.md) */
    snprintf(l->spool, sizeof l->spool, "%s/ctrecon-live-XXXXXX", P_tmpdir);
    l->spool_fd = mkostemp(l->spool, O_CLOEXEC);
  }
  if (l->spool_fd < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_IO, "ctr_live_options.spool", l->spool,
                         "cannot create the spool file '%s': %s (it keeps a socket's projections "
                         "for the final run; an existing one is not replaced)", l->spool,
                         strerror(errno));
  l->spool_own = 1;
  spool_names(l);
  return write_cal(l);
}

static ctr_status spool_put(ctr_fbp_live *l, int64_t index, double angle, const void *pixels) {
  if (l->nspooled == l->sp_cap) {
    const int64_t cap = l->sp_cap ? 2 * l->sp_cap : 256;
    int64_t *ix = realloc(l->sp_index, sizeof(int64_t) * (size_t)cap);
    if (ix) l->sp_index = ix;
    double *an = realloc(l->sp_angle, sizeof(double) * (size_t)cap);
    if (an) l->sp_angle = an;
    if (!ix || !an) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the spool's index)");
    l->sp_cap = cap;
  }
  const off_t at = (off_t)index * (off_t)l->frame_bytes;
  size_t done = 0;
  while (done < l->frame_bytes) {
    const ssize_t w = pwrite(l->spool_fd, (const char *)pixels + done, l->frame_bytes - done,
                             at + (off_t)done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      CTR_FAIL(CTR_E_IO, "cannot write the spool file '%s': %s", l->spool,
               w < 0 ? strerror(errno) : "no space written");
    done += (size_t)w;
  }
  l->sp_index[l->nspooled] = index;
  l->sp_angle[l->nspooled] = angle;
  l->nspooled++;
  return CTR_OK;
}

/* ---- Previews ------------------------------------------------------------------- */

/* The finished scan's weight of projection `index` (radians): the announced
 * angles' (the caller's, or the source's), else a half turn over the count. */
static double scan_weight(const ctr_fbp_live *l, const ctr_parallel_geometry *full, int64_t index) {
  if (full) return ctr_parallel_get_weight(full, index);
  return l->count > 0 ? M_PI / (double)l->count : M_PI / (double)(l->done + 1);
}

/* ---- The full volume (accumulate) ------------------------------------------------ */

/* The sum on the context's device (its backend's acc_open) with the run's
 * resolved options r->fbp, or why not (why[0] != 0). */
static void acc_device_open(ctr_fbp_live *l, const ctr__fbp_run *r, char *why, size_t n) {
  ctr_fbp_options o = r->fbp;
  o.counts = NULL; /* r's own, gone with it: the sum's counts are the live run's */
  o.timings = NULL;
  const ctr_status st = l->acc_be->acc_open(l->ctx, l->gacc, &o, l->dtype, l->W, l->H, l->acc_row0,
                                            l->acc_nslices, l->acc_band_rows,
                                            l->flat ? l->flat : l->ones, l->dark, BATCH, &l->dacc);
  if (st != CTR_OK) {
    snprintf(why, n, "%s", ctr_error_detail());
    ctr_error_clear();
  }
}

/* The streamed run's plan for the finished scan (ctr__fbp_resolve,
 * ctr__fbp_prepare_input, ctr__fbp_output_geometry: the geometry, rows and
 * options the final run will have), or why the volume cannot be summed as
 * the projections arrive (why[0] != 0). */
static void acc_plan(ctr_fbp_live *l, const double *ann, char *why, size_t n) {
  ctr__fbp_run r;
  memset(&r, 0, sizeof r);
  r.ctx = l->ctx;
  ctr_parallel_params p = l->p;
  p.nbins = l->W;
  p.nangles = l->count;
  p.angles_deg = ann;
  ctr_status st = ctr__fbp_resolve(&r, &l->so);
  r.W = l->W;
  r.H = l->H;
  r.NP = l->count;
  r.dtype = l->dtype;
  r.flat = l->flat;
  r.dark = l->dark;
  if (st == CTR_OK) st = ctr__fbp_prepare_input(&r, &p);
  if (st == CTR_OK && (r.transmission || r.sino_corr))
    snprintf(why, n, "the corrections (Paganin's filter, binning, the dezinger, ring removal, "
             "stitching) take every projection of a row at once");
  else if (st == CTR_OK && r.nsel != r.NP)
    snprintf(why, n, "an angle subset (ctr_fbp_stream_options.angle_first, angle_count, "
             "angle_step) is not the scan's projections");
  if (st == CTR_OK && !why[0]) st = ctr__fbp_output_geometry(&r, &p);
  if (st == CTR_OK && !why[0]) st = ctr__fbp_plan_bands(&r);
  uint64_t budget = l->so.host_budget;
  if (st == CTR_OK && !why[0]) st = ctr__budgets_resolve(l->ctx, NULL, &budget);
  if (st == CTR_OK && !why[0]) {
    const double need = 4.0 * (double)r.nslices * (double)(r.gout->p.nx * r.gout->p.ny);
    char b1[32], b2[32];
    if (need > (double)budget)
      snprintf(why, n, "the volume (%s) does not fit the host memory budget (%s: "
               "ctr_fbp_stream_options.host_budget)", ctr__format_bytes(need, b1, sizeof b1),
               ctr__format_bytes((double)budget, b2, sizeof b2));
  }
  if (st != CTR_OK) {
    snprintf(why, n, "%s", ctr_error_detail());
    ctr_error_clear();
  } else if (!why[0]) {
    l->gacc = r.gout;
    r.gout = NULL;
    l->acc_row0 = r.row0;
    l->acc_nslices = r.nslices;
    l->acc_band_rows = r.band_rows;
    if (l->acc_be) acc_device_open(l, &r, why, n);
  }
  ctr__fbp_release(&r, CTR_OK);
}

/* At the first step with projections: the volume summed as they arrive,
 * where the run allows it (the mode ON refuses a run that does not). */
static ctr_status acc_decide(ctr_fbp_live *l) {
  if (l->acc) return CTR_OK;
  l->acc = -1;
  if (l->o.accumulate == CTR_LIVE_ACCUMULATE_OFF) return CTR_OK;
  char why[1024] = "";
  int64_t na = 0;
  const double *ann = l->user_angles ? l->user_angles : ctr__source_angles(l->src, &na);
  if (l->user_angles) na = l->p.nangles;
  const ctr__par_backend *be = NULL;
  CTR_CHECK(ctr__par_backend_of(l->ctx, &be));
  if (ctr_context_get_device(l->ctx) != CTR_DEVICE_CPU) l->acc_be = be; /* the sum on the device */
  if (l->acc_be && !be->acc_open)
    snprintf(why, sizeof why, "the context's device (%s) does not continue a sum", be->head.name);
  else if (l->p.axis == CTR_AXIS_AUTO)
    snprintf(why, sizeof why, "the rotation axis is found from the data after the scan "
             "(CTR_AXIS_AUTO): give it (ctr_parallel_params.axis)");
  else if (!l->count || !ann || na != l->count)
    snprintf(why, sizeof why, "the weight of a projection needs the scan's angles before its "
             "projections (a DXchange file's theta, or ctr_parallel_params.angles_deg with "
             "nangles the scan's count)");
  else
    acc_plan(l, ann, why, sizeof why);
  if (!why[0] && !l->dacc) { /* the host's sum; a device's stays there, fetched band by band */
    const size_t plane = (size_t)(l->gacc->p.nx * l->gacc->p.ny);
    l->vol = ctr__calloc((size_t)l->acc_nslices * plane, sizeof(float), "the full volume");
    l->acc_sino = ctr__malloc(sizeof(float) * (size_t)(l->acc_nslices * ACC_CHUNK * l->W),
                              "the full volume's sinograms");
    if (!l->vol || !l->acc_sino) {
      snprintf(why, sizeof why, "%s", ctr_error_detail());
      ctr_error_clear();
    }
  }
  if (why[0]) {
    if (l->o.accumulate == CTR_LIVE_ACCUMULATE_ON)
      CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_live_options.accumulate",
                     "ctr_live_options.accumulate: the full volume cannot be summed as the "
                     "projections arrive: %s", why);
    ctr__log(l->ctx, CTR_LOG_INFO, "the volume is reconstructed after the scan (%s)", why);
    return CTR_OK;
  }
  l->acc_counts = (ctr_value_counts)CTR_VALUE_COUNTS_INIT;
  l->acc = 1;
  return CTR_OK;
}

/* The batch's projections that come next in index order into the full
 * volume: flat-fielded, -log'ed and ramp-filtered as the streamed run
 * makes them (ctr_flatfield_sinograms, ctr_fbp_filter: each value on its
 * own), and backprojected by continuing each voxel's sum over the angles
 * in the order the streamed run's backprojector makes it
 * (ctr__fbp_bp_cpu_continue over the final geometry). A projection after a
 * gap is not summed: the source delivers increasing indices only, so the
 * scan then misses one and is refused at the end. */
static ctr_status acc_batch(ctr_fbp_live *l, int64_t n) {
  if (l->acc != 1) return CTR_OK;
  int64_t m = 0;
  while (m < n && l->bindex[m] == l->acc_next + m) m++;
  if (l->dacc) { /* on the device: the batch's projections at once */
    if (m) CTR_CHECK(l->acc_be->acc_add(l->dacc, l->batch, m, l->acc_device_s));
    l->acc_next += m;
    return CTR_OK;
  }
  ctr_fbp_options fo = l->fbp;
  fo.counts = &l->acc_counts;
  for (int64_t j0 = 0; j0 < m; j0 += ACC_CHUNK) {
    const int64_t k = m - j0 < ACC_CHUNK ? m - j0 : ACC_CHUNK;
    int64_t clamped = 0;
    CTR_CHECK(ctr_flatfield_sinograms((const char *)l->batch + (size_t)j0 * l->frame_bytes,
                                      l->dtype, l->W, l->H, k, l->flat ? l->flat : l->ones,
                                      l->dark, l->acc_row0, l->acc_nslices, l->acc_sino,
                                      &clamped));
    l->acc_counts.clamped += clamped;
    ctr_parallel_params q = l->gacc->p;
    q.nangles = k;
    q.angles_deg = l->gacc->angles_deg + l->acc_next;
    q.axis_shift = NULL;
    ctr_parallel_geometry *gk = NULL;
    CTR_CHECK(ctr_parallel_create(&q, &gk)); /* the filter's sizes */
    const ctr_status st = ctr_fbp_filter(l->ctx, gk, &fo, l->acc_nslices, l->acc_sino);
    ctr_parallel_free(gk);
    CTR_CHECK(st);
    ctr__fbp_bp_cpu_continue(l->ctx, l->gacc, fo.interp, l->acc_nslices, l->acc_next, k,
                             l->acc_sino, l->vol);
    l->acc_next += k;
  }
  return CTR_OK;
}

/* The batch's n projections (l->batch, angles l->bangles) into the previews. */
static ctr_status preview_batch(ctr_fbp_live *l, int64_t n) {
  CTR_CHECK(acc_decide(l)); /* refused under ON before the first preview */
  double t = ctr__now_s();
  const int np = l->npreview;
  const int64_t W = l->W;
  /* sinograms [preview][projection][bin]: each row's of the n projections at once */
  for (int k = 0; k < np; k++) {
    int64_t clamped = 0;
    CTR_CHECK(ctr_flatfield_sinograms(l->batch, l->dtype, W, l->H, n, l->flat ? l->flat : l->ones,
                                      l->dark, l->rows[k], 1, l->sino + k * n * W, &clamped));
    l->clamped += clamped;
  }
  ctr_parallel_params q = l->p;
  q.nbins = W;
  q.nangles = n;
  q.angles_deg = l->bangles;
  double *shift = l->bangles + BATCH;
  for (int64_t j = 0; j < n; j++) shift[j] = l->user_shift && l->bindex[j] < l->p.nangles ? l->user_shift[l->bindex[j]] : 0;
  q.axis_shift = l->user_shift ? shift : NULL;
  if (q.axis == CTR_AXIS_AUTO) q.axis = CTR_AXIS_CENTER; /* found by the final run */
  q.nx = l->nx;
  q.ny = l->ny;
  ctr_parallel_geometry *gb = NULL;
  CTR_CHECK(ctr_parallel_create(&q, &gb));
  ctr_status st = CTR_OK;
  /* the finished scan's geometry, where its angles are known (once: they are announced
   * before the projections and do not change) */
  int64_t na = 0;
  const double *ann = l->user_angles ? l->user_angles : ctr__source_angles(l->src, &na);
  if (l->user_angles) na = l->p.nangles;
  if (!l->gfull && ann && na > 1) {
    ctr_parallel_params f = q;
    f.nangles = na;
    f.angles_deg = ann;
    f.axis_shift = NULL;
    st = ctr_parallel_create(&f, &l->gfull);
  }
  const ctr_parallel_geometry *full = l->gfull;
  if (st == CTR_OK) st = ctr_fbp_filter(l->ctx, gb, &l->fbp, np, l->sino);
  for (int64_t j = 0; st == CTR_OK && j < n; j++) {
    const double wb = ctr_parallel_get_weight(gb, j);
    const float s = wb > 0 ? (float)(scan_weight(l, full, l->bindex[j]) / wb) : 0.0f;
    for (int k = 0; k < np; k++) {
      float *row = l->sino + (k * n + j) * W;
      for (int64_t b = 0; b < W; b++) row[b] *= s;
    }
  }
  l->t_filter += ctr__now_s() - t;
  t = ctr__now_s();
  if (st == CTR_OK) st = ctr_fbp_backproject(l->ctx, gb, &l->fbp, np, l->sino, l->tmp);
  if (st == CTR_OK) {
    const size_t total = (size_t)(l->nx * l->ny) * (size_t)np;
    for (size_t i = 0; i < total; i++) l->preview[i] += l->tmp[i];
    l->done += n;
  }
  l->t_backproject += ctr__now_s() - t;
  ctr_parallel_free(gb);
  /* then the full volume: a GPU's sum is queued and runs on while the next frames come,
   * so the previews wait only for what an earlier step queued */
  t = ctr__now_s();
  if (st == CTR_OK) st = acc_batch(l, n);
  l->t_accumulate += ctr__now_s() - t;
  return st;
}

/* ---- Resuming a stopped run --------------------------------------------------------- */

/* SPOOL.index read back: the frames' shape, the count, which calibration
 * SPOOL.cal holds, and the projections listed (whole frames in SPOOL). */
static ctr_status read_index(ctr_fbp_live *l, int has[2]) {
  FILE *f = fopen(l->index_path, "r");
  if (!f)
    CTR_FAIL_FIELD_VALUE(CTR_E_IO, "ctr_live_options.spool", l->spool,
                         "cannot resume: no state '%s' of a stopped run beside the spool '%s' (%s)",
                         l->index_path, l->spool, strerror(errno));
  char dtype[32] = "";
  long long w = 0, h = 0, count = -1, n = -1;
  int ok = fscanf(f, "ctrecon live spool 1 width %lld height %lld dtype %31s count %lld flat %d "
                  "dark %d projections %lld", &w, &h, dtype, &count, &has[0], &has[1], &n) == 7;
  ok = ok && w > 0 && h > 0 && count >= 0 && n >= 0 && (count == 0 || n <= count);
  l->dtype = !strcmp(dtype, "uint16") ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32;
  ok = ok && (!strcmp(dtype, "uint16") || !strcmp(dtype, "float32"));
  if (ok && n > 0) {
    l->sp_index = malloc(sizeof(int64_t) * (size_t)n);
    l->sp_angle = malloc(sizeof(double) * (size_t)n);
    ok = l->sp_index && l->sp_angle;
    l->sp_cap = ok ? n : 0;
  }
  for (long long i = 0; ok && i < n; i++) {
    long long ix;
    char ang[64];
    ok = fscanf(f, "%lld %63s", &ix, ang) == 2;
    char *end = NULL;
    const double a = strtod(ang, &end);
    ok = ok && end && !*end && ix >= 0 && (!count || ix < count) && (!i || ix > l->sp_index[i - 1]);
    if (ok) {
      l->sp_index[i] = ix;
      l->sp_angle[i] = a;
    }
  }
  fclose(f);
  if (!ok)
    CTR_FAIL_FIELD_VALUE(CTR_E_FORMAT, "ctr_live_options.spool", l->spool,
                         "cannot resume: '%s' is not the state of a stopped live run (docs/"
                         "synchrotron.md, \"Resuming a stopped run\")", l->index_path);
  l->W = w;
  l->H = h;
  l->count = count;
  l->nspooled = l->sp_listed = n;
  return CTR_OK;
}

/* SPOOL.cal: the averaged flat and dark of the stopped run. */
static ctr_status read_cal(ctr_fbp_live *l, const int has[2]) {
  const int64_t npix = l->W * l->H;
  float **dst[2] = {&l->flat, &l->dark};
  FILE *f = fopen(l->cal_path, "rb");
  int ok = f != NULL;
  for (int k = 0; ok && k < 2; k++) {
    if (!has[k]) continue;
    *dst[k] = ctr__aligned_alloc(sizeof(float) * (size_t)npix, k ? "the dark field" : "the flat field");
    ok = *dst[k] && fread(*dst[k], sizeof(float), (size_t)npix, f) == (size_t)npix;
  }
  ok = ok && fgetc(f) == EOF;
  if (f) fclose(f);
  if (!ok)
    CTR_FAIL_FIELD_VALUE(CTR_E_FORMAT, "ctr_live_options.spool", l->spool,
                         "cannot resume: '%s' does not hold the %s%s%s of %lld x %lld pixels "
                         "its index '%s' says", l->cal_path, has[0] ? "flat field" : "",
                         has[0] && has[1] ? " and the " : "", has[1] ? "dark field" : "",
                         (long long)l->W, (long long)l->H, l->index_path);
  return calibrated(l);
}

static ctr_status take_spooled(ctr_fbp_live *l, int64_t i, int64_t *nb);

/* The stopped run's state taken over: its spool, calibration and
 * projections (the source told they arrived), the previews rebuilt from the
 * spooled frames in the order they came. */
static ctr_status resume_state(ctr_fbp_live *l) {
  if (!l->o.spool)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_live_options.spool",
                   "ctr_live_options.resume continues the stopped run whose state is beside its "
                   "spool: give ctr_live_options.spool");
  if (ctr__source_data_path(l->src))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_live_options.resume",
                   "ctr_live_options.resume continues a socket's spool; a file source is its own "
                   "state: follow it again without resume");
  snprintf(l->spool, sizeof l->spool, "%s", l->o.spool);
  spool_names(l);
  int has[2] = {0, 0};
  CTR_CHECK(read_index(l, has));
  ctr_frame shape = CTR_FRAME_INIT;
  shape.width = l->W;
  shape.height = l->H;
  shape.dtype = l->dtype;
  CTR_CHECK(first_frame(l, &shape));
  CTR_CHECK(read_cal(l, has));
  l->spool_fd = open(l->spool, O_RDWR | O_CLOEXEC);
  struct stat sb;
  const int64_t need = l->nspooled ? (l->sp_index[l->nspooled - 1] + 1) * (int64_t)l->frame_bytes : 0;
  if (l->spool_fd < 0 || fstat(l->spool_fd, &sb) != 0 || (int64_t)sb.st_size < need)
    CTR_FAIL_FIELD_VALUE(CTR_E_IO, "ctr_live_options.spool", l->spool,
                         "cannot resume: the spool '%s' %s (its index lists %lld projections "
                         "of %zu bytes)", l->spool,
                         l->spool_fd < 0 ? strerror(errno) : "is shorter than its index says",
                         (long long)l->nspooled, l->frame_bytes);
  l->spool_own = 1;
  CTR_CHECK(ctr__source_resume(l->src, l->W, l->H, l->dtype, l->count, l->sp_index, l->sp_angle,
                               l->nspooled));
  int64_t nb = 0;
  for (int64_t i = 0; i < l->nspooled; i++) {
    CTR_CHECK(take_spooled(l, i, &nb));
    if (nb == BATCH || i + 1 == l->nspooled) {
      CTR_CHECK(preview_batch(l, nb));
      nb = 0;
    }
  }
  l->resumed = l->nspooled;
  l->src->t_last = ctr__now_s(); /* the wait for frames starts now, not before the rebuild */
  return CTR_OK;
}

/* ---- Steps ---------------------------------------------------------------------- */

/* Projection `index` (angle: its frame's) into the batch. */
static ctr_status batch_add(ctr_fbp_live *l, int64_t index, double angle, int64_t *nb) {
  l->bangles[*nb] = isfinite(angle) ? angle
                    : l->user_angles && index < l->p.nangles ? l->user_angles[index]
                                                             : NAN;
  if (!isfinite(l->bangles[*nb]))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_parallel_params.angles_deg",
                   "projection %lld came without an angle: give the scan's angles "
                   "(ctr_parallel_params.angles_deg)", (long long)index);
  l->bindex[*nb] = index;
  (*nb)++;
  return CTR_OK;
}

/* The spool's i-th projection read back into the batch. */
static ctr_status take_spooled(ctr_fbp_live *l, int64_t i, int64_t *nb) {
  char *dst = (char *)l->batch + (size_t)*nb * l->frame_bytes;
  const off_t at = (off_t)l->sp_index[i] * (off_t)l->frame_bytes;
  size_t done = 0;
  while (done < l->frame_bytes) {
    const ssize_t r = pread(l->spool_fd, dst + done, l->frame_bytes - done, at + (off_t)done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      CTR_FAIL(CTR_E_IO, "cannot read the spool file '%s': %s", l->spool,
               r < 0 ? strerror(errno) : "it ends early");
    done += (size_t)r;
  }
  return batch_add(l, l->sp_index[i], l->sp_angle[i], nb);
}

static ctr_status take(ctr_fbp_live *l, const ctr_frame *f, int64_t *nb) {
  if (!l->W) CTR_CHECK(first_frame(l, f));
  if (f->kind != CTR_FRAME_PROJECTION) return keep_calibration(l, f);
  if (!l->calibrated) {
    CTR_CHECK(calibrate(l));
    if (!ctr__source_data_path(l->src)) CTR_CHECK(spool_open(l));
  }
  if (l->spool_fd >= 0) CTR_CHECK(spool_put(l, f->index, f->angle_deg, f->pixels));
  memcpy((char *)l->batch + (size_t)*nb * l->frame_bytes, f->pixels, l->frame_bytes);
  return batch_add(l, f->index, f->angle_deg, nb);
}

ctr_status ctr_fbp_live_step(ctr_fbp_live *l, double wait_s, ctr_live_state *state) {
  if (!l) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_step: the live run is NULL");
  if (state) CTR_CHECK(ctr__struct_check(&ctr__struct_live_state, state));
  ctr_live_state s = CTR_LIVE_STATE_INIT;
  int64_t nb = 0;
  double lag = 0;
  double t0 = 0; /* when the first frame was there: the wait for it is idle time */
  l->t_filter = l->t_backproject = l->t_accumulate = 0;
  l->acc_device_s[0] = l->acc_device_s[1] = 0;
  ctr_source_event ev = CTR_SOURCE_WAITING;
  double wait = wait_s;
  while (!l->ended && nb < BATCH) {
    ctr_frame f = CTR_FRAME_INIT;
    CTR_CHECK(ctr_source_next(l->src, wait, &f, &ev));
    if (ev != CTR_SOURCE_FRAME) break;
    if (!t0) t0 = ctr__now_s();
    if (l->src->t_oldest_wait > lag) lag = l->src->t_oldest_wait;
    CTR_CHECK(take(l, &f, &nb));
    wait = 0; /* the rest of what is there, then preview */
  }
  ctr_source_status ss = CTR_SOURCE_STATUS_INIT;
  CTR_CHECK(ctr_source_get_status(l->src, &ss));
  if (ss.count) l->count = ss.count;
  CTR_CHECK(write_index(l)); /* the frames taken are on the disk: listed */
  s.read_s = t0 ? ctr__now_s() - t0 : 0;
  if (nb) CTR_CHECK(preview_batch(l, nb));
  const double idle = ctr__now_s() - l->src->t_last;
  if (!l->ended) {
    if (ev == CTR_SOURCE_ENDED)
      l->ended = l->count && ss.projections == l->count ? 1 : 2;
    else if (idle > l->o.timeout_s)
      l->ended = 2;
  }
  s.projections = l->done;
  s.expected = l->count;
  s.updated = nb;
  s.dropped = ss.dropped_header + ss.dropped_size + ss.dropped_duplicate + ss.dropped_order;
  s.ended = l->ended;
  s.nx = l->W ? l->nx : 0;
  s.ny = l->W ? l->ny : 0;
  s.npreview = l->W ? l->npreview : 0;
  s.idle_s = idle;
  s.lag_s = lag;
  s.resumed = l->resumed;
  s.accumulated = l->acc == 1 ? l->acc_next : 0;
  s.filter_s = l->t_filter;
  s.backproject_s = l->t_backproject;
  s.accumulate_s = l->t_accumulate;
  s.accumulate_upload_s = l->acc_device_s[0];
  s.accumulate_kernels_s = l->acc_device_s[1];
  pthread_mutex_lock(&l->pw.mu);
  s.write_s = l->pw.write_s;
  s.preview_writes = l->pw.written;
  s.preview_superseded = l->pw.superseded;
  pthread_mutex_unlock(&l->pw.mu);
  if (state) CTR_CHECK(ctr__struct_store(&ctr__struct_live_state, state, &s));
  return CTR_OK;
}

ctr_status ctr_fbp_live_preview(const ctr_fbp_live *l, int64_t k, float *slice, int64_t *row) {
  if (!l || !slice) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_preview: live and slice are required");
  if (!l->preview)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_preview: no projection has arrived yet (the "
             "previews' size is the projections')");
  if (k < 0 || k >= l->npreview)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_preview: preview %lld of %d", (long long)k,
             l->npreview);
  const size_t plane = (size_t)(l->nx * l->ny);
  memcpy(slice, l->preview + plane * (size_t)k, sizeof(float) * plane);
  if (row) *row = l->rows[k];
  return CTR_OK;
}

/* ---- Preview files -------------------------------------------------------------- */

/* An existing preview file refused (the first write, without overwrite). */
static ctr_status check_preview_outputs(const ctr_fbp_live *l, const char *prefix, int h5) {
  char path[PREFIX_MAX + 64];
  for (int k = 0; k < l->npreview; k++) {
    snprintf(path, sizeof path, "%s_row%05lld.png", prefix, (long long)l->rows[k]);
    CTR_CHECK(ctr_file_check_output(path, 0));
  }
  if (!h5) {
    snprintf(path, sizeof path, "%s.zarr", prefix);
    return ctr_stack_check_output(path, CTR_FORMAT_AUTO, 0);
  }
  snprintf(path, sizeof path, "%s.h5", prefix);
  return ctr_file_check_output(path, 0);
}

/* The files of the previews `planes` (npreview planes of nx x ny), each
 * replacing its last. Reads only what is fixed after the first frame (the
 * rows, the sizes): the writer thread calls it while the steps go on. */
static ctr_status write_planes(const ctr_fbp_live *l, const char *prefix, const float *planes) {
  char path[PREFIX_MAX + 64], vol[PREFIX_MAX + 64];
  const int h5 = (ctr_features() & CTR_FEATURE_HDF5) != 0;
  snprintf(vol, sizeof vol, h5 ? "%s.h5:/preview" : "%s.zarr", prefix);
  const size_t plane = (size_t)(l->nx * l->ny);
  for (int k = 0; k < l->npreview; k++) {
    snprintf(path, sizeof path, "%s_row%05lld.png", prefix, (long long)l->rows[k]);
    CTR_CHECK(ctr__png_write_gray_fast(path, planes + plane * (size_t)k, l->nx, l->ny));
  }
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = l->nx;
  info.height = l->ny;
  info.count = l->npreview;
  info.dtype = CTR_DTYPE_FLOAT32;
  if (h5) {
    /* a fresh file each time (renamed into place), not a copy of the last */
    snprintf(path, sizeof path, "%s.h5", prefix);
    unlink(path);
  }
  return ctr_stack_save(vol, h5 ? CTR_FORMAT_HDF5 : CTR_FORMAT_ZARR, &info, CTR_DTYPE_FLOAT32,
                        planes, 1);
}

static ctr_status check_prefix(const ctr_fbp_live *l, const char *prefix, const char *fn) {
  if (!l || !prefix || !*prefix)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: live and prefix are required", fn);
  if (strlen(prefix) >= PREFIX_MAX)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: the prefix is longer than %d characters", fn,
             PREFIX_MAX - 1);
  return CTR_OK;
}

/* A write done (either way): counted, timed; the writer's failure kept for
 * the caller (its error detail is the writer thread's own). Holds pw.mu. */
static void write_done(preview_writer *w, ctr_status st, double seconds, int keep_failure) {
  w->written += st == CTR_OK;
  if (st == CTR_OK) w->write_s = seconds;
  if (keep_failure && st != CTR_OK && w->st == CTR_OK) {
    w->st = st;
    snprintf(w->detail, sizeof w->detail, "%s", ctr_error_detail());
    snprintf(w->field, sizeof w->field, "%s", ctr_error_get_field());
    snprintf(w->value, sizeof w->value, "%s", ctr_error_get_value());
  }
}

/* The writer's failure raised on the caller's thread, once. Holds pw.mu. */
static ctr_status writer_failure(preview_writer *w) {
  const ctr_status st = w->st;
  if (st == CTR_OK) return CTR_OK;
  w->st = CTR_OK;
  if (w->field[0])
    return ctr__error_set_value(st, w->field, w->value[0] ? w->value : NULL,
                                "the preview writer: %s", w->detail);
  return ctr__error_set(st, "the preview writer: %s", w->detail);
}

static void *writer_main(void *arg) {
  ctr_fbp_live *l = arg;
  preview_writer *w = &l->pw;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->has_queued && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->has_queued) break; /* quit, and nothing left to write */
    float *t = w->writing;
    w->writing = w->queued;
    w->queued = t;
    memcpy(w->writing_prefix, w->queued_prefix, sizeof w->writing_prefix);
    w->has_queued = 0;
    w->busy = 1;
    pthread_mutex_unlock(&w->mu);
    const double t0 = ctr__now_s();
    const ctr_status st = write_planes(l, w->writing_prefix, w->writing);
    const double seconds = ctr__now_s() - t0;
    pthread_mutex_lock(&w->mu);
    write_done(w, st, seconds, 1);
    w->busy = 0;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* The writer's buffers and thread, at the first queued preview. */
static ctr_status writer_start(ctr_fbp_live *l) {
  preview_writer *w = &l->pw;
  if (w->started) return CTR_OK;
  const size_t n = (size_t)(l->nx * l->ny) * (size_t)l->npreview;
  if (!w->queued) w->queued = ctr__malloc(sizeof(float) * n, "a queued preview");
  if (!w->writing) w->writing = ctr__malloc(sizeof(float) * n, "a preview being written");
  if (!w->queued || !w->writing) return CTR_E_OUT_OF_MEMORY;
  const int e = pthread_create(&w->thread, NULL, writer_main, l);
  if (e) CTR_FAIL(CTR_E_INTERNAL, "cannot start the preview writer thread: %s", strerror(e));
  w->started = 1;
  return CTR_OK;
}

ctr_status ctr_fbp_live_queue_preview(ctr_fbp_live *l, const char *prefix, int first,
                                      int overwrite) {
  CTR_CHECK(check_prefix(l, prefix, "ctr_fbp_live_queue_preview"));
  if (!l->preview) return CTR_OK; /* nothing arrived: nothing to show */
  const int h5 = (ctr_features() & CTR_FEATURE_HDF5) != 0;
  if (first && !overwrite) CTR_CHECK(check_preview_outputs(l, prefix, h5));
  CTR_CHECK(writer_start(l));
  preview_writer *w = &l->pw;
  pthread_mutex_lock(&w->mu);
  const ctr_status st = writer_failure(w);
  if (st == CTR_OK) {
    w->superseded += w->has_queued;
    memcpy(w->queued, l->preview, sizeof(float) * (size_t)(l->nx * l->ny) * (size_t)l->npreview);
    snprintf(w->queued_prefix, sizeof w->queued_prefix, "%s", prefix);
    w->has_queued = 1;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return st;
}

ctr_status ctr_fbp_live_flush_preview(ctr_fbp_live *l) {
  if (!l) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_flush_preview: the live run is NULL");
  preview_writer *w = &l->pw;
  pthread_mutex_lock(&w->mu);
  while (w->has_queued || w->busy) pthread_cond_wait(&w->cv, &w->mu);
  const ctr_status st = writer_failure(w);
  pthread_mutex_unlock(&w->mu);
  return st;
}

ctr_status ctr_fbp_live_write_preview(ctr_fbp_live *l, const char *prefix, int first, int overwrite) {
  CTR_CHECK(check_prefix(l, prefix, "ctr_fbp_live_write_preview"));
  CTR_CHECK(ctr_fbp_live_flush_preview(l)); /* a queued write does not land after this one */
  if (!l->preview) return CTR_OK; /* nothing arrived: nothing to show */
  const int h5 = (ctr_features() & CTR_FEATURE_HDF5) != 0;
  if (first && !overwrite) CTR_CHECK(check_preview_outputs(l, prefix, h5));
  const double t = ctr__now_s();
  const ctr_status st = write_planes(l, prefix, l->preview);
  const double seconds = ctr__now_s() - t;
  pthread_mutex_lock(&l->pw.mu);
  write_done(&l->pw, st, seconds, 0);
  pthread_mutex_unlock(&l->pw.mu);
  return st;
}

/* The writer's queued previews written, the thread ended. */
static void writer_stop(preview_writer *w) {
  if (w->started) {
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
  }
  free(w->queued);
  free(w->writing);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}

/* ---- The end -------------------------------------------------------------------- */

/* Which projections are missing, for the refusal. */
static void missing_text(const ctr_source *s, int64_t count, char *buf, size_t n) {
  size_t at = 0;
  int listed = 0;
  buf[0] = 0;
  for (int64_t i = 0; i < count && at + 32 < n; i++)
    if (i >= s->seen_n || !s->seen[i]) {
      if (listed == 8) {
        at += (size_t)snprintf(buf + at, n - at, ", ...");
        break;
      }
      at += (size_t)snprintf(buf + at, n - at, "%s%lld", listed ? ", " : "", (long long)i);
      listed++;
    }
}

/* The volume summed complete, with the angles the final run takes (the
 * frames', which a file's theta announced): else the streamed run makes it. */
static int acc_complete(const ctr_fbp_live *l, const double *angles) {
  return l->acc == 1 && l->acc_next == l->count && angles &&
         !memcmp(angles, l->gacc->angles_deg, sizeof(double) * (size_t)l->count);
}

/* A device's sum is the final run's bytes when that run has the bands the
 * sum followed (its reader's row blocks and its output's writer decide
 * them) and starts afresh (a resumed output keeps its interrupted run's
 * bands): else the volume is reconstructed from the scan. */
static int acc_device_bands(const ctr_fbp_live *l, const ctr_parallel_params *p,
                            const ctr_fbp_stream_options *so, ctr_stack_reader *in,
                            const char *out, ctr_file_format fmt) {
  if (so->resume) return 0;
  if (fmt == CTR_FORMAT_AUTO && out && ctr_format_guess(out, &fmt) != CTR_OK) {
    fmt = CTR_FORMAT_AUTO; /* the final run names the output's trouble */
    ctr_error_clear();
  }
  ctr__fbp_run r;
  memset(&r, 0, sizeof r);
  r.ctx = l->ctx;
  r.out_fmt = fmt;
  ctr_status st = ctr__fbp_resolve(&r, so);
  if (st == CTR_OK) st = ctr__fbp_open_input(&r, in, l->flat, l->dark);
  if (st == CTR_OK) st = ctr__fbp_prepare_input(&r, p);
  if (st == CTR_OK) st = ctr__fbp_output_geometry(&r, p);
  if (st == CTR_OK) st = ctr__fbp_plan_bands(&r);
  const int same = st == CTR_OK && r.band_rows == l->acc_band_rows;
  ctr__fbp_release(&r, CTR_OK);
  ctr_error_clear();
  if (!same)
    ctr__log(l->ctx, CTR_LOG_INFO, "the volume summed on the device followed bands of %lld rows, "
             "not the final run's: it is reconstructed from the scan", (long long)l->acc_band_rows);
  return same;
}

/* The finished scan's reader: the file (opened once its writer has closed
 * it, within the timeout) or the spool. */
static ctr_status open_scan(ctr_fbp_live *l, ctr_stack_reader **in) {
  const char *path = ctr__source_data_path(l->src);
  if (!path) {
    ctr_stack_info hint = CTR_STACK_INFO_INIT;
    hint.width = l->W;
    hint.height = l->H;
    hint.count = l->count;
    hint.dtype = l->dtype;
    if (fsync(l->spool_fd) != 0)
      CTR_FAIL(CTR_E_IO, "cannot flush the spool file '%s': %s", l->spool, strerror(errno));
    return ctr_stack_open(l->spool, CTR_FORMAT_RAW, &hint, 0, in);
  }
  ctr__source_release(l->src); /* the source's own handle on the file closed first */
  const double until = ctr__now_s() + l->o.timeout_s;
  for (;;) {
    const ctr_status st = ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, in);
    if (st == CTR_OK || ctr__now_s() > until) return st;
    struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, NULL); /* its writer still has it open */
  }
}

/* The device's sum freed (waits for its work). */
static void acc_release(ctr_fbp_live *l) {
  if (l->dacc) l->acc_be->acc_free(l->dacc);
  l->dacc = NULL;
}

/* Slices [s0, s0 + ns) of the summed volume for the final run (ctr__fbp_acc_slices):
 * downloaded from the device's sum (its band while the writer writes the band before:
 * the host never holds the whole volume), or copied from the host's on every core; their
 * non-finite values replaced as a backend's are, at the end. */
static ctr_status acc_slices(void *arg, int64_t s0, int64_t ns, float *dst, int64_t *bad_output) {
  ctr_fbp_live *l = arg;
  const size_t plane = (size_t)(l->gacc->p.nx * l->gacc->p.ny), n = plane * (size_t)ns;
  if (l->dacc) CTR_CHECK(l->acc_be->acc_get(l->dacc, s0, ns, dst, NULL));
  else ctr__copy_parallel(dst, l->vol + (size_t)s0 * plane, sizeof(float) * n);
  *bad_output += ctr__values_sanitize(dst, (int64_t)n);
  return CTR_OK;
}

ctr_status ctr_fbp_live_finish(ctr_fbp_live *l, const char *out, ctr_file_format fmt,
                               ctr_fbp_stream_report *report) {
  if (!l) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_live_finish: the live run is NULL");
  const ctr_source *s = l->src;
  if (!l->count || l->done != l->count || !l->ended) {
    char miss[256] = "";
    if (l->count) missing_text(s, l->count, miss, sizeof miss);
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "the scan %s with %lld of %lld projections%s%s%s (frames "
             "dropped: %lld bad headers, %lld wrong sizes, %lld duplicates, %lld out of order): "
             "the volume is not reconstructed",
             l->ended ? "stopped" : "is still being acquired", (long long)l->done,
             (long long)l->count, l->count ? " expected" : " (the count was never said)",
             miss[0] ? "; missing " : "", miss, (long long)s->st.dropped_header,
             (long long)s->st.dropped_size, (long long)s->st.dropped_duplicate,
             (long long)s->st.dropped_order);
  }
  ctr_parallel_params p = l->p;
  p.nbins = l->W;
  p.nangles = l->count;
  if (!l->user_angles) p.angles_deg = s->angles; /* the frames', by index */
  else if (l->p.nangles != l->count)
    CTR_FAIL_FIELD_VALUE(CTR_E_SIZE_MISMATCH, "ctr_parallel_params.nangles",
                         CTR__V_INT(l->p.nangles),
                         "ctr_parallel_params.nangles = %lld: the scan has %lld projections",
                   (long long)l->p.nangles, (long long)l->count);
  ctr_stack_reader *in = NULL;
  CTR_CHECK(open_scan(l, &in));
  ctr_fbp_stream_options so = l->so;
  char journal[4300];
  snprintf(journal, sizeof journal, "%s.partial.journal", out ? out : "");
  if (so.resume && access(journal, F_OK) != 0) so.resume = 0; /* a resumed scan, not its volume */
  ctr_status st = CTR_OK;
  int acc = acc_complete(l, p.angles_deg) && (!l->dacc || acc_device_bands(l, &p, &so, in, out, fmt));
  const double t_sum = ctr__now_s(); /* the sum's end: the device's last work */
  if (acc && l->dacc) {
    int64_t bad = 0;
    st = l->acc_be->acc_get(l->dacc, 0, 0, NULL, &bad);
    l->acc_counts.input += bad;
  }
  if (!acc) acc_release(l); /* the device's memory given back before the run from the scan */
  if (st != CTR_OK) {
    /* the device failed: nothing written */
  } else if (acc) {
    l->acc_counts.calibration = ctr__flat_bad_pixels(
        (l->flat ? l->flat : l->ones) + l->acc_row0 * l->W,
        l->dark ? l->dark + l->acc_row0 * l->W : NULL, l->acc_nslices * l->W);
    const double sum_s = ctr__now_s() - t_sum;
    const ctr__fbp_acc_slices bands = {acc_slices, l};
    st = ctr__fbp_stream_accumulated(l->ctx, &p, &so, in, l->flat, l->dark, &bands,
                                     &l->acc_counts, out, fmt, report);
    if (st == CTR_OK && report) { /* the final run's compute and total include the sum's end */
      report->seconds_compute += sum_s;
      report->seconds_total += sum_s;
    }
    ctr__log(l->ctx, CTR_LOG_DEBUG, "live finish: the sum's end (device work, download, value "
             "checks) %.3f s", sum_s);
  } else {
    st = ctr_fbp_stream(l->ctx, &p, &so, in, l->flat, l->dark, out, fmt, report);
  }
  acc_release(l);
  ctr_stack_close(in);
  if (st == CTR_OK) l->finished = 1;
  return st;
}

void ctr_fbp_live_free(ctr_fbp_live *l) {
  if (!l) return;
  writer_stop(&l->pw);
  if (l->spool_fd >= 0) close(l->spool_fd);
  /* a named spool of a scan not reconstructed stays, with its state, for a resume */
  if (l->spool_own && (l->finished || !l->o.spool)) {
    unlink(l->spool);
    unlink(l->index_path);
    unlink(l->cal_path);
  }
  free(l->sp_index);
  free(l->sp_angle);
  acc_release(l);
  ctr_parallel_free(l->gacc);
  ctr_parallel_free(l->gfull);
  free(l->vol);
  free(l->acc_sino);
  free(l->user_angles);
  free(l->user_shift);
  free(l->cal[0]);
  free(l->cal[1]);
  ctr__aligned_free(l->flat);
  ctr__aligned_free(l->dark);
  ctr__aligned_free(l->ones);
  free(l->preview);
  free(l->tmp);
  free(l->sino);
  free(l->bangles);
  free(l->bindex);
  ctr_host_free(l->batch);
  free(l);
}

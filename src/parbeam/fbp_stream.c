/* The streamed parallel-beam FBP (docs/synchrotron.md): the parallel-beam
 * side of the streamed executor (src/stream/executor.h: its output,
 * journal, resume, reader ring and writer thread; the cone-beam side is
 * src/conebeam/stream.c):
 *
 *  - the input is cut into bands of detector rows (sinograms); the reader
 *    thread reads each band's rows of every projection used once
 *    (ctr_stack_read_rows: HDF5 hyperslabs, TIFF strips and tiles, preads),
 *    bands aligned to the reader's row block;
 *  - the calling thread turns a band into sinograms (flat/dark and -log,
 *    binning and Paganin on transmissions, dezinger and stripe removal on
 *    sinograms, 360-degree stitching) and reconstructs them: ctr_fbp, or
 *    without corrections ctr_fbp_projections, so that on a CUDA context a
 *    band's 16-slice chunks go to the context's GPUs through the work queue
 *    of fbp_pipeline.cu and the result is that of ctr_fbp_projections;
 *  - the writer thread writes finished bands (float32, float16 or uint16)
 *    to `out`.partial (a resumable format), journals each one with its
 *    CRC-32 and the file is renamed when complete.
 *
 * Paganin's filter needs rows beyond a band: a band is filtered in a window
 * of `margin` rows more on each side, taken from the neighbouring bands in
 * the ring (nothing is read twice). The rotation centre, when asked for, is
 * found before the run on 16 rows around center_row (read for it: 16 of the
 * detector's rows are read twice). */
#include "filter/filter.h"
#include "parbeam/fbp_stream_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EPS_TRANSMISSION 1e-6

typedef ctr__fbp_run srun;

static int64_t band_start(const srun *r, int64_t k) { return r->row0 + k * r->band_rows; }
static int64_t band_len(const srun *r, int64_t k) {
  const int64_t left = r->row0 + r->nrows - band_start(r, k);
  return left < r->band_rows ? left : r->band_rows;
}

/* ---- Options ---------------------------------------------------------------- */

ctr_status ctr__fbp_resolve(srun *r, const ctr_fbp_stream_options *opts) {
  /* the caller's version read into the current layout (NULL: the defaults) */
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fbp_stream_options, &r->o, opts));
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fbp_options, &r->fbp, r->o.fbp));
  r->counts = (ctr_value_counts)CTR_VALUE_COUNTS_INIT;
  r->caller_counts = r->fbp.counts;
  r->fbp.counts = &r->counts;
  if (r->o.gpu_budget) r->fbp.gpu_budget = r->o.gpu_budget; /* each band's pipeline's */
  CTR_CHECK(ctr__corrections_resolve(r->o.corrections, &r->c));
  r->sino = r->o.sinograms != 0;
  if (!r->o.out_dtype) r->o.out_dtype = CTR_DTYPE_FLOAT32;
  if (r->o.out_dtype != CTR_DTYPE_FLOAT32 && r->o.out_dtype != CTR_DTYPE_FLOAT16 &&
      r->o.out_dtype != CTR_DTYPE_UINT16)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.out_dtype",
                   CTR__V_INT(r->o.out_dtype),
                   "ctr_fbp_stream_options.out_dtype = %d: expected float32, "
                   "float16 or uint16", (int)r->o.out_dtype);
  if (r->o.out_scale == 0) r->o.out_scale = 1.0;
  if (!(r->o.out_scale > 0) || !isfinite(r->o.out_scale) || !isfinite(r->o.out_offset))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.out_scale",
                   "ctr_fbp_stream_options.out_scale, out_offset = %g, %g: "
                   "expected a finite scale > 0 and a finite offset", r->o.out_scale, r->o.out_offset);
  if (r->o.batch < 0 || r->o.row0 < 0 || r->o.nrows < 0 || r->o.angle_first < 0 ||
      r->o.angle_count < 0 || r->o.angle_step < 0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options: batch, row0, nrows, angle_first, "
             "angle_count and angle_step must be >= 0");
  if (r->o.read_ahead < 0 || r->o.read_ahead > 16)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.read_ahead",
                   CTR__V_INT(r->o.read_ahead),
                   "ctr_fbp_stream_options.read_ahead = %d: expected 1 to 16 "
                   "bands (0: the default, 2)", r->o.read_ahead);
  if (!r->o.read_ahead) r->o.read_ahead = 2;
  if (r->o.input_scale == 0) r->o.input_scale = 1.0;
  if (!(r->o.input_scale > 0) || !isfinite(r->o.input_scale))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.input_scale",
                   CTR__V_REAL(r->o.input_scale),
                   "ctr_fbp_stream_options.input_scale = %g: expected a finite "
                   "scale > 0", r->o.input_scale);
  if (!r->sino && r->o.input_scale != 1.0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.input_scale",
                   CTR__V_REAL(r->o.input_scale),
                   "ctr_fbp_stream_options.input_scale = %g applies to sinograms "
                   "(sinograms = 1): the flat-field ratio cancels a scale of the projections",
                   r->o.input_scale);
  if (r->sino && (r->c.paganin_delta_beta > 0 || r->c.bin_y > 1))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.sinograms",
                   "ctr_fbp_stream_options.sinograms: %s applies to "
                   "projections only", r->c.paganin_delta_beta > 0 ? "ctr_corrections.paganin_delta_beta"
                                                                   : "ctr_corrections.bin_y");
  r->bx = r->c.bin_x;
  r->by = r->c.bin_y;
  r->transmission = r->c.paganin_delta_beta > 0 || r->bx > 1 || r->by > 1;
  r->sino_corr = r->c.dezinger > 0 || r->c.stripe != CTR_STRIPE_NONE || r->c.stitch_360;
  return CTR_OK;
}

/* Input sizes, rows, projections used, the geometry of the selected and
 * binned projections (the axis still to be found when AUTO). */
static ctr_status setup_geometry(srun *r, const ctr_parallel_params *params) {
  if (!params) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream: params is NULL");
  /* the caller's version read into the current layout */
  ctr_parallel_params pc;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_parallel_params, &pc, params));
  params = &pc;
  if (pc.tilt_deg != 0.0)
    CTR_FAIL_FIELD_VALUE(CTR_E_UNSUPPORTED, "ctr_parallel_params.tilt_deg", CTR__V_REAL(pc.tilt_deg),
                         "ctr_fbp_stream reconstructs bands of detector rows, each into its own "
                         "slices, and a tilted rotation axis (tilt_deg %g: laminography) makes "
                         "every slice need every row: load the sinograms and call ctr_fbp "
                         "(ctrecon fbp --tilt does)", pc.tilt_deg);
  if (params->nbins != r->W || params->nangles != r->NP)
    CTR_FAIL_FIELD(CTR_E_SIZE_MISMATCH, "ctr_parallel_params.nbins",
                   "ctr_parallel_params.nbins, nangles = %lld, %lld; the input "
                   "holds %lld bins x %lld %s", (long long)params->nbins, (long long)params->nangles,
                   (long long)r->W, (long long)r->NP, r->sino ? "angles" : "projections");
  /* rows */
  r->row0 = r->o.row0;
  r->nrows = r->o.nrows ? r->o.nrows : r->H - r->row0;
  if (r->row0 >= r->H || r->nrows < 1 || r->row0 + r->nrows > r->H)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.row0",
                   "ctr_fbp_stream_options.row0, nrows = %lld, %lld: the input "
                   "has %s [0, %lld)", (long long)r->o.row0, (long long)r->o.nrows,
                   r->sino ? "sinograms" : "rows", (long long)r->H);
  r->nslices = r->nrows / r->by;
  if (r->nslices < 1)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.bin_y", CTR__V_INT(r->by),
                   "ctr_corrections.bin_y = %d exceeds the %lld rows "
                   "reconstructed", r->by, (long long)r->nrows);
  if (r->nrows % r->by)
    ctr__log(r->ctx, CTR_LOG_WARNING, "binning %d rows into a slice: the last %lld of the %lld "
             "rows reconstructed do not fill a bin and are left out (choose rows in multiples of "
             "ctr_corrections.bin_y = %d)", r->by, (long long)(r->nrows % r->by),
             (long long)r->nrows, r->by);
  r->nrows = r->nslices * r->by; /* rows left over by the binning are dropped */
  /* projections */
  const int64_t step = r->o.angle_step ? r->o.angle_step : 1;
  if (r->o.angle_first >= r->NP)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.angle_first",
                   CTR__V_INT(r->o.angle_first),
                   "ctr_fbp_stream_options.angle_first = %lld: the input has "
                   "%lld projections", (long long)r->o.angle_first, (long long)r->NP);
  int64_t avail = (r->NP - r->o.angle_first + step - 1) / step;
  if (r->o.angle_count) {
    if (r->o.angle_count > avail)
      CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.angle_count",
                     CTR__V_INT(r->o.angle_count),
                     "ctr_fbp_stream_options.angle_count = %lld: from "
                     "projection %lld in steps of %lld there are %lld", (long long)r->o.angle_count,
                     (long long)r->o.angle_first, (long long)step, (long long)avail);
    avail = r->o.angle_count;
  }
  if (avail < 2)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "the projections selected (ctr_fbp_stream_options."
             "angle_first = %lld, angle_step = %lld) are %lld of the %lld: a reconstruction needs "
             "at least 2", (long long)r->o.angle_first, (long long)step, (long long)avail,
             (long long)r->NP);
  r->nsel = avail;
  r->sel = ctr__malloc(sizeof(int64_t) * (size_t)r->nsel, "projection list");
  double *ang = ctr__malloc(sizeof(double) * (size_t)r->nsel * 2, "angles");
  if (!r->sel || !ang) {
    free(ang);
    return CTR_E_OUT_OF_MEMORY;
  }
  double *shift = ang + r->nsel; /* the selected projections' axis shifts, in output bins */
  ctr_parallel_geometry *gin = NULL;
  ctr_parallel_params p = *params;
  const int auto_axis = params->axis == CTR_AXIS_AUTO;
  if (auto_axis) p.axis = CTR_AXIS_CENTER;
  p.nx = p.ny = 0;
  ctr_status st = ctr_parallel_create(&p, &gin); /* resolves the angles and the axis */
  if (st != CTR_OK) {
    free(ang);
    return st;
  }
  for (int64_t i = 0; i < r->nsel; i++) {
    r->sel[i] = r->o.angle_first + i * step;
    ang[i] = gin->angles_deg[r->sel[i]];
    shift[i] = gin->axis_shift[r->sel[i]] / (double)r->bx; /* zeros when none was given */
  }
  r->axis_in = gin->p.axis;
  /* binned: bin j covers input bins [j bx, j bx + bx) */
  r->nbins_b = r->W / r->bx;
  if (r->W % r->bx)
    ctr__log(r->ctx, CTR_LOG_WARNING, "binning %d columns into a bin: the last %lld of the %lld "
             "detector columns do not fill a bin and are left out", r->bx,
             (long long)(r->W % r->bx), (long long)r->W);
  ctr_parallel_params q = gin->p;
  q.nbins = r->nbins_b;
  q.nangles = r->nsel;
  q.angles_deg = ang;
  q.axis = (r->axis_in - 0.5 * (double)(r->bx - 1)) / (double)r->bx;
  int shifted = 0;
  for (int64_t i = 0; i < r->nsel; i++) shifted |= shift[i] != 0;
  q.axis_shift = shifted ? shift : NULL;
  q.pixel_size = gin->p.pixel_size * (double)r->bx;
  q.nx = q.ny = 0;
  q.voxel = 1;
  ctr_parallel_free(gin);
  if (shifted && r->c.stitch_360)
    st = ctr__error_set(CTR_E_INVALID_ARGUMENT, "ctr_parallel_params.axis_shift with "
                        "ctr_corrections.stitch_360: the stitched projections join two halves "
                        "about one axis; give one or the other");
  if (st == CTR_OK) st = ctr_parallel_create(&q, &r->gsel);
  free(ang);
  if (st != CTR_OK) return st;
  r->axis_found = auto_axis;
  return CTR_OK;
}

/* The output geometry from gsel with the axis known: stitched or not, the
 * slice grid of params (output bins). */
ctr_status ctr__fbp_output_geometry(srun *r, const ctr_parallel_params *params) {
  ctr_parallel_params q = r->gsel->p;
  q.angles_deg = r->gsel->angles_deg;
  q.axis_shift = r->gsel->axis_shift;
  q.axis = (r->axis_in - 0.5 * (double)(r->bx - 1)) / (double)r->bx;
  ctr_parallel_geometry *g = NULL;
  CTR_CHECK(ctr_parallel_create(&q, &g));
  ctr_parallel_free(r->gsel);
  r->gsel = g;
  ctr_parallel_geometry *base = g, *st_g = NULL;
  if (r->c.stitch_360) {
    CTR_CHECK(ctr_stitch_360_geometry(g, &st_g));
    base = st_g;
  }
  q = base->p;
  q.angles_deg = base->angles_deg;
  q.axis_shift = base->axis_shift;
  q.nx = params->nx ? params->nx : q.nbins;
  q.ny = params->ny ? params->ny : (params->nx ? params->nx : q.nbins);
  q.voxel = params->voxel ? params->voxel : 1.0;
  const ctr_status st = ctr_parallel_create(&q, &r->gout);
  ctr_parallel_free(st_g);
  return st;
}

/* ---- Bands -------------------------------------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Band buffers in the reader's ring (plan_bands counts them). */
static int ring_slots(const srun *r) { return r->o.read_ahead + 1 + (r->margin ? 2 : 0); }

/* Rows per band: the batch of slices times bin_y, a multiple of the reader's
 * row block, at least Paganin's margin, within the host budget. */
static ctr_status plan_bands(srun *r, int64_t resumed_slices) {
  int64_t batch = r->o.batch;
  if (!batch) {
    const int gpus = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA ? ctr_context_get_device_count(r->ctx) : 0;
    batch = gpus > 0 ? 64 * (int64_t)gpus : 16;
  }
  int64_t block = r->in && !r->sino ? ctr__stack_row_block(r->in) : 1;
  const int64_t unit = block / gcd64(block, r->by) * r->by; /* lcm(block, by) */
  r->margin = ctr_paganin_margin(&r->c, r->gsel->p.pixel_size);
  int64_t rows = batch * r->by;
  if (rows < r->margin * r->by) rows = r->margin * r->by;
  rows = (rows + unit - 1) / unit * unit;
  if (resumed_slices > 0) rows = resumed_slices * r->by; /* the interrupted run's bands */
  if (rows > r->nrows) rows = r->nrows;
  /* the ring: the band computed and read_ahead more (two more with Paganin:
   * its neighbours held), the sinograms, the slices and the writer's 3
   * buffers */
  const size_t es = r->sino ? sizeof(float) : ctr_dtype_size(r->dtype);
  const int nbuf = ring_slots(r);
  /* and what the output format's writer holds of its own (an OME-Zarr
   * writer's rows of chunks; the bands arrive in order) */
  const int64_t onx = r->gout ? r->gout->p.nx : r->nbins_b, ony = r->gout ? r->gout->p.ny : r->nbins_b;
  const uint64_t own = ctr__format_writer_bytes(r->out_fmt, onx, ony, r->nrows / r->by, r->o.out_dtype, 1);
  uint64_t budget = r->o.host_budget;
  CTR_CHECK(ctr__budgets_resolve(r->ctx, NULL, &budget));
  double need;
  for (;;) {
    const double raw = (double)rows * (double)r->W * (double)(r->sino ? r->NP : r->nsel) * (double)es;
    const double sl = (double)(rows / r->by) * (double)(onx * ony);
    need = nbuf * raw + 4.0 * raw * 4.0 / (double)es + 4.0 * 4.0 * sl + (double)own;
    if (need <= (double)budget || rows <= unit || resumed_slices > 0) break;
    rows = (rows / 2 + unit - 1) / unit * unit;
  }
  if (own && need > (double)budget) {
    char b1[32], b2[32], b3[32];
    CTR_FAIL_FIELD_VALUE(CTR_E_OUT_OF_MEMORY, "host_budget",
                         CTR__V_UINT(budget),
                         "bands of %lld rows need %s of host memory, of which %s are the %s "
                         "writer's own buffers (rows of chunks); host_budget is %s: raise it, or "
                         "write a format that holds none (raw, NRRD, TIFF)",
                         (long long)rows, ctr__format_bytes(need, b1, sizeof b1),
                         ctr__format_bytes((double)own, b2, sizeof b2),
                         ctr__format_info(r->out_fmt)->title,
                         ctr__format_bytes((double)budget, b3, sizeof b3));
  }
  if (r->margin && rows < r->margin * r->by && rows < r->nrows)
    CTR_FAIL_FIELD(CTR_E_OUT_OF_MEMORY, "host_budget",
                   "Paganin's filter needs bands of at least %lld rows (its margin) "
                   "and host_budget allows only %lld", (long long)(r->margin * r->by),
                   (long long)rows);
  r->band_rows = rows;
  r->band_slices = rows / r->by;
  r->nbands = (r->nrows + rows - 1) / rows;
  r->band_bytes = (size_t)rows * (size_t)r->W * (size_t)(r->sino ? r->NP : r->nsel) * es;
  return CTR_OK;
}

ctr_status ctr__fbp_plan_bands(srun *r) { return plan_bands(r, 0); }

/* Raw data of input rows [r0, r0 + n) into buf: n x W of every projection
 * used, projection after projection (sinograms: those sinograms, float32). */
static ctr_status read_rows_raw(srun *r, int64_t r0, int64_t n, void *buf) {
  const size_t es = ctr_dtype_size(r->dtype);
  if (r->mem) {
    const char *src = r->mem->data;
    if (r->sino) {
      memcpy(buf, src + (size_t)(r0 * r->NP * r->W) * es, (size_t)(n * r->NP * r->W) * es);
    } else {
      for (int64_t i = 0; i < r->nsel; i++)
        memcpy((char *)buf + (size_t)(i * n * r->W) * es,
               src + (size_t)((r->sel[i] * r->H + r0) * r->W) * es, (size_t)(n * r->W) * es);
    }
    return CTR_OK;
  }
  if (r->sino) return ctr_stack_read(r->in, r0, n, CTR_DTYPE_FLOAT32, buf);
  const int64_t step = r->nsel > 1 ? r->sel[1] - r->sel[0] : 1;
  if (step == 1) return ctr_stack_read_rows(r->in, r->sel[0], r->nsel, r0, n, r->dtype, buf);
  for (int64_t i = 0; i < r->nsel; i++)
    CTR_CHECK(ctr_stack_read_rows(r->in, r->sel[i], 1, r0, n, r->dtype,
                                  (char *)buf + (size_t)(i * n * r->W) * es));
  return CTR_OK;
}

static ctr_status fill(void *user, int64_t item, void *buf) {
  srun *r = user;
  const int64_t k = r->items[item];
  if (r->acc.get) return CTR_OK; /* summed already: nothing to read */
  return read_rows_raw(r, band_start(r, k), band_len(r, k), buf);
}

/* ---- A band into sinograms ---------------------------------------------------- */

/* Transmission of one pixel (0 calibration: 1, so that -log gives 0). */
static inline float transmission(double p, double f, double d, int64_t *clamped) {
  if (!(f - d > 0.0 && isfinite(f) && isfinite(d))) return 1.0f;
  double t = (p - d) / (f - d);
  if (!(t >= EPS_TRANSMISSION)) {
    t = EPS_TRANSMISSION;
    (*clamped)++;
  }
  return (float)t;
}

/* Raw rows held in memory: input rows [r0, r0 + n), n x W of every
 * projection used, projection after projection. */
typedef struct seg {
  int64_t r0, n;
  const void *p;
} seg;

/* Rows [w0, w0 + wn) (input rows) of the projections, from the segments
 * that hold them (a band and its neighbours), binned transmissions:
 * trans[i][(row - w0) / by][j], nbins_b wide. */
static void window_transmissions(srun *r, const seg *segs, int nseg, int64_t w0, int64_t wn,
                                 float *trans, int64_t *clamped) {
  const int64_t nbb = r->nbins_b, wrows = wn / r->by;
  const int bx = r->bx, by = r->by;
  const double inv = 1.0 / (double)(bx * by);
  int64_t total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) num_threads(ctr__num_threads(r->ctx))
  for (int64_t i = 0; i < r->nsel; i++) {
    int64_t cl = 0;
    for (int64_t y = 0; y < wrows; y++)
      for (int64_t j = 0; j < nbb; j++) {
        double acc = 0;
        for (int dy = 0; dy < by; dy++) {
          const int64_t row = w0 + y * by + dy;
          const seg *g = segs;
          for (int q = 0; q < nseg; q++)
            if (segs[q].p && row >= segs[q].r0 && row < segs[q].r0 + segs[q].n) g = &segs[q];
          for (int dx = 0; dx < bx; dx++) {
            const int64_t col = j * bx + dx;
            const size_t at = (size_t)((i * g->n + row - g->r0) * r->W + col);
            const double p = r->dtype == CTR_DTYPE_UINT16 ? (double)((const uint16_t *)g->p)[at]
                                                          : (double)((const float *)g->p)[at];
            const size_t fa = (size_t)(row * r->W + col);
            acc += transmission(p, r->flat[fa], r->dark ? r->dark[fa] : 0.0, &cl);
          }
        }
        trans[(i * wrows + y) * nbb + j] = (float)(acc * inv);
      }
    total += cl;
  }
  *clamped += total;
}

/* Sinograms (n / by x nsel x nbins_b) of input rows [r0, r0 + n), held by
 * segs[1] (segs[0] and segs[2]: the rows before and after, for Paganin's
 * margins), corrected; `centre`: for centre finding (no Paganin, nothing
 * counted). */
static ctr_status band_sinograms(srun *r, int64_t r0, int64_t n, const seg segs[3], int centre) {
  const int64_t ns = n / r->by;
  const int64_t nb = r->nbins_b, na = r->nsel;
  ctr_status st = CTR_OK;
  int64_t clamped = 0;
  if (r->sino) {
    /* float32 sinograms of all the angles: the ones used, binned across bins */
    const float *src = segs[1].p;
    for (int64_t s = 0; s < ns; s++)
      for (int64_t i = 0; i < na; i++)
        for (int64_t j = 0; j < nb; j++) {
          double acc = 0;
          for (int dx = 0; dx < r->bx; dx++) acc += src[(s * r->NP + r->sel[i]) * r->W + j * r->bx + dx];
          r->sbuf[(s * na + i) * nb + j] = (float)(acc / (r->bx * r->o.input_scale));
        }
  } else if (!r->transmission) {
    CTR_CHECK(ctr_flatfield_sinograms(segs[1].p, r->dtype, r->W, n, na, r->flat + r0 * r->W,
                                      r->dark ? r->dark + r0 * r->W : NULL, 0, n, r->sbuf, &clamped));
  } else {
    const int pag = r->margin > 0 && !centre;
    const int64_t m = pag ? r->margin * r->by : 0;
    int64_t w0 = r0 - m, w1 = r0 + n + m;
    if (w0 < r->row0) w0 = r->row0;
    if (w1 > r->row0 + r->nrows) w1 = r->row0 + r->nrows;
    const int64_t wn = w1 - w0, wrows = wn / r->by, off = (r0 - w0) / r->by;
    window_transmissions(r, segs, 3, w0, wn, r->trans, &clamped);
    if (pag) CTR_CHECK(ctr_paganin_filter(r->ctx, &r->c, r->gsel->p.pixel_size, nb, wrows, na, r->trans));
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctr__num_threads(r->ctx))
    for (int64_t s = 0; s < ns; s++)
      for (int64_t i = 0; i < na; i++) {
        const float *t = r->trans + (i * wrows + off + s) * nb;
        float *o = r->sbuf + (s * na + i) * nb;
        for (int64_t j = 0; j < nb; j++) {
          const float v = t[j] > (float)EPS_TRANSMISSION ? t[j] : (float)EPS_TRANSMISSION;
          o[j] = -logf(v);
        }
      }
  }
  if (!r->sino) {
    /* the data policy's counts of the calibration, as ctr_fbp_projections */
    r->counts.calibration +=
        centre ? 0 : ctr__flat_bad_pixels(r->flat + r0 * r->W, r->dark ? r->dark + r0 * r->W : NULL, n * r->W);
    if (!centre) r->counts.clamped += clamped;
    if (!centre && clamped && r->fbp.strict)
      CTR_FAIL_FIELD(CTR_E_FORMAT, "ctr_fbp_options.strict",
                     "projections: %lld transmissions (p - dark) / (flat - dark) below "
                     "1e-6 or NaN (ctr_fbp_options.strict)", (long long)clamped);
  }
  if (r->c.dezinger > 0) {
    int64_t rep = 0;
    CTR_CHECK(ctr_sinogram_dezinger(r->ctx, &r->c, nb, na, ns, r->sbuf, &rep));
    if (!centre) r->dezingered += rep;
  }
  if (r->c.stripe != CTR_STRIPE_NONE)
    CTR_CHECK(ctr_sinogram_remove_stripes(r->ctx, &r->c, nb, na, ns, r->sbuf));
  return st;
}

/* Band k reconstructed into slices (nx x ny x its slices). */
static ctr_status band_reconstruct(srun *r, int64_t k, void *const bufs[3], float *slices) {
  const int64_t n = band_len(r, k), ns = n / r->by;
  const ctr_parallel_params *po = &r->gout->p;
  const int64_t vd[3] = {po->nx, po->ny, ns};
  ctr_array va = ctr_array_make(slices, CTR_DTYPE_FLOAT32, 3, vd);
  if (r->acc.get) { /* summed already: fetched (a GPU's download overlaps the last band's write) */
    int64_t bad = 0;
    CTR_CHECK(r->acc.get(r->acc.arg, k * r->band_slices, ns, slices, &bad));
    r->counts.output += bad;
    return CTR_OK;
  }
  if (!r->sino && !r->transmission && !r->sino_corr) {
    /* as ctr_fbp_projections (on a CUDA context: the GPUs' chunk queue) */
    const int64_t pd[3] = {r->W, n, r->nsel};
    const ctr_array pa = ctr_array_make(bufs[1], r->dtype, 3, pd);
    const int64_t r0 = band_start(r, k);
    return ctr_fbp_projections(r->ctx, r->gout, &r->fbp, &pa, r->flat + r0 * r->W,
                               r->dark ? r->dark + r0 * r->W : NULL, 0, &va);
  }
  if (r->sino && !r->sino_corr && r->bx == 1 && r->nsel == r->NP && r->o.input_scale == 1.0) {
    const int64_t sd[3] = {r->W, r->NP, ns};
    const ctr_array sa = ctr_array_make(bufs[1], CTR_DTYPE_FLOAT32, 3, sd);
    return ctr_fbp(r->ctx, r->gout, &r->fbp, &sa, &va);
  }
  const int64_t r0 = band_start(r, k);
  const seg segs[3] = {{r0 - r->band_rows, r->band_rows, bufs[0]},
                       {r0, n, bufs[1]},
                       {r0 + n, k + 1 < r->nbands ? band_len(r, k + 1) : 0, bufs[2]}};
  CTR_CHECK(band_sinograms(r, r0, n, segs, 0));
  const float *s = r->sbuf;
  if (r->c.stitch_360) {
    CTR_CHECK(ctr_stitch_360(r->gsel, r->gout, ns, r->sbuf, r->sino2));
    s = r->sino2;
  }
  const int64_t sd[3] = {po->nbins, po->nangles, ns};
  const ctr_array sa = ctr_array_make((void *)s, CTR_DTYPE_FLOAT32, 3, sd);
  return ctr_fbp(r->ctx, r->gout, &r->fbp, &sa, &va);
}

/* ---- Centre -------------------------------------------------------------------- */

/* The rows centre finding uses: CENTRE_ROWS slices (x bin_y input rows)
 * around center_row (default the detector's middle), whatever the rows
 * reconstructed and the bands: the same axis for every run of the data. */
#define CENTRE_ROWS 16

static ctr_status find_centre(srun *r) {
  const int64_t row = r->o.center_row >= 0 ? r->o.center_row : r->H / 2;
  if (row >= r->H)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_options.center_row",
                   CTR__V_INT(r->o.center_row),
                   "ctr_fbp_stream_options.center_row = %lld: the input has "
                   "%s [0, %lld)", (long long)r->o.center_row, r->sino ? "sinograms" : "rows",
                   (long long)r->H);
  int64_t n = CENTRE_ROWS * r->by;
  if (n > r->H) n = r->H / r->by * r->by;
  int64_t w0 = row - n / 2;
  if (w0 < 0) w0 = 0;
  if (w0 > r->H - n) w0 = r->H - n;
  const size_t es = ctr_dtype_size(r->dtype);
  void *raw = ctr__malloc((size_t)(n * r->W * (r->sino ? r->NP : r->nsel)) * es, "the centre rows");
  if (!raw) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = read_rows_raw(r, w0, n, raw);
  const seg segs[3] = {{0, 0, NULL}, {w0, n, raw}, {0, 0, NULL}};
  if (st == CTR_OK) st = band_sinograms(r, w0, n, segs, 1);
  const ctr_corrections *c = &r->c;
  /* the search range in binned bins */
  double lo = 0, hi = 0;
  if (c->center_min != 0 || c->center_max != 0) {
    lo = (c->center_min - 0.5 * (r->bx - 1)) / r->bx;
    hi = (c->center_max - 0.5 * (r->bx - 1)) / r->bx;
  }
  double axis_b = 0;
  if (st == CTR_OK)
    st = ctr_center_find(r->ctx, r->gsel, c->center_method, lo, hi, n / r->by, r->sbuf, &axis_b,
                         &r->center_used);
  free(raw);
  CTR_CHECK(st);
  r->axis_in = axis_b * r->bx + 0.5 * (r->bx - 1);
  return CTR_OK;
}

/* ---- Fingerprint ------------------------------------------------------------------ */

/* Everything that decides the slices' bytes (the axis as given: a found one
 * is found again, the same, on a resume); a journal resumes only a run with
 * the same. */
uint64_t ctr__fbp_fingerprint(const srun *r, const ctr_parallel_params *p, const char *out,
                              ctr_file_format fmt, int with_input) {
  uint64_t h = ctr__fnv1a(CTR__FNV_SEED, "ctrecon fbp-stream 1", 20);
  const double d[10] = {p->axis, p->pixel_size, p->voxel, r->fbp.cutoff, r->o.out_scale,
                        r->o.out_offset, r->c.dezinger, r->c.stripe_sigma,
                        r->c.paganin_delta_beta, r->c.energy_kev};
  const double d2[3] = {r->c.distance_mm, r->o.input_scale != 1.0 ? r->o.input_scale : 0, 0};
  const int64_t i[22] = {r->W, r->H, r->NP, r->dtype, r->sino, r->row0, r->nrows, r->nsel,
                         r->sel[0], r->nsel > 1 ? r->sel[1] : 0, p->nx, p->ny, r->fbp.window,
                         r->fbp.interp, r->o.out_dtype, fmt, ctr_context_get_device(r->ctx),
                         r->c.dezinger_size, r->c.stripe * 1000 + r->c.stripe_size,
                         r->c.stripe_level * 100 + r->c.stripe_wavelet, r->c.stitch_360,
                         r->bx * 1000 + r->by};
  h = ctr__fnv1a(h, d, sizeof d);
  h = ctr__fnv1a(h, d2, sizeof d2);
  h = ctr__fnv1a(h, i, sizeof i);
  h = ctr__fnv1a(h, r->gsel->angles_deg, sizeof(double) * (size_t)r->nsel);
  const double cr[2] = {r->c.center_min, r->c.center_max};
  const int64_t ci[2] = {r->c.center_method, r->o.center_row};
  h = ctr__fnv1a(h, cr, sizeof cr);
  h = ctr__fnv1a(h, ci, sizeof ci);
  if (r->fbp.kernel) h = ctr__fnv1a(h, r->fbp.kernel, strlen(r->fbp.kernel));
  if (r->flat && r->flat != r->ones)
    h = ctr__fnv1a(h, r->flat + r->row0 * r->W, sizeof(float) * (size_t)(r->nrows * r->W));
  if (r->dark) h = ctr__fnv1a(h, r->dark + r->row0 * r->W, sizeof(float) * (size_t)(r->nrows * r->W));
  if (r->in && with_input) h = ctr__stream_fp_input(h, r->in->path);
  h = ctr__stream_fp_output(h, out);
  return h;
}

/* ---- The run -------------------------------------------------------------------- */

/* Slices of a band into the writer's buffer in the file's dtype, with the
 * range and the uint16 clamps. On the compute thread between two bands, so
 * in pieces over every core: one thread converted 2048^3 to uint16 at
 * ~0.3 G values/s and took a file-to-file run from 1.08x to 2.8x its disk
 * floor. Each value's conversion is the sequential one; min, max and the
 * clamp counts do not depend on the order. In place (dst == v, memory
 * output), a narrower dtype is written behind the reads: sequential. */
static void deliver(srun *r, const float *v, int64_t n, void *dst, ctr__slab_record *rec) {
  const int64_t piece = (int64_t)1 << 16, npieces = (n + piece - 1) / piece;
  const ctr_dtype dt = r->o.out_dtype;
  const double off = r->o.out_offset, scale = r->o.out_scale;
  const int parallel = npieces > 1 && ((const void *)v != dst || dt == CTR_DTYPE_FLOAT32);
  float lo = INFINITY, hi = -INFINITY;
  int64_t below = 0, above = 0;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi) \
    reduction(+ : below, above) if (parallel)
  for (int64_t p = 0; p < npieces; p++) {
    const int64_t i0 = p * piece, i1 = i0 + piece < n ? i0 + piece : n;
    ctr__slab_record part = {0, INFINITY, -INFINITY, 0, 0};
    ctr__slab_range(&part, v + i0, i1 - i0);
    lo = part.min < lo ? part.min : lo;
    hi = part.max > hi ? part.max : hi;
    if (dt == CTR_DTYPE_FLOAT32) {
      if (dst != v) memcpy((float *)dst + i0, v + i0, sizeof(float) * (size_t)(i1 - i0));
    } else if (dt == CTR_DTYPE_FLOAT16) {
      uint16_t *o = dst;
      for (int64_t i = i0; i < i1; i++) o[i] = ctr__float_to_half(v[i]);
    } else {
      uint16_t *o = dst;
      for (int64_t i = i0; i < i1; i++) {
        double x = ((double)v[i] - off) * scale;
        if (!(x >= -0.5)) {
          x = 0.0;
          below++;
        } else if (x > 65535.5) {
          x = 65535.0;
          above++;
        }
        o[i] = ctr__float_to_u16((float)x);
      }
    }
  }
  rec->min = lo;
  rec->max = hi;
  if (dt == CTR_DTYPE_UINT16) {
    rec->below = below;
    rec->above = above;
  }
}

static ctr_status progress(srun *r, double f) { return ctr__progress(r->ctx, "fbp", f); }

/* The bands: compute on this thread, reads and writes on theirs. done[k]:
 * journalled already (skipped). `vol`: memory output instead of the writer. */
ctr_status ctr__fbp_run_bands(srun *r, const unsigned char *done, float *vol) {
  const int pag = r->margin > 0;
  const int64_t px = r->gout->p.nx * r->gout->p.ny;
  /* the bands to compute: [k0, k1) (a distributed rank's piece), or all */
  const int64_t k0 = r->k0, k1 = r->k1 > 0 ? r->k1 : r->nbands;
  const int64_t a = pag && k0 > 0 ? k0 - 1 : k0, b = pag && k1 < r->nbands ? k1 + 1 : k1;
  /* ring items: every band with Paganin (neighbours needed), else the bands
   * to compute */
  free(r->items);
  r->items = ctr__malloc(sizeof(int64_t) * (size_t)r->nbands, "band list");
  if (!r->items) return CTR_E_OUT_OF_MEMORY;
  r->nitems = 0;
  for (int64_t k = a; k < b; k++)
    if (pag || !done || !done[k]) r->items[r->nitems++] = k;
  int64_t total = 0;
  for (int64_t k = k0; k < k1; k++) total += !done || !done[k];
  if (!r->nitems) return CTR_OK;
  CTR_CHECK(ctr__ring_init(&r->ring, ring_slots(r), r->band_bytes, fill, r));
  r->have_ring = 1;
  CTR_CHECK(ctr__ring_start(&r->ring, 0, r->nitems));
  int64_t computed = 0;
  for (int64_t it = 0; it < r->nitems; it++) {
    const int64_t k = r->items[it];
    void *bufs[3] = {NULL, NULL, NULL};
    const int todo = k >= k0 && k < k1 && (!done || !done[k]);
    if (todo && r->dist) { /* claimed first: another rank may have taken the rest over */
      int granted = 0;
      CTR_CHECK(ctr__dist_claim(r->dist, k * r->band_slices, band_len(r, k) / r->by, &granted));
      if (!granted) break;
    }
    if (todo) {
      CTR_CHECK(progress(r, (double)computed / (double)total));
      /* item = band with Paganin */
      for (int d = -1; d <= 1; d++) {
        const int64_t j = it + d;
        if (d != 0 && (!pag || j < 0 || j >= r->nitems)) continue;
        CTR_CHECK(ctr__ring_get(&r->ring, j, &bufs[d + 1]));
      }
      const int64_t ns = band_len(r, k) / r->by, z = k * r->band_slices;
      int wb = -1;
      float *slices = vol ? vol + z * px : r->slices;
      if (!vol) {
        CTR_CHECK(ctr__writer_acquire(&r->writer, &wb));
        if (r->o.out_dtype == CTR_DTYPE_FLOAT32) slices = r->writer.buf[wb];
      }
      const double t0 = ctr__now_s();
      ctr__progress_scope("fbp", (double)computed / (double)total,
                          (double)(computed + 1) / (double)total);
      ctr_status st = band_reconstruct(r, k, bufs, slices);
      ctr__progress_scope_end();
      r->t_compute += ctr__now_s() - t0;
      if (st != CTR_OK) {
        if (wb >= 0) ctr__writer_giveback(&r->writer, wb);
        return st;
      }
      if (r->o.on_slices) r->o.on_slices(r->o.user, z, ns, r->gout->p.nx, r->gout->p.ny, slices);
      ctr__slab_record rec = {0, INFINITY, -INFINITY, 0, 0};
      if (vol) {
        deliver(r, slices, ns * px, slices, &rec);
      } else {
        deliver(r, slices, ns * px, r->writer.buf[wb], &rec);
        const ctr__writer_job job = {wb, z, ns, k, z, ns, rec};
        ctr__writer_submit(&r->writer, &job);
      }
      r->min = fminf(r->min, rec.min);
      r->max = fmaxf(r->max, rec.max);
      r->below += rec.below;
      r->above += rec.above;
      computed++;
    }
    /* release: with Paganin the previous band (the next one still needs it
     * no more), else this one */
    if (!pag) ctr__ring_put(&r->ring, it);
    else if (it > 0) ctr__ring_put(&r->ring, it - 1);
  }
  if (pag && !r->dist) ctr__ring_put(&r->ring, r->nitems - 1);
  ctr__ring_finish(&r->ring); /* a piece cut short abandons the reads ahead */
  return progress(r, 1.0);
}

/* A band buffer of n floats, page-locked when `pin` (a GPU correction copies
 * it up and down every band: at full speed and asynchronously; a failure to
 * pin only slows, *pinned says which). NULL when out of memory. */
static float *band_buffer(int64_t n, const char *what, int pin, int *pinned) {
  float *b = ctr__aligned_alloc(sizeof(float) * (size_t)n, what);
  *pinned = b && pin && ctr_host_register(b, sizeof(float) * (size_t)n) == CTR_OK;
  return b;
}

static void band_buffer_free(float *b, int pinned) {
  if (pinned) ctr_host_unregister(b);
  ctr__aligned_free(b);
}

void ctr__fbp_release(srun *r, ctr_status st) {
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", ctr_error_detail());
  if (r->have_ring) ctr__ring_free(&r->ring);
  if (r->have_writer) ctr__writer_free(&r->writer);
  ctr_parallel_free(r->gsel);
  ctr_parallel_free(r->gout);
  free(r->sel);
  free(r->items);
  band_buffer_free(r->sbuf, r->sbuf_pinned);
  ctr__aligned_free(r->sino2);
  band_buffer_free(r->trans, r->trans_pinned);
  ctr__aligned_free(r->slices);
  ctr__aligned_free(r->ones);
  if (st != CTR_OK) ctr__error_set(st, "%s", detail);
}

/* The geometry of what is read, and a flat field of ones when none is
 * given. */
ctr_status ctr__fbp_prepare_input(srun *r, const ctr_parallel_params *params) {
  CTR_CHECK(setup_geometry(r, params));
  if (!r->sino && !r->flat) {
    r->ones = ctr__aligned_alloc(sizeof(float) * (size_t)(r->W * r->H), "the flat field (ones)");
    if (!r->ones) return CTR_E_OUT_OF_MEMORY;
    for (int64_t i = 0; i < r->W * r->H; i++) r->ones[i] = 1.0f;
    r->flat = r->ones;
  }
  return CTR_OK;
}

/* The band plan (band_slices > 0: the interrupted run's, or rank 0's), buffers,
 * the centre (found again on a resumed run: the same data give the same axis)
 * and the output geometry. */
ctr_status ctr__fbp_prepare(srun *r, const ctr_parallel_params *params, int64_t band_slices) {
  CTR_CHECK(plan_bands(r, band_slices));
  int64_t rows_b = r->band_rows / r->by + 2 * r->margin, nb = r->nbins_b;
  const int64_t smax = r->band_slices > CENTRE_ROWS ? r->band_slices : CENTRE_ROWS;
  if (rows_b < CENTRE_ROWS) rows_b = CENTRE_ROWS;
  /* pinned for the GPU's sorting filter (the band's sinograms) and Paganin's
   * (the window of transmissions) */
  const int gpu = ctr_context_get_device(r->ctx) == CTR_DEVICE_CUDA;
  r->sbuf = band_buffer(smax * r->nsel * nb, "band sinograms",
                        gpu && r->c.stripe == CTR_STRIPE_SORTING, &r->sbuf_pinned);
  if (!r->sbuf) return CTR_E_OUT_OF_MEMORY;
  if (r->transmission) {
    r->trans = band_buffer(rows_b * r->nsel * nb, "band transmissions",
                           gpu && r->c.paganin_delta_beta > 0, &r->trans_pinned);
    if (!r->trans) return CTR_E_OUT_OF_MEMORY;
  }
  if (r->axis_found && !r->centre_known) CTR_CHECK(find_centre(r));
  CTR_CHECK(ctr__fbp_output_geometry(r, params));
  if (gpu && r->o.gpu_budget) { /* refused before anything is read (band_reconstruct's calls) */
    const int proj = !r->sino && !r->transmission && !r->sino_corr;
    int64_t chunk = 0;
    CTR_CHECK(ctr__fbp_gpu_chunk(&r->gout->p, proj ? ctr_dtype_size(r->dtype) : sizeof(float),
                                 proj ? r->band_slices : 0, r->band_slices, r->o.gpu_budget,
                                 "ctr_fbp_stream_options.gpu_budget", &chunk));
  }
  if (r->c.stitch_360) {
    r->sino2 = ctr__aligned_alloc(sizeof(float) * (size_t)(r->band_slices * r->gout->p.nbins *
                                                           r->gout->p.nangles), "stitched sinograms");
    if (!r->sino2) return CTR_E_OUT_OF_MEMORY;
  }
  return CTR_OK;
}

void ctr__fbp_report_fill(const srun *r, ctr_fbp_stream_report *rep) {
  if (!rep) return;
  rep->axis = r->axis_in;
  rep->axis_found = r->axis_found;
  rep->center_method = r->center_used;
  if (r->gout) {
    rep->nbins = r->gout->p.nbins;
    rep->nangles = r->gout->p.nangles;
    rep->nx = r->gout->p.nx;
    rep->ny = r->gout->p.ny;
  }
  rep->nslices = r->nslices;
  rep->bands = r->nbands;
  rep->band_slices = r->band_slices;
  rep->min = r->min;
  rep->max = r->max;
  rep->below = r->below;
  rep->above = r->above;
  rep->bad_input = r->counts.input;
  rep->bad_calibration = r->counts.calibration;
  rep->clamped = r->counts.clamped;
  rep->bad_output = r->counts.output;
  rep->dezingered = r->dezingered;
  rep->seconds_read = r->have_ring ? r->ring.busy : 0;
  rep->seconds_write = r->have_writer ? r->writer.busy_s : 0;
  rep->seconds_compute = r->t_compute;
}

ctr_status ctr__fbp_strict(const srun *r) {
  if (r->fbp.strict && r->counts.output)
    CTR_FAIL_FIELD(CTR_E_FORMAT, "ctr_fbp_options.strict",
                   "the slices: %lld " CTR__BAD_VALUES " (ctr_fbp_options.strict)",
                   (long long)r->counts.output);
  return CTR_OK;
}

/* The warnings of the data policy, once per run. */
void ctr__fbp_report_values(const ctr__fbp_run *r, const ctr_value_counts *c, const char *name) {
  const ctr_context *ctx = r->ctx;
  ctr_value_counts *to = r->caller_counts;
  if (to) {
    to->input += c->input;
    to->calibration += c->calibration;
    to->clamped += c->clamped;
    to->output += c->output;
    return;
  }
  ctr__values_report_kind(ctx, 0, c->input, name, CTR__BAD_VALUES, "replaced by 0");
  ctr__values_report_kind(ctx, 0, c->calibration, "flat/dark",
                          "pixels with flat <= dark or a non-finite flat or dark",
                          "their sinogram values set to 0");
  ctr__values_report_kind(ctx, 0, c->clamped, name,
                          "transmissions (p - dark) / (flat - dark) below 1e-6 or NaN",
                          "clamped to 1e-6");
  ctr__values_report_kind(ctx, 0, c->output, "the slices", CTR__BAD_VALUES, "stored as 0");
}

/* The caller's report (report_out): checked before the work, filled in its
 * version from the run's own (full) at the end; report is NULL without one. */
static ctr_status report_begin(ctr_fbp_stream_report *report_out, ctr_fbp_stream_report *full,
                               ctr_fbp_stream_report **report) {
  *full = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  *report = NULL;
  if (!report_out) return CTR_OK;
  CTR_CHECK(ctr__struct_check(&ctr__struct_fbp_stream_report, report_out));
  *report = full;
  return CTR_OK;
}

ctr_status ctr__fbp_open_input(srun *r, ctr_stack_reader *input, const float *flat,
                               const float *dark) {
  r->in = input;
  if (ctr__tuning(r->ctx)->direct_io < 0) ctr_stack_reader_set_direct_io(input, 0);
  ctr_stack_reader_set_read_threads(input, ctr__tuning(r->ctx)->read_threads);
  const ctr_stack_info *ii = ctr_stack_reader_get_info(input);
  r->W = ii->width;
  if (r->sino) {
    r->H = ii->count;
    r->NP = ii->height;
    r->dtype = CTR_DTYPE_FLOAT32;
  } else {
    r->H = ii->height;
    r->NP = ii->count;
    r->dtype = ii->dtype;
    if (r->dtype != CTR_DTYPE_FLOAT32 && r->dtype != CTR_DTYPE_UINT16)
      CTR_FAIL(CTR_E_FORMAT, "'%s' holds %s projections: expected float32 or uint16",
               input->path, ctr_dtype_name(r->dtype));
    r->flat = flat;
    r->dark = dark;
  }
  return CTR_OK;
}

ctr_stack_info ctr__fbp_output_info(const srun *r) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = r->gout->p.nx;
  info.height = r->gout->p.ny;
  info.count = r->nslices;
  info.dtype = r->o.out_dtype;
  info.spacing[0] = info.spacing[1] = r->gout->p.voxel * r->gout->p.pixel_size;
  info.spacing[2] = r->gout->p.pixel_size / r->bx * r->by;
  return info;
}

ctr_status ctr__fbp_writer_setup(srun *r) {
  const int64_t px = r->gout->p.nx * r->gout->p.ny;
  if (r->o.out_dtype != CTR_DTYPE_FLOAT32) {
    r->slices = ctr__aligned_alloc(sizeof(float) * (size_t)(r->band_slices * px), "band slices");
    if (!r->slices) return CTR_E_OUT_OF_MEMORY;
  }
  CTR_CHECK(ctr__writer_init(&r->writer, 3, (size_t)(r->band_slices * px) *
                                                ctr_dtype_size(r->o.out_dtype),
                             r->nbands));
  r->have_writer = 1;
  r->writer.dtype = r->o.out_dtype;
  r->writer.slice_bytes = (size_t)px * ctr_dtype_size(r->o.out_dtype);
  return CTR_OK;
}

/* ---- The modality's side of the streamed executor (stream/executor.h) ---- */

/* The run and the parameters it was called with. */
typedef struct fbp_exec {
  srun *r;
  const ctr_parallel_params *params;
} fbp_exec;

static ctr_status op_fingerprint(void *self, const ctr__stream_output *o, uint64_t *fp) {
  const fbp_exec *e = self;
  *fp = ctr__fbp_fingerprint(e->r, e->params, o->out, o->fmt, 1);
  return CTR_OK;
}

static ctr_status op_prepare(void *self, const ctr__stream_output *o) {
  const fbp_exec *e = self;
  e->r->out_fmt = o->fmt;
  return ctr__fbp_prepare_input(e->r, e->params);
}

static ctr_status op_plan(void *self, const ctr__journal *resumed, ctr__journal_layout *layout,
                          ctr_stack_info *info, ctr__stream_units *units) {
  const fbp_exec *e = self;
  srun *r = e->r;
  /* a resumed run repeats the interrupted run's bands */
  CTR_CHECK(ctr__fbp_prepare(r, e->params, resumed ? resumed->slab_slices : 0));
  if (resumed && (resumed->nslabs != r->nbands || resumed->views_per_batch != r->nsel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "cannot resume: '%s' records %lld bands of %lld slices, this run makes %lld",
             resumed->path, (long long)resumed->nslabs, (long long)resumed->slab_slices,
             (long long)r->nbands);
  *layout = (ctr__journal_layout){r->band_slices, r->nsel, 0, 0, r->nbands, 0, 1};
  *info = ctr__fbp_output_info(r);
  *units = (ctr__stream_units){"band", r->band_slices, 0, r->band_slices};
  return CTR_OK;
}

static ctr_status op_setup(void *self, const unsigned char *done, ctr__writer **writer) {
  const fbp_exec *e = self;
  (void)done;
  CTR_CHECK(ctr__fbp_writer_setup(e->r));
  *writer = &e->r->writer;
  return CTR_OK;
}

static ctr_status op_run(void *self, const unsigned char *done) {
  const fbp_exec *e = self;
  return ctr__fbp_run_bands(e->r, done, NULL);
}

/* After the bands (file or memory): the strict check and the warnings. */
static ctr_status finish_values(const srun *r) {
  CTR_CHECK(ctr__fbp_strict(r));
  ctr__fbp_report_values(r, &r->counts, r->in ? r->in->path : "projections");
  return CTR_OK;
}

static ctr_status op_finish(void *self) {
  const fbp_exec *e = self;
  return finish_values(e->r);
}

static const ctr__stream_ops k_fbp_ops = {"ctr_fbp_stream_options.resume", op_prepare, op_fingerprint,
                                          op_plan, op_setup, op_run, op_finish};

static ctr_status stream_local(ctr_context *ctx, const ctr_parallel_params *params,
                               const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                               const float *flat, const float *dark,
                               const ctr__fbp_acc_slices *acc,
                               const ctr_value_counts *counts, const char *out,
                               ctr_file_format out_format, ctr_fbp_stream_report *report_out) {
  const double t_start = ctr__now_s();
  srun r;
  memset(&r, 0, sizeof r);
  r.min = INFINITY;
  r.max = -INFINITY;
  ctr__stream_output o;
  double t_setup = 0;
  ctr_fbp_stream_report full, *report;
  CTR_CHECK(report_begin(report_out, &full, &report));
  if (!input || !out || !*out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream: input and out are required");
  r.ctx = ctx;
  CTR_CHECK(ctr__fbp_resolve(&r, opts));
  CTR_CHECK(ctr__fbp_open_input(&r, input, flat, dark));
  if (acc) r.acc = *acc;
  if (counts) r.counts = *counts;
  fbp_exec e = {&r, params};
  const ctr_status st = ctr__stream_execute(&k_fbp_ops, &e, ctx, out, out_format, r.o.resume,
                                            r.o.overwrite, &o, &t_setup);
  if (t_setup > 0) t_setup -= t_start;
  ctr__fbp_report_fill(&r, report);
  if (report) {
    report->bands_resumed = o.nkept;
    report->min = fminf(report->min, o.kept.min);
    report->max = fmaxf(report->max, o.kept.max);
    report->below += o.kept.below;
    report->above += o.kept.above;
    report->seconds_setup = t_setup;
    report->seconds_total = ctr__now_s() - t_start;
  }
  ctr__fbp_release(&r, st);
  const int resumable = ctr__stream_output_end(&o, st);
  if (report) {
    report->resumable = resumable;
    ctr__struct_store(&ctr__struct_fbp_stream_report, report_out, report);
  }
  ctr__stream_output_free(&o);
  return st;
}

ctr_status ctr__fbp_stream_local(ctr_context *ctx, const ctr_parallel_params *params,
                                 const ctr_fbp_stream_options *opts, ctr_stack_reader *input,
                                 const float *flat, const float *dark, const char *out,
                                 ctr_file_format out_format, ctr_fbp_stream_report *report) {
  return stream_local(ctx, params, opts, input, flat, dark, NULL, NULL, out, out_format, report);
}

ctr_status ctr__fbp_stream_accumulated(ctr_context *ctx, const ctr_parallel_params *params,
                                       const ctr_fbp_stream_options *opts,
                                       ctr_stack_reader *input, const float *flat,
                                       const float *dark, const ctr__fbp_acc_slices *acc,
                                       const ctr_value_counts *counts, const char *out,
                                       ctr_file_format out_format, ctr_fbp_stream_report *report) {
  if (!acc || !acc->get)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr__fbp_stream_accumulated: no accumulated volume");
  return stream_local(ctx, params, opts, input, flat, dark, acc, counts, out, out_format,
                      report);
}

ctr_status ctr_fbp_stream_memory(ctr_context *ctx, const ctr_parallel_params *params,
                                 const ctr_fbp_stream_options *opts, const ctr_array *input,
                                 const float *flat, const float *dark, ctr_array *slices,
                                 ctr_fbp_stream_report *report_out) {
  const double t_start = ctr__now_s();
  ctr_status st = CTR_OK;
  srun r;
  memset(&r, 0, sizeof r);
  r.min = INFINITY;
  r.max = -INFINITY;
  ctr_fbp_stream_report full, *report;
  CTR_CHECK(report_begin(report_out, &full, &report));
  if (!input || !input->data || input->ndim != 3 || !slices ||
      !slices->data || slices->dtype != CTR_DTYPE_FLOAT32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_memory: input (3D) and slices (float32) "
             "are required");
  r.ctx = ctx;
  r.mem = input;
  CTR_CHECK(ctr__fbp_resolve(&r, opts));
  if (r.o.resume || r.o.out_dtype != CTR_DTYPE_FLOAT32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_memory: ctr_fbp_stream_options.resume and "
             "out_dtype apply to files only");
  r.W = input->dims[0];
  if (r.sino) {
    r.NP = input->dims[1];
    r.H = input->dims[2];
  } else {
    r.H = input->dims[1];
    r.NP = input->dims[2];
    r.flat = flat;
    r.dark = dark;
  }
  r.dtype = input->dtype;
  if (r.dtype != CTR_DTYPE_FLOAT32 && (r.sino || r.dtype != CTR_DTYPE_UINT16))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fbp_stream_memory: the input is %s: expected float32 "
             "(or uint16 projections)", ctr_dtype_name(r.dtype));
  CTR_CHECK_GOTO(st, ctr__fbp_prepare_input(&r, params));
  CTR_CHECK_GOTO(st, ctr__fbp_prepare(&r, params, 0));
  const int64_t want[3] = {r.gout->p.nx, r.gout->p.ny, r.nslices};
  if (slices->ndim != 3 || slices->dims[0] != want[0] || slices->dims[1] != want[1] ||
      slices->dims[2] != want[2])
    CTR_FAIL_GOTO(st, CTR_E_SIZE_MISMATCH, "ctr_fbp_stream_memory: slices are %lld x %lld x %lld, "
                  "expected %lld x %lld x %lld", (long long)slices->dims[0],
                  (long long)slices->dims[1], (long long)slices->dims[2], (long long)want[0],
                  (long long)want[1], (long long)want[2]);
  CTR_CHECK_GOTO(st, ctr__fbp_run_bands(&r, NULL, slices->data));
  CTR_CHECK_GOTO(st, finish_values(&r));
cleanup:
  ctr__fbp_report_fill(&r, report);
  if (report) report->seconds_total = ctr__now_s() - t_start;
  ctr__fbp_release(&r, st);
  if (report) ctr__struct_store(&ctr__struct_fbp_stream_report, report_out, report);
  return st;
}

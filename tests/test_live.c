/* The live mode (docs/synchrotron.md, "Live mode"): projection sources and
 * the live FBP.
 *  - a finished DXchange file as a source: its flats, darks, projections in
 *    order, then the end;
 *  - previews: after every projection the FBP of the rows so far; once all
 *    arrived, the final volume's slices of those rows (to rounding), and
 *    short of that, not;
 *  - the final volume: byte for byte the offline ctr_fbp_stream of the file;
 *  - a DXchange file growing under SWMR (a writer process at a fixed rate):
 *    followed to the same bytes; the writer killed mid-scan: the previews
 *    complete, the end refused naming how many arrived, nothing written;
 *  - a ZeroMQ socket: every malformed frame of the message format dropped
 *    and counted by cause, never used; a scan missing a projection refused.
 * Loopback (127.0.0.1, a port the system chooses) and a scratch folder only. */
#include "harness.h"
#include "scratch_dir.h"
#include "io/io_source.h"

#include <ctrecon.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if CTR_HAVE_ZMQ
#include <zmq.h>
#endif

/* Built twice: for the CPU (test_live) and, with CTR_TEST_CUDA, for the
 * CUDA backend (test_gpu_live: the same checks on a GPU context, skipped
 * without one). The previews' backprojection and the final run both run on
 * the context's backend. */
#ifdef CTR_TEST_CUDA
#define TEST_NAME "test_gpu_live"
#define TEST_DEVICE CTR_DEVICE_CUDA
#define PREVIEW_TOLERANCE 5e-3 /* the previews' kernel and the pipeline's may differ (a GPU's
                                  interpolation); not measured yet: no GPU here */
#else
#define TEST_NAME "test_live"
#define TEST_DEVICE CTR_DEVICE_CPU
#define PREVIEW_TOLERANCE 1e-5 /* the same sums in another order */
#endif

#define W 48
#define H 8
#define NP 60
#define AXIS 23.6

static uint16_t *g_proj, *g_flats, *g_darks; /* NP, 2, 2 images */
static double g_theta[NP];
static float g_flat[W * H], g_dark[W * H];   /* averaged as `ctrecon fbp` averages them */
static ctr_context *g_ctx;

/* The phantom's projections at na angles theta (degrees) as uint16 counts
 * between g_dark and g_flat: na images of W x H into proj. */
static void project(int na, const double *theta, uint16_t *proj) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = W;
  p.nangles = na;
  p.angles_deg = theta;
  p.axis = AXIS;
  ctr_parallel_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  CHECK_OK(ctr_phantom_shepp_logan(18.0, 0.05, &ph));
  float *sino = malloc(sizeof(float) * W * (size_t)na * H);
  double z[H];
  for (int s = 0; s < H; s++) z[s] = -3.5 + s;
  CHECK_OK(ctr_phantom_sinogram(ph, g, H, z, 2, sino));
  for (int a = 0; a < na; a++)
    for (int y = 0; y < H; y++)
      for (int b = 0; b < W; b++) {
        const double t = exp(-sino[((size_t)y * na + a) * W + b] * 0.05);
        const double v = g_dark[y * W + b] + (g_flat[y * W + b] - g_dark[y * W + b]) * t;
        proj[((size_t)a * H + y) * W + b] = (uint16_t)lround(v);
      }
  free(sino);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
}

static void make_data(void) {
  g_proj = malloc(sizeof(uint16_t) * W * H * NP);
  g_flats = malloc(sizeof(uint16_t) * W * H * 2);
  g_darks = malloc(sizeof(uint16_t) * W * H * 2);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < W * H; i++) {
      g_flats[k * W * H + i] = (uint16_t)(20000 + 37 * ((i * 7) % 11) + k * 5);
      g_darks[k * W * H + i] = (uint16_t)(100 + (i % 5) + k);
    }
  float tmp[2 * W * H];
  for (int i = 0; i < 2 * W * H; i++) tmp[i] = g_flats[i];
  CHECK_OK(ctr_flatfield_average(tmp, CTR_DTYPE_FLOAT32, W * H, 2, g_flat));
  for (int i = 0; i < 2 * W * H; i++) tmp[i] = g_darks[i];
  CHECK_OK(ctr_flatfield_average(tmp, CTR_DTYPE_FLOAT32, W * H, 2, g_dark));
  for (int a = 0; a < NP; a++) g_theta[a] = a * 180.0 / NP;
  project(NP, g_theta, g_proj);
}

static ctr_parallel_params params(void) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT; /* nbins, nangles, angles: the source's */
  p.axis = AXIS;
  p.pixel_size = 0.01;
  return p;
}

/* The offline run of the finished file of na projections at angles theta,
 * as `ctrecon fbp` makes it (so: the stream options, NULL: the defaults). */
static ctr_status offline_scan(const char *scan, int na, const double *theta,
                               const ctr_fbp_stream_options *so, const char *out) {
  char path[600];
  snprintf(path, sizeof path, "%s:/exchange/data", scan);
  ctr_stack_reader *r = NULL;
  CTR_CHECK(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r));
  ctr_parallel_params p = params();
  p.nbins = W;
  p.nangles = na;
  p.angles_deg = theta;
  const ctr_status st = ctr_fbp_stream(g_ctx, &p, so, r, g_flat, g_dark, out, CTR_FORMAT_AUTO, NULL);
  ctr_stack_close(r);
  return st;
}

static ctr_status offline_with(const char *scan, const ctr_fbp_stream_options *so, const char *out) {
  return offline_scan(scan, NP, g_theta, so, out);
}

static ctr_status offline(const char *scan, const char *out) {
  return offline_with(scan, NULL, out);
}

/* The same bytes as the offline volume; when not, how far (for the
 * message: a filter's rounding differs everywhere by ~1e-7, a sum's order
 * by less than that in some voxels, a wrong angle or slice by far more). */
static int same_volume(const char *got, const char *want) {
  if (same_files(got, want)) return 1;
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  void *a = NULL, *b = NULL;
  if (ctr_stack_load(got, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &a) == CTR_OK &&
      ctr_stack_load(want, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &b) == CTR_OK) {
    const int64_t n = info.width * info.height * info.count;
    int64_t differ = 0;
    double worst = 0, top = 0;
    for (int64_t i = 0; i < n; i++) {
      const double x = ((float *)a)[i], y = ((float *)b)[i];
      differ += x != y;
      if (fabs(x - y) > worst) worst = fabs(x - y);
      if (fabs(y) > top) top = fabs(y);
    }
    printf("%s against %s: %lld of %lld voxels differ, the largest by %.3g (values up to %.3g)\n",
           got, want, (long long)differ, (long long)n, worst, top);
  }
  free(a);
  free(b);
  ctr_error_clear();
  return 0;
}

/* Steps until the scan ends (or `limit` steps); the steps that added projections. */
static int run_live(ctr_fbp_live *l, ctr_live_state *s, int limit) {
  int steps = 0;
  for (int i = 0; i < limit; i++) {
    CHECK_OK(ctr_fbp_live_step(l, 0.1, s));
    steps += s->updated > 0;
    if (s->ended) break;
  }
  return steps;
}

static float *load(const char *path, int64_t n) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  void *data = NULL;
  if (ctr_stack_load(path, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &info, &data) != CTR_OK) return NULL;
  if (info.width * info.height * info.count != n) {
    free(data);
    return NULL;
  }
  return data;
}

#if CTR_HAVE_HDF5
static void test_finished_source(void) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.follow = 0;
  ctr_source *s = NULL;
  CHECK_OK(ctr_source_open(P("scan.h5"), &o, &s));
  REQUIRE(s);
  int flats = 0, darks = 0, proj = 0, in_order = 1, angles = 1, pixels = 1;
  ctr_source_event ev;
  for (;;) {
    ctr_frame f = CTR_FRAME_INIT;
    CHECK_OK(ctr_source_next(s, 0, &f, &ev));
    if (ev != CTR_SOURCE_FRAME) break;
    if (f.kind == CTR_FRAME_FLAT) flats++;
    else if (f.kind == CTR_FRAME_DARK) darks++;
    else {
      in_order &= f.index == proj && flats == 2 && darks == 2;
      angles &= f.angle_deg == g_theta[f.index];
      pixels &= !memcmp(f.pixels, g_proj + (size_t)f.index * W * H, sizeof(uint16_t) * W * H);
      proj++;
    }
  }
  CHECK(ev == CTR_SOURCE_ENDED);
  CHECK(flats == 2 && darks == 2 && proj == NP);
  CHECK(in_order && angles && pixels);
  ctr_source_status st = CTR_SOURCE_STATUS_INIT;
  CHECK_OK(ctr_source_get_status(s, &st));
  CHECK(st.count == NP && st.projections == NP && st.width == W && st.height == H && st.ended);
  CHECK(st.dropped_header + st.dropped_size + st.dropped_duplicate + st.dropped_order == 0);
  ctr_source_close(s);
}

/* The preview writer thread: previews queued faster than it writes them are
 * superseded, not written, and the queue never waits for a write; after a
 * flush the files hold the last state queued; a failed write is reported. */
static void test_preview_writer(void) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.follow = 0;
  ctr_source *s = NULL;
  CHECK_OK(ctr_source_open(P("scan.h5"), &o, &s));
  ctr_fbp_live *l = NULL;
  ctr_parallel_params p = params();
  p.nx = p.ny = 384; /* planes large enough that a write outlasts many queue calls */
  const int64_t rows[2] = {1, 6};
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.preview_rows = rows;
  lo.npreview = 2;
  CHECK_OK(ctr_fbp_live_open(g_ctx, s, &p, &lo, &l));
  REQUIRE(l);
  CHECK_OK(ctr_fbp_live_queue_preview(l, P("qw"), 1, 0)); /* nothing arrived: nothing queued */
  CHECK_OK(ctr_fbp_live_flush_preview(l));
  CHECK(!exists(P("qw.h5")));
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  int64_t queued = 0;
  for (int i = 0; i < 100 && !st.ended; i++) { /* a preview due after every step */
    CHECK_OK(ctr_fbp_live_step(l, 0.1, &st));
    CHECK_OK(ctr_fbp_live_queue_preview(l, P("qw"), queued == 0, 0));
    queued++;
  }
  CHECK(st.ended == 1 && st.projections == NP);
  for (int i = 0; i < 40; i++, queued++) /* a burst: the writer takes a few at most */
    CHECK_OK(ctr_fbp_live_queue_preview(l, P("qw"), 0, 0));
  CHECK_OK(ctr_fbp_live_flush_preview(l));
  /* a first queue over existing files: refused at once, nothing queued */
  CHECK_FAILS(ctr_fbp_live_queue_preview(l, P("qw"), 1, 0), CTR_E_INVALID_ARGUMENT, "overwrite");
  CHECK_OK(ctr_fbp_live_step(l, 0, &st)); /* after the end: takes nothing, counts */
  CHECK_MSG(st.preview_writes + st.preview_superseded == queued,
            "each queued preview is written or superseded");
  CHECK_MSG(st.preview_superseded > 0 && st.preview_writes >= 1,
            "previews queued while the writer was busy are superseded, the steps not held");
  CHECK(st.write_s > 0);
  CHECK(exists(P("qw_row00001.png")) && exists(P("qw_row00006.png")));
  const int64_t plane = p.nx * p.ny;
  float *pv = load(P("qw.h5:/preview"), plane * 2), *last = malloc(sizeof(float) * (size_t)plane);
  REQUIRE(pv && last);
  for (int k = 0; k < 2; k++) {
    CHECK_OK(ctr_fbp_live_preview(l, k, last, NULL));
    CHECK_MSG(!memcmp(last, pv + plane * k, sizeof(float) * (size_t)plane),
              "the files hold the last state queued");
  }
  /* a write that fails (no such folder) is reported by the flush, once */
  CHECK_OK(ctr_fbp_live_queue_preview(l, P("no_such_folder/qw"), 0, 0));
  CHECK_FAILS(ctr_fbp_live_flush_preview(l), CTR_E_IO, "no_such_folder");
  CHECK_OK(ctr_fbp_live_flush_preview(l));
  /* the synchronous write waits for the queue: it lands last */
  CHECK_OK(ctr_fbp_live_queue_preview(l, P("qw"), 0, 0));
  CHECK_OK(ctr_fbp_live_write_preview(l, P("qw"), 0, 0));
  free(pv);
  free(last);
  ctr_fbp_live_free(l);
  ctr_source_close(s);
}

/* Previews against the final volume; the final volume against the offline run. */
static void test_previews_and_final(void) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.follow = 0;
  ctr_source *s = NULL;
  CHECK_OK(ctr_source_open(P("scan.h5"), &o, &s));
  ctr_fbp_live *l = NULL;
  const ctr_parallel_params p = params();
  const int64_t rows[2] = {2, 5};
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.preview_rows = rows;
  lo.npreview = 2;
  CHECK_OK(ctr_fbp_live_open(g_ctx, s, &p, &lo, &l));
  REQUIRE(l);
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  CHECK_OK(ctr_fbp_live_step(l, 0.1, &st)); /* a first batch: not all */
  CHECK(st.projections > 0 && st.projections < NP && st.npreview == 2 && st.nx == W);
  float part[W * W], full[W * W];
  CHECK_OK(ctr_fbp_live_preview(l, 1, part, NULL));
  run_live(l, &st, 100);
  CHECK(st.ended == 1 && st.projections == NP && st.expected == NP);
  CHECK_OK(ctr_fbp_live_write_preview(l, P("pv"), 1, 0));
  CHECK(exists(P("pv_row00002.png")) && exists(P("pv_row00005.png")) && exists(P("pv.h5")));
  /* written again: replaced (its own); a first write over them refused */
  CHECK_OK(ctr_fbp_live_write_preview(l, P("pv"), 0, 0));
  CHECK_FAILS(ctr_fbp_live_write_preview(l, P("pv"), 1, 0), CTR_E_INVALID_ARGUMENT, "overwrite");
  CHECK_OK(ctr_fbp_live_finish(l, P("live.nrrd"), CTR_FORMAT_AUTO, NULL));
  CHECK_OK(offline(P("scan.h5"), P("offline.nrrd")));
  CHECK_MSG(same_files(P("live.nrrd"), P("offline.nrrd")),
            "the live run's volume is the offline run's, byte for byte");
  float *vol = load(P("live.nrrd"), (int64_t)W * W * H);
  float *pv = load(P("pv.h5:/preview"), (int64_t)W * W * 2);
  REQUIRE(vol && pv);
  for (int k = 0; k < 2; k++) {
    int64_t row = -1;
    CHECK_OK(ctr_fbp_live_preview(l, k, full, &row));
    CHECK(row == rows[k]);
    CHECK(!memcmp(full, pv + (size_t)k * W * W, sizeof full)); /* the file holds the previews */
    double e = 0, n = 0, ep = 0;
    const float *ref = vol + (size_t)row * W * W;
    for (int i = 0; i < W * W; i++) {
      e += (full[i] - ref[i]) * (double)(full[i] - ref[i]);
      n += ref[i] * (double)ref[i];
      if (k == 1) ep += (part[i] - ref[i]) * (double)(part[i] - ref[i]);
    }
    CHECK_MSG(sqrt(e / n) < PREVIEW_TOLERANCE,
              "preview of row %lld: relative RMS %.3g from the final slice",
              (long long)row, sqrt(e / n));
    if (k == 1)
      CHECK_MSG(sqrt(ep / n) > 0.05, "a preview of part of the scan differs (%.3g)", sqrt(ep / n));
  }
  free(vol);
  free(pv);
  ctr_fbp_live_free(l);
  ctr_source_close(s);
}

/* A finished file's source that lets through g_allow more projections
 * (each step takes what is there, up to its batch): the steps' chunks of
 * projections as the test says. */
static const ctr__source_ops *g_inner;
static ctr__source_ops g_throttled;
static int64_t g_allow;
static ctr_status throttled_next(void *impl, double wait_s, ctr__raw_frame *f, int *got) {
  *got = 0;
  if (g_allow <= 0) return CTR_OK;
  CTR_CHECK(g_inner->next(impl, wait_s, f, got));
  if (*got && !f->end && f->kind == CTR_FRAME_PROJECTION) g_allow--;
  return CTR_OK;
}

/* The full volume summed as the projections arrive (accumulate), of the
 * finished file `scan`'s source: `so` the final run's options (NULL: the
 * defaults), `axis` the parameters' axis; `chunks` (nchunks of them, in
 * turn; NULL: what each step finds) the projections each step takes;
 * *state the last step's. */
static ctr_status live_accumulated_chunks(ctr_live_accumulate mode, const char *scan,
                                          const ctr_fbp_stream_options *so, double axis,
                                          uint64_t host_budget, const int *chunks, int nchunks,
                                          const char *out, ctr_live_state *state) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.follow = 0;
  ctr_source *s = NULL;
  CTR_CHECK(ctr_source_open(scan, &o, &s));
  if (chunks) {
    g_inner = s->ops;
    g_throttled = *s->ops;
    g_throttled.next = throttled_next;
    s->ops = &g_throttled;
  }
  ctr_fbp_stream_options sd = CTR_FBP_STREAM_OPTIONS_INIT;
  if (so) sd = *so;
  sd.host_budget = host_budget;
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.stream = &sd;
  lo.accumulate = mode;
  ctr_parallel_params p = params();
  p.axis = axis;
  ctr_fbp_live *l = NULL;
  ctr_status st = ctr_fbp_live_open(g_ctx, s, &p, &lo, &l);
  *state = (ctr_live_state)CTR_LIVE_STATE_INIT;
  int64_t expected = 0;
  g_allow = chunks ? chunks[0] : 0;
  for (int i = 0; st == CTR_OK && i < 10000 && !state->ended; i++) {
    st = ctr_fbp_live_step(l, chunks ? 0.0 : 0.1, state);
    if (!chunks || st != CTR_OK) continue;
    /* the chunk taken whole (the flats and darks come with the first) */
    expected += chunks[i % nchunks];
    if (state->expected && expected > state->expected) expected = state->expected;
    CHECK_MSG(state->projections == expected, "step %d took %lld projections, not %lld", i,
              (long long)state->projections, (long long)expected);
    g_allow = state->expected && state->projections >= state->expected ? 1 << 30
                                                                       : chunks[(i + 1) % nchunks];
  }
  if (st == CTR_OK) st = ctr_fbp_live_finish(l, out, CTR_FORMAT_AUTO, NULL);
  ctr_fbp_live_free(l);
  ctr_source_close(s);
  return st;
}

static ctr_status live_accumulated(ctr_live_accumulate mode, const ctr_fbp_stream_options *so,
                                   double axis, uint64_t host_budget, const char *out,
                                   ctr_live_state *state) {
  return live_accumulated_chunks(mode, P("scan.h5"), so, axis, host_budget, NULL, 0, out, state);
}

/* The full volume during the acquisition: summed projection after
 * projection in the streamed run's order, its bytes are the offline run's
 * (the defaults; rows, nearest interpolation and uint16 output; a
 * window); a run that cannot be summed is refused naming the option, or
 * falls back under AUTO. */
static void test_accumulate(void) {
  ctr_live_state st;
  CHECK_OK(live_accumulated(CTR_LIVE_ACCUMULATE_ON, NULL, AXIS, 0, P("acc.nrrd"), &st));
  CHECK_MSG(st.ended == 1 && st.accumulated == NP, "summed: %lld of %d",
            (long long)st.accumulated, NP);
  CHECK_MSG(same_volume(P("acc.nrrd"), P("offline.nrrd")),
            "the volume summed during the acquisition is the offline run's, byte for byte");
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  fo.interp = CTR_FBP_NEAREST;
  fo.window = CTR_WINDOW_HANN;
  ctr_fbp_stream_options so = CTR_FBP_STREAM_OPTIONS_INIT;
  so.fbp = &fo;
  so.row0 = 2;
  so.nrows = 5;
  so.batch = 2; /* bands of 2 slices: the copy of each band from the volume */
  so.out_dtype = CTR_DTYPE_UINT16;
  so.out_scale = 20000;
  CHECK_OK(offline_with(P("scan.h5"), &so, P("offline_u16.nrrd")));
  CHECK_OK(live_accumulated(CTR_LIVE_ACCUMULATE_ON, &so, AXIS, 0, P("acc_u16.nrrd"), &st));
  CHECK(st.accumulated == NP);
  CHECK_MSG(same_volume(P("acc_u16.nrrd"), P("offline_u16.nrrd")),
            "... with rows 2:7, nearest, hann and uint16 output too");
  /* refused under ON, naming the option and why; AUTO falls back */
  CHECK_FAILS(live_accumulated(CTR_LIVE_ACCUMULATE_ON, NULL, CTR_AXIS_AUTO, 0, P("x.nrrd"), &st),
              CTR_E_INVALID_ARGUMENT, "ctr_live_options.accumulate");
  CHECK(strstr(ctr_error_detail(), "CTR_AXIS_AUTO") != NULL);
  CHECK_FAILS(live_accumulated(CTR_LIVE_ACCUMULATE_ON, NULL, AXIS, 4096, P("x.nrrd"), &st),
              CTR_E_INVALID_ARGUMENT, "host memory budget");
  CHECK(!exists(P("x.nrrd")));
  CHECK_OK(live_accumulated(CTR_LIVE_ACCUMULATE_AUTO, NULL, AXIS, 4096, P("auto.nrrd"), &st));
  CHECK_MSG(st.ended == 1 && st.accumulated == 0 && same_files(P("auto.nrrd"), P("offline.nrrd")),
            "AUTO without the memory: the volume after the scan, the same bytes");
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.stripe = CTR_STRIPE_SORTING;
  so = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  so.corrections = &c;
  CHECK_FAILS(live_accumulated(CTR_LIVE_ACCUMULATE_ON, &so, AXIS, 0, P("x.nrrd"), &st),
              CTR_E_INVALID_ARGUMENT, "corrections");
}

/* The sum continued over chunks of any size: projections 1, 7, 32, 3, 13 ...
 * at a time give the offline bytes (the defaults; rows 2:7 in bands of 2 and
 * 1 slices, nearest, hann, uint16), and so does a scan of 2100 angles,
 * whose second launch group of the GPU's kernels (past 2048 angles) starts
 * inside a chunk. */
static void test_accumulate_chunks(void) {
  static const int chunks[] = {1, 7, 32, 3, 13, 32, 2, 31};
  const int nc = (int)(sizeof chunks / sizeof chunks[0]);
  ctr_live_state st;
  CHECK_OK(live_accumulated_chunks(CTR_LIVE_ACCUMULATE_ON, P("scan.h5"), NULL, AXIS, 0, chunks, nc,
                                   P("acc_c.nrrd"), &st));
  CHECK_MSG(st.accumulated == NP && same_volume(P("acc_c.nrrd"), P("offline.nrrd")),
            "chunks of 1 to 32 projections: the offline bytes (%lld summed)",
            (long long)st.accumulated);
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  fo.interp = CTR_FBP_NEAREST;
  fo.window = CTR_WINDOW_HANN;
  ctr_fbp_stream_options so = CTR_FBP_STREAM_OPTIONS_INIT;
  so.fbp = &fo;
  so.row0 = 2;
  so.nrows = 5;
  so.batch = 2;
  so.out_dtype = CTR_DTYPE_UINT16;
  so.out_scale = 20000;
  CHECK_OK(offline_with(P("scan.h5"), &so, P("offline_u16c.nrrd")));
  CHECK_OK(live_accumulated_chunks(CTR_LIVE_ACCUMULATE_ON, P("scan.h5"), &so, AXIS, 0, chunks + 1,
                                   nc - 1, P("acc_u16c.nrrd"), &st));
  CHECK_MSG(st.accumulated == NP && same_volume(P("acc_u16c.nrrd"), P("offline_u16c.nrrd")),
            "... rows 2:7 in bands of 2, nearest, hann, uint16 out");
  /* 2100 angles: 2048 = 66 x 31 + 2, so the chunks of 31 cross it */
  enum { NL = 2100 };
  double *theta = malloc(sizeof(double) * NL);
  uint16_t *proj = malloc(sizeof(uint16_t) * W * H * (size_t)NL);
  REQUIRE(theta && proj);
  for (int a = 0; a < NL; a++) theta[a] = a * 180.0 / NL;
  project(NL, theta, proj);
  ctr__swmr_writer *w = NULL;
  CHECK_OK(ctr__swmr_writer_create(P("long.h5"), W, H, CTR_DTYPE_UINT16, g_flats, 2, g_darks, 2,
                                   theta, NL, 0, &w));
  for (int a = 0; w && a < NL; a++) CHECK_OK(ctr__swmr_writer_append(w, proj + (size_t)a * W * H));
  CHECK_OK(ctr__swmr_writer_close(w));
  CHECK_OK(offline_scan(P("long.h5"), NL, theta, NULL, P("offline_long.nrrd")));
  const int c31[] = {31};
  CHECK_OK(live_accumulated_chunks(CTR_LIVE_ACCUMULATE_ON, P("long.h5"), NULL, AXIS, 0, c31, 1,
                                   P("acc_long.nrrd"), &st));
  CHECK_MSG(st.accumulated == NL && same_volume(P("acc_long.nrrd"), P("offline_long.nrrd")),
            "2100 angles in chunks of 31 (across the GPU's launch groups): the offline bytes");
  CHECK_OK(offline_scan(P("long.h5"), NL, theta, &so, P("offline_long_u16.nrrd")));
  CHECK_OK(live_accumulated_chunks(CTR_LIVE_ACCUMULATE_ON, P("long.h5"), &so, AXIS, 0, chunks, nc,
                                   P("acc_long_u16.nrrd"), &st));
  CHECK_MSG(st.accumulated == NL && same_volume(P("acc_long_u16.nrrd"), P("offline_long_u16.nrrd")),
            "... and rows 2:7, nearest, hann, uint16 out in chunks of 1 to 32");
  free(theta);
  free(proj);
}

#ifdef CTR_TEST_CUDA
/* On a GPU: a kernel that does not continue a sum (tex) is refused under ON
 * naming the option and the kernel; AUTO falls back to the run after the
 * scan (its bytes); a GPU budget too small for the volume is refused naming
 * it. The sum's figures in the step's state. */
static void test_accumulate_gpu(void) {
  ctr_live_state st;
  ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
  fo.interp = CTR_FBP_NEAREST;
  fo.kernel = "tex";
  ctr_fbp_stream_options so = CTR_FBP_STREAM_OPTIONS_INIT;
  so.fbp = &fo;
  CHECK_FAILS(live_accumulated(CTR_LIVE_ACCUMULATE_ON, &so, AXIS, 0, P("x.nrrd"), &st),
              CTR_E_INVALID_ARGUMENT, "ctr_live_options.accumulate");
  CHECK_MSG(strstr(ctr_error_detail(), "tex") != NULL && !exists(P("x.nrrd")),
            "the kernel named: %s", ctr_error_detail());
  CHECK_OK(offline_with(P("scan.h5"), &so, P("offline_tex.nrrd")));
  CHECK_OK(live_accumulated(CTR_LIVE_ACCUMULATE_AUTO, &so, AXIS, 0, P("auto_tex.nrrd"), &st));
  CHECK(st.ended == 1 && st.accumulated == 0 &&
        same_files(P("auto_tex.nrrd"), P("offline_tex.nrrd")));
  so.fbp = NULL;
  so.gpu_budget = 4096;
  CHECK_FAILS(live_accumulated(CTR_LIVE_ACCUMULATE_ON, &so, AXIS, 0, P("x.nrrd"), &st),
              CTR_E_INVALID_ARGUMENT, "ctr_live_options.accumulate");
  CHECK_MSG(strstr(ctr_error_detail(), "gpu_budget") != NULL && !exists(P("x.nrrd")),
            "the GPU budget named: %s", ctr_error_detail());
  /* kernels that continue: alu and alu2-os chosen by name, the offline bytes */
  static const char *const kernels[] = {"alu", "alu2-os"};
  for (int k = 0; k < 2; k++) {
    fo = (ctr_fbp_options)CTR_FBP_OPTIONS_INIT;
    fo.kernel = kernels[k];
    so = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
    so.fbp = &fo;
    CHECK_OK(offline_with(P("scan.h5"), &so, P("offline_k.nrrd")));
    const int c5[] = {5, 9};
    CHECK_OK(live_accumulated_chunks(CTR_LIVE_ACCUMULATE_ON, P("scan.h5"), &so, AXIS, 0, c5, 2,
                                     P("acc_k.nrrd"), &st));
    CHECK_MSG(st.accumulated == NP && same_volume(P("acc_k.nrrd"), P("offline_k.nrrd")),
              "kernel %s: the offline bytes", kernels[k]);
    unlink(P("acc_k.nrrd"));
    unlink(P("offline_k.nrrd"));
  }
}
#endif

/* The writer's progress: after `hang_after` projections (0: never) it hangs
 * until killed, so the test kills it mid-scan at a known point whatever
 * the machine's load. */
static int64_t g_hang_after;
static int writer_progress(void *user, const char *stage, double fraction) {
  (void)user, (void)stage;
  if (g_hang_after && fraction * NP >= (double)g_hang_after - 0.5)
    for (;;) pause();
  return 1;
}

/* A writer process that appends to an SWMR file at `rate`. */
static pid_t start_writer(const char *scan, const char *to, double rate, int64_t hang_after) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    g_hang_after = hang_after;
    ctr_replay_options o = CTR_REPLAY_OPTIONS_INIT;
    o.rate = rate;
    o.progress = writer_progress;
    _exit(ctr_replay(scan, to, &o, NULL) == CTR_OK ? 0 : 1);
  }
  return pid;
}

/* A writer process appending scan.h5 to `name` and a live run following it
 * (the file may not exist yet: followed when it does). */
static pid_t follow_growing(const char *name, double rate, int64_t hang_after, double timeout,
                           ctr_source **s, ctr_fbp_live **l) {
  char scan[600], grow[600];
  snprintf(scan, sizeof scan, "%s", P("scan.h5"));
  snprintf(grow, sizeof grow, "%s", P(name));
  const pid_t pid = start_writer(scan, grow, rate, hang_after);
  CHECK_OK(ctr_source_open(grow, NULL, s));
  const ctr_parallel_params p = params();
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.timeout_s = timeout;
  lo.accumulate = CTR_LIVE_ACCUMULATE_AUTO; /* summed: theta announced */
  if (*s) CHECK_OK(ctr_fbp_live_open(g_ctx, *s, &p, &lo, l));
  return pid;
}

static void test_swmr_growing(void) {
  ctr_source *s = NULL;
  ctr_fbp_live *l = NULL;
  const pid_t pid = follow_growing("grow.h5", 200.0, 0, 10.0, &s, &l);
  REQUIRE(pid > 0 && l);
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  const int steps = run_live(l, &st, 1000);
  CHECK(st.ended == 1 && st.projections == NP);
  CHECK_MSG(steps >= 3, "the projections arrived over %d steps (the file grew while read)", steps);
  CHECK_MSG(st.accumulated == NP, "a growing file's volume summed as it grew (%lld)",
            (long long)st.accumulated);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_OK(ctr_fbp_live_finish(l, P("grow.nrrd"), CTR_FORMAT_AUTO, NULL));
  CHECK_MSG(same_files(P("grow.nrrd"), P("offline.nrrd")),
            "a growing file's volume is the offline run's, byte for byte");
  ctr_fbp_live_free(l);
  ctr_source_close(s);
}

static void test_swmr_writer_killed(void) {
  ctr_source *s = NULL;
  ctr_fbp_live *l = NULL;
  const pid_t pid = follow_growing("killed.h5", 100.0, 15, 1.0, &s, &l);
  REQUIRE(pid > 0 && l);
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  int killed = 0;
  for (int i = 0; i < 500 && !st.ended; i++) {
    CHECK_OK(ctr_fbp_live_step(l, 0.05, &st));
    if (!killed && st.projections == 15) { /* all it wrote: it hangs */
      kill(pid, SIGKILL);
      killed = 1;
    }
  }
  waitpid(pid, NULL, 0);
  CHECK(killed && st.ended == 2 && st.projections == 15);
  CHECK_OK(ctr_fbp_live_write_preview(l, P("kp"), 1, 0));
  float *pv = load(P("kp.h5:/preview"), (int64_t)W * W * 3);
  CHECK_MSG(pv != NULL, "the previews of a scan cut short are complete files");
  free(pv);
  char want[64];
  snprintf(want, sizeof want, "with %lld of %d projections", (long long)st.projections, NP);
  CHECK_FAILS(ctr_fbp_live_finish(l, P("killed.nrrd"), CTR_FORMAT_AUTO, NULL),
              CTR_E_INVALID_ARGUMENT, want);
  CHECK(!exists(P("killed.nrrd")) && !exists(P("killed.nrrd.partial")));
  ctr_fbp_live_free(l);
  ctr_source_close(s);
}
#endif

#if CTR_HAVE_ZMQ
/* One two-part message (parts < 2: the header alone; pixels NULL: `bytes` zeros). */
static void send_msg(void *sock, const char *head, size_t bytes, const void *pixels, int parts) {
  zmq_send(sock, head, strlen(head), parts > 1 ? ZMQ_SNDMORE : 0);
  if (parts < 2) return;
  void *z = pixels ? NULL : calloc(1, bytes ? bytes : 1);
  zmq_send(sock, pixels ? pixels : z, bytes, parts > 2 ? ZMQ_SNDMORE : 0);
  if (parts > 2) zmq_send(sock, "x", 1, 0);
  free(z);
}

/* A projection's frame (count 0: the header does not say it). */
static void proj_msg(void *sock, int index, int count, int rows, int cols) {
  char head[256], cnt[32] = "";
  if (count > 0) snprintf(cnt, sizeof cnt, ", \"count\": %d", count);
  snprintf(head, sizeof head, "{\"kind\": \"projection\", \"index\": %d, \"angle\": %.17g, "
           "\"shape\": [%d, %d], \"dtype\": \"uint16\"%s}", index, g_theta[index % NP], rows,
           cols, cnt);
  send_msg(sock, head, (size_t)rows * cols * 2,
           rows == H && cols == W ? g_proj + (size_t)(index % NP) * W * H : NULL, 2);
}

static void test_zmq_malformed(void) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.bind = 1;
  ctr_source *s = NULL;
  CHECK_OK(ctr_source_open("tcp://127.0.0.1:0", &o, &s));
  REQUIRE(s);
  const char *ep = ctr_source_endpoint(s);
  CHECK(!strncmp(ep, "tcp://127.0.0.1:", 16) && strcmp(ep, "tcp://127.0.0.1:0"));
  void *zc = zmq_ctx_new(), *push = zmq_socket(zc, ZMQ_PUSH);
  CHECK(zmq_connect(push, ep) == 0);
  char head[256];
  snprintf(head, sizeof head, "{\"kind\": \"flat\", \"shape\": [%d, %d], \"dtype\": \"uint16\"}", H, W);
  send_msg(push, head, W * H * 2, g_flats, 2);            /* delivered: flat 0 */
  proj_msg(push, 0, 5, H, W);                             /* delivered: projection 0 */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1", W * H * 2, NULL, 2); /* bad JSON */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1, \"angle\": 3, \"shape\": [8, 48], "
           "\"dtype\": \"uint16\"}", 0, NULL, 1);         /* no pixels: header alone */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1, \"angle\": 3, \"shape\": [8, 48], "
           "\"dtype\": \"int8\"}", W * H, NULL, 2);       /* unknown dtype */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1, \"shape\": [8, 48], "
           "\"dtype\": \"uint16\"}", W * H * 2, NULL, 2); /* no angle */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1, \"angle\": 3, \"shape\": [8, 48], "
           "\"dtype\": \"uint16\"}", W * H * 2 - 2, NULL, 2); /* two bytes short */
  proj_msg(push, 1, 5, H + 1, W);                         /* another shape */
  send_msg(push, "{\"kind\": \"projection\", \"index\": 1, \"angle\": 3, \"shape\": [8, 48], "
           "\"dtype\": \"uint16\"}", W * H * 2, NULL, 3); /* three parts */
  proj_msg(push, 0, 5, H, W);                             /* duplicate */
  proj_msg(push, 2, 5, H, W);                             /* delivered: 2 (1 missing) */
  proj_msg(push, 1, 5, H, W);                             /* out of order */
  send_msg(push, head, W * H * 2, g_flats, 2);            /* a flat after projections */
  proj_msg(push, 7, 5, H, W);                             /* beyond the count */
  proj_msg(push, 3, 5, H, W);                             /* delivered: 3 */
  send_msg(push, "{\"kind\": \"end\"}", 0, NULL, 1);
  int64_t got[8];
  int n = 0, flats = 0;
  ctr_source_event ev = CTR_SOURCE_WAITING;
  for (int i = 0; i < 100 && ev != CTR_SOURCE_ENDED; i++) {
    ctr_frame f = CTR_FRAME_INIT;
    CHECK_OK(ctr_source_next(s, 0.2, &f, &ev));
    if (ev != CTR_SOURCE_FRAME) continue;
    if (f.kind == CTR_FRAME_FLAT) flats++;
    else if (n < 8) got[n++] = f.index;
    if (f.kind == CTR_FRAME_PROJECTION)
      CHECK(!memcmp(f.pixels, g_proj + (size_t)f.index * W * H, W * H * 2) &&
            f.angle_deg == g_theta[f.index]);
  }
  CHECK(ev == CTR_SOURCE_ENDED);
  CHECK_MSG(flats == 1 && n == 3 && got[0] == 0 && got[1] == 2 && got[2] == 3,
            "delivered: 1 flat and projections 0, 2, 3 (%d flats, %d projections)", flats, n);
  ctr_source_status st = CTR_SOURCE_STATUS_INIT;
  CHECK_OK(ctr_source_get_status(s, &st));
  CHECK_MSG(st.dropped_header == 6 && st.dropped_size == 2 && st.dropped_duplicate == 1 &&
                st.dropped_order == 2,
            "dropped: %lld header, %lld size, %lld duplicate, %lld order",
            (long long)st.dropped_header, (long long)st.dropped_size,
            (long long)st.dropped_duplicate, (long long)st.dropped_order);
  CHECK(st.count == 5 && st.projections == 3 && st.last_index == 3 && st.ended);
  ctr_source_close(s);
  zmq_close(push);
  zmq_ctx_term(zc);
}

/* The live run of a socket scan that never says its count, with a
 * projection missing: previews of what came, the count from the end frame,
 * the end refused naming the missing one; nothing written. */
static void test_zmq_missing(void) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.bind = 1;
  ctr_source *s = NULL;
  CHECK_OK(ctr_source_open("tcp://127.0.0.1:0", &o, &s));
  REQUIRE(s);
  void *zc = zmq_ctx_new(), *push = zmq_socket(zc, ZMQ_PUSH);
  CHECK(zmq_connect(push, ctr_source_endpoint(s)) == 0);
  for (int i = 0; i < 6; i++) /* no count: the end says it (the last index + 1) */
    if (i != 4) proj_msg(push, i, 0, H, W);
  proj_msg(push, 5, 0, H, W + 2); /* 5 again, the wrong size: dropped */
  send_msg(push, "{\"kind\": \"end\"}", 0, NULL, 1);
  ctr_fbp_live *l = NULL;
  const ctr_parallel_params p = params();
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.timeout_s = 5;
  CHECK_OK(ctr_fbp_live_open(g_ctx, s, &p, &lo, &l));
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  run_live(l, &st, 100);
  CHECK(st.ended == 2 && st.projections == 5 && st.expected == 6 && st.dropped == 1);
  CHECK_FAILS(ctr_fbp_live_finish(l, P("z.nrrd"), CTR_FORMAT_AUTO, NULL), CTR_E_INVALID_ARGUMENT,
              "missing 4");
  CHECK(!exists(P("z.nrrd")));
  ctr_fbp_live_free(l);
  ctr_source_close(s);
  zmq_close(push);
  zmq_ctx_term(zc);
}

#if CTR_HAVE_HDF5
/* A socket scan whose sender stops mid-scan, resumed: the spool and its
 * state kept by the stopped run (a frame half written after the last one
 * listed is not taken), the resumed run's source told which projections
 * are there (those sent again dropped as duplicates, the flats and darks as
 * out of order), and the final volume the offline run's bytes. */
static void zmq_scan_part(void *push, int from, int to, int calibration) {
  char head[256];
  for (int k = 0; calibration && k < 4; k++) {
    snprintf(head, sizeof head, "{\"kind\": \"%s\", \"shape\": [%d, %d], \"dtype\": \"uint16\"}",
             k < 2 ? "flat" : "dark", H, W);
    send_msg(push, head, W * H * 2, (k < 2 ? g_flats : g_darks) + (size_t)(k % 2) * W * H, 2);
  }
  for (int i = from; i < to; i++) proj_msg(push, i, NP, H, W);
}

static ctr_fbp_live *live_on_socket(ctr_source **s, void **zc, void **push, int resume,
                                    int accumulate, ctr_status *st) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.bind = 1;
  *s = NULL;
  CHECK_OK(ctr_source_open("tcp://127.0.0.1:0", &o, s));
  *zc = zmq_ctx_new();
  *push = zmq_socket(*zc, ZMQ_PUSH);
  if (*s) CHECK(zmq_connect(*push, ctr_source_endpoint(*s)) == 0);
  ctr_parallel_params p = params();
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.timeout_s = resume ? 10 : 0.5; /* a resumed scan ends with its end frame */
  lo.spool = P("r.spool");
  lo.resume = resume;
  if (accumulate) { /* a socket's angles come with its frames: given before them */
    p.angles_deg = g_theta;
    p.nangles = NP;
    lo.accumulate = CTR_LIVE_ACCUMULATE_ON;
  }
  ctr_fbp_live *l = NULL;
  *st = *s ? ctr_fbp_live_open(g_ctx, *s, &p, &lo, &l) : CTR_E_IO;
  return l;
}

static void socket_close(ctr_source *s, void *zc, void *push) {
  ctr_source_close(s);
  zmq_close(push);
  zmq_ctx_term(zc);
}

static void test_zmq_resume(void) {
  ctr_source *s;
  void *zc, *push;
  ctr_status st;
  /* nothing to resume yet */
  ctr_fbp_live *l = live_on_socket(&s, &zc, &push, 1, 0, &st);
  CHECK_MSG(st == CTR_E_IO && !l && strstr(ctr_error_detail(), "cannot resume: no state"),
            "a resume without a stopped run's state is refused: %s", ctr_error_detail());
  socket_close(s, zc, push);
  /* the first run: 25 of NP projections, then the sender stops */
  l = live_on_socket(&s, &zc, &push, 0, 1, &st);
  CHECK_OK(st);
  REQUIRE(l);
  zmq_scan_part(push, 0, 25, 1);
  ctr_live_state ls = CTR_LIVE_STATE_INIT;
  run_live(l, &ls, 200);
  CHECK(ls.ended == 2 && ls.projections == 25 && ls.expected == NP && ls.resumed == 0);
  CHECK_FAILS(ctr_fbp_live_finish(l, P("r.nrrd"), CTR_FORMAT_AUTO, NULL), CTR_E_INVALID_ARGUMENT,
              "with 25 of 60 projections");
  ctr_fbp_live_free(l);
  socket_close(s, zc, push);
  CHECK_MSG(exists(P("r.spool")) && exists(P("r.spool.index")) && exists(P("r.spool.cal")) &&
                !exists(P("r.spool.index.tmp")),
            "a stopped run keeps its spool and state");
  /* a frame torn by a kill while written: past the index, not taken */
  FILE *torn = fopen(P("r.spool"), "r+b");
  REQUIRE(torn);
  fseek(torn, 25L * W * H * 2, SEEK_SET);
  for (int i = 0; i < W * H; i++) fputc(0x7f, torn); /* half of frame 25, garbage */
  fclose(torn);
  /* resumed: 20 .. NP - 1 sent again (20 .. 24 duplicates), the flats again; the
   * volume summed again from the spool, then on */
  l = live_on_socket(&s, &zc, &push, 1, 1, &st);
  CHECK_OK(st);
  REQUIRE(l);
  zmq_scan_part(push, 20, NP, 1);
  send_msg(push, "{\"kind\": \"end\"}", 0, NULL, 1);
  ls = (ctr_live_state)CTR_LIVE_STATE_INIT;
  CHECK_OK(ctr_fbp_live_step(l, 0.0, &ls));
  const int summed = 1;
  CHECK_MSG(ls.resumed == 25 && ls.projections >= 25 && ls.accumulated == ls.projections * summed,
            "the resumed run starts from the stopped run's 25 (%lld resumed)", (long long)ls.resumed);
  run_live(l, &ls, 200);
  ctr_source_status ss = CTR_SOURCE_STATUS_INIT;
  CHECK_OK(ctr_source_get_status(s, &ss));
  CHECK(ls.accumulated == NP * summed);
  CHECK_MSG(ls.ended == 1 && ls.projections == NP && ss.dropped_duplicate == 5 &&
                ss.dropped_order == 4 && ss.dropped_header + ss.dropped_size == 0,
            "resumed: %lld of %d, %lld duplicates, %lld out of order", (long long)ls.projections,
            NP, (long long)ss.dropped_duplicate, (long long)ss.dropped_order);
  if (summed) { /* the summed volume is written, nothing read: a spool spoilt now is not seen */
    FILE *spoil = fopen(P("r.spool"), "r+b");
    REQUIRE(spoil);
    for (int i = 0; i < W * H * 2; i++) fputc(0x55, spoil);
    fclose(spoil);
  }
  CHECK_OK(ctr_fbp_live_finish(l, P("r.nrrd"), CTR_FORMAT_AUTO, NULL));
  CHECK_MSG(same_files(P("r.nrrd"), P("offline.nrrd")),
            "a resumed scan's volume is the offline run's, byte for byte%s",
            summed ? " (the volume summed during the acquisition: the spool not read)" : "");
  ctr_fbp_live_free(l);
  socket_close(s, zc, push);
  CHECK_MSG(!exists(P("r.spool")) && !exists(P("r.spool.index")) && !exists(P("r.spool.cal")),
            "the spool and its state removed once the volume is written");
  /* a resume needs the spool named */
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.bind = 1;
  CHECK_OK(ctr_source_open("tcp://127.0.0.1:0", &o, &s));
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.resume = 1;
  const ctr_parallel_params p = params();
  CHECK_FAILS(ctr_fbp_live_open(g_ctx, s, &p, &lo, &l), CTR_E_INVALID_ARGUMENT,
              "ctr_live_options.spool");
  ctr_source_close(s);
}
#endif
#else
static void test_zmq_absent(void) {
  ctr_source *s = NULL;
  CHECK_FAILS(ctr_source_open("tcp://127.0.0.1:0", NULL, &s), CTR_E_UNSUPPORTED,
              "built without ZeroMQ");
}
#endif

int main(void) {
  if (!scratch_open(TEST_NAME)) return 1;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = TEST_DEVICE;
  ctr_tuning tuning; /* the kernel's static default: the same in every run */
  CHECK_OK(ctr_tuning_init(&tuning, CTR_TUNING_VERSION));
  tuning.tune = -1;
  co.tuning = &tuning;
  if (ctr_context_create(&co, &g_ctx) != CTR_OK) {
    scratch_close();
#ifdef CTR_TEST_CUDA
    printf("no usable GPU: skipped\n");
    return 77;
#else
    return th_finish(TEST_NAME);
#endif
  }
  make_data();
#if CTR_HAVE_HDF5
  ctr__swmr_writer *w = NULL; /* a finished DXchange file, as the replay writes one */
  CHECK_OK(ctr__swmr_writer_create(P("scan.h5"), W, H, CTR_DTYPE_UINT16, g_flats, 2, g_darks, 2,
                                   g_theta, NP, 0, &w));
  for (int a = 0; w && a < NP; a++) CHECK_OK(ctr__swmr_writer_append(w, g_proj + (size_t)a * W * H));
  CHECK_OK(ctr__swmr_writer_close(w));
  test_finished_source();
  test_previews_and_final();
  test_preview_writer();
  test_accumulate();
  test_accumulate_chunks();
#ifdef CTR_TEST_CUDA
  test_accumulate_gpu();
#endif
  test_swmr_growing();
  test_swmr_writer_killed();
#endif
#if CTR_HAVE_ZMQ
  test_zmq_malformed();
  test_zmq_missing();
#if CTR_HAVE_HDF5
  test_zmq_resume(); /* after test_previews_and_final: offline.nrrd */
#endif
#else
  test_zmq_absent();
#endif
#if !CTR_HAVE_HDF5 /* the helpers of the tests a build leaves out */
  (void)offline, (void)load;
#if !CTR_HAVE_ZMQ
  (void)run_live, (void)P;
#endif
#endif
  ctr_context_free(g_ctx);
  free(g_proj);
  free(g_flats);
  free(g_darks);
  scratch_close();
  return th_finish(TEST_NAME);
}

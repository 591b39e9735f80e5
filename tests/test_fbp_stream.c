/* The streamed FBP (ctr_fbp_stream, docs/synchrotron.md) on the CPU:
 *  - file to file equals ctr_fbp_projections in memory bit for bit (raw,
 *    TIFF and DXchange HDF5 inputs; any band size), and ctr_fbp_stream_memory
 *    equals ctr_fbp_stream bit for bit with every correction on;
 *  - the input's bytes are read once (the process's rchar);
 *  - a run cancelled after two bands, resumed, gives the uninterrupted bytes;
 *  - the axis is found (CTR_AXIS_AUTO) within 0.25 bin and reported;
 *  - uint16 output is round((v - offset) x scale) of the float32 run, float16
 *    its half rounding.
 * Built again for CUDA (test_gpu_fbp_stream): the same checks with the GPU
 * computing (the reference ctr_fbp_projections then runs on the GPU too). */
#include "harness.h"
#include "scratch_dir.h"
#include "read_count.h"
#include "distributed/distributed.h"
#include "io/io_internal.h"

#include <stdio.h>

#ifdef CTR_TEST_CUDA
#define TEST_NAME "test_gpu_fbp_stream"
#define TEST_DEVICE CTR_DEVICE_CUDA
#else
#define TEST_NAME "test_fbp_stream"
#define TEST_DEVICE CTR_DEVICE_CPU
#endif

enum { W = 64, H = 12, NP = 90 };
static const double AXIS = 31.5 + 3.3;

static uint16_t *g_proj;
static float *g_flat, *g_dark;
/* the progress callback cancels once past this fraction (-1: never) */
static double g_cancel_past = -1;

static int progress(void *user, const char *stage, double f) {
  (void)user;
  (void)stage;
  return g_cancel_past >= 0 && f > g_cancel_past + 1e-9;
}

static ctr_parallel_params params(double axis) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = W;
  p.nangles = NP;
  p.axis = axis;
  p.pixel_size = 0.01;
  return p;
}

/* uint16 projections of a Shepp-Logan head (axis AXIS) with flat and dark. */
static void make_data(void) {
  ctr_parallel_params p = params(AXIS);
  p.pixel_size = 1.0;
  ctr_parallel_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_parallel_create(&p, &g));
  CHECK_OK(ctr_phantom_shepp_logan(20.0, 0.05, &ph));
  float *sino = malloc(sizeof(float) * W * NP * H);
  double z[H];
  for (int s = 0; s < H; s++) z[s] = -5.0 + s;
  CHECK_OK(ctr_phantom_sinogram(ph, g, H, z, 2, sino));
  g_proj = malloc(sizeof(uint16_t) * W * H * NP);
  g_flat = malloc(sizeof(float) * W * H);
  g_dark = malloc(sizeof(float) * W * H);
  for (int y = 0; y < H; y++)
    for (int b = 0; b < W; b++) {
      g_flat[y * W + b] = 20000.0f + 50.0f * (float)((b * 7 + y * 3) % 11);
      g_dark[y * W + b] = 100.0f + (float)((b + y) % 5);
    }
  for (int a = 0; a < NP; a++)
    for (int y = 0; y < H; y++)
      for (int b = 0; b < W; b++) {
        const double t = exp(-sino[(y * NP + a) * W + b]);
        const double v = g_dark[y * W + b] + (g_flat[y * W + b] - g_dark[y * W + b]) * t +
                         (double)((a * 13 + y * 7 + b) % 17) - 8.0;
        g_proj[(a * H + y) * W + b] = (uint16_t)lround(v);
      }
  /* a zinger */
  g_proj[(40 * H + 6) * W + 30] = 60000;
  free(sino);
  ctr_phantom_free(ph);
  ctr_parallel_free(g);
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

static int same(const float *a, const float *b, int64_t n) {
  return a && b && !memcmp(a, b, sizeof(float) * (size_t)n);
}

static ctr_status stream(ctr_context *ctx, const char *in, const ctr_fbp_stream_options *o,
                         double axis, const char *out, ctr_fbp_stream_report *rep) {
  ctr_stack_reader *r = NULL;
  ctr_status st = ctr_stack_open(in, CTR_FORMAT_AUTO, NULL, 0, &r);
  if (st != CTR_OK) return st;
  const ctr_parallel_params p = params(axis);
  st = ctr_fbp_stream(ctx, &p, o, r, g_flat, g_dark, out, CTR_FORMAT_AUTO, rep);
  ctr_stack_close(r);
  return st;
}

int main(void) {
  if (!scratch_open("fbp_stream")) return 1;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = TEST_DEVICE;
  co.progress = progress;
  /* The kernel's static default, no tuning: the test counts every byte the
   * process reads (/proc/self/io), and the automatic choice reads the
   * machine's kernel cache (fbp-kernels.json; once per context since
   * 2026-11-26, once per GPU and band before: 0.1-1.2 MB on four GPUs). */
  ctr_tuning tuning;
  CHECK_OK(ctr_tuning_init(&tuning, CTR_TUNING_VERSION));
  tuning.tune = -1;
  co.tuning = &tuning;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx) != CTR_OK) {
    scratch_close();
#ifdef CTR_TEST_CUDA
    printf("no usable GPU: skipped\n");
    return 77;
#else
    return 1;
#endif
  }
  make_data();
  const ctr_stack_info info = {CTR_STACK_INFO_VERSION, W, H, NP, CTR_DTYPE_UINT16, {1, 1, 1}, {0, 0, 0}};
  CHECK_OK(ctr_stack_save(P("p.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_UINT16, g_proj, 0));
  CHECK_OK(ctr_stack_save(P("p.tif"), CTR_FORMAT_TIFF, &info, CTR_DTYPE_UINT16, g_proj, 0));
  char rawpath[600];
  snprintf(rawpath, sizeof rawpath, "%s", P("p.nrrd"));
  const int64_t npx = (int64_t)W * W * H;

  /* the in-memory reference: ctr_fbp_projections */
  ctr_parallel_params pp = params(AXIS);
  ctr_parallel_geometry *g = NULL;
  CHECK_OK(ctr_parallel_create(&pp, &g));
  float *ref = malloc(sizeof(float) * (size_t)npx);
  const int64_t pd[3] = {W, H, NP}, vd[3] = {W, W, H};
  const ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_UINT16, 3, pd);
  ctr_array va = ctr_array_make(ref, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_fbp_projections(ctx, g, NULL, &pa, g_flat, g_dark, 0, &va));

  /* file to file = memory, every band size, raw and TIFF; bytes read once */
  ctr_fbp_stream_options o = CTR_FBP_STREAM_OPTIONS_INIT;
  o.overwrite = 1; /* one output for every case */
  const int64_t batches[3] = {0, 5, 1};
  for (int b = 0; b < 3; b++) {
    o.batch = batches[b];
    const char *ins[2] = {P("p.nrrd"), P("p.tif")};
    for (int k = 0; k < 2; k++) {
      ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
      CHECK(read_count_start(ins[k]));
      CHECK_OK(stream(ctx, ins[k], &o, AXIS, P("s.nrrd"), &rep));
      const int64_t got = read_count_bytes(), data = (int64_t)sizeof(uint16_t) * W * H * NP;
      float *s = load(P("s.nrrd"), npx);
      CHECK_MSG(same(s, ref, npx), "%s, batch %lld: the stream differs from ctr_fbp_projections",
                ins[k], (long long)o.batch);
      CHECK_MSG(got >= data && got <= data + data / 50 + 32768, "%s, batch %lld: read %lld bytes "
                "for %lld of projections", ins[k], (long long)o.batch, (long long)got, (long long)data);
      free(s);
    }
  }
  /* the reader's depth does not change the bits: 1 and 16 bands ahead (the
   * default 2 above); outside 1 .. 16 refused, naming the option */
  const int aheads[2] = {1, 16};
  for (int k = 0; k < 2; k++) {
    o.batch = 2;
    o.read_ahead = aheads[k];
    CHECK_OK(stream(ctx, P("p.nrrd"), &o, AXIS, P("s.nrrd"), NULL));
    float *s = load(P("s.nrrd"), npx);
    CHECK_MSG(same(s, ref, npx), "read_ahead %d: the stream differs from ctr_fbp_projections",
              aheads[k]);
    free(s);
  }
  o.read_ahead = 17;
  CHECK_FAILS(stream(ctx, P("p.nrrd"), &o, AXIS, P("s2.nrrd"), NULL), CTR_E_INVALID_ARGUMENT,
              "ctr_fbp_stream_options.read_ahead = 17: expected 1 to 16");
  o.read_ahead = 0;
  /* a cluster of one (the distributed path, src/stream's pieces): the bits of
   * one process, and the report's reader and writer times summed over its
   * pieces (the end of the run once overwrote them with 0) */
  {
    ctr_cluster *c = NULL;
    CHECK_OK(ctr__cluster_local(&c));
    o.batch = 3;
    o.cluster = c;
    ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
    CHECK_OK(stream(ctx, P("p.nrrd"), &o, AXIS, P("c.raw"), &rep));
    ctr_stack_info ci = {CTR_STACK_INFO_VERSION, W, W, H, CTR_DTYPE_FLOAT32, {1, 1, 1}, {0, 0, 0}};
    void *data = NULL;
    CHECK_OK(ctr_stack_load(P("c.raw"), CTR_FORMAT_RAW, &ci, CTR_DTYPE_FLOAT32, NULL, &data));
    CHECK_MSG(same(data, ref, npx), "cluster of one: the stream differs from ctr_fbp_projections");
    CHECK_MSG(rep.seconds_read > 0 && rep.seconds_write > 0,
              "cluster of one: the report's reader %g s and writer %g s", rep.seconds_read,
              rep.seconds_write);
    free(data);
    o.cluster = NULL;
    o.batch = 0;
    ctr_cluster_free(c);
  }
  /* an output that exists is refused before a byte of the input is read,
   * one process or a cluster, naming it (field "overwrite", the path as
   * given), the file and its partial names as they were; overwrite replaces
   * it. A resume of a run that is complete: nothing to resume. */
  {
    ctr_cluster *c = NULL;
    CHECK_OK(ctr__cluster_local(&c));
    const uint64_t before = file_size(P("c.raw"));
    o.overwrite = 0;
    ctr_stack_reader *r = NULL;
    CHECK_OK(ctr_stack_open(P("p.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r));
    const ctr_parallel_params p = params(AXIS);
    for (int k = 0; r && k < 2; k++) {
      o.cluster = k ? c : NULL;
      CHECK(read_count_start(P("p.nrrd")));
      CHECK_FAILS(ctr_fbp_stream(ctx, &p, &o, r, g_flat, g_dark, P("c.raw"), CTR_FORMAT_AUTO,
                                 NULL), CTR_E_INVALID_ARGUMENT,
                  "exists and is kept: set overwrite to replace it");
      CHECK_MSG(!strcmp(ctr_error_get_field(), "overwrite") &&
                    !strcmp(ctr_error_get_value(), P("c.raw")),
                "cluster %d: field '%s', value '%s'", k, ctr_error_get_field(),
                ctr_error_get_value());
      CHECK_MSG(read_count_bytes() == 0, "cluster %d: %lld bytes read before the refusal", k,
                (long long)read_count_bytes());
      CHECK(file_size(P("c.raw")) == (long long)before && !exists(P("c.raw.partial")) &&
            !exists(P("c.raw.partial.journal")) && count_temporaries() == 0);
    }
    ctr_stack_close(r);
    o.resume = 1;
    CHECK_FAILS(stream(ctx, P("p.nrrd"), &o, AXIS, P("c.raw"), NULL), CTR_E_IO, "journal");
    o.resume = 0;
    o.cluster = c;
    o.overwrite = 1;
    CHECK_OK(stream(ctx, P("p.nrrd"), &o, AXIS, P("c.raw"), NULL));
    o.cluster = NULL;
    ctr_cluster_free(c);
  }
#if CTR_HAVE_HDF5
  {
    /* DXchange: /exchange/data */
    ctr_stack_info hi = info;
    CHECK_OK(ctr_stack_save(P("scan.h5:/exchange/data"), CTR_FORMAT_HDF5, &hi, CTR_DTYPE_UINT16,
                            g_proj, 0));
    o.batch = 4;
    CHECK_OK(stream(ctx, P("scan.h5:/exchange/data"), &o, AXIS, P("h.raw"), NULL));
    float *s = NULL;
    ctr_stack_info ri = {CTR_STACK_INFO_VERSION, W, W, H, CTR_DTYPE_FLOAT32, {1, 1, 1}, {0, 0, 0}};
    void *data = NULL;
    CHECK_OK(ctr_stack_load(P("h.raw"), CTR_FORMAT_RAW, &ri, CTR_DTYPE_FLOAT32, NULL, &data));
    s = data;
    CHECK_MSG(same(s, ref, npx), "DXchange input: the stream differs from ctr_fbp_projections");
    free(s);
  }
#endif

  {
    /* per-projection axis shifts (ctr_parallel_params.axis_shift): the stream equals
     * ctr_fbp_projections given the same shifts, also on every other projection
     * (a subset takes the selected projections' shifts); with 360-degree
     * stitching they are refused */
    double shifts[NP];
    for (int a = 0; a < NP; a++) shifts[a] = 0.25 * sin(0.37 * a) + (a % 3 == 0 ? 0.5 : 0.0);
    ctr_parallel_params ps = params(AXIS);
    ps.axis_shift = shifts;
    ctr_parallel_geometry *gs = NULL;
    CHECK_OK(ctr_parallel_create(&ps, &gs));
    float *rs = malloc(sizeof(float) * (size_t)npx);
    ctr_array rsa = ctr_array_make(rs, CTR_DTYPE_FLOAT32, 3, vd);
    CHECK_OK(ctr_fbp_projections(ctx, gs, NULL, &pa, g_flat, g_dark, 0, &rsa));
    ctr_stack_reader *in = NULL;
    CHECK_OK(ctr_stack_open(rawpath, CTR_FORMAT_AUTO, NULL, 0, &in));
    ctr_fbp_stream_options os = CTR_FBP_STREAM_OPTIONS_INIT;
    os.batch = 3;
    CHECK_OK(ctr_fbp_stream(ctx, &ps, &os, in, g_flat, g_dark, P("sh.nrrd"), CTR_FORMAT_AUTO, NULL));
    float *s = load(P("sh.nrrd"), npx);
    CHECK_MSG(same(s, rs, npx), "axis shifts: the stream differs from ctr_fbp_projections");
    CHECK_MSG(!same(s, ref, npx), "axis shifts: the shifts changed nothing");
    free(s);
    {
      /* every other projection: the reference gets their angles, shifts and images */
      enum { NS = (NP + 1) / 2 };
      double ang2[NS], sh2[NS];
      const ctr_parallel_geometry *full = gs;
      uint16_t *p2 = malloc(sizeof(uint16_t) * W * H * NS);
      for (int i = 0; i < NS; i++) {
        ang2[i] = ctr_parallel_get_params(full)->angles_deg[2 * i];
        sh2[i] = shifts[2 * i];
        memcpy(p2 + (size_t)i * W * H, g_proj + (size_t)(2 * i) * W * H, sizeof(uint16_t) * W * H);
      }
      ctr_parallel_params p2s = params(AXIS);
      p2s.nangles = NS;
      p2s.angles_deg = ang2;
      p2s.axis_shift = sh2;
      ctr_parallel_geometry *g2 = NULL;
      CHECK_OK(ctr_parallel_create(&p2s, &g2));
      const int64_t pd2[3] = {W, H, NS};
      const ctr_array p2a = ctr_array_make(p2, CTR_DTYPE_UINT16, 3, pd2);
      CHECK_OK(ctr_fbp_projections(ctx, g2, NULL, &p2a, g_flat, g_dark, 0, &rsa));
      ctr_fbp_stream_options o2 = os;
      o2.angle_first = 0;
      o2.angle_step = 2;
      CHECK_OK(ctr_fbp_stream(ctx, &ps, &o2, in, g_flat, g_dark, P("sh2.nrrd"), CTR_FORMAT_AUTO,
                              NULL));
      float *s2 = load(P("sh2.nrrd"), npx);
      CHECK_MSG(same(s2, rs, npx), "axis shifts, every other projection: the stream differs "
                "from ctr_fbp_projections");
      free(s2);
      free(p2);
      ctr_parallel_free(g2);
    }
    ctr_corrections cs = CTR_CORRECTIONS_INIT;
    cs.stitch_360 = 1;
    os.corrections = &cs;
    CHECK_FAILS(ctr_fbp_stream(ctx, &ps, &os, in, g_flat, g_dark, P("st.nrrd"), CTR_FORMAT_AUTO, NULL),
                CTR_E_INVALID_ARGUMENT, "axis_shift");
    CHECK(!exists(P("st.nrrd")));
    ctr_stack_close(in);
    ctr_parallel_free(gs);
    free(rs);
  }

  /* every correction: file = memory */
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.dezinger = 0.3;
  c.stripe = CTR_STRIPE_SORTING;
  c.stripe_size = 5;
  c.paganin_delta_beta = 50;
  c.energy_kev = 20;
  c.distance_mm = 30;
  c.bin_x = 2;
  c.bin_y = 2;
  o = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  o.corrections = &c;
  o.batch = 2;
  o.angle_step = 1;
  ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
  CHECK_OK(stream(ctx, rawpath, &o, AXIS, P("c.nrrd"), &rep));
  CHECK(rep.nbins == W / 2 && rep.nslices == H / 2 && rep.nx == W / 2 && rep.dezingered >= 1);
  const int64_t cpx = (int64_t)(W / 2) * (W / 2) * (H / 2);
  float *cm = malloc(sizeof(float) * (size_t)cpx), *cf = load(P("c.nrrd"), cpx);
  const int64_t cd[3] = {W / 2, W / 2, H / 2};
  ctr_array ca = ctr_array_make(cm, CTR_DTYPE_FLOAT32, 3, cd);
  const ctr_parallel_params p2 = params(AXIS);
  CHECK_OK(ctr_fbp_stream_memory(ctx, &p2, &o, &pa, g_flat, g_dark, &ca, NULL));
  CHECK_MSG(same(cm, cf, cpx), "with corrections: ctr_fbp_stream_memory differs from the file run");
  double energy = 0;
  for (int64_t i = 0; cf && i < cpx; i++) energy += (double)cf[i] * cf[i];
  CHECK_MSG(energy > 0 && isfinite(energy), "with corrections: empty or non-finite slices");
  free(cm);
  free(cf);

  /* cancelled after 2 bands, then resumed: the uninterrupted bytes */
  o = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  o.batch = 3; /* 4 bands: cancelled inside the third */
  g_cancel_past = 0.5;
  rep = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  CHECK(stream(ctx, rawpath, &o, AXIS, P("r.nrrd"), &rep) == CTR_E_CANCELLED);
  CHECK(rep.resumable == 1 && !exists(P("r.nrrd")) && exists(P("r.nrrd.partial")));
  g_cancel_past = -1;
  /* a second run without resume is refused */
  CHECK(stream(ctx, rawpath, &o, AXIS, P("r.nrrd"), NULL) == CTR_E_INVALID_ARGUMENT);
  o.resume = 1;
  rep = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  CHECK_OK(stream(ctx, rawpath, &o, AXIS, P("r.nrrd"), &rep));
  CHECK_MSG(rep.bands_resumed == 2, "resumed %lld bands, expected 2", (long long)rep.bands_resumed);
  float *rr = load(P("r.nrrd"), npx);
  CHECK_MSG(same(rr, ref, npx), "the resumed run differs from an uninterrupted one");
  CHECK(!exists(P("r.nrrd.partial")) && !exists(P("r.nrrd.partial.journal")));
  free(rr);

  /* the axis found */
  o = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  rep = (ctr_fbp_stream_report)CTR_FBP_STREAM_REPORT_INIT;
  CHECK_OK(stream(ctx, rawpath, &o, CTR_AXIS_AUTO, P("a.nrrd"), &rep));
  CHECK_MSG(rep.axis_found && fabs(rep.axis - AXIS) <= 0.25, "axis found %.3f, true %.3f",
            rep.axis, AXIS);
  printf("  axis found by %s: %.3f (true %.3f)\n", rep.center_method == CTR_CENTER_VO ? "VO" : "correlation",
         rep.axis, AXIS);

  /* uint16 and float16 outputs of the float32 run */
  o = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  o.out_dtype = CTR_DTYPE_UINT16;
  o.out_scale = 20000;
  o.out_offset = -1.0;
  CHECK_OK(stream(ctx, rawpath, &o, AXIS, P("u.raw"), NULL));
  o.out_dtype = CTR_DTYPE_FLOAT16;
  CHECK_OK(stream(ctx, rawpath, &o, AXIS, P("f.raw"), NULL));
  long long nu = 0, nf = 0;
  uint16_t *u = (uint16_t *)read_all(P("u.raw"), &nu), *f = (uint16_t *)read_all(P("f.raw"), &nf);
  int ok = u && f && nu == npx * 2 && nf == npx * 2;
  for (int64_t i = 0; ok && i < npx; i++) {
    double x = ((double)ref[i] + 1.0) * 20000;
    ok &= u[i] == ctr__float_to_u16((float)(x < -0.5 ? 0 : x > 65535.5 ? 65535 : x));
    ok &= f[i] == ctr__float_to_half(ref[i]);
  }
  CHECK_MSG(ok, "uint16 / float16 outputs are not the float32 run's stated conversions");
  free(u);
  free(f);

  free(ref);
  ctr_parallel_free(g);
  free(g_proj);
  free(g_flat);
  free(g_dark);
  ctr_context_free(ctx);
  scratch_close();
  return th_finish(TEST_NAME);
}

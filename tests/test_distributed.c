/* The parts of a distributed run that one process can check (the ranks
 * themselves run in tests/cli_mpi.sh):
 *  - the detector rows a slab's voxels project onto (ctr__geometry_row_band)
 *    hold every row its bilinear samples touch, against a brute force;
 *  - the CPU backprojection and filter of a window of rows are bit-identical
 *    to the whole detector's;
 *  - the journals of distributed runs (master, ranks) read back as written;
 *  - the ledger of a cluster of one;
 *  - ctr_fdk_stream on a cluster of one is byte-identical to one process,
 *    and its interrupted output resumes without a cluster, and a one-process
 *    run's with one.
 * Linked with the test library (CTRECON_INJECT_STOP_AFTER_SLABS). */
#include "harness.h"
#include "scratch_dir.h"

#include "conebeam/cpu/backproject.h"
#include "stream/dist_output.h"
#include "filter/filter.h"
#include "geometry/geometry_internal.h"

static ctr_geometry *geometry(int64_t n, int64_t nu, int64_t nv, int64_t nviews, int tilted) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 3.0 * n;
  p.sdd = 4.5 * n;
  p.nu = nu;
  p.nv = nv;
  p.du = 2.2 * n / nu;
  p.dv = 2.0 * n / nv;
  p.offset_v = th_uniform(-3, 3);
  p.nviews = nviews;
  ctr_volume_geometry vol = {n, n + 3, n - 2, 1.0, 1.1, 0.9, th_uniform(-1, 1), 0,
                             th_uniform(-2, 2)};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (g && tilted) th_perturb_geometry(&g, 0.03);
  return g;
}

/* Every row that a voxel of slices [z0, z0 + nz) samples in some view (its
 * v's floor and the next, on the detector) lies in the band, and the band
 * is no wider than those rows and the margins. */
static void test_row_band(void) {
  for (int trial = 0; trial < 8; trial++) {
    ctr_geometry *g = geometry(20, 36, 40, 17, trial % 2);
    REQUIRE(g);
    const ctr_volume_geometry *v = &g->vol;
    const int64_t z0 = (int64_t)th_uniform(0, (double)v->nz - 1);
    const int64_t nz = 1 + (int64_t)th_uniform(0, (double)(v->nz - z0 - 1));
    int64_t row0 = -1, nrows = -1, lo = g->nv, hi = -1, outside = 0;
    ctr__geometry_row_band(g, z0, nz, &row0, &nrows);
    for (int64_t k = 0; k < g->nviews; k++) {
      const double *P = g->views[k].P;
      for (int64_t z = z0; z < z0 + nz; z++)
        for (int64_t y = 0; y < v->ny; y++)
          for (int64_t x = 0; x < v->nx; x++) {
            const double X = ctr__voxel_coord(x, v->nx, v->voxel_x, v->offset_x);
            const double Y = ctr__voxel_coord(y, v->ny, v->voxel_y, v->offset_y);
            const double Z = ctr__voxel_coord(z, v->nz, v->voxel_z, v->offset_z);
            const double c = P[8] * X + P[9] * Y + P[10] * Z + P[11];
            const double f = floor((P[4] * X + P[5] * Y + P[6] * Z + P[7]) / c);
            for (int64_t r = (int64_t)f; r <= (int64_t)f + 1; r++) {
              if (r < 0 || r >= g->nv) continue;
              outside += r < row0 || r >= row0 + nrows;
              lo = r < lo ? r : lo;
              hi = r > hi ? r : hi;
            }
          }
    }
    CHECK_MSG(outside == 0, "trial %d: %lld samples outside rows [%lld, %lld)", trial,
              (long long)outside, (long long)row0, (long long)(row0 + nrows));
    CHECK_MSG(hi >= lo && row0 >= lo - 3 && row0 + nrows - 1 <= hi + 3,
              "trial %d: band [%lld, %lld] for sampled rows [%lld, %lld]", trial, (long long)row0,
              (long long)(row0 + nrows - 1), (long long)lo, (long long)hi);
    ctr_geometry_free(g);
  }
}

/* Padded copies of views [0, n) of `rows` rows each (the window's) for the
 * CPU backprojector. */
static float *padded(const ctr_geometry *g, const float *views, int64_t n, ctr__padded_views *pv) {
  float *buf = calloc((size_t)(n * ctr__padded_size(g->nu, g->nv)), sizeof(float));
  if (!buf) return NULL;
  ctr__fill_padded(g, views, CTR_DTYPE_FLOAT32, n, buf);
  *pv = (ctr__padded_views){buf + ctr__padded_origin(g->nu), ctr__padded_size(g->nu, g->nv),
                            ctr__padded_pitch(g->nu)};
  return buf;
}

/* Rows [r0, r0 + nr) of n views of nu x nv into a packed copy. */
static float *rows_of(const float *v, int64_t n, int64_t nu, int64_t nv, int64_t r0, int64_t nr) {
  float *w = malloc(sizeof(float) * (size_t)(n * nr * nu));
  for (int64_t k = 0; w && k < n; k++)
    memcpy(w + k * nr * nu, v + (k * nv + r0) * nu, sizeof(float) * (size_t)(nr * nu));
  return w;
}

/* A slab backprojected from the window of rows its band gives, and the rows
 * of that window filtered alone, are bit-identical to the whole detector's. */
static void test_window_bits(void) {
  for (int trial = 0; trial < 6; trial++) {
    ctr_geometry *g = geometry(24, 40, 44, 19, trial % 2), *gw = NULL;
    REQUIRE(g);
    const int64_t nu = g->nu, nv = g->nv, n = g->nviews, nx = g->vol.nx, ny = g->vol.ny;
    const int64_t z0 = trial * 3, nz = 5 + trial;
    int64_t r0, nr;
    ctr__geometry_row_band(g, z0, nz, &r0, &nr);
    CHECK_MSG(nr < nv, "trial %d: the slab's band is the whole detector (%lld rows)", trial,
              (long long)nr);
    CHECK_OK(ctr__geometry_rows(g, r0, nr, &gw));
    REQUIRE(gw);
    float *views = malloc(sizeof(float) * (size_t)(n * nu * nv));
    for (int64_t i = 0; views && i < n * nu * nv; i++) views[i] = (float)th_uniform(-1, 1);
    float *win = views ? rows_of(views, n, nu, nv, r0, nr) : NULL;
    float *a = calloc((size_t)(nx * ny * nz), sizeof(float));
    float *b = calloc((size_t)(nx * ny * nz), sizeof(float));
    ctr__padded_views pa, pb;
    float *bufa = views ? padded(g, views, n, &pa) : NULL;
    float *bufb = win ? padded(gw, win, n, &pb) : NULL;
    REQUIRE(views && win && a && b && bufa && bufb);
    ctr__bp_cpu(NULL, g, 0, n, NULL, NULL, &pa, a, z0, nz);
    ctr__bp_cpu(NULL, gw, 0, n, NULL, NULL, &pb, b, z0, nz);
    CHECK_MSG(!memcmp(a, b, sizeof(float) * (size_t)(nx * ny * nz)),
              "trial %d: the window's backprojection differs from the whole detector's", trial);
    /* the filter: the window's rows alone give the whole detector's rows */
    ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
    o.window = CTR_WINDOW_HANN;
    ctr__fdk_filter fa, fb;
    CHECK_OK(ctr__fdk_filter_init(NULL, g, &o, &fa));
    CHECK_OK(ctr__fdk_filter_init(NULL, gw, &o, &fb));
    CHECK_OK(ctr__fdk_filter_run(NULL, &fa, 0, n, views, nu * nv, nu));
    CHECK_OK(ctr__fdk_filter_run(NULL, &fb, 0, n, win, nu * nr, nu));
    float *want = rows_of(views, n, nu, nv, r0, nr);
    CHECK_MSG(want && !memcmp(want, win, sizeof(float) * (size_t)(n * nu * nr)),
              "trial %d: rows filtered in a window differ", trial);
    ctr__fdk_filter_free(&fa);
    ctr__fdk_filter_free(&fb);
    free(want);
    free(views);
    free(win);
    free(a);
    free(b);
    free(bufa);
    free(bufb);
    ctr_geometry_free(gw);
    ctr_geometry_free(g);
  }
}

/* A master journal and a rank's journal read back as written; a torn last
 * line is not a range; another run's fingerprint is refused. */
static void test_journals(void) {
  const char *m = P("j.partial.journal");
  ctr__journal_ranges w;
  memset(&w, 0, sizeof w);
  ctr__journal_range r[3] = {{0, 0, 5, {0x1234abcd, -1.5f, 2.25f, 3, 4}},
                             {1, 5, 5, {0xdeadbeef, 0.125f, 7.0f, 0, 0}},
                             {7, 20, 3, {1, -0.0f, 0.0f, 0, 0}}};
  w.r = r;
  w.n = 3;
  w.generation = 4;
  w.ranks = 3;
  w.previous = 3;
  w.previous_ranks = 5;
  w.unit = 5;
  CHECK_OK(ctr__journal_write_master(m, 0xfeedull, &w));
  CHECK(ctr__journal_kind(m) == 2);
  CHECK(ctr__journal_unit(m) == 5);
  ctr__journal_ranges got;
  memset(&got, 0, sizeof got);
  CHECK_OK(ctr__journal_read_ranges(m, 0xfeedull, "resume", &got));
  CHECK(got.n == 3 && got.generation == 4 && got.ranks == 3 && got.previous == 3 &&
        got.previous_ranks == 5 && got.master == 1);
  for (int64_t i = 0; i < got.n && i < 3; i++)
    CHECK(got.r[i].z0 == r[i].z0 && got.r[i].nz == r[i].nz && got.r[i].rec.crc == r[i].rec.crc &&
          got.r[i].rec.min == r[i].rec.min && got.r[i].rec.max == r[i].rec.max &&
          got.r[i].rec.below == r[i].rec.below);
  ctr__journal_ranges_free(&got);
  CHECK_FAILS(ctr__journal_read_ranges(m, 0xbeefull, "the resume option", &got),
              CTR_E_INVALID_ARGUMENT, "belongs to a run with other inputs");
  ctr__journal_ranges_free(&got);
  /* a rank's journal: its slab lines, a torn one left out */
  char *rp = ctr__journal_rank_path(m, 4, 2);
  CHECK(rp && strstr(rp, "j.partial.journal.4.2"));
  ctr__journal j;
  const ctr__journal_layout layout = {1, 1, 0, 0, 1, 0, 1};
  CHECK_OK(ctr__journal_create(&j, rp, 0xfeedull, &layout));
  CHECK_OK(ctr__journal_mark(&j, 0, 30, 4, &r[0].rec));
  CHECK_OK(ctr__journal_mark(&j, 9, 34, 2, &r[1].rec)); /* index beyond the layout: a range */
  ctr__journal_close(&j, 0);
  FILE *f = fopen(rp, "a");
  CHECK(f && fputs("slab 3 40 4 crc32 0000", f) >= 0);
  if (f) fclose(f);
  memset(&got, 0, sizeof got);
  CHECK_OK(ctr__journal_read_rank(rp, 0xfeedull, "resume", &got));
  CHECK_MSG(got.n == 2 && got.r[0].z0 == 30 && got.r[1].z0 == 34 && got.r[1].nz == 2,
            "%lld ranges", (long long)got.n);
  ctr__journal_ranges_free(&got);
  CHECK_OK(ctr__journal_read_rank(P("none.journal"), 1, "resume", &got)); /* none: none */
  CHECK(got.n == 0);
  free(rp);
  /* A one-process journal's plan line: its split and workers (a projection
   * split resumes on as many), absent in an older journal (the volume
   * split, one worker), refused beyond the bounds a resume relies on. */
  {
    const char *jp = P("plan.journal");
    const ctr__journal_layout proj = {8, 16, 2, 0, 3, 2, 3};
    CHECK_OK(ctr__journal_create(&j, jp, 0xfeedull, &proj));
    ctr__journal_close(&j, 0);
    CHECK_OK(ctr__journal_resume(&j, jp, 0xfeedull, "resume"));
    CHECK_MSG(j.split == 2 && j.workers == 3 && j.nslabs == 3, "split %d workers %d", j.split,
              j.workers);
    ctr__journal_close(&j, 0);
    const char *lines[3] = {"plan 8 16 2 0 3\n", "plan 8 16 2 0 3 2 99\n", "plan 8 16 2 0 3 7 2\n"};
    for (int k = 0; k < 3; k++) {
      FILE *pf = fopen(jp, "w");
      CHECK(pf && fprintf(pf, "ctrecon-journal 2\nfingerprint 00000000000feed\n%s", lines[k]) > 0);
      if (pf) fclose(pf);
      if (k == 0) {
        CHECK_OK(ctr__journal_resume(&j, jp, 0xfeedull, "resume"));
        CHECK_MSG(j.split == 0 && j.workers == 1, "older journal: split %d workers %d", j.split,
                  j.workers);
      } else {
        CHECK_FAILS(ctr__journal_resume(&j, jp, 0xfeedull, "resume"), CTR_E_FORMAT,
                    "plan.journal' is not a ctrecon journal");
      }
      ctr__journal_close(&j, 0);
    }
    remove(jp);
  }
  /* counts a resume loops over and slice ranges it adds up are bounded: a
   * master naming 2^40 ranks (or no generation) is damaged, and slab lines
   * whose z0 + nz would overflow are not slabs */
  static const char *const bad_heads[] = {
      "generation 1 ranks 1099511627776 previous 0 ranks 0 unit 0",
      "generation 0 ranks 2 previous 0 ranks 0 unit 0",
      "generation 2 ranks 2 previous 2 ranks 1 unit 0",
      "generation 2 ranks 2 previous 1 ranks -1 unit 0",
      "generation 1 ranks 2 previous 0 ranks 0 unit -8"};
  for (size_t k = 0; k < sizeof bad_heads / sizeof *bad_heads; k++) {
    f = fopen(m, "w");
    CHECK(f && fprintf(f, "ctrecon-distributed-journal 1\nfingerprint %016llx\n%s\n",
                       0xfeedull, bad_heads[k]) > 0);
    if (f) fclose(f);
    memset(&got, 0, sizeof got);
    CHECK_FAILS(ctr__journal_read_ranges(m, 0xfeedull, "resume", &got), CTR_E_FORMAT,
                "is not a ctrecon journal");
    ctr__journal_ranges_free(&got);
  }
  f = fopen(m, "w");
  CHECK(f && fprintf(f, "ctrecon-distributed-journal 1\nfingerprint %016llx\n"
                        "generation 1 ranks 2 previous 0 ranks 0 unit 0\n"
                        "slab 0 9223372036854775000 1000 crc32 0 range 0 1 clamped 0 0 done\n"
                        "slab 1 0 9223372036854775000 crc32 0 range 0 1 clamped 0 0 done\n"
                        "slab 2 8 4 crc32 0 range 0 1 clamped 0 0 done\n", 0xfeedull) > 0);
  if (f) fclose(f);
  memset(&got, 0, sizeof got);
  CHECK_OK(ctr__journal_read_ranges(m, 0xfeedull, "resume", &got));
  CHECK_MSG(got.n == 1 && got.r[0].z0 == 8 && got.r[0].nz == 4, "%lld ranges", (long long)got.n);
  ctr__journal_ranges_free(&got);
}

/* The ledger of a cluster of one: pieces in order, claims inside them. */
static void test_ledger(void) {
  ctr_cluster *c = NULL;
  CHECK_OK(ctr__cluster_local(&c));
  REQUIRE(c);
  CHECK(ctr_cluster_get_size(c) == 1 && ctr_cluster_get_rank(c) == 0 &&
        ctr_cluster_get_reporter(c) == 0);
  ctr__dist *d = NULL;
  CHECK_OK(ctr__dist_begin(c, NULL, "test", &d));
  REQUIRE(d);
  const ctr__piece pieces[2] = {{0, 10}, {20, 6}};
  const int owner[2] = {0, 0};
  CHECK_OK(ctr__dist_set_work(d, pieces, owner, 2));
  ctr__piece p;
  int got = 0, granted = 0;
  CHECK_OK(ctr__dist_next(d, &p, &got));
  CHECK(got == 1 && p.z0 == 0 && p.nz == 10);
  CHECK_OK(ctr__dist_claim(d, 0, 4, &granted));
  CHECK(granted == 1);
  CHECK_OK(ctr__dist_claim(d, 8, 4, &granted)); /* beyond the piece */
  CHECK(granted == 0);
  CHECK_OK(ctr__dist_claim(d, 2, 2, &granted)); /* already claimed */
  CHECK(granted == 0);
  CHECK_OK(ctr__dist_next(d, &p, &got));
  CHECK(got == 1 && p.z0 == 20 && p.nz == 6);
  CHECK_OK(ctr__dist_next(d, &p, &got));
  CHECK(got == 0);
  uint64_t fp[3] = {7, 8, 9}, root = 0;
  CHECK_OK(ctr__dist_same_run(d, CTR_OK, fp, "in.raw", &root));
  CHECK(root == 8);
  ctr_error_clear();
  CHECK(ctr__dist_gather(d, CTR_E_IO, NULL, 0, NULL) == CTR_E_IO);
  ctr__dist_end(d);
  ctr_cluster_free(c);
  CHECK_FAILS(ctr_cluster_agree(NULL, CTR_OK, NULL), CTR_E_INVALID_ARGUMENT, "cluster is NULL");
  CHECK(ctr_cluster_get_size(NULL) == 1 && ctr_cluster_get_rank(NULL) == 0);
#if !CTR_HAVE_MPI
  ctr_cluster *none = NULL;
  CHECK_FAILS(ctr_cluster_create(NULL, &none), CTR_E_UNSUPPORTED, "no MPI support");
#endif
}

/* ctr_fdk_stream on a cluster of one, interrupted and resumed across. */
/* ctr_fdk_stream into out, stopped by the test hook after `after` journalled
 * subvolumes: it must fail as cancelled, saying so. */
static void fdk_stopped(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_stream_options *o,
                        ctr_stack_reader *in, const char *out, const char *after,
                        ctr_fdk_stream_report *rep) {
  char said[32];
  snprintf(said, sizeof said, "stopped after %s", after);
  setenv("CTRECON_INJECT_STOP_AFTER_SLABS", after, 1);
  CHECK_FAILS(ctr_fdk_stream(ctx, g, o, in, out, CTR_FORMAT_AUTO, rep), CTR_E_CANCELLED, said);
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
}

static void test_stream_local(void) {
  ctr_geometry *g = geometry(16, 28, 24, 21, 0);
  REQUIRE(g);
  const int64_t n = g->nu * g->nv * g->nviews;
  float *proj = malloc(sizeof(float) * (size_t)n);
  REQUIRE(proj);
  for (int64_t i = 0; i < n; i++) proj[i] = (float)th_uniform(0, 2);
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = g->nu;
  info.height = g->nv;
  info.count = g->nviews;
  info.dtype = CTR_DTYPE_FLOAT32;
  CHECK_OK(ctr_stack_save(P("p.raw"), CTR_FORMAT_RAW, &info, CTR_DTYPE_FLOAT32, proj, 0));
  free(proj);
  ctr_stack_reader *in = NULL;
  CHECK_OK(ctr_stack_open(P("p.raw"), CTR_FORMAT_RAW, &info, 0, &in));
  ctr_context *ctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &ctx));
  ctr_cluster *c = NULL;
  CHECK_OK(ctr__cluster_local(&c));
  REQUIRE(in && ctx && c);
  ctr_fdk_stream_options o = CTR_FDK_STREAM_OPTIONS_INIT;
  o.max_slab_slices = 4;
  CHECK_OK(ctr_fdk_stream(ctx, g, &o, in, P("one.raw"), CTR_FORMAT_AUTO, NULL));
  o.cluster = c;
  CHECK_OK(ctr_fdk_stream(ctx, g, &o, in, P("dist.raw"), CTR_FORMAT_AUTO, NULL));
  CHECK(same_files(P("one.raw"), P("dist.raw")));
  CHECK(!exists(P("dist.raw.partial")) && !exists(P("dist.raw.partial.journal")) &&
        !exists(P("dist.raw.partial.journal.1.0")));
  /* interrupted on a cluster (of one), resumed without one */
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  fdk_stopped(ctx, g, &o, in, P("r.raw"), "2", &rep);
  CHECK(rep.resumable == 1 && strstr(rep.journal, "r.raw.partial.journal"));
  CHECK(ctr__journal_kind(P("r.raw.partial.journal")) == 2);
  CHECK(ctr__dist_output_is_distributed(P("r.raw")));
  o.cluster = NULL;
  o.resume = 1;
  rep = (ctr_fdk_stream_report)CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(ctr_fdk_stream(ctx, g, &o, in, P("r.raw"), CTR_FORMAT_AUTO, &rep));
  CHECK_MSG(rep.slices_resumed == 8, "%lld slices resumed", (long long)rep.slices_resumed);
  CHECK(same_files(P("one.raw"), P("r.raw")));
  /* a one-process run interrupted, resumed on a cluster */
  o.resume = 0;
  fdk_stopped(ctx, g, &o, in, P("s.raw"), "1", NULL);
  CHECK(ctr__journal_kind(P("s.raw.partial.journal")) == 1);
  o.resume = 1;
  o.cluster = c;
  CHECK_OK(ctr_fdk_stream(ctx, g, &o, in, P("s.raw"), CTR_FORMAT_AUTO, NULL));
  CHECK(same_files(P("one.raw"), P("s.raw")));
  /* a fresh distributed run over an interrupted one is refused */
  o.resume = 0;
  fdk_stopped(ctx, g, &o, in, P("t.raw"), "1", NULL);
  CHECK_FAILS(ctr_fdk_stream(ctx, g, &o, in, P("t.raw"), CTR_FORMAT_AUTO, NULL),
              CTR_E_INVALID_ARGUMENT, "holds an interrupted run");
  /* a distributed run writes raw, nrrd or a TIFF stack */
  CHECK_FAILS(ctr_fdk_stream(ctx, g, &o, in, P("m.tif"), CTR_FORMAT_AUTO, NULL),
              CTR_E_UNSUPPORTED, "a distributed run writes raw, nrrd or a TIFF stack");
  ctr_cluster_free(c);
  ctr_context_free(ctx);
  ctr_stack_close(in);
  ctr_geometry_free(g);
}

int main(void) {
  if (!scratch_open("ctr-dist")) return 1;
  test_row_band();
  test_window_bits();
  test_journals();
  test_ledger();
  test_stream_local();
  scratch_close();
  return th_finish("test_distributed");
}

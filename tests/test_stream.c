/* Streamed (out-of-core) FDK on the CPU backend: ctr_fdk_stream_memory and
 * ctr_fdk_stream against the in-core ctr_fdk for forced decompositions
 * (subvolume sizes, views per batch, stores), every output format, uint16
 * input and output, interruption and --resume (byte-identical results),
 * the refusals around the journal, and error paths (missing directory,
 * truncated projections, a full disk). Runs in a fresh directory under /tmp
 * that is removed at the end. */
#include "harness.h"
#include "lock_holder.h"
#include "scratch_dir.h"

#include "io/stack_partial.h"
#include "stream/journal.h"

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NU = 48, NV = 40, NVIEWS = 40, N = 32 };
#define NPROJ ((size_t)NU * NV * NVIEWS)
#define NSLICE ((size_t)N * N)
#define NVOX (NSLICE * N)
#define U16_SCALE 500.0

static ctr_context *g_ctx;
static ctr_geometry *g_geom;
static float *g_proj;     /* Shepp-Logan line integrals */
static uint16_t *g_proj16; /* the same x U16_SCALE, rounded */
static float *g_ref;      /* in-core ctr_fdk of g_proj (ram-lak) */
static float *g_ref16;    /* streamed in-memory FDK of g_proj16 / U16_SCALE, one subvolume */
static int g_exact, g_compared; /* comparisons that were bit-identical */

/* ---- Helpers --------------------------------------------------------------------- */

/* FNV-1a of a whole file (0 if it cannot be read). */
static uint64_t file_hash(const char *path) {
  long long n;
  unsigned char *b = read_all(path, &n);
  if (!b) return 0;
  uint64_t h = 1469598103934665603ull;
  for (long long i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  free(b);
  return h ^ (uint64_t)n;
}

/* Entries under the scratch directory whose path contains `needle` (NULL:
 * all entries but the directory itself). */
static const char *g_needle;
static int g_count;
static int count_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag;
  if (ftw->level == 0) return 0;
  if (!g_needle || strstr(path + strlen(g_dir), g_needle)) g_count++;
  return 0;
}
static int count_entries(const char *needle) {
  g_needle = needle;
  g_count = 0;
  nftw(g_dir, count_cb, 16, FTW_PHYS);
  return g_count;
}

/* Leftovers of a streamed run: partial files, journals, scratch files,
 * temporaries. */
static int leftovers(void) {
  return count_entries(".partial") + count_entries(".scratch.") + count_entries(".tmp.");
}

/* |a - b| <= 1e-6 max|ref| everywhere (NaN fails); counts exact equality. */
static int close_volumes(const float *a, const float *ref, size_t n, const char *what) {
  double mx = 0, worst = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)a[i] - (double)ref[i]);
    if (!(d <= 1e-6 * mx)) bad++;
    if (d > worst || d != d) worst = d;
  }
  const int exact = memcmp(a, ref, n * sizeof(float)) == 0;
  g_compared++;
  g_exact += exact;
  CHECK_MSG(mx > 0 && bad == 0, "%s: %d voxels differ by more than 1e-6 x %g (worst %g)", what,
            bad, mx, worst);
  return bad == 0 && mx > 0;
}

static ctr_fdk_stream_options stream_opts(int64_t max_slab, int64_t vpb, ctr_fdk_store store) {
  ctr_fdk_stream_options o = CTR_FDK_STREAM_OPTIONS_INIT;
  o.max_slab_slices = max_slab;
  o.fdk.views_per_batch = vpb;
  o.store = store;
  o.scratch_dir = g_dir; /* memory runs: keep the scratch file out of the cwd */
  return o;
}

static ctr_stack_reader *open_raw(const char *path, ctr_dtype dt) {
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint.width = NU;
  hint.height = NV;
  hint.count = NVIEWS;
  hint.dtype = dt;
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_RAW, &hint, 0, &r));
  return r;
}

/* A volume file read back as float32 (NULL on failure). */
static float *load_volume(const char *path, int64_t nz, ctr_stack_info *info_out) {
  ctr_stack_info hint = CTR_STACK_INFO_INIT, info = CTR_STACK_INFO_INIT;
  hint.width = N;
  hint.height = N;
  hint.count = nz;
  hint.dtype = CTR_DTYPE_FLOAT32;
  ctr_file_format fmt = CTR_FORMAT_AUTO;
  ctr_format_guess(path, &fmt);
  void *data = NULL;
  ctr_status st = ctr_stack_load(path, CTR_FORMAT_AUTO, fmt == CTR_FORMAT_RAW ? &hint : NULL,
                                 CTR_DTYPE_FLOAT32, &info, &data);
  CHECK_MSG(st == CTR_OK, "load %s: %s", path, ctr_error_detail());
  if (st != CTR_OK) return NULL;
  CHECK_MSG(info.width == N && info.height == N && info.count == nz, "%s: %lld x %lld x %lld",
            path, (long long)info.width, (long long)info.height, (long long)info.count);
  if (info_out) *info_out = info;
  if (info.count != nz) {
    free(data);
    return NULL;
  }
  return data;
}

static int64_t nslabs_for(int64_t nz, int64_t max_slab) {
  const int64_t zs = max_slab > 0 && max_slab < nz ? max_slab : nz;
  return (nz + zs - 1) / zs;
}

/* ---- Setup ------------------------------------------------------------------------- */

static int setup(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  CHECK_OK(ctr_context_create(&co, &g_ctx));
  if (!g_ctx) return 0;
  /* As tests/cli_roundtrip.sh: 48 x 40 pixels of 9 x 12 mm cover the 256 mm
   * cube of 32^3 voxels of 8 mm. */
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = NU;
  p.nv = NV;
  p.du = 9;
  p.dv = 12;
  p.nviews = NVIEWS;
  ctr_volume_geometry vol = {N, N, N, 8, 8, 8, 0, 0, 0};
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g_geom));
  if (!g_geom) return 0;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_phantom_shepp_logan(0.95 * 128, 1.0, &ph));
  if (!ph) return 0;
  g_proj = malloc(NPROJ * sizeof(float));
  g_proj16 = malloc(NPROJ * sizeof(uint16_t));
  g_ref = malloc(NVOX * sizeof(float));
  g_ref16 = malloc(NVOX * sizeof(float));
  int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array pa16 = ctr_array_make(g_proj16, CTR_DTYPE_UINT16, 3, pd);
  ctr_array va = ctr_array_make(g_ref, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_array va16 = ctr_array_make(g_ref16, CTR_DTYPE_FLOAT32, 3, vd);
  CHECK_OK(ctr_phantom_project(g_ctx, ph, g_geom, 1, &pa));
  ctr_phantom_free(ph);
  double pmax = 0;
  for (size_t i = 0; i < NPROJ; i++) {
    pmax = fmax(pmax, g_proj[i]);
    g_proj16[i] = (uint16_t)lrint(g_proj[i] * U16_SCALE);
  }
  printf("projections: max line integral %.2f (x %g = %.0f in uint16)\n", pmax, U16_SCALE,
         pmax * U16_SCALE);
  CHECK(pmax > 10 && pmax * U16_SCALE < 65535);
  ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
  CHECK_OK(ctr_fdk(g_ctx, g_geom, &fo, &pa, &va));
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.input_scale = U16_SCALE;
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &so, &pa16, &va16, NULL));
  /* Sanity of the reference: the Shepp-Logan skull (1.0) and brain (0.2). */
  double mx = 0;
  for (size_t i = 0; i < NVOX; i++) mx = fmax(mx, g_ref[i]);
  printf("reference: max %.3f, centre %.3f\n", mx, g_ref[(N / 2 * N + N / 2) * N + N / 2]);
  CHECK(mx > 0.4 && mx < 1.5);
  /* uint16 quantisation (1/500) changes the result by far less than 1 %. */
  double e = 0, s = 0;
  for (size_t i = 0; i < NVOX; i++) {
    e += ((double)g_ref16[i] - g_ref[i]) * ((double)g_ref16[i] - g_ref[i]);
    s += (double)g_ref[i] * g_ref[i];
  }
  CHECK_MSG(s > 0 && sqrt(e / s) < 1e-2, "uint16 input: relative RMS %g", sqrt(e / s));
  return 1;
}

/* ---- In-memory forced splits -------------------------------------------------------- */

static float *g_slab_seen; /* on_slab of the in-memory path */
static int g_slab_calls, g_scratch_seen;
static void on_slab_memory(void *user, int64_t z0, int64_t nz, const float *slab) {
  (void)user;
  g_slab_calls++;
  if (z0 == 0 && nz == N) memcpy(g_slab_seen, slab, NVOX * sizeof(float));
  g_scratch_seen = count_entries(".scratch.");
}

static void test_memory_splits(void) {
  float *vol = malloc(NVOX * sizeof(float));
  g_slab_seen = malloc(NVOX * sizeof(float));
  int64_t pd[3] = {NU, NV, NVIEWS}, vd[3] = {N, N, N};
  ctr_array pa = ctr_array_make(g_proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  const int64_t slabs[] = {0, 1, 5, 7};
  const int64_t vpbs[] = {0, 3, 7};
  const ctr_fdk_store stores[] = {CTR_FDK_STORE_AUTO, CTR_FDK_STORE_HOST, CTR_FDK_STORE_SCRATCH, CTR_FDK_STORE_NONE};
  int runs = 0;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) {
        char what[96];
        snprintf(what, sizeof what, "memory max_slab %lld vpb %lld store %s", (long long)slabs[a],
                 (long long)vpbs[b], ctr_fdk_store_name(stores[c]));
        ctr_fdk_stream_options o = stream_opts(slabs[a], vpbs[b], stores[c]);
        o.on_slab = on_slab_memory;
        const int64_t nslabs = nslabs_for(N, slabs[a]);
        for (size_t i = 0; i < NVOX; i++) vol[i] = NAN;
        g_slab_calls = 0;
        g_scratch_seen = -1;
        ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
        ctr_error_clear();
        ctr_status st = ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep);
        if (stores[c] == CTR_FDK_STORE_NONE && nslabs > 1) {
          /* "none" keeps nothing: it cannot serve several subvolumes. */
          CHECK_MSG(st != CTR_OK, "%s: accepted", what);
          continue;
        }
        CHECK_MSG(st == CTR_OK, "%s: %s: %s", what, ctr_status_name(st), ctr_error_detail());
        if (st != CTR_OK) continue;
        runs++;
        close_volumes(vol, g_ref, NVOX, what);
        const ctr_fdk_store want = stores[c] != CTR_FDK_STORE_AUTO ? stores[c]
                               : nslabs > 1                ? CTR_FDK_STORE_HOST
                                                           : CTR_FDK_STORE_NONE;
        CHECK_MSG(rep.plan.nslabs == nslabs && rep.plan.store == want,
                  "%s: plan %lld subvolumes, store %s", what, (long long)rep.plan.nslabs,
                  ctr_fdk_store_name(rep.plan.store));
        CHECK_MSG(rep.plan.views_per_batch == (vpbs[b] ? vpbs[b] : 32), "%s: N' %lld", what,
                  (long long)rep.plan.views_per_batch);
        CHECK_MSG(rep.plan.read_buffers == 0 && rep.plan.host_slab_buffers == 0,
                  "%s: buffers for an in-memory run", what);
        CHECK(rep.slabs_resumed == 0 && rep.nonfinite == 0);
        float mn = INFINITY, mx = -INFINITY;
        for (size_t i = 0; i < NVOX; i++) {
          mn = fminf(mn, vol[i]);
          mx = fmaxf(mx, vol[i]);
        }
        CHECK_MSG(rep.min == mn && rep.max == mx, "%s: report range %g..%g, volume %g..%g", what,
                  rep.min, rep.max, mn, mx);
        CHECK_MSG(g_slab_calls == 1 && !memcmp(g_slab_seen, vol, NVOX * sizeof(float)),
                  "%s: on_slab called %d times", what, g_slab_calls);
        /* The scratch file exists in scratch_dir during a scratch run only. */
        CHECK_MSG(g_scratch_seen == (rep.plan.store == CTR_FDK_STORE_SCRATCH),
                  "%s: %d scratch files seen in %s during the run", what, g_scratch_seen, g_dir);
        CHECK_MSG(count_entries(".scratch.") == 0, "%s: scratch file left", what);
      }
  CHECK(runs == 4 * 3 * 4 - 3 * 3); /* all but "none" with several subvolumes */

  /* A slab of slices [5, 25) in subvolumes of 6, uint16 input with a scale. */
  ctr_fdk_stream_options o = stream_opts(6, 7, CTR_FDK_STORE_HOST);
  o.fdk.z0 = 5;
  o.fdk.nz = 20;
  int64_t sd[3] = {N, N, 20};
  ctr_array sa = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, sd);
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &sa, &rep));
  CHECK(rep.plan.z0 == 5 && rep.plan.nz == 20 && rep.plan.nslabs == 4);
  close_volumes(vol, g_ref + 5 * NSLICE, 20 * NSLICE, "memory slab [5, 25)");
  ctr_array pa16 = ctr_array_make(g_proj16, CTR_DTYPE_UINT16, 3, pd);
  for (int c = 0; c < 2; c++) {
    o = stream_opts(7, 3, c ? CTR_FDK_STORE_SCRATCH : CTR_FDK_STORE_HOST);
    o.input_scale = U16_SCALE;
    CHECK_OK(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa16, &va, &rep));
    close_volumes(vol, g_ref16, NVOX, "memory uint16 input, subvolumes of 7");
  }
  /* A host budget too small for any plan is refused, naming --host-budget. */
  o = stream_opts(0, 0, CTR_FDK_STORE_AUTO);
  o.host_budget = 1024;
  CHECK_FAILS(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep), CTR_E_OUT_OF_MEMORY,
              "(host_budget)");
  o = stream_opts(0, 0, CTR_FDK_STORE_AUTO);
  o.version = 0;
  CHECK_FAILS(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep), CTR_E_INVALID_ARGUMENT,
              "version");
  o = stream_opts(0, 0, CTR_FDK_STORE_AUTO);
  o.input_scale = -1;
  CHECK_FAILS(ctr_fdk_stream_memory(g_ctx, g_geom, &o, &pa, &va, &rep), CTR_E_INVALID_ARGUMENT,
              "input_scale");
  free(vol);
  free(g_slab_seen);
}

/* ---- Files: formats, dtypes ----------------------------------------------------------- */

/* on_slab of the file path: which slices came, equal to the reference, and
 * whether the scratch file was where it should be meanwhile. */
static int g_seen[N];
static int g_on_slab_bad, g_scratch_in_dir;
static const char *g_scratch_probe_dir;
static const float *g_expect;
static int g_expect_z0;
static void on_slab_file(void *user, int64_t z0, int64_t nz, const float *slab) {
  (void)user;
  for (int64_t k = 0; k < nz; k++) {
    const int64_t z = z0 + k;
    if (z < 0 || z >= N) {
      g_on_slab_bad++;
      continue;
    }
    g_seen[z]++;
    if (g_expect && memcmp(slab + k * NSLICE, g_expect + (z - g_expect_z0) * NSLICE,
                           NSLICE * sizeof(float)))
      g_on_slab_bad++;
  }
  if (g_scratch_probe_dir) {
    DIR *d = opendir(g_scratch_probe_dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
      if (strstr(e->d_name, ".scratch.")) g_scratch_in_dir = 1;
    if (d) closedir(d);
  }
}

static void test_file_formats(void) {
  const int tiff = (ctr_features() & CTR_FEATURE_TIFF) != 0;
  ctr_stack_info pinfo = CTR_STACK_INFO_INIT;
  pinfo.width = NU;
  pinfo.height = NV;
  pinfo.count = NVIEWS;
  pinfo.dtype = CTR_DTYPE_FLOAT32;
  CHECK_OK(ctr_stack_save(P("p.raw"), CTR_FORMAT_RAW, &pinfo, CTR_DTYPE_FLOAT32, g_proj, 0));
  CHECK_OK(ctr_stack_save(P("p.nrrd"), CTR_FORMAT_NRRD, &pinfo, CTR_DTYPE_FLOAT32, g_proj, 0));
  pinfo.dtype = CTR_DTYPE_UINT16;
  CHECK_OK(ctr_stack_save(P("q.raw"), CTR_FORMAT_RAW, &pinfo, CTR_DTYPE_UINT16, g_proj16, 0));
  CHECK(file_size(P("q.raw")) == (long long)(NPROJ * 2));

  ctr_stack_reader *praw = open_raw(P("p.raw"), CTR_DTYPE_FLOAT32);
  ctr_stack_reader *qraw = open_raw(P("q.raw"), CTR_DTYPE_UINT16);
  ctr_stack_reader *pnrrd = NULL;
  CHECK_OK(ctr_stack_open(P("p.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &pnrrd));
  if (!praw || !qraw || !pnrrd) goto done;
  mkdir(P("ts"), 0777);
  mkdir(P("sd"), 0777);
  static const struct {
    const char *out;
    int needs_tiff;
    ctr_fdk_store store;
    int64_t max_slab, vpb;
  } outs[] = {
      {"v.raw", 0, CTR_FDK_STORE_HOST, 5, 7},     {"v.nrrd", 0, CTR_FDK_STORE_SCRATCH, 7, 3},
      {"vh.nhdr", 0, CTR_FDK_STORE_HOST, 1, 3},   {"ts/v_%03d.tif", 1, CTR_FDK_STORE_SCRATCH, 5, 7},
      {"v.tif", 1, CTR_FDK_STORE_HOST, 7, 7},     {"v1.raw", 0, CTR_FDK_STORE_AUTO, 0, 0},
  };
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    if (outs[i].needs_tiff && !tiff) {
      printf("%s: SKIPPED (no TIFF support built)\n", outs[i].out);
      continue;
    }
    for (int src = 0; src < 3; src++) {
      /* Output name: a prefix per source ("", "n_", "q_") on the file name. */
      char name[64], what[128];
      const char *prefix = src == 0 ? "" : src == 1 ? "n_" : "q_";
      const char *slash = strchr(outs[i].out, '/');
      if (slash)
        snprintf(name, sizeof name, "%.*s%s%s", (int)(slash + 1 - outs[i].out), outs[i].out,
                 prefix, slash + 1);
      else
        snprintf(name, sizeof name, "%s%s", prefix, outs[i].out);
      snprintf(what, sizeof what, "%s from %s", name,
               src == 0 ? "p.raw" : src == 1 ? "p.nrrd" : "q.raw (uint16)");
      ctr_fdk_stream_options o = stream_opts(outs[i].max_slab, outs[i].vpb, outs[i].store);
      o.scratch_dir = NULL; /* default: beside the output */
      if (src == 2) o.input_scale = U16_SCALE;
      o.on_slab = on_slab_file;
      memset(g_seen, 0, sizeof g_seen);
      g_on_slab_bad = 0;
      g_scratch_in_dir = 0;
      g_expect = src == 2 ? g_ref16 : g_ref;
      g_expect_z0 = 0;
      /* The scratch file sits beside the output: in ts/ for the TIFF stack. */
      static char probe[600];
      snprintf(probe, sizeof probe, "%s", P(strchr(name, '/') ? "ts" : "."));
      g_scratch_probe_dir = probe;
      ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
      ctr_stack_reader *rd = src == 0 ? praw : src == 1 ? pnrrd : qraw;
      ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, P(name), CTR_FORMAT_AUTO, &rep);
      CHECK_MSG(st == CTR_OK, "%s: %s: %s", what, ctr_status_name(st), ctr_error_detail());
      if (st != CTR_OK) continue;
      const int64_t nslabs = nslabs_for(N, outs[i].max_slab);
      CHECK_MSG(rep.plan.nslabs == nslabs, "%s: %lld subvolumes", what, (long long)rep.plan.nslabs);
      if (outs[i].store != CTR_FDK_STORE_AUTO) CHECK(rep.plan.store == outs[i].store);
      CHECK_MSG(rep.plan.read_buffers > 0 && rep.plan.host_slab_buffers > 0,
                "%s: no read/write buffers", what);
      int all_once = 1;
      for (int z = 0; z < N; z++) all_once &= g_seen[z] == 1;
      CHECK_MSG(all_once && g_on_slab_bad == 0, "%s: on_slab slices wrong (%d bad)", what,
                g_on_slab_bad);
      CHECK_MSG(g_scratch_in_dir == (rep.plan.store == CTR_FDK_STORE_SCRATCH),
                "%s: scratch file beside the output during the run: %d", what, g_scratch_in_dir);
      CHECK_MSG(leftovers() == 0, "%s: %d leftovers (partial, journal, scratch)", what,
                leftovers());
      ctr_stack_info info = CTR_STACK_INFO_INIT;
      float *v = load_volume(P(name), N, &info);
      if (v) {
        close_volumes(v, src == 2 ? g_ref16 : g_ref, NVOX, what);
        float mn = INFINITY, mx = -INFINITY;
        for (size_t k = 0; k < NVOX; k++) {
          mn = fminf(mn, v[k]);
          mx = fmaxf(mx, v[k]);
        }
        CHECK_MSG(rep.min == mn && rep.max == mx, "%s: report range %g..%g, file %g..%g", what,
                  rep.min, rep.max, mn, mx);
        if (strstr(name, ".nrrd") || strstr(name, ".nhdr"))
          CHECK_MSG(info.spacing[2] == 8 && info.origin[2] == -124, "%s: spacing %g origin %g",
                    what, info.spacing[2], info.origin[2]);
      }
      free(v);
    }
  }
  /* The scratch file goes to scratch_dir when one is given. */
  {
    ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_SCRATCH);
    o.scratch_dir = P("sd");
    o.on_slab = on_slab_file;
    g_expect = NULL;
    memset(g_seen, 0, sizeof g_seen);
    g_scratch_in_dir = 0;
    static char probe[600];
    snprintf(probe, sizeof probe, "%s", P("sd"));
    g_scratch_probe_dir = probe;
    CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, praw, P("sd.raw"), CTR_FORMAT_AUTO, NULL));
    CHECK_MSG(g_scratch_in_dir == 1, "scratch file not in scratch_dir");
    CHECK(count_entries(".scratch.") == 0);
    float *v = load_volume(P("sd.raw"), N, NULL);
    if (v) close_volumes(v, g_ref, NVOX, "scratch_dir run");
    free(v);
  }
done:
  g_scratch_probe_dir = NULL;
  g_expect = NULL;
  /* A slab [5, 25) to NRRD: 20 slices whose origin is slice 5's. */
  if (praw) {
    ctr_fdk_stream_options o = stream_opts(6, 7, CTR_FDK_STORE_HOST);
    o.fdk.z0 = 5;
    o.fdk.nz = 20;
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, praw, P("slab.nrrd"), CTR_FORMAT_AUTO, &rep));
    CHECK(rep.plan.nslabs == 4 && rep.plan.z0 == 5 && rep.plan.nz == 20);
    ctr_stack_info info = CTR_STACK_INFO_INIT;
    float *v = load_volume(P("slab.nrrd"), 20, &info);
    if (v) {
      close_volumes(v, g_ref + 5 * NSLICE, 20 * NSLICE, "file slab [5, 25)");
      CHECK_MSG(info.origin[2] == -124 + 5 * 8, "slab origin z %g", info.origin[2]);
    }
    free(v);
    /* uint16 output: value x out_scale, rounded, clamped at 0. */
    o = stream_opts(5, 7, CTR_FDK_STORE_SCRATCH);
    o.out_dtype = CTR_DTYPE_UINT16;
    o.out_scale = 1000;
    CHECK_OK(ctr_fdk_stream(g_ctx, g_geom, &o, praw, P("v16.raw"), CTR_FORMAT_AUTO, &rep));
    CHECK(file_size(P("v16.raw")) == (long long)(NVOX * 2));
    long long n;
    unsigned char *b = read_all(P("v16.raw"), &n);
    if (b && n == (long long)(NVOX * 2)) {
      int64_t wrong = 0, below = 0;
      for (size_t k = 0; k < NVOX; k++) {
        const float x = g_ref[k] * 1000.0f;
        long e = x < 0 ? 0 : x > 65535 ? 65535 : lrintf(x);
        if (x <= -0.5f) below++;
        uint16_t got;
        memcpy(&got, b + 2 * k, 2);
        if (labs((long)got - e) > 1) wrong++; /* 1e-6 relative of the reference */
      }
      CHECK_MSG(wrong == 0, "uint16 output: %lld voxels differ", (long long)wrong);
      CHECK_MSG(rep.below == below && rep.above == 0 && below > 0,
                "uint16 output: report below %lld above %lld, expected %lld and 0",
                (long long)rep.below, (long long)rep.above, (long long)below);
    }
    free(b);
  }
  ctr_stack_close(praw);
  ctr_stack_close(qraw);
  ctr_stack_close(pnrrd);
}

/* ---- Interruption and resume ------------------------------------------------------------ */

static ctr_status run_raw(ctr_stack_reader *rd, const char *out, int resume, ctr_window w,
                          ctr_fdk_stream_report *rep) {
  ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_HOST);
  o.resume = resume;
  o.fdk.window = w;
  ctr_error_clear();
  return ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, rep);
}

/* Lines "slab ... done" in a journal. */
static int journal_slabs(const char *path) {
  FILE *f = fopen(path, "r");
  char line[256];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "slab ", 5) && strstr(line, " done")) n++;
  if (f) fclose(f);
  return n;
}

static char g_jpath[700], g_ppath[700];
static const char *partial_of(const char *out) {
  snprintf(g_ppath, sizeof g_ppath, "%s.partial", out);
  return g_ppath;
}
static const char *journal_of(const char *out) {
  snprintf(g_jpath, sizeof g_jpath, "%s.partial.journal", out);
  return g_jpath;
}

static int g_progress_calls, g_cancel_after;
static int cancel_progress(void *user, const char *stage, double fraction) {
  (void)user, (void)stage, (void)fraction;
  return ++g_progress_calls > g_cancel_after;
}

static void test_resume(void) {
  ctr_stack_reader *rd = open_raw(P("p.raw"), CTR_DTYPE_FLOAT32);
  if (!rd) return;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  CHECK_OK(run_raw(rd, P("full.raw"), 0, CTR_WINDOW_RAM_LAK, &rep));
  const int64_t nslabs = rep.plan.nslabs;
  CHECK(nslabs == 7);
  const uint64_t full_hash = file_hash(P("full.raw"));
  CHECK(file_size(P("full.raw")) == (long long)(NVOX * 4) && full_hash != 0);
  {
    float *v = load_volume(P("full.raw"), N, NULL);
    if (v) close_volumes(v, g_ref, NVOX, "uninterrupted run");
    free(v);
  }
  const int64_t ks[3] = {1, 2, nslabs - 1};
  for (int i = 0; i < 3; i++) {
    const int64_t k = ks[i];
    char out[512], env[32];
    snprintf(out, sizeof out, "%s", P(i == 0 ? "r1.raw" : i == 1 ? "r2.raw" : "r6.raw"));
    snprintf(env, sizeof env, "%lld", (long long)k);
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", env, 1);
    ctr_status st = run_raw(rd, out, 0, CTR_WINDOW_RAM_LAK, &rep);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK_MSG(st == CTR_E_CANCELLED, "stop after %lld: %s: %s", (long long)k,
              ctr_status_name(st), ctr_error_detail());
    CHECK_MSG(!exists(out) && exists(partial_of(out)) && exists(journal_of(out)),
              "stop after %lld: output %d, partial %d, journal %d", (long long)k, exists(out),
              exists(partial_of(out)), exists(journal_of(out)));
    CHECK_MSG(journal_slabs(journal_of(out)) == k, "stop after %lld: journal has %d subvolumes",
              (long long)k, journal_slabs(journal_of(out)));
    /* The report says where the journal is and that it can be resumed. */
    CHECK_MSG(rep.resumable == 1 && !strcmp(rep.journal, journal_of(out)),
              "stop after %lld: report resumable %d, journal '%s'", (long long)k, rep.resumable,
              rep.journal);
    if (k == 2) {
      /* Refusals leave the interrupted run intact (and resumable). */
      CHECK_FAILS(run_raw(rd, out, 0, CTR_WINDOW_RAM_LAK, &rep), CTR_E_INVALID_ARGUMENT,
                  "set ctr_fdk_stream_options.resume");
      CHECK(!exists(out) && exists(partial_of(out)) && exists(journal_of(out)));
      CHECK(journal_slabs(journal_of(out)) == 2);
      CHECK(rep.resumable == 1 && !strcmp(rep.journal, journal_of(out)));
      CHECK_FAILS(run_raw(rd, out, 1, CTR_WINDOW_HANN, &rep), CTR_E_INVALID_ARGUMENT,
                  "cannot resume");
      CHECK(!exists(out) && exists(partial_of(out)) && exists(journal_of(out)));
      CHECK(journal_slabs(journal_of(out)) == 2);
      CHECK(rep.resumable == 1 && !strcmp(rep.journal, journal_of(out)));
      /* An interruption of the resumed run: resume again. */
      setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
      st = run_raw(rd, out, 1, CTR_WINDOW_RAM_LAK, &rep);
      unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
      CHECK_MSG(st == CTR_E_CANCELLED && rep.slabs_resumed == 2,
                "second interruption: %s, %lld resumed", ctr_status_name(st),
                (long long)rep.slabs_resumed);
      CHECK(!exists(out) && journal_slabs(journal_of(out)) == 4);
      st = run_raw(rd, out, 1, CTR_WINDOW_RAM_LAK, &rep);
      CHECK_MSG(st == CTR_OK && rep.slabs_resumed == 4, "resume after two interruptions: %s (%s), "
                "%lld resumed", ctr_status_name(st), ctr_error_detail(),
                (long long)rep.slabs_resumed);
      CHECK(rep.resumable == 0 && rep.journal[0] == 0);
    } else if (k == 1) {
      /* The decomposition comes from the journal: other subvolume / batch
       * sizes and store in the resuming call do not matter. */
      ctr_fdk_stream_options o = stream_opts(3, 3, CTR_FDK_STORE_SCRATCH);
      o.resume = 1;
      o.scratch_dir = NULL;
      st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep);
      CHECK_MSG(st == CTR_OK && rep.slabs_resumed == 1 && rep.plan.slab_slices == 5 &&
                    rep.plan.views_per_batch == 7 && rep.plan.store == CTR_FDK_STORE_HOST,
                "resume with other sizes: %s (%s), %lld resumed, plan %lld / %lld / %s",
                ctr_status_name(st), ctr_error_detail(), (long long)rep.slabs_resumed,
                (long long)rep.plan.slab_slices, (long long)rep.plan.views_per_batch,
                ctr_fdk_store_name(rep.plan.store));
    } else {
      st = run_raw(rd, out, 1, CTR_WINDOW_RAM_LAK, &rep);
      CHECK_MSG(st == CTR_OK && rep.slabs_resumed == k, "resume after %lld: %s (%s), %lld resumed",
                (long long)k, ctr_status_name(st), ctr_error_detail(),
                (long long)rep.slabs_resumed);
    }
    CHECK_MSG(exists(out) && file_hash(out) == full_hash && same_files(out, P("full.raw")),
              "resume after %lld: output differs from the uninterrupted run", (long long)k);
    CHECK_MSG(!exists(partial_of(out)) && !exists(journal_of(out)),
              "resume after %lld: partial or journal left", (long long)k);
  }
  /* Resume without a journal: refused, nothing created. */
  CHECK_FAILS(run_raw(rd, P("fresh.raw"), 1, CTR_WINDOW_RAM_LAK, &rep), CTR_E_IO, "journal");
  CHECK(!exists(P("fresh.raw")) && !exists(P("fresh.raw.partial")) &&
        !exists(P("fresh.raw.partial.journal")));
  CHECK(rep.resumable == 0 && rep.journal[0] == 0);
  /* A damaged journal: the report names it and says a resume cannot help. */
  setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "1", 1);
  CHECK_FAILS(run_raw(rd, P("dam.raw"), 0, CTR_WINDOW_RAM_LAK, &rep), CTR_E_CANCELLED, "");
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  {
    FILE *f = fopen(P("dam.raw.partial.journal"), "w");
    if (f) fputs("not a journal\n", f), fclose(f);
  }
  CHECK_FAILS(run_raw(rd, P("dam.raw"), 1, CTR_WINDOW_RAM_LAK, &rep), CTR_E_FORMAT, "journal");
  CHECK_MSG(rep.resumable == 0 && !strcmp(rep.journal, P("dam.raw.partial.journal")),
            "damaged journal: report resumable %d, journal '%s'", rep.resumable, rep.journal);
  unlink(P("dam.raw.partial.journal"));
  unlink(P("dam.raw.partial"));
  /* The journal of a run still going (its lock held by another process):
   * a second run, fresh or --resume, fails naming that process and leaves
   * the partial output and the journal as they are; once the lock is free
   * (the run ended), the usual advice, and a resume works. A fresh run's
   * journal is locked before the partial output is touched. */
  setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
  CHECK_FAILS(run_raw(rd, P("lk.raw"), 0, CTR_WINDOW_RAM_LAK, &rep), CTR_E_CANCELLED, "");
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  {
    const uint64_t part = file_hash(P("lk.raw.partial")), jour = file_hash(P("lk.raw.partial.journal"));
    lock_holder h = lock_holder_start(P("lk.raw.partial.journal"));
    CHECK_MSG(h.pid > 0, "the lock holder did not start");
    char want[64];
    snprintf(want, sizeof want, "in use by process %ld", (long)h.pid);
    for (int resume = 0; resume < 2 && h.pid > 0; resume++) {
      CHECK_FAILS(run_raw(rd, P("lk.raw"), resume, CTR_WINDOW_RAM_LAK, &rep),
                  CTR_E_INVALID_ARGUMENT, want);
      CHECK(!strstr(ctr_error_detail(), "delete"));
      CHECK(file_hash(P("lk.raw.partial")) == part && file_hash(P("lk.raw.partial.journal")) == jour);
    }
    lock_holder_end(&h);
    CHECK_FAILS(run_raw(rd, P("lk.raw"), 0, CTR_WINDOW_RAM_LAK, &rep), CTR_E_INVALID_ARGUMENT,
                "delete");
    CHECK_OK(run_raw(rd, P("lk.raw"), 1, CTR_WINDOW_RAM_LAK, &rep));
    CHECK(same_files(P("lk.raw"), P("full.raw")) && !exists(P("lk.raw.partial.journal")));
    unlink(P("lk.raw"));
    /* nothing there yet: a fresh run whose journal name is locked stops
       before it creates the partial output */
    h = lock_holder_start(P("new.raw.partial.journal"));
    if (h.pid > 0) {
      snprintf(want, sizeof want, "in use by process %ld", (long)h.pid);
      CHECK_FAILS(run_raw(rd, P("new.raw"), 0, CTR_WINDOW_RAM_LAK, &rep), CTR_E_INVALID_ARGUMENT, want);
      CHECK(!exists(P("new.raw.partial")) && !exists(P("new.raw")));
      lock_holder_end(&h);
      unlink(P("new.raw.partial.journal"));
    }
  }
  /* Resume after the output is complete: nothing to resume. */
  CHECK_FAILS(run_raw(rd, P("full.raw"), 1, CTR_WINDOW_RAM_LAK, &rep), CTR_E_IO, "journal");
  CHECK(file_hash(P("full.raw")) == full_hash);

  /* Cancellation by the progress callback (what Ctrl-C does in the CLI):
   * 6 batches per subvolume; cancelled at the first batch of subvolume 3,
   * so subvolumes 0-2 are journalled. */
  {
    ctr_context *cctx = NULL;
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.device = CTR_DEVICE_CPU;
    co.progress = cancel_progress;
    CHECK_OK(ctr_context_create(&co, &cctx));
    if (cctx) {
      g_progress_calls = 0;
      g_cancel_after = 18;
      ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_HOST);
      ctr_status st = ctr_fdk_stream(cctx, g_geom, &o, rd, P("c.raw"), CTR_FORMAT_AUTO, &rep);
      CHECK_MSG(st == CTR_E_CANCELLED, "progress cancel: %s", ctr_status_name(st));
      CHECK(!exists(P("c.raw")) && exists(P("c.raw.partial")) && exists(P("c.raw.partial.journal")));
      CHECK_MSG(journal_slabs(P("c.raw.partial.journal")) == 3, "progress cancel: %d journalled",
                journal_slabs(P("c.raw.partial.journal")));
      ctr_context_free(cctx);
      o.resume = 1;
      st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("c.raw"), CTR_FORMAT_AUTO, &rep);
      CHECK_MSG(st == CTR_OK && rep.slabs_resumed == 3, "resume after cancel: %s, %lld resumed",
                ctr_status_name(st), (long long)rep.slabs_resumed);
      CHECK(same_files(P("c.raw"), P("full.raw")));
    }
  }
  ctr_stack_close(rd);
  CHECK_MSG(leftovers() == 0, "%d leftovers after the resume tests", leftovers());
}

/* An output that exists is never replaced unless asked: a second run is
 * refused before anything is read or computed (no progress report), naming
 * the file (field "overwrite", value the path as given), the file
 * byte-identical and nothing partial, journalled or temporary left; with
 * overwrite the run replaces it. Any file of the output counts (a detached
 * NRRD header's data file). A run that has nothing to resume says so even
 * when its output exists (test_resume). */
static void test_overwrite(void) {
  ctr_stack_reader *rd = open_raw(P("p.raw"), CTR_DTYPE_FLOAT32);
  ctr_context *cctx = NULL;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.progress = cancel_progress;
  CHECK_OK(ctr_context_create(&co, &cctx));
  if (!rd || !cctx) {
    ctr_stack_close(rd);
    ctr_context_free(cctx);
    return;
  }
  g_cancel_after = 1 << 30;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_HOST);
  CHECK_OK(ctr_fdk_stream(cctx, g_geom, &o, rd, P("ow.raw"), CTR_FORMAT_AUTO, &rep));
  const uint64_t hash = file_hash(P("ow.raw"));
  const char *outs[2] = {P("ow.raw"), P("ow.nhdr")}; /* ow.nhdr's data file is ow.raw */
  for (int k = 0; k < 2; k++) {
    char out[600];
    snprintf(out, sizeof out, "%s", outs[k]);
    g_progress_calls = 0;
    o.fdk.window = CTR_WINDOW_HANN;
    CHECK_FAILS(ctr_fdk_stream(cctx, g_geom, &o, rd, out, CTR_FORMAT_AUTO, &rep),
                CTR_E_INVALID_ARGUMENT, "exists and is kept: set overwrite to replace it");
    CHECK(strstr(ctr_error_detail(), P("ow.raw")) != NULL);
    CHECK_MSG(!strcmp(ctr_error_get_field(), "overwrite") && !strcmp(ctr_error_get_value(), out),
              "field '%s', value '%s'", ctr_error_get_field(), ctr_error_get_value());
    CHECK_MSG(g_progress_calls == 0, "%s: %d progress reports before the refusal", out,
              g_progress_calls);
    CHECK(file_hash(P("ow.raw")) == hash && !exists(P("ow.nhdr")) && rep.resumable == 0);
    CHECK_MSG(leftovers() == 0 && count_temporaries() == 0, "%s: left files behind", out);
  }
  o.overwrite = 1;
  CHECK_OK(ctr_fdk_stream(cctx, g_geom, &o, rd, P("ow.raw"), CTR_FORMAT_AUTO, &rep));
  CHECK(file_hash(P("ow.raw")) != hash && g_progress_calls > 0);
  unlink(P("ow.raw"));
  ctr_context_free(cctx);
  ctr_stack_close(rd);
}

/* Interrupt and resume for the other resumable formats: NRRD (attached and
 * detached) and a TIFF stack; the multi-page TIFF cannot be resumed. */
static void test_resume_formats(void) {
  const int tiff = (ctr_features() & CTR_FEATURE_TIFF) != 0;
  ctr_stack_reader *rd = open_raw(P("p.raw"), CTR_DTYPE_FLOAT32);
  if (!rd) return;
  mkdir(P("rf"), 0777);
  mkdir(P("rs"), 0777);
  static const char *outs[] = {"rf/a.nrrd", "rf/b.nhdr", "rs/u_%02d.tif"};
  for (int i = 0; i < 3; i++) {
    if (i >= 2 && !tiff) continue;
    char full[512], out[512];
    snprintf(full, sizeof full, "%s", P(outs[i]));
    snprintf(out, sizeof out, "%s", P(outs[i]));
    char *dot = strrchr(out, '/');
    dot[1] = 'x'; /* another name in the same directory */
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    CHECK_OK(run_raw(rd, full, 0, CTR_WINDOW_RAM_LAK, &rep));
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
    ctr_status st = run_raw(rd, out, 0, CTR_WINDOW_RAM_LAK, &rep);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK_MSG(st == CTR_E_CANCELLED, "%s: %s", out, ctr_status_name(st));
    CHECK_MSG(exists(journal_of(out)) && journal_slabs(journal_of(out)) == 2, "%s: journal", out);
    if (i < 2) CHECK_MSG(exists(partial_of(out)) && !exists(out), "%s: partial/output", out);
    st = run_raw(rd, out, 1, CTR_WINDOW_RAM_LAK, &rep);
    CHECK_MSG(st == CTR_OK && rep.slabs_resumed == 2, "%s resumed: %s (%s), %lld resumed", out,
              ctr_status_name(st), ctr_error_detail(), (long long)rep.slabs_resumed);
    if (i == 0) {
      CHECK_MSG(same_files(out, full), "%s differs from the uninterrupted run", out);
    } else if (i == 1) {
      char a[600], b[600];
      /* The header names its own data file: compare the data files and the
       * headers but for that name. */
      snprintf(a, sizeof a, "%s", P("rf/b.raw"));
      snprintf(b, sizeof b, "%s", P("rf/x.raw"));
      CHECK_MSG(same_files(a, b), "detached data differ");
      float *v = load_volume(out, N, NULL);
      if (v) close_volumes(v, g_ref, NVOX, "resumed nhdr");
      free(v);
    } else {
      int same = 1;
      for (int z = 0; z < N; z++) {
        char a[600], b[600], fa[64], fb[64];
        snprintf(fa, sizeof fa, outs[i], z);
        snprintf(fb, sizeof fb, strrchr(out, '/') + 1, z);
        snprintf(a, sizeof a, "%s", P(fa));
        snprintf(b, sizeof b, "%s/rs/%s", g_dir, fb);
        same &= same_files(a, b);
      }
      CHECK_MSG(same, "%s: slices differ from the uninterrupted run", out);
    }
  }
  CHECK_MSG(leftovers() == 0, "%d leftovers after resuming other formats", leftovers());
  if (tiff) {
    /* Multi-page TIFF: an interrupted run leaves nothing; resume refused. */
    setenv("CTRECON_INJECT_STOP_AFTER_SLABS", "2", 1);
    ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
    ctr_status st = run_raw(rd, P("m.tif"), 0, CTR_WINDOW_RAM_LAK, &rep);
    unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
    CHECK_MSG(st == CTR_E_CANCELLED, "multi-page TIFF interrupted: %s", ctr_status_name(st));
    CHECK(!exists(P("m.tif")) && leftovers() == 0);
    CHECK_FAILS(run_raw(rd, P("m.tif"), 1, CTR_WINDOW_RAM_LAK, &rep), CTR_E_UNSUPPORTED,
                "TIFF");
  }
  ctr_stack_close(rd);
}

/* ---- Error paths ---------------------------------------------------------------------- */

static void test_errors(void) {
  ctr_stack_reader *rd = open_raw(P("p.raw"), CTR_DTYPE_FLOAT32);
  if (!rd) return;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  /* Output in a directory that does not exist: CTR_E_IO naming it, nothing
   * created. */
  const int before = count_entries(NULL);
  for (int i = 0; i < 3; i++) {
    const char *name = i == 0 ? "nodir/v.raw" : i == 1 ? "nodir/v.nrrd" : "nodir/v_%03d.tif";
    if (i == 2 && !(ctr_features() & CTR_FEATURE_TIFF)) continue;
    ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_SCRATCH);
    o.scratch_dir = NULL;
    ctr_error_clear();
    ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, P(name), CTR_FORMAT_AUTO, &rep);
    CHECK_MSG(st == CTR_E_IO && strstr(ctr_error_detail(), "nodir"), "%s: %s: %s", name,
              ctr_status_name(st), ctr_error_detail());
    CHECK_MSG(count_entries(NULL) == before && !exists(P("nodir")), "%s: something was created",
              name);
  }
  /* Projections that do not match the geometry. */
  {
    ctr_stack_info hint = CTR_STACK_INFO_INIT;
    hint.width = NU;
    hint.height = NV;
    hint.count = NVIEWS / 2;
    hint.dtype = CTR_DTYPE_FLOAT32;
    ctr_stack_reader *half = NULL;
    CHECK_OK(ctr_stack_open(P("p.raw"), CTR_FORMAT_RAW, &hint, 0, &half));
    if (half)
      CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, NULL, half, P("mm.raw"), CTR_FORMAT_AUTO, &rep),
                  CTR_E_SIZE_MISMATCH, "p.raw");
    CHECK(!exists(P("mm.raw")) && !exists(P("mm.raw.partial")));
    ctr_stack_close(half);
  }
  /* A projection file truncated after the reader was opened: the run fails
   * naming the file; no final output. */
  {
    ctr_stack_info pinfo = CTR_STACK_INFO_INIT;
    pinfo.width = NU;
    pinfo.height = NV;
    pinfo.count = NVIEWS;
    pinfo.dtype = CTR_DTYPE_FLOAT32;
    CHECK_OK(ctr_stack_save(P("t.raw"), CTR_FORMAT_RAW, &pinfo, CTR_DTYPE_FLOAT32, g_proj, 0));
    ctr_stack_reader *tr = open_raw(P("t.raw"), CTR_DTYPE_FLOAT32);
    if (tr) {
      CHECK(truncate(P("t.raw"), (off_t)(NPROJ * 4 / 2 + 100)) == 0);
      for (int s = 0; s < 2; s++) {
        const char *out = s ? P("tr2.raw") : P("tr.raw");
        ctr_fdk_stream_options o = stream_opts(5, 7, s ? CTR_FDK_STORE_SCRATCH : CTR_FDK_STORE_HOST);
        o.scratch_dir = NULL;
        ctr_error_clear();
        ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, tr, out, CTR_FORMAT_AUTO, &rep);
        CHECK_MSG((st == CTR_E_SIZE_MISMATCH || st == CTR_E_IO) &&
                      strstr(ctr_error_detail(), "t.raw"),
                  "truncated projections: %s: %s", ctr_status_name(st), ctr_error_detail());
        CHECK_MSG(!exists(out), "truncated projections: output %s exists", out);
        CHECK(count_entries(".scratch.") == 0);
        unlink(partial_of(out));
        unlink(journal_of(out));
      }
      ctr_stack_close(tr);
    }
  }
  /* A full disk after 2.5 subvolumes (5 slices of 4 KiB each): CTR_E_IO
   * "No space left"; the partial output and journal stay; resuming on a disk
   * with space gives the uninterrupted run's bytes. */
  {
    const long long slab_bytes = 5 * (long long)NSLICE * 4;
    char env[32];
    snprintf(env, sizeof env, "%lld", 2 * slab_bytes + slab_bytes / 2);
    setenv("CTRECON_INJECT_ENOSPC_AFTER", env, 1);
    ctr__io_fault_reset();
    ctr_status st = run_raw(rd, P("e.raw"), 0, CTR_WINDOW_RAM_LAK, &rep);
    unsetenv("CTRECON_INJECT_ENOSPC_AFTER");
    ctr__io_fault_reset();
    CHECK_MSG(st == CTR_E_IO && strstr(ctr_error_detail(), "No space left"), "ENOSPC: %s: %s",
              ctr_status_name(st), ctr_error_detail());
    CHECK_MSG(!exists(P("e.raw")) && exists(P("e.raw.partial")) &&
                  exists(P("e.raw.partial.journal")),
              "ENOSPC: output %d partial %d journal %d", exists(P("e.raw")),
              exists(P("e.raw.partial")), exists(P("e.raw.partial.journal")));
    CHECK_MSG(journal_slabs(P("e.raw.partial.journal")) == 2, "ENOSPC: %d subvolumes journalled",
              journal_slabs(P("e.raw.partial.journal")));
    st = run_raw(rd, P("e.raw"), 1, CTR_WINDOW_RAM_LAK, &rep);
    CHECK_MSG(st == CTR_OK && rep.slabs_resumed == 2, "resume after ENOSPC: %s (%s), %lld resumed",
              ctr_status_name(st), ctr_error_detail(), (long long)rep.slabs_resumed);
    CHECK_MSG(same_files(P("e.raw"), P("full.raw")), "resume after ENOSPC: output differs");
    CHECK(!exists(P("e.raw.partial")) && !exists(P("e.raw.partial.journal")));
  }
  /* A full disk in the scratch file (filtered views spill there): CTR_E_IO
   * naming it, and no scratch file left. */
  {
    setenv("CTRECON_INJECT_ENOSPC_AFTER", "30000", 1);
    ctr__io_fault_reset();
    ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_SCRATCH);
    o.scratch_dir = NULL;
    ctr_error_clear();
    ctr_status st = ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("es.raw"), CTR_FORMAT_AUTO, &rep);
    unsetenv("CTRECON_INJECT_ENOSPC_AFTER");
    ctr__io_fault_reset();
    CHECK_MSG(st == CTR_E_IO && strstr(ctr_error_detail(), "No space left") &&
                  strstr(ctr_error_detail(), "scratch"),
              "ENOSPC in the scratch file: %s: %s", ctr_status_name(st), ctr_error_detail());
    CHECK(!exists(P("es.raw")) && count_entries(".scratch.") == 0);
    unlink(P("es.raw.partial"));
    unlink(P("es.raw.partial.journal"));
  }
  /* Bad arguments. */
  CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, NULL, NULL, P("x.raw"), CTR_FORMAT_AUTO, &rep),
              CTR_E_INVALID_ARGUMENT, "required");
  CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, NULL, rd, "", CTR_FORMAT_AUTO, &rep),
              CTR_E_INVALID_ARGUMENT, "required");
  {
    ctr_fdk_stream_options o = stream_opts(5, 7, CTR_FDK_STORE_HOST);
    o.out_scale = -2;
    CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("x.raw"), CTR_FORMAT_AUTO, &rep),
                CTR_E_INVALID_ARGUMENT, "out_scale");
    o = stream_opts(5, 7, CTR_FDK_STORE_HOST);
    o.host_budget = 1024;
    CHECK_FAILS(ctr_fdk_stream(g_ctx, g_geom, &o, rd, P("x.raw"), CTR_FORMAT_AUTO, &rep),
                CTR_E_OUT_OF_MEMORY, "(host_budget)");
    CHECK(!exists(P("x.raw")) && !exists(P("x.raw.partial")) &&
          !exists(P("x.raw.partial.journal")));
  }
  ctr_stack_close(rd);
  CHECK_MSG(leftovers() == 0, "%d leftovers after the error tests", leftovers());
}

/* The journal's CRC-32: the parallel pieces of a large buffer give zlib's
 * one-pass value (the known CRC-32 of "123456789" is cbf43926), however the
 * buffer is split into calls. */
static void test_crc32(void) {
  CHECK(ctr__crc32(0, "123456789", 9) == 0xcbf43926u);
  const size_t n = (size_t)21 << 20; /* 6 pieces of 4 MiB, the last short */
  unsigned char *b = malloc(n);
  CHECK(b != NULL);
  if (!b) return;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)((i * 2654435761u) >> 11);
  const uint32_t whole = ctr__crc32(0, b, n);
  uint32_t chained = 0;
  for (size_t off = 0; off < n; off += 1u << 20) chained = ctr__crc32(chained, b + off, 1u << 20);
  CHECK_MSG(whole == chained, "parallel CRC-32 %08x, chained 1 MiB pieces %08x", whole, chained);
  const uint32_t split = ctr__crc32(ctr__crc32(0, b, 9u << 20), b + (9u << 20), n - (9u << 20));
  CHECK_MSG(whole == split, "CRC-32 of the whole %08x, of two large calls %08x", whole, split);
  free(b);
}

int main(void) {
  if (!scratch_open("ctr_stream")) return 1;
  test_crc32();
  unsetenv("CTRECON_INJECT_STOP_AFTER_SLABS");
  unsetenv("CTRECON_INJECT_ENOSPC_AFTER");
  ctr__io_fault_reset();
  if (setup()) {
    test_memory_splits();
    test_file_formats();
    test_resume();
    test_overwrite();
    test_resume_formats();
    test_errors();
  }
  printf("volume comparisons: %d, bit-identical: %d\n", g_compared, g_exact);
  free(g_proj);
  free(g_proj16);
  free(g_ref);
  free(g_ref16);
  ctr_geometry_free(g_geom);
  ctr_context_free(g_ctx);
  scratch_close();
  return th_finish("test_stream");
}

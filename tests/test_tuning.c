/* The tuning table (include/ctrecon/tuning.h, docs/tuning.md): its defaults
 * and versions, the text form (ctr_tuning_set, ctr_tuning_set_env), the
 * checks at context creation, the context's own copy, and that the table
 * reaches the code it tunes on the CPU: the kernel cache directory and the
 * automatic kernel choice of parallel-beam FBP (fbp_tune.c, with a stand-in
 * for the GPU's timings) and direct I/O of a streamed FDK. The GPU switches
 * are checked in test_gpu_fdk, test_gpu_pet and test_gpu_fbp. */
#include "harness.h"
#include "scratch_dir.h"

#include "core/internal.h"
#include "io/stack_partial.h"
#include "parbeam/fbp_tune.h"

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/* ---- Defaults and versions --------------------------------------------- */

/* Every field at its default (0; cache_dir not looked at: it is resolved
 * from the environment). Field by field: the struct has padding. */
static int all_default(const ctr_tuning *t) {
  const int f[] = {t->bp_slices,          t->bp_block_x,         t->bp_block_y,
                   t->bp_regs,            t->bp_chunk_first,     t->bp_chunk_rest,
                   t->bp_split,           t->bp_split_views[0],  t->bp_split_views[1],
                   t->bp_split_slices[0], t->bp_split_slices[1], t->pet_z,
                   t->pet_lc,             t->pet_block_x,        t->pet_block_y,
                   t->pet_split,          t->pet_const,          t->fbp_hybrid_tex,
                   t->fbp_tex_chunk,      t->tune,               t->direct_io,
                   t->read_threads,       t->host_transfer,      t->host_threads,
                   t->host_stage_kib,     t->zarr_shard,         t->fbp_occupancy,
                   t->fbp_carveout,       t->fbp_angle_cache,    t->bp_alu};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i]) return 0;
  return t->version == CTR_TUNING_VERSION;
}

static void test_init(void) {
  ctr_tuning t;
  memset(&t, 0x5a, sizeof t);
  CHECK_OK(ctr_tuning_init(&t, CTR_TUNING_VERSION));
  CHECK_MSG(all_default(&t) && t.cache_dir == NULL, "the defaults are not all 0");
  const ctr_tuning init = CTR_TUNING_INIT;
  CHECK(all_default(&init) && init.cache_dir == NULL);
  CHECK_FAILS(ctr_tuning_init(&t, 0), CTR_E_INVALID_ARGUMENT, "version 0");
  CHECK_FAILS(ctr_tuning_init(&t, CTR_TUNING_VERSION + 1), CTR_E_INVALID_ARGUMENT, "versions 1 to");
  CHECK_FAILS(ctr_tuning_init(NULL, CTR_TUNING_VERSION), CTR_E_INVALID_ARGUMENT, "NULL");
  /* a context without a table has the defaults */
  ctr_context *ctx = NULL;
  CHECK_OK(ctr_context_create(NULL, &ctx));
  CHECK(ctx && all_default(ctr__tuning(ctx)));
  ctr_context_free(ctx);
}

/* ---- Text form ------------------------------------------------------------ */

static ctr_tuning set1(const char *key, const char *value) {
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  CHECK_MSG(ctr_tuning_set(&t, key, value) == CTR_OK, "%s = '%s': %s", key, value,
            ctr_error_detail());
  return t;
}

static void test_text(void) {
  ctr_tuning t = set1("bp_slices", "16");
  CHECK(t.bp_slices == 16);
  t = set1("bp_block", "32x4");
  CHECK(t.bp_block_x == 32 && t.bp_block_y == 4);
  t = set1("bp_regs", "64");
  CHECK(t.bp_regs == 64);
  t = set1("bp_chunks", "4,32");
  CHECK(t.bp_chunk_first == 4 && t.bp_chunk_rest == 32);
  /* the variables' syntax: 0 turns the split off, as CTRECON_BP_SPLIT=0 did */
  t = set1("bp_split", "0");
  CHECK(t.bp_split == -1);
  t = set1("bp_split", "2,4,6,9");
  CHECK(t.bp_split == 2 && t.bp_split_views[0] == 2 && t.bp_split_slices[0] == 4 &&
        t.bp_split_views[1] == 6 && t.bp_split_slices[1] == 9);
  t = set1("bp_split", "5,12");
  CHECK(t.bp_split == 1 && t.bp_split_views[0] == 5 && t.bp_split_slices[0] == 12);
  t = set1("pet_z", "24");
  CHECK(t.pet_z == 24);
  t = set1("pet_block", "48x2");
  CHECK(t.pet_block_x == 48 && t.pet_block_y == 2);
  t = set1("pet_const", "off");
  CHECK(t.pet_const == -1);
  t = set1("fbp_hybrid_tex", "0"); /* none: every block on the ALU */
  CHECK(t.fbp_hybrid_tex == -1);
  t = set1("fbp_hybrid_tex", "3");
  CHECK(t.fbp_hybrid_tex == 3);
  t = set1("fbp_tex_chunk", "0");
  CHECK(t.fbp_tex_chunk == -1);
  t = set1("tune", "no");
  CHECK(t.tune == -1);
  t = set1("direct_io", "FALSE");
  CHECK(t.direct_io == -1);
  t = set1("direct_io", "on");
  CHECK(t.direct_io == 1);
  t = set1("read_threads", "1"); /* through H5Dread, as before version 2 */
  CHECK(t.read_threads == 1);
  t = set1("read_threads", "16");
  CHECK(t.read_threads == 16);
  CHECK_OK(ctr_tuning_set(&t, "read_threads", "auto"));
  CHECK(t.read_threads == 0);
  t = set1("cache_dir", "/some/dir");
  CHECK(t.cache_dir && !strcmp(t.cache_dir, "/some/dir"));
  /* auto restores a default, for compound settings too */
  CHECK_OK(ctr_tuning_set(&t, "cache_dir", ""));
  CHECK(t.cache_dir == NULL);
  t = set1("bp_split", "2,4,6,9");
  CHECK_OK(ctr_tuning_set(&t, "bp_split", "auto"));
  CHECK(t.bp_split == 0 && t.bp_split_views[1] == 0 && t.bp_split_slices[1] == 0);
  t = set1("bp_block", "16x8");
  CHECK_OK(ctr_tuning_set(&t, "bp_block", "auto"));
  CHECK(t.bp_block_x == 0 && t.bp_block_y == 0);

  /* Refusals name the key and leave the table as it was. */
  ctr_tuning u = set1("bp_slices", "8");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_slice", "8"), CTR_E_INVALID_ARGUMENT, "bp_slices, bp_block");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_slices", "3"), CTR_E_INVALID_ARGUMENT, "bp_slices is 3");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_slices", "8x"), CTR_E_INVALID_ARGUMENT, "bp_slices");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_block", "4x4"), CTR_E_INVALID_ARGUMENT, "32 .. 256 threads");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_block", "32"), CTR_E_INVALID_ARGUMENT, "XxY");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_chunks", "4,0"), CTR_E_INVALID_ARGUMENT, "both > 0");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_split", "6,4,2,9"), CTR_E_INVALID_ARGUMENT, "increasing");
  CHECK_FAILS(ctr_tuning_set(&u, "bp_split", "1,2,3"), CTR_E_INVALID_ARGUMENT, "A0,Z0");
  CHECK_FAILS(ctr_tuning_set(&u, "pet_z", "7"), CTR_E_INVALID_ARGUMENT, "pet_z is 7");
  CHECK_FAILS(ctr_tuning_set(&u, "pet_block", "20x2"), CTR_E_INVALID_ARGUMENT, "whole warps");
  CHECK_FAILS(ctr_tuning_set(&u, "pet_split", "9"), CTR_E_INVALID_ARGUMENT, "1 .. 8");
  CHECK_FAILS(ctr_tuning_set(&u, "tune", "maybe"), CTR_E_INVALID_ARGUMENT, "on or off");
  CHECK_FAILS(ctr_tuning_set(&u, "fbp_tex_chunk", "-3"), CTR_E_INVALID_ARGUMENT, "fbp_tex_chunk");
  CHECK_FAILS(ctr_tuning_set(&u, "read_threads", "65"), CTR_E_INVALID_ARGUMENT, "1 .. 64");
  CHECK_FAILS(ctr_tuning_set(&u, "read_threads", "-1"), CTR_E_INVALID_ARGUMENT, "read_threads is -1");
  /* version 3: the host-transfer switches */
  {
    static const char *const words[] = {"staged", "registered", "driver"};
    for (int i = 0; i < 3; i++) {
      ctr_tuning h = set1("host_transfer", words[i]);
      CHECK(h.host_transfer == i + 1);
      CHECK_OK(ctr_tuning_set(&h, "host_transfer", "auto"));
      CHECK(h.host_transfer == 0);
    }
    ctr_tuning h = set1("host_threads", "12");
    CHECK(h.host_threads == 12);
    h = set1("host_stage_kib", "64");
    CHECK(h.host_stage_kib == 64);
    CHECK_FAILS(ctr_tuning_set(&h, "host_transfer", "pinned"), CTR_E_INVALID_ARGUMENT,
                "staged, registered or driver");
    CHECK_FAILS(ctr_tuning_set(&h, "host_threads", "257"), CTR_E_INVALID_ARGUMENT, "1 .. 256");
    CHECK_FAILS(ctr_tuning_set(&h, "host_stage_kib", "63"), CTR_E_INVALID_ARGUMENT, "64 .. 1048576");
    CHECK(h.host_stage_kib == 64); /* unchanged by the refusals */
    h.host_transfer = 4;
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.tuning = &h;
    ctr_context *ctx = NULL;
    CHECK_FAILS(ctr_context_create(&co, &ctx), CTR_E_INVALID_ARGUMENT, "host_transfer is 4");
    /* a version-2 table has none of them */
    ctr_tuning v2;
    memset(&v2, 0x5a, sizeof v2);
    CHECK_OK(ctr_tuning_init(&v2, 2));
    CHECK_FAILS(ctr_tuning_set(&v2, "host_threads", "4"), CTR_E_INVALID_ARGUMENT, "host_threads");
    CHECK(v2.host_threads == 0x5a5a5a5a);
  }
  /* version 4: the OME-Zarr sharding (0 or none: -1; auto: the default) */
  {
    ctr_tuning h = set1("zarr_shard", "8");
    CHECK(h.zarr_shard == 8);
    CHECK_OK(ctr_tuning_set(&h, "zarr_shard", "0"));
    CHECK(h.zarr_shard == -1);
    CHECK_OK(ctr_tuning_set(&h, "zarr_shard", "auto"));
    CHECK(h.zarr_shard == 0);
    CHECK_OK(ctr_tuning_set(&h, "zarr_shard", "256"));
    CHECK_FAILS(ctr_tuning_set(&h, "zarr_shard", "257"), CTR_E_INVALID_ARGUMENT, "1 .. 256");
    CHECK_FAILS(ctr_tuning_set(&h, "zarr_shard", "-2"), CTR_E_INVALID_ARGUMENT, "zarr_shard");
    CHECK(h.zarr_shard == 256); /* unchanged by the refusals */
    ctr_tuning v3;
    memset(&v3, 0x5a, sizeof v3);
    CHECK_OK(ctr_tuning_init(&v3, 3));
    CHECK_FAILS(ctr_tuning_set(&v3, "zarr_shard", "4"), CTR_E_INVALID_ARGUMENT, "zarr_shard");
    CHECK(v3.zarr_shard == 0x5a5a5a5a);
  }
  /* version 5: the parallel-beam ALU kernels' launch */
  {
    ctr_tuning h = set1("fbp_occupancy", "75");
    CHECK(h.fbp_occupancy == 75);
    CHECK_OK(ctr_tuning_set(&h, "fbp_occupancy", "none"));
    CHECK(h.fbp_occupancy == -1);
    CHECK_OK(ctr_tuning_set(&h, "fbp_occupancy", "100"));
    CHECK_FAILS(ctr_tuning_set(&h, "fbp_occupancy", "60"), CTR_E_INVALID_ARGUMENT, "50, 75 or 100");
    CHECK_FAILS(ctr_tuning_set(&h, "fbp_occupancy", "x"), CTR_E_INVALID_ARGUMENT, "fbp_occupancy");
    CHECK(h.fbp_occupancy == 100); /* unchanged by the refusals */
    static const struct { const char *text; int field; } carve[] = {
        {"shared", 100}, {"l1", -1}, {"0", -1}, {"37", 37}, {"100", 100}, {"driver", 0}, {"auto", 0}};
    for (size_t i = 0; i < sizeof carve / sizeof carve[0]; i++) {
      CHECK_OK(ctr_tuning_set(&h, "fbp_carveout", carve[i].text));
      CHECK_MSG(h.fbp_carveout == carve[i].field, "fbp_carveout %s: %d", carve[i].text, h.fbp_carveout);
    }
    CHECK_FAILS(ctr_tuning_set(&h, "fbp_carveout", "101"), CTR_E_INVALID_ARGUMENT, "0 .. 100");
    CHECK_FAILS(ctr_tuning_set(&h, "fbp_carveout", "-1"), CTR_E_INVALID_ARGUMENT, "fbp_carveout");
    static const char *const words[] = {"shared", "offset", "registers"};
    for (int i = 0; i < 3; i++) {
      CHECK_OK(ctr_tuning_set(&h, "fbp_angle_cache", words[i]));
      CHECK(h.fbp_angle_cache == i + 1);
    }
    CHECK_FAILS(ctr_tuning_set(&h, "fbp_angle_cache", "constant"), CTR_E_INVALID_ARGUMENT,
                "shared, offset or registers");
    CHECK(h.fbp_angle_cache == 3);
    /* the fields as a caller sets them: checked when a context copies them */
    ctr_tuning bad;
    ctr_tuning_init(&bad, CTR_TUNING_VERSION);
    bad.fbp_occupancy = 64;
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.tuning = &bad;
    ctr_context *ctx = NULL;
    CHECK_FAILS(ctr_context_create(&co, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_occupancy is 64");
    bad.fbp_occupancy = 0;
    bad.fbp_carveout = -2;
    CHECK_FAILS(ctr_context_create(&co, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_carveout is -2");
    bad.fbp_carveout = 0;
    bad.fbp_angle_cache = 4;
    CHECK_FAILS(ctr_context_create(&co, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.fbp_angle_cache is 4");
    ctr_tuning v4;
    memset(&v4, 0x5a, sizeof v4);
    CHECK_OK(ctr_tuning_init(&v4, 4));
    CHECK_FAILS(ctr_tuning_set(&v4, "fbp_occupancy", "50"), CTR_E_INVALID_ARGUMENT, "fbp_occupancy");
    CHECK(v4.fbp_occupancy == 0x5a5a5a5a);
    CHECK_OK(ctr_tuning_set(&v4, "zarr_shard", "4"));
  }
  /* version 5 too: the cone-beam ALU kernel switch (on: 1, off: -1, auto: 0) */
  {
    ctr_tuning h = set1("bp_alu", "on");
    CHECK(h.bp_alu == 1);
    CHECK_OK(ctr_tuning_set(&h, "bp_alu", "off"));
    CHECK(h.bp_alu == -1);
    CHECK_OK(ctr_tuning_set(&h, "bp_alu", "auto"));
    CHECK(h.bp_alu == 0);
    CHECK_FAILS(ctr_tuning_set(&h, "bp_alu", "2"), CTR_E_INVALID_ARGUMENT, "on or off");
    h.bp_alu = 2;
    ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
    co.tuning = &h;
    ctr_context *ctx = NULL;
    CHECK_FAILS(ctr_context_create(&co, &ctx), CTR_E_INVALID_ARGUMENT, "bp_alu is 2");
    ctr_tuning v4;
    memset(&v4, 0x5a, sizeof v4);
    CHECK_OK(ctr_tuning_init(&v4, 4));
    CHECK_FAILS(ctr_tuning_set(&v4, "bp_alu", "on"), CTR_E_INVALID_ARGUMENT, "bp_alu");
    CHECK(v4.bp_alu == 0x5a5a5a5a);
  }
  /* a version-1 table has no read_threads: the key is refused, nothing past
   * the version-1 prefix is written */
  ctr_tuning v1;
  memset(&v1, 0x5a, sizeof v1);
  CHECK_OK(ctr_tuning_init(&v1, 1));
  CHECK(v1.read_threads == 0x5a5a5a5a);
  CHECK_FAILS(ctr_tuning_set(&v1, "read_threads", "4"), CTR_E_INVALID_ARGUMENT, "read_threads");
  CHECK_OK(ctr_tuning_set(&v1, "direct_io", "off"));
  CHECK(v1.direct_io == -1 && v1.read_threads == 0x5a5a5a5a);
  CHECK(u.bp_slices == 8 && u.bp_block_x == 0 && u.bp_chunk_rest == 0 && u.bp_split == 0 &&
        u.pet_z == 0 && u.pet_block_x == 0 && u.pet_split == 0 && u.tune == 0 &&
        u.fbp_tex_chunk == 0); /* unchanged by the refusals */
  CHECK_FAILS(ctr_tuning_set(NULL, "tune", "on"), CTR_E_INVALID_ARGUMENT, "required");
  u.version = 0;
  CHECK_FAILS(ctr_tuning_set(&u, "tune", "on"), CTR_E_INVALID_ARGUMENT, "version is 0");
}

static void test_env(void) {
  char *env[] = {"CTRECON_BP_SLICES=8", "CTRECON_DEVICE=cpu", "ctrecon_bp_regs=64",
                 "CTRECON_TUNE=0",      "CTRECON_BP_SLICESX=4", "XCTRECON_PET_Z=8",
                 "CTRECON_FBP_HYBRID_TEX=2", "CTRECON_CACHE_DIR=/c", NULL};
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  CHECK_OK(ctr_tuning_set_env(&t, env));
  CHECK(t.bp_slices == 8 && t.tune == -1 && t.fbp_hybrid_tex == 2);
  CHECK(t.cache_dir && !strcmp(t.cache_dir, "/c"));
  CHECK(t.bp_regs == 0 && t.pet_z == 0); /* not the variables' names */
  char *bad[] = {"CTRECON_PET_Z=7", NULL};
  CHECK_FAILS(ctr_tuning_set_env(&t, bad), CTR_E_INVALID_ARGUMENT, "CTRECON_PET_Z: ");
  CHECK_OK(ctr_tuning_set_env(&t, NULL));
}

/* ---- The context's copy ---------------------------------------------------- */

static ctr_status make_context(const ctr_tuning *t, ctr_context **ctx) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.tuning = t;
  *ctx = NULL;
  return ctr_context_create(&co, ctx);
}

static void test_context(void) {
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  ctr_context *ctx = NULL;
  /* the checks of ctr_context_create name the field */
  t.bp_slices = 5;
  CHECK_FAILS(make_context(&t, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.bp_slices is 5");
  t.bp_slices = 0;
  t.bp_block_x = 32; /* both or neither */
  CHECK_FAILS(make_context(&t, &ctx), CTR_E_INVALID_ARGUMENT, "bp_block_y");
  t.bp_block_x = 0;
  t.direct_io = 2;
  CHECK_FAILS(make_context(&t, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.direct_io is 2");
  t.direct_io = 0;
  t.read_threads = 100;
  CHECK_FAILS(make_context(&t, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.read_threads is 100");
  t.read_threads = 0;
  t.version = 7;
  CHECK_FAILS(make_context(&t, &ctx), CTR_E_INVALID_ARGUMENT, "ctr_tuning.version is 7");
  CHECK(ctx == NULL);
  /* copied once: later changes to the caller's table or strings do not
   * reach a context */
  char dir[32] = "/first/dir";
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.bp_slices = 16;
  t.cache_dir = dir;
  CHECK_OK(make_context(&t, &ctx));
  if (!ctx) return;
  t.bp_slices = 2;
  snprintf(dir, sizeof dir, "/other");
  const ctr_tuning *c = ctr__tuning(ctx);
  CHECK(c->bp_slices == 16);
  CHECK(c->cache_dir && !strcmp(c->cache_dir, "/first/dir") && c->cache_dir != dir);
  ctr_context_free(ctx);
}

/* The default cache directory: $XDG_CACHE_HOME/ctrecon, else
 * $HOME/.cache/ctrecon, read when the context is created. */
static void test_cache_dir(void) {
  const char *home = getenv("HOME");
  char *saved_home = home ? strdup(home) : NULL;
  ctr_context *ctx = NULL;
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  CHECK_OK(make_context(NULL, &ctx));
  setenv("XDG_CACHE_HOME", "/later", 1); /* read once: no effect now */
  CHECK(ctx && ctr__tuning(ctx)->cache_dir && !strcmp(ctr__tuning(ctx)->cache_dir, "/xdg/ctrecon"));
  ctr_context_free(ctx);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  CHECK_OK(make_context(NULL, &ctx));
  CHECK(ctx && ctr__tuning(ctx)->cache_dir &&
        !strcmp(ctr__tuning(ctx)->cache_dir, "/home/someone/.cache/ctrecon"));
  ctr_context_free(ctx);
  unsetenv("HOME");
  CHECK_OK(make_context(NULL, &ctx));
  CHECK(ctx && ctr__tuning(ctx)->cache_dir == NULL); /* no cache: each run tunes */
  ctr_context_free(ctx);
  if (saved_home) setenv("HOME", saved_home, 1);
  free(saved_home);
}

/* ---- The automatic kernel choice (fbp_tune.c) ------------------------------ */

/* Stand-in timings of the candidates: candidate 1 is the fastest. */
static int g_timed;
static ctr_status fake_time(void *user, int i, double *ms) {
  (void)user;
  static const double t[3] = {3.0, 1.0, 2.0};
  g_timed++;
  *ms = t[i];
  return CTR_OK;
}
static ctr_status failing_time(void *user, int i, double *ms) {
  (void)user, (void)i, (void)ms;
  CTR_FAIL(CTR_E_DEVICE, "timing failed on purpose");
}

static void test_autotune(void) {
  static const char *const names[3] = {"alu", "alu2", "tex"};
  ctr__fbp_tune_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "Stand-in GPU");
  k.nbins = k.nx = k.ny = 256;
  k.nangles = 180;
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  ctr_context *ctx = NULL;
  int chosen = -2;

  /* on, with a cache directory of its own: timed once, written there, then
   * read from there */
  t.cache_dir = P("cache");
  CHECK_OK(make_context(&t, &ctx));
  if (!ctx) return;
  g_timed = 0;
  CHECK_OK(ctr__fbp_tune_choose(ctx, &k, names, 3, fake_time, NULL, &chosen));
  CHECK(chosen == 1 && g_timed == 3);
  CHECK(exists(P("cache/fbp-kernels.json")));
  char name[32];
  CHECK(ctr__fbp_tune_lookup(P("cache"), &k, name, sizeof name) && !strcmp(name, "alu2"));
  chosen = -2;
  CHECK_OK(ctr__fbp_tune_choose(ctx, &k, names, 3, fake_time, NULL, &chosen));
  CHECK(chosen == 1 && g_timed == 3); /* from the cache, nothing timed */
  /* a failing timing is returned, nothing written */
  k.nbins = 512;
  CHECK_FAILS(ctr__fbp_tune_choose(ctx, &k, names, 3, failing_time, NULL, &chosen), CTR_E_DEVICE,
              "on purpose");
  CHECK(!ctr__fbp_tune_lookup(P("cache"), &k, name, sizeof name));
  ctr_context_free(ctx);

  /* a cache that cannot be written (its directory under a plain file): timed
   * once all the same in a context, which every GPU's pipeline asks once a
   * band; timed again by a new context */
  FILE *plain = fopen(P("plain"), "w");
  if (plain) fclose(plain);
  t.cache_dir = P("plain/cache");
  for (int c = 0; c < 2; c++) {
    CHECK_OK(make_context(&t, &ctx));
    if (!ctx) return;
    g_timed = 0;
    for (int call = 0; call < 3; call++) {
      chosen = -2;
      CHECK_OK(ctr__fbp_tune_choose(ctx, &k, names, 3, fake_time, NULL, &chosen));
      CHECK_MSG(chosen == 1 && g_timed == 3, "context %d, call %d: chosen %d, %d timings", c, call,
                chosen, g_timed);
    }
    ctr_context_free(ctx);
  }
  CHECK(!exists(P("plain/cache/fbp-kernels.json")));

  /* off: nothing timed, read or written, not even the directory */
  t.cache_dir = P("off");
  t.tune = -1;
  CHECK_OK(make_context(&t, &ctx));
  if (!ctx) return;
  g_timed = 0;
  chosen = -2;
  CHECK_OK(ctr__fbp_tune_choose(ctx, &k, names, 3, fake_time, NULL, &chosen));
  CHECK(chosen == -1 && g_timed == 0);
  CHECK(!exists(P("off")));
  ctr_context_free(ctx);

  /* the default directory, as resolved at creation */
  setenv("XDG_CACHE_HOME", P("xdg"), 1);
  CHECK_OK(make_context(NULL, &ctx));
  unsetenv("XDG_CACHE_HOME");
  if (!ctx) return;
  CHECK_OK(ctr__fbp_tune_choose(ctx, &k, names, 3, fake_time, NULL, &chosen));
  CHECK(chosen == 1 && exists(P("xdg/ctrecon/fbp-kernels.json")));
  ctr_context_free(ctx);
}

/* ---- Direct I/O of a streamed FDK ------------------------------------------ */

/* 1 if the scratch directory's file system takes O_DIRECT. */
static int direct_supported(void) {
  int fd = open(P("probe"), O_CREAT | O_WRONLY | O_DIRECT, 0644);
  if (fd >= 0) close(fd);
  unlink(P("probe"));
  return fd >= 0;
}

enum { DU = 64, DV = 32, DVIEWS = 12, DN = 64, DNZ = 16 };

/* A streamed FDK of a uint16 raw file (images of 4096 bytes) into a raw
 * volume under a context with ctr_tuning.direct_io = direct_io. *moved gets
 * the bytes the run moved through O_DIRECT; *after those of one aligned
 * read through the run's reader afterwards: ctr_fdk_stream applies the
 * table to the reader it is given. (On the CPU backend the pipeline's own
 * buffers are 64-byte aligned, so its transfers stay buffered anyway; with
 * a GPU its pinned buffers are page-aligned.) */
static void stream_run(const ctr_geometry *g, int direct_io, const char *out, long long *moved,
                       long long *after) {
  ctr_tuning t;
  ctr_tuning_init(&t, CTR_TUNING_VERSION);
  t.direct_io = direct_io;
  ctr_context *ctx = NULL;
  CHECK_OK(make_context(&t, &ctx));
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint.width = DU;
  hint.height = DV;
  hint.count = DVIEWS;
  hint.dtype = CTR_DTYPE_UINT16;
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(P("proj.raw"), CTR_FORMAT_RAW, &hint, 0, &r));
  void *img = NULL;
  if (posix_memalign(&img, CTR__IO_ALIGN, DU * DV * 2) != 0) img = NULL;
  *moved = *after = -1;
  if (ctx && r && img) {
    ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
    so.fdk.nz = DNZ;
    so.max_slab_slices = 4;
    int64_t before = ctr__io_direct_bytes();
    const ctr_status st = ctr_fdk_stream(ctx, g, &so, r, out, CTR_FORMAT_RAW, NULL);
    CHECK_MSG(st == CTR_OK, "ctr_fdk_stream: %s", ctr_error_detail());
    *moved = (long long)(ctr__io_direct_bytes() - before);
    before = ctr__io_direct_bytes();
    CHECK_OK(ctr_stack_read(r, 1, 1, CTR_DTYPE_UINT16, img));
    *after = (long long)(ctr__io_direct_bytes() - before);
  }
  free(img);
  ctr_stack_close(r);
  ctr_context_free(ctx);
}

static void test_direct_io(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = DU;
  p.nv = DV;
  p.du = 6;
  p.dv = 6;
  p.nviews = DVIEWS;
  ctr_volume_geometry vol = {DN, DN, DNZ, 4, 4, 4, 0, 0, 0};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  if (!g) return;
  uint16_t *proj = malloc(sizeof(uint16_t) * DU * DV * DVIEWS);
  for (int64_t i = 0; proj && i < DU * DV * DVIEWS; i++)
    proj[i] = (uint16_t)(1000 + (i * 2654435761u) % 500);
  ctr_stack_info info = CTR_STACK_INFO_INIT;

  info.width = DU;
  info.height = DV;
  info.count = DVIEWS;
  info.dtype = CTR_DTYPE_UINT16;
  CHECK_OK(ctr_stack_save(P("proj.raw"), CTR_FORMAT_RAW, &info, CTR_DTYPE_UINT16, proj, 0));
  free(proj);
  const int direct = direct_supported();
  long long on, on_after, off, off_after;
  stream_run(g, 0, P("on.raw"), &on, &on_after);
  stream_run(g, -1, P("off.raw"), &off, &off_after);
  printf("streamed FDK, bytes through O_DIRECT: default %lld (then one read %lld), direct_io = -1 "
         "%lld (%lld)%s\n", on, on_after, off, off_after,
         direct ? "" : "; no O_DIRECT in the scratch directory");
  /* the reader keeps direct I/O by default (else the checks below could not
   * fail), and the run with direct_io = -1 turned it off */
  if (direct) CHECK_MSG(on_after == DU * DV * 2, "default: %lld direct bytes", on_after);
  CHECK_MSG(off == 0 && off_after == 0, "direct_io = -1: %lld, %lld bytes through O_DIRECT", off,
            off_after);
  CHECK(same_files(P("on.raw"), P("off.raw")));
  ctr_geometry_free(g);
}

int main(void) {
  if (!scratch_open("ctr_test_tuning")) return 1;
  test_init();
  test_text();
  test_env();
  test_context();
  test_cache_dir();
  test_autotune();
  test_direct_io();
  scratch_close();
  return th_finish("test_tuning");
}

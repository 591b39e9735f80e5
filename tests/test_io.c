/* File I/O: round trips through every format and dtype, slab reads and
 * writes, atomic output, error reporting, PNG previews. Runs in a fresh
 * directory under /tmp that is removed at the end. */
#include "harness.h"
#include "scratch_dir.h"
#include "png_read.h"

#include "io/io_internal.h" /* ctr__zarr_set_layout */
#include "io/stack_partial.h" /* resumable OME-Zarr */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <png.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>
#include <omp.h>

enum { NX = 37, NY = 23, NZ = 5 };
#define NVOX ((size_t)NX * NY * NZ)
#define NPIX ((size_t)NX * NY)


static void write_text(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot create %s", path);
  if (!f) return;
  fwrite(text, 1, n, f);
  fclose(f);
}

static ctr_stack_info make_info(ctr_dtype dt) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = NX;
  info.height = NY;
  info.count = NZ;
  info.dtype = dt;
  info.spacing[0] = 0.5;
  info.spacing[1] = 0.25;
  info.spacing[2] = 1.5;
  info.origin[0] = -9.25;
  info.origin[1] = 3.0;
  info.origin[2] = 0.1;
  return info;
}

static uint16_t *g_u16;
static float *g_f32;

static void make_data(void) {
  g_u16 = malloc(NVOX * sizeof *g_u16);
  g_f32 = malloc(NVOX * sizeof *g_f32);
  for (size_t i = 0; i < NVOX; i++) {
    g_u16[i] = (uint16_t)th_uniform(0.0, 65536.0);
    g_f32[i] = (float)th_uniform(-1e4, 1e4) * (float)th_uniform(0.0, 1.0);
  }
  /* Extremes and awkward floats must survive bit-exactly. */
  g_u16[0] = 0;
  g_u16[1] = 65535;
  g_u16[NVOX - 1] = 65535;
  g_f32[0] = -0.0f;
  g_f32[1] = 1e-42f; /* subnormal */
  g_f32[2] = 3.4e38f;
  g_f32[3] = -INFINITY;
  g_f32[4] = NAN;
}

static const void *data_for(ctr_dtype dt) {
  return dt == CTR_DTYPE_UINT16 ? (const void *)g_u16 : (const void *)g_f32;
}

/* ---- Formats ------------------------------------------------------------ */

static void test_format_names(void) {
  static const char *names[] = {"raw", "tiff", "tiff-stack", "nrrd", "auto"};
  for (int i = 0; i < 5; i++) {
    ctr_file_format f;
    CHECK_OK(ctr_format_parse(names[i], &f));
    CHECK(!strcmp(ctr_format_name(f), names[i]));
  }
  ctr_file_format f = CTR_FORMAT_AUTO;
  CHECK_FAILS(ctr_format_parse("jpeg", &f), CTR_E_INVALID_ARGUMENT, "tiff-stack");
  static const struct {
    const char *path;
    ctr_file_format fmt;
  } guesses[] = {
      {"a.raw", CTR_FORMAT_RAW},        {"d/a.BIN", CTR_FORMAT_RAW},
      {"x.dat", CTR_FORMAT_RAW},        {"a.tif", CTR_FORMAT_TIFF},
      {"a.b/c.tiff", CTR_FORMAT_TIFF},  {"d/img_%04d.tif", CTR_FORMAT_TIFF_STACK},
      {"100%%.tif", CTR_FORMAT_TIFF},   {"v.nrrd", CTR_FORMAT_NRRD},
      {"v.nhdr", CTR_FORMAT_NRRD},
  };
  for (size_t i = 0; i < sizeof guesses / sizeof guesses[0]; i++) {
    f = CTR_FORMAT_AUTO;
    CHECK_OK(ctr_format_guess(guesses[i].path, &f));
    CHECK_MSG(f == guesses[i].fmt, "%s guessed as %s", guesses[i].path, ctr_format_name(f));
  }
  CHECK_FAILS(ctr_format_guess("scan.xyz", &f), CTR_E_INVALID_ARGUMENT, ".nrrd");
  CHECK_FAILS(ctr_format_guess("dir.raw/scan", &f), CTR_E_INVALID_ARGUMENT, "dir.raw/scan");
}

/* ---- Round trips -------------------------------------------------------- */

static void round_trip(const char *name, ctr_file_format fmt, ctr_dtype dt) {
  const ctr_stack_info info = make_info(dt);
  const size_t es = ctr_dtype_size(dt);
  const char *path = P(name);
  const unsigned char *data = data_for(dt);

  /* Written as two slabs. */
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(path, fmt, &info, 0, &w));
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, 2, dt, data));
  CHECK_OK(ctr_stack_write(w, 2, NZ - 2, dt, data + 2 * NPIX * es));
  CHECK_OK(ctr_stack_commit(w));
  CHECK_MSG(count_temporaries() == 0, "%s left temporaries", name);

  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint = info;
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_AUTO, fmt == CTR_FORMAT_RAW ? &hint : NULL, 0, &r));
  if (!r) return;
  const ctr_stack_info *ri = ctr_stack_reader_get_info(r);
  CHECK(ri->width == NX && ri->height == NY && ri->count == NZ && ri->dtype == dt);
  if (fmt == CTR_FORMAT_NRRD || fmt == CTR_FORMAT_ZARR)
    for (int i = 0; i < 3; i++) {
      CHECK_MSG(ri->spacing[i] == info.spacing[i], "%s spacing[%d] = %.17g", name, i,
                ri->spacing[i]);
      CHECK_MSG(ri->origin[i] == info.origin[i], "%s origin[%d] = %.17g", name, i, ri->origin[i]);
    }
  if (fmt == CTR_FORMAT_TIFF) {
    CHECK_NEAR(ri->spacing[0], 0.5, 1e-5);
    CHECK_NEAR(ri->spacing[1], 0.25, 1e-5);
  }

  unsigned char *all = malloc(NVOX * 4);
  CHECK_OK(ctr_stack_read(r, 0, NZ, dt, all));
  CHECK_MSG(!memcmp(all, data, NVOX * es), "%s %s: data differs", name, ctr_dtype_name(dt));

  /* Slab [2, 4), in both dtypes. */
  memset(all, 0xAB, NVOX * 4);
  CHECK_OK(ctr_stack_read(r, 2, 2, dt, all));
  CHECK_MSG(!memcmp(all, data + 2 * NPIX * es, 2 * NPIX * es), "%s: slab [2,4) differs", name);
  if (dt == CTR_DTYPE_UINT16) {
    float *f = (float *)all;
    CHECK_OK(ctr_stack_read(r, 2, 2, CTR_DTYPE_FLOAT32, f));
    int bad = 0;
    for (size_t i = 0; i < 2 * NPIX; i++) bad += f[i] != (float)g_u16[2 * NPIX + i];
    CHECK_MSG(bad == 0, "%s: %d uint16 -> float32 values differ", name, bad);
  } else {
    uint16_t *u = (uint16_t *)all;
    CHECK_OK(ctr_stack_read(r, 2, 2, CTR_DTYPE_UINT16, u));
    int bad = 0;
    for (size_t i = 0; i < 2 * NPIX; i++) {
      const float v = g_f32[2 * NPIX + i];
      const uint16_t want = !(v > 0) ? 0 : v >= 65535 ? 65535 : (uint16_t)lrint(floor(v + 0.5));
      bad += u[i] != want;
    }
    CHECK_MSG(bad == 0, "%s: %d float32 -> uint16 values differ", name, bad);
  }
  CHECK_FAILS(ctr_stack_read(r, 4, 2, dt, all), CTR_E_INVALID_ARGUMENT, "outside");
  free(all);
  ctr_stack_close(r);
}

static void test_round_trips(void) {
  static const struct {
    const char *name;
    ctr_file_format fmt;
  } cases[] = {
      {"rt_%s.raw", CTR_FORMAT_RAW},
      {"rt_%s.tif", CTR_FORMAT_TIFF},
      {"stack_%s/img_%%03d.tif", CTR_FORMAT_TIFF_STACK},
      {"rt_%s.nrrd", CTR_FORMAT_NRRD},
      {"rtd_%s.nhdr", CTR_FORMAT_NRRD},
      {"rt_%s.zarr", CTR_FORMAT_ZARR},
  };
  mkdir(P("stack_uint16"), 0777);
  mkdir(P("stack_float32"), 0777);
  const ctr_dtype dts[2] = {CTR_DTYPE_UINT16, CTR_DTYPE_FLOAT32};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int d = 0; d < 2; d++) {
      char name[128];
      snprintf(name, sizeof name, cases[c].name, ctr_dtype_name(dts[d]));
      round_trip(name, cases[c].fmt, dts[d]);
    }
  /* Detached NRRD: header and data beside each other, header names data. */
  CHECK(exists(P("rtd_uint16.nhdr")) && exists(P("rtd_uint16.raw")));
  CHECK(file_size(P("rtd_uint16.raw")) == (long long)(NVOX * 2));
  CHECK(exists(P("stack_uint16/img_000.tif")) && exists(P("stack_uint16/img_004.tif")) &&
        !exists(P("stack_uint16/img_005.tif")));

  /* Whole-array wrappers, including overwriting an existing file: refused
   * unless asked, the file kept as it was. */
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32), got = CTR_STACK_INFO_INIT;
  void *loaded = NULL;
  const int64_t before = file_size(P("rt_float32.nrrd"));
  CHECK_FAILS(ctr_stack_save(P("rt_float32.nrrd"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16,
                             g_f32, 0), CTR_E_INVALID_ARGUMENT, "set overwrite to replace it");
  CHECK(file_size(P("rt_float32.nrrd")) == before && count_temporaries() == 0);
  CHECK_OK(ctr_stack_save(P("rt_float32.nrrd"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, g_f32,
                          1));
  CHECK_OK(ctr_stack_load(P("rt_float32.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &got,
                          &loaded));
  CHECK(loaded && got.count == NZ && !memcmp(loaded, g_f32, NVOX * 4));
  free(loaded);
}

/* ---- OME-Zarr ----------------------------------------------------------- */

/* Level l of the OME-Zarr `path` ("path/l", an array) as doubles (n: its
 * sizes z, y, x); NULL when it cannot be read. */
static double *zarr_level(const char *path, int l, ctr_dtype dt, int64_t n[3]) {
  char name[600];
  snprintf(name, sizeof name, "%s/%d", path, l);
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(name, CTR_FORMAT_ZARR, NULL, 0, &r));
  if (!r) return NULL;
  const ctr_stack_info *ri = ctr_stack_reader_get_info(r);
  CHECK_MSG(ri->dtype == dt, "%s is %s", name, ctr_dtype_name(ri->dtype));
  n[0] = ri->count, n[1] = ri->height, n[2] = ri->width;
  const size_t vox = (size_t)(n[0] * n[1] * n[2]);
  float *f = malloc(vox * sizeof *f);
  double *v = malloc(vox * sizeof *v);
  CHECK_OK(ctr_stack_read(r, 0, n[0], CTR_DTYPE_FLOAT32, f));
  for (size_t i = 0; i < vox; i++) v[i] = f[i];
  free(f);
  ctr_stack_close(r);
  return v;
}

/* One OME-Zarr case: an nz x ny x nx volume of dtype dt written in bands of
 * 3 images, last band first, with chunks of `chunk` and levels down to
 * `min_side` (shards of `shard` chunks a side; -1 none, 0 the default
 * rule); read back whole and in a slab, and every pyramid level equal
 * to the 2 x 2 x 2 mean of the level before (fewer voxels at an odd edge),
 * computed here in double and stored as the dtype stores it. */
static void zarr_case(const char *name, ctr_dtype dt, int64_t nz, int64_t ny, int64_t nx,
                      int64_t chunk, int64_t min_side, int levels, int64_t shard) {
  const char *path = P(name);
  ctr_stack_info info = make_info(dt);
  info.width = nx, info.height = ny, info.count = nz;
  const size_t vox = (size_t)(nx * ny * nz), es = ctr_dtype_size(dt), img = (size_t)(nx * ny);
  unsigned char *data = malloc(vox * es), *back = malloc(vox * es);
  for (size_t i = 0; i < vox; i++) {
    if (dt == CTR_DTYPE_UINT16) ((uint16_t *)data)[i] = (uint16_t)th_uniform(0.0, 65536.0);
    else ((float *)data)[i] = (float)th_uniform(-1e3, 1e3);
  }
  ctr__zarr_set_layout(chunk, min_side, shard);
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(path, CTR_FORMAT_AUTO, &info, 0, &w));
  for (int64_t z = (nz - 1) / 3 * 3; w && z >= 0; z -= 3)
    CHECK_OK(ctr_stack_write(w, z, nz - z < 3 ? nz - z : 3, dt, data + (size_t)z * img * es));
  if (w) CHECK_OK(ctr_stack_commit(w));
  ctr__zarr_set_layout(0, 0, 0);
  CHECK_MSG(count_temporaries() == 0, "%s left temporaries", name);

  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    const ctr_stack_info *ri = ctr_stack_reader_get_info(r);
    CHECK_MSG(ri->width == nx && ri->height == ny && ri->count == nz && ri->dtype == dt,
              "%s: %lld x %lld x %lld %s", name, (long long)ri->width, (long long)ri->height,
              (long long)ri->count, ctr_dtype_name(ri->dtype));
    for (int a = 0; a < 3; a++)
      CHECK_MSG(ri->spacing[a] == info.spacing[a] && ri->origin[a] == info.origin[a],
                "%s: spacing %g origin %g", name, ri->spacing[a], ri->origin[a]);
    CHECK_OK(ctr_stack_read(r, 0, nz, dt, back));
    CHECK_MSG(!memcmp(back, data, vox * es), "%s: the volume differs", name);
    if (nz > 2) {
      CHECK_OK(ctr_stack_read(r, 1, nz - 2, dt, back));
      CHECK_MSG(!memcmp(back, data + img * es, (size_t)(nz - 2) * img * es), "%s: a slab differs",
                name);
    }
    ctr_stack_close(r);
  }
  /* the levels: as many as expected, each the mean of the one before */
  int64_t n[3], m[3];
  double *prev = zarr_level(path, 0, dt, n);
  for (int l = 1; prev && l < levels; l++) {
    double *cur = zarr_level(path, l, dt, m);
    if (!cur) break;
    CHECK_MSG(m[0] == (n[0] + 1) / 2 && m[1] == (n[1] + 1) / 2 && m[2] == (n[2] + 1) / 2,
              "%s level %d: %lld x %lld x %lld", name, l, (long long)m[0], (long long)m[1],
              (long long)m[2]);
    int bad = 0;
    for (int64_t z = 0; z < m[0]; z++)
      for (int64_t y = 0; y < m[1]; y++)
        for (int64_t x = 0; x < m[2]; x++) {
          double sum = 0.0;
          int cnt = 0;
          for (int64_t a = 2 * z; a < 2 * z + 2 && a < n[0]; a++)
            for (int64_t b = 2 * y; b < 2 * y + 2 && b < n[1]; b++)
              for (int64_t c = 2 * x; c < 2 * x + 2 && c < n[2]; c++, cnt++)
                sum += prev[(a * n[1] + b) * n[2] + c];
          const double mean = sum / cnt;
          const double want = dt == CTR_DTYPE_UINT16 ? floor(mean + 0.5) : (double)(float)mean;
          bad += cur[(z * m[1] + y) * m[2] + x] != want;
        }
    CHECK_MSG(bad == 0, "%s level %d: %d voxels are not the 2x2x2 mean", name, l, bad);
    free(prev);
    prev = cur;
    memcpy(n, m, sizeof n);
  }
  free(prev);
  char last[600];
  snprintf(last, sizeof last, "%s/%d/zarr.json", path, levels - 1);
  CHECK_MSG(exists(last), "%s: level %d is missing", name, levels - 1);
  snprintf(last, sizeof last, "%s/%d", path, levels);
  CHECK_MSG(!exists(last), "%s: level %d is one too many", name, levels);
  free(data);
  free(back);
}

/* A resumable OME-Zarr writer suspended with complete rows at levels 0, 1
 * and 2 and partial ones everywhere, resumed: images of complete rows read
 * back, the others refused, the recomputed images of complete rows
 * skipped; every level of the result equals ctr_stack_create's. */
static void zarr_resume_case(const char *name, int64_t shard, int64_t complete,
                             const char *refusal, const char *const *present,
                             const char *const *absent) {
  const int64_t nx = 9, ny = 7, nz = 37; /* chunks of 4, levels 37, 19, 10, 5 slices */
  char ref[600], partial[600];
  snprintf(ref, sizeof ref, "%s_ref.zarr", P(name));
  snprintf(partial, sizeof partial, "%s.partial", P(name));
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
  info.width = nx, info.height = ny, info.count = nz;
  const size_t img = (size_t)(nx * ny), vox = img * (size_t)nz;
  float *data = malloc(vox * 4), *back = malloc(vox * 4);
  for (size_t i = 0; i < vox; i++) data[i] = (float)th_uniform(-1e3, 1e3);
  ctr__zarr_set_layout(4, 2, shard);
  CHECK_OK(ctr_stack_save(ref, CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, data, 0));
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr__stack_create_partial(P(name), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  for (int64_t z = 0; w && z < 30; z += 3)
    CHECK_OK(ctr_stack_write(w, z, 3, CTR_DTYPE_FLOAT32, data + (size_t)z * img));
  if (w) CHECK_OK(ctr__stack_flush(w));
  ctr__stack_suspend(w);
  for (int i = 0; present[i]; i++) {
    char f[700];
    snprintf(f, sizeof f, "%s/%s", partial, present[i]);
    CHECK_MSG(exists(f), "%s: %s is missing", name, f);
  }
  for (int i = 0; absent[i]; i++) {
    char f[700];
    snprintf(f, sizeof f, "%s/%s", partial, absent[i]);
    CHECK_MSG(!exists(f), "%s: %s is there", name, f);
  }
  CHECK(!exists(P(name)));
  unsigned char done[37] = {0};
  memset(done, 1, 30);
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P(name), CTR_FORMAT_AUTO, &info, 1, done, &w));
  if (w) {
    CHECK_OK(ctr__stack_read_back(w, 0, complete, back));
    CHECK(!memcmp(back, data, (size_t)complete * img * 4));
    CHECK_FAILS(ctr__stack_read_back(w, complete - 1, 2, back), CTR_E_IO, refusal);
    ctr__stack_forget(w, complete, 30 - complete);
    for (int64_t z = (nz - 1) / 3 * 3; z >= 0; z -= 3) /* everything again, last band first */
      CHECK_OK(ctr_stack_write(w, z, nz - z < 3 ? nz - z : 3, CTR_DTYPE_FLOAT32,
                               data + (size_t)z * img));
    CHECK_OK(ctr_stack_commit(w));
  }
  ctr__zarr_set_layout(0, 0, 0);
  CHECK(!exists(partial) && count_temporaries() == 0);
  for (int l = 0; l < 4; l++) {
    int64_t n[3], m[3];
    double *a = zarr_level(ref, l, CTR_DTYPE_FLOAT32, n);
    double *b = zarr_level(P(name), l, CTR_DTYPE_FLOAT32, m);
    CHECK_MSG(a && b && n[0] == m[0] && n[1] == m[1] && n[2] == m[2] &&
              !memcmp(a, b, (size_t)(n[0] * n[1] * n[2]) * sizeof *a),
              "resumed OME-Zarr %s: level %d differs", name, l);
    free(a);
    free(b);
  }
  free(data);
  free(back);
}

static void test_zarr_resume(void) {
  /* chunks: level 0 rows 0..6 (images 0..27), level 1 rows 0..2, level 2 row 0 */
  static const char *const p0[] = {"0/c/6/1/2", "1/c/2", "2/c/0", NULL};
  static const char *const a0[] = {"0/c/7", "1/c/3", "2/c/1", "3/c/0", NULL};
  zarr_resume_case("zr.zarr", -1, 28,
                   "image 28 lies in a row of chunks (images 28..31) that was not complete", p0,
                   a0);
  /* shards of 2 chunks a side (8 images): level 0 rows 0..2 (images
   * 0..23; shards of 2 x 2 x 2 and 2 x 2 x 1 chunks), level 1 row 0 */
  static const char *const p1[] = {"0/c/2/0/1", "1/c/0/0/0", NULL};
  static const char *const a1[] = {"0/c/3", "0/c/2/0/2", "0/c/2/1", "1/c/1", "2/c/0", NULL};
  zarr_resume_case("zrs.zarr", 2, 24,
                   "image 24 lies in a row of chunks (images 24..31) that was not complete", p1,
                   a1);
}

/* Every file under g_tree_a has the same bytes under g_tree_b (nftw's callback), but for
 * the group's metadata at the top. */
static char g_tree_a[600], g_tree_b[600];
static int g_tree_files, g_tree_diff;
static int same_file_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  if (flag != FTW_F || ftw->level == 1) return 0; /* the group's metadata names its file */
  char other[1400];
  snprintf(other, sizeof other, "%s%s", g_tree_b, path + strlen(g_tree_a));
  FILE *a = fopen(path, "rb"), *b = fopen(other, "rb");
  unsigned char *x = malloc((size_t)sb->st_size + 1), *y = malloc((size_t)sb->st_size + 1);
  const int same = a && b && x && y && fread(x, 1, (size_t)sb->st_size + 1, a) == (size_t)sb->st_size &&
                   fread(y, 1, (size_t)sb->st_size + 1, b) == (size_t)sb->st_size &&
                   !memcmp(x, y, (size_t)sb->st_size);
  g_tree_files++;
  if (!same) {
    g_tree_diff++;
    fprintf(stderr, "  %s and %s differ\n", path, other);
  }
  if (a) fclose(a);
  if (b) fclose(b);
  free(x);
  free(y);
  return 0;
}

/* The same volume written on 1 thread (each shard compressed by the thread writing it)
 * and on 8 (a row of fewer shards than threads: its chunks compressed over every thread
 * first, then its shards written): the same files, byte for byte, both ways round (the
 * levels' metadata included: the pyramid's zstd level). */
static void zarr_threads_case(void) {
  const int64_t n = 20;
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  info.width = info.height = info.count = n;
  uint16_t *data = malloc(sizeof(uint16_t) * (size_t)(n * n * n));
  for (int64_t i = 0; i < n * n * n; i++) data[i] = (uint16_t)(1000 + (i * 7919) % 3001);
  const int threads[2] = {1, 8};
  const int saved = omp_get_max_threads();
  for (int k = 0; k < 2; k++) {
    omp_set_num_threads(threads[k]);
    ctr__zarr_set_layout(2, 2, 0); /* 1000 chunks at level 0: shards of 1 x 8 x 8, 4 a row */
    ctr_stack_writer *w = NULL;
    CHECK_OK(ctr_stack_create(P(k ? "zt8.zarr" : "zt1.zarr"), CTR_FORMAT_AUTO, &info, 0, &w));
    if (w) CHECK_OK(ctr_stack_write(w, 0, n, CTR_DTYPE_UINT16, data));
    if (w) CHECK_OK(ctr_stack_commit(w));
    ctr__zarr_set_layout(0, 0, 0);
  }
  omp_set_num_threads(saved);
  for (int k = 0; k < 2; k++) {
    snprintf(g_tree_a, sizeof g_tree_a, "%s", P(k ? "zt8.zarr" : "zt1.zarr"));
    snprintf(g_tree_b, sizeof g_tree_b, "%s", P(k ? "zt1.zarr" : "zt8.zarr"));
    g_tree_files = g_tree_diff = 0;
    nftw(g_tree_a, same_file_cb, 16, FTW_PHYS);
    CHECK_MSG(g_tree_files > 100 && g_tree_diff == 0, "%s: %d files, %d differ from %s",
              g_tree_a, g_tree_files, g_tree_diff, g_tree_b);
  }
  free(data);
}

static void test_zarr(void) {
  zarr_threads_case();
  /* sizes that are no multiple of the chunk; rows of chunks finished in
   * any order; a volume smaller than a chunk */
  zarr_case("z1.zarr", CTR_DTYPE_FLOAT32, 9, 7, 5, 4, 2, 4, -1);
  zarr_case("z2.zarr", CTR_DTYPE_UINT16, 8, 8, 8, 4, 4, 3, -1);
  zarr_case("z3.zarr", CTR_DTYPE_FLOAT32, 1, 3, 2, 4, 2, 1, -1);
  zarr_case("z4.zarr", CTR_DTYPE_UINT16, 13, 6, 11, 6, 3, 3, -1);
  zarr_case("z5.zarr", CTR_DTYPE_FLOAT32, 70, 33, 65, 0, 0, 1, 0); /* the defaults: 64, 64 */
  /* sharded: shards past the volume's edge on every axis (chunk grids of
   * 5 x 4 x 3 and 7 x 3 x 6 chunks), shards of one chunk, shards larger
   * than a level's grid, and the default rule (a level of more than 512
   * chunks sharded, shards of 1 x 8 x 8 chunks: 1000 chunks at level 0, 125
   * at 1) */
  zarr_case("zs1.zarr", CTR_DTYPE_FLOAT32, 9, 7, 5, 2, 2, 4, 2);
  zarr_case("zs2.zarr", CTR_DTYPE_UINT16, 13, 6, 11, 2, 3, 3, 3);
  zarr_case("zs3.zarr", CTR_DTYPE_FLOAT32, 9, 7, 5, 2, 2, 4, 1);
  zarr_case("zs4.zarr", CTR_DTYPE_UINT16, 13, 6, 11, 4, 3, 3, 100);
  zarr_case("zs5.zarr", CTR_DTYPE_FLOAT32, 20, 20, 20, 2, 10, 3, 0);
  CHECK(exists(P("zs1.zarr/0/c/2/1/1")) && !exists(P("zs1.zarr/0/c/3")) &&
        !exists(P("zs1.zarr/0/c/2/2")) && !exists(P("zs1.zarr/0/c/2/1/2")));
  CHECK(exists(P("zs4.zarr/0/c/0/0/0")) && !exists(P("zs4.zarr/0/c/1")) &&
        !exists(P("zs4.zarr/0/c/0/0/1")));
  CHECK(exists(P("zs5.zarr/0/c/9/1/1")) && !exists(P("zs5.zarr/0/c/10")) &&
        !exists(P("zs5.zarr/0/c/9/2")) && !exists(P("zs5.zarr/0/c/9/1/2")) &&
        exists(P("zs5.zarr/1/c/4/4/4")));
  char *meta = NULL;
  CHECK_OK(ctr__file_read_text(P("zs5.zarr/0/zarr.json"), 1 << 20, "metadata", &meta));
  CHECK(meta && strstr(meta, "\"sharding_indexed\"") && strstr(meta, "\"crc32c\"") &&
        strstr(meta, "\"index_location\":\t\"end\""));
  free(meta);
  meta = NULL;
  CHECK_OK(ctr__file_read_text(P("zs5.zarr/1/zarr.json"), 1 << 20, "metadata", &meta));
  CHECK(meta && !strstr(meta, "sharding_indexed"));
  free(meta);
  CHECK(exists(P("z5.zarr/0/c/1/0/1")) && !exists(P("z5.zarr/0/c/2")));
  CHECK(exists(P("z1.zarr/0/c/2/1/1")) && exists(P("z1.zarr/3/c/0/0/0")));

  /* an image written twice after its chunks were written: refused, the
   * writer left as it was */
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P("twice.zarr"), CTR_FORMAT_AUTO, &info, 0, &w));
  if (w) {
    CHECK_OK(ctr_stack_write(w, 0, NZ, CTR_DTYPE_FLOAT32, g_f32));
    CHECK_FAILS(ctr_stack_write(w, 1, 1, CTR_DTYPE_FLOAT32, g_f32), CTR_E_INVALID_ARGUMENT,
                "image 1 was written already");
    CHECK_OK(ctr_stack_commit(w));
  }

  /* damaged chunks: errors name the chunk's file */
  ctr_stack_reader *r = NULL;
  float *buf = malloc(NVOX * sizeof *buf);
  ctr__zarr_set_layout(2, 1000, -1);
  CHECK_OK(ctr_stack_save(P("bad.zarr"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, g_f32, 0));
  ctr__zarr_set_layout(0, 0, 0);
  const long long full = file_size(P("bad.zarr/0/c/0/0/0"));
  CHECK(full > 8 && truncate(P("bad.zarr/0/c/0/0/0"), full / 2) == 0);
  CHECK_OK(ctr_stack_open(P("bad.zarr"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "bad.zarr/0/c/0/0/0' cannot be decompressed");
    write_text(P("bad.zarr/0/c/1/0/1"), "not zstd at all", 15);
    CHECK_FAILS(ctr_stack_read(r, 2, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "bad.zarr/0/c/1/0/1' (15 bytes) is not a zstd frame");
    /* a missing chunk is the fill value (0) */
    CHECK(unlink(P("bad.zarr/0/c/2/0/0")) == 0);
    CHECK_OK(ctr_stack_read(r, 4, 1, CTR_DTYPE_FLOAT32, buf));
    CHECK(buf[0] == 0.0f && buf[1] == 0.0f && buf[2] == g_f32[4 * NPIX + 2]);
    ctr_stack_close(r);
    r = NULL;
  }
  write_text(P("bad.zarr/0/zarr.json"), "{\"zarr_format\": 3, \"node_type\": \"array\",", 40);
  CHECK_FAILS(ctr_stack_open(P("bad.zarr"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "bad.zarr/0/zarr.json' is not JSON");
  CHECK_FAILS(ctr_stack_open(P("none.zarr"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_IO,
              "none.zarr");
  free(buf);
}

/* CRC-32C known answers (RFC 3720, B.4; the check value of "123456789"). */
static void test_crc32c(void) {
  unsigned char b[32];
  memset(b, 0, sizeof b);
  CHECK(ctr__crc32c(b, 32) == 0x8A9136AAu);
  memset(b, 0xFF, sizeof b);
  CHECK(ctr__crc32c(b, 32) == 0x62A8AB43u);
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)i;
  CHECK(ctr__crc32c(b, 32) == 0x46DD794Eu);
  for (int i = 0; i < 32; i++) b[i] = (unsigned char)(31 - i);
  CHECK(ctr__crc32c(b, 32) == 0x113FDB5Cu);
  CHECK(ctr__crc32c("123456789", 9) == 0xE3069283u);
  CHECK(ctr__crc32c("", 0) == 0u);
}

/* Damaged shards: a changed index byte (its CRC-32C differs), an index
 * entry pointing past the data (with a CRC made to match), a truncated
 * shard, a damaged inner chunk: CTR_E_FORMAT naming the shard file; a
 * missing shard and an absent inner chunk are the fill value. */
static void test_zarr_bad_shards(void) {
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
  ctr__zarr_set_layout(2, 1000, 2);
  CHECK_OK(ctr_stack_save(P("bads.zarr"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, g_f32, 0));
  ctr__zarr_set_layout(0, 0, 0);
  float *buf = malloc(NVOX * sizeof *buf);
  const char *s0 = P("bads.zarr/0/c/0/0/0");
  const long long full = file_size(s0);
  const long long ib = 8 * 16 + 4; /* 2 x 2 x 2 chunks */
  FILE *f = fopen(s0, "r+b");
  unsigned char entry[16];
  CHECK(f && fseek(f, (long)(full - ib), SEEK_SET) == 0 && fread(entry, 1, 16, f) == 16);
  entry[0] ^= 1; /* chunk 0's offset */
  CHECK(f && fseek(f, (long)(full - ib), SEEK_SET) == 0 && fwrite(entry, 1, 16, f) == 16);
  if (f) fclose(f);
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(P("bads.zarr"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "bads.zarr/0/c/0/0/0': the CRC-32C of its index is");
    /* the entry past the data, the CRC recomputed */
    unsigned char *index = malloc((size_t)ib);
    f = fopen(s0, "r+b");
    CHECK(f && fseek(f, (long)(full - ib), SEEK_SET) == 0 &&
          fread(index, 1, (size_t)ib, f) == (size_t)ib);
    for (int b = 0; b < 8; b++) index[b] = (unsigned char)(b == 2 ? 0x7F : 0);
    const uint32_t crc = ctr__crc32c(index, (size_t)ib - 4);
    for (int b = 0; b < 4; b++) index[ib - 4 + b] = (unsigned char)(crc >> (8 * b));
    CHECK(f && fseek(f, (long)(full - ib), SEEK_SET) == 0 &&
          fwrite(index, 1, (size_t)ib, f) == (size_t)ib);
    if (f) fclose(f);
    free(index);
    CHECK_FAILS(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "bads.zarr/0/c/0/0/0': its index puts chunk 0 at bytes 8323072");
    CHECK(truncate(s0, 100) == 0);
    CHECK_FAILS(ctr_stack_read(r, 1, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "bads.zarr/0/c/0/0/0' is 100 bytes: too short for the index of its 8 chunks");
    /* a damaged inner chunk: its first bytes */
    const char *s1 = P("bads.zarr/0/c/1/0/0");
    f = fopen(s1, "r+b");
    CHECK(f && fwrite("garbage!", 1, 8, f) == 8);
    if (f) fclose(f);
    CHECK_FAILS(ctr_stack_read(r, 4, 1, CTR_DTYPE_FLOAT32, buf), CTR_E_FORMAT,
                "Zarr chunk 0 of the shard '");
    /* a missing shard: the fill value */
    CHECK(unlink(s1) == 0);
    CHECK_OK(ctr_stack_read(r, 4, 1, CTR_DTYPE_FLOAT32, buf));
    CHECK(buf[0] == 0.0f && buf[2 * NX + 2] == 0.0f);
    ctr_stack_close(r);
  }
  free(buf);
}

/* float -> uint16 on write: round to nearest, clamp, NaN -> 0. */
static void test_conversion(void) {
  static const float in[] = {-5.0f,    0.0f,     0.49999997f, 0.5f,      1.5f,
                             2.4999f,  65534.4f, 65534.6f,    70000.0f,  NAN,
                             -INFINITY, INFINITY, 1234.5f,    -0.0f,     65535.0f};
  static const uint16_t want[] = {0, 0, 0, 1, 2, 2, 65534, 65535, 65535, 0, 0, 65535, 1235, 0,
                                  65535};
  const int n = (int)(sizeof in / sizeof in[0]);
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, n, 1, 1, CTR_DTYPE_UINT16, {0, 0, 0}, {0, 0, 0}};
  CHECK_OK(ctr_stack_save(P("conv.raw"), CTR_FORMAT_RAW, &info, CTR_DTYPE_FLOAT32, in, 0));
  uint16_t *out = NULL;
  CHECK_OK(ctr_stack_load(P("conv.raw"), CTR_FORMAT_RAW, &info, CTR_DTYPE_UINT16, NULL,
                          (void **)&out));
  for (int i = 0; out && i < n; i++)
    CHECK_MSG(out[i] == want[i], "%.9g -> %u, expected %u", (double)in[i], out[i], want[i]);
  free(out);
  CHECK(file_size(P("conv.raw")) == 2LL * n);
}

/* ---- Slab order, commit, abort ------------------------------------------ */

static void out_of_order(const char *name, ctr_file_format fmt) {
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P(name), fmt, &info, 0, &w));
  if (!w) return;
  /* Image 0 is first written wrong, then rewritten: the last write wins. */
  CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_UINT16, g_u16 + 4 * NPIX));
  CHECK_OK(ctr_stack_write(w, 3, 2, CTR_DTYPE_UINT16, g_u16 + 3 * NPIX));
  CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_UINT16, g_u16));
  CHECK_OK(ctr_stack_write(w, 1, 2, CTR_DTYPE_UINT16, g_u16 + NPIX));
  CHECK_OK(ctr_stack_commit(w));
  ctr_stack_info hint = info;
  void *back = NULL;
  CHECK_OK(ctr_stack_load(P(name), fmt, fmt == CTR_FORMAT_RAW ? &hint : NULL, CTR_DTYPE_UINT16,
                          NULL, &back));
  CHECK_MSG(back && !memcmp(back, g_u16, NVOX * 2), "%s: out-of-order data differs", name);
  free(back);
}

static void test_slab_order(void) {
  out_of_order("ooo.raw", CTR_FORMAT_RAW);
  out_of_order("ooo.nrrd", CTR_FORMAT_NRRD);
  out_of_order("ood.nhdr", CTR_FORMAT_NRRD); /* its data file ood.raw: not ooo.raw */
  out_of_order("ooo_%02d.tif", CTR_FORMAT_TIFF_STACK);

  /* A multi-page TIFF refuses a gap, names the expected image, and still
   * accepts the right one afterwards. */
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P("order.tif"), CTR_FORMAT_TIFF, &info, 0, &w));
  if (!w) return;
  CHECK_FAILS(ctr_stack_write(w, 1, 1, CTR_DTYPE_FLOAT32, g_f32 + NPIX), CTR_E_INVALID_ARGUMENT,
              "expected image 0");
  CHECK_OK(ctr_stack_write(w, 0, 2, CTR_DTYPE_FLOAT32, g_f32));
  CHECK_FAILS(ctr_stack_write(w, 4, 1, CTR_DTYPE_FLOAT32, g_f32), CTR_E_INVALID_ARGUMENT,
              "expected image 2");
  CHECK_OK(ctr_stack_write(w, 2, 3, CTR_DTYPE_FLOAT32, g_f32 + 2 * NPIX));
  CHECK_OK(ctr_stack_commit(w));
  CHECK(exists(P("order.tif")));
}

static void test_commit_abort(void) {
  static const struct {
    const char *name, *target;
    ctr_file_format fmt;
  } cases[] = {
      {"miss.raw", "miss.raw", CTR_FORMAT_RAW},
      {"miss.nhdr", "miss.raw", CTR_FORMAT_NRRD},
      {"miss.tif", "miss.tif", CTR_FORMAT_TIFF},
      {"miss_%d.tif", "miss_0.tif", CTR_FORMAT_TIFF_STACK},
  };
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ctr_stack_writer *w = NULL;
    CHECK_OK(ctr_stack_create(P(cases[c].name), cases[c].fmt, &info, 0, &w));
    if (!w) continue;
    CHECK_OK(ctr_stack_write(w, 0, 2, CTR_DTYPE_UINT16, g_u16));
    if (cases[c].fmt != CTR_FORMAT_TIFF)
      CHECK_OK(ctr_stack_write(w, 3, 2, CTR_DTYPE_UINT16, g_u16 + 3 * NPIX));
    CHECK_FAILS(ctr_stack_commit(w), CTR_E_INVALID_ARGUMENT, "image 2");
    CHECK_MSG(!exists(P(cases[c].name)) && !exists(P(cases[c].target)),
              "%s exists after a failed commit", cases[c].name);
    CHECK_MSG(count_temporaries() == 0, "%s: temporaries left after a failed commit",
              cases[c].name);

    CHECK_OK(ctr_stack_create(P(cases[c].name), cases[c].fmt, &info, 0, &w));
    if (!w) continue;
    CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_UINT16, g_u16));
    ctr_stack_abort(w);
    CHECK_MSG(!exists(P(cases[c].name)) && !exists(P(cases[c].target)),
              "%s exists after abort", cases[c].name);
    CHECK_MSG(count_temporaries() == 0, "%s: temporaries left after abort", cases[c].name);
  }
  ctr_stack_abort(NULL);

  /* No writable directory: refused at create time, naming the path. */
  static const char *missing[] = {"nodir/x.raw", "nodir/x.tif", "nodir/x_%03d.tif",
                                  "nodir/x.nhdr", "nodir/x.nrrd"};
  for (int i = 0; i < 5; i++) {
    ctr_stack_writer *w = NULL;
    CHECK_FAILS(ctr_stack_create(P(missing[i]), CTR_FORMAT_AUTO, &info, 0, &w),
                CTR_E_IO, "nodir/x");
    CHECK(w == NULL);
    CHECK_MSG(strstr(ctr_error_detail(), strerror(ENOENT)) != NULL, "%s: no strerror in '%s'",
              missing[i], ctr_error_detail());
  }
  ctr_stack_writer *w = NULL;
  CHECK_FAILS(ctr_stack_create(P("bad.xyz"), CTR_FORMAT_AUTO, &info, 0, &w), CTR_E_INVALID_ARGUMENT,
              ".tiff");
  ctr_stack_info zero = info;
  zero.height = 0;
  CHECK_FAILS(ctr_stack_create(P("zero.raw"), CTR_FORMAT_RAW, &zero, 0, &w), CTR_E_INVALID_ARGUMENT,
              "must be > 0");
}

/* A write that the OS refuses (here: the file size limit, EFBIG) is CTR_E_IO
 * naming the file, and commit then leaves nothing. */
static void test_write_error(void) {
  static const char *names[] = {"full.raw", "full.nrrd", "full.tif", "full_%d.tif"};
  struct rlimit old;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
  for (int i = 0; i < 4; i++) {
    ctr_stack_writer *w = NULL;
    CHECK_OK(ctr_stack_create(P(names[i]), CTR_FORMAT_AUTO, &info, 0, &w));
    if (!w) continue;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 2048;
    setrlimit(RLIMIT_FSIZE, &small);
    ctr_status st = ctr_stack_write(w, 0, NZ, CTR_DTYPE_FLOAT32, g_f32);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_MSG(st == CTR_E_IO && strstr(ctr_error_detail(), strerror(EFBIG)) &&
                  strstr(ctr_error_detail(), "full"),
              "%s: %s '%s'", names[i], ctr_status_name(st), ctr_error_detail());
    CHECK_FAILS(ctr_stack_commit(w), CTR_E_INVALID_ARGUMENT, "earlier write failed");
    CHECK_MSG(!exists(P(names[i])) && !exists(P("full_0.tif")) && count_temporaries() == 0,
              "%s: output left after a failed write", names[i]);
  }
}

/* ---- Reading errors ----------------------------------------------------- */

static void test_read_errors(void) {
  ctr_stack_reader *r = NULL;
  /* Truncated raw: 16 x 16 x 4 uint16 needs 2048 bytes. */
  char junk[1000];
  memset(junk, 7, sizeof junk);
  write_text(P("short.raw"), junk, sizeof junk);
  ctr_stack_info hint = {CTR_STACK_INFO_VERSION, 16, 16, 4, CTR_DTYPE_UINT16, {0, 0, 0}, {0, 0, 0}};
  CHECK_FAILS(ctr_stack_open(P("short.raw"), CTR_FORMAT_AUTO, &hint, 0, &r), CTR_E_SIZE_MISMATCH,
              "holds 1000 bytes, expected 2048 for 16 x 16 x 4 uint16 (+ 0 offset)");
  CHECK(r == NULL);
  CHECK_FAILS(ctr_stack_open(P("short.raw"), CTR_FORMAT_AUTO, NULL, 0, &r),
              CTR_E_INVALID_ARGUMENT, "hint");
  /* raw_offset: 8 x 8 x 1 uint16 after 872 bytes fits exactly, 873 does not. */
  ctr_stack_info small = {CTR_STACK_INFO_VERSION, 8, 8, 1, CTR_DTYPE_UINT16, {0, 0, 0}, {0, 0, 0}};
  CHECK_OK(ctr_stack_open(P("short.raw"), CTR_FORMAT_RAW, &small, 872, &r));
  uint16_t px[64];
  if (r) CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_UINT16, px));
  CHECK(px[0] == 0x0707 && px[63] == 0x0707);
  ctr_stack_close(r);
  r = NULL;
  CHECK_FAILS(ctr_stack_open(P("short.raw"), CTR_FORMAT_RAW, &small, 873, &r),
              CTR_E_SIZE_MISMATCH, "(+ 873 offset)");

  /* Truncated NRRD: the header stays, the data is cut. */
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  CHECK_OK(ctr_stack_save(P("cut.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_UINT16, g_u16, 0));
  const long long full = file_size(P("cut.nrrd"));
  CHECK(truncate(P("cut.nrrd"), full - 100) == 0);
  char needle[128];
  snprintf(needle, sizeof needle, "holds %lld bytes, expected %zu", full - 100, NVOX * 2);
  CHECK_FAILS(ctr_stack_open(P("cut.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_SIZE_MISMATCH,
              needle);

  /* Hints that disagree with the file name both values. */
  CHECK_OK(ctr_stack_save(P("h.nrrd"), CTR_FORMAT_NRRD, &info, CTR_DTYPE_UINT16, g_u16, 0));
  ctr_stack_info h = {CTR_STACK_INFO_VERSION, 40, 0, 0, 0, {0, 0, 0}, {0, 0, 0}};
  CHECK_FAILS(ctr_stack_open(P("h.nrrd"), CTR_FORMAT_AUTO, &h, 0, &r), CTR_E_SIZE_MISMATCH,
              "width 37, the hint expects width 40");
  h.width = 0;
  h.count = 6;
  CHECK_FAILS(ctr_stack_open(P("h.nrrd"), CTR_FORMAT_AUTO, &h, 0, &r), CTR_E_SIZE_MISMATCH,
              "count 5, the hint expects count 6");
  h.count = 0;
  h.dtype = CTR_DTYPE_FLOAT32;
  CHECK_FAILS(ctr_stack_open(P("h.nrrd"), CTR_FORMAT_AUTO, &h, 0, &r), CTR_E_SIZE_MISMATCH,
              "holds uint16 data, the hint expects float32");
  h.dtype = CTR_DTYPE_UINT16;
  h.height = NY;
  CHECK_OK(ctr_stack_open(P("h.nrrd"), CTR_FORMAT_AUTO, &h, 0, &r));
  ctr_stack_close(r);
  r = NULL;

  CHECK_FAILS(ctr_stack_open(P("vol.xyz"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_INVALID_ARGUMENT,
              ".nrrd");
  CHECK_FAILS(ctr_stack_open(P("absent.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_IO,
              "absent.nrrd");
  CHECK(strstr(ctr_error_detail(), strerror(ENOENT)) != NULL);
  CHECK_FAILS(ctr_stack_open(P("absent.tif"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_IO,
              "absent.tif");
  CHECK_FAILS(ctr_stack_open(P("absent_%03d.tif"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_IO,
              "absent_000.tif");
}

static void test_nrrd_headers(void) {
  ctr_stack_reader *r = NULL;
  static const char gz[] = "NRRD0004\ntype: float\ndimension: 3\nsizes: 2 2 1\n"
                           "encoding: gzip\n\n0123456789abcdef";
  write_text(P("gz.nrrd"), gz, sizeof gz - 1);
  CHECK_FAILS(ctr_stack_open(P("gz.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "encoding 'gzip' is not supported: only raw");

  static const char bad[] = "NRRD0004\ntype: float\ndimension: 3\nsizes 2 2 1\n\n0123";
  write_text(P("bad.nrrd"), bad, sizeof bad - 1);
  CHECK_FAILS(ctr_stack_open(P("bad.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "line 4");
  static const char badtype[] = "NRRD0004\ntype: double\ndimension: 2\nsizes: 2 2\n\n";
  write_text(P("dbl.nrrd"), badtype, sizeof badtype - 1);
  CHECK_FAILS(ctr_stack_open(P("dbl.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "type 'double'");
  /* Data longer than the header says: a ushort header over float data (twice
   * the bytes), attached and detached, is an error, as for raw files. */
  static const char ushort_over_float[] = "NRRD0004\ntype: ushort\ndimension: 2\nsizes: 2 2\n"
                                          "encoding: raw\n\n0123456789abcdef";
  write_text(P("long.nrrd"), ushort_over_float, sizeof ushort_over_float - 1);
  CHECK_FAILS(ctr_stack_open(P("long.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_SIZE_MISMATCH,
              "holds 16 data bytes, the header of");
  CHECK(strstr(ctr_error_detail(), "describes 8") && strstr(ctr_error_detail(), "'type'"));
  static const char detached[] = "NRRD0004\ntype: ushort\ndimension: 2\nsizes: 2 2\n"
                                 "encoding: raw\ndata file: long.raw\n\n";
  write_text(P("long.nhdr"), detached, sizeof detached - 1);
  write_text(P("long.raw"), "0123456789", 10);
  CHECK_FAILS(ctr_stack_open(P("long.nhdr"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_SIZE_MISMATCH,
              "long.raw' holds 10 data bytes");
  write_text(P("long.raw"), "01234567", 8); /* exact: fine */
  CHECK_OK(ctr_stack_open(P("long.nhdr"), CTR_FORMAT_AUTO, NULL, 0, &r));
  ctr_stack_close(r);
  r = NULL;
  write_text(P("notnrrd.nrrd"), "hello\n\n", 7);
  CHECK_FAILS(ctr_stack_open(P("notnrrd.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "not a NRRD file");

  /* A foreign-style header: 2D, "unsigned short", big endian, spacings,
   * comments, key/value pairs, CRLF line ends. */
  static const char be[] = "NRRD0005\r\n# comment\r\nfoo:=bar\r\ntype: unsigned short\r\n"
                           "dimension: 2\r\nsizes: 3 2\r\nendian: big\r\nencoding: raw\r\n"
                           "spacings: 0.7 0.9\r\n\r\n"
                           "\x00\x01\x01\x00\xff\xfe\x00\x00\x12\x34\x80\x00";
  write_text(P("be.nrrd"), be, sizeof be - 1);
  CHECK_OK(ctr_stack_open(P("be.nrrd"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    const ctr_stack_info *ri = ctr_stack_reader_get_info(r);
    CHECK(ri->width == 3 && ri->height == 2 && ri->count == 1 && ri->dtype == CTR_DTYPE_UINT16);
    CHECK(ri->spacing[0] == 0.7 && ri->spacing[1] == 0.9);
    uint16_t v[6];
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_UINT16, v));
    CHECK(v[0] == 1 && v[1] == 256 && v[2] == 0xfffe && v[3] == 0 && v[4] == 0x1234 &&
          v[5] == 0x8000);
    float f[6];
    CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, f));
    CHECK(f[2] == 65534.0f && f[5] == 32768.0f);
    ctr_stack_close(r);
    r = NULL;
  }

  /* The written header is what 3D Slicer and ITK expect. */
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  CHECK_OK(ctr_stack_save(P("hdr.nhdr"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, g_u16, 0));
  char text[2048] = {0};
  FILE *f = fopen(P("hdr.nhdr"), "rb");
  if (f) {
    fread(text, 1, sizeof text - 1, f);
    fclose(f);
  }
  CHECK(!strncmp(text, "NRRD0004\n", 9));
  CHECK(strstr(text, "type: uint16\n") && strstr(text, "sizes: 37 23 5\n") &&
        strstr(text, "space directions: (0.5,0,0) (0,0.25,0) (0,0,1.5)\n") &&
        strstr(text, "space origin: (-9.25,3,0.1)\n") && strstr(text, "endian: little\n") &&
        strstr(text, "encoding: raw\n") && strstr(text, "kinds: domain domain domain\n") &&
        strstr(text, "data file: hdr.raw\n"));
}

/* ---- TIFF specifics ----------------------------------------------------- */

static int write_tiff_pages(const char *path, const char *mode, int pages, int bps, int fmt,
                            int spp, int tiled) {
  TIFF *t = TIFFOpen(path, mode);
  if (!t) return 0;
  const uint32_t w = 40, h = 30;
  unsigned char buf[40 * 30 * 4 * 3];
  for (int p = 0; p < pages; p++) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, (uint16_t)bps);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)spp);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, (uint16_t)fmt);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC,
                 (uint16_t)(spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK));
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG);
    const size_t row = (size_t)w * spp * bps / 8;
    for (size_t i = 0; i < sizeof buf / 4; i++) ((float *)buf)[i] = (float)(p * 10000 + i);
    if (tiled) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, 16u);
      TIFFSetField(t, TIFFTAG_TILELENGTH, 16u);
      unsigned char tile[16 * 16 * 4];
      for (uint32_t y0 = 0; y0 < h; y0 += 16)
        for (uint32_t x0 = 0; x0 < w; x0 += 16) {
          memset(tile, 0, sizeof tile);
          for (uint32_t y = y0; y < y0 + 16 && y < h; y++)
            for (uint32_t x = x0; x < x0 + 16 && x < w; x++)
              memcpy(tile + ((y - y0) * 16 + (x - x0)) * 4, buf + y * row + x * 4, 4);
          TIFFWriteTile(t, tile, x0, y0, 0, 0);
        }
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 7u);
      for (uint32_t y = 0; y < h; y++) TIFFWriteScanline(t, buf + y * row, y, 0);
    }
    TIFFWriteDirectory(t);
  }
  TIFFClose(t);
  return 1;
}

static void test_tiff_specifics(void) {
  ctr_stack_reader *r = NULL;
  float *img = malloc(40 * 30 * 4 * 3);
  /* BigTIFF with several pages, read out of order. */
  CHECK(write_tiff_pages(P("big.tif"), "w8", 3, 32, SAMPLEFORMAT_IEEEFP, 1, 0));
  CHECK_OK(ctr_stack_open(P("big.tif"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK(ctr_stack_reader_get_info(r)->count == 3 && ctr_stack_reader_get_info(r)->width == 40);
    CHECK_OK(ctr_stack_read(r, 2, 1, CTR_DTYPE_FLOAT32, img));
    CHECK(img[0] == 20000.0f && img[40 * 30 - 1] == 20000.0f + 1199.0f);
    CHECK_OK(ctr_stack_read(r, 0, 2, CTR_DTYPE_FLOAT32, img));
    CHECK(img[5] == 5.0f && img[1200 + 7] == 10007.0f);
    ctr_stack_close(r);
    r = NULL;
  }
  /* Tiled pages (tiles overhang the 40 x 30 image). */
  CHECK(write_tiff_pages(P("tiled.tif"), "w", 2, 32, SAMPLEFORMAT_IEEEFP, 1, 1));
  CHECK_OK(ctr_stack_open(P("tiled.tif"), CTR_FORMAT_AUTO, NULL, 0, &r));
  if (r) {
    CHECK_OK(ctr_stack_read(r, 1, 1, CTR_DTYPE_FLOAT32, img));
    int bad = 0;
    for (int i = 0; i < 1200; i++) bad += img[i] != (float)(10000 + i);
    CHECK_MSG(bad == 0, "%d tiled pixels differ", bad);
    ctr_stack_close(r);
    r = NULL;
  }
  /* Unsupported sample layouts name the page's format; libtiff's own
   * complaints go to the detail, never to stderr. */
  CHECK(write_tiff_pages(P("u8.tif"), "w", 1, 8, SAMPLEFORMAT_UINT, 1, 0));
  CHECK_FAILS(ctr_stack_open(P("u8.tif"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT,
              "page 0 of");
  CHECK(strstr(ctr_error_detail(), "8-bit unsigned integer") != NULL);
  CHECK(write_tiff_pages(P("rgb.tif"), "w", 1, 8, SAMPLEFORMAT_UINT, 3, 0));
  CHECK_FAILS(ctr_stack_open(P("rgb.tif"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_FORMAT, "RGB");

  fflush(stderr);
  int saved = dup(2);
  int quiet = open(P("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(quiet, 2);
  write_text(P("junk.tif"), "II*\0garbage-garbage-garbage", 27);
  ctr_status st = ctr_stack_open(P("junk.tif"), CTR_FORMAT_AUTO, NULL, 0, &r);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(quiet);
  CHECK(st == CTR_E_FORMAT && strstr(ctr_error_detail(), "junk.tif"));
  CHECK_MSG(file_size(P("stderr.txt")) == 0, "libtiff printed to stderr");

  /* Stacks: numbering may start at 1; a rewrite with fewer images removes
   * the old tail; a file of another size is refused. */
  ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
  mkdir(P("s"), 0777);
  CHECK_OK(ctr_stack_save(P("s/a_%d.tif"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, g_u16, 0));
  unlink(P("s/a_0.tif"));
  void *back = NULL;
  ctr_stack_info got = CTR_STACK_INFO_INIT;
  CHECK_OK(ctr_stack_load(P("s/a_%d.tif"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_UINT16, &got, &back));
  CHECK(got.count == NZ - 1 && back && !memcmp(back, g_u16 + NPIX, (NVOX - NPIX) * 2));
  free(back);
  info.count = 2;
  /* any file of the stack there is refused, the files kept; overwrite replaces */
  CHECK_FAILS(ctr_stack_save(P("s/a_%d.tif"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, g_u16, 0),
              CTR_E_INVALID_ARGUMENT, "(of the output '");
  CHECK(!strcmp(ctr_error_get_field(), "overwrite") &&
        !strcmp(ctr_error_get_value(), P("s/a_%d.tif")));
  CHECK(exists(P("s/a_4.tif")) && !exists(P("s/a_0.tif")));
  CHECK_OK(ctr_stack_save(P("s/a_%d.tif"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, g_u16, 1));
  CHECK(exists(P("s/a_1.tif")) && !exists(P("s/a_2.tif")) && !exists(P("s/a_4.tif")));
  CHECK(write_tiff_pages(P("s/a_2.tif"), "w", 1, 16, SAMPLEFORMAT_UINT, 1, 0));
  CHECK_FAILS(ctr_stack_open(P("s/a_%d.tif"), CTR_FORMAT_AUTO, NULL, 0, &r), CTR_E_SIZE_MISMATCH,
              "a_2.tif' is 40 x 30 uint16, expected 37 x 23 uint16");
  CHECK_FAILS(ctr_stack_open(P("s/a_%s.tif"), CTR_FORMAT_TIFF_STACK, NULL, 0, &r),
              CTR_E_INVALID_ARGUMENT, "'%s' is not supported");
  CHECK_FAILS(ctr_stack_open(P("s/a_%d_%d.tif"), CTR_FORMAT_TIFF_STACK, NULL, 0, &r),
              CTR_E_INVALID_ARGUMENT, "more than one");
  free(img);
}

/* ---- PNG ---------------------------------------------------------------- */

static unsigned char *read_png(const char *path, unsigned *w, unsigned *h) {
  return png_read_as(path, PNG_FORMAT_GRAY, w, h);
}

static void test_png(void) {
  enum { W = 256, H = 3 };
  float ramp[W * H];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) ramp[y * W + x] = (float)x;
  CHECK_OK(ctr_png_write_gray(P("ramp.png"), ramp, W, H, 0.0f, 255.0f, 0));
  unsigned char sig[8] = {0};
  FILE *f = fopen(P("ramp.png"), "rb");
  if (f) {
    CHECK(fread(sig, 1, 8, f) == 8);
    fclose(f);
  }
  CHECK(!memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
  unsigned w = 0, h = 0;
  unsigned char *px = read_png(P("ramp.png"), &w, &h);
  CHECK(px && w == W && h == H);
  int bad = 0;
  for (int i = 0; px && i < W * H; i++) bad += px[i] != i % W;
  CHECK_MSG(bad == 0, "%d ramp pixels differ", bad);
  free(px);
  /* Window [64, 191.5]: half of 255 per 63.75 units; NaN is black. */
  ramp[1] = NAN;
  CHECK_OK(ctr_png_write_gray(P("ramp2.png"), ramp, W, H, 64.0f, 191.5f, 0));
  px = read_png(P("ramp2.png"), &w, &h);
  CHECK(px && px[0] == 0 && px[1] == 0 && px[64] == 0 && px[128] == 128 && px[191] == 254 &&
        px[192] == 255 && px[255] == 255);
  free(px);
  /* A constant image with the automatic window. */
  float flat[16];
  for (int i = 0; i < 16; i++) flat[i] = 3.0f;
  CHECK_OK(ctr_png_write_gray(P("flat.png"), flat, 4, 4, 0.0f, 0.0f, 0));
  px = read_png(P("flat.png"), &w, &h);
  CHECK(px && w == 4 && h == 4 && px[0] == px[15]);
  free(px);
  CHECK_FAILS(ctr_png_write_gray(P("x.png"), flat, 4, 4, 2.0f, 1.0f, 0), CTR_E_INVALID_ARGUMENT,
              "lo <= hi");
  CHECK_FAILS(ctr_png_write_gray(P("nodir/x.png"), flat, 4, 4, 0, 1, 0), CTR_E_IO, "nodir/x.png");

  /* Preview of a volume whose value is its z index: one window (0..7) for
   * all three views, z pointing up in xz and yz. */
  enum { VX = 20, VY = 12, VZ = 8 };
  float *vol = malloc(sizeof(float) * VX * VY * VZ);
  for (int i = 0; i < VX * VY * VZ; i++) vol[i] = (float)(i / (VX * VY));
  CHECK_OK(ctr_png_preview(P("prev"), vol, VX, VY, VZ, 0.0f, 0.0f, 0));
  px = read_png(P("prev_xy.png"), &w, &h);
  CHECK(px && w == VX && h == VY && px[0] == 146 && px[VX * VY - 1] == 146);
  free(px);
  px = read_png(P("prev_xz.png"), &w, &h);
  CHECK(px && w == VX && h == VZ && px[0] == 255 && px[VX * (VZ - 1)] == 0);
  free(px);
  px = read_png(P("prev_yz.png"), &w, &h);
  CHECK(px && w == VY && h == VZ && px[0] == 255 && px[VY * VZ - 1] == 0);
  free(px);
  free(vol);
  CHECK(count_temporaries() == 0);
}

int main(void) {
  if (!scratch_open("ctr_test_io")) return 1;
  make_data();
  test_format_names();
  test_round_trips();
  test_zarr();
  test_zarr_resume();
  test_crc32c();
  test_zarr_bad_shards();
  test_conversion();
  test_slab_order();
  test_commit_abort();
  test_write_error();
  test_read_errors();
  test_nrrd_headers();
  test_tiff_specifics();
  test_png();
  scratch_close();
  free(g_u16);
  free(g_f32);
  return th_finish("test_io");
}

/* Resumable output (src/io/stack_partial.h): partial files, suspend and
 * resume, the aligned NRRD header, direct I/O and the injected full disk.
 * Every check compares real file contents. Runs in a fresh directory under
 * /tmp that is removed at the end. */
#include "harness.h"
#include "scratch_dir.h"

#include "io/stack_partial.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NX = 37, NY = 23, NZ = 6, HALF = 3 };
#define NPIX ((size_t)NX * NY)
#define NVOX (NPIX * NZ)

static uint16_t *g_u16;
static float *g_f32, *g_u16_as_f32;

static void make_data(void) {
  g_u16 = malloc(NVOX * sizeof *g_u16);
  g_f32 = malloc(NVOX * sizeof *g_f32);
  g_u16_as_f32 = malloc(NVOX * sizeof *g_u16_as_f32);
  for (size_t i = 0; i < NVOX; i++) {
    g_u16[i] = (uint16_t)th_uniform(0.0, 65536.0);
    g_f32[i] = (float)th_uniform(-1e4, 1e4);
    g_u16_as_f32[i] = (float)g_u16[i];
  }
  g_f32[0] = -0.0f;
  g_f32[1] = NAN;
}

static ctr_stack_info make_info(ctr_dtype dt, int64_t w, int64_t h, int64_t n) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = w;
  info.height = h;
  info.count = n;
  info.dtype = dt;
  info.spacing[0] = 0.5;
  info.spacing[1] = 0.25;
  info.spacing[2] = 1.5;
  info.origin[0] = -9.25;
  return info;
}

static const unsigned char *data_for(ctr_dtype dt) {
  return dt == CTR_DTYPE_UINT16 ? (const unsigned char *)g_u16 : (const unsigned char *)g_f32;
}

/* "*.partial*" anywhere under the scratch directory. */
static int g_partial_found;
static int find_partial(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  if (strstr(path + strlen(g_dir), ".partial")) g_partial_found++;
  return 0;
}
static int count_partials(void) {
  g_partial_found = 0;
  nftw(g_dir, find_partial, 16, FTW_PHYS);
  return g_partial_found;
}

/* ---- The formats that can be resumed ------------------------------------ */

typedef struct format_case {
  const char *name; /* printf with the dtype name */
  int nfiles;       /* target files: the path itself, or these */
  const char *files[NZ];
} format_case;

static const format_case g_cases[] = {
    {"p_%s.raw", 1, {"p_%s.raw"}},
    {"p_%s.nrrd", 1, {"p_%s.nrrd"}},
    {"p_%s.nhdr", 2, {"p_%s.nhdr", "p_%s.raw"}},
    {"ps_%s/img_%%02d.tif",
     NZ,
     {"ps_%s/img_00.tif", "ps_%s/img_01.tif", "ps_%s/img_02.tif", "ps_%s/img_03.tif",
      "ps_%s/img_04.tif", "ps_%s/img_05.tif"}},
};
#define NCASES ((int)(sizeof g_cases / sizeof g_cases[0]))

static void case_name(char *buf, size_t n, const char *fmt, ctr_dtype dt) {
  snprintf(buf, n, fmt, ctr_dtype_name(dt));
}

/* Every target file of the case equals the one ctr_stack_save wrote under
 * ref/; and nothing partial or temporary is left. */
static void check_like_reference(const format_case *c, ctr_dtype dt, const char *what) {
  for (int i = 0; i < c->nfiles; i++) {
    char rel[128], ref[160];
    case_name(rel, sizeof rel, c->files[i], dt);
    snprintf(ref, sizeof ref, "ref/%s", rel);
    CHECK_MSG(same_files(P(rel), P(ref)), "%s: '%s' differs from ctr_stack_save's '%s'", what,
              rel, ref);
  }
  CHECK_MSG(count_partials() == 0, "%s: partial files left", what);
  CHECK_MSG(count_temporaries() == 0, "%s: temporaries left", what);
}

static void write_reference(const format_case *c, ctr_dtype dt) {
  char rel[128], ref[160];
  case_name(rel, sizeof rel, c->name, dt);
  snprintf(ref, sizeof ref, "ref/%s", rel);
  const ctr_stack_info info = make_info(dt, NX, NY, NZ);
  /* the cases share targets: a .nhdr's data file is the .raw case's */
  CHECK_OK(ctr_stack_save(P(ref), CTR_FORMAT_AUTO, &info, dt, data_for(dt), 1));
}

/* Half written, flushed, suspended; resumed and finished in another order. */
static void suspend_resume(const format_case *c, ctr_dtype dt) {
  char rel[128], first[128], what[160];
  case_name(rel, sizeof rel, c->name, dt);
  case_name(first, sizeof first, c->files[0], dt);
  snprintf(what, sizeof what, "%s resumed", rel);
  const ctr_stack_info info = make_info(dt, NX, NY, NZ);
  const size_t img = NPIX * ctr_dtype_size(dt);
  const unsigned char *data = data_for(dt);
  char path[512]; /* P() reuses its buffers */
  snprintf(path, sizeof path, "%s", P(rel));

  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr__stack_create_partial(path, CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, 2, dt, data));
  /* One slab converted on the way (exact for uint16 <- float of integers). */
  if (dt == CTR_DTYPE_UINT16)
    CHECK_OK(ctr_stack_write(w, 2, 1, CTR_DTYPE_FLOAT32, g_u16_as_f32 + 2 * NPIX));
  else
    CHECK_OK(ctr_stack_write(w, 2, 1, dt, data + 2 * img));
  CHECK_OK(ctr__stack_flush(w));
  ctr__stack_suspend(w);

  /* Suspended: no target, the partial files hold what was written. */
  for (int i = 0; i < c->nfiles; i++) {
    char f[128];
    case_name(f, sizeof f, c->files[i], dt);
    CHECK_MSG(!exists(P(f)), "%s: '%s' exists after suspend", what, f);
  }
  char *partial = ctr__stack_partial_name(path, CTR_FORMAT_AUTO);
  CHECK_MSG(partial && exists(partial), "%s: no partial file '%s'", what,
            partial ? partial : "(null)");
  long long size = 0;
  unsigned char *held = partial ? read_all(partial, &size) : NULL;
  const char *ext = strrchr(rel, '.');
  if (!strcmp(ext, ".raw"))
    CHECK_MSG(held && size == (long long)(HALF * img) && !memcmp(held, data, HALF * img),
              "%s: the partial raw file does not hold images 0..2", what);
  if (!strcmp(ext, ".nrrd"))
    CHECK_MSG(held && size == (long long)(4096 + HALF * img) && !memcmp(held, "NRRD0004\n", 9) &&
                  !memcmp(held + 4096, data, HALF * img),
              "%s: the partial NRRD file does not hold its header and images 0..2", what);
  if (!strcmp(ext, ".nhdr")) {
    char data_partial[160];
    case_name(data_partial, sizeof data_partial, "p_%s.raw.partial", dt);
    long long dsize = 0;
    unsigned char *d = read_all(P(data_partial), &dsize);
    CHECK_MSG(d && dsize == (long long)(HALF * img) && !memcmp(d, data, HALF * img),
              "%s: '%s' does not hold images 0..2", what, data_partial);
    free(d);
  }
  if (!strcmp(ext, ".tif"))
    for (int i = 0; i < NZ; i++) {
      char f[128], fp[160];
      case_name(f, sizeof f, c->files[i], dt);
      snprintf(fp, sizeof fp, "%s.partial", f);
      CHECK_MSG(exists(P(fp)) == (i < HALF), "%s: '%s' %s", what, fp,
                i < HALF ? "is missing" : "exists");
    }
  free(held);
  free(partial);

  /* Resumed: the rest, last image first. */
  unsigned char done[NZ] = {1, 1, 1, 0, 0, 0};
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(path, CTR_FORMAT_AUTO, &info, 1, done, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 5, 1, dt, data + 5 * img));
  CHECK_OK(ctr_stack_write(w, 3, 1, dt, data + 3 * img));
  CHECK_OK(ctr_stack_write(w, 4, 1, dt, data + 4 * img));
  CHECK_OK(ctr_stack_commit(w));
  check_like_reference(c, dt, what);

  ctr_stack_info hint = info;
  void *back = NULL;
  CHECK_OK(ctr_stack_load(path, CTR_FORMAT_AUTO, !strcmp(ext, ".raw") ? &hint : NULL, dt, NULL,
                          &back));
  CHECK_MSG(back && !memcmp(back, data, NZ * img), "%s: data read back differ", what);
  free(back);
}

/* resume = 0 over partial files full of other data starts from nothing. */
static void fresh_over_partial(const format_case *c, ctr_dtype dt) {
  char rel[128], what[160];
  case_name(rel, sizeof rel, c->name, dt);
  snprintf(what, sizeof what, "%s fresh", rel);
  const ctr_stack_info info = make_info(dt, NX, NY, NZ);
  const size_t img = NPIX * ctr_dtype_size(dt);
  const unsigned char *data = data_for(dt);
  char path[512]; /* P() reuses its buffers */
  snprintf(path, sizeof path, "%s", P(rel));
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr__stack_create_partial(path, CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  for (int i = 0; i < NZ; i++) CHECK_OK(ctr_stack_write(w, i, 1, dt, data + (NZ - 1 - i) * img));
  CHECK_OK(ctr__stack_flush(w));
  ctr__stack_suspend(w);
  CHECK_MSG(count_partials() > 0, "%s: no partial files after suspend", what);

  w = NULL;
  unsigned char done[NZ] = {1, 1, 1, 1, 1, 1}; /* ignored when not resuming */
  CHECK_OK(ctr__stack_create_partial(path, CTR_FORMAT_AUTO, &info, 0, done, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  /* Truncated: raw and .nhdr data empty, the .nrrd header alone; the TIFF
   * stack's old partial images removed. */
  const char *ext = strrchr(rel, '.');
  char data_partial[160];
  case_name(data_partial, sizeof data_partial, "p_%s.raw.partial", dt);
  char *partial = !strcmp(ext, ".nhdr") ? strdup(P(data_partial))
                                        : ctr__stack_partial_name(path, CTR_FORMAT_AUTO);
  const long long want = !strcmp(ext, ".nrrd") ? 4096 : !strcmp(ext, ".tif") ? -1 : 0;
  CHECK_MSG(partial && file_size(partial) == want, "%s: '%s' has %lld bytes, expected %lld", what,
            partial ? partial : "(null)", partial ? file_size(partial) : -2, want);
  free(partial);
  /* Only images 1.. written: nothing can be committed. */
  CHECK_OK(ctr_stack_write(w, 1, NZ - 1, dt, data + img));
  CHECK_FAILS(ctr_stack_commit(w), CTR_E_INVALID_ARGUMENT, "image 0");

  w = NULL;
  CHECK_OK(ctr__stack_create_partial(path, CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, NZ, dt, data));
  CHECK_OK(ctr_stack_commit(w));
  check_like_reference(c, dt, what);
}

/* Commit with an image missing leaves neither target nor partial files. */
static void commit_missing(const format_case *c, ctr_dtype dt) {
  char rel[128], what[160];
  case_name(rel, sizeof rel, c->name, dt);
  snprintf(what, sizeof what, "%s incomplete", rel);
  const ctr_stack_info info = make_info(dt, NX, NY, NZ);
  const size_t img = NPIX * ctr_dtype_size(dt);
  /* A finished stack of other data first: a failed commit must not touch it. */
  for (int i = 0; i < c->nfiles; i++) {
    char f[128];
    case_name(f, sizeof f, c->files[i], dt);
    unlink(P(f));
  }
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr__stack_create_partial(P(rel), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, 2, dt, data_for(dt)));
  CHECK_OK(ctr_stack_write(w, 3, 3, dt, data_for(dt) + 3 * img));
  CHECK_OK(ctr__stack_flush(w));
  CHECK_FAILS(ctr_stack_commit(w), CTR_E_INVALID_ARGUMENT, "image 2");
  for (int i = 0; i < c->nfiles; i++) {
    char f[128];
    case_name(f, sizeof f, c->files[i], dt);
    CHECK_MSG(!exists(P(f)), "%s: '%s' exists after a failed commit", what, f);
  }
  CHECK_MSG(count_partials() == 0 && count_temporaries() == 0, "%s: files left", what);

  /* Abort of a resumed writer removes the partial files too. */
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P(rel), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, 1, dt, data_for(dt)));
  ctr__stack_suspend(w);
  unsigned char done[NZ] = {1, 0, 0, 0, 0, 0};
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P(rel), CTR_FORMAT_AUTO, &info, 1, done, &w));
  ctr__stack_set_overwrite(w, 1); /* the cases share targets */
  ctr_stack_abort(w);
  CHECK_MSG(count_partials() == 0, "%s: partial files left after abort", what);
}

static void test_resumable_formats(void) {
  mkdir(P("ref"), 0777);
  const ctr_dtype dts[2] = {CTR_DTYPE_FLOAT32, CTR_DTYPE_UINT16};
  for (int d = 0; d < 2; d++) {
    char dir[64];
    snprintf(dir, sizeof dir, "ps_%s", ctr_dtype_name(dts[d]));
    mkdir(P(dir), 0777);
    snprintf(dir, sizeof dir, "ref/ps_%s", ctr_dtype_name(dts[d]));
    mkdir(P(dir), 0777);
    for (int c = 0; c < NCASES; c++) {
      write_reference(&g_cases[c], dts[d]);
      suspend_resume(&g_cases[c], dts[d]);
      fresh_over_partial(&g_cases[c], dts[d]);
      commit_missing(&g_cases[c], dts[d]);
    }
  }
}

/* ---- Refused resumes ---------------------------------------------------- */

static void test_refused_resume(void) {
  const ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32, NX, NY, NZ);
  const size_t img = NPIX * 4;
  unsigned char done[NZ] = {1, 1, 0, 0, 0, 0};
  ctr_stack_writer *w = NULL;

  /* Nothing to resume: the missing partial file is named. */
  CHECK_FAILS(ctr__stack_create_partial(P("none.raw"), CTR_FORMAT_AUTO, &info, 1, done, &w),
              CTR_E_IO, "none.raw.partial");
  CHECK(w == NULL && strstr(ctr_error_detail(), "cannot be resumed") &&
        strstr(ctr_error_detail(), strerror(ENOENT)));
  CHECK_FAILS(ctr__stack_create_partial(P("none.nrrd"), CTR_FORMAT_NRRD, &info, 1, NULL, &w),
              CTR_E_IO, "none.nrrd.partial");
  mkdir(P("nonestack"), 0777);
  CHECK_FAILS(ctr__stack_create_partial(P("nonestack/i_%d.tif"), CTR_FORMAT_AUTO, &info, 1, done,
                                        &w),
              CTR_E_IO, "nonestack/i_0.tif.partial");
  CHECK(strstr(ctr_error_detail(), "cannot be resumed") != NULL);

  /* Detached NRRD with its data partial gone: named, and the header partial
   * is left for another try. */
  CHECK_OK(ctr__stack_create_partial(P("det.nhdr"), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  if (w) CHECK_OK(ctr_stack_write(w, 0, 2, CTR_DTYPE_FLOAT32, g_f32));
  ctr__stack_suspend(w);
  CHECK(exists(P("det.nhdr.partial")) && exists(P("det.raw.partial")));
  unlink(P("det.raw.partial"));
  w = NULL;
  CHECK_FAILS(ctr__stack_create_partial(P("det.nhdr"), CTR_FORMAT_AUTO, &info, 1, done, &w),
              CTR_E_IO, "det.raw.partial");
  CHECK(w == NULL && exists(P("det.nhdr.partial")));
  ctr__stack_remove_partial(P("det.nhdr"), CTR_FORMAT_AUTO, NZ);
  CHECK(!exists(P("det.nhdr.partial")));

  /* TIFF stack: image 1 marked done but its partial file gone. */
  CHECK_OK(ctr__stack_create_partial(P("nonestack/i_%d.tif"), CTR_FORMAT_AUTO, &info, 0, NULL,
                                     &w));
  if (w) CHECK_OK(ctr_stack_write(w, 0, 2, CTR_DTYPE_FLOAT32, g_f32));
  ctr__stack_suspend(w);
  unlink(P("nonestack/i_1.tif.partial"));
  w = NULL;
  CHECK_FAILS(ctr__stack_create_partial(P("nonestack/i_%d.tif"), CTR_FORMAT_AUTO, &info, 1, done,
                                        &w),
              CTR_E_IO, "nonestack/i_1.tif.partial");
  CHECK(exists(P("nonestack/i_0.tif.partial")));
  /* A partial TIFF of another size is refused, naming it. */
  ctr_stack_info wide = info;
  wide.width = NX + 1;
  done[1] = 0;
  CHECK_FAILS(ctr__stack_create_partial(P("nonestack/i_%d.tif"), CTR_FORMAT_AUTO, &wide, 1, done,
                                        &w),
              CTR_E_SIZE_MISMATCH, "i_0.tif.partial");
  ctr__stack_remove_partial(P("nonestack/i_%d.tif"), CTR_FORMAT_AUTO, NZ);
  CHECK(count_partials() == 0);

  /* Partial files of another stack. */
  CHECK_OK(ctr__stack_create_partial(P("other.raw"), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  if (w) CHECK_OK(ctr_stack_write(w, 0, NZ, CTR_DTYPE_FLOAT32, g_f32));
  ctr__stack_suspend(w);
  ctr_stack_info shorter = info;
  shorter.count = 2;
  CHECK_FAILS(ctr__stack_create_partial(P("other.raw"), CTR_FORMAT_AUTO, &shorter, 1, done, &w),
              CTR_E_SIZE_MISMATCH, "other.raw.partial");
  CHECK(file_size(P("other.raw.partial")) == (long long)(NZ * img));
  CHECK(truncate(P("other.raw.partial"), (off_t)img) == 0);
  done[1] = 1;
  CHECK_FAILS(ctr__stack_create_partial(P("other.raw"), CTR_FORMAT_AUTO, &info, 1, done, &w),
              CTR_E_SIZE_MISMATCH, "image 1, which is marked written");

  CHECK_OK(ctr__stack_create_partial(P("other.nrrd"), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  ctr__stack_suspend(w);
  ctr_stack_info moved = info;
  moved.origin[1] = 7.0;
  CHECK_FAILS(ctr__stack_create_partial(P("other.nrrd"), CTR_FORMAT_AUTO, &moved, 1, NULL, &w),
              CTR_E_SIZE_MISMATCH, "other.nrrd.partial");
  /* A header cut short by a crash is completed. */
  CHECK(truncate(P("other.nrrd.partial"), 100) == 0);
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P("other.nrrd"), CTR_FORMAT_AUTO, &info, 1, NULL, &w));
  if (w) CHECK_OK(ctr_stack_write(w, 0, NZ, CTR_DTYPE_FLOAT32, g_f32));
  if (w) CHECK_OK(ctr_stack_commit(w));
  void *back = NULL;
  CHECK_OK(ctr_stack_load(P("other.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, NULL, &back));
  CHECK(back && !memcmp(back, g_f32, NZ * img));
  free(back);
  ctr__stack_remove_partial(P("other.raw"), CTR_FORMAT_RAW, NZ);
  CHECK(count_partials() == 0);

  /* Multi-page TIFF cannot be resumed. */
  w = NULL;
  CHECK_FAILS(ctr__stack_create_partial(P("multi.tif"), CTR_FORMAT_AUTO, &info, 0, NULL, &w),
              CTR_E_UNSUPPORTED, "use raw, nrrd, OME-Zarr or a TIFF stack pattern");
  CHECK(w == NULL && !exists(P("multi.tif")) && count_temporaries() == 0);
  CHECK(ctr__stack_partial_name(P("multi.tif"), CTR_FORMAT_AUTO) == NULL);

  /* Names. */
  static const struct {
    const char *path, *want;
  } names[] = {{"a/b.raw", "a/b.raw.partial"},
               {"b.nhdr", "b.nhdr.partial"},
               {"d/i_%04d.tif", "d/i_0000.tif.partial"}};
  for (int i = 0; i < 3; i++) {
    char *n = ctr__stack_partial_name(names[i].path, CTR_FORMAT_AUTO);
    CHECK_MSG(n && !strcmp(n, names[i].want), "%s -> %s", names[i].path, n ? n : "(null)");
    free(n);
  }
  ctr__stack_suspend(NULL);
  ctr__stack_remove_partial(P("gone.raw"), CTR_FORMAT_AUTO, 3);
}

/* ---- Aligned NRRD header ------------------------------------------------ */

static void test_nrrd_alignment(void) {
  const ctr_stack_info info = make_info(CTR_DTYPE_UINT16, NX, NY, NZ);
  CHECK_OK(ctr_stack_save(P("al.nrrd"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_UINT16, g_u16, 0));
  long long size = 0;
  unsigned char *f = read_all(P("al.nrrd"), &size);
  CHECK(f && size == (long long)(4096 + NVOX * 2));
  if (!f) return;
  CHECK(!memcmp(f, "NRRD0004\n", 9) && f[4094] == '\n' && f[4095] == '\n');
  CHECK(!memcmp(f + 4096, g_u16, NVOX * 2));
  /* Every header line is a field or a comment; only the last line is blank. */
  int bad = 0, fields = 0;
  for (const unsigned char *p = f + 9; p < f + 4095;) {
    const unsigned char *nl = memchr(p, '\n', (size_t)(f + 4096 - p));
    if (!nl) break;
    if (nl == f + 4095) break;
    if (p == nl || (p[0] != '#' && !memmem(p, (size_t)(nl - p), ": ", 2))) bad++;
    if (p[0] != '#') fields++;
    p = nl + 1;
  }
  CHECK_MSG(bad == 0 && fields == 9, "%d bad header lines, %d fields", bad, fields);
  free(f);
}

/* ---- Direct I/O --------------------------------------------------------- */

enum { BW = 1024, BH = 1024, BN = 6 };
#define BPIX ((size_t)BW * BH)

static int direct_supported(void) {
  int fd = open(P("probe"), O_CREAT | O_WRONLY | O_DIRECT, 0644);
  if (fd >= 0) close(fd);
  unlink(P("probe"));
  return fd >= 0;
}

/* Writes a big float32 stack partly from an aligned buffer (direct) and
 * partly from an unaligned one (buffered), overwriting both ways, and reads
 * it back both ways. Returns the bytes that went direct. */
static long long big_round_trip(const char *name, const float *ref, float *aligned,
                                unsigned char *unaligned_mem, int direct_io) {
  const size_t img = BPIX * 4;
  float *unaligned = (float *)(unaligned_mem + 4); /* 4-byte but not 4096-byte aligned */
  const ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32, BW, BH, BN);
  const int64_t before = ctr__io_direct_bytes();
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P(name), CTR_FORMAT_AUTO, &info, 1, &w)); /* called again */
  if (!w) return -1;
  if (!direct_io) ctr_stack_writer_set_direct_io(w, 0);
  memcpy(aligned, ref, BN * img);
  memcpy(unaligned, ref, BN * img);
  memset(aligned + BPIX, 0x5A, img);        /* image 1 wrong in the direct write... */
  memset(unaligned + 4 * BPIX, 0x33, img);  /* ...image 4 wrong in the buffered one */
  CHECK_OK(ctr_stack_write(w, 0, 3, CTR_DTYPE_FLOAT32, aligned));
  CHECK_OK(ctr_stack_write(w, 3, 3, CTR_DTYPE_FLOAT32, unaligned + 3 * BPIX));
  memcpy(unaligned + BPIX, ref + BPIX, img);
  memcpy(aligned + 4 * BPIX, ref + 4 * BPIX, img);
  CHECK_OK(ctr_stack_write(w, 1, 1, CTR_DTYPE_FLOAT32, unaligned + BPIX));    /* buffered */
  CHECK_OK(ctr_stack_write(w, 4, 1, CTR_DTYPE_FLOAT32, aligned + 4 * BPIX));  /* direct */
  CHECK_OK(ctr_stack_commit(w));

  ctr_stack_info hint = info;
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(P(name), CTR_FORMAT_AUTO, &hint, 0, &r));
  if (!r) return -1;
  if (!direct_io) ctr_stack_reader_set_direct_io(r, 0);
  memset(aligned, 0, BN * img);
  memset(unaligned, 0, BN * img);
  CHECK_OK(ctr_stack_read(r, 0, BN, CTR_DTYPE_FLOAT32, aligned));
  CHECK_OK(ctr_stack_read(r, 0, BN, CTR_DTYPE_FLOAT32, unaligned));
  CHECK_MSG(!memcmp(aligned, ref, BN * img), "%s: aligned read differs", name);
  CHECK_MSG(!memcmp(unaligned, ref, BN * img), "%s: unaligned read differs", name);
  /* A slab in the middle, and converted to uint16 through the aligned
   * conversion buffer. */
  memset(aligned, 0, img);
  CHECK_OK(ctr_stack_read(r, 4, 1, CTR_DTYPE_FLOAT32, aligned));
  CHECK_MSG(!memcmp(aligned, ref + 4 * BPIX, img), "%s: image 4 differs", name);
  uint16_t *u = (uint16_t *)unaligned;
  CHECK_OK(ctr_stack_read(r, 2, 1, CTR_DTYPE_UINT16, u));
  int bad = 0;
  for (size_t i = 0; i < BPIX; i++) {
    const float v = ref[2 * BPIX + i];
    bad += u[i] != (uint16_t)(v <= 0 ? 0 : v >= 65535 ? 65535 : (uint16_t)(v + 0.5f));
  }
  CHECK_MSG(bad == 0, "%s: %d converted values differ", name, bad);
  ctr_stack_close(r);
  return (long long)(ctr__io_direct_bytes() - before);
}

static void test_direct_io(void) {
  const size_t img = BPIX * 4;
  float *ref = malloc(BN * img), *aligned = NULL;
  unsigned char *unaligned_mem = malloc(BN * img + 64);
  if (posix_memalign((void **)&aligned, CTR__IO_ALIGN, BN * img) != 0) aligned = NULL;
  if (!ref || !aligned || !unaligned_mem) {
    CHECK(!"out of memory");
    return;
  }
  for (size_t i = 0; i < BN * BPIX; i++) ref[i] = (float)(i % 65521) * 0.75f + (float)(i / BPIX);
  const int direct = direct_supported();
  if (!direct) fprintf(stderr, "note: O_DIRECT not supported in %s; direct path not exercised\n",
                       g_dir);
  /* Direct: the aligned writes (images 0-2 and 4) and reads (all, then 4). */
  const long long want = (long long)(4 * img + BN * img + img);
  static const char *names[2] = {"big.raw", "big.nrrd"};
  for (int i = 0; i < 2; i++) {
    const long long moved = big_round_trip(names[i], ref, aligned, unaligned_mem, 1);
    if (direct) CHECK_MSG(moved >= want, "%s: %lld bytes went direct, expected >= %lld", names[i],
                          moved, want);
  }
  CHECK(file_size(P("big.nrrd")) == (long long)(4096 + BN * img));

  /* A uint16 file written from float32: the conversion buffer is aligned. */
  const ctr_stack_info u16 = make_info(CTR_DTYPE_UINT16, BW, BH, BN);
  int64_t before = ctr__io_direct_bytes();
  CHECK_OK(ctr_stack_save(P("big16.raw"), CTR_FORMAT_AUTO, &u16, CTR_DTYPE_FLOAT32, ref, 0));
  if (direct) CHECK(ctr__io_direct_bytes() - before >= (int64_t)(BN * BPIX * 2));
  void *back = NULL;
  ctr_stack_info hint = u16;
  CHECK_OK(ctr_stack_load(P("big16.raw"), CTR_FORMAT_RAW, &hint, CTR_DTYPE_FLOAT32, NULL, &back));
  int bad = 0;
  for (size_t i = 0; back && i < BN * BPIX; i++)
    bad += ((float *)back)[i] != (float)(uint16_t)(ref[i] + 0.5f);
  CHECK_MSG(back && bad == 0, "big16.raw: %d values differ", bad);
  free(back);

  /* Direct I/O turned off on the writer and the reader: all buffered, same
   * result. */
  for (int i = 0; i < 2; i++) {
    const long long moved = big_round_trip(names[i], ref, aligned, unaligned_mem, 0);
    CHECK_MSG(moved == 0, "%s: %lld bytes went direct with direct I/O off", names[i], moved);
  }
  /* Off, then on again: the reader opens its direct descriptor again. */
  {
    ctr_stack_info hint = make_info(CTR_DTYPE_FLOAT32, BW, BH, BN);
    ctr_stack_reader *r = NULL;
    CHECK_OK(ctr_stack_open(P("big.raw"), CTR_FORMAT_RAW, &hint, 0, &r));
    if (r) {
      ctr_stack_reader_set_direct_io(r, 0);
      before = ctr__io_direct_bytes();
      CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, aligned));
      CHECK(ctr__io_direct_bytes() == before);
      ctr_stack_reader_set_direct_io(r, 1);
      CHECK_OK(ctr_stack_read(r, 0, 1, CTR_DTYPE_FLOAT32, aligned));
      if (direct) CHECK(ctr__io_direct_bytes() - before == (int64_t)img);
      CHECK(!memcmp(aligned, ref, img));
      ctr_stack_close(r);
    }
  }

  /* Images of 37 x 23: never aligned, never direct. */
  before = ctr__io_direct_bytes();
  const ctr_stack_info small = make_info(CTR_DTYPE_FLOAT32, NX, NY, NZ);
  CHECK_OK(ctr_stack_save(P("small.nrrd"), CTR_FORMAT_AUTO, &small, CTR_DTYPE_FLOAT32, g_f32, 0));
  back = NULL;
  CHECK_OK(ctr_stack_load(P("small.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, NULL, &back));
  CHECK(back && !memcmp(back, g_f32, NVOX * 4));
  free(back);
  CHECK(ctr__io_direct_bytes() == before);
  free(ref);
  free(aligned);
  free(unaligned_mem);
}

/* ---- Injected full disk ------------------------------------------------- */

static void set_enospc(long long after) {
  if (after < 0) {
    unsetenv("CTRECON_INJECT_ENOSPC_AFTER");
  } else {
    char v[32];
    snprintf(v, sizeof v, "%lld", after);
    setenv("CTRECON_INJECT_ENOSPC_AFTER", v, 1);
  }
  ctr__io_fault_reset();
}

static void test_enospc(void) {
  const ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32, NX, NY, NZ);
  const size_t img = NPIX * 4;

  /* ctr_stack_create: the failing write names the file; abort leaves nothing. */
  set_enospc((long long)(2 * img + 10));
  ctr_stack_writer *w = NULL;
  CHECK_OK(ctr_stack_create(P("full.raw"), CTR_FORMAT_AUTO, &info, 0, &w));
  if (w) {
    CHECK_OK(ctr_stack_write(w, 0, 2, CTR_DTYPE_FLOAT32, g_f32));
    CHECK_FAILS(ctr_stack_write(w, 2, 2, CTR_DTYPE_FLOAT32, g_f32 + 2 * NPIX), CTR_E_IO,
                "No space left on device");
    CHECK(strstr(ctr_error_detail(), "full.raw") != NULL);
    ctr_stack_abort(w);
  }
  CHECK(!exists(P("full.raw")) && count_temporaries() == 0 && count_partials() == 0);

  /* Resumable NRRD: the header and two images fit, the third does not;
   * suspended, the flushed images are in the partial file, and a resume
   * with room again finishes it. */
  set_enospc((long long)(4096 + 2 * img + 100));
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P("full.nrrd"), CTR_FORMAT_AUTO, &info, 0, NULL, &w));
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_FLOAT32, g_f32));
  CHECK_OK(ctr_stack_write(w, 1, 1, CTR_DTYPE_FLOAT32, g_f32 + NPIX));
  CHECK_OK(ctr__stack_flush(w));
  CHECK_FAILS(ctr_stack_write(w, 2, 1, CTR_DTYPE_FLOAT32, g_f32 + 2 * NPIX), CTR_E_IO,
              "No space left on device");
  CHECK(strstr(ctr_error_detail(), "full.nrrd") != NULL);
  CHECK_FAILS(ctr_stack_write(w, 3, 1, CTR_DTYPE_FLOAT32, g_f32 + 3 * NPIX),
              CTR_E_INVALID_ARGUMENT, "earlier write");
  ctr__stack_suspend(w);
  set_enospc(-1);
  CHECK(!exists(P("full.nrrd")));
  long long size = 0;
  unsigned char *held = read_all(P("full.nrrd.partial"), &size);
  CHECK_MSG(held && size >= (long long)(4096 + 2 * img) && !memcmp(held + 4096, g_f32, 2 * img),
            "the partial file lost the flushed images (%lld bytes)", size);
  free(held);
  unsigned char done[NZ] = {1, 1, 0, 0, 0, 0};
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P("full.nrrd"), CTR_FORMAT_AUTO, &info, 1, done, &w));
  if (!w) return;
  CHECK_OK(ctr_stack_write(w, 2, NZ - 2, CTR_DTYPE_FLOAT32, g_f32 + 2 * NPIX));
  CHECK_OK(ctr_stack_commit(w));
  void *back = NULL;
  CHECK_OK(ctr_stack_load(P("full.nrrd"), CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, NULL, &back));
  CHECK(back && !memcmp(back, g_f32, NVOX * 4));
  free(back);
  CHECK(count_partials() == 0);

  /* The direct path runs out of room too: image 0 (4 MiB, direct) fits,
   * image 1 does not. */
  const ctr_stack_info big = make_info(CTR_DTYPE_FLOAT32, BW, BH, 2);
  float *a = NULL;
  REQUIRE(posix_memalign((void **)&a, CTR__IO_ALIGN, 2 * BPIX * 4) == 0);
  for (size_t i = 0; i < 2 * BPIX; i++) a[i] = (float)i;
  set_enospc((long long)(BPIX * 4 * 3 / 2));
  w = NULL;
  CHECK_OK(ctr__stack_create_partial(P("fullbig.raw"), CTR_FORMAT_AUTO, &big, 0, NULL, &w));
  if (w) {
    CHECK_OK(ctr_stack_write(w, 0, 1, CTR_DTYPE_FLOAT32, a));
    CHECK_OK(ctr__stack_flush(w));
    CHECK_FAILS(ctr_stack_write(w, 1, 1, CTR_DTYPE_FLOAT32, a + BPIX), CTR_E_IO,
                "No space left on device");
    ctr__stack_suspend(w);
  }
  set_enospc(-1);
  held = read_all(P("fullbig.raw.partial"), &size);
  CHECK_MSG(held && size >= (long long)(BPIX * 4) && !memcmp(held, a, BPIX * 4),
            "fullbig.raw.partial lost image 0 (%lld bytes)", size);
  free(held);
  ctr__stack_remove_partial(P("fullbig.raw"), CTR_FORMAT_AUTO, 2);
  CHECK(count_partials() == 0 && !exists(P("fullbig.raw")));
  free(a);

  /* Injection off again: writes succeed. */
  CHECK_OK(ctr_stack_save(P("after.raw"), CTR_FORMAT_AUTO, &info, CTR_DTYPE_FLOAT32, g_f32, 0));
}

int main(void) {
  if (!scratch_open("ctr_test_io_partial")) return 1;
  set_enospc(-1);
  make_data();
  test_resumable_formats();
  test_refused_resume();
  test_nrrd_alignment();
  test_direct_io();
  test_enospc();
  scratch_close();
  free(g_u16);
  free(g_f32);
  free(g_u16_as_f32);
  return th_finish("test_io_partial");
}

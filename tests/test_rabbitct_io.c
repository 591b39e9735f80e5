/* RabbitCT data files and scoring: writer/reader round trip, the old header
 * without version word (built by hand), size-based detection of references,
 * truncated and malformed files, writer ordering / commit / abort, HU
 * conversion and scores against hand-computed values. Runs in a fresh
 * directory under /tmp that is removed at the end. */
#include "harness.h"
#include "scratch_dir.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

enum { W = 37, H = 23, NV = 5 };
#define NPIX ((size_t)W * H)
#define VIEW_BYTES (96 + NPIX * 4)
/* HU0's bits (0x447a0000) make the versioned reading of an old header
 * implausible (more than 2^20 views). */
#define HU0 1000.0f
#define HU1 -1000.0f

static double g_mat[NV][12];
static float g_img[NV][NPIX];
static uint16_t g_ref16[16 * 16 * 16], g_ref32[32 * 32 * 32];


static void make_data(void) {
  for (int v = 0; v < NV; v++) {
    for (int k = 0; k < 12; k++) g_mat[v][k] = th_uniform(-2000.0, 2000.0);
    for (size_t p = 0; p < NPIX; p++) g_img[v][p] = (float)th_uniform(-5.0, 5.0);
  }
  for (size_t i = 0; i < sizeof g_ref16 / 2; i++) g_ref16[i] = (uint16_t)th_uniform(0, 65536);
  for (size_t i = 0; i < sizeof g_ref32 / 2; i++) g_ref32[i] = (uint16_t)th_uniform(0, 65536);
}

static ctr_rabbitct_header make_header(int nref, int64_t first_ref) {
  ctr_rabbitct_header h;
  memset(&h, 0, sizeof h);
  h.width = W;
  h.height = H;
  h.nviews = NV;
  h.hu0 = HU0;
  h.hu1 = HU1;
  h.nref = nref;
  for (int k = 0; k < nref; k++) h.ref_sizes[k] = first_ref << k;
  return h;
}

/* Writes the test data with references 16 and 32 (the first nref of them). */
static ctr_status write_file(const char *path, int nref) {
  ctr_rabbitct_header h = make_header(nref, 16);
  ctr_rabbitct_writer *w;
  ctr_status st = ctr_rabbitct_create(path, &h, 0, &w);
  if (st != CTR_OK) return st;
  for (int v = 0; v < NV && st == CTR_OK; v++) st = ctr_rabbitct_write_view(w, g_mat[v], g_img[v]);
  if (st == CTR_OK && nref > 0) st = ctr_rabbitct_write_reference(w, 16, g_ref16);
  if (st == CTR_OK && nref > 1) st = ctr_rabbitct_write_reference(w, 32, g_ref32);
  if (st != CTR_OK) {
    ctr_rabbitct_abort(w);
    return st;
  }
  return ctr_rabbitct_commit(w);
}

/* ---- Hand-built files (little-endian host assumed, as the CI is x86/arm) */

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }

static void write_by_hand(const char *path, int versioned, int nref) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f != NULL);
  if (versioned) put_u32(f, 103);
  put_u32(f, W);
  put_u32(f, H);
  put_u32(f, NV);
  const float hu[2] = {HU0, HU1};
  put(f, hu, sizeof hu);
  for (int v = 0; v < NV; v++) {
    put(f, g_mat[v], sizeof g_mat[v]);
    put(f, g_img[v], sizeof g_img[v]);
  }
  if (nref > 0) put(f, g_ref16, sizeof g_ref16);
  if (nref > 1) put(f, g_ref32, sizeof g_ref32);
  fclose(f);
}

/* Copies the first n bytes of src to dst, then `extra` bytes of garbage. */
static void copy_prefix(const char *src, const char *dst, long long n, int extra) {
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  CHECK_MSG(in && out, "cannot copy %s to %s", src, dst);
  if (!in || !out) {
    if (in) fclose(in);
    if (out) fclose(out);
    return;
  }
  for (long long i = 0; i < n; i++) {
    int c = fgetc(in);
    if (c == EOF) break;
    fputc(c, out);
  }
  for (int i = 0; i < extra; i++) fputc(0xA5, out);
  fclose(in);
  fclose(out);
}

static int files_equal(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int eq = fa && fb;
  while (eq) {
    int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) eq = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return eq;
}

/* Reads every view and reference of `path` and compares with the data. */
static void check_contents(const char *path, uint32_t version, int nref) {
  ctr_rabbitct *r = NULL;
  CHECK_OK(ctr_rabbitct_open(path, &r));
  if (!r) return;
  const ctr_rabbitct_header *h = ctr_rabbitct_get_header(r);
  CHECK_MSG(h->version == version, "%s: version %u, expected %u", path, h->version, version);
  CHECK(h->width == W && h->height == H && h->nviews == NV);
  CHECK(h->hu0 == HU0 && h->hu1 == HU1);
  CHECK_MSG(h->nref == nref, "%s: nref %d, expected %d", path, h->nref, nref);
  for (int k = 0; k < nref && k < h->nref; k++) CHECK(h->ref_sizes[k] == (16 << k));
  static float img[NPIX];
  double m[12];
  for (int v = 0; v < NV; v++) {
    CHECK_OK(ctr_rabbitct_read_view(r, v, m, img));
    CHECK_MSG(memcmp(m, g_mat[v], sizeof m) == 0, "%s: matrix %d differs", path, v);
    CHECK_MSG(memcmp(img, g_img[v], sizeof img) == 0, "%s: image %d differs", path, v);
  }
  /* Matrix only, as geometry set-up does for every view. */
  memset(m, 0, sizeof m);
  CHECK_OK(ctr_rabbitct_read_view(r, NV - 1, m, NULL));
  CHECK(memcmp(m, g_mat[NV - 1], sizeof m) == 0);
  static uint16_t vol[32 * 32 * 32];
  if (nref > 0) {
    CHECK_OK(ctr_rabbitct_read_reference(r, 16, vol));
    CHECK(memcmp(vol, g_ref16, sizeof g_ref16) == 0);
  }
  if (nref > 1) {
    CHECK_OK(ctr_rabbitct_read_reference(r, 32, vol));
    CHECK(memcmp(vol, g_ref32, sizeof g_ref32) == 0);
  }
  CHECK_FAILS(ctr_rabbitct_read_view(r, NV, m, img), CTR_E_INVALID_ARGUMENT, "expected 0..4");
  CHECK_FAILS(ctr_rabbitct_read_view(r, -1, m, img), CTR_E_INVALID_ARGUMENT, "view -1");
  ctr_rabbitct_close(r);
}

static void test_round_trip(void) {
  CHECK_OK(write_file(P("rt.rct"), 2));
  CHECK(file_size(P("rt.rct")) == 24 + NV * (long long)VIEW_BYTES + 2 * (4096 + 32768));
  check_contents(P("rt.rct"), 103, 2);
  /* The writer's bytes are exactly the documented layout. */
  write_by_hand(P("hand_v.rct"), 1, 2);
  CHECK(files_equal(P("rt.rct"), P("hand_v.rct")));
  CHECK(count_temporaries() == 0);

  /* Without references, and a reference that is not there. */
  CHECK_OK(write_file(P("noref.rct"), 0));
  check_contents(P("noref.rct"), 103, 0);
  ctr_rabbitct *r = NULL;
  uint16_t dummy;
  CHECK_OK(ctr_rabbitct_open(P("rt.rct"), &r));
  CHECK_FAILS(ctr_rabbitct_read_reference(r, 64, &dummy), CTR_E_FORMAT, "sizes present: 16, 32");
  CHECK_FAILS(ctr_rabbitct_read_reference(r, 128, &dummy), CTR_E_FORMAT, "L = 128");
  ctr_rabbitct_close(r);
  CHECK_OK(ctr_rabbitct_open(P("noref.rct"), &r));
  CHECK_FAILS(ctr_rabbitct_read_reference(r, 128, &dummy), CTR_E_FORMAT, "sizes present: none");
  ctr_rabbitct_close(r);
  ctr_rabbitct_close(NULL);
  CHECK(ctr_rabbitct_get_header(NULL) == NULL);
}

/* An explicit version survives; a published-size (128) reference is found. */
static void test_version_and_128(void) {
  ctr_rabbitct_header h = make_header(1, 128);
  h.width = 3;
  h.height = 2;
  h.nviews = 1;
  h.version = 7;
  const float img[6] = {1, 2, 3, 4, 5, 6};
  uint16_t *vol = calloc((size_t)128 * 128 * 128, sizeof *vol);
  for (size_t i = 0; i < (size_t)128 * 128 * 128; i += 4099) vol[i] = (uint16_t)i;
  ctr_rabbitct_writer *w = NULL;
  CHECK_OK(ctr_rabbitct_create(P("v7.rct"), &h, 0, &w));
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[0], img));
  CHECK_OK(ctr_rabbitct_write_reference(w, 128, vol));
  CHECK_OK(ctr_rabbitct_commit(w));
  ctr_rabbitct *r = NULL;
  CHECK_OK(ctr_rabbitct_open(P("v7.rct"), &r));
  if (r) {
    const ctr_rabbitct_header *g = ctr_rabbitct_get_header(r);
    CHECK(g->version == 7 && g->width == 3 && g->height == 2 && g->nviews == 1);
    CHECK(g->nref == 1 && g->ref_sizes[0] == 128);
    uint16_t *back = malloc((size_t)128 * 128 * 128 * sizeof *back);
    CHECK_OK(ctr_rabbitct_read_reference(r, 128, back));
    CHECK(memcmp(back, vol, (size_t)128 * 128 * 128 * sizeof *vol) == 0);
    free(back);
    ctr_rabbitct_close(r);
  }
  free(vol);
}

/* The published data set's layout (1248 x 960, 496 views, references 128 to
 * 1024: 4.8 GB) as a sparse file: the last view and the 128^3 reference sit
 * beyond 2^31 bytes, where 32-bit offsets would break. */
static void test_large_offsets(void) {
  const int64_t w = 1248, h = 960, n = 496, vb = 96 + w * h * 4;
  const int64_t views_end = 24 + n * vb;
  const int64_t total = views_end + 2 * (128LL * 128 * 128 + 256LL * 256 * 256 +
                                         512LL * 512 * 512 + 1024LL * 1024 * 1024);
  int fd = open(P("big.rct"), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, (off_t)total) != 0) {
    fprintf(stderr, "test_large_offsets: no sparse 4.8 GB file here, skipped\n");
    if (fd >= 0) close(fd);
    return;
  }
  uint32_t hdr[6] = {103, (uint32_t)w, (uint32_t)h, (uint32_t)n, 0, 0};
  const float hu[2] = {HU0, HU1};
  memcpy(&hdr[4], hu, sizeof hu);
  const float pixel = 42.5f;
  const uint16_t voxel = 4321;
  const int64_t last = 24 + (n - 1) * vb;
  CHECK(pwrite(fd, hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr);
  CHECK(pwrite(fd, g_mat[3], 96, (off_t)last) == 96);
  CHECK(pwrite(fd, &pixel, 4, (off_t)(last + 96 + (w * h - 1) * 4)) == 4);
  CHECK(pwrite(fd, &voxel, 2, (off_t)(views_end + 2 * 12345)) == 2);
  close(fd);

  ctr_rabbitct *r = NULL;
  CHECK_OK(ctr_rabbitct_open(P("big.rct"), &r));
  if (r) {
    const ctr_rabbitct_header *g = ctr_rabbitct_get_header(r);
    CHECK(g->version == 103 && g->width == w && g->height == h && g->nviews == n);
    CHECK(g->nref == 4 && g->ref_sizes[0] == 128 && g->ref_sizes[3] == 1024);
    double m[12];
    float *img = malloc((size_t)(w * h) * sizeof *img);
    CHECK_OK(ctr_rabbitct_read_view(r, n - 1, m, img));
    CHECK(memcmp(m, g_mat[3], sizeof m) == 0 && img[w * h - 1] == pixel && img[0] == 0.0f);
    free(img);
    uint16_t *vol = malloc((size_t)128 * 128 * 128 * sizeof *vol);
    CHECK_OK(ctr_rabbitct_read_reference(r, 128, vol));
    CHECK(vol[12345] == voxel && vol[12344] == 0);
    free(vol);
    ctr_rabbitct_close(r);
  }
  unlink(P("big.rct"));
}

static void test_old_header(void) {
  write_by_hand(P("old.rct"), 0, 2);
  CHECK(file_size(P("old.rct")) == 20 + NV * (long long)VIEW_BYTES + 2 * (4096 + 32768));
  check_contents(P("old.rct"), 0, 2);
  write_by_hand(P("old1.rct"), 0, 1);
  check_contents(P("old1.rct"), 0, 1);
}

static void test_bad_files(void) {
  const long long views_end = 24 + NV * (long long)VIEW_BYTES; /* 17524 */
  ctr_rabbitct *r = (ctr_rabbitct *)&r;
  CHECK_FAILS(ctr_rabbitct_open(P("missing.rct"), &r), CTR_E_IO, "missing.rct");
  CHECK_FAILS(ctr_rabbitct_open(P("missing.rct"), &r), CTR_E_IO, "No such file");
  CHECK(r == NULL);
  CHECK_FAILS(ctr_rabbitct_open(g_dir, &r), CTR_E_IO, g_dir);
  CHECK_FAILS(ctr_rabbitct_open(NULL, &r), CTR_E_INVALID_ARGUMENT, "path");

  /* Cut inside view 3: both byte counts are named. */
  const long long cut = 24 + 3 * (long long)VIEW_BYTES + 10; /* 10534 */
  copy_prefix(P("noref.rct"), P("cut.rct"), cut, 0);
  CHECK_FAILS(ctr_rabbitct_open(P("cut.rct"), &r), CTR_E_SIZE_MISMATCH, "holds 10534 bytes");
  CHECK_FAILS(ctr_rabbitct_open(P("cut.rct"), &r), CTR_E_SIZE_MISMATCH, "at least 17524");
  copy_prefix(P("noref.rct"), P("tiny.rct"), 12, 0);
  CHECK_FAILS(ctr_rabbitct_open(P("tiny.rct"), &r), CTR_E_SIZE_MISMATCH, "holds 12 bytes");

  /* Complete views followed by bytes that are no reference list. */
  copy_prefix(P("noref.rct"), P("tail.rct"), views_end, 7);
  CHECK_FAILS(ctr_rabbitct_open(P("tail.rct"), &r), CTR_E_FORMAT, "7 bytes left");
  CHECK_FAILS(ctr_rabbitct_open(P("tail.rct"), &r), CTR_E_FORMAT, "tail.rct' (17531 bytes)");
  copy_prefix(P("rt.rct"), P("tail2.rct"), file_size(P("rt.rct")), 2);
  CHECK_FAILS(ctr_rabbitct_open(P("tail2.rct"), &r), CTR_E_FORMAT, "73730 bytes left");
  /* A reference list cut short is no list either. */
  copy_prefix(P("rt.rct"), P("refcut.rct"), file_size(P("rt.rct")) - 100, 0);
  CHECK_FAILS(ctr_rabbitct_open(P("refcut.rct"), &r), CTR_E_FORMAT, "reference volumes");

  /* Neither header plausible (width 0). */
  FILE *f = fopen(P("zero.rct"), "wb");
  for (int i = 0; i < 200; i++) fputc(0, f);
  fclose(f);
  CHECK_FAILS(ctr_rabbitct_open(P("zero.rct"), &r), CTR_E_FORMAT, "implausible");

  /* A NaN in the matrix of view 2 is reported when that view is read. */
  copy_prefix(P("noref.rct"), P("nan.rct"), views_end, 0);
  f = fopen(P("nan.rct"), "r+b");
  const double nan = NAN;
  fseek(f, 24 + 2 * (long)VIEW_BYTES + 5 * 8, SEEK_SET);
  fwrite(&nan, 8, 1, f);
  fclose(f);
  CHECK_OK(ctr_rabbitct_open(P("nan.rct"), &r));
  double m[12];
  CHECK_OK(ctr_rabbitct_read_view(r, 1, m, NULL));
  CHECK_FAILS(ctr_rabbitct_read_view(r, 2, m, NULL), CTR_E_FORMAT, "element 5 of view 2");
  ctr_rabbitct_close(r);
}

static void test_writer_errors(void) {
  ctr_rabbitct_header h = make_header(2, 16);
  ctr_rabbitct_writer *w = NULL;
  uint16_t dummy[1] = {0};

  /* Order: references only after all views, in the declared order. */
  CHECK_OK(ctr_rabbitct_create(P("order.rct"), &h, 0, &w));
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[0], g_img[0]));
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[1], g_img[1]));
  CHECK_FAILS(ctr_rabbitct_write_reference(w, 16, g_ref16), CTR_E_INVALID_ARGUMENT,
              "expected view 2 of 0..4");
  for (int v = 2; v < NV; v++) CHECK_OK(ctr_rabbitct_write_view(w, g_mat[v], g_img[v]));
  CHECK_FAILS(ctr_rabbitct_write_view(w, g_mat[0], g_img[0]), CTR_E_INVALID_ARGUMENT,
              "expected reference volume L = 16");
  CHECK_FAILS(ctr_rabbitct_write_reference(w, 32, g_ref32), CTR_E_INVALID_ARGUMENT,
              "expected L = 16 next (declared order: 16, 32)");
  CHECK_OK(ctr_rabbitct_write_reference(w, 16, g_ref16));
  CHECK_OK(ctr_rabbitct_write_reference(w, 32, g_ref32));
  CHECK_FAILS(ctr_rabbitct_write_reference(w, 64, dummy), CTR_E_INVALID_ARGUMENT,
              "all declared references (16, 32)");
  CHECK_OK(ctr_rabbitct_commit(w));
  /* Rejected calls wrote nothing. */
  CHECK(files_equal(P("order.rct"), P("rt.rct")));

  /* A missing reference at commit: no file, no temporary. */
  CHECK_OK(ctr_rabbitct_create(P("miss.rct"), &h, 0, &w));
  for (int v = 0; v < NV; v++) CHECK_OK(ctr_rabbitct_write_view(w, g_mat[v], g_img[v]));
  CHECK_OK(ctr_rabbitct_write_reference(w, 16, g_ref16));
  CHECK(count_temporaries() == 1);
  CHECK_FAILS(ctr_rabbitct_commit(w), CTR_E_INVALID_ARGUMENT, "reference volume L = 32");
  CHECK(!exists(P("miss.rct")) && count_temporaries() == 0);

  /* Missing views at commit. */
  CHECK_OK(ctr_rabbitct_create(P("missv.rct"), &h, 0, &w));
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[0], g_img[0]));
  CHECK_FAILS(ctr_rabbitct_commit(w), CTR_E_INVALID_ARGUMENT, "views 1..4 of 5");
  CHECK(!exists(P("missv.rct")) && count_temporaries() == 0);

  /* Abort. */
  CHECK_OK(ctr_rabbitct_create(P("abort.rct"), &h, 0, &w));
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[0], g_img[0]));
  ctr_rabbitct_abort(w);
  ctr_rabbitct_abort(NULL);
  CHECK(!exists(P("abort.rct")) && count_temporaries() == 0);

  /* Non-finite matrices are refused and the writer stays usable. */
  CHECK_OK(ctr_rabbitct_create(P("inf.rct"), &h, 0, &w));
  double bad[12];
  memcpy(bad, g_mat[0], sizeof bad);
  bad[11] = INFINITY;
  CHECK_FAILS(ctr_rabbitct_write_view(w, bad, g_img[0]), CTR_E_INVALID_ARGUMENT,
              "element 11 of view 0");
  CHECK_OK(ctr_rabbitct_write_view(w, g_mat[0], g_img[0]));
  ctr_rabbitct_abort(w);

  /* Bad declarations. */
  w = (ctr_rabbitct_writer *)&w;
  ctr_rabbitct_header b = h;
  b.ref_sizes[1] = 64;
  CHECK_FAILS(ctr_rabbitct_create(P("b.rct"), &b, 0, &w), CTR_E_INVALID_ARGUMENT, "[16, 64]");
  CHECK(w == NULL);
  b = make_header(1, 48);
  CHECK_FAILS(ctr_rabbitct_create(P("b.rct"), &b, 0, &w), CTR_E_INVALID_ARGUMENT, "[48]");
  b = make_header(0, 16);
  b.width = 0;
  CHECK_FAILS(ctr_rabbitct_create(P("b.rct"), &b, 0, &w), CTR_E_INVALID_ARGUMENT, "0 x 23 px");
  b = make_header(0, 16);
  b.hu1 = NAN;
  CHECK_FAILS(ctr_rabbitct_create(P("b.rct"), &b, 0, &w), CTR_E_INVALID_ARGUMENT, "finite hu");
  CHECK_FAILS(ctr_rabbitct_create(P("nodir/x.rct"), &h, 0, &w), CTR_E_IO, "nodir/x.rct");
  CHECK(!exists(P("b.rct")) && count_temporaries() == 0);
}

static void test_to_hu(void) {
  /* hu0 = 2, hu1 = 0.5: every product is exact. */
  const float f[] = {1.0f,  0.75f, 0.25f, 1.125f, 0.0f,    -1.0f,    NAN,
                     INFINITY, 2047.0f, 2046.75f, 2047.75f, 1e30f, -INFINITY};
  const uint16_t want[] = {3 /* 2.5 rounds away from zero */, 2, 1, 3 /* 2.75 */, 0, 0, 0,
                           4095, 4095 /* 4094.5 */, 4094, 4095 /* 4096 clipped */, 4095, 0};
  enum { N = sizeof f / sizeof f[0] };
  uint16_t out[N];
  ctr_rabbitct_to_hu(f, N, 2.0f, 0.5f, out);
  for (int i = 0; i < N; i++)
    CHECK_MSG(out[i] == want[i], "to_hu(%g) = %u, expected %u", (double)f[i], out[i], want[i]);

  /* hu1 = -0.5: 0.5 -> 1; 0 -> 0; negative -> 0. hu1 > 0 but f <= 0 -> 0. */
  const float g[] = {0.5f, 0.25f, 0.125f, 0.0f};
  const uint16_t want_g[] = {1, 0, 0, 0};
  uint16_t out_g[4];
  ctr_rabbitct_to_hu(g, 4, 2.0f, -0.5f, out_g);
  for (int i = 0; i < 4; i++)
    CHECK_MSG(out_g[i] == want_g[i], "to_hu(%g) = %u, expected %u", (double)g[i], out_g[i],
              want_g[i]);
  const float z[] = {0.0f, -0.0f, -3.0f};
  uint16_t out_z[3] = {9, 9, 9};
  ctr_rabbitct_to_hu(z, 3, 1.0f, 100.0f, out_z);
  CHECK(out_z[0] == 0 && out_z[1] == 0 && out_z[2] == 0);
  /* The RabbitCT scales of this test: 1000 f - 1000. */
  const float s[] = {1.0f, 1.5f, 5.0955f, 0.5f};
  uint16_t out_s[4];
  ctr_rabbitct_to_hu(s, 4, HU0, HU1, out_s);
  CHECK(out_s[0] == 0 && out_s[1] == 500 && out_s[2] == 4095 && out_s[3] == 0);
}

static void test_score(void) {
  enum { L = 4, N = L * L * L };
  float f[N];
  uint16_t ref[N];
  ctr_rabbitct_score sc;
  /* Identical: hu0 = 1, hu1 = 0 maps f to itself. */
  for (int i = 0; i < N; i++) {
    ref[i] = (uint16_t)(i * 61 % 4096);
    f[i] = (float)ref[i];
  }
  CHECK_OK(ctr_rabbitct_score_volume(f, ref, L, 1.0f, 0.0f, &sc));
  CHECK(sc.mse == 0.0 && sc.rmse == 0.0 && sc.max_error == 0.0 && isinf(sc.psnr) && sc.psnr > 0);

  /* Errors +3, -10 and -100 (f < 0 counts as 0 HU): sse = 9 + 100 + 10000 = 10109. */
  for (int i = 0; i < N; i++) {
    ref[i] = 100;
    f[i] = 100.0f;
  }
  f[5] = 103.0f;
  f[17] = 90.0f;
  f[63] = -5.0f;
  CHECK_OK(ctr_rabbitct_score_volume(f, ref, L, 1.0f, 0.0f, &sc));
  CHECK_NEAR(sc.mse, 157.953125, 1e-12);      /* 10109 / 64 */
  CHECK_NEAR(sc.rmse, 12.567940364276081, 1e-12);
  CHECK_NEAR(sc.max_error, 100.0, 0.0);
  CHECK_NEAR(sc.psnr, 50.25979589632425, 1e-10); /* 10 log10(4095^2 / 157.953125) */

  /* A larger volume against a plain serial loop (exercises the threads). */
  enum { LB = 48 };
  const size_t nb = (size_t)LB * LB * LB;
  float *fb = malloc(nb * sizeof *fb);
  uint16_t *rb = malloc(nb * sizeof *rb);
  double sse = 0.0, worst = 0.0;
  for (size_t i = 0; i < nb; i++) {
    rb[i] = (uint16_t)th_uniform(0, 4096);
    fb[i] = (float)th_uniform(-0.5, 5.0);
    const double v = fb[i] > 0 ? round(1000.0 * fb[i] - 1000.0) : 0.0;
    const double hu = v < 0 ? 0 : v > 4095 ? 4095 : v;
    const double e = hu - rb[i];
    sse += e * e;
    worst = fmax(worst, fabs(e));
  }
  CHECK_OK(ctr_rabbitct_score_volume(fb, rb, LB, HU0, HU1, &sc));
  CHECK_NEAR(sc.mse, sse / (double)nb, 1e-9 * sse / (double)nb);
  CHECK_NEAR(sc.max_error, worst, 0.0);
  free(fb);
  free(rb);

  CHECK_FAILS(ctr_rabbitct_score_volume(f, ref, 0, 1.0f, 0.0f, &sc), CTR_E_INVALID_ARGUMENT,
              "L = 0");
  CHECK_FAILS(ctr_rabbitct_score_volume(NULL, ref, L, 1.0f, 0.0f, &sc), CTR_E_INVALID_ARGUMENT,
              "NULL");
}

int main(void) {
  if (!scratch_open("ctr_test_rabbitct")) return 1;
  make_data();
  test_round_trip();
  test_version_and_128();
  test_old_header();
  test_large_offsets();
  test_bad_files();
  test_writer_errors();
  test_to_hu();
  test_score();
  CHECK(count_temporaries() == 0);
  scratch_close();
  return th_finish("test_rabbitct_io");
}

/* Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
 * with the library's own writers: small valid files and near misses.
 * Regression seeds (inputs that once failed) are committed by hand beside
 * them and are never rewritten here.
 *   make_corpus DIR      (DIR = tests/fuzz/corpus) */
#define _GNU_SOURCE
#include <ctrecon.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parbeam/fbp_tune.h"
#include "stream/journal.h"
#include "fuzz_checkpoint.h"

#define SPLIT "\n#CTRFUZZ#\n" /* fuzz_util.h's FZ_SPLIT */

static const char *root;
/* The library's writers make this program's scratch files (tmp.*), which a
 * run that stopped half-way may leave: they are replaced (overwrite 1). */

static void die(const char *what) {
  fprintf(stderr, "make_corpus: %s: %s\n", what, ctr_error_detail());
  exit(1);
}

static void check(ctr_status st, const char *what) {
  if (st != CTR_OK) die(what);
}

static char *path_in(const char *target, const char *name) {
  static char buf[4][4096];
  static int k;
  char *b = buf[k++ & 3];
  snprintf(b, sizeof buf[0], "%s/%s", root, target);
  mkdir(b, 0777);
  snprintf(b, sizeof buf[0], "%s/%s/%s", root, target, name);
  return b;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "make_corpus: cannot read %s: %s\n", path, strerror(errno));
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  rewind(f);
  char *b = malloc((size_t)len + 1);
  if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) exit(1);
  fclose(f);
  b[len] = 0;
  *n = (size_t)len;
  return b;
}

/* Writes the concatenation of parts (text or bytes) as one seed. */
static void put(const char *target, const char *name, int nparts, const void *const *parts,
                const size_t *sizes) {
  FILE *f = fopen(path_in(target, name), "wb");
  if (!f) exit(1);
  for (int i = 0; i < nparts; i++) fwrite(parts[i], 1, sizes[i], f);
  fclose(f);
}

static void put_text(const char *target, const char *name, const char *text) {
  const void *p[1] = {text};
  const size_t n[1] = {strlen(text)};
  put(target, name, 1, p, n);
}

/* A seed holding a file's bytes, then the bytes truncated (a near miss). */
static void put_file(const char *target, const char *name, const char *file_in) {
  char file[4096]; /* file_in may be one of path_in's rotating buffers */
  snprintf(file, sizeof file, "%s", file_in);
  size_t n;
  char *b = slurp(file, &n);
  const void *p[1] = {b};
  size_t s[1] = {n};
  put(target, name, 1, p, s);
  char cut[256];
  snprintf(cut, sizeof cut, "%s-truncated", name);
  s[0] = n * 2 / 3;
  put(target, cut, 1, p, s);
  free(b);
  unlink(file);
}

/* The seed `name`: g as JSON (g is freed). */
static void put_geometry(const char *name, ctr_geometry *g) {
  char *t;
  check(ctr_geometry_to_json_string(g, &t), "geometry JSON");
  put_text("geometry_json", name, t);
  free(t);
  ctr_geometry_free(g);
}

static void geometry(void) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 500;
  p.sdd = 800;
  p.nu = 32;
  p.nv = 24;
  p.du = p.dv = 2;
  p.nviews = 12;
  const ctr_volume_geometry vol = {16, 16, 12, 1, 1, 1, 0, 0, 0};
  ctr_geometry *g;
  check(ctr_geometry_create_circular(&p, &vol, &g), "circular geometry");
  put_geometry("circular.json", g);
  p.angle_range_deg = 220;
  p.direction = CTR_ROTATION_CW;
  p.offset_u = 3;
  check(ctr_geometry_create_circular(&p, &vol, &g), "short scan");
  /* its first views as matrices */
  double m[3 * 12];
  for (int i = 0; i < 3; i++) ctr_geometry_get_matrix(g, i, m + 12 * i);
  put_geometry("short-cw.json", g);
  check(ctr_geometry_create_matrices(32, 24, 2, 2, 3, m, &vol, &g), "matrix geometry");
  put_geometry("matrices.json", g);
  const double angles[5] = {0, 10, 25, 90, 359};
  p.angles_deg = angles;
  p.nviews = 5;
  check(ctr_geometry_create_circular(&p, &vol, &g), "angle list");
  put_geometry("angle-list.json", g);
  put_text("geometry_json", "near-miss-no-volume.json",
           "{\"type\": \"circular\", \"sid\": 500, \"sdd\": 800, \"detector\": {\"nu\": 8, "
           "\"nv\": 8, \"du\": 1, \"dv\": 1}, \"angles\": {\"count\": 4}}");
  put_text("geometry_json", "near-miss-source-inside.json",
           "{\"type\": \"circular\", \"sid\": 5, \"sdd\": 800, \"detector\": {\"nu\": 8, "
           "\"nv\": 8, \"du\": 1, \"dv\": 1}, \"angles\": {\"count\": 4}, \"volume\": {\"size\": "
           "16, \"voxel_mm\": 1}}");
}

static void phantom(void) {
  put_text("phantom_json", "ellipsoids.json",
           "{\"comment\": \"two spheres\", \"ellipsoids\": [\n"
           " {\"density\": 0.02, \"center_mm\": [0, 0, 0], \"semi_axes_mm\": [80, 80, 120]},\n"
           " {\"density\": -0.005, \"center_mm\": [-25, 10, 0], \"semi_axes_mm\": [15, 8, 20],\n"
           "  \"euler_deg\": [30, 0, 0], \"name\": \"insert\"}]}\n");
  put_text("phantom_json", "shepp-logan.json",
           "{\"shepp_logan\": {\"radius_mm\": 100, \"scale\": 0.02}}\n");
  put_text("phantom_json", "near-miss-axes.json",
           "{\"ellipsoids\": [{\"density\": 1, \"center_mm\": [0, 0, 0], "
           "\"semi_axes_mm\": [1, 0, 1]}]}\n");
}

static void stacks(void) {
  const char *tmp = path_in("tiff", "tmp.tif");
  float img[4 * 3 * 2];
  uint16_t u16[4 * 3 * 2];
  for (int i = 0; i < 24; i++) img[i] = (float)i * 0.5f, u16[i] = (uint16_t)(i * 100);
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, 4, 3, 2, CTR_DTYPE_FLOAT32, {1, 1, 1}, {0, 0, 0}};
  check(ctr_stack_save(tmp, CTR_FORMAT_TIFF, &info, CTR_DTYPE_FLOAT32, img, 1), "tiff");
  put_file("tiff", "float32-2pages.tif", tmp);
  info.dtype = CTR_DTYPE_UINT16;
  check(ctr_stack_save(tmp, CTR_FORMAT_TIFF, &info, CTR_DTYPE_UINT16, u16, 1), "tiff");
  put_file("tiff", "uint16-2pages.tif", tmp);

  /* TIFF stack: two single-page files joined by the split marker */
  const char *pat = path_in("tiff_stack", "tmp_%02d.tif");
  info.dtype = CTR_DTYPE_FLOAT32;
  check(ctr_stack_save(pat, CTR_FORMAT_TIFF_STACK, &info, CTR_DTYPE_FLOAT32, img, 1), "tiff stack");
  size_t n0, n1;
  char *a = slurp(path_in("tiff_stack", "tmp_00.tif"), &n0);
  char *b = slurp(path_in("tiff_stack", "tmp_01.tif"), &n1);
  unlink(path_in("tiff_stack", "tmp_00.tif"));
  unlink(path_in("tiff_stack", "tmp_01.tif"));
  const void *parts[3] = {a, SPLIT, b};
  size_t sizes[3] = {n0, strlen(SPLIT), n1};
  put("tiff_stack", "two-files", 3, parts, sizes);
  put("tiff_stack", "one-file", 1, parts, sizes);
  sizes[2] = n1 / 2;
  put("tiff_stack", "second-truncated", 3, parts, sizes);
  free(a);
  free(b);

  /* NRRD, attached and detached (header + split + data) */
  tmp = path_in("nrrd", "tmp.nrrd");
  check(ctr_stack_save(tmp, CTR_FORMAT_NRRD, &info, CTR_DTYPE_FLOAT32, img, 1), "nrrd");
  put_file("nrrd", "float32.nrrd", tmp);
  info.dtype = CTR_DTYPE_UINT16;
  check(ctr_stack_save(tmp, CTR_FORMAT_NRRD, &info, CTR_DTYPE_UINT16, u16, 1), "nrrd");
  put_file("nrrd", "uint16.nrrd", tmp);
  {
    static const char hdr[] =
        "NRRD0004\ntype: float\ndimension: 3\nsizes: 4 3 2\nspacings: 1 1 1\n"
        "encoding: raw\nendian: little\ndata file: data.raw\n\n";
    const void *p[3] = {hdr, SPLIT, img};
    const size_t s[3] = {sizeof hdr - 1, strlen(SPLIT), sizeof img};
    put("nrrd", "detached", 3, p, s);
  }

  /* raw: the 33-byte description fuzz_raw.c reads, then the data */
  {
    unsigned char d[33] = {0};
    const int64_t v[3] = {4, 3, 2};
    for (int k = 0; k < 3; k++)
      for (int b2 = 0; b2 < 8; b2++) d[8 * k + b2] = (unsigned char)(v[k] >> (8 * b2));
    d[24] = CTR_DTYPE_FLOAT32;
    const void *p[2] = {d, img};
    size_t s[2] = {sizeof d, sizeof img};
    put("raw", "float32-4x3x2", 2, p, s);
    d[24] = CTR_DTYPE_UINT16;
    d[25] = 8; /* offset 8 */
    s[1] = sizeof u16;
    p[1] = u16;
    put("raw", "uint16-offset8", 2, p, s);
    s[1] = 10;
    put("raw", "uint16-short", 2, p, s);
  }

#if CTR_FUZZ_HDF5
  tmp = path_in("hdf5", "tmp.h5");
  char spec[4200];
  snprintf(spec, sizeof spec, "%s:/exchange/data", tmp);
  check(ctr_stack_save(spec, CTR_FORMAT_HDF5, &info, CTR_DTYPE_UINT16, u16, 1), "hdf5");
  put_file("hdf5", "uint16.h5", tmp);
  info.dtype = CTR_DTYPE_FLOAT32;
  check(ctr_stack_save(spec, CTR_FORMAT_HDF5, &info, CTR_DTYPE_FLOAT32, img, 1), "hdf5");
  put_file("hdf5", "float32.h5", tmp);
#endif
}

static void pet(void) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = p.ny = 8;
  p.nz = 4;
  p.n_azimuth = 2;
  p.n_copolar = 1;
  ctr_pet_histo *h;
  check(ctr_pet_histo_create(&p, 1, &h), "histo");
  const size_t n = 8 * 8 * 4 * 2;
  for (size_t i = 0; i < n; i++) h->counts[i] = (float)(i % 7), h->factors[i] = 1.0f;
  h->tof_fwhm_ps = 400;
  h->events = 1000;
#if CTR_FUZZ_HDF5
  const char *tmp = path_in("pet_hdf5", "tmp.h5");
  check(ctr_pet_histo_save(tmp, h, 1), "histo hdf5");
  put_file("pet_hdf5", "histo.h5", tmp);
#endif
  /* JSON: the description names c.raw and f.raw (fuzz_pet_histo_json.c) */
  const char *json = path_in("pet_histo_json", "tmp.json");
  check(ctr_pet_histo_save(json, h, 1), "histo json");
  size_t nj;
  char *text = slurp(json, &nj);
  unlink(json);
  unlink(path_in("pet_histo_json", "tmp.counts.raw"));
  unlink(path_in("pet_histo_json", "tmp.factors.raw"));
  char *c = strstr(text, "tmp.counts.raw"), *f = strstr(text, "tmp.factors.raw");
  if (!c || !f) {
    fprintf(stderr, "make_corpus: unexpected histo JSON:\n%s\n", text);
    exit(1);
  }
  /* rename the files in place: "tmp.counts.raw" -> "c.raw", padded out */
  char out[8192];
  snprintf(out, sizeof out, "%.*sc.raw%.*sf.raw%s", (int)(c - text), text,
           (int)(f - (c + strlen("tmp.counts.raw"))), c + strlen("tmp.counts.raw"),
           f + strlen("tmp.factors.raw"));
  const void *parts[5] = {out, SPLIT, h->counts, SPLIT, h->factors};
  size_t sizes[5] = {strlen(out), strlen(SPLIT), n * 4, strlen(SPLIT), n * 4};
  put("pet_histo_json", "with-factors", 5, parts, sizes);
  sizes[2] = n * 4 - 4;
  put("pet_histo_json", "counts-short", 3, parts, sizes);
  free(text);
  ctr_pet_histo_free(h);
}

static void rabbitct(void) {
  ctr_rabbitct_header h;
  memset(&h, 0, sizeof h);
  h.version = 103;
  h.width = 4;
  h.height = 3;
  h.nviews = 2;
  h.hu0 = 1000;
  h.hu1 = -1000;
  h.nref = 1;
  h.ref_sizes[0] = 16;
  const char *tmp = path_in("rabbitct", "tmp.rctd");
  ctr_rabbitct_writer *w;
  check(ctr_rabbitct_create(tmp, &h, 1, &w), "rabbitct");
  double m[12] = {1, 0, 0.001, 0, 1, 0.001, 0, 0, 0.001, 2, 2, 1};
  float img[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  check(ctr_rabbitct_write_view(w, m, img), "rabbitct view");
  check(ctr_rabbitct_write_view(w, m, img), "rabbitct view");
  static uint16_t ref[16 * 16 * 16];
  check(ctr_rabbitct_write_reference(w, 16, ref), "rabbitct reference");
  check(ctr_rabbitct_commit(w), "rabbitct commit");
  put_file("rabbitct", "v103-4x3x2-ref16.rctd", tmp);
  h.version = 0;
  h.nref = 0;
  check(ctr_rabbitct_create(tmp, &h, 1, &w), "rabbitct");
  check(ctr_rabbitct_write_view(w, m, img), "rabbitct view");
  check(ctr_rabbitct_write_view(w, m, img), "rabbitct view");
  check(ctr_rabbitct_commit(w), "rabbitct commit");
  put_file("rabbitct", "old-4x3x2.rctd", tmp);
}

static void fbp_tune(void) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fbp_tune", root);
  mkdir(dir, 0777);
  ctr__fbp_tune_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "NVIDIA H100 80GB HBM3"); /* fuzz_fbp_tune.c's key */
  k.nbins = 2048;
  k.nangles = 1500;
  k.nx = k.ny = 2048;
  k.interp = 1;
  check(ctr__fbp_tune_store(dir, &k, "hybrid", 40.5), "fbp cache");
  k.multi = 1;
  check(ctr__fbp_tune_store(dir, &k, "alu", 12.5), "fbp cache");
  char *from = path_in("fbp_tune", "fbp-kernels.json");
  if (rename(from, path_in("fbp_tune", "two-entries.json")) != 0) exit(1);
  put_text("fbp_tune", "stale-version.json", "{\"version\": 0, \"entries\": []}");
}

static void journal(void) {
  const char *path = path_in("journal", "three-slabs");
  const ctr__journal_layout plan = {8, 16, (int)CTR_FDK_STORE_HOST, 0, 3, 0, 1};
  ctr__journal j;
  check(ctr__journal_create(&j, path, 0x0123456789abcdefull, &plan), "journal"); /* FZ_FINGERPRINT */
  const ctr__slab_record r0 = {0x9ae0daafu, -0.5f, 1.5f, 0, 0}, r2 = {0x2144df1cu, -0.5f, 2.0f, 3, 7};
  check(ctr__journal_mark(&j, 0, 0, 8, &r0), "journal mark");
  check(ctr__journal_mark(&j, 2, 16, 8, &r2), "journal mark");
  ctr__journal_close(&j, 0);
  put_text("journal", "other-run",
           "ctrecon-journal 2\nfingerprint 00000000000000aa\nplan 8 16 2 0 3\n");
  /* a projection split on 3 workers (the plan line's split and workers) */
  put_text("journal", "projection-split",
           "ctrecon-journal 2\nfingerprint 0123456789abcdef\nplan 8 16 2 0 3 2 3\n"
           "slab 1 8 8 crc32 2144df1c range -0x1p-1 0x1p+1 clamped 0 0 done\n");
  /* the format before per-subvolume checksums: refused */
  put_text("journal", "format-1",
           "ctrecon-journal 1\nfingerprint 0123456789abcdef\nplan 8 16 2 0 3\nslab 0 0 8 done\n");
}

/* Checkpoints of the problem of fuzz_checkpoint.h: 3 iterations with their
 * history; 2 without one; another run's (sirt); the layout before the
 * history (CTRITER1, built from a history-less one: magic, no count, CRC).
 * (format-3 beside them, CTRITER3 before PWLS's fingerprint fields, is the
 * cgls-3-iterations an older make_corpus wrote, kept.) */
static void it_checkpoint(void) {
  ctr__it_state s;
  ctr__vec v[FZ_CK_NVEC];
  ctr_projector *p = fz_ck_projector(&s, v);
  if (!p) die("checkpoint projector");
  for (int i = 0; i < FZ_CK_NVEC; i++)
    for (int64_t k = 0; k < v[i].n; k++) v[i].data[k] = 0.125f * (float)(k + 7 * i);
  s.scalars[0] = 2.5, s.scalars[1] = 40.0;
  double hist[3 * CTR__IT_HIST] = {30, 0.75, -1, 0.01, 20, 0.5, -1, 0.02, 12, 0.3, -1, 0.03};
  s.hist = hist, s.nhist = s.hist_cap = 3, s.iteration = 3;
  ctr__it_fingerprint fp = fz_ck_fingerprint();
  check(ctr__it_checkpoint_write(p, path_in("it_checkpoint", "cgls-3-iterations"), &fp, &s), "checkpoint");
  s.nhist = 0, s.iteration = 2;
  const char *bare = path_in("it_checkpoint", "no-history");
  check(ctr__it_checkpoint_write(p, bare, &fp, &s), "checkpoint");
  size_t n = 0;
  char *b = slurp(bare, &n);
  memcpy(b, "CTRITER1", 8); /* drop the history's count (8 zero bytes before the CRC) */
  memmove(b + n - 12, b + n - 4, 4);
  const uint32_t crc = ctr__crc32(0, b, n - 12);
  memcpy(b + n - 12, &crc, 4);
  const void *parts[] = {b};
  const size_t sizes[] = {n - 8};
  put("it_checkpoint", "format-1", 1, parts, sizes);
  free(b);
  fp.algorithm = CTR_ITERATE_SIRT;
  check(ctr__it_checkpoint_write(p, path_in("it_checkpoint", "other-run"), &fp, &s), "checkpoint");
  for (int i = 0; i < FZ_CK_NVEC; i++) ctr__vec_free(p, &v[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_corpus DIR\n");
    return 2;
  }
  root = argv[1];
  mkdir(root, 0777);
  geometry();
  phantom();
  stacks();
  pet();
  rabbitct();
  fbp_tune();
  journal();
  it_checkpoint();
  return 0;
}

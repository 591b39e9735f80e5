/* Histo-image files: JSON + raw and HDF5 round trips, atomic output, and
 * clear errors for malformed files (truncated data, inconsistent view
 * counts, missing or misspelt fields, bad counts loaded as 0 and counted,
 * HDF5 dims that contradict the attributes). */
#include "harness.h"
#include "scratch_dir.h"

#include <cjson/cJSON.h>
#include <unistd.h>
#if CTR_HAVE_HDF5
#include <hdf5.h>
#endif

static ctr_pet_params small_params(void) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = 6;
  p.ny = 5;
  p.nz = 4;
  p.voxel = 2.5;
  p.n_azimuth = 3;
  p.n_copolar = 2;
  p.acceptance_deg = 8.0;
  return p;
}

static int64_t nvalues(const ctr_pet_histo *h) {
  return h->nviews * h->params.nx * h->params.ny * h->params.nz;
}

static ctr_pet_histo *make_histo(int with_factors) {
  const ctr_pet_params p = small_params();
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_histo_create(&p, with_factors, &h));
  if (!h) return NULL;
  h->tof_fwhm_ps = 400.0;
  h->events = 1234.0;
  for (int64_t i = 0; i < nvalues(h); i++) {
    h->counts[i] = (float)(i % 7) * 0.5f;
    if (h->factors) h->factors[i] = 1.0f / (float)(i + 1);
  }
  return h;
}

/* Same parameters, metadata and values. */
static int same_histo(const ctr_pet_histo *a, const ctr_pet_histo *b) {
  const ctr_pet_params *p = &a->params, *q = &b->params;
  if (p->nx != q->nx || p->ny != q->ny || p->nz != q->nz || p->voxel != q->voxel ||
      p->n_azimuth != q->n_azimuth || p->n_copolar != q->n_copolar ||
      p->acceptance_deg != q->acceptance_deg || a->nviews != b->nviews ||
      a->tof_fwhm_ps != b->tof_fwhm_ps || a->events != b->events)
    return 0;
  if (!a->factors != !b->factors) return 0;
  const size_t bytes = (size_t)nvalues(a) * sizeof(float);
  if (memcmp(a->counts, b->counts, bytes)) return 0;
  return !a->factors || !memcmp(a->factors, b->factors, bytes);
}

/* The detail names `file` and says what was expected. */
#define CHECK_DETAIL(file, needle)                                                  \
  do {                                                                              \
    CHECK_MSG(strstr(ctr_error_detail(), (file)) != NULL, "detail '%s' lacks '%s'", \
              ctr_error_detail(), (file));                                          \
    CHECK_MSG(strstr(ctr_error_detail(), (needle)) != NULL,                         \
              "detail '%s' lacks '%s'", ctr_error_detail(), (needle));              \
  } while (0)

static cJSON *read_json(const char *path) {
  long long n;
  unsigned char *text = read_all(path, &n);
  if (!text) return NULL; /* NUL-terminated */
  cJSON *root = cJSON_Parse((const char *)text);
  free(text);
  return root;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void write_json(const char *path, cJSON *root) {
  char *text = cJSON_Print(root);
  write_text(path, text);
  free(text);
}

static void test_json_roundtrip(void) {
  ctr_pet_histo *h = make_histo(1), *g = NULL;
  if (!h) return;
  CHECK_OK(ctr_pet_histo_save(P("a.json"), h, 0));
  CHECK(exists(P("a.json")));
  CHECK(file_size(P("a.counts.raw")) == nvalues(h) * 4);
  CHECK(file_size(P("a.factors.raw")) == nvalues(h) * 4);
  CHECK(count_temporaries() == 0);
  CHECK_OK(ctr_pet_histo_load(P("a.json"), &g));
  CHECK(g && same_histo(h, g));
  ctr_pet_histo_free(g);
  g = NULL;

  /* Without factors; the description names no factors file. */
  free(h->factors);
  h->factors = NULL;
  CHECK_OK(ctr_pet_histo_save(P("b.json"), h, 0));
  CHECK(!exists(P("b.factors.raw")));
  CHECK_OK(ctr_pet_histo_load(P("b.json"), &g));
  CHECK(g && g->factors == NULL && same_histo(h, g));
  ctr_pet_histo_free(g);
  g = NULL;

  /* A path without .json gets the raw files beside it under its full name;
   * an existing set is refused (any of its files), kept as it was, unless
   * overwrite. */
  CHECK_OK(ctr_pet_histo_save(P("c.desc"), h, 0));
  CHECK(exists(P("c.desc.counts.raw")));
  h->counts[3] = 42.0f;
  CHECK_FAILS(ctr_pet_histo_save(P("c.desc"), h, 0), CTR_E_INVALID_ARGUMENT, "c.desc.counts.raw");
  CHECK(!strcmp(ctr_error_get_field(), "overwrite"));
  CHECK_OK(ctr_pet_histo_load(P("c.desc"), &g));
  CHECK(g && g->counts[3] != 42.0f && count_temporaries() == 0);
  ctr_pet_histo_free(g);
  g = NULL;
  CHECK_OK(ctr_pet_histo_save(P("c.desc"), h, 1));
  CHECK_OK(ctr_pet_histo_load(P("c.desc"), &g));
  CHECK(g && g->counts[3] == 42.0f && same_histo(h, g));
  ctr_pet_histo_free(g);
  CHECK(count_temporaries() == 0);
  ctr_pet_histo_free(h);
}

static void test_json_errors(void) {
  ctr_pet_histo *h = make_histo(1), *g = NULL;
  if (!h) return;
  const int64_t n = nvalues(h);
  char want[64];
  snprintf(want, sizeof want, "expected %lld", (long long)(n * 4));

  /* Truncated counts: the size found and the size expected. */
  CHECK_OK(ctr_pet_histo_save(P("t.json"), h, 0));
  CHECK(truncate(P("t.counts.raw"), (off_t)(n * 4 - 4)) == 0);
  CHECK_FAILS(ctr_pet_histo_load(P("t.json"), &g), CTR_E_SIZE_MISMATCH, "truncated");
  CHECK_DETAIL(P("t.counts.raw"), want);
  CHECK(g == NULL);
  /* Truncated factors. */
  CHECK_OK(ctr_pet_histo_save(P("t.json"), h, 1));
  CHECK(truncate(P("t.factors.raw"), 100) == 0);
  CHECK_FAILS(ctr_pet_histo_load(P("t.json"), &g), CTR_E_SIZE_MISMATCH, "has 100 bytes");
  CHECK_DETAIL(P("t.factors.raw"), want);
  /* Missing raw file. */
  CHECK_OK(ctr_pet_histo_save(P("m.json"), h, 0));
  CHECK(unlink(P("m.counts.raw")) == 0);
  CHECK_FAILS(ctr_pet_histo_load(P("m.json"), &g), CTR_E_IO, "m.counts.raw");
  CHECK_DETAIL(P("m.json"), "counts");

  /* Edited descriptions. */
  CHECK_OK(ctr_pet_histo_save(P("e.json"), h, 0));
  cJSON *root = read_json(P("e.json"));
  CHECK(root != NULL);
  if (root) {
    cJSON *views = cJSON_GetObjectItem(root, "views");
    /* nviews != n_azimuth x n_copolar */
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "nviews"), 7);
    write_json(P("e1.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e1.json"), &g), CTR_E_FORMAT, "nviews is 7");
    CHECK_DETAIL(P("e1.json"), "expected n_azimuth x n_copolar = 3 x 2 = 6");
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "nviews"), 6);
    /* n_copolar changed with nviews: the raw size no longer fits. */
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "n_copolar"), 1);
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "nviews"), 3);
    cJSON_DeleteItemFromObject(root, "shape");
    write_json(P("e.json"), root); /* raw files of e.json */
    CHECK_FAILS(ctr_pet_histo_load(P("e.json"), &g), CTR_E_SIZE_MISMATCH, "too long");
    CHECK_DETAIL(P("e.counts.raw"), "expected 1440 (3 views x 4 x 5 x 6 float32)");
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "n_copolar"), 2);
    cJSON_SetNumberValue(cJSON_GetObjectItem(views, "nviews"), 6);
    /* A missing lattice field. */
    cJSON *lat = cJSON_GetObjectItem(root, "lattice");
    cJSON *voxel = cJSON_DetachItemFromObject(lat, "voxel_mm");
    write_json(P("e2.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e2.json"), &g), CTR_E_FORMAT, "lattice.voxel_mm");
    CHECK_DETAIL(P("e2.json"), "missing");
    cJSON_AddItemToObject(lat, "voxel_mm", voxel);
    /* Strict members: a misspelt field is an error naming the nearest one. */
    cJSON_AddNumberToObject(lat, "voxle_mm", 4);
    write_json(P("e8.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e8.json"), &g), CTR_E_FORMAT,
                "lattice.voxle_mm: unknown field; did you mean 'voxel_mm'?");
    cJSON_DeleteItemFromObject(lat, "voxle_mm");
    cJSON_AddNumberToObject(root, "tof_fwhm", 400);
    write_json(P("e9.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e9.json"), &g), CTR_E_FORMAT,
                "tof_fwhm: unknown field; did you mean 'tof_fwhm_ps'?");
    cJSON_DeleteItemFromObject(root, "tof_fwhm");
    /* A missing view field. */
    cJSON *na = cJSON_DetachItemFromObject(views, "n_azimuth");
    write_json(P("e3.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e3.json"), &g), CTR_E_FORMAT, "views.n_azimuth");
    CHECK_DETAIL(P("e3.json"), "missing");
    cJSON_AddItemToObject(views, "n_azimuth", na);
    /* Wrong types and values. */
    cJSON_ReplaceItemInObject(root, "dtype", cJSON_CreateString("uint16"));
    write_json(P("e4.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e4.json"), &g), CTR_E_FORMAT, "expected \"float32\"");
    CHECK_DETAIL(P("e4.json"), "dtype");
    cJSON_ReplaceItemInObject(root, "dtype", cJSON_CreateString("float32"));
    cJSON_ReplaceItemInObject(lat, "size", cJSON_CreateString("6x5x4"));
    write_json(P("e5.json"), root);
    CHECK_FAILS(ctr_pet_histo_load(P("e5.json"), &g), CTR_E_FORMAT, "lattice.size");
    CHECK_DETAIL(P("e5.json"), "[nx, ny, nz]");
    cJSON_Delete(root);
  }
  write_text(P("e6.json"), "{ \"format\": \"ctrecon-pet-histo\", ");
  CHECK_FAILS(ctr_pet_histo_load(P("e6.json"), &g), CTR_E_FORMAT, "not valid JSON");
  CHECK_DETAIL(P("e6.json"), "expected");
  write_text(P("e7.json"), "{ \"format\": \"something-else\" }");
  CHECK_FAILS(ctr_pet_histo_load(P("e7.json"), &g), CTR_E_FORMAT, "ctrecon-pet-histo");
  CHECK_DETAIL(P("e7.json"), "something-else");
  CHECK_FAILS(ctr_pet_histo_load(P("none.json"), &g), CTR_E_IO, "none.json");

  /* The data policy: NaN, infinite, negative and beyond-1e24 counts load as
   * 0 and are counted in `replaced` (the caller reports them or, strict,
   * refuses them: test_values.c). */
  CHECK_OK(ctr_pet_histo_save(P("n.json"), h, 1));
  const int64_t nvox = 6 * 5 * 4, at = 4 * nvox + (2 * 5 + 3) * 6 + 1; /* view 4, (1, 3, 2) */
  const float bad[4] = {NAN, INFINITY, -1.0f, 1e30f};
  for (int i = 0; i < 4; i++) {
    FILE *f = fopen(P("n.counts.raw"), "r+b");
    CHECK(f && fseek(f, (long)(at * 4), SEEK_SET) == 0 && fwrite(&bad[i], 4, 1, f) == 1);
    if (f) fclose(f);
    g = NULL;
    CHECK_OK(ctr_pet_histo_load(P("n.json"), &g));
    CHECK_MSG(g && g->replaced == 1 && g->counts[at] == 0.0f, "bad count %g: replaced %lld", bad[i],
              g ? (long long)g->replaced : -1LL);
    ctr_pet_histo_free(g);
  }
  /* A NaN factor too. */
  CHECK_OK(ctr_pet_histo_save(P("n.json"), h, 1));
  FILE *f = fopen(P("n.factors.raw"), "r+b");
  CHECK(f && fwrite(&bad[0], 4, 1, f) == 1);
  if (f) fclose(f);
  g = NULL;
  CHECK_OK(ctr_pet_histo_load(P("n.json"), &g));
  CHECK(g && g->replaced == 1 && g->factors[0] == 0.0f);
  ctr_pet_histo_free(g);
  /* Clean data: nothing replaced. */
  CHECK_OK(ctr_pet_histo_save(P("n.json"), h, 1));
  g = NULL;
  CHECK_OK(ctr_pet_histo_load(P("n.json"), &g));
  CHECK(g && g->replaced == 0);
  ctr_pet_histo_free(g);
  g = NULL;

  /* Saving refuses what loading would refuse, and leaves nothing behind. */
  h->counts[5] = NAN;
  CHECK_FAILS(ctr_pet_histo_save(P("s.json"), h, 0), CTR_E_INVALID_ARGUMENT, "counts of view 0");
  h->counts[5] = 0;
  h->nviews = 5;
  CHECK_FAILS(ctr_pet_histo_save(P("s.json"), h, 0), CTR_E_INVALID_ARGUMENT, "nviews is 5");
  h->nviews = 6;
  CHECK(!exists(P("s.json")) && !exists(P("s.counts.raw")));
  /* A directory that does not exist. */
  CHECK_FAILS(ctr_pet_histo_save(P("nodir/x.json"), h, 0), CTR_E_IO, "nodir/x");
  CHECK(count_temporaries() == 0);
  ctr_pet_histo_free(h);
}

static void test_create_errors(void) {
  ctr_pet_params p = small_params();
  ctr_pet_histo *h = NULL;
  p.n_azimuth = 0;
  CHECK_FAILS(ctr_pet_histo_create(&p, 0, &h), CTR_E_INVALID_ARGUMENT, "n_azimuth is 0");
  p = small_params();
  p.voxel = -1;
  CHECK_FAILS(ctr_pet_histo_create(&p, 0, &h), CTR_E_INVALID_ARGUMENT, "voxel");
  p = small_params();
  p.acceptance_deg = 95;
  CHECK_FAILS(ctr_pet_histo_create(&p, 0, &h), CTR_E_INVALID_ARGUMENT, "acceptance_deg");
  CHECK(h == NULL);
  p = small_params();
  CHECK_OK(ctr_pet_histo_create(&p, 1, &h));
  CHECK(h && h->nviews == 6 && h->counts[0] == 0.0f && h->factors[119] == 1.0f);
  ctr_pet_histo_free(h);
}

#if CTR_HAVE_HDF5
/* Overwrites the scalar int64 attribute /pet@name. */
static void set_attr(const char *file, const char *name, long long v) {
  hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t g = H5Gopen2(f, "pet", H5P_DEFAULT);
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  CHECK(f >= 0 && g >= 0 && a >= 0 && H5Awrite(a, H5T_NATIVE_LLONG, &v) >= 0);
  H5Aclose(a);
  H5Gclose(g);
  H5Fclose(f);
}

static void delete_attr(const char *file, const char *name) {
  hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t g = H5Gopen2(f, "pet", H5P_DEFAULT);
  CHECK(H5Adelete(g, name) >= 0);
  H5Gclose(g);
  H5Fclose(f);
}
#endif

static void test_hdf5(void) {
  ctr_pet_histo *h = make_histo(1), *g = NULL;
  if (!h) return;
#if CTR_HAVE_HDF5
  CHECK_OK(ctr_pet_histo_save(P("a.h5"), h, 0));
  CHECK(count_temporaries() == 0);
  CHECK_OK(ctr_pet_histo_load(P("a.h5"), &g));
  CHECK(g && same_histo(h, g));
  ctr_pet_histo_free(g);
  g = NULL;
  float *f = h->factors;
  h->factors = NULL;
  CHECK_OK(ctr_pet_histo_save(P("b.hdf5"), h, 0));
  CHECK_OK(ctr_pet_histo_load(P("b.hdf5"), &g));
  CHECK(g && !g->factors && same_histo(h, g));
  ctr_pet_histo_free(g);
  g = NULL;
  h->factors = f;

  /* Attributes that contradict the datasets. */
  CHECK_OK(ctr_pet_histo_save(P("d.h5"), h, 0));
  set_attr(P("d.h5"), "nx", 7);
  CHECK_FAILS(ctr_pet_histo_load(P("d.h5"), &g), CTR_E_FORMAT, "/pet/counts is 6 x 4 x 5 x 6");
  CHECK_DETAIL(P("d.h5"), "expected 6 x 4 x 5 x 7");
  set_attr(P("d.h5"), "nx", 6);
  set_attr(P("d.h5"), "nviews", 5);
  CHECK_FAILS(ctr_pet_histo_load(P("d.h5"), &g), CTR_E_FORMAT, "/pet@nviews is 5");
  CHECK_DETAIL(P("d.h5"), "expected n_azimuth x n_copolar = 3 x 2 = 6");
  set_attr(P("d.h5"), "nviews", 6);
  delete_attr(P("d.h5"), "voxel_mm");
  CHECK_FAILS(ctr_pet_histo_load(P("d.h5"), &g), CTR_E_FORMAT, "/pet@voxel_mm is missing");
  CHECK_DETAIL(P("d.h5"), "expected");
  /* Not HDF5 at all; not a histo-image file. */
  write_text(P("x.h5"), "plain text");
  CHECK_FAILS(ctr_pet_histo_load(P("x.h5"), &g), CTR_E_FORMAT, "x.h5");
  hid_t fid = H5Fcreate(P("y.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(fid);
  CHECK_FAILS(ctr_pet_histo_load(P("y.h5"), &g), CTR_E_FORMAT, "group /pet is missing");
  CHECK_DETAIL(P("y.h5"), "expected");
  /* A NaN in the data. */
  h->counts[0] = NAN;
  CHECK_FAILS(ctr_pet_histo_save(P("z.h5"), h, 0), CTR_E_INVALID_ARGUMENT, "counts of view 0");
  CHECK(!exists(P("z.h5")));
  CHECK(g == NULL);
  CHECK(count_temporaries() == 0);
#else
  CHECK_FAILS(ctr_pet_histo_save(P("a.h5"), h, 0), CTR_E_UNSUPPORTED, ".json");
  CHECK_FAILS(ctr_pet_histo_load(P("a.h5"), &g), CTR_E_UNSUPPORTED, ".json");
  CHECK(!exists(P("a.h5")) && count_temporaries() == 0);
#endif
  ctr_pet_histo_free(h);
}

int main(void) {
  if (!scratch_open("ctr_pet_histo")) return 1;
  test_create_errors();
  test_json_roundtrip();
  test_json_errors();
  test_hdf5();
  scratch_close();
  return th_finish("test_pet_histo");
}

/* Histo-image sets: allocation, the value checks, and the JSON + raw float32
 * file form (docs/file-formats.md, "PET histo-images"); the public load and
 * save (pet_histo_file.c) send .h5/.hdf5 paths to pet_histo_hdf5.c and the
 * rest here. Every file is written under a temporary name and
 * renamed when all are complete; the JSON description last, so that a
 * crash never leaves a description pointing at incomplete data. */
#include "pet/pet_data.h"
#include "io/io_internal.h"
#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CTR__HISTO_FORMAT "ctrecon-pet-histo"
#define CTR__HISTO_FORMAT_VERSION 1
/* A description is a few hundred bytes; anything far larger is not one. */
#define CTR__HISTO_JSON_MAX (1 << 20)

/* ---- Allocation ----------------------------------------------------------- */

ctr_status ctr_pet_histo_create(const ctr_pet_params *p, int with_factors, ctr_pet_histo **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_histo_create: out is NULL");
  *out = NULL;
  ctr_pet_params pc;
  CTR_CHECK(ctr__pet_params_check(p, "ctr_pet_histo_create", &pc));
  p = &pc;
  const int64_t nviews = (int64_t)p->n_azimuth * p->n_copolar;
  size_t nvox, n;
  if (!ctr__mul_size((size_t)p->nx * (size_t)p->ny, (size_t)p->nz, &nvox) ||
      !ctr__mul_size(nvox, (size_t)nviews, &n) || !ctr__mul_size(n, sizeof(float), &n))
    return CTR_E_OUT_OF_MEMORY;
  ctr_pet_histo *h = ctr__calloc(1, sizeof *h, "PET histo-image set");
  if (!h) return CTR_E_OUT_OF_MEMORY;
  h->params = *p;
  h->nviews = nviews;
  /* calloc: the pages of sparse data that are never written stay unbacked. */
  h->counts = ctr__calloc(n / sizeof(float), sizeof(float), "PET histo-image counts");
  if (h->counts && with_factors) {
    h->factors = ctr__malloc(n, "PET histo-image factors");
    if (h->factors)
      for (size_t i = 0; i < n / sizeof(float); i++) h->factors[i] = 1.0f;
  }
  if (!h->counts || (with_factors && !h->factors)) {
    ctr_pet_histo_free(h);
    return CTR_E_OUT_OF_MEMORY;
  }
  *out = h;
  return CTR_OK;
}

void ctr_pet_histo_free(ctr_pet_histo *h) {
  if (!h) return;
  free(h->counts);
  free(h->factors);
  free(h);
}

/* ---- Shared helpers --------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int ctr__pet_histo_is_hdf5(const char *path) {
  return ends_with(path, ".h5") || ends_with(path, ".hdf5");
}

static int64_t voxels_of(const ctr_pet_params *p) { return p->nx * p->ny * p->nz; }

ctr_status ctr__pet_histo_check_values(const ctr_pet_histo *h, const char *file) {
  const int64_t nvox = voxels_of(&h->params), n = nvox * h->nviews;
  for (int a = 0; a < 2; a++) {
    const float *v = a ? h->factors : h->counts;
    if (!v) continue;
    int64_t bad = -1;
    /* Find the first bad value with a vectorisable scan, then locate it. */
    for (int64_t i = 0; i < n; i++)
      if (!(v[i] >= 0.0f && v[i] <= FLT_MAX)) {
        bad = i;
        break;
      }
    if (bad >= 0) {
      const int64_t view = bad / nvox, r = bad % nvox, nx = h->params.nx, ny = h->params.ny;
      CTR_FAIL(CTR_E_FORMAT,
               "'%s': %s of view %lld at voxel (x %lld, y %lld, z %lld) is %g: expected finite "
               "values >= 0",
               file, a ? "factors" : "counts", (long long)view, (long long)(r % nx),
               (long long)((r / nx) % ny), (long long)(r / (nx * ny)), (double)v[bad]);
    }
  }
  return CTR_OK;
}

void ctr__pet_histo_sanitize(ctr_pet_histo *h) {
  const int64_t n = voxels_of(&h->params) * h->nviews;
  h->replaced = ctr__values_sanitize_nonneg(h->counts, n) +
                (h->factors ? ctr__values_sanitize_nonneg(h->factors, n) : 0);
}

/* <path minus .json>.<kind>.raw */
static char *raw_name(const char *path, const char *kind) {
  const size_t n = strlen(path);
  const int strip = ends_with(path, ".json") ? 5 : 0;
  return ctr__io_sprintf("%.*s.%s.raw", (int)(n - (size_t)strip), path, kind);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int host_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* ---- Saving ------------------------------------------------------------------ */

/* One file of the set: data (n bytes) under a temporary name, closed. */
static ctr_status write_file(ctr__atomic_file *f, const char *path, const void *data, size_t n) {
  CTR_CHECK(ctr__atomic_create(f, path));
  CTR_CHECK(ctr__pwrite_full(f->fd, data, n, 0, f->tmp));
  return ctr__atomic_close(f);
}

static char *describe(const ctr_pet_histo *h, const char *counts, const char *factors) {
  const ctr_pet_params *p = &h->params;
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  cJSON_AddStringToObject(root, "format", CTR__HISTO_FORMAT);
  cJSON_AddNumberToObject(root, "format_version", CTR__HISTO_FORMAT_VERSION);
  cJSON *lat = cJSON_AddObjectToObject(root, "lattice");
  const double size[3] = {(double)p->nx, (double)p->ny, (double)p->nz};
  cJSON_AddItemToObject(lat, "size", cJSON_CreateDoubleArray(size, 3));
  cJSON_AddNumberToObject(lat, "voxel_mm", p->voxel);
  cJSON *views = cJSON_AddObjectToObject(root, "views");
  cJSON_AddNumberToObject(views, "n_azimuth", p->n_azimuth);
  cJSON_AddNumberToObject(views, "n_copolar", p->n_copolar);
  cJSON_AddNumberToObject(views, "acceptance_deg", p->acceptance_deg);
  cJSON_AddNumberToObject(views, "nviews", (double)h->nviews);
  cJSON_AddNumberToObject(root, "tof_fwhm_ps", h->tof_fwhm_ps);
  cJSON_AddNumberToObject(root, "events", h->events);
  cJSON_AddStringToObject(root, "dtype", "float32");
  cJSON_AddStringToObject(root, "byte_order", host_little_endian() ? "little" : "big");
  const double shape[4] = {(double)h->nviews, (double)p->nz, (double)p->ny, (double)p->nx};
  cJSON_AddItemToObject(root, "shape", cJSON_CreateDoubleArray(shape, 4));
  cJSON_AddStringToObject(root, "counts", base_name(counts));
  if (factors) cJSON_AddStringToObject(root, "factors", base_name(factors));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

ctr_status ctr__pet_histo_save_json(const char *path, const ctr_pet_histo *h, int overwrite) {
  ctr_status st = CTR_OK;
  /* counts, factors (when there are), the description: renamed in this
   * order, data first */
  ctr__atomic_file f[3] = {CTR__ATOMIC_FILE_INIT, CTR__ATOMIC_FILE_INIT, CTR__ATOMIC_FILE_INIT};
  char *counts = raw_name(path, "counts");
  char *factors = h->factors ? raw_name(path, "factors") : NULL;
  char *text = NULL;
  const int nf = factors ? 3 : 2;
  if (!counts || (h->factors && !factors)) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  const char *names[3] = {counts, factors ? factors : path, path};
  for (int i = 0; i < nf; i++) CTR_CHECK_GOTO(st, ctr_file_check_output(names[i], overwrite));
  const size_t n = (size_t)(voxels_of(&h->params) * h->nviews) * sizeof(float);
  CTR_CHECK_GOTO(st, write_file(&f[0], counts, h->counts, n));
  if (factors) CTR_CHECK_GOTO(st, write_file(&f[1], factors, h->factors, n));
  text = describe(h, counts, factors);
  if (!text) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot build the JSON of '%s'", path);
  const size_t len = strlen(text);
  text[len] = '\n'; /* cJSON_Print's NUL becomes the newline: the length is len + 1 */
  CTR_CHECK_GOTO(st, write_file(&f[nf - 1], path, text, len + 1));
  text[len] = '\0';
  CTR_CHECK_GOTO(st, ctr__atomic_rename_all(f, nf, !overwrite));
cleanup:
  for (int i = 0; i < 3; i++) ctr__atomic_discard(&f[i]);
  free(text);
  free(counts);
  free(factors);
  return st;
}

/* ---- Loading ------------------------------------------------------------------ */

static ctr_status jmissing(const char *file, const char *field, const char *expected) {
  CTR_FAIL(CTR_E_FORMAT, "'%s': field \"%s\" is missing (expected %s)", file, field, expected);
}

static ctr_status jbad(const char *file, const char *field, const char *expected) {
  CTR_FAIL(CTR_E_FORMAT, "'%s': field \"%s\" is invalid (expected %s)", file, field, expected);
}

/* A number; required or `dflt`. */
static ctr_status jnumber(const char *file, const cJSON *obj, const char *key, const char *field,
                          int required, double dflt, double *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!it) {
    if (required) return jmissing(file, field, "a number");
    *out = dflt;
    return CTR_OK;
  }
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return jbad(file, field, "a finite number");
  *out = it->valuedouble;
  return CTR_OK;
}

static ctr_status jint(const char *file, const cJSON *obj, const char *key, const char *field,
                       int64_t max, int64_t *out) {
  double v = 0;
  CTR_CHECK(jnumber(file, obj, key, field, 1, 0, &v));
  if (v != floor(v) || v < 1 || v > (double)max) {
    char what[64];
    snprintf(what, sizeof what, "an integer in 1 .. %lld", (long long)max);
    return jbad(file, field, what);
  }
  *out = (int64_t)v;
  return CTR_OK;
}

static ctr_status jobject(const char *file, const cJSON *root, const char *key,
                          const char *expected, const cJSON **out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!it) return jmissing(file, key, expected);
  if (!cJSON_IsObject(it)) return jbad(file, key, expected);
  *out = it;
  return CTR_OK;
}

static ctr_status jstring(const char *file, const cJSON *root, const char *key, int required,
                          const char *expected, const char **out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
  *out = NULL;
  if (!it) return required ? jmissing(file, key, expected) : CTR_OK;
  if (!cJSON_IsString(it) || !it->valuestring || !*it->valuestring)
    return jbad(file, key, expected);
  *out = it->valuestring;
  return CTR_OK;
}

/* Lattice, views and metadata of the description into h (nothing
 * allocated). */
static ctr_status parse_description(const char *file, const cJSON *root, ctr_pet_histo *h) {
  /* Every member known (docs/file-formats.md): a typo is an error, never a default. */
  static const char *const k_root[] = {"format", "format_version", "lattice", "views",
                                       "tof_fwhm_ps", "events", "dtype", "byte_order", "shape",
                                       "counts", "factors", "comment"};
  static const char *const k_lattice[] = {"size", "voxel_mm"};
  static const char *const k_views[] = {"n_azimuth", "n_copolar", "acceptance_deg", "nviews"};
  CTR_CHECK(ctr__json_check_members(file, "", root, k_root, 12));
  const char *fmt;
  CTR_CHECK(jstring(file, root, "format", 1, "\"" CTR__HISTO_FORMAT "\"", &fmt));
  if (strcmp(fmt, CTR__HISTO_FORMAT) != 0)
    CTR_FAIL(CTR_E_FORMAT, "'%s': format is \"%s\", expected \"" CTR__HISTO_FORMAT "\"", file,
             fmt);
  double ver = 0;
  CTR_CHECK(jnumber(file, root, "format_version", "format_version", 0, 1, &ver));
  if (ver != CTR__HISTO_FORMAT_VERSION)
    CTR_FAIL(CTR_E_FORMAT, "'%s': format_version is %g, expected %d (a newer ctrecon wrote it?)",
             file, ver, CTR__HISTO_FORMAT_VERSION);
  const cJSON *lat = NULL, *views = NULL;
  CTR_CHECK(jobject(file, root, "lattice",
                    "an object {\"size\": [nx, ny, nz], \"voxel_mm\": ...}", &lat));
  CTR_CHECK(ctr__json_check_members(file, "lattice", lat, k_lattice, 2));
  const cJSON *size = cJSON_GetObjectItemCaseSensitive(lat, "size");
  if (!size) return jmissing(file, "lattice.size", "[nx, ny, nz]");
  if (!cJSON_IsArray(size) || cJSON_GetArraySize(size) != 3)
    return jbad(file, "lattice.size", "[nx, ny, nz], 3 integers in 1 .. 65536");
  int64_t n[3];
  for (int i = 0; i < 3; i++) {
    const cJSON *e = cJSON_GetArrayItem(size, i);
    const double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
    if (v != floor(v) || v < 1 || v > 65536)
      return jbad(file, "lattice.size", "[nx, ny, nz], 3 integers in 1 .. 65536");
    n[i] = (int64_t)v;
  }
  ctr_pet_params *p = &h->params;
  *p = (ctr_pet_params)CTR_PET_PARAMS_INIT;
  p->nx = n[0];
  p->ny = n[1];
  p->nz = n[2];
  CTR_CHECK(jnumber(file, lat, "voxel_mm", "lattice.voxel_mm", 1, 0, &p->voxel));
  if (!(p->voxel > 0)) return jbad(file, "lattice.voxel_mm", "a voxel size > 0 (mm)");
  CTR_CHECK(jobject(file, root, "views",
                    "an object {\"n_azimuth\", \"n_copolar\", \"acceptance_deg\", \"nviews\"}",
                    &views));
  CTR_CHECK(ctr__json_check_members(file, "views", views, k_views, 4));
  int64_t na, nc, nv;
  CTR_CHECK(jint(file, views, "n_azimuth", "views.n_azimuth", 100000, &na));
  CTR_CHECK(jint(file, views, "n_copolar", "views.n_copolar", 100000, &nc));
  CTR_CHECK(jnumber(file, views, "acceptance_deg", "views.acceptance_deg", 1, 0,
                    &p->acceptance_deg));
  if (!(p->acceptance_deg >= 0 && p->acceptance_deg < 90))
    return jbad(file, "views.acceptance_deg", "an angle 0 <= value < 90 (degrees)");
  CTR_CHECK(jint(file, views, "nviews", "views.nviews", INT64_C(10000000000), &nv));
  if (nv != na * nc)
    CTR_FAIL(CTR_E_FORMAT,
             "'%s': views.nviews is %lld, expected n_azimuth x n_copolar = %lld x %lld = %lld",
             file, (long long)nv, (long long)na, (long long)nc, (long long)(na * nc));
  p->n_azimuth = (int)na;
  p->n_copolar = (int)nc;
  h->nviews = nv;
  CTR_CHECK(jnumber(file, root, "tof_fwhm_ps", "tof_fwhm_ps", 0, 0, &h->tof_fwhm_ps));
  CTR_CHECK(jnumber(file, root, "events", "events", 0, 0, &h->events));
  if (h->tof_fwhm_ps < 0) return jbad(file, "tof_fwhm_ps", "a value >= 0 (ps; 0 = unknown)");
  if (h->events < 0) return jbad(file, "events", "a count >= 0");
  const char *dtype;
  CTR_CHECK(jstring(file, root, "dtype", 1, "\"float32\"", &dtype));
  if (strcmp(dtype, "float32") != 0)
    CTR_FAIL(CTR_E_FORMAT, "'%s': dtype is \"%s\", expected \"float32\"", file, dtype);
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(root, "shape");
  if (shape) {
    const double want[4] = {(double)nv, (double)p->nz, (double)p->ny, (double)p->nx};
    int ok = cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == 4;
    for (int i = 0; ok && i < 4; i++) {
      const cJSON *e = cJSON_GetArrayItem(shape, i);
      ok = cJSON_IsNumber(e) && e->valuedouble == want[i];
    }
    if (!ok) {
      char what[160];
      snprintf(what, sizeof what, "[nviews, nz, ny, nx] = [%lld, %lld, %lld, %lld]",
               (long long)nv, (long long)p->nz, (long long)p->ny, (long long)p->nx);
      return jbad(file, "shape", what);
    }
  }
  return CTR_OK;
}

/* The description's text (NUL-terminated, malloc'd). */
static ctr_status read_text(const char *path, char **out) {
  return ctr__file_read_text(path, CTR__HISTO_JSON_MAX,
                             "a JSON histo-image description (the data belong in the .raw files)",
                             out);
}

/* The raw file named in the description, relative to its directory. */
static char *resolve(const char *json, const char *name) {
  if (name[0] == '/') return ctr__io_sprintf("%s", name);
  const char *slash = strrchr(json, '/');
  if (!slash) return ctr__io_sprintf("%s", name);
  return ctr__io_sprintf("%.*s/%s", (int)(slash - json), json, name);
}

static void swap4(float *v, size_t n) {
  unsigned char *b = (unsigned char *)v;
  for (size_t i = 0; i < n; i++, b += 4) {
    unsigned char t = b[0];
    b[0] = b[3];
    b[3] = t;
    t = b[1];
    b[1] = b[2];
    b[2] = t;
  }
}

/* Reads one raw array of exactly n floats. */
static ctr_status read_array(const char *json, const char *field, const char *name, float *v,
                             size_t n, int swap, const ctr_pet_histo *h) {
  char *path = resolve(json, name);
  if (!path) return CTR_E_OUT_OF_MEMORY;
  int fd = -1;
  int64_t size = 0;
  ctr_status st = ctr__file_open_read(path, &fd, &size);
  if (st != CTR_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", ctr_error_detail());
    ctr__error_set(st, "'%s': cannot read its %s file: %s", json, field, why);
    goto cleanup;
  }
  const int64_t want = (int64_t)(n * sizeof(float));
  if (size != want)
    CTR_FAIL_GOTO(st, CTR_E_SIZE_MISMATCH,
                  "'%s': %s file '%s' is %s: it has %lld bytes, expected %lld (%lld views x %lld "
                  "x %lld x %lld float32)",
                  json, field, path, size < want ? "truncated" : "too long", (long long)size,
                  (long long)want, (long long)h->nviews, (long long)h->params.nz,
                  (long long)h->params.ny, (long long)h->params.nx);
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, v, n * sizeof(float), 0, path));
  if (swap) swap4(v, n);
cleanup:
  if (fd >= 0) close(fd);
  free(path);
  return st;
}

ctr_status ctr__pet_histo_load_json(const char *path, ctr_pet_histo **out) {
  ctr_status st = CTR_OK;
  char *text = NULL;
  cJSON *root = NULL;
  ctr_pet_histo desc, *h = NULL;
  memset(&desc, 0, sizeof desc);
  CTR_CHECK_GOTO(st, read_text(path, &text));
  root = cJSON_Parse(text);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    const long off = at && at >= text ? (long)(at - text) : -1;
    CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                  "'%s' is not valid JSON (error near byte %ld): expected a histo-image "
                  "description",
                  path, off);
  }
  if (!cJSON_IsObject(root))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': expected a JSON object (histo-image description)",
                  path);
  CTR_CHECK_GOTO(st, parse_description(path, root, &desc));
  const char *counts, *factors, *order;
  CTR_CHECK_GOTO(st, jstring(path, root, "counts", 1, "the name of the counts .raw file", &counts));
  CTR_CHECK_GOTO(st, jstring(path, root, "factors", 0, "the name of the factors .raw file",
                             &factors));
  CTR_CHECK_GOTO(st, jstring(path, root, "byte_order", 0, "\"little\" or \"big\"", &order));
  int swap = 0;
  if (order) {
    if (strcmp(order, "little") != 0 && strcmp(order, "big") != 0)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': byte_order is \"%s\", expected \"little\" or \"big\"",
                    path, order);
    swap = (strcmp(order, "little") == 0) != host_little_endian();
  }
  CTR_CHECK_GOTO(st, ctr_pet_histo_create(&desc.params, factors != NULL, &h));
  h->tof_fwhm_ps = desc.tof_fwhm_ps;
  h->events = desc.events;
  const size_t n = (size_t)(voxels_of(&h->params) * h->nviews);
  CTR_CHECK_GOTO(st, read_array(path, "counts", counts, h->counts, n, swap, h));
  if (factors) CTR_CHECK_GOTO(st, read_array(path, "factors", factors, h->factors, n, swap, h));
  ctr__pet_histo_sanitize(h);
  *out = h;
  h = NULL;
cleanup:
  ctr_pet_histo_free(h);
  cJSON_Delete(root);
  free(text);
  return st;
}

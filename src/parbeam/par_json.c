/* Parallel-beam geometry files (docs/parallel-beam.md, "Geometry files"):
 * JSON with "type": "parallel", every member of ctr_parallel_params, read
 * strictly (an unknown member is an error naming the nearest known one)
 * and written through a temporary name; angles and shifts with 17
 * significant digits, which read back to the same bits. */
#include "parbeam/parbeam.h"

#include "core/json_keys.h"
#include "io/io_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NKEYS(k) ((int)(sizeof(k) / sizeof((k)[0])))
static const char *const k_parallel[] = {"type",  "nbins",      "angles",   "angles_deg",
                                         "axis",  "axis_shift", "nx",       "ny",
                                         "voxel", "pixel_size", "tilt_deg", "nrows",
                                         "comment"};
static const char *const k_angles[] = {"count", "start_deg", "range_deg"};

/* A number member (absent: dflt when not required). */
static ctr_status number(const char *name, const cJSON *obj, const char *key, const char *path,
                         int required, double dflt, double *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!it) {
    if (required) CTR_FAIL(CTR_E_FORMAT, "%s: %s: missing (expected a number)", name, path);
    *out = dflt;
    return CTR_OK;
  }
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
    CTR_FAIL(CTR_E_FORMAT, "%s: %s: expected a finite number", name, path);
  *out = it->valuedouble;
  return CTR_OK;
}

/* A count member: a non-negative integer (absent: 0 unless required). */
static ctr_status count(const char *name, const cJSON *obj, const char *key, const char *path,
                        int required, int64_t *out) {
  double v = 0.0;
  CTR_CHECK(number(name, obj, key, path, required, 0.0, &v));
  if (v != floor(v) || v < 0 || v > 9.0e15)
    CTR_FAIL(CTR_E_FORMAT, "%s: %s = %g: expected a whole number >= 0", name, path, v);
  *out = (int64_t)v;
  return CTR_OK;
}

/* A list of n finite numbers (n 0: any length >= 1, given in *n). */
static ctr_status numbers(const char *name, const cJSON *it, const char *path, int64_t *n,
                          double **out) {
  const int64_t len = cJSON_IsArray(it) ? cJSON_GetArraySize(it) : -1;
  if (len < 1 || (*n && len != *n))
    CTR_FAIL(CTR_E_FORMAT, "%s: %s: expected an array of %s%lld numbers", name, path,
             *n ? "" : "at least ", (long long)(*n ? *n : 1));
  double *v = ctr__malloc(sizeof(double) * (size_t)len, path);
  if (!v) return CTR_E_OUT_OF_MEMORY;
  int64_t i = 0;
  for (const cJSON *e = it->child; e; e = e->next, i++) {
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
      free(v);
      CTR_FAIL(CTR_E_FORMAT, "%s: %s[%lld]: expected a finite number", name, path, (long long)i);
    }
    v[i] = e->valuedouble;
  }
  *n = len;
  *out = v;
  return CTR_OK;
}

/* The angles: "angles": {count, start_deg, range_deg} or "angles_deg": [...]. */
static ctr_status parse_angles(const char *name, const cJSON *root, ctr_parallel_params *p,
                               double **list) {
  const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "angles");
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "angles_deg");
  if (!obj == !arr)
    CTR_FAIL(CTR_E_FORMAT, "%s: expected exactly one of \"angles\": {\"count\": N, \"start_deg\": "
             "..., \"range_deg\": ...} and \"angles_deg\": [...]", name);
  if (arr) {
    p->nangles = 0;
    CTR_CHECK(numbers(name, arr, "angles_deg", &p->nangles, list));
    p->angles_deg = *list;
    return CTR_OK;
  }
  if (!cJSON_IsObject(obj))
    CTR_FAIL(CTR_E_FORMAT, "%s: angles: expected an object {\"count\": N, \"start_deg\": ..., "
             "\"range_deg\": ...}", name);
  CTR_CHECK(ctr__json_check_members(name, "angles", obj, k_angles, NKEYS(k_angles)));
  CTR_CHECK(count(name, obj, "count", "angles.count", 1, &p->nangles));
  CTR_CHECK(number(name, obj, "start_deg", "angles.start_deg", 0, 0.0, &p->angle_start_deg));
  return number(name, obj, "range_deg", "angles.range_deg", 0, 180.0, &p->angle_range_deg);
}

/* "axis": a bin or "center" (absent: the centre). */
static ctr_status parse_axis(const char *name, const cJSON *root, double *axis) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, "axis");
  if (!it || (cJSON_IsString(it) && !strcmp(it->valuestring, "center"))) {
    *axis = CTR_AXIS_CENTER;
    return CTR_OK;
  }
  return number(name, root, "axis", "axis", 1, 0.0, axis);
}

ctr_status ctr_parallel_from_json_string(const char *json, const char *name,
                                         ctr_parallel_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_from_json_string: out is NULL");
  *out = NULL;
  if (!json) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_from_json_string: json is NULL");
  if (!name) name = "parallel geometry";
  cJSON *root = cJSON_Parse(json);
  if (!root) CTR_FAIL(CTR_E_FORMAT, "%s: not valid JSON (near byte %lld)", name,
                      (long long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json : 0));
  ctr_status st = CTR_OK;
  double *angles = NULL, *shifts = NULL;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
  if (!cJSON_IsObject(root) || !cJSON_IsString(type) || strcmp(type->valuestring, "parallel"))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: type: expected \"parallel\" (a parallel-beam geometry; "
                  "cone-beam files are read by ctr_geometry_load_json)", name);
  CTR_CHECK_GOTO(st, ctr__json_check_members(name, "", root, k_parallel, NKEYS(k_parallel)));
  CTR_CHECK_GOTO(st, count(name, root, "nbins", "nbins", 1, &p.nbins));
  CTR_CHECK_GOTO(st, parse_angles(name, root, &p, &angles));
  CTR_CHECK_GOTO(st, parse_axis(name, root, &p.axis));
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(root, "axis_shift");
  if (sh) {
    int64_t n = p.nangles;
    CTR_CHECK_GOTO(st, numbers(name, sh, "axis_shift", &n, &shifts));
    p.axis_shift = shifts;
  }
  CTR_CHECK_GOTO(st, count(name, root, "nx", "nx", 0, &p.nx));
  CTR_CHECK_GOTO(st, count(name, root, "ny", "ny", 0, &p.ny));
  CTR_CHECK_GOTO(st, number(name, root, "voxel", "voxel", 0, 0.0, &p.voxel));
  CTR_CHECK_GOTO(st, number(name, root, "pixel_size", "pixel_size", 0, 0.0, &p.pixel_size));
  CTR_CHECK_GOTO(st, number(name, root, "tilt_deg", "tilt_deg", 0, 0.0, &p.tilt_deg));
  CTR_CHECK_GOTO(st, count(name, root, "nrows", "nrows", 0, &p.nrows));
  st = ctr_parallel_create(&p, out);
  if (st != CTR_OK && !strstr(ctr_error_detail(), name)) {
    char detail[900];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    ctr__error_set(st, "%s: %s", name, detail);
  }
cleanup:
  free(angles);
  free(shifts);
  cJSON_Delete(root);
  return st;
}

ctr_status ctr_parallel_load_json(const char *path, ctr_parallel_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_load_json: out is NULL");
  *out = NULL;
  if (!path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_load_json: path is NULL");
  char *text = NULL;
  CTR_CHECK(ctr__file_read_text(path, 1ll << 28, "a parallel-beam geometry (JSON)", &text));
  const ctr_status st = ctr_parallel_from_json_string(text, path, out);
  free(text);
  return st;
}

/* A list with 17 significant digits (the same bits when read back). */
static cJSON *exact_list(const double *v, int64_t n) {
  char *text = ctr__malloc((size_t)n * 26 + 4, "JSON list");
  if (!text) return NULL;
  size_t o = 0;
  text[o++] = '[';
  for (int64_t k = 0; k < n; k++) o += (size_t)sprintf(text + o, "%s%.17g", k ? ", " : "", v[k]);
  text[o++] = ']';
  text[o] = '\0';
  cJSON *raw = cJSON_CreateRaw(text);
  free(text);
  return raw;
}

/* One number with 17 significant digits. */
static cJSON *exact(double v) {
  char text[32];
  snprintf(text, sizeof text, "%.17g", v);
  return cJSON_CreateRaw(text);
}

static int uniform(const ctr_parallel_geometry *g) {
  const ctr_parallel_params *p = &g->p;
  for (int64_t a = 0; a < p->nangles; a++)
    if (g->angles_deg[a] != p->angle_start_deg + (double)a * p->angle_range_deg / (double)p->nangles)
      return 0;
  return 1;
}

ctr_status ctr_parallel_to_json_string(const ctr_parallel_geometry *g, char **out) {
  if (!g || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_to_json_string: NULL argument");
  *out = NULL;
  const ctr_parallel_params *p = &g->p;
  cJSON *root = cJSON_CreateObject();
  if (!root) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot build JSON");
  cJSON_AddStringToObject(root, "type", "parallel");
  cJSON_AddNumberToObject(root, "nbins", (double)p->nbins);
  if (uniform(g)) {
    cJSON *ang = cJSON_AddObjectToObject(root, "angles");
    cJSON_AddNumberToObject(ang, "count", (double)p->nangles);
    cJSON_AddItemToObject(ang, "start_deg", exact(p->angle_start_deg));
    cJSON_AddItemToObject(ang, "range_deg", exact(p->angle_range_deg));
  } else {
    cJSON_AddItemToObject(root, "angles_deg", exact_list(g->angles_deg, p->nangles));
  }
  cJSON_AddItemToObject(root, "axis", exact(p->axis));
  int shifted = 0;
  for (int64_t a = 0; a < p->nangles; a++) shifted |= g->axis_shift[a] != 0.0;
  if (shifted) cJSON_AddItemToObject(root, "axis_shift", exact_list(g->axis_shift, p->nangles));
  cJSON_AddNumberToObject(root, "nx", (double)p->nx);
  cJSON_AddNumberToObject(root, "ny", (double)p->ny);
  cJSON_AddItemToObject(root, "voxel", exact(p->voxel));
  cJSON_AddItemToObject(root, "pixel_size", exact(p->pixel_size));
  cJSON_AddItemToObject(root, "tilt_deg", exact(p->tilt_deg));
  cJSON_AddNumberToObject(root, "nrows", (double)p->nrows);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot print the parallel-beam geometry's JSON");
  *out = text;
  return CTR_OK;
}

ctr_status ctr_parallel_save_json(const ctr_parallel_geometry *g, const char *path,
                                  int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_parallel_save_json: path is empty");
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  char *text = NULL;
  CTR_CHECK(ctr_parallel_to_json_string(g, &text));
  const ctr_status st = ctr__file_save_line(path, text, overwrite, "parallel-beam geometry file");
  free(text);
  return st;
}

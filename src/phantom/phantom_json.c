/* Phantom files (docs/phantoms.md): a JSON list of ellipsoids or a scaled
 * Shepp-Logan head. Type and shape errors are CTR_E_FORMAT, values out of
 * range CTR_E_INVALID_ARGUMENT; both name the file and the JSON path. */
#include "phantom/phantom_internal.h"

#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static ctr_status read_file(const char *path, char **out) {
  ctr_status st = CTR_OK;
  FILE *f = NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  *out = NULL;
  f = fopen(path, "rb");
  if (!f) CTR_FAIL_GOTO(st, CTR_E_IO, "cannot open phantom file '%s': %s", path, strerror(errno));
  for (;;) {
    if (cap - len < 4096) {
      /* Phantom files are small; cap the size so a wrong path to a huge file
       * fails quickly instead of exhausting memory. */
      if (cap >= ((size_t)64 << 20))
        CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: file larger than 64 MiB, expected a JSON phantom",
                      path);
      size_t ncap = cap ? 2 * cap : 65536;
      char *nb = realloc(buf, ncap + 1);
      if (!nb) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) CTR_FAIL_GOTO(st, CTR_E_IO, "cannot read phantom file '%s': %s", path, strerror(errno));
  buf[len] = '\0';
  *out = buf;
  buf = NULL;
cleanup:
  if (f) fclose(f);
  free(buf);
  return st;
}

/* A finite number member; `positive` also requires > 0. Missing: FORMAT unless
 * `def` is non-NULL (then *out = *def). */
static ctr_status read_number(const char *file, const char *where, const cJSON *obj,
                              const char *key, int positive, const double *def, double *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  const char *expect = positive ? "a positive number" : "a finite number";
  if (!it) {
    if (def) {
      *out = *def;
      return CTR_OK;
    }
    CTR_FAIL(CTR_E_FORMAT, "%s: %s.%s: missing, expected %s", file, where, key, expect);
  }
  if (!cJSON_IsNumber(it))
    CTR_FAIL(CTR_E_FORMAT, "%s: %s.%s: expected %s", file, where, key, expect);
  double v = it->valuedouble;
  if (!isfinite(v) || (positive && !(v > 0.0)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s.%s: is %g, expected %s", file, where, key, v, expect);
  *out = v;
  return CTR_OK;
}

/* A member holding exactly 3 numbers. */
static ctr_status read_vec3(const char *file, const char *where, const cJSON *obj, const char *key,
                            int positive, int required, double out[3]) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  const char *expect = positive ? "3 positive numbers" : "3 finite numbers";
  if (!it) {
    if (!required) return CTR_OK; /* caller's default stays */
    CTR_FAIL(CTR_E_FORMAT, "%s: %s.%s: missing, expected %s", file, where, key, expect);
  }
  if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
    CTR_FAIL(CTR_E_FORMAT, "%s: %s.%s: expected %s", file, where, key, expect);
  int i = 0;
  for (const cJSON *x = it->child; x; x = x->next, i++) {
    if (!cJSON_IsNumber(x))
      CTR_FAIL(CTR_E_FORMAT, "%s: %s.%s: expected %s, element %d is not a number", file, where,
               key, expect, i);
    double v = x->valuedouble;
    if (!isfinite(v) || (positive && !(v > 0.0)))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s.%s: expected %s, element %d is %g", file, where,
               key, expect, i, v);
    out[i] = v;
  }
  return CTR_OK;
}

static ctr_status parse_ellipsoids(const char *file, const cJSON *list, ctr_phantom **out) {
  ctr_status st = CTR_OK;
  ctr_ellipsoid *e = NULL;
  static const char *const keys[] = {"density", "center_mm", "semi_axes_mm", "euler_deg", "name",
                                     "comment"};
  int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
  if (n < 1)
    CTR_FAIL(CTR_E_FORMAT, "%s: ellipsoids: expected a non-empty array of ellipsoid objects", file);
  e = ctr__calloc((size_t)n, sizeof *e, "phantom ellipsoids");
  if (!e) return CTR_E_OUT_OF_MEMORY;
  int i = 0;
  for (const cJSON *it = list->child; it; it = it->next, i++) {
    char where[48];
    snprintf(where, sizeof where, "ellipsoids[%d]", i);
    if (!cJSON_IsObject(it))
      CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                    "%s: %s: expected an object with density, center_mm, semi_axes_mm", file,
                    where);
    CTR_CHECK_GOTO(st, ctr__json_check_members(file, where, it, keys,
                                               (int)(sizeof keys / sizeof keys[0])));
    for (int k = 4; k < 6; k++) {
      const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, keys[k]);
      if (s && !cJSON_IsString(s))
        CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: %s.%s: expected a string", file, where, keys[k]);
    }
    double c[3], a[3], ang[3] = {0.0, 0.0, 0.0};
    CTR_CHECK_GOTO(st, read_number(file, where, it, "density", 0, NULL, &e[i].density));
    CTR_CHECK_GOTO(st, read_vec3(file, where, it, "center_mm", 0, 1, c));
    CTR_CHECK_GOTO(st, read_vec3(file, where, it, "semi_axes_mm", 1, 1, a));
    CTR_CHECK_GOTO(st, read_vec3(file, where, it, "euler_deg", 0, 0, ang));
    e[i].cx = c[0];
    e[i].cy = c[1];
    e[i].cz = c[2];
    e[i].ax = a[0];
    e[i].ay = a[1];
    e[i].az = a[2];
    e[i].phi_deg = ang[0];
    e[i].theta_deg = ang[1];
    e[i].psi_deg = ang[2];
  }
  CTR_CHECK_GOTO(st, ctr_phantom_from_ellipsoids(e, n, out));
cleanup:
  free(e);
  return st;
}

static ctr_status parse_shepp_logan(const char *file, const cJSON *obj, ctr_phantom **out) {
  static const char *const keys[] = {"radius_mm", "scale"};
  if (!cJSON_IsObject(obj))
    CTR_FAIL(CTR_E_FORMAT, "%s: shepp_logan: expected an object {\"radius_mm\": r, \"scale\": s}",
             file);
  CTR_CHECK(ctr__json_check_members(file, "shepp_logan", obj, keys, 2));
  double radius = 0.0, scale = 1.0, one = 1.0;
  CTR_CHECK(read_number(file, "shepp_logan", obj, "radius_mm", 1, NULL, &radius));
  CTR_CHECK(read_number(file, "shepp_logan", obj, "scale", 0, &one, &scale));
  return ctr_phantom_shepp_logan(radius, scale, out);
}

ctr_status ctr_phantom_load_json(const char *path, ctr_phantom **out) {
  ctr_status st = CTR_OK;
  char *text = NULL;
  cJSON *root = NULL;
  static const char *const keys[] = {"ellipsoids", "shepp_logan", "comment"};
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_load_json: out is NULL");
  *out = NULL;
  if (!path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_load_json: path is NULL");
  CTR_CHECK_GOTO(st, read_file(path, &text));
  const char *end = NULL;
  root = cJSON_ParseWithOpts(text, &end, 1);
  if (!root) {
    int line = 1, col = 1;
    for (const char *c = text; end && c < end && *c; c++) {
      if (*c == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: invalid JSON near line %d, column %d", path, line, col);
  }
  if (!cJSON_IsObject(root))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT,
                  "%s: expected a JSON object with \"ellipsoids\" or \"shepp_logan\"", path);
  CTR_CHECK_GOTO(st, ctr__json_check_members(path, "", root, keys, 3));
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "ellipsoids");
  const cJSON *sl = cJSON_GetObjectItemCaseSensitive(root, "shepp_logan");
  if (list && sl)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: both \"ellipsoids\" and \"shepp_logan\", expected one",
                  path);
  if (!list && !sl)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "%s: neither \"ellipsoids\" nor \"shepp_logan\", expected one",
                  path);
  if (list)
    CTR_CHECK_GOTO(st, parse_ellipsoids(path, list, out));
  else
    CTR_CHECK_GOTO(st, parse_shepp_logan(path, sl, out));
cleanup:
  cJSON_Delete(root);
  free(text);
  return st;
}

/* JSON geometry files (docs/geometry.md): parsing with errors that name the
 * file and the field, and writing through a temporary name. */
#include "geometry/geometry_internal.h"

#include "core/json_keys.h"
#include "io/io_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parsing context: the name used in messages. */
typedef struct jctx {
  const char *name;
} jctx;

static ctr_status jerr(const jctx *j, const char *field, const char *expected) {
  CTR_FAIL(CTR_E_FORMAT, "%s: %s: expected %s", j->name, field, expected);
}

/* Every object's members (docs/geometry.md): a misspelt one is an error, never
 * a silent default. */
#define NKEYS(k) ((int)(sizeof(k) / sizeof((k)[0])))
static const char *const k_circular[] = {"type", "sid", "sdd", "detector", "angles", "angles_deg",
                                         "volume", "comment"};
static const char *const k_helical[] = {"type", "sid", "sdd", "detector", "angles", "pitch_mm",
                                        "z0_mm", "window_deg", "volume", "comment"};
static const char *const k_matrices[] = {"type", "detector", "matrices", "volume", "comment"};
static const char *const k_vectors[] = {"type", "detector", "vectors", "volume", "comment"};
static const char *const k_det_vectors[] = {"nu", "nv"};
static const char *const k_volume[] = {"size", "voxel_mm", "offset_mm"};
static const char *const k_det_circular[] = {"nu", "nv", "du", "dv", "offset_u", "offset_v",
                                             "shape"};
static const char *const k_det_matrices[] = {"nu", "nv", "du", "dv"};
static const char *const k_angles[] = {"count", "start_deg", "range_deg", "direction"};

static ctr_status get_number(const jctx *j, const cJSON *obj, const char *key, const char *path,
                             int required, double dflt, double *out) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!it) {
    if (required) CTR_FAIL(CTR_E_FORMAT, "%s: %s: missing (expected a number)", j->name, path);
    *out = dflt;
    return CTR_OK;
  }
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return jerr(j, path, "a finite number");
  *out = it->valuedouble;
  return CTR_OK;
}

static ctr_status get_int(const jctx *j, const cJSON *obj, const char *key, const char *path,
                          int64_t *out) {
  double v = 0.0;
  CTR_CHECK(get_number(j, obj, key, path, 1, 0, &v));
  if (v != floor(v) || v < 1 || v > 9.0e15) return jerr(j, path, "a positive integer");
  *out = (int64_t)v;
  return CTR_OK;
}

/* A 3-vector given as [a, b, c] or as one number for all three. */
static ctr_status get_vec3(const jctx *j, const cJSON *obj, const char *key, const char *path,
                           int required, double dflt, double out[3]) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!it) {
    if (required) CTR_FAIL(CTR_E_FORMAT, "%s: %s: missing (expected [x, y, z])", j->name, path);
    out[0] = out[1] = out[2] = dflt;
    return CTR_OK;
  }
  if (cJSON_IsNumber(it) && isfinite(it->valuedouble)) {
    out[0] = out[1] = out[2] = it->valuedouble;
    return CTR_OK;
  }
  if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
    return jerr(j, path, "an array of 3 numbers [x, y, z]");
  for (int i = 0; i < 3; i++) {
    const cJSON *e = cJSON_GetArrayItem(it, i);
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
      return jerr(j, path, "an array of 3 finite numbers [x, y, z]");
    out[i] = e->valuedouble;
  }
  return CTR_OK;
}

static ctr_status parse_volume(const jctx *j, const cJSON *root, ctr_volume_geometry *vol) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "volume");
  if (!cJSON_IsObject(v))
    return jerr(j, "volume", "an object {\"size\": [nx, ny, nz], \"voxel_mm\": ..., \"offset_mm\": ...}");
  CTR_CHECK(ctr__json_check_members(j->name, "volume", v, k_volume, NKEYS(k_volume)));
  double size[3], vox[3], off[3];
  CTR_CHECK(get_vec3(j, v, "size", "volume.size", 1, 0, size));
  for (int i = 0; i < 3; i++)
    if (size[i] != floor(size[i]) || size[i] < 1 || size[i] > 1048576)
      CTR_FAIL(CTR_E_FORMAT, "%s: volume.size = [%g, %g, %g]: expected 3 integers in 1 .. 1048576",
               j->name, size[0], size[1], size[2]);
  CTR_CHECK(get_vec3(j, v, "voxel_mm", "volume.voxel_mm", 1, 0, vox));
  for (int i = 0; i < 3; i++)
    if (!(vox[i] > 0))
      CTR_FAIL(CTR_E_FORMAT, "%s: volume.voxel_mm = [%g, %g, %g]: expected voxel sizes > 0 (mm)",
               j->name, vox[0], vox[1], vox[2]);
  CTR_CHECK(get_vec3(j, v, "offset_mm", "volume.offset_mm", 0, 0.0, off));
  vol->nx = (int64_t)size[0];
  vol->ny = (int64_t)size[1];
  vol->nz = (int64_t)size[2];
  vol->voxel_x = vox[0];
  vol->voxel_y = vox[1];
  vol->voxel_z = vox[2];
  vol->offset_x = off[0];
  vol->offset_y = off[1];
  vol->offset_z = off[2];
  return CTR_OK;
}

/* "angles": {"count", "start_deg", "range_deg", "direction"} into the
 * uniform scan's members (the circular and helical forms share it). */
static ctr_status parse_angles(const jctx *j, const cJSON *ang, int64_t *count, double *start,
                               double *range, ctr_rotation *direction) {
  CTR_CHECK(ctr__json_check_members(j->name, "angles", ang, k_angles, NKEYS(k_angles)));
  CTR_CHECK(get_int(j, ang, "count", "angles.count", count));
  CTR_CHECK(get_number(j, ang, "start_deg", "angles.start_deg", 0, 0.0, start));
  CTR_CHECK(get_number(j, ang, "range_deg", "angles.range_deg", 0, 360.0, range));
  const cJSON *dir = cJSON_GetObjectItemCaseSensitive(ang, "direction");
  if (dir) {
    if (cJSON_IsString(dir) && !strcmp(dir->valuestring, "ccw")) *direction = CTR_ROTATION_CCW;
    else if (cJSON_IsString(dir) && !strcmp(dir->valuestring, "cw")) *direction = CTR_ROTATION_CW;
    else return jerr(j, "angles.direction", "\"ccw\" or \"cw\"");
  }
  return CTR_OK;
}

/* The circular form's sid, sdd and detector (the helical form's too). */
static ctr_status parse_source_detector(const jctx *j, const cJSON *root, double *sid, double *sdd,
                                        int64_t *nu, int64_t *nv, double *du, double *dv,
                                        double *offset_u, double *offset_v,
                                        ctr_detector_shape *shape) {
  CTR_CHECK(get_number(j, root, "sid", "sid", 1, 0, sid));
  CTR_CHECK(get_number(j, root, "sdd", "sdd", 1, 0, sdd));
  const cJSON *det = cJSON_GetObjectItemCaseSensitive(root, "detector");
  if (!cJSON_IsObject(det))
    return jerr(j, "detector", "an object {\"nu\", \"nv\", \"du\", \"dv\", \"offset_u\", \"offset_v\"}");
  CTR_CHECK(ctr__json_check_members(j->name, "detector", det, k_det_circular,
                                    NKEYS(k_det_circular)));
  CTR_CHECK(get_int(j, det, "nu", "detector.nu", nu));
  CTR_CHECK(get_int(j, det, "nv", "detector.nv", nv));
  CTR_CHECK(get_number(j, det, "du", "detector.du", 1, 0, du));
  CTR_CHECK(get_number(j, det, "dv", "detector.dv", 1, 0, dv));
  CTR_CHECK(get_number(j, det, "offset_u", "detector.offset_u", 0, 0.0, offset_u));
  CTR_CHECK(get_number(j, det, "offset_v", "detector.offset_v", 0, 0.0, offset_v));
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(det, "shape");
  if (sh) {
    if (cJSON_IsString(sh) && !strcmp(sh->valuestring, "flat"))
      *shape = CTR_DETECTOR_FLAT;
    else if (cJSON_IsString(sh) && !strcmp(sh->valuestring, "cylindrical"))
      *shape = CTR_DETECTOR_CYLINDRICAL;
    else
      return jerr(j, "detector.shape", "\"flat\" or \"cylindrical\"");
  }
  return CTR_OK;
}

/* "helical" (docs/geometry.md, "Helical orbits"): the circular form's
 * source, detector (flat or cylindrical) and uniform angles, with pitch_mm
 * (required), z0_mm and window_deg (absent: CTR_HELIX_WINDOW_AUTO). */
static ctr_status parse_helical(const jctx *j, const cJSON *root, const ctr_volume_geometry *vol,
                                ctr_geometry **out) {
  ctr_helical_params p = CTR_HELICAL_PARAMS_INIT;
  CTR_CHECK(parse_source_detector(j, root, &p.sid, &p.sdd, &p.nu, &p.nv, &p.du, &p.dv,
                                  &p.offset_u, &p.offset_v, &p.detector));
  const cJSON *ang = cJSON_GetObjectItemCaseSensitive(root, "angles");
  if (!cJSON_IsObject(ang))
    return jerr(j, "angles", "an object {\"count\", \"start_deg\", \"range_deg\", \"direction\"}");
  CTR_CHECK(parse_angles(j, ang, &p.nviews, &p.angle_start_deg, &p.angle_range_deg,
                         &p.direction));
  CTR_CHECK(get_number(j, root, "pitch_mm", "pitch_mm", 1, 0, &p.pitch_mm));
  CTR_CHECK(get_number(j, root, "z0_mm", "z0_mm", 0, 0.0, &p.z0_mm));
  CTR_CHECK(get_number(j, root, "window_deg", "window_deg", 0, CTR_HELIX_WINDOW_AUTO,
                       &p.window_deg));
  if (cJSON_GetObjectItemCaseSensitive(root, "window_deg") && p.window_deg < 0.0)
    /* the file says 0 .. 90, or nothing for the automatic window */
    return jerr(j, "window_deg", "0 .. 90 degrees (absent: the widest the pitch allows, up to 10)");
  return ctr_geometry_create_helical(&p, vol, out);
}

static ctr_status parse_circular(const jctx *j, const cJSON *root, const ctr_volume_geometry *vol,
                                 ctr_geometry **out) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  double *list = NULL;
  ctr_status st = CTR_OK;
  CTR_CHECK(parse_source_detector(j, root, &p.sid, &p.sdd, &p.nu, &p.nv, &p.du, &p.dv,
                                  &p.offset_u, &p.offset_v, &p.detector));
  const cJSON *ang = cJSON_GetObjectItemCaseSensitive(root, "angles");
  const cJSON *alist = cJSON_GetObjectItemCaseSensitive(root, "angles_deg");
  if (ang && alist)
    CTR_FAIL(CTR_E_FORMAT, "%s: both \"angles\" and \"angles_deg\": expected one of them", j->name);
  if (alist) {
    if (!cJSON_IsArray(alist) || cJSON_GetArraySize(alist) < 1)
      return jerr(j, "angles_deg", "a non-empty array of angles in degrees");
    p.nviews = cJSON_GetArraySize(alist);
    list = ctr__malloc((size_t)p.nviews * sizeof(double), "angle list");
    if (!list) return CTR_E_OUT_OF_MEMORY;
    int64_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, alist) {
      if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
        char path[64];
        snprintf(path, sizeof path, "angles_deg[%lld]", (long long)i);
        st = jerr(j, path, "a finite number (degrees)");
        goto cleanup;
      }
      list[i++] = e->valuedouble;
    }
    p.angles_deg = list;
  } else if (cJSON_IsObject(ang)) {
    CTR_CHECK(parse_angles(j, ang, &p.nviews, &p.angle_start_deg, &p.angle_range_deg,
                           &p.direction));
  } else {
    return jerr(j, "angles", "an object {\"count\", \"start_deg\", \"range_deg\", \"direction\"} "
                             "or an \"angles_deg\" list");
  }
  st = ctr_geometry_create_circular(&p, vol, out);
cleanup:
  free(list);
  return st;
}

static ctr_status parse_matrices(const jctx *j, const cJSON *root, const ctr_volume_geometry *vol,
                                 ctr_geometry **out) {
  const cJSON *det = cJSON_GetObjectItemCaseSensitive(root, "detector");
  if (!cJSON_IsObject(det)) return jerr(j, "detector", "an object {\"nu\", \"nv\", \"du\", \"dv\"}");
  CTR_CHECK(ctr__json_check_members(j->name, "detector", det, k_det_matrices,
                                    NKEYS(k_det_matrices)));
  int64_t nu = 0, nv = 0;
  double du = 0.0, dv = 0.0;
  CTR_CHECK(get_int(j, det, "nu", "detector.nu", &nu));
  CTR_CHECK(get_int(j, det, "nv", "detector.nv", &nv));
  CTR_CHECK(get_number(j, det, "du", "detector.du", 0, 0.0, &du));
  CTR_CHECK(get_number(j, det, "dv", "detector.dv", 0, 0.0, &dv));
  const cJSON *mats = cJSON_GetObjectItemCaseSensitive(root, "matrices");
  if (!cJSON_IsArray(mats) || cJSON_GetArraySize(mats) < 1)
    return jerr(j, "matrices", "a non-empty array of 3x4 matrices (12 numbers, row-major)");
  int64_t n = cJSON_GetArraySize(mats);
  double *m = ctr__malloc((size_t)n * 12 * sizeof(double), "matrices");
  if (!m) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  int64_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, mats) {
    char path[64];
    snprintf(path, sizeof path, "matrices[%lld]", (long long)i);
    /* Accept 12 numbers, or 3 rows of 4. */
    int k = 0, ok = cJSON_IsArray(e);
    const cJSON *x;
    if (ok && cJSON_GetArraySize(e) == 3) {
      cJSON_ArrayForEach(x, e) {
        const cJSON *y;
        if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != 4) { ok = 0; break; }
        cJSON_ArrayForEach(y, x) {
          if (!cJSON_IsNumber(y)) { ok = 0; break; }
          m[12 * i + k++] = y->valuedouble;
        }
      }
    } else if (ok && cJSON_GetArraySize(e) == 12) {
      cJSON_ArrayForEach(x, e) {
        if (!cJSON_IsNumber(x)) { ok = 0; break; }
        m[12 * i + k++] = x->valuedouble;
      }
    } else {
      ok = 0;
    }
    if (!ok || k != 12) {
      st = jerr(j, path, "12 numbers (row-major 3x4) or 3 rows of 4 numbers");
      goto cleanup;
    }
    i++;
  }
  st = ctr_geometry_create_matrices(nu, nv, du, dv, n, m, vol, out);
cleanup:
  free(m);
  return st;
}

/* "vectors": ASTRA's cone_vec rows, 12 numbers a view (docs/geometry.md). */
static ctr_status parse_vectors(const jctx *j, const cJSON *root, const ctr_volume_geometry *vol,
                                ctr_geometry **out) {
  const cJSON *det = cJSON_GetObjectItemCaseSensitive(root, "detector");
  if (!cJSON_IsObject(det)) return jerr(j, "detector", "an object {\"nu\", \"nv\"}");
  CTR_CHECK(ctr__json_check_members(j->name, "detector", det, k_det_vectors,
                                    NKEYS(k_det_vectors)));
  int64_t nu = 0, nv = 0;
  CTR_CHECK(get_int(j, det, "nu", "detector.nu", &nu));
  CTR_CHECK(get_int(j, det, "nv", "detector.nv", &nv));
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "vectors");
  if (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) < 1)
    return jerr(j, "vectors", "a non-empty array of views, each 12 numbers (source, detector "
                              "centre, u, v)");
  const int64_t n = cJSON_GetArraySize(rows);
  double *m = ctr__malloc((size_t)n * 12 * sizeof(double), "vectors");
  if (!m) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  int64_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, rows) {
    int k = 0, ok = cJSON_IsArray(e) && cJSON_GetArraySize(e) == 12;
    const cJSON *x;
    if (ok) cJSON_ArrayForEach(x, e) {
        if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) { ok = 0; break; }
        m[12 * i + k++] = x->valuedouble;
      }
    if (!ok) {
      char path[64];
      snprintf(path, sizeof path, "vectors[%lld]", (long long)i);
      st = jerr(j, path, "12 finite numbers (srcX, srcY, srcZ, dX, dY, dZ, uX, uY, uZ, vX, vY, vZ)");
      goto cleanup;
    }
    i++;
  }
  st = ctr_geometry_create_vectors(nu, nv, n, m, vol, out);
cleanup:
  free(m);
  return st;
}

ctr_status ctr_geometry_from_json_string(const char *json, const char *name, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_from_json_string: out is NULL");
  *out = NULL;
  jctx j = {name ? name : "geometry"};
  if (!json) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: JSON text is NULL", j.name);
  cJSON *root = cJSON_Parse(json);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    int line = 1;
    for (const char *c = json; at && c < at; c++) line += *c == '\n';
    CTR_FAIL(CTR_E_FORMAT, "%s: not valid JSON (syntax error near line %d)", j.name, line);
  }
  ctr_status st = CTR_OK;
  ctr_volume_geometry vol;
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
  static const char *const types = "\"circular\", \"helical\", \"matrices\" or \"vectors\"";
  if (!cJSON_IsString(type)) {
    st = jerr(&j, "type", types);
    goto cleanup;
  }
  const int circular = !strcmp(type->valuestring, "circular");
  const int vectors = !strcmp(type->valuestring, "vectors");
  const int helical = !strcmp(type->valuestring, "helical");
  if (!circular && !vectors && !helical && strcmp(type->valuestring, "matrices")) {
    st = jerr(&j, "type", types);
    goto cleanup;
  }
  CTR_CHECK_GOTO(st, circular ? ctr__json_check_members(j.name, "", root, k_circular,
                                                        NKEYS(k_circular))
                     : vectors ? ctr__json_check_members(j.name, "", root, k_vectors,
                                                         NKEYS(k_vectors))
                     : helical ? ctr__json_check_members(j.name, "", root, k_helical,
                                                         NKEYS(k_helical))
                               : ctr__json_check_members(j.name, "", root, k_matrices,
                                                         NKEYS(k_matrices)));
  CTR_CHECK_GOTO(st, parse_volume(&j, root, &vol));
  st = circular  ? parse_circular(&j, root, &vol, out)
       : vectors ? parse_vectors(&j, root, &vol, out)
       : helical ? parse_helical(&j, root, &vol, out)
                 : parse_matrices(&j, root, &vol, out);
  if (st == CTR_E_GEOMETRY && !strstr(ctr_error_detail(), j.name)) {
    char detail[900];
    snprintf(detail, sizeof detail, "%s", ctr_error_detail());
    ctr__error_set(st, "%s: %s", j.name, detail);
  }
cleanup:
  cJSON_Delete(root);
  return st;
}

ctr_status ctr_geometry_load_json(const char *path, ctr_geometry **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_load_json: out is NULL");
  *out = NULL;
  if (!path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "geometry path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) CTR_FAIL(CTR_E_IO, "cannot open geometry file '%s': %s", path, strerror(errno));
  ctr_status st = CTR_OK;
  char *text = NULL;
  if (fseek(f, 0, SEEK_END) != 0) CTR_FAIL_GOTO(st, CTR_E_IO, "cannot read '%s': %s", path, strerror(errno));
  long n = ftell(f);
  if (n < 0 || n > (64l << 20))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s': %ld bytes; expected a JSON file under 64 MiB", path, n);
  rewind(f);
  text = ctr__malloc((size_t)n + 1, "geometry file");
  if (!text) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  if (fread(text, 1, (size_t)n, f) != (size_t)n)
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot read '%s': %s", path, strerror(errno));
  text[n] = '\0';
  st = ctr_geometry_from_json_string(text, path, out);
cleanup:
  free(text);
  fclose(f);
  return st;
}

static int angles_uniform(const ctr_geometry *g) {
  const ctr_circular_params *p = &g->circ;
  for (int64_t i = 0; i < g->nviews; i++) {
    double a = p->angle_start_deg +
               (double)p->direction * (double)i * p->angle_range_deg / (double)p->nviews;
    if (a != g->angles_deg[i]) return 0;
  }
  return 1;
}

static cJSON *vec3(double a, double b, double c) {
  const double v[3] = {a, b, c};
  return cJSON_CreateDoubleArray(v, 3);
}

static ctr_status volume_json_print(const ctr_geometry *g, cJSON *root, cJSON *vol, char **out);

/* One view's row with 17 significant digits, which read back to the same
 * bits (cJSON's own printing may drop the last one). */
static cJSON *exact_row(const double *v) {
  char text[12 * 26 + 4];
  size_t o = 0;
  text[o++] = '[';
  for (int k = 0; k < 12; k++)
    o += (size_t)snprintf(text + o, sizeof text - o, "%s%.17g", k ? ", " : "", v[k]);
  snprintf(text + o, sizeof text - o, "]");
  return cJSON_CreateRaw(text);
}

/* The "vectors" form: the vectors the geometry was built from, as given, to
 * the bit. */
static ctr_status vectors_json(const ctr_geometry *g, cJSON *root, cJSON *det, cJSON *vol,
                               char **out) {
  cJSON_AddItemToObject(root, "type", cJSON_CreateString("vectors"));
  cJSON_AddItemToObject(root, "detector", det);
  cJSON_AddNumberToObject(det, "nu", (double)g->nu);
  cJSON_AddNumberToObject(det, "nv", (double)g->nv);
  cJSON *rows = cJSON_CreateArray();
  for (int64_t i = 0; i < g->nviews; i++)
    cJSON_AddItemToArray(rows, exact_row(g->vectors + 12 * i));
  cJSON_AddItemToObject(root, "vectors", rows);
  return volume_json_print(g, root, vol, out);
}

/* A number in the fewest significant digits (15 to 17) that read back to
 * the same bits (cJSON's own printing may drop the last bit). */
static void add_exact(cJSON *obj, const char *key, double v) {
  char text[32];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, v);
    if (strtod(text, NULL) == v) break;
  }
  cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(text));
}

/* The "helical" form: the parameters it was built from, to the bit. */
static ctr_status helical_json(const ctr_geometry *g, cJSON *root, cJSON *det, cJSON *vol,
                               char **out) {
  const ctr_helical_params *p = &g->hel;
  cJSON_AddItemToObject(root, "type", cJSON_CreateString("helical"));
  add_exact(root, "sid", p->sid);
  add_exact(root, "sdd", p->sdd);
  cJSON_AddItemToObject(root, "detector", det);
  cJSON_AddNumberToObject(det, "nu", (double)p->nu);
  cJSON_AddNumberToObject(det, "nv", (double)p->nv);
  add_exact(det, "du", p->du);
  add_exact(det, "dv", p->dv);
  add_exact(det, "offset_u", p->offset_u);
  add_exact(det, "offset_v", p->offset_v);
  if (p->detector == CTR_DETECTOR_CYLINDRICAL) cJSON_AddStringToObject(det, "shape", "cylindrical");
  cJSON *ang = cJSON_CreateObject();
  cJSON_AddNumberToObject(ang, "count", (double)p->nviews);
  add_exact(ang, "start_deg", p->angle_start_deg);
  add_exact(ang, "range_deg", p->angle_range_deg);
  cJSON_AddStringToObject(ang, "direction", p->direction == CTR_ROTATION_CW ? "cw" : "ccw");
  cJSON_AddItemToObject(root, "angles", ang);
  add_exact(root, "pitch_mm", p->pitch_mm);
  add_exact(root, "z0_mm", p->z0_mm);
  if (p->window_deg != CTR_HELIX_WINDOW_AUTO) add_exact(root, "window_deg", p->window_deg);
  return volume_json_print(g, root, vol, out);
}

ctr_status ctr_geometry_to_json_string(const ctr_geometry *g, char **out) {
  if (!g || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_geometry_to_json_string: NULL argument");
  *out = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot build JSON");
  cJSON *det = cJSON_CreateObject();
  cJSON *vol = cJSON_CreateObject();
  if (g->curved && !g->circular && !g->helical) {
    cJSON_Delete(root);
    cJSON_Delete(det);
    cJSON_Delete(vol);
    CTR_FAIL(CTR_E_UNSUPPORTED, "ctr_geometry_to_json_string: a cylindrical detector's "
             "geometry is written as a circular orbit only (this one is a derived window)");
  }
  if (g->vectors) return vectors_json(g, root, det, vol, out);
  if (g->helical) return helical_json(g, root, det, vol, out);
  cJSON_AddItemToObject(root, "type", cJSON_CreateString(g->circular ? "circular" : "matrices"));
  if (g->circular) {
    cJSON_AddNumberToObject(root, "sid", g->circ.sid);
    cJSON_AddNumberToObject(root, "sdd", g->circ.sdd);
  }
  cJSON_AddItemToObject(root, "detector", det);
  cJSON_AddNumberToObject(det, "nu", (double)g->nu);
  cJSON_AddNumberToObject(det, "nv", (double)g->nv);
  cJSON_AddNumberToObject(det, "du", g->du);
  cJSON_AddNumberToObject(det, "dv", g->dv);
  if (g->circular) {
    cJSON_AddNumberToObject(det, "offset_u", g->circ.offset_u);
    cJSON_AddNumberToObject(det, "offset_v", g->circ.offset_v);
    if (g->curved) cJSON_AddStringToObject(det, "shape", "cylindrical");
    if (angles_uniform(g)) {
      cJSON *ang = cJSON_CreateObject();
      cJSON_AddNumberToObject(ang, "count", (double)g->nviews);
      cJSON_AddNumberToObject(ang, "start_deg", g->circ.angle_start_deg);
      cJSON_AddNumberToObject(ang, "range_deg", g->circ.angle_range_deg);
      cJSON_AddStringToObject(ang, "direction", g->circ.direction == CTR_ROTATION_CW ? "cw" : "ccw");
      cJSON_AddItemToObject(root, "angles", ang);
    } else {
      cJSON_AddItemToObject(root, "angles_deg", cJSON_CreateDoubleArray(g->angles_deg, (int)g->nviews));
    }
  } else {
    cJSON *mats = cJSON_CreateArray();
    for (int64_t i = 0; i < g->nviews; i++)
      cJSON_AddItemToArray(mats, cJSON_CreateDoubleArray(g->views[i].P, 12));
    cJSON_AddItemToObject(root, "matrices", mats);
  }
  return volume_json_print(g, root, vol, out);
}

/* Adds the volume and prints; frees root. */
static ctr_status volume_json_print(const ctr_geometry *g, cJSON *root, cJSON *vol, char **out) {
  cJSON_AddItemToObject(root, "volume", vol);
  cJSON_AddItemToObject(vol, "size", vec3((double)g->vol.nx, (double)g->vol.ny, (double)g->vol.nz));
  cJSON_AddItemToObject(vol, "voxel_mm", vec3(g->vol.voxel_x, g->vol.voxel_y, g->vol.voxel_z));
  cJSON_AddItemToObject(vol, "offset_mm", vec3(g->vol.offset_x, g->vol.offset_y, g->vol.offset_z));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot print geometry JSON");
  *out = text;
  return CTR_OK;
}

ctr_status ctr_geometry_save_json(const ctr_geometry *g, const char *path, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "geometry path is empty");
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  char *text = NULL;
  CTR_CHECK(ctr_geometry_to_json_string(g, &text));
  const ctr_status st = ctr__file_save_line(path, text, overwrite, "geometry file");
  free(text);
  return st;
}

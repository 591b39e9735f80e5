/* OME-Zarr: a volume as a Zarr v3 hierarchy (OME-NGFF 0.5) in a directory
 * "NAME.zarr/": the group's zarr.json with the "ome" attributes (axes z, y,
 * x in millimetres, one dataset per level with its scale and translation),
 * and one array per level of a pyramid, "0" (the volume) and "1", "2", ...
 * (each the 2 x 2 x 2 average of the one before), chunked (regular grid,
 * chunk keys "c/Z/Y/X"), each chunk the "bytes" codec (the host's byte
 * order) then "zstd" (level 3). docs/file-formats.md, "OME-Zarr".
 *
 * Writing: images arrive in any order; the images of one chunk row (the
 * chunks that share their z range) wait in memory until the row is whole,
 * then its chunks are compressed (OpenMP over the chunks) and written, and
 * the row's 2 x 2 x 2 averages go to the next level as its images, which
 * fill that level's rows the same way. Everything is written into a
 * temporary directory beside the target, the metadata last, renamed onto
 * the target when complete (an existing target kept unless overwrite).
 * Not resumable: the rows still in memory would be lost.
 *
 * Reading: the first dataset of the multiscales (or an array's own
 * zarr.json), data types float32, uint16 and float16, codecs bytes (either
 * byte order) and zstd; a missing chunk is the fill value. */
#include "io/io_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define ZARR_MAX_LEVELS 16
#define ZARR_ZSTD_LEVEL 3

static int64_t g_chunk = 64, g_min_side = 64;

void ctr__zarr_set_layout(int64_t chunk, int64_t min_side) {
  g_chunk = chunk >= 2 ? chunk & ~(int64_t)1 : 64;
  g_min_side = min_side >= 1 ? min_side : 64;
}

static const char *zarr_dtype_name(ctr_dtype d) {
  return d == CTR_DTYPE_UINT16 ? "uint16" : d == CTR_DTYPE_FLOAT16 ? "float16" : "float32";
}

static double get_value(const unsigned char *p, ctr_dtype d) {
  if (d == CTR_DTYPE_FLOAT32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  uint16_t u;
  memcpy(&u, p, 2);
  return d == CTR_DTYPE_UINT16 ? (double)u : (double)ctr__half_to_float(u);
}

static void put_value(unsigned char *p, ctr_dtype d, double v) {
  if (d == CTR_DTYPE_FLOAT32) {
    const float f = (float)v;
    memcpy(p, &f, 4);
    return;
  }
  const uint16_t u = d == CTR_DTYPE_UINT16 ? (uint16_t)floor(v + 0.5) : ctr__float_to_half((float)v);
  memcpy(p, &u, 2);
}

/* rm -r of a temporary tree (a failure leaves a temporary: not reported). */
static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

static void remove_tree(const char *path) {
  if (path) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static ctr_status make_dir(const char *path) {
  if (mkdir(path, 0777) == 0 || errno == EEXIST) return CTR_OK;
  CTR_FAIL(CTR_E_IO, "cannot create the directory '%s': %s", path, strerror(errno));
}

/* ---- Writing ------------------------------------------------------------ */

typedef struct level {
  int64_t n[3], c[3];    /* sizes and chunk shape: z, y, x */
  int64_t rows;          /* chunk rows along z */
  unsigned char **buf;   /* per row: its images, allocated when the first arrives */
  int64_t *filled;       /* per row: images present */
  unsigned char *have;   /* per image */
  unsigned char *done;   /* per row: its chunks written */
} level;

typedef struct zarr_out {
  char *tmp; /* the temporary directory ("<path>.partial" when resumable) */
  int resumed; /* reopened by a resumed run: images of complete rows are on disk already */
  unsigned char *rb; /* read_back: one decoded row of level 0 */
  int64_t rb_row;    /* the row in rb (-1: none) */
  int nlevels;
  level lv[ZARR_MAX_LEVELS];
  size_t es;
  ctr_dtype dtype;
} zarr_out;

/* The pyramid of a volume: levels while the last one's smallest side is at
 * least g_min_side (and the last is more than one voxel). */
static void plan_levels(const ctr_stack_info *info, zarr_out *o) {
  int64_t n[3] = {info->count, info->height, info->width};
  for (int l = 0; l < ZARR_MAX_LEVELS; l++) {
    level *v = &o->lv[l];
    for (int a = 0; a < 3; a++) {
      v->n[a] = n[a];
      v->c[a] = n[a] < g_chunk ? n[a] : g_chunk;
    }
    v->rows = (n[0] + v->c[0] - 1) / v->c[0];
    o->nlevels = l + 1;
    int64_t least = n[0] < n[1] ? n[0] : n[1];
    least = least < n[2] ? least : n[2];
    if (least < g_min_side || (n[0] == 1 && n[1] == 1 && n[2] == 1)) break;
    for (int a = 0; a < 3; a++) n[a] = (n[a] + 1) / 2;
  }
}

/* Rows of chunks a level holds at once: one per stream writing in order,
 * and one more per further stream (a row where two streams meet waits for
 * both), at most its rows. */
uint64_t ctr__zarr_writer_bytes(int64_t nx, int64_t ny, int64_t nz, ctr_dtype d, int streams) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = nx;
  info.height = ny;
  info.count = nz;
  zarr_out o;
  memset(&o, 0, sizeof o);
  plan_levels(&info, &o);
  const uint64_t es = ctr_dtype_size(d);
  const int64_t held = 2 * (int64_t)streams - 1;
  uint64_t bytes = 0;
  for (int l = 0; l < o.nlevels; l++) {
    const level *v = &o.lv[l];
    const int64_t rows = v->rows < held ? v->rows : held;
    bytes += (uint64_t)rows * (uint64_t)v->c[0] * (uint64_t)v->n[1] * (uint64_t)v->n[2] * es;
    if (l > 0) bytes += (uint64_t)v->n[1] * (uint64_t)v->n[2] * es; /* a downsampled image */
  }
  /* each thread's chunk and its compressed copy while a row is written */
  const uint64_t cb = (uint64_t)(o.lv[0].c[0] * o.lv[0].c[1] * o.lv[0].c[2]) * es;
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  return bytes + (uint64_t)threads * (cb + ZSTD_compressBound((size_t)cb));
}

static size_t slice_bytes(const zarr_out *o, const level *v) {
  return (size_t)v->n[1] * (size_t)v->n[2] * o->es;
}

static int64_t row_images(const level *v, int64_t r) {
  const int64_t z0 = r * v->c[0];
  return v->n[0] - z0 < v->c[0] ? v->n[0] - z0 : v->c[0];
}

static void zarr_release(ctr_stack_writer *w, int remove) {
  zarr_out *o = w->impl;
  if (!o) return;
  for (int l = 0; l < o->nlevels; l++) {
    level *v = &o->lv[l];
    for (int64_t r = 0; v->buf && r < v->rows; r++) free(v->buf[r]);
    free(v->buf);
    free(v->filled);
    free(v->have);
    free(v->done);
  }
  if (remove && o->tmp) remove_tree(o->tmp);
  free(o->tmp);
  free(o->rb);
  free(o);
  w->impl = NULL;
}

static void zarr_abort(ctr_stack_writer *w) { zarr_release(w, 1); }

/* Chunk (r, j, i) of level l from its row's images into `raw` (the whole
 * chunk shape, zero beyond the volume's edge), then compressed into `z`. */
static void gather_chunk(const zarr_out *o, const level *v, int64_t r, int64_t j, int64_t i,
                         unsigned char *raw) {
  const size_t es = o->es, cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * es;
  memset(raw, 0, cb);
  const int64_t k = row_images(v, r);
  const int64_t ny = v->n[1] - j * v->c[1] < v->c[1] ? v->n[1] - j * v->c[1] : v->c[1];
  const int64_t nx = v->n[2] - i * v->c[2] < v->c[2] ? v->n[2] - i * v->c[2] : v->c[2];
  const unsigned char *src = v->buf[r];
  for (int64_t z = 0; z < k; z++)
    for (int64_t y = 0; y < ny; y++)
      memcpy(raw + ((size_t)(z * v->c[1] + y) * (size_t)v->c[2]) * es,
             src + ((size_t)z * (size_t)v->n[1] * (size_t)v->n[2] +
                    (size_t)(j * v->c[1] + y) * (size_t)v->n[2] + (size_t)(i * v->c[2])) * es,
             (size_t)nx * es);
}

static ctr_status write_chunk(const char *dir, const zarr_out *o, const level *v, int64_t r,
                              int64_t j, int64_t i, unsigned char *raw, unsigned char *z,
                              size_t zcap) {
  const size_t cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * o->es;
  gather_chunk(o, v, r, j, i, raw);
  const size_t zn = ZSTD_compress(z, zcap, raw, cb, ZARR_ZSTD_LEVEL);
  char *name = ctr__io_sprintf("%s/%lld", dir, (long long)i);
  if (!name) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = CTR_OK;
  if (ZSTD_isError(zn)) {
    st = ctr__error_set(CTR_E_INTERNAL, "cannot compress chunk '%s': %s", name,
                        ZSTD_getErrorName(zn));
  } else {
    const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      st = ctr__error_set(CTR_E_IO, "cannot create chunk '%s': %s", name, strerror(errno));
    } else {
      st = ctr__pwrite_full(fd, z, zn, 0, name);
      if (close(fd) != 0 && st == CTR_OK)
        st = ctr__error_set(CTR_E_IO, "cannot close chunk '%s': %s", name, strerror(errno));
    }
  }
  free(name);
  return st;
}

/* Writes the chunks of row r of level l (OpenMP over them). */
static ctr_status write_row(zarr_out *o, int l, int64_t r) {
  const level *v = &o->lv[l];
  const int64_t cy = (v->n[1] + v->c[1] - 1) / v->c[1], cx = (v->n[2] + v->c[2] - 1) / v->c[2];
  char *dir = ctr__io_sprintf("%s/%d/c/%lld", o->tmp, l, (long long)r);
  if (!dir) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = make_dir(dir);
  char **dirs = st == CTR_OK ? ctr__calloc((size_t)cy, sizeof *dirs, "chunk directories") : NULL;
  if (st == CTR_OK && !dirs) st = CTR_E_OUT_OF_MEMORY;
  for (int64_t j = 0; st == CTR_OK && j < cy; j++) {
    dirs[j] = ctr__io_sprintf("%s/%lld", dir, (long long)j);
    st = dirs[j] ? make_dir(dirs[j]) : CTR_E_OUT_OF_MEMORY;
  }
  free(dir);
  ctr_status err = st;
  char detail[1024] = "";
  const size_t cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * o->es;
  const size_t zcap = ZSTD_compressBound(cb);
  if (err == CTR_OK) {
#pragma omp parallel
    {
      unsigned char *raw = malloc(cb), *z = malloc(zcap);
#pragma omp for schedule(dynamic)
      for (int64_t c = 0; c < cy * cx; c++) {
        ctr_status s;
        if (err != CTR_OK) continue;
        if (!raw || !z)
          s = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %zu bytes for a chunk", cb);
        else
          s = write_chunk(dirs[c / cx], o, v, r, c / cx, c % cx, raw, z, zcap);
        if (s != CTR_OK) {
#pragma omp critical(ctr_zarr_error)
          if (err == CTR_OK) {
            err = s;
            snprintf(detail, sizeof detail, "%s", ctr_error_detail());
          }
        }
      }
      free(raw);
      free(z);
    }
    if (err != CTR_OK) ctr__error_set(err, "%s", detail);
  }
  for (int64_t j = 0; dirs && j < cy; j++) free(dirs[j]);
  free(dirs);
  return err;
}

static ctr_status put_images(ctr_stack_writer *w, int l, int64_t first, int64_t n,
                             const unsigned char *src);

/* The 2 x 2 x 2 means of row r of level l (its images in v->buf[r]) into
 * the next level. */
static ctr_status feed_next(ctr_stack_writer *w, int l, int64_t r) {
  zarr_out *o = w->impl;
  level *v = &o->lv[l];
  if (l + 1 < o->nlevels) {
    const level *u = &o->lv[l + 1];
    const int64_t z0 = r * v->c[0], k = row_images(v, r);
    const size_t sb = slice_bytes(o, u), es = o->es;
    const int64_t ny = v->n[1], nx = v->n[2];
    unsigned char *out = ctr__malloc(sb, "a downsampled image");
    if (!out) return CTR_E_OUT_OF_MEMORY;
    ctr_status st = CTR_OK;
    for (int64_t zz = z0 / 2; st == CTR_OK && zz < (z0 + k + 1) / 2; zz++) {
      const unsigned char *s = v->buf[r] + (size_t)(2 * zz - z0) * slice_bytes(o, v);
      const int64_t dz = 2 * zz + 1 < z0 + k ? 2 : 1;
#pragma omp parallel for schedule(static)
      for (int64_t y = 0; y < u->n[1]; y++)
        for (int64_t x = 0; x < u->n[2]; x++) {
          double sum = 0.0;
          int cnt = 0;
          for (int64_t a = 0; a < dz; a++)
            for (int64_t b = 2 * y; b < 2 * y + 2 && b < ny; b++)
              for (int64_t c = 2 * x; c < 2 * x + 2 && c < nx; c++, cnt++)
                sum += get_value(s + ((size_t)a * (size_t)(ny * nx) + (size_t)(b * nx + c)) * es,
                                 o->dtype);
          put_value(out + (size_t)(y * u->n[2] + x) * es, o->dtype, sum / cnt);
        }
      st = put_images(w, l + 1, zz, 1, out);
    }
    free(out);
    CTR_CHECK(st);
  }
  return CTR_OK;
}

/* Row r of level l is whole: its chunks go to disk and its averages to the
 * next level; its images are freed. */
static ctr_status finish_row(ctr_stack_writer *w, int l, int64_t r) {
  zarr_out *o = w->impl;
  level *v = &o->lv[l];
  CTR_CHECK(write_row(o, l, r));
  CTR_CHECK(feed_next(w, l, r));
  free(v->buf[r]);
  v->buf[r] = NULL;
  v->done[r] = 1;
  return CTR_OK;
}

static ctr_status put_images(ctr_stack_writer *w, int l, int64_t first, int64_t n,
                             const unsigned char *src) {
  zarr_out *o = w->impl;
  level *v = &o->lv[l];
  const size_t sb = slice_bytes(o, v);
  for (int64_t i = 0; i < n; i++) {
    const int64_t z = first + i, r = z / v->c[0];
    if (v->done[r]) continue; /* on disk already (a resumed run computes its images again) */
    if (!v->buf[r]) {
      v->buf[r] = ctr__malloc(sb * (size_t)row_images(v, r), "a row of OME-Zarr chunks");
      if (!v->buf[r]) return CTR_E_OUT_OF_MEMORY;
    }
    memcpy(v->buf[r] + (size_t)(z - r * v->c[0]) * sb, src + (size_t)i * sb, sb);
    if (!v->have[z]) {
      v->have[z] = 1;
      if (++v->filled[r] == row_images(v, r)) CTR_CHECK(finish_row(w, l, r));
    }
  }
  return CTR_OK;
}

static ctr_status zarr_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  zarr_out *o = w->impl;
  const level *v = &o->lv[0];
  if (o->rb) { /* the resume's checks are over: the planned rows only from now on */
    free(o->rb);
    o->rb = NULL;
    o->rb_row = -1;
  }
  for (int64_t z = first; !o->resumed && z < first + n; z++)
    if (v->done[z / v->c[0]])
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "'%s': image %lld was written already and its chunks are complete: an OME-Zarr "
               "image is written once", w->path, (long long)z);
  return put_images(w, 0, first, n, buf);
}

/* ---- Metadata ----------------------------------------------------------- */

static cJSON *int_array(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

static cJSON *double_array(const double *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
  return a;
}

static cJSON *named(const char *name, cJSON *configuration) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  if (configuration) cJSON_AddItemToObject(o, "configuration", configuration);
  return o;
}

static cJSON *array_json(const zarr_out *o, const level *v) {
  cJSON *j = cJSON_CreateObject(), *cfg;
  cJSON_AddNumberToObject(j, "zarr_format", 3);
  cJSON_AddStringToObject(j, "node_type", "array");
  cJSON_AddItemToObject(j, "shape", int_array(v->n, 3));
  cJSON_AddStringToObject(j, "data_type", zarr_dtype_name(o->dtype));
  cfg = cJSON_CreateObject();
  cJSON_AddItemToObject(cfg, "chunk_shape", int_array(v->c, 3));
  cJSON_AddItemToObject(j, "chunk_grid", named("regular", cfg));
  cfg = cJSON_CreateObject();
  cJSON_AddStringToObject(cfg, "separator", "/");
  cJSON_AddItemToObject(j, "chunk_key_encoding", named("default", cfg));
  cJSON_AddNumberToObject(j, "fill_value", 0);
  cJSON *codecs = cJSON_CreateArray();
  cfg = cJSON_CreateObject();
  cJSON_AddStringToObject(cfg, "endian", ctr__host_is_little_endian() ? "little" : "big");
  cJSON_AddItemToArray(codecs, named("bytes", cfg));
  cfg = cJSON_CreateObject();
  cJSON_AddNumberToObject(cfg, "level", ZARR_ZSTD_LEVEL);
  cJSON_AddBoolToObject(cfg, "checksum", 0);
  cJSON_AddItemToArray(codecs, named("zstd", cfg));
  cJSON_AddItemToObject(j, "codecs", codecs);
  cJSON_AddItemToObject(j, "attributes", cJSON_CreateObject());
  cJSON *dims = cJSON_CreateArray();
  static const char *axes[3] = {"z", "y", "x"};
  for (int a = 0; a < 3; a++) cJSON_AddItemToArray(dims, cJSON_CreateString(axes[a]));
  cJSON_AddItemToObject(j, "dimension_names", dims);
  return j;
}

static cJSON *group_json(const ctr_stack_writer *w, const zarr_out *o) {
  static const char *axes[3] = {"z", "y", "x"};
  /* z, y, x: the stack's spacing and origin are x, y, z; unknown spacing 1 */
  double s[3], t0[3];
  for (int a = 0; a < 3; a++) {
    s[a] = w->info.spacing[2 - a] > 0 ? w->info.spacing[2 - a] : 1.0;
    t0[a] = w->info.origin[2 - a];
  }
  cJSON *ms = cJSON_CreateObject();
  const char *base = strrchr(w->path, '/');
  cJSON_AddStringToObject(ms, "name", base ? base + 1 : w->path);
  cJSON *ax = cJSON_CreateArray();
  for (int a = 0; a < 3; a++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", axes[a]);
    cJSON_AddStringToObject(e, "type", "space");
    cJSON_AddStringToObject(e, "unit", "millimeter");
    cJSON_AddItemToArray(ax, e);
  }
  cJSON_AddItemToObject(ms, "axes", ax);
  cJSON *ds = cJSON_CreateArray();
  for (int l = 0; l < o->nlevels; l++) {
    const double f = (double)(1 << l);
    double sl[3], tl[3];
    int moved = 0;
    for (int a = 0; a < 3; a++) {
      sl[a] = s[a] * f;
      tl[a] = t0[a] + (f - 1.0) / 2.0 * s[a]; /* the centre of a level voxel's 2^l voxels */
      moved |= tl[a] != 0.0;
    }
    cJSON *d = cJSON_CreateObject(), *ct = cJSON_CreateArray();
    char path[16];
    snprintf(path, sizeof path, "%d", l);
    cJSON_AddStringToObject(d, "path", path);
    cJSON *sc = cJSON_CreateObject();
    cJSON_AddStringToObject(sc, "type", "scale");
    cJSON_AddItemToObject(sc, "scale", double_array(sl, 3));
    cJSON_AddItemToArray(ct, sc);
    if (moved) {
      cJSON *tr = cJSON_CreateObject();
      cJSON_AddStringToObject(tr, "type", "translation");
      cJSON_AddItemToObject(tr, "translation", double_array(tl, 3));
      cJSON_AddItemToArray(ct, tr);
    }
    cJSON_AddItemToObject(d, "coordinateTransformations", ct);
    cJSON_AddItemToArray(ds, d);
  }
  cJSON_AddItemToObject(ms, "datasets", ds);
  cJSON_AddStringToObject(ms, "type", "average");
  cJSON *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(meta, "description", "each level the 2x2x2 mean of the one before "
                                                "(fewer voxels at an odd edge)");
  cJSON_AddStringToObject(meta, "method", "ctrecon");
  cJSON_AddItemToObject(ms, "metadata", meta);
  cJSON *list = cJSON_CreateArray();
  cJSON_AddItemToArray(list, ms);
  cJSON *ome = cJSON_CreateObject();
  cJSON_AddStringToObject(ome, "version", "0.5");
  cJSON_AddItemToObject(ome, "multiscales", list);
  cJSON *attrs = cJSON_CreateObject();
  cJSON_AddItemToObject(attrs, "ome", ome);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "zarr_format", 3);
  cJSON_AddStringToObject(j, "node_type", "group");
  cJSON_AddItemToObject(j, "attributes", attrs);
  return j;
}

/* Writes (and frees) j as "dir/zarr.json". */
static ctr_status write_json(const char *dir, cJSON *j) {
  char *text = j ? cJSON_Print(j) : NULL;
  cJSON_Delete(j);
  char *name = ctr__io_sprintf("%s/zarr.json", dir);
  ctr_status st = CTR_OK;
  if (!text || !name) {
    st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot build the metadata of '%s'", dir);
  } else {
    const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      st = ctr__error_set(CTR_E_IO, "cannot create '%s': %s", name, strerror(errno));
    } else {
      st = ctr__pwrite_full(fd, text, strlen(text), 0, name);
      if (close(fd) != 0 && st == CTR_OK)
        st = ctr__error_set(CTR_E_IO, "cannot close '%s': %s", name, strerror(errno));
    }
  }
  free(text);
  free(name);
  return st;
}

static atomic_uint g_zarr_counter;

/* A fresh directory "<path>.tmp.<pid>.<n>" (kind: "tmp", "old"). */
static char *fresh_dir(const char *path, const char *kind, int create) {
  for (int attempt = 0; attempt < 100; attempt++) {
    char *d = ctr__io_sprintf("%s.%s.tmp.%ld.%u", path, kind, (long)getpid(),
                              atomic_fetch_add(&g_zarr_counter, 1u));
    if (!d) return NULL;
    if (!create ? !ctr__file_exists(d) : mkdir(d, 0777) == 0) return d;
    const int e = errno;
    free(d);
    if (create && e != EEXIST) {
      ctr__error_set(CTR_E_IO, "cannot create '%s' (a temporary directory beside it): %s", path,
                     strerror(e));
      return NULL;
    }
  }
  ctr__error_set(CTR_E_IO, "cannot find a free temporary name beside '%s'", path);
  return NULL;
}

/* The temporary tree onto `path`: kept where something is there (no_replace),
 * else the old output moved aside and removed after the rename. */
static ctr_status rename_tree(const char *tmp, const char *path, int no_replace) {
  if (no_replace) {
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return CTR_OK;
    if (errno == EEXIST || errno == ENOTEMPTY) return ctr__output_exists(path, path, 1);
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      CTR_FAIL(CTR_E_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
#endif
    if (ctr__file_exists(path)) return ctr__output_exists(path, path, 1);
    if (rename(tmp, path) == 0) return CTR_OK;
    CTR_FAIL(CTR_E_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  }
  char *old = NULL;
  if (ctr__file_exists(path)) {
    old = fresh_dir(path, "old", 0);
    if (!old) return CTR_E_IO;
    if (rename(path, old) != 0) {
      const int e = errno;
      free(old);
      CTR_FAIL(CTR_E_IO, "cannot move the output '%s' aside to replace it: %s", path, strerror(e));
    }
  }
  if (rename(tmp, path) != 0) {
    const int e = errno;
    if (old && rename(old, path) != 0) remove_tree(old);
    free(old);
    CTR_FAIL(CTR_E_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
  }
  if (old) {
    struct stat s;
    if (lstat(old, &s) == 0 && S_ISDIR(s.st_mode)) remove_tree(old);
    else unlink(old);
  }
  free(old);
  return CTR_OK;
}

static ctr_status zarr_commit(ctr_stack_writer *w) {
  zarr_out *o = w->impl;
  ctr_status st = CTR_OK;
  for (int l = 0; l < o->nlevels; l++)
    for (int64_t r = 0; r < o->lv[l].rows; r++)
      if (!o->lv[l].done[r])
        CTR_FAIL_GOTO(st, CTR_E_INTERNAL, "'%s': row %lld of level %d was never completed",
                      w->path, (long long)r, l);
  for (int l = 0; l < o->nlevels && st == CTR_OK; l++) {
    char *dir = ctr__io_sprintf("%s/%d", o->tmp, l);
    st = dir ? write_json(dir, array_json(o, &o->lv[l])) : CTR_E_OUT_OF_MEMORY;
    free(dir);
  }
  if (st == CTR_OK) st = write_json(o->tmp, group_json(w, o));
  if (st == CTR_OK) {
    /* every chunk durable at once before the name is given */
    const int fd = open(o->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0)
      st = ctr__error_set(CTR_E_IO, "cannot flush '%s': %s", o->tmp, strerror(errno));
    if (fd >= 0) close(fd);
  }
  if (st == CTR_OK) st = rename_tree(o->tmp, w->path, !w->overwrite);
  if (st == CTR_OK) {
    free(o->tmp);
    o->tmp = NULL;
    ctr__sync_parent_dir(w->path);
  }
cleanup:
  zarr_release(w, 1);
  return st;
}

/* ---- Resuming ----------------------------------------------------------
 * A resumable writer works in "<path>.partial/": a row of chunks is written
 * when its images are all there, so what an interrupted run leaves is its
 * complete rows (durable at each flush). A resumed writer trusts the rows
 * whose every chunk decodes to a whole chunk, feeds their means to the next
 * level again where that level's row is not complete, and reads back only
 * images of complete rows: a journalled subvolume with images in a row that
 * was still in memory is computed again (journal.c), its images of complete
 * rows skipped. */

/* Chunk (r, j, i) of level l decoded into raw (cb bytes): 0, or -1 when it
 * is missing, short or does not decode to exactly cb bytes. */
static int saved_chunk(const char *tmp, int l, int64_t r, int64_t j, int64_t i, unsigned char *raw,
                      size_t cb) {
  char *name = ctr__io_sprintf("%s/%d/c/%lld/%lld/%lld", tmp, l, (long long)r, (long long)j,
                               (long long)i);
  if (!name) return -1;
  FILE *f = fopen(name, "rb");
  free(name);
  if (!f) return -1;
  unsigned char *z = NULL;
  size_t n = 0, cap = 0;
  int ok = 1;
  while (ok) {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      unsigned char *t = realloc(z, cap);
      if (!t) ok = 0;
      else z = t;
    }
    if (!ok) break;
    const size_t got = fread(z + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  ok = ok && !ferror(f);
  fclose(f);
  if (ok) {
    const unsigned long long size = ZSTD_getFrameContentSize(z, n);
    const size_t d = size == cb ? ZSTD_decompress(raw, cb, z, n) : 0;
    ok = size == cb && !ZSTD_isError(d) && d == cb;
  }
  free(z);
  return ok ? 0 : -1;
}

/* Row r of level l from its chunks into dst (its images, as v->buf holds
 * them): 0, or -1 when a chunk is missing or damaged. */
static int saved_row(const zarr_out *o, int l, int64_t r, unsigned char *dst) {
  const level *v = &o->lv[l];
  const size_t es = o->es, cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * es;
  const int64_t cy = (v->n[1] + v->c[1] - 1) / v->c[1], cx = (v->n[2] + v->c[2] - 1) / v->c[2];
  const int64_t k = row_images(v, r);
  unsigned char *raw = malloc(cb);
  int bad = raw ? 0 : -1;
  for (int64_t j = 0; !bad && j < cy; j++)
    for (int64_t i = 0; !bad && i < cx; i++) {
      bad = saved_chunk(o->tmp, l, r, j, i, raw, cb);
      if (bad || !dst) continue;
      const int64_t ny = v->n[1] - j * v->c[1] < v->c[1] ? v->n[1] - j * v->c[1] : v->c[1];
      const int64_t nx = v->n[2] - i * v->c[2] < v->c[2] ? v->n[2] - i * v->c[2] : v->c[2];
      for (int64_t z = 0; z < k; z++)
        for (int64_t y = 0; y < ny; y++)
          memcpy(dst + ((size_t)z * (size_t)v->n[1] * (size_t)v->n[2] +
                        (size_t)(j * v->c[1] + y) * (size_t)v->n[2] + (size_t)(i * v->c[2])) * es,
                 raw + ((size_t)(z * v->c[1] + y) * (size_t)v->c[2]) * es, (size_t)nx * es);
    }
  free(raw);
  return bad;
}

/* A resumed writer's state from "<path>.partial/": its complete rows, then
 * the next levels' partial rows fed from them again. */
static ctr_status resume_rows(ctr_stack_writer *w) {
  zarr_out *o = w->impl;
  for (int l = 0; l < o->nlevels; l++) {
    level *v = &o->lv[l];
    for (int64_t r = 0; r < v->rows; r++) {
      if (saved_row(o, l, r, NULL) != 0) continue;
      v->done[r] = 1;
      v->filled[r] = row_images(v, r);
      memset(v->have + r * v->c[0], 1, (size_t)v->filled[r]);
    }
  }
  for (int l = 0; l + 1 < o->nlevels; l++) {
    level *v = &o->lv[l];
    const level *u = &o->lv[l + 1];
    for (int64_t r = 0; r < v->rows; r++) {
      if (!v->done[r]) continue;
      const int64_t z0 = r * v->c[0], k = row_images(v, r);
      int needed = 0; /* a row of the next level its means go to is not complete */
      for (int64_t zz = z0 / 2; zz < (z0 + k + 1) / 2; zz++) needed |= !u->done[zz / u->c[0]];
      if (!needed) continue;
      v->buf[r] = ctr__malloc(slice_bytes(o, v) * (size_t)k, "a row of OME-Zarr chunks");
      if (!v->buf[r]) return CTR_E_OUT_OF_MEMORY;
      ctr_status st = CTR_OK;
      if (saved_row(o, l, r, v->buf[r]) == 0) st = feed_next(w, l, r);
      else st = ctr__error_set(CTR_E_IO, "'%s': row %lld of level %d changed while it was resumed",
                               o->tmp, (long long)r, l);
      free(v->buf[r]);
      v->buf[r] = NULL;
      CTR_CHECK(st);
    }
  }
  return CTR_OK;
}

static ctr_status zarr_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf) {
  zarr_out *o = w->impl;
  const level *v = &o->lv[0];
  const size_t sb = slice_bytes(o, v);
  for (int64_t z = first; z < first + n; z++) {
    const int64_t r = z / v->c[0];
    if (!v->done[r])
      CTR_FAIL(CTR_E_IO, "'%s': image %lld lies in a row of chunks (images %lld..%lld) that was "
               "not complete when the run stopped", o->tmp, (long long)z,
               (long long)(r * v->c[0]), (long long)(r * v->c[0] + row_images(v, r) - 1));
    if (o->rb_row != r) {
      if (!o->rb) o->rb = ctr__malloc(sb * (size_t)v->c[0], "a row of OME-Zarr chunks");
      if (!o->rb) return CTR_E_OUT_OF_MEMORY;
      o->rb_row = -1;
      if (saved_row(o, 0, r, o->rb) != 0)
        CTR_FAIL(CTR_E_IO, "'%s': a chunk of row %lld of level 0 is missing or damaged", o->tmp,
                 (long long)r);
      o->rb_row = r;
    }
    memcpy((unsigned char *)buf + (size_t)(z - first) * sb, o->rb + (size_t)(z - r * v->c[0]) * sb,
           sb);
  }
  return CTR_OK;
}

/* The complete rows' chunks durable (a resumed run trusts them). */
static ctr_status zarr_flush(ctr_stack_writer *w) {
  zarr_out *o = w->impl;
  const int fd = open(o->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ctr_status st = CTR_OK;
  if (fd < 0 || syncfs(fd) != 0)
    st = ctr__error_set(CTR_E_IO, "cannot flush '%s': %s", o->tmp, strerror(errno));
  if (fd >= 0) close(fd);
  return st;
}

static void zarr_suspend(ctr_stack_writer *w) { zarr_release(w, 0); }

void ctr__zarr_remove_partial(const char *path, int64_t count) {
  (void)count;
  char *d = ctr__partial_path(path);
  if (d && ctr__file_exists(d)) remove_tree(d);
  free(d);
}

static const ctr__writer_ops zarr_writer_ops = {zarr_write, zarr_commit, zarr_abort,
                                                zarr_flush, zarr_suspend, zarr_read_back};

ctr_status ctr__zarr_create(ctr_stack_writer *w) {
  ctr_status st = CTR_OK;
  zarr_out *o = ctr__calloc(1, sizeof *o, "OME-Zarr writer");
  if (!o) return CTR_E_OUT_OF_MEMORY;
  w->impl = o;
  o->rb_row = -1;
  w->swap = 0; /* the host's order, said in the metadata */
  o->dtype = w->info.dtype;
  o->es = ctr_dtype_size(w->info.dtype);
  plan_levels(&w->info, o);
  for (int l = 0; l < o->nlevels; l++) {
    level *v = &o->lv[l];
    v->buf = ctr__calloc((size_t)v->rows, sizeof *v->buf, "OME-Zarr rows");
    v->filled = ctr__calloc((size_t)v->rows, sizeof *v->filled, "OME-Zarr rows");
    v->done = ctr__calloc((size_t)v->rows, 1, "OME-Zarr rows");
    v->have = ctr__calloc((size_t)v->n[0], 1, "OME-Zarr images");
    if (!v->buf || !v->filled || !v->done || !v->have) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
  }
  if (w->mode == CTR__OUT_TEMP) {
    o->tmp = fresh_dir(w->path, "zarr", 1);
    if (!o->tmp) {
      st = CTR_E_IO;
      goto cleanup;
    }
  } else {
    /* resumable: the fixed "<path>.partial/", kept when suspended */
    char *d = ctr__partial_path(w->path);
    if (!d) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    struct stat sb;
    const int there = stat(d, &sb) == 0;
    if (w->mode == CTR__OUT_PARTIAL_RESUME) {
      if (!there || !S_ISDIR(sb.st_mode)) {
        st = ctr__error_set(CTR_E_IO, "cannot resume '%s': its partial output '%s' is %s", w->path,
                            d, there ? "not a directory" : "missing");
        free(d);
        zarr_release(w, 0);
        return st;
      }
      o->tmp = d;
      o->resumed = 1;
      st = resume_rows(w);
      if (st != CTR_OK) {
        zarr_release(w, 0); /* the partial output stays as it was */
        return st;
      }
      w->ops = &zarr_writer_ops;
      return CTR_OK;
    }
    if (there) remove_tree(d);
    if (mkdir(d, 0777) != 0) {
      st = ctr__error_set(CTR_E_IO, "cannot create '%s' (the partial output of '%s'): %s", d,
                          w->path, strerror(errno));
      free(d);
      goto cleanup;
    }
    o->tmp = d;
  }
  for (int l = 0; l < o->nlevels && st == CTR_OK; l++) {
    char *dir = ctr__io_sprintf("%s/%d", o->tmp, l);
    char *c = ctr__io_sprintf("%s/%d/c", o->tmp, l);
    st = dir && c ? make_dir(dir) : CTR_E_OUT_OF_MEMORY;
    if (st == CTR_OK) st = make_dir(c);
    free(dir);
    free(c);
  }
  if (st != CTR_OK) goto cleanup;
  w->ops = &zarr_writer_ops;
  return CTR_OK;
cleanup:
  zarr_release(w, 1);
  return st;
}

/* ---- Reading ------------------------------------------------------------ */

typedef struct zarr_in {
  char *array;      /* the array's directory */
  char sep;         /* chunk key separator */
  int zstd;         /* 1: chunks are zstd frames */
  int64_t c[3];     /* chunk shape */
  double fill;
  unsigned char fill_bytes[8];
  int64_t cached;   /* the chunk row in `row` (-1: none) */
  unsigned char *row;   /* its images */
  unsigned char *chunk; /* one decoded chunk */
  size_t chunk_bytes;
} zarr_in;

static void zarr_close(ctr_stack_reader *r) {
  zarr_in *in = r->impl;
  if (!in) return;
  free(in->array);
  free(in->row);
  free(in->chunk);
  free(in);
  r->impl = NULL;
}

/* "dir/zarr.json" parsed into *out. */
static ctr_status read_json(const char *dir, cJSON **out) {
  *out = NULL;
  char *name = ctr__io_sprintf("%s/zarr.json", dir), *text = NULL;
  if (!name) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr__file_read_text(name, (int64_t)64 << 20, "Zarr metadata", &text);
  if (st == CTR_OK && !(*out = cJSON_Parse(text)))
    st = ctr__error_set(CTR_E_FORMAT, "'%s' is not JSON (near byte %lld)", name,
                        (long long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0));
  free(text);
  free(name);
  return st;
}

static const char *json_string(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Three numbers of a JSON array (the last three of a longer one) into v. */
static int json_numbers3(const cJSON *a, double v[3]) {
  const int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
  if (n < 3) return 0;
  for (int i = 0; i < 3; i++) {
    const cJSON *e = cJSON_GetArrayItem(a, n - 3 + i);
    if (!cJSON_IsNumber(e)) return 0;
    v[i] = e->valuedouble;
  }
  return 1;
}

/* The group's first multiscales dataset: its path into *ds (malloc'd) and
 * its scale and translation into the stack's spacing and origin (x, y, z). */
static ctr_status read_group(ctr_stack_reader *r, const cJSON *g, char **ds) {
  const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(g, "attributes");
  const cJSON *ome = cJSON_GetObjectItemCaseSensitive(attrs, "ome");
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(ome ? ome : attrs, "multiscales");
  const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ms, 0),
                                                                        "datasets"), 0);
  const char *path = json_string(d0, "path");
  if (!path || !*path || strstr(path, ".."))
    CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json' is a group without an OME-NGFF multiscales dataset: "
             "expected attributes.ome.multiscales[0].datasets[0].path", r->path);
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d0, "coordinateTransformations")) {
    const char *type = json_string(t, "type");
    double v[3];
    if (type && !strcmp(type, "scale") && json_numbers3(cJSON_GetObjectItemCaseSensitive(t, "scale"), v))
      for (int a = 0; a < 3; a++) r->info.spacing[a] = v[2 - a];
    if (type && !strcmp(type, "translation") &&
        json_numbers3(cJSON_GetObjectItemCaseSensitive(t, "translation"), v))
      for (int a = 0; a < 3; a++) r->info.origin[a] = v[2 - a];
  }
  *ds = strdup(path);
  if (!*ds) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy a path");
  return CTR_OK;
}

static ctr_status read_array(ctr_stack_reader *r, zarr_in *in, const cJSON *a) {
  const char *where = in->array;
  const cJSON *zf = cJSON_GetObjectItemCaseSensitive(a, "zarr_format");
  if (!cJSON_IsNumber(zf) || zf->valueint != 3)
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': zarr_format is not 3: ctrecon reads Zarr v3",
             where);
  int64_t shape[3];
  double v[3];
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(a, "shape");
  if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 3 || !json_numbers3(sh, v))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': the shape is not three sizes (z, y, x)", where);
  for (int i = 0; i < 3; i++) shape[i] = (int64_t)v[i];
  const char *dt = json_string(a, "data_type");
  if (dt && !strcmp(dt, "float32")) r->info.dtype = CTR_DTYPE_FLOAT32;
  else if (dt && !strcmp(dt, "uint16")) r->info.dtype = CTR_DTYPE_UINT16;
  else if (dt && !strcmp(dt, "float16")) r->info.dtype = CTR_DTYPE_FLOAT16;
  else
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': data type '%s': expected float32, uint16 or "
             "float16", where, dt ? dt : "(none)");
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(a, "chunk_grid");
  const char *gname = json_string(grid, "name");
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(grid, "configuration"), "chunk_shape");
  if (!gname || strcmp(gname, "regular") || cJSON_GetArraySize(cs) != 3 || !json_numbers3(cs, v))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': expected a regular chunk grid of 3 sizes", where);
  for (int i = 0; i < 3; i++) {
    in->c[i] = (int64_t)v[i];
    if (in->c[i] < 1 || in->c[i] > ((int64_t)1 << 30))
      CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': chunk size %lld", where, (long long)in->c[i]);
  }
  const cJSON *key = cJSON_GetObjectItemCaseSensitive(a, "chunk_key_encoding");
  const char *kname = json_string(key, "name");
  const char *sep = json_string(cJSON_GetObjectItemCaseSensitive(key, "configuration"), "separator");
  if (!kname || strcmp(kname, "default"))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': chunk key encoding '%s': expected default",
             where, kname ? kname : "(none)");
  in->sep = sep && !strcmp(sep, ".") ? '.' : '/';
  int little = 1, nbytes = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(a, "codecs")) {
    const char *name = cJSON_IsString(c) ? c->valuestring : json_string(c, "name");
    const char *endian = json_string(cJSON_GetObjectItemCaseSensitive(c, "configuration"), "endian");
    if (name && !strcmp(name, "bytes") && !nbytes && !in->zstd) {
      little = !endian || strcmp(endian, "big") != 0;
      nbytes = 1;
    } else if (name && !strcmp(name, "zstd") && nbytes && !in->zstd) {
      in->zstd = 1;
    } else {
      CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': codec '%s' is not supported: ctrecon reads "
               "chunks of the codecs bytes, then optionally zstd", where, name ? name : "?");
    }
  }
  if (!nbytes)
    CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': no bytes codec among the codecs", where);
  r->swap = little != ctr__host_is_little_endian();
  const cJSON *fv = cJSON_GetObjectItemCaseSensitive(a, "fill_value");
  in->fill = cJSON_IsNumber(fv) ? fv->valuedouble
             : cJSON_IsString(fv) && !strcmp(fv->valuestring, "NaN") ? NAN
                                                                      : 0.0;
  put_value(in->fill_bytes, r->info.dtype, in->fill);
  if (r->swap) ctr__byteswap(in->fill_bytes, ctr_dtype_size(r->info.dtype), 1);
  r->info.count = shape[0];
  r->info.height = shape[1];
  r->info.width = shape[2];
  CTR_CHECK(ctr__stack_info_check(&r->info, r->path, CTR_E_FORMAT));
  if ((double)in->c[0] * (double)in->c[1] * (double)in->c[2] > (double)((int64_t)1 << 31))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': chunks of %lld x %lld x %lld are too large",
             where, (long long)in->c[0], (long long)in->c[1], (long long)in->c[2]);
  return CTR_OK;
}

/* One chunk (file `name`) into in->chunk: the fill value when missing. */
static ctr_status read_chunk(const ctr_stack_reader *r, zarr_in *in, const char *name) {
  const size_t es = ctr_dtype_size(r->info.dtype), cb = in->chunk_bytes;
  int fd = -1;
  int64_t size = 0;
  if (!ctr__file_exists(name)) {
    for (size_t k = 0; k < cb; k += es) memcpy(in->chunk + k, in->fill_bytes, es);
    return CTR_OK;
  }
  CTR_CHECK(ctr__file_open_read(name, &fd, &size));
  ctr_status st = CTR_OK;
  void *data = NULL;
  if (!in->zstd) {
    if (size != (int64_t)cb)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk '%s' is %lld bytes: expected %zu (truncated "
                    "or corrupt)", name, (long long)size, cb);
    CTR_CHECK_GOTO(st, ctr__pread_full(fd, in->chunk, cb, 0, name));
    goto cleanup;
  }
  data = ctr__malloc(size ? (size_t)size : 1, "a compressed chunk");
  if (!data) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, data, (size_t)size, 0, name));
  const unsigned long long want = ZSTD_getFrameContentSize(data, (size_t)size);
  if (want == ZSTD_CONTENTSIZE_ERROR)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk '%s' (%lld bytes) is not a zstd frame: the "
                  "chunk is corrupt or truncated", name, (long long)size);
  if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != (unsigned long long)cb)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk '%s' holds %llu bytes: expected %zu (a chunk of "
                  "%lld x %lld x %lld %s)", name, want, cb, (long long)in->c[0],
                  (long long)in->c[1], (long long)in->c[2], ctr_dtype_name(r->info.dtype));
  const size_t got = ZSTD_decompress(in->chunk, cb, data, (size_t)size);
  if (ZSTD_isError(got))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk '%s' cannot be decompressed (%s): the chunk is "
                  "corrupt or truncated", name, ZSTD_getErrorName(got));
  if (got != cb)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk '%s' holds %zu bytes: expected %zu (truncated "
                  "or corrupt)", name, got, cb);
cleanup:
  free(data);
  close(fd);
  return st;
}

/* Chunk row `row` into in->row (its images, whole). */
static ctr_status load_row(ctr_stack_reader *r, zarr_in *in, int64_t row) {
  const size_t es = ctr_dtype_size(r->info.dtype);
  const int64_t ny = r->info.height, nx = r->info.width;
  const int64_t z0 = row * in->c[0];
  const int64_t k = r->info.count - z0 < in->c[0] ? r->info.count - z0 : in->c[0];
  const int64_t cy = (ny + in->c[1] - 1) / in->c[1], cx = (nx + in->c[2] - 1) / in->c[2];
  in->cached = -1;
  for (int64_t j = 0; j < cy; j++)
    for (int64_t i = 0; i < cx; i++) {
      char *name = ctr__io_sprintf("%s/c%c%lld%c%lld%c%lld", in->array, in->sep, (long long)row,
                                   in->sep, (long long)j, in->sep, (long long)i);
      if (!name) return CTR_E_OUT_OF_MEMORY;
      const ctr_status st = read_chunk(r, in, name);
      free(name);
      CTR_CHECK(st);
      const int64_t h = ny - j * in->c[1] < in->c[1] ? ny - j * in->c[1] : in->c[1];
      const int64_t w = nx - i * in->c[2] < in->c[2] ? nx - i * in->c[2] : in->c[2];
      for (int64_t z = 0; z < k; z++)
        for (int64_t y = 0; y < h; y++)
          memcpy(in->row + ((size_t)z * (size_t)(ny * nx) + (size_t)((j * in->c[1] + y) * nx) +
                            (size_t)(i * in->c[2])) * es,
                 in->chunk + (size_t)((z * in->c[1] + y) * in->c[2]) * es, (size_t)w * es);
    }
  in->cached = row;
  return CTR_OK;
}

static ctr_status zarr_read(ctr_stack_reader *r, int64_t first, int64_t n, void *buf) {
  zarr_in *in = r->impl;
  const size_t img = ctr__image_bytes(&r->info);
  for (int64_t z = first; z < first + n; z++) {
    const int64_t row = z / in->c[0];
    if (row != in->cached) CTR_CHECK(load_row(r, in, row));
    memcpy((char *)buf + (size_t)(z - first) * img, in->row + (size_t)(z - row * in->c[0]) * img,
           img);
  }
  return CTR_OK;
}

static const ctr__reader_ops zarr_reader_ops = {zarr_read, zarr_close, NULL, NULL, NULL};

ctr_status ctr__zarr_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset) {
  (void)hint, (void)raw_offset; /* the format table's common signature: raw's */
  ctr_status st = CTR_OK;
  cJSON *top = NULL, *arr = NULL;
  char *ds = NULL;
  zarr_in *in = ctr__calloc(1, sizeof *in, "OME-Zarr reader");
  if (!in) return CTR_E_OUT_OF_MEMORY;
  r->impl = in;
  in->cached = -1;
  struct stat s;
  if (stat(r->path, &s) != 0 || !S_ISDIR(s.st_mode))
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot open the OME-Zarr '%s': %s", r->path,
                  stat(r->path, &s) != 0 ? strerror(errno) : "not a directory");
  CTR_CHECK_GOTO(st, read_json(r->path, &top));
  const char *node = json_string(top, "node_type");
  if (node && !strcmp(node, "group")) {
    CTR_CHECK_GOTO(st, read_group(r, top, &ds));
    in->array = ctr__io_sprintf("%s/%s", r->path, ds);
    if (!in->array) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    CTR_CHECK_GOTO(st, read_json(in->array, &arr));
  } else if (node && !strcmp(node, "array")) {
    in->array = strdup(r->path);
    if (!in->array) {
      st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot copy a path");
      goto cleanup;
    }
  } else {
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s/zarr.json': node_type is neither group nor array",
                  r->path);
  }
  CTR_CHECK_GOTO(st, read_array(r, in, arr ? arr : top));
  in->chunk_bytes = (size_t)(in->c[0] * in->c[1] * in->c[2]) * ctr_dtype_size(r->info.dtype);
  in->chunk = ctr__malloc(in->chunk_bytes, "a Zarr chunk");
  in->row = ctr__malloc(ctr__image_bytes(&r->info) *
                            (size_t)(in->c[0] < r->info.count ? in->c[0] : r->info.count),
                        "a row of Zarr chunks");
  if (!in->chunk || !in->row) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  r->ops = &zarr_reader_ops;
cleanup:
  cJSON_Delete(top);
  cJSON_Delete(arr);
  free(ds);
  if (st != CTR_OK) zarr_close(r);
  return st;
}

/* OME-Zarr: a volume as a Zarr v3 hierarchy (OME-NGFF 0.5) in a directory
 * "NAME.zarr/": the group's zarr.json with the "ome" attributes (axes z, y,
 * x in millimetres, one dataset per level with its scale and translation),
 * and one array per level of a pyramid, "0" (the volume) and "1", "2", ...
 * (each the 2 x 2 x 2 average of the one before), chunked (regular grid,
 * chunk keys "c/Z/Y/X"), each chunk the "bytes" codec (the host's byte
 * order) then "zstd" (level 3); a large level (or any, as the caller
 * says) in shards ("sharding_indexed": a file of many inner chunks, then
 * their index of (offset, nbytes) and its CRC-32C). docs/file-formats.md,
 * "OME-Zarr".
 *
 * Writing: images arrive in any order; the images of one row (the chunks,
 * or shards, that share their z range) wait in memory until the row is whole,
 * then its chunks are compressed (OpenMP over the chunks) and written, and
 * the row's 2 x 2 x 2 averages go to the next level as its images, which
 * fill that level's rows the same way. Everything is written into a
 * temporary directory beside the target, the metadata last, renamed onto
 * the target when complete (an existing target kept unless overwrite).
 * Not resumable: the rows still in memory would be lost.
 *
 * Reading: the first dataset of the multiscales (or an array's own
 * zarr.json), data types float32, uint16 and float16, codecs bytes (either
 * byte order) and zstd, sharded or not; a missing chunk is the fill value. */
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
/* zstd's level: 3 for level 0; 1 for the pyramid's levels, whose 2 x 2 x 2 means level
 * 3 compressed 2.6x slower than level 0's voxels for the same ratio (0.740 against 0.741
 * at level 1; a disc phantom with 1 % noise, bench_zarr's volume), where level 1 runs at
 * level 0's speed: the pyramid's share of a write then stays near its share of the
 * voxels. */
#define ZARR_ZSTD_LEVEL 3
#define ZARR_ZSTD_LEVEL_PYRAMID 1
/* The default sharding: a level of more than ZARR_SHARD_ABOVE chunks is
 * written in shards of 1 x ZARR_SHARD_SIDE x ZARR_SHARD_SIDE chunks (z, y,
 * x). */
#define ZARR_SHARD_ABOVE 512
#define ZARR_SHARD_SIDE 8
#define ZARR_EMPTY UINT64_MAX /* an absent inner chunk's offset and size */

static int64_t g_chunk = 64, g_min_side = 64, g_shard = 0;

void ctr__zarr_set_layout(int64_t chunk, int64_t min_side, int64_t shard) {
  g_chunk = chunk >= 2 ? chunk & ~(int64_t)1 : 64;
  g_min_side = min_side >= 1 ? min_side : 64;
  g_shard = shard >= 1 ? shard : shard < 0 ? -1 : 0;
}

/* CRC-32C (Castagnoli et al. 1993, reflected polynomial 0x82F63B78; the
 * check of RFC 3720, Satran et al. 2004), bit by
 * bit: only shard indexes (16 bytes a chunk) are checksummed. */
uint32_t ctr__crc32c(const void *data, size_t n) {
  const unsigned char *p = data;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int b = 0; b < 8; b++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The index of the shard file `name` (open as fd, `size` bytes) of nch
 * inner chunks into idx (2 nch: offset, nbytes; ZARR_EMPTY both for an
 * absent chunk). at_end: the index is the file's last bytes (else its
 * first); crc: a little-endian CRC-32C of the index follows it. CTR_E_FORMAT
 * naming the file when it is too short, the CRC differs or an entry lies
 * outside the file. */
static ctr_status shard_index(int fd, int64_t size, const char *name, int64_t nch, int at_end,
                              int crc, uint64_t *idx) {
  const size_t ib = (size_t)nch * 16, tb = ib + (crc ? 4 : 0);
  if (size < (int64_t)tb)
    CTR_FAIL(CTR_E_FORMAT, "Zarr shard '%s' is %lld bytes: too short for the index of its %lld "
             "chunks (%zu bytes): the shard is corrupt or truncated", name, (long long)size,
             (long long)nch, tb);
  unsigned char *b = ctr__malloc(tb, "a shard index");
  if (!b) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr__pread_full(fd, b, tb, at_end ? size - (int64_t)tb : 0, name);
  if (st == CTR_OK && crc) {
    const uint32_t want = ctr__crc32c(b, ib);
    const uint32_t got = (uint32_t)b[ib] | (uint32_t)b[ib + 1] << 8 | (uint32_t)b[ib + 2] << 16 |
                         (uint32_t)b[ib + 3] << 24;
    if (got != want)
      st = ctr__error_set(CTR_E_FORMAT, "Zarr shard '%s': the CRC-32C of its index is %08x, "
                          "the index stores %08x: the shard is corrupt", name, want, got);
  }
  const uint64_t lo = at_end ? 0 : tb, hi = at_end ? (uint64_t)size - tb : (uint64_t)size;
  for (int64_t e = 0; st == CTR_OK && e < nch; e++) {
    idx[2 * e] = get_le64(b + 16 * e);
    idx[2 * e + 1] = get_le64(b + 16 * e + 8);
    const uint64_t at = idx[2 * e], nb = idx[2 * e + 1];
    if (at == ZARR_EMPTY && nb == ZARR_EMPTY) continue;
    if (at < lo || at > hi || nb > hi - at)
      st = ctr__error_set(CTR_E_FORMAT, "Zarr shard '%s': its index puts chunk %lld at bytes "
                          "%llu (%llu bytes), outside the chunk data (bytes %llu..%llu): the "
                          "shard is corrupt", name, (long long)e, (unsigned long long)at,
                          (unsigned long long)nb, (unsigned long long)lo,
                          (unsigned long long)hi);
  }
  free(b);
  return st;
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
  int64_t s[3];          /* shard shape (a multiple of c; c itself when not sharded) */
  int sharded;           /* 1: shard files of s, each of (s / c) inner chunks and an index */
  int64_t rows;          /* rows of shards (of chunks when not sharded) along z */
  unsigned char **buf;   /* per row: its images, allocated when the first arrives */
  unsigned char *spare;  /* a written row's buffer (s[0] images), kept for the next row: its
                          * pages faulted in once, not once a row */
  int64_t *filled;       /* per row: images present */
  unsigned char *have;   /* per image */
  unsigned char *done;   /* per row: its chunks written */
} level;

typedef struct zarr_out {
  char *tmp; /* the temporary directory ("<path>.partial" when resumable) */
  int resumed; /* reopened by a resumed run: images of complete rows are on disk already */
  int ready;   /* zarr_prepare has run */
  unsigned char *rb; /* read_back: one decoded row of level 0 */
  int64_t rb_row;    /* the row in rb (-1: none) */
  int nlevels;
  level lv[ZARR_MAX_LEVELS];
  size_t es;
  ctr_dtype dtype;
} zarr_out;

/* The pyramid of a volume: levels while the last one's smallest side is at
 * least g_min_side (and the last is more than one voxel). `shard` (as
 * ctr_tuning.zarr_shard; 0: g_shard, the tests' layout, in its place): each
 * level in shards of that many chunks a side (fewer where its grid has
 * fewer) when >= 1, none when -1, and when 0 shards of 1 x ZARR_SHARD_SIDE x
 * ZARR_SHARD_SIDE chunks on a level of more than ZARR_SHARD_ABOVE chunks. A "row" is a row
 * of shards (of chunks when not sharded). */
static void plan_levels(const ctr_stack_info *info, zarr_out *o, int64_t shard) {
  if (shard == 0) shard = g_shard;
  int64_t n[3] = {info->count, info->height, info->width};
  for (int l = 0; l < ZARR_MAX_LEVELS; l++) {
    level *v = &o->lv[l];
    for (int a = 0; a < 3; a++) {
      v->n[a] = n[a];
      v->c[a] = n[a] < g_chunk ? n[a] : g_chunk;
    }
    int64_t g[3];
    for (int a = 0; a < 3; a++) g[a] = (n[a] + v->c[a] - 1) / v->c[a];
    /* the default shards are one chunk deep: a row of them holds as many
     * slices as a row of chunks, so sharding costs no memory */
    const int deflt = shard == 0 && g[0] * g[1] * g[2] > ZARR_SHARD_ABOVE;
    const int64_t side[3] = {deflt ? 1 : shard, deflt ? ZARR_SHARD_SIDE : shard,
                             deflt ? ZARR_SHARD_SIDE : shard};
    v->sharded = deflt || shard >= 1;
    for (int a = 0; a < 3; a++)
      v->s[a] = v->c[a] * (!v->sharded ? 1 : side[a] < g[a] ? side[a] : g[a]);
    v->rows = (n[0] + v->s[0] - 1) / v->s[0];
    o->nlevels = l + 1;
    int64_t least = n[0] < n[1] ? n[0] : n[1];
    least = least < n[2] ? least : n[2];
    if (least < g_min_side || (n[0] == 1 && n[1] == 1 && n[2] == 1)) break;
    for (int a = 0; a < 3; a++) n[a] = (n[a] + 1) / 2;
  }
}

static int zarr_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
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
  plan_levels(&info, &o, 0);
  const uint64_t es = ctr_dtype_size(d);
  const int64_t held = 2 * (int64_t)streams - 1;
  const int threads = zarr_threads();
  uint64_t bytes = 0;
  for (int l = 0; l < o.nlevels; l++) {
    const level *v = &o.lv[l];
    const int64_t rows = v->rows < held ? v->rows : held;
    const uint64_t row = (uint64_t)v->s[0] * (uint64_t)v->n[1] * (uint64_t)v->n[2] * es;
    bytes += (uint64_t)rows * row;
    if (l > 0) bytes += (uint64_t)v->n[1] * (uint64_t)v->n[2] * es; /* a downsampled image */
    const int64_t shards = ((v->n[1] + v->s[1] - 1) / v->s[1]) * ((v->n[2] + v->s[2] - 1) / v->s[2]);
    if (v->sharded && shards < threads) /* a row's chunks compressed before its shards */
      bytes += ZSTD_compressBound((size_t)row);
  }
  /* each thread's chunk and its compressed copy while a row is written */
  const uint64_t cb = (uint64_t)(o.lv[0].c[0] * o.lv[0].c[1] * o.lv[0].c[2]) * es;
  return bytes + (uint64_t)threads * (cb + ZSTD_compressBound((size_t)cb));
}

static size_t slice_bytes(const zarr_out *o, const level *v) {
  return (size_t)v->n[1] * (size_t)v->n[2] * o->es;
}

/* Level v's zstd level: ZARR_ZSTD_LEVEL at level 0, ZARR_ZSTD_LEVEL_PYRAMID above. */
static int zstd_level(const zarr_out *o, const level *v) {
  return v == &o->lv[0] ? ZARR_ZSTD_LEVEL : ZARR_ZSTD_LEVEL_PYRAMID;
}

static int64_t row_images(const level *v, int64_t r) {
  const int64_t z0 = r * v->s[0];
  return v->n[0] - z0 < v->s[0] ? v->n[0] - z0 : v->s[0];
}

static void zarr_release(ctr_stack_writer *w, int remove) {
  zarr_out *o = w->impl;
  if (!o) return;
  for (int l = 0; l < o->nlevels; l++) {
    level *v = &o->lv[l];
    for (int64_t r = 0; v->buf && r < v->rows; r++) free(v->buf[r]);
    free(v->buf);
    free(v->spare);
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

/* Chunk (q, j, i) of row r of level l (q: the chunk's z index within the
 * row) from the row's images into `raw` (the whole chunk shape, zero beyond
 * the volume's edge). */
static void gather_chunk(const zarr_out *o, const level *v, int64_t r, int64_t q, int64_t j,
                         int64_t i, unsigned char *raw) {
  const size_t es = o->es, cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * es;
  memset(raw, 0, cb);
  const int64_t rest = row_images(v, r) - q * v->c[0];
  const int64_t k = rest < v->c[0] ? rest : v->c[0];
  const int64_t ny = v->n[1] - j * v->c[1] < v->c[1] ? v->n[1] - j * v->c[1] : v->c[1];
  const int64_t nx = v->n[2] - i * v->c[2] < v->c[2] ? v->n[2] - i * v->c[2] : v->c[2];
  const unsigned char *src = v->buf[r] + (size_t)(q * v->c[0]) * slice_bytes(o, v);
  for (int64_t z = 0; z < k; z++)
    for (int64_t y = 0; y < ny; y++)
      memcpy(raw + ((size_t)(z * v->c[1] + y) * (size_t)v->c[2]) * es,
             src + ((size_t)z * (size_t)v->n[1] * (size_t)v->n[2] +
                    (size_t)(j * v->c[1] + y) * (size_t)v->n[2] + (size_t)(i * v->c[2])) * es,
             (size_t)nx * es);
}

/* `size` bytes of `data` into the new file `name`. */
static ctr_status write_file(const char *name, const void *data, size_t size, const char *what) {
  const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) CTR_FAIL(CTR_E_IO, "cannot create %s '%s': %s", what, name, strerror(errno));
  ctr_status st = ctr__pwrite_full(fd, data, size, 0, name);
  if (st == CTR_OK) ctr__start_writeback(fd); /* the disk takes it while the next compress */
  if (close(fd) != 0 && st == CTR_OK)
    st = ctr__error_set(CTR_E_IO, "cannot close %s '%s': %s", what, name, strerror(errno));
  return st;
}

/* Chunk (q, j, i) of row r compressed into z (zcap bytes): its size, or 0
 * with the error raised. */
static size_t compress_chunk(const zarr_out *o, const level *v, int64_t r, int64_t q, int64_t j,
                             int64_t i, unsigned char *raw, unsigned char *z, size_t zcap) {
  const size_t cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * o->es;
  gather_chunk(o, v, r, q, j, i, raw);
  const size_t zn = ZSTD_compress(z, zcap, raw, cb, zstd_level(o, v));
  if (!ZSTD_isError(zn)) return zn;
  ctr__error_set(CTR_E_INTERNAL, "cannot compress chunk (%lld, %lld, %lld): %s",
                 (long long)(r * v->s[0] / v->c[0] + q), (long long)j, (long long)i,
                 ZSTD_getErrorName(zn));
  return 0;
}

/* Shard (r, sj, si) of level l into the file `name`: its inner chunks (C
 * order; those past the volume's chunk grid absent), then the index of
 * (offset, nbytes) little-endian uint64 pairs and its CRC-32C. */
static ctr_status write_shard(const char *name, const zarr_out *o, const level *v, int64_t r,
                              int64_t sj, int64_t si, unsigned char *raw, unsigned char *z,
                              size_t zcap, unsigned char *const *pre, const size_t *pre_n) {
  const int64_t m[3] = {v->s[0] / v->c[0], v->s[1] / v->c[1], v->s[2] / v->c[2]};
  const int64_t g[3] = {(v->n[0] + v->c[0] - 1) / v->c[0], (v->n[1] + v->c[1] - 1) / v->c[1],
                        (v->n[2] + v->c[2] - 1) / v->c[2]};
  const int64_t nch = m[0] * m[1] * m[2];
  const size_t ib = (size_t)nch * 16 + 4;
  unsigned char *index = ctr__malloc(ib, "a shard index");
  if (!index) return CTR_E_OUT_OF_MEMORY;
  const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  ctr_status st = fd < 0 ? ctr__error_set(CTR_E_IO, "cannot create shard '%s': %s", name,
                                          strerror(errno))
                         : CTR_OK;
  uint64_t off = 0;
  for (int64_t e = 0; e < nch && st == CTR_OK; e++) {
    const int64_t q = e / (m[1] * m[2]), j = sj * m[1] + e / m[2] % m[1], i = si * m[2] + e % m[2];
    uint64_t at = ZARR_EMPTY, nb = ZARR_EMPTY;
    if (r * m[0] + q < g[0] && j < g[1] && i < g[2]) {
      const int64_t c = (q * g[1] + j) * g[2] + i; /* the chunk's place in the row (pre) */
      const size_t zn = pre ? pre_n[c] : compress_chunk(o, v, r, q, j, i, raw, z, zcap);
      st = zn ? ctr__pwrite_full(fd, pre ? pre[c] : z, zn, (int64_t)off, name) : CTR_E_INTERNAL;
      at = off, nb = zn;
      off += zn;
    }
    put_le64(index + 16 * e, at);
    put_le64(index + 16 * e + 8, nb);
  }
  if (st == CTR_OK) {
    const uint32_t crc = ctr__crc32c(index, ib - 4);
    for (int b = 0; b < 4; b++) index[ib - 4 + (size_t)b] = (unsigned char)(crc >> (8 * b));
    st = ctr__pwrite_full(fd, index, ib, (int64_t)off, name);
  }
  /* the disk takes the shard while the next ones compress: the commit's flush then waits
   * for the last row only, not the whole volume (bench_zarr: Zarr at 0.56 of raw before) */
  if (st == CTR_OK) ctr__start_writeback(fd);
  if (fd >= 0 && close(fd) != 0 && st == CTR_OK)
    st = ctr__error_set(CTR_E_IO, "cannot close shard '%s': %s", name, strerror(errno));
  free(index);
  return st;
}

/* File e of row r (a chunk, or a shard when sharded) written into dirs[]. */
static ctr_status write_piece(char **dirs, const zarr_out *o, const level *v, int64_t r,
                              int64_t e, int64_t px, unsigned char *raw, unsigned char *z,
                              size_t zcap, unsigned char *const *pre, const size_t *pre_n) {
  const int64_t j = e / px, i = e % px;
  char *name = ctr__io_sprintf("%s/%lld", dirs[j], (long long)i);
  if (!name) return CTR_E_OUT_OF_MEMORY;
  ctr_status st;
  if (v->sharded) {
    st = write_shard(name, o, v, r, j, i, raw, z, zcap, pre, pre_n);
  } else {
    const size_t zn = compress_chunk(o, v, r, 0, j, i, raw, z, zcap);
    st = zn ? write_file(name, z, zn, "chunk") : CTR_E_INTERNAL;
  }
  free(name);
  return st;
}

/* Writes the chunks (or shards) of row r of level l (OpenMP over them). */
static ctr_status write_row(zarr_out *o, int l, int64_t r) {
  const level *v = &o->lv[l];
  const int64_t cy = (v->n[1] + v->s[1] - 1) / v->s[1], cx = (v->n[2] + v->s[2] - 1) / v->s[2];
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
  /* a row of fewer shards than threads (the pyramid's first level: 4 on 16 cores at 2048^3)
   * compresses its chunks over every thread first, each into its own buffer, then writes
   * the shards: the same files, byte for byte */
  const int64_t gy = (v->n[1] + v->c[1] - 1) / v->c[1], gx = (v->n[2] + v->c[2] - 1) / v->c[2];
  const int64_t gq = (row_images(v, r) + v->c[0] - 1) / v->c[0], nch = gq * gy * gx;
  unsigned char **pre = NULL;
  size_t *pre_n = NULL;
  if (err == CTR_OK && v->sharded && cy * cx < zarr_threads()) {
    pre = ctr__calloc((size_t)nch, sizeof *pre, "a row's compressed chunks");
    pre_n = ctr__calloc((size_t)nch, sizeof *pre_n, "a row's compressed chunk sizes");
    if (!pre || !pre_n) err = CTR_E_OUT_OF_MEMORY;
  }
  for (int pass = pre ? 0 : 1; err == CTR_OK && pass < 2; pass++) {
    const int64_t tasks = pass == 0 ? nch : cy * cx;
#pragma omp parallel
    {
      unsigned char *raw = malloc(cb), *z = malloc(zcap);
#pragma omp for schedule(dynamic)
      for (int64_t c = 0; c < tasks; c++) {
        ctr_status s = CTR_OK;
        if (err != CTR_OK) continue;
        if (!raw || !z) {
          s = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %zu bytes for a chunk", cb);
        } else if (pass == 0) { /* chunk c = (q, j, i) of the row, compressed */
          const int64_t q = c / (gy * gx), j = c / gx % gy, i = c % gx;
          const size_t zn = compress_chunk(o, v, r, q, j, i, raw, z, zcap);
          pre[c] = zn ? malloc(zn) : NULL;
          if (!zn) s = CTR_E_INTERNAL;
          else if (!pre[c])
            s = ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate %zu bytes for a chunk", zn);
          else memcpy(pre[c], z, pre_n[c] = zn);
        } else {
          s = write_piece(dirs, o, v, r, c, cx, raw, z, zcap, pre, pre_n);
        }
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
  for (int64_t c = 0; pre && c < nch; c++) free(pre[c]);
  free(pre);
  free(pre_n);
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
    const int64_t z0 = r * v->s[0], k = row_images(v, r);
    const size_t sb = slice_bytes(o, u), es = o->es;
    const int64_t ny = v->n[1], nx = v->n[2];
    unsigned char *out = ctr__malloc(sb, "a downsampled image");
    if (!out) return CTR_E_OUT_OF_MEMORY;
    ctr_status st = CTR_OK;
    for (int64_t zz = z0 / 2; st == CTR_OK && zz < (z0 + k + 1) / 2; zz++) {
      const unsigned char *s = v->buf[r] + (size_t)(2 * zz - z0) * slice_bytes(o, v);
      const int64_t dz = 2 * zz + 1 < z0 + k ? 2 : 1;
#pragma omp parallel for schedule(static)
      for (int64_t y = 0; y < u->n[1]; y++) {
        int64_t x = 0;
        /* whole 2 x 2 x 2 blocks of uint16 or float32: the same sums in the same order as
         * the general loop below, without its per-value type switch and bounds tests (it
         * made the pyramid cost a quarter of a Zarr write: bench_zarr) */
        if (dz == 2 && 2 * y + 1 < ny && o->dtype != CTR_DTYPE_FLOAT16) {
          const size_t plane = (size_t)(ny * nx);
          const size_t r0 = (size_t)(2 * y) * (size_t)nx, r1 = r0 + (size_t)nx;
          const size_t o0 = (size_t)(y * u->n[2]);
          if (o->dtype == CTR_DTYPE_UINT16) {
            /* integers: the sum of 8 is exact either way, and floor(sum / 8 + 0.5) is
             * (sum + 4) >> 3, put_value's rounding, without the double */
            const uint16_t *q = (const uint16_t *)(const void *)s;
            uint16_t *d = (uint16_t *)(void *)out + o0;
            for (; 2 * x + 1 < nx; x++) {
              const size_t c = (size_t)(2 * x);
              const uint32_t sum = (uint32_t)q[r0 + c] + q[r0 + c + 1] + q[r1 + c] +
                                   q[r1 + c + 1] + q[plane + r0 + c] + q[plane + r0 + c + 1] +
                                   q[plane + r1 + c] + q[plane + r1 + c + 1];
              d[x] = (uint16_t)((sum + 4) >> 3);
            }
          } else {
            const float *q = (const float *)(const void *)s;
            float *d = (float *)(void *)out + o0;
            for (; 2 * x + 1 < nx; x++) {
              const size_t c = (size_t)(2 * x);
              double sum = (double)q[r0 + c];
              sum += (double)q[r0 + c + 1];
              sum += (double)q[r1 + c];
              sum += (double)q[r1 + c + 1];
              sum += (double)q[plane + r0 + c];
              sum += (double)q[plane + r0 + c + 1];
              sum += (double)q[plane + r1 + c];
              sum += (double)q[plane + r1 + c + 1];
              d[x] = (float)(sum / 8);
            }
          }
        }
        for (; x < u->n[2]; x++) {
          double sum = 0.0;
          int cnt = 0;
          for (int64_t a = 0; a < dz; a++)
            for (int64_t b = 2 * y; b < 2 * y + 2 && b < ny; b++)
              for (int64_t c = 2 * x; c < 2 * x + 2 && c < nx; c++, cnt++)
                sum += get_value(s + ((size_t)a * (size_t)(ny * nx) + (size_t)(b * nx + c)) * es,
                                 o->dtype);
          put_value(out + (size_t)(y * u->n[2] + x) * es, o->dtype, sum / cnt);
        }
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
  if (!v->spare) v->spare = v->buf[r];
  else free(v->buf[r]);
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
    const int64_t z = first + i, r = z / v->s[0];
    if (v->done[r]) continue; /* on disk already (a resumed run computes its images again) */
    if (!v->buf[r]) { /* every row's buffer holds s[0] images, so that any can reuse it */
      v->buf[r] = v->spare ? v->spare : ctr__malloc(sb * (size_t)v->s[0], "a row of OME-Zarr chunks");
      v->spare = NULL;
      if (!v->buf[r]) return CTR_E_OUT_OF_MEMORY;
    }
    /* on every core: level 0's images are the volume */
    ctr__copy_parallel(v->buf[r] + (size_t)(z - r * v->s[0]) * sb, src + (size_t)i * sb, sb);
    if (!v->have[z]) {
      v->have[z] = 1;
      if (++v->filled[r] == row_images(v, r)) CTR_CHECK(finish_row(w, l, r));
    }
  }
  return CTR_OK;
}

static ctr_status zarr_prepare(ctr_stack_writer *w);

static ctr_status zarr_write(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf) {
  zarr_out *o = w->impl;
  CTR_CHECK(zarr_prepare(w));
  const level *v = &o->lv[0];
  if (o->rb) { /* the resume's checks are over: the planned rows only from now on */
    free(o->rb);
    o->rb = NULL;
    o->rb_row = -1;
  }
  for (int64_t z = first; !o->resumed && z < first + n; z++)
    if (v->done[z / v->s[0]])
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
  cJSON_AddItemToObject(cfg, "chunk_shape", int_array(v->s, 3));
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
  cJSON_AddNumberToObject(cfg, "level", zstd_level(o, v));
  cJSON_AddBoolToObject(cfg, "checksum", 0);
  cJSON_AddItemToArray(codecs, named("zstd", cfg));
  if (v->sharded) { /* the chunk codecs inside sharding_indexed */
    cJSON *index = cJSON_CreateArray();
    cfg = cJSON_CreateObject();
    cJSON_AddStringToObject(cfg, "endian", "little");
    cJSON_AddItemToArray(index, named("bytes", cfg));
    cJSON_AddItemToArray(index, named("crc32c", NULL));
    cfg = cJSON_CreateObject();
    cJSON_AddItemToObject(cfg, "chunk_shape", int_array(v->c, 3));
    cJSON_AddItemToObject(cfg, "codecs", codecs);
    cJSON_AddItemToObject(cfg, "index_codecs", index);
    cJSON_AddStringToObject(cfg, "index_location", "end");
    codecs = cJSON_CreateArray();
    cJSON_AddItemToArray(codecs, named("sharding_indexed", cfg));
  }
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
    st = write_file(name, text, strlen(text), "the metadata");
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
  ctr_status st = zarr_prepare(w);
  if (st != CTR_OK) goto cleanup;
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

/* The zstd frame z (n bytes) decoded into raw: 0, or -1 when it does not
 * decode to exactly cb bytes. */
static int saved_decode(const unsigned char *z, size_t n, unsigned char *raw, size_t cb) {
  const unsigned long long size = ZSTD_getFrameContentSize(z, n);
  const size_t d = size == cb ? ZSTD_decompress(raw, cb, z, n) : 0;
  return size == cb && !ZSTD_isError(d) && d == cb ? 0 : -1;
}

/* The chunk file `name` decoded into raw (cb bytes): 0, or -1 when it is
 * missing, short or does not decode to exactly cb bytes. */
static int saved_chunk(const char *name, unsigned char *raw, size_t cb) {
  int fd = -1;
  int64_t size = 0;
  if (!ctr__file_exists(name) || ctr__file_open_read(name, &fd, &size) != CTR_OK) return -1;
  unsigned char *z = malloc(size ? (size_t)size : 1);
  int bad = !z || ctr__pread_full(fd, z, (size_t)size, 0, name) != CTR_OK ||
            saved_decode(z, (size_t)size, raw, cb) != 0;
  free(z);
  close(fd);
  return bad ? -1 : 0;
}

/* Chunk (q, j, i) of row r (raw, a whole chunk) into dst (the row's images,
 * as v->buf holds them). */
static void place_chunk(const zarr_out *o, const level *v, int64_t r, int64_t q, int64_t j,
                        int64_t i, const unsigned char *raw, unsigned char *dst) {
  const size_t es = o->es;
  const int64_t rest = row_images(v, r) - q * v->c[0];
  const int64_t k = rest < v->c[0] ? rest : v->c[0];
  const int64_t ny = v->n[1] - j * v->c[1] < v->c[1] ? v->n[1] - j * v->c[1] : v->c[1];
  const int64_t nx = v->n[2] - i * v->c[2] < v->c[2] ? v->n[2] - i * v->c[2] : v->c[2];
  for (int64_t z = 0; z < k; z++)
    for (int64_t y = 0; y < ny; y++)
      memcpy(dst + ((size_t)(q * v->c[0] + z) * (size_t)v->n[1] * (size_t)v->n[2] +
                    (size_t)(j * v->c[1] + y) * (size_t)v->n[2] + (size_t)(i * v->c[2])) * es,
             raw + ((size_t)(z * v->c[1] + y) * (size_t)v->c[2]) * es, (size_t)nx * es);
}

/* Shard (r, sj, si) of level l (the file `name`) decoded into dst (may be
 * NULL: checked only): 0, or -1 when it is missing, its index is damaged or
 * one of its chunks is absent or damaged. */
static int saved_shard(const zarr_out *o, const level *v, int64_t r, int64_t sj, int64_t si,
                       const char *name, unsigned char *raw, unsigned char *dst) {
  const int64_t m[3] = {v->s[0] / v->c[0], v->s[1] / v->c[1], v->s[2] / v->c[2]};
  const int64_t g[3] = {(v->n[0] + v->c[0] - 1) / v->c[0], (v->n[1] + v->c[1] - 1) / v->c[1],
                        (v->n[2] + v->c[2] - 1) / v->c[2]};
  const int64_t nch = m[0] * m[1] * m[2];
  const size_t cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * o->es;
  int fd = -1;
  int64_t size = 0;
  if (!ctr__file_exists(name) || ctr__file_open_read(name, &fd, &size) != CTR_OK) return -1;
  uint64_t *idx = malloc((size_t)nch * 2 * sizeof *idx);
  unsigned char *z = NULL;
  int bad = !idx || shard_index(fd, size, name, nch, 1, 1, idx) != CTR_OK;
  for (int64_t e = 0; !bad && e < nch; e++) {
    const int64_t q = e / (m[1] * m[2]), j = sj * m[1] + e / m[2] % m[1], i = si * m[2] + e % m[2];
    if (r * m[0] + q >= g[0] || j >= g[1] || i >= g[2]) continue;
    const uint64_t at = idx[2 * e], nb = idx[2 * e + 1];
    unsigned char *t = at == ZARR_EMPTY ? NULL : realloc(z, nb ? (size_t)nb : 1);
    bad = !t || ctr__pread_full(fd, t, (size_t)nb, (int64_t)at, name) != CTR_OK ||
          saved_decode(t, (size_t)nb, raw, cb) != 0;
    if (t) z = t;
    if (!bad && dst) place_chunk(o, v, r, q, j, i, raw, dst);
  }
  free(z);
  free(idx);
  close(fd);
  return bad ? -1 : 0;
}

/* Row r of level l from its chunks (or shards) into dst (its images, as
 * v->buf holds them; NULL: checked only): 0, or -1 when one is missing or
 * damaged. */
static int saved_row(const zarr_out *o, int l, int64_t r, unsigned char *dst) {
  const level *v = &o->lv[l];
  const size_t cb = (size_t)(v->c[0] * v->c[1] * v->c[2]) * o->es;
  const int64_t py = (v->n[1] + v->s[1] - 1) / v->s[1], px = (v->n[2] + v->s[2] - 1) / v->s[2];
  unsigned char *raw = malloc(cb);
  int bad = raw ? 0 : -1;
  for (int64_t j = 0; !bad && j < py; j++)
    for (int64_t i = 0; !bad && i < px; i++) {
      char *name = ctr__io_sprintf("%s/%d/c/%lld/%lld/%lld", o->tmp, l, (long long)r,
                                   (long long)j, (long long)i);
      if (!name) bad = -1;
      else if (v->sharded) bad = saved_shard(o, v, r, j, i, name, raw, dst);
      else if (!(bad = saved_chunk(name, raw, cb)) && dst) place_chunk(o, v, r, 0, j, i, raw, dst);
      free(name);
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
      memset(v->have + r * v->s[0], 1, (size_t)v->filled[r]);
    }
  }
  for (int l = 0; l + 1 < o->nlevels; l++) {
    level *v = &o->lv[l];
    const level *u = &o->lv[l + 1];
    for (int64_t r = 0; r < v->rows; r++) {
      if (!v->done[r]) continue;
      const int64_t z0 = r * v->s[0], k = row_images(v, r);
      int needed = 0; /* a row of the next level its means go to is not complete */
      for (int64_t zz = z0 / 2; zz < (z0 + k + 1) / 2; zz++) needed |= !u->done[zz / u->s[0]];
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

/* The levels laid out with the writer's sharding (w->zarr_shard,
 * ctr__stack_set_zarr_shard) and, resumed, their complete rows found: at
 * the writer's first use, so that a sharding given after the creation
 * applies. */
static ctr_status zarr_prepare(ctr_stack_writer *w) {
  zarr_out *o = w->impl;
  if (o->ready) return CTR_OK;
  plan_levels(&w->info, o, w->zarr_shard);
  for (int l = 0; l < o->nlevels; l++) {
    level *v = &o->lv[l];
    v->buf = ctr__calloc((size_t)v->rows, sizeof *v->buf, "OME-Zarr rows");
    v->filled = ctr__calloc((size_t)v->rows, sizeof *v->filled, "OME-Zarr rows");
    v->done = ctr__calloc((size_t)v->rows, 1, "OME-Zarr rows");
    v->have = ctr__calloc((size_t)v->n[0], 1, "OME-Zarr images");
    if (!v->buf || !v->filled || !v->done || !v->have) return CTR_E_OUT_OF_MEMORY;
  }
  o->ready = 1;
  return o->resumed ? resume_rows(w) : CTR_OK;
}

static ctr_status zarr_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf) {
  zarr_out *o = w->impl;
  CTR_CHECK(zarr_prepare(w));
  const level *v = &o->lv[0];
  const size_t sb = slice_bytes(o, v);
  for (int64_t z = first; z < first + n; z++) {
    const int64_t r = z / v->s[0];
    if (!v->done[r])
      CTR_FAIL(CTR_E_IO, "'%s': image %lld lies in a row of chunks (images %lld..%lld) that was "
               "not complete when the run stopped", o->tmp, (long long)z,
               (long long)(r * v->s[0]), (long long)(r * v->s[0] + row_images(v, r) - 1));
    if (o->rb_row != r) {
      if (!o->rb) o->rb = ctr__malloc(sb * (size_t)v->s[0], "a row of OME-Zarr chunks");
      if (!o->rb) return CTR_E_OUT_OF_MEMORY;
      o->rb_row = -1;
      if (saved_row(o, 0, r, o->rb) != 0)
        CTR_FAIL(CTR_E_IO, "'%s': a chunk of row %lld of level 0 is missing or damaged", o->tmp,
                 (long long)r);
      o->rb_row = r;
    }
    memcpy((unsigned char *)buf + (size_t)(z - first) * sb, o->rb + (size_t)(z - r * v->s[0]) * sb,
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
  plan_levels(&w->info, o, 0); /* the levels (their sharding: zarr_prepare) */
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
      o->resumed = 1; /* its complete rows: zarr_prepare */
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
  int64_t c[3];     /* chunk shape (the inner chunks' when sharded) */
  int sharded;      /* 1: sharding_indexed, shards of m inner chunks */
  int64_t m[3];     /* inner chunks a shard holds along z, y, x (1 when not sharded) */
  int index_end;    /* 1: a shard's index is its last bytes (else its first) */
  int index_crc;    /* 1: a CRC-32C follows the index */
  uint64_t *idx;    /* one shard's index */
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
  free(in->idx);
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

/* A chunk's codecs: "bytes" (either byte order) then optionally "zstd". */
static ctr_status read_codecs(const char *where, const cJSON *codecs, int *little, int *zstd) {
  int nbytes = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, codecs) {
    const char *name = cJSON_IsString(c) ? c->valuestring : json_string(c, "name");
    const char *endian = json_string(cJSON_GetObjectItemCaseSensitive(c, "configuration"), "endian");
    if (name && !strcmp(name, "bytes") && !nbytes && !*zstd) {
      *little = !endian || strcmp(endian, "big") != 0;
      nbytes = 1;
    } else if (name && !strcmp(name, "zstd") && nbytes && !*zstd) {
      *zstd = 1;
    } else {
      CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': codec '%s' is not supported: ctrecon reads "
               "chunks of the codecs bytes, then optionally zstd (inside sharding_indexed or "
               "not)", where, name ? name : "?");
    }
  }
  if (!nbytes)
    CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': no bytes codec among the codecs", where);
  return CTR_OK;
}

/* The configuration of a sharding_indexed codec: the inner chunk shape
 * (in->c becomes it; the shard shape, the chunk grid's, was there), the
 * inner codecs, the index codecs (bytes little-endian, then optionally
 * crc32c) and the index location. */
static ctr_status read_sharding(zarr_in *in, const cJSON *cfg, int *little) {
  const char *where = in->array;
  double v[3];
  const cJSON *cs = cJSON_GetObjectItemCaseSensitive(cfg, "chunk_shape");
  if (cJSON_GetArraySize(cs) != 3 || !json_numbers3(cs, v))
    CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': sharding_indexed without a chunk_shape of 3 sizes",
             where);
  for (int i = 0; i < 3; i++) {
    const int64_t inner = (int64_t)v[i];
    if (inner < 1 || (double)inner != v[i] || in->c[i] % inner != 0)
      CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': the inner chunk size %g does not divide the shard "
               "size %lld", where, v[i], (long long)in->c[i]);
    in->m[i] = in->c[i] / inner;
    in->c[i] = inner;
  }
  if ((double)in->m[0] * (double)in->m[1] * (double)in->m[2] > (double)((int64_t)1 << 24))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': shards of %lld x %lld x %lld inner chunks are "
             "too many", where, (long long)in->m[0], (long long)in->m[1], (long long)in->m[2]);
  CTR_CHECK(read_codecs(where, cJSON_GetObjectItemCaseSensitive(cfg, "codecs"), little, &in->zstd));
  const cJSON *ic = cJSON_GetObjectItemCaseSensitive(cfg, "index_codecs");
  const int nic = cJSON_GetArraySize(ic);
  const char *n0 = json_string(cJSON_GetArrayItem(ic, 0), "name");
  const char *n1 = json_string(cJSON_GetArrayItem(ic, 1), "name");
  const char *e0 = json_string(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ic, 0),
                                                                "configuration"), "endian");
  if (!n0 || strcmp(n0, "bytes") || (e0 && strcmp(e0, "little")) || nic > 2 ||
      (nic == 2 && (!n1 || strcmp(n1, "crc32c"))))
    CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': sharding_indexed index_codecs: expected bytes "
             "(little-endian), then optionally crc32c", where);
  in->index_crc = nic == 2;
  const char *loc = json_string(cfg, "index_location");
  if (loc && strcmp(loc, "end") && strcmp(loc, "start"))
    CTR_FAIL(CTR_E_FORMAT, "'%s/zarr.json': index_location '%s': expected end or start", where,
             loc);
  in->index_end = !loc || !strcmp(loc, "end");
  in->sharded = 1;
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
  const cJSON *codecs = cJSON_GetObjectItemCaseSensitive(a, "codecs");
  const cJSON *first = cJSON_GetArrayItem(codecs, 0);
  const char *fname = json_string(first, "name");
  int little = 1;
  if (fname && !strcmp(fname, "sharding_indexed")) {
    if (cJSON_GetArraySize(codecs) != 1)
      CTR_FAIL(CTR_E_UNSUPPORTED, "'%s/zarr.json': codecs after sharding_indexed are not "
               "supported", where);
    CTR_CHECK(read_sharding(in, cJSON_GetObjectItemCaseSensitive(first, "configuration"), &little));
  } else {
    CTR_CHECK(read_codecs(where, codecs, &little, &in->zstd));
  }
  if (!in->sharded) in->m[0] = in->m[1] = in->m[2] = 1;
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

static void fill_chunk(const ctr_stack_reader *r, zarr_in *in) {
  const size_t es = ctr_dtype_size(r->info.dtype);
  for (size_t k = 0; k < in->chunk_bytes; k += es) memcpy(in->chunk + k, in->fill_bytes, es);
}

/* One encoded chunk, `size` bytes at `off` of fd, decoded into in->chunk
 * (`name`: the chunk, as errors name it). */
static ctr_status read_piece(const ctr_stack_reader *r, zarr_in *in, int fd, int64_t off,
                             int64_t size, const char *name) {
  const size_t cb = in->chunk_bytes;
  if (!in->zstd) {
    if (size != (int64_t)cb)
      CTR_FAIL(CTR_E_FORMAT, "Zarr chunk %s is %lld bytes: expected %zu (truncated or corrupt)",
               name, (long long)size, cb);
    return ctr__pread_full(fd, in->chunk, cb, off, name);
  }
  ctr_status st = CTR_OK;
  void *data = ctr__malloc(size ? (size_t)size : 1, "a compressed chunk");
  if (!data) return CTR_E_OUT_OF_MEMORY;
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, data, (size_t)size, off, name));
  const unsigned long long want = ZSTD_getFrameContentSize(data, (size_t)size);
  if (want == ZSTD_CONTENTSIZE_ERROR)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk %s (%lld bytes) is not a zstd frame: the chunk "
                  "is corrupt or truncated", name, (long long)size);
  if (want != ZSTD_CONTENTSIZE_UNKNOWN && want != (unsigned long long)cb)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk %s holds %llu bytes: expected %zu (a chunk of "
                  "%lld x %lld x %lld %s)", name, want, cb, (long long)in->c[0],
                  (long long)in->c[1], (long long)in->c[2], ctr_dtype_name(r->info.dtype));
  const size_t got = ZSTD_decompress(in->chunk, cb, data, (size_t)size);
  if (ZSTD_isError(got))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk %s cannot be decompressed (%s): the chunk is "
                  "corrupt or truncated", name, ZSTD_getErrorName(got));
  if (got != cb)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "Zarr chunk %s holds %zu bytes: expected %zu (truncated or "
                  "corrupt)", name, got, cb);
cleanup:
  free(data);
  return st;
}

/* The images of chunk (row, j, i) in in->chunk into in->row. */
static void place_row_chunk(const ctr_stack_reader *r, zarr_in *in, int64_t row, int64_t j,
                            int64_t i) {
  const size_t es = ctr_dtype_size(r->info.dtype);
  const int64_t ny = r->info.height, nx = r->info.width, z0 = row * in->c[0];
  const int64_t k = r->info.count - z0 < in->c[0] ? r->info.count - z0 : in->c[0];
  const int64_t h = ny - j * in->c[1] < in->c[1] ? ny - j * in->c[1] : in->c[1];
  const int64_t w = nx - i * in->c[2] < in->c[2] ? nx - i * in->c[2] : in->c[2];
  for (int64_t z = 0; z < k; z++)
    for (int64_t y = 0; y < h; y++)
      memcpy(in->row + ((size_t)z * (size_t)(ny * nx) + (size_t)((j * in->c[1] + y) * nx) +
                        (size_t)(i * in->c[2])) * es,
             in->chunk + (size_t)((z * in->c[1] + y) * in->c[2]) * es, (size_t)w * es);
}

/* The chunks of chunk row `row` in the file `name`: chunk (row, sj, si), or
 * when sharded the inner chunks of that row in shard (row / m, sj, si).
 * Missing: the fill value. */
static ctr_status load_file(ctr_stack_reader *r, zarr_in *in, int64_t row, int64_t sj,
                            int64_t si, const char *name) {
  const int64_t cy = (r->info.height + in->c[1] - 1) / in->c[1];
  const int64_t cx = (r->info.width + in->c[2] - 1) / in->c[2];
  const int there = ctr__file_exists(name);
  int fd = -1;
  int64_t size = 0;
  if (there) CTR_CHECK(ctr__file_open_read(name, &fd, &size));
  const int64_t nch = in->m[0] * in->m[1] * in->m[2];
  ctr_status st = CTR_OK;
  if (there && in->sharded)
    st = shard_index(fd, size, name, nch, in->index_end, in->index_crc, in->idx);
  for (int64_t b = 0; st == CTR_OK && b < in->m[1]; b++)
    for (int64_t c = 0; st == CTR_OK && c < in->m[2]; c++) {
      const int64_t j = sj * in->m[1] + b, i = si * in->m[2] + c;
      if (j >= cy || i >= cx) continue;
      const int64_t e = ((row % in->m[0]) * in->m[1] + b) * in->m[2] + c;
      if (!there || (in->sharded && in->idx[2 * e] == ZARR_EMPTY)) {
        fill_chunk(r, in);
      } else if (!in->sharded) {
        char *label = ctr__io_sprintf("'%s'", name);
        st = label ? read_piece(r, in, fd, 0, size, label) : CTR_E_OUT_OF_MEMORY;
        free(label);
      } else {
        char *label = ctr__io_sprintf("%lld of the shard '%s'", (long long)e, name);
        st = label ? read_piece(r, in, fd, (int64_t)in->idx[2 * e], (int64_t)in->idx[2 * e + 1],
                                label)
                   : CTR_E_OUT_OF_MEMORY;
        free(label);
      }
      if (st == CTR_OK) place_row_chunk(r, in, row, j, i);
    }
  if (fd >= 0) close(fd);
  return st;
}

/* Chunk row `row` into in->row (its images, whole). */
static ctr_status load_row(ctr_stack_reader *r, zarr_in *in, int64_t row) {
  const int64_t py = (r->info.height + in->c[1] * in->m[1] - 1) / (in->c[1] * in->m[1]);
  const int64_t px = (r->info.width + in->c[2] * in->m[2] - 1) / (in->c[2] * in->m[2]);
  in->cached = -1;
  for (int64_t j = 0; j < py; j++)
    for (int64_t i = 0; i < px; i++) {
      char *name = ctr__io_sprintf("%s/c%c%lld%c%lld%c%lld", in->array, in->sep,
                                   (long long)(row / in->m[0]), in->sep, (long long)j, in->sep,
                                   (long long)i);
      if (!name) return CTR_E_OUT_OF_MEMORY;
      const ctr_status st = load_file(r, in, row, j, i, name);
      free(name);
      CTR_CHECK(st);
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
  if (in->sharded) {
    in->idx = ctr__malloc((size_t)(in->m[0] * in->m[1] * in->m[2]) * 2 * sizeof *in->idx,
                          "a Zarr shard index");
    if (!in->idx) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
  }
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

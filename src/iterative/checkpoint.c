/* Checkpoints of iterative runs: the state after a finished iteration (its
 * vectors and scalars) in one file, written under a temporary name and
 * renamed into place, so that the file on disk is always a whole state. A
 * resume checks that the checkpoint belongs to the same problem (sizes and
 * every option that changes the mathematics) and that its bytes are intact
 * (CRC-32). The history of the finished iterations (residual, relative
 * residual, error, seconds of each) travels with the state, so that a
 * resumed run reports the whole run's history.
 *
 * Layout (little-endian): "CTRITER3", the fingerprint (15 int64: the
 * sizes, options, checksums of the geometry and the projections, and the
 * slab size; 4 double), the finished iterations, the vector count,
 * CTR__IT_SCALARS doubles, each vector's length (int64), the vectors
 * (float32), the history (the count of iterations it holds, int64, then 4
 * doubles for each), the CRC-32 of everything before it (uint32). The
 * layouts before ("CTRITER1", without history or slab size) are refused by
 * name. */
#include "iterative/iterative.h"
#include "io/io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define MAGIC "CTRITER3"
#define STAGE_FLOATS ((int64_t)1 << 22)

typedef struct header {
  char magic[8];
  int64_t ints[15];
  double reals[4];
  int64_t iteration, nvec;
  double scalars[CTR__IT_SCALARS];
  int64_t len[CTR__IT_MAX_STATE];
} header;

static void fill_fp(const ctr__it_fingerprint *fp, header *h) {
  const int64_t ints[15] = {fp->algorithm, fp->n[0], fp->n[1], fp->n[2], fp->nu, fp->nv,
                            fp->nviews, fp->subsets, fp->tv_iterations, fp->nonneg, fp->box,
                            fp->pair, fp->geometry, fp->data, fp->slab_slices};
  const double reals[4] = {fp->relaxation, fp->tv_weight, fp->lower, fp->upper};
  memcpy(h->ints, ints, sizeof ints);
  memcpy(h->reals, reals, sizeof reals);
}

int64_t ctr__it_checksum(const void *data, int64_t n) {
  const int64_t block = (int64_t)1 << 18, blocks = 1024;
  const unsigned char *b = data;
  uLong crc = crc32(0L, Z_NULL, 0);
  if (n <= block * blocks) {
    for (int64_t a = 0; a < n; a += block)
      crc = crc32(crc, b + a, (uInt)(n - a < block ? n - a : block));
  } else {
    for (int64_t i = 0; i < blocks; i++) /* block i starts at i (n - block) / (blocks - 1) */
      crc = crc32(crc, b + (int64_t)((double)i * (double)(n - block) / (double)(blocks - 1)),
                  (uInt)block);
  }
  return (int64_t)crc;
}

ctr_status ctr__it_checkpoint_write(ctr_projector *p, const char *path,
                                    const ctr__it_fingerprint *fp, const ctr__it_state *s) {
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  fill_fp(fp, &h);
  h.iteration = s->iteration;
  h.nvec = s->nvec;
  memcpy(h.scalars, s->scalars, sizeof h.scalars);
  for (int i = 0; i < s->nvec; i++) h.len[i] = s->vec[i]->n;
  ctr__atomic_file f = CTR__ATOMIC_FILE_INIT;
  float *stage = NULL;
  ctr_status st = ctr__atomic_create(&f, path);
  if (st != CTR_OK) return st;
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, (const Bytef *)&h, sizeof h);
  CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, &h, sizeof h, 0, path));
  int64_t off = (int64_t)sizeof h;
  stage = ctr__malloc(sizeof(float) * (size_t)STAGE_FLOATS, "checkpoint staging");
  if (!stage) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "checkpoint staging");
  for (int i = 0; i < s->nvec; i++)
    for (int64_t a = 0; a < s->vec[i]->n; a += STAGE_FLOATS) {
      const int64_t m = a + STAGE_FLOATS < s->vec[i]->n ? STAGE_FLOATS : s->vec[i]->n - a;
      ctr__vec part = ctr__vec_part(s->vec[i], a, m);
      CTR_CHECK_GOTO(st, ctr__vec_download(p, stage, &part));
      crc = crc32(crc, (const Bytef *)stage, (uInt)(m * 4));
      CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, stage, (size_t)m * 4, off, path));
      off += m * 4;
    }
  const int64_t nh = s->nhist;
  const size_t hb = sizeof(double) * CTR__IT_HIST * (size_t)nh;
  crc = crc32(crc, (const Bytef *)&nh, sizeof nh);
  CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, &nh, sizeof nh, off, path));
  off += (int64_t)sizeof nh;
  if (hb) {
    crc = crc32(crc, (const Bytef *)s->hist, (uInt)hb);
    CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, s->hist, hb, off, path));
    off += (int64_t)hb;
  }
  const uint32_t c32 = (uint32_t)crc;
  CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, &c32, sizeof c32, off, path));
  st = ctr__atomic_commit(&f);
cleanup:
  free(stage);
  ctr__atomic_discard(&f);
  return st;
}

/* A fingerprint field as the user knows it: enums by name. */
static const char *fp_value(int i, int64_t v, char *buf, size_t n) {
  const char *name = i == 0 && v >= 0 && v <= CTR_ITERATE_FISTA_TV
                         ? ctr_iterate_algorithm_name((ctr_iterate_algorithm)v)
                     : i == 11 && v >= 0 && v <= CTR_PAIR_FAST
                         ? ctr_projector_pair_name((ctr_projector_pair)v)
                     : (i == 9 || i == 10) && (v == 0 || v == 1) ? (v ? "on" : "off")
                                                                 : NULL;
  if (name) snprintf(buf, n, "%s", name);
  else snprintf(buf, n, "%lld", (long long)v);
  return buf;
}

/* The history after the vectors: its count (at most the iterations, each
 * one's record once), then the records. */
static ctr_status read_history(int fd, const char *path, int64_t size, int64_t off,
                               const header *h, uLong *crc, ctr__it_state *s) {
  int64_t nh = 0;
  CTR_CHECK(ctr__pread_full(fd, &nh, sizeof nh, off, path));
  const int64_t rec = (int64_t)sizeof(double) * CTR__IT_HIST;
  if (nh < 0 || nh > h->iteration || size != off + (int64_t)sizeof nh + nh * rec + 4)
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': a history of %lld iterations in %lld bytes does not "
             "fit (cut short?)", path, (long long)nh, (long long)size);
  *crc = crc32(*crc, (const Bytef *)&nh, sizeof nh);
  double *hist = nh ? ctr__malloc((size_t)(nh * rec), "checkpoint history") : NULL;
  if (nh && !hist) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = nh ? ctr__pread_full(fd, hist, (size_t)(nh * rec), off + 8, path) : CTR_OK;
  if (st != CTR_OK) {
    free(hist);
    return st;
  }
  if (nh) *crc = crc32(*crc, (const Bytef *)hist, (uInt)(nh * rec));
  free(s->hist);
  s->hist = hist;
  s->nhist = s->hist_cap = nh;
  return CTR_OK;
}

static const char *const FP_NAMES[15] = {
    "algorithm", "nx", "ny", "nz", "nu", "nv", "views", "subsets", "tv_iterations", "nonneg",
    "box", "pair", "geometry checksum", "projections checksum", "slab_slices"};
static const char *const FP_REAL_NAMES[4] = {"relaxation", "tv_weight", "lower", "upper"};

ctr_status ctr__it_checkpoint_read(ctr_projector *p, const char *path,
                                   const ctr__it_fingerprint *fp, ctr__it_state *s) {
  int fd = -1;
  int64_t size = 0;
  float *stage = NULL;
  header h, want;
  ctr_status st = ctr__file_open_read(path, &fd, &size);
  if (st != CTR_OK) return st;
  if (size < (int64_t)sizeof h + 4)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': %lld bytes, too short for a checkpoint", path,
                  (long long)size);
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, &h, sizeof h, 0, path));
  if (!memcmp(h.magic, "CTRITER", 7) && memcmp(h.magic, MAGIC, 8))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' was written by an earlier ctrecon (layout "
                  "%.8s; this one reads %s): it cannot be resumed, run again without resuming",
                  path, h.magic, MAGIC);
  if (memcmp(h.magic, MAGIC, 8))
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s' is not a ctrecon iterate checkpoint", path);
  memset(&want, 0, sizeof want);
  fill_fp(fp, &want);
  for (int i = 12; i < 14; i++)
    if (h.ints[i] != want.ints[i])
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s differs from "
                    "this run's (other %s)", path, FP_NAMES[i], i == 12 ? "geometry" : "data");
  for (int i = 0; i < 15; i++)
    if (i != 12 && i != 13 && h.ints[i] != want.ints[i]) {
      char was[32], is[32];
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s is %s, this "
                    "run's %s", path, FP_NAMES[i], fp_value(i, h.ints[i], was, sizeof was),
                    fp_value(i, want.ints[i], is, sizeof is));
    }
  for (int i = 0; i < 4; i++)
    if (memcmp(&h.reals[i], &want.reals[i], sizeof(double)))
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s is %.17g, "
                    "this run's %.17g", path, FP_REAL_NAMES[i], h.reals[i], want.reals[i]);
  if (h.nvec != s->nvec)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': %lld vectors, expected %d", path,
                  (long long)h.nvec, s->nvec);
  int64_t expect = (int64_t)sizeof h + 4 + 8;
  for (int i = 0; i < s->nvec; i++) {
    if (h.len[i] != s->vec[i]->n)
      CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': vector %d holds %lld values, expected %lld",
                    path, i, (long long)h.len[i], (long long)s->vec[i]->n);
    expect += 4 * h.len[i];
  }
  if (size < expect)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': %lld bytes, expected %lld (cut short?)", path,
                  (long long)size, (long long)expect);
  if (h.iteration < 0)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': iteration %lld", path, (long long)h.iteration);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, (const Bytef *)&h, sizeof h);
  stage = ctr__malloc(sizeof(float) * (size_t)STAGE_FLOATS, "checkpoint staging");
  if (!stage) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "checkpoint staging");
  int64_t off = (int64_t)sizeof h;
  for (int i = 0; i < s->nvec; i++)
    for (int64_t a = 0; a < s->vec[i]->n; a += STAGE_FLOATS) {
      const int64_t m = a + STAGE_FLOATS < s->vec[i]->n ? STAGE_FLOATS : s->vec[i]->n - a;
      CTR_CHECK_GOTO(st, ctr__pread_full(fd, stage, (size_t)m * 4, off, path));
      crc = crc32(crc, (const Bytef *)stage, (uInt)(m * 4));
      ctr__vec part = ctr__vec_part(s->vec[i], a, m);
      CTR_CHECK_GOTO(st, ctr__vec_upload(p, &part, stage));
      off += m * 4;
    }
  CTR_CHECK_GOTO(st, read_history(fd, path, size, off, &h, &crc, s));
  off += 8 + (int64_t)sizeof(double) * CTR__IT_HIST * s->nhist;
  uint32_t c32 = 0;
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, &c32, sizeof c32, off, path));
  if (c32 != (uint32_t)crc)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' is damaged (CRC-32 mismatch): delete it and "
                  "start over", path);
  s->iteration = h.iteration;
  memcpy(s->scalars, h.scalars, sizeof h.scalars);
cleanup:
  free(stage);
  if (fd >= 0) close(fd);
  return st;
}

/* ---- The run's lock ------------------------------------------------------------ */

ctr_status ctr__it_checkpoint_lock(const char *checkpoint, int *fd) {
  *fd = -1;
  char *path = ctr__io_sprintf("%s.lock", checkpoint);
  if (!path) return CTR_E_OUT_OF_MEMORY;
  const ctr_status st = ctr__file_lock_open(path, O_RDWR | O_CREAT, checkpoint,
                                            "another run with this checkpoint", fd);
  free(path);
  return st;
}

void ctr__it_checkpoint_unlock(const char *checkpoint, int fd) {
  if (fd < 0) return;
  char *path = ctr__io_sprintf("%s.lock", checkpoint);
  ctr__file_unlock(path, fd, path != NULL);
  free(path);
}

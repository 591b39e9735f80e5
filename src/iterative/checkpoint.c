/* The iterative solvers' checkpoint: a kind of the streamed executor's
 * checkpoint (stream/checkpoint.h: the file, its fingerprint, CRC-32,
 * atomic write, the run's lock and the resume rules), with the state after
 * a finished iteration as its payload. The history of the finished
 * iterations (residual, relative residual, error, seconds of each) travels
 * with the state, so that a resumed run reports the whole run's history.
 *
 * Layout "CTRITER4" (little-endian): the magic, the fingerprint (17 int64:
 * the sizes, options, checksums of the geometry and the projections, the
 * slab size, PWLS's penalty and the checksum of its weights; 7 double),
 * then the payload: the finished iterations, the
 * vector count, CTR__IT_SCALARS doubles, each vector's length
 * (CTR__IT_MAX_STATE int64, 0 past the count), the vectors (float32), the
 * history (the count of iterations it holds, int64, then CTR__IT_HIST
 * doubles for each); the CRC-32 of everything before it (uint32). The
 * layouts before ("CTRITER1", without history or slab size; "CTRITER3",
 * without PWLS's fields) are refused by name. */
#include "iterative/iterative.h"

#include "stream/checkpoint.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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

/* ---- The fingerprint -------------------------------------------------------- */

/* Fields as the user knows them: enums by name. */
static const char *algorithm_name(int64_t v) {
  return v >= 0 && v <= CTR_ITERATE_PWLS ? ctr_iterate_algorithm_name((ctr_iterate_algorithm)v)
                                             : NULL;
}
static const char *pair_name(int64_t v) {
  return v >= 0 && v <= CTR_PAIR_FAST ? ctr_projector_pair_name((ctr_projector_pair)v) : NULL;
}
static const char *penalty_name(int64_t v) {
  return v >= 0 && v <= CTR_PENALTY_HUBER ? ctr_iterate_penalty_name((ctr_iterate_penalty)v) : NULL;
}
static const char *switch_name(int64_t v) { return v == 0 ? "off" : v == 1 ? "on" : NULL; }

enum { NINTS = 17, NREALS = 7 };
static const ctr__checkpoint_field k_ints[NINTS] = {
    {"algorithm", NULL, algorithm_name}, {"nx", NULL, NULL}, {"ny", NULL, NULL},
    {"nz", NULL, NULL}, {"nu", NULL, NULL}, {"nv", NULL, NULL}, {"views", NULL, NULL},
    {"subsets", NULL, NULL}, {"tv_iterations", NULL, NULL}, {"nonneg", NULL, switch_name},
    {"box", NULL, switch_name}, {"pair", NULL, pair_name},
    {"geometry checksum", "geometry", NULL}, {"projections checksum", "data", NULL},
    {"slab_slices", NULL, NULL}, {"penalty", NULL, penalty_name},
    {"weights checksum", "weights", NULL}};
static const ctr__checkpoint_field k_reals[NREALS] = {
    {"relaxation", NULL, NULL}, {"tv_weight", NULL, NULL}, {"lower", NULL, NULL},
    {"upper", NULL, NULL}, {"beta", NULL, NULL}, {"huber_delta", NULL, NULL},
    {"i0", NULL, NULL}};

/* The fields in file order. */
static void fill_fp(const ctr__it_fingerprint *fp, int64_t ints[NINTS], double reals[NREALS]) {
  const int64_t i[NINTS] = {fp->algorithm, fp->n[0], fp->n[1], fp->n[2], fp->nu, fp->nv,
                            fp->nviews, fp->subsets, fp->tv_iterations, fp->nonneg, fp->box,
                            fp->pair, fp->geometry, fp->data, fp->slab_slices, fp->penalty,
                            fp->weights};
  const double r[NREALS] = {fp->relaxation, fp->tv_weight, fp->lower, fp->upper, fp->beta,
                            fp->huber_delta, fp->i0};
  memcpy(ints, i, sizeof i);
  memcpy(reals, r, sizeof r);
}

/* ---- The payload ------------------------------------------------------------- */

/* What precedes the vectors. */
typedef struct head {
  int64_t iteration, nvec;
  double scalars[CTR__IT_SCALARS];
  int64_t len[CTR__IT_MAX_STATE];
} head;

typedef struct it_checkpoint {
  ctr_projector *p;
  ctr__it_state *s;
  /* read: the file's, the state's once the whole file checked */
  head h;
  double *hist;
  int64_t nhist;
} it_checkpoint;

static ctr_status op_write(void *self, ctr__checkpoint_io *io) {
  const it_checkpoint *c = self;
  const ctr__it_state *s = c->s;
  head h;
  memset(&h, 0, sizeof h);
  h.iteration = s->iteration;
  h.nvec = s->nvec;
  memcpy(h.scalars, s->scalars, sizeof h.scalars);
  for (int i = 0; i < s->nvec; i++) h.len[i] = s->vec[i]->n;
  CTR_CHECK(ctr__checkpoint_put(io, &h, sizeof h));
  for (int i = 0; i < s->nvec; i++) CTR_CHECK(ctr__checkpoint_put_vector(io, i, s->vec[i]->n));
  const int64_t nh = s->nhist;
  CTR_CHECK(ctr__checkpoint_put(io, &nh, sizeof nh));
  return ctr__checkpoint_put(io, s->hist, sizeof(double) * CTR__IT_HIST * (size_t)nh);
}

/* The history after the vectors: its count (at most the iterations, each
 * one's record once), then the records, up to the CRC-32. */
static ctr_status read_history(it_checkpoint *c, ctr__checkpoint_io *io) {
  int64_t nh = 0;
  CTR_CHECK(ctr__checkpoint_get(io, &nh, sizeof nh));
  const int64_t rec = (int64_t)sizeof(double) * CTR__IT_HIST;
  const int64_t left = ctr__checkpoint_left(io); /* divided, not nh * rec: nh is the file's */
  if (nh < 0 || nh > c->h.iteration || left % rec != 0 || left / rec != nh)
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': a history of %lld iterations in %lld bytes does not "
             "fit (cut short?)", io->path, (long long)nh, (long long)io->size);
  c->hist = nh ? ctr__malloc((size_t)(nh * rec), "checkpoint history") : NULL;
  if (nh && !c->hist) return CTR_E_OUT_OF_MEMORY;
  c->nhist = nh;
  return ctr__checkpoint_get(io, c->hist, (size_t)(nh * rec));
}

static ctr_status op_read(void *self, ctr__checkpoint_io *io) {
  it_checkpoint *c = self;
  const ctr__it_state *s = c->s;
  head *h = &c->h;
  CTR_CHECK(ctr__checkpoint_get(io, h, sizeof *h));
  if (h->nvec != s->nvec)
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': %lld vectors, expected %d", io->path,
             (long long)h->nvec, s->nvec);
  int64_t expect = io->off + 8 + 4; /* the history's count and the CRC-32 */
  for (int i = 0; i < s->nvec; i++) {
    if (h->len[i] != s->vec[i]->n)
      CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': vector %d holds %lld values, expected %lld",
               io->path, i, (long long)h->len[i], (long long)s->vec[i]->n);
    expect += 4 * h->len[i];
  }
  if (io->size < expect)
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': %lld bytes, expected %lld (cut short?)", io->path,
             (long long)io->size, (long long)expect);
  if (h->iteration < 0)
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': iteration %lld", io->path, (long long)h->iteration);
  for (int i = 0; i < s->nvec; i++) CTR_CHECK(ctr__checkpoint_get_vector(io, i, h->len[i]));
  return read_history(c, io);
}

static ctr_status op_download(void *self, int v, int64_t first, int64_t n, float *host) {
  const it_checkpoint *c = self;
  const ctr__vec part = ctr__vec_part(c->s->vec[v], first, n);
  return ctr__vec_download(c->p, host, &part);
}

static ctr_status op_upload(void *self, int v, int64_t first, int64_t n, const float *host) {
  const it_checkpoint *c = self;
  ctr__vec part = ctr__vec_part(c->s->vec[v], first, n);
  return ctr__vec_upload(c->p, &part, host);
}

static const ctr__checkpoint_ops k_ops = {
    "CTRITER4", "CTRITER", "iterate checkpoint", "ctr_iterate_options.resume", NINTS, NREALS,
    k_ints, k_reals, op_write, op_read, op_download, op_upload};

ctr_status ctr__it_checkpoint_write(ctr_projector *p, const char *path,
                                    const ctr__it_fingerprint *fp, const ctr__it_state *s) {
  int64_t ints[NINTS];
  double reals[NREALS];
  fill_fp(fp, ints, reals);
  it_checkpoint c = {p, (ctr__it_state *)s, {0}, NULL, 0};
  return ctr__checkpoint_write(&k_ops, &c, path, ints, reals);
}

ctr_status ctr__it_checkpoint_read(ctr_projector *p, const char *path,
                                   const ctr__it_fingerprint *fp, ctr__it_state *s) {
  int64_t ints[NINTS];
  double reals[NREALS];
  fill_fp(fp, ints, reals);
  it_checkpoint c = {p, s, {0}, NULL, 0};
  const ctr_status st = ctr__checkpoint_read(&k_ops, &c, path, ints, reals);
  if (st != CTR_OK) {
    free(c.hist);
    return st;
  }
  s->iteration = c.h.iteration;
  memcpy(s->scalars, c.h.scalars, sizeof s->scalars);
  free(s->hist);
  s->hist = c.hist;
  s->nhist = s->hist_cap = c.nhist;
  return CTR_OK;
}

ctr_status ctr__it_checkpoint_begin(const char *checkpoint, int resume, int *lock) {
  return ctr__checkpoint_begin(&k_ops, checkpoint, resume, lock);
}

void ctr__it_checkpoint_end(const char *checkpoint, int lock) {
  ctr__checkpoint_end(checkpoint, lock);
}

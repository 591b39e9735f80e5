/* Journal of finished subvolumes (see journal.h). */
#include "io/io_internal.h"
#include "stream/journal.h"

#include <math.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* 2: slab lines carry a CRC-32, the value range and the clamped voxels. */
#define MAGIC "ctrecon-journal 2"

uint32_t ctr__crc32_combine(uint32_t crc1, uint32_t crc2, int64_t len2) {
  return (uint32_t)crc32_combine(crc1, crc2, (z_off_t)len2);
}

uint32_t ctr__crc32(uint32_t crc, const void *data, size_t n) {
  /* One core's zlib CRC-32 is slower than the writer's disk on a large
   * run: pieces of 4 MiB in parallel, joined by crc32_combine (the same
   * value as one pass). */
  enum { PIECE = 4 << 20 };
  const unsigned char *p = data;
  const int64_t np = (int64_t)((n + PIECE - 1) / PIECE);
  uLong *part = np > 2 ? malloc((size_t)np * sizeof *part) : NULL;
  if (!part) return (uint32_t)crc32_z(crc, p, n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < np; i++) {
    const size_t off = (size_t)i * PIECE, len = n - off < PIECE ? n - off : PIECE;
    part[i] = crc32_z(0, p + off, len);
  }
  uLong c = crc;
  for (int64_t i = 0; i < np; i++) {
    const size_t off = (size_t)i * PIECE, len = n - off < PIECE ? n - off : PIECE;
    c = crc32_combine(c, part[i], (z_off_t)len);
  }
  free(part);
  return (uint32_t)c;
}

uint64_t ctr__fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

static ctr_status append(ctr__journal *j, const char *line) {
  const size_t n = strlen(line);
  size_t off = 0;
  while (off < n) {
    const ssize_t w = write(j->fd, line + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) CTR_FAIL(CTR_E_IO, "cannot write the journal '%s': %s", j->path, strerror(errno));
    off += (size_t)w;
  }
  if (fdatasync(j->fd) != 0)
    CTR_FAIL(CTR_E_IO, "cannot flush the journal '%s': %s", j->path, strerror(errno));
  return CTR_OK;
}

/* Bounds of what a journal may say: slice numbers and counts (2^40, far
 * beyond any volume, so that z0 + nz cannot overflow) and rank counts. */
#define CTR__JOURNAL_MAX (1LL << 40)
#define CTR__JOURNAL_MAX_RANKS (1LL << 20)

/* A complete "slab" line (a torn one, cut by a crash, is not). */
static int parse_slab(const char *line, ctr__journal_range *g) {
  long long idx, z0, nz, below, above;
  unsigned crc;
  double mn, mx;
  char end[8];
  if (sscanf(line, "slab %lld %lld %lld crc32 %x range %lf %lf clamped %lld %lld %7s", &idx, &z0,
             &nz, &crc, &mn, &mx, &below, &above, end) != 9 ||
      strcmp(end, "done") != 0 || idx < 0 || z0 < 0 || nz < 1 || idx > CTR__JOURNAL_MAX ||
      z0 > CTR__JOURNAL_MAX || nz > CTR__JOURNAL_MAX)
    return 0;
  g->index = idx;
  g->z0 = z0;
  g->nz = nz;
  g->rec = (ctr__slab_record){(uint32_t)crc, (float)mn, (float)mx, below, above};
  return 1;
}

static ctr_status not_a_journal(const char *path, const char *resume) {
  CTR_FAIL_FIELD(CTR_E_FORMAT, resume, "'%s' is not a ctrecon journal (or is damaged); delete "
                 "the partial output and run without %s", path, resume);
}

static ctr_status another_run(const char *path, const char *resume) {
  CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, resume,
           "cannot resume: '%s' belongs to a run with other inputs or options (geometry, "
           "projections, filter, slices, device or output type differ); repeat the interrupted "
           "run with %s, or run without %s to start over", path, resume, resume);
}

static ctr_status init(ctr__journal *j, const char *path) {
  memset(j, 0, sizeof *j);
  j->fd = -1;
  j->path = strdup(path);
  if (!j->path) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy the journal path");
  return CTR_OK;
}

ctr_status ctr__journal_create(ctr__journal *j, const char *path, uint64_t fingerprint,
                               const ctr__journal_layout *plan) {
  CTR_CHECK(init(j, path));
  ctr_status st = CTR_OK;
  int owned = 0; /* locked by this run: removed again if the rest fails */
  j->fingerprint = fingerprint;
  j->slab_slices = plan->slab_slices;
  j->views_per_batch = plan->views_per_batch;
  j->store = plan->store;
  j->pair = plan->pair;
  j->nslabs = plan->nslabs;
  j->split = plan->split;
  j->workers = plan->workers > 0 ? plan->workers : 1;
  j->done = ctr__calloc((size_t)plan->nslabs, 1, "journal");
  j->rec = ctr__calloc((size_t)plan->nslabs, sizeof *j->rec, "journal");
  if (!j->done || !j->rec) {
    st = CTR_E_OUT_OF_MEMORY;
    goto fail;
  }
  /* locked before it is emptied: a run that holds it keeps it */
  st = ctr__file_lock_open(path, O_WRONLY | O_CREAT, path, "the run of this journal's output",
                           &j->fd);
  if (st != CTR_OK) goto fail;
  owned = 1;
  if (ftruncate(j->fd, 0) != 0) {
    st = ctr__error_set(CTR_E_IO, "cannot create the journal '%s': %s", path, strerror(errno));
    goto fail;
  }
  char line[512];
  snprintf(line, sizeof line,
           MAGIC "\nfingerprint %016llx\nplan %lld %lld %d %d %lld %d %d\n",
           (unsigned long long)fingerprint, (long long)plan->slab_slices,
           (long long)plan->views_per_batch, plan->store, plan->pair,
           (long long)plan->nslabs, j->split, j->workers);
  st = append(j, line);
  if (st == CTR_OK) return CTR_OK;
fail: /* nothing of this journal stays: its memory, and its file if it was ours */
  ctr__journal_close(j, owned);
  return st;
}

ctr_status ctr__journal_resume(ctr__journal *j, const char *path, uint64_t fingerprint,
                               const char *resume) {
  ctr_status st = CTR_OK;
  CTR_CHECK(init(j, path));
  FILE *f = NULL;
  /* the journal of a run still going is not read, nor judged */
  CTR_CHECK_GOTO(st, ctr__file_lock_check(path, "the run of this journal's output"));
  f = fopen(path, "r");
  if (!f)
    CTR_FAIL_FIELD_GOTO(st, CTR_E_IO, resume,
                  "cannot resume: no journal '%s' (%s); run without %s to start over", path,
                  strerror(errno), resume);
  char line[512];
  unsigned long long fp = 0;
  long long zs = 0, nb = 0, ns = 0;
  int store = 0, pair = 0, split = 0, workers = 1, nf = 0;
  if (!fgets(line, sizeof line, f) || strncmp(line, MAGIC, strlen(MAGIC)) != 0 ||
      !fgets(line, sizeof line, f) || sscanf(line, "fingerprint %llx", &fp) != 1 ||
      !fgets(line, sizeof line, f) ||
      ((nf = sscanf(line, "plan %lld %lld %d %d %lld %d %d", &zs, &nb, &store, &pair, &ns, &split,
                    &workers)) != 5 &&
       nf != 7) ||
      zs <= 0 || nb <= 0 || ns <= 0 || split < 0 || split > 2 || workers < 1 ||
      workers > CTR_MAX_WORKERS) {
    st = not_a_journal(path, resume);
    goto cleanup;
  }
  if (fp != fingerprint) {
    st = another_run(path, resume);
    goto cleanup;
  }
  j->fingerprint = fp;
  j->slab_slices = zs;
  j->views_per_batch = nb;
  j->store = store;
  j->pair = pair;
  j->nslabs = ns;
  j->split = split; /* an older 5-field line left them at 0 and 1 */
  j->workers = workers;
  j->done = ctr__calloc((size_t)ns, 1, "journal");
  j->rec = ctr__calloc((size_t)ns, sizeof *j->rec, "journal");
  if (!j->done || !j->rec) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  /* A torn last line (crash during the append) is ignored. */
  while (fgets(line, sizeof line, f)) {
    ctr__journal_range g;
    if (parse_slab(line, &g) && g.index < ns) {
      j->done[g.index] = 1;
      j->rec[g.index] = g.rec;
    }
  }
  fclose(f);
  f = NULL;
  CTR_CHECK_GOTO(st, ctr__file_lock_open(path, O_WRONLY | O_APPEND, path,
                                         "the run of this journal's output", &j->fd));
  return CTR_OK;
cleanup:
  if (f) fclose(f);
  ctr__journal_close(j, 0); /* frees what init() and the reading allocated */
  return st;
}

/* A "slab" line; %a: the range goes back bit-exact. */
static void slab_line(char *line, size_t n, int64_t index, int64_t z0, int64_t nz,
                      const ctr__slab_record *rec) {
  snprintf(line, n, "slab %lld %lld %lld crc32 %08x range %a %a clamped %lld %lld done\n",
           (long long)index, (long long)z0, (long long)nz, (unsigned)rec->crc, (double)rec->min,
           (double)rec->max, (long long)rec->below, (long long)rec->above);
}

ctr_status ctr__journal_mark(ctr__journal *j, int64_t index, int64_t z0, int64_t nz,
                             const ctr__slab_record *rec) {
  char line[256];
  slab_line(line, sizeof line, index, z0, nz, rec);
  CTR_CHECK(append(j, line));
  if (index >= 0 && index < j->nslabs) { /* a distributed rank's journal counts no index */
    j->done[index] = 1;
    j->rec[index] = *rec;
  }
  return CTR_OK;
}

/* ---- Journals of distributed runs ------------------------------------------ */

#define MASTER_MAGIC "ctrecon-distributed-journal 1"

static ctr_status add_range(ctr__journal_ranges *out, const ctr__journal_range *g) {
  if (out->n == out->cap) {
    const int64_t cap = out->cap ? 2 * out->cap : 64;
    ctr__journal_range *p = realloc(out->r, (size_t)cap * sizeof *p);
    if (!p) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "a journal of %lld subvolumes", (long long)cap);
    out->r = p;
    out->cap = cap;
  }
  out->r[out->n++] = *g;
  return CTR_OK;
}

int ctr__journal_kind(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[128] = "";
  const int got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!got) return 3;
  if (!strncmp(line, MASTER_MAGIC, strlen(MASTER_MAGIC))) return 2;
  if (!strncmp(line, MAGIC, strlen(MAGIC)) && line[strlen(MAGIC)] == '\n') return 1;
  return 3;
}

ctr_status ctr__journal_read_ranges(const char *path, uint64_t fingerprint, const char *resume,
                                    ctr__journal_ranges *out) {
  ctr_status st = CTR_OK;
  FILE *f = fopen(path, "r");
  if (!f)
    CTR_FAIL_FIELD(CTR_E_IO, resume, "cannot resume: cannot read the journal '%s' (%s); run "
                   "without %s to start over", path, strerror(errno), resume);
  char line[512];
  unsigned long long fp = 0;
  long long gen = 0, ranks = 0, prev = 0, prev_ranks = 0, unit = 0;
  const int master = fgets(line, sizeof line, f) && !strncmp(line, MASTER_MAGIC, strlen(MASTER_MAGIC));
  const int single = !master && !strncmp(line, MAGIC, strlen(MAGIC));
  if ((!master && !single) || !fgets(line, sizeof line, f) ||
      sscanf(line, "fingerprint %llx", &fp) != 1 || !fgets(line, sizeof line, f) ||
      (master && sscanf(line, "generation %lld ranks %lld previous %lld ranks %lld unit %lld", &gen,
                        &ranks, &prev, &prev_ranks, &unit) != 5) ||
      (single && sscanf(line, "plan %lld", &unit) != 1)) {
    st = not_a_journal(path, resume);
    goto cleanup;
  }
  if (fp != fingerprint) {
    st = another_run(path, resume);
    goto cleanup;
  }
  /* a master's counts are read back as loop bounds and file names: bounded */
  if (master && (gen < 1 || ranks < 1 || ranks > CTR__JOURNAL_MAX_RANKS || prev < 0 ||
                 prev >= gen || prev_ranks < 0 || prev_ranks > CTR__JOURNAL_MAX_RANKS ||
                 unit < 0 || unit > CTR__JOURNAL_MAX)) {
    st = not_a_journal(path, resume);
    goto cleanup;
  }
  out->generation = gen;
  out->ranks = ranks;
  out->previous = prev;
  out->previous_ranks = prev_ranks;
  out->unit = unit;
  out->master = master;
  while (fgets(line, sizeof line, f)) {
    ctr__journal_range g;
    if (parse_slab(line, &g)) CTR_CHECK_GOTO(st, add_range(out, &g));
  }
cleanup:
  fclose(f);
  return st;
}

ctr_status ctr__journal_read_rank(const char *path, uint64_t fingerprint, const char *resume,
                                  ctr__journal_ranges *out) {
  FILE *f = fopen(path, "r");
  if (!f) return CTR_OK; /* a rank that journalled nothing may have left none */
  ctr_status st = CTR_OK;
  char line[512];
  unsigned long long fp = 0;
  if (!fgets(line, sizeof line, f) || strncmp(line, MAGIC, strlen(MAGIC)) != 0 ||
      !fgets(line, sizeof line, f) || sscanf(line, "fingerprint %llx", &fp) != 1) {
    fclose(f);
    return CTR_OK; /* cut short while it was created: nothing journalled */
  }
  if (fp != fingerprint) {
    st = another_run(path, resume);
    goto cleanup;
  }
  while (fgets(line, sizeof line, f)) {
    ctr__journal_range g;
    if (parse_slab(line, &g)) CTR_CHECK_GOTO(st, add_range(out, &g));
  }
cleanup:
  fclose(f);
  return st;
}

ctr_status ctr__journal_write_master(const char *path, uint64_t fingerprint,
                                     const ctr__journal_ranges *j) {
  char *tmp = malloc(strlen(path) + 8);
  if (!tmp) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "a journal name");
  sprintf(tmp, "%s.tmp", path);
  ctr_status st = CTR_OK;
  ctr__journal w;
  memset(&w, 0, sizeof w);
  w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  w.path = tmp;
  if (w.fd < 0) CTR_FAIL_GOTO(st, CTR_E_IO, "cannot create the journal '%s': %s", tmp, strerror(errno));
  char line[512];
  snprintf(line, sizeof line, MASTER_MAGIC "\nfingerprint %016llx\ngeneration %lld ranks %lld "
           "previous %lld ranks %lld unit %lld\n", (unsigned long long)fingerprint,
           (long long)j->generation, (long long)j->ranks, (long long)j->previous,
           (long long)j->previous_ranks, (long long)j->unit);
  CTR_CHECK_GOTO(st, append(&w, line));
  for (int64_t i = 0; i < j->n; i++) {
    slab_line(line, sizeof line, j->r[i].index, j->r[i].z0, j->r[i].nz, &j->r[i].rec);
    CTR_CHECK_GOTO(st, append(&w, line));
  }
  close(w.fd);
  w.fd = -1;
  if (rename(tmp, path) != 0)
    CTR_FAIL_GOTO(st, CTR_E_IO, "cannot rename '%s' onto '%s': %s", tmp, path, strerror(errno));
  ctr__sync_parent_dir(path);
cleanup:
  if (w.fd >= 0) close(w.fd);
  if (st != CTR_OK) unlink(tmp);
  free(tmp);
  return st;
}

int64_t ctr__journal_unit(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  long long a, b, c, d, unit = 0;
  for (int i = 0; i < 3 && fgets(line, sizeof line, f); i++)
    if (sscanf(line, "generation %lld ranks %lld previous %lld ranks %lld unit %lld", &a, &b, &c,
               &d, &unit) != 5 &&
        sscanf(line, "plan %lld", &unit) != 1)
      unit = 0;
    else
      break;
  fclose(f);
  return unit > 0 ? unit : 0;
}

char *ctr__journal_rank_path(const char *master, int64_t generation, int rank) {
  char *p = malloc(strlen(master) + 48);
  if (p) sprintf(p, "%s.%lld.%d", master, (long long)generation, rank);
  else ctr__error_set(CTR_E_OUT_OF_MEMORY, "a journal name");
  return p;
}

void ctr__journal_ranges_free(ctr__journal_ranges *j) {
  free(j->r);
  memset(j, 0, sizeof *j);
}

ctr_status ctr__journal_verify(const ctr_context *ctx, ctr__journal *j, ctr_stack_writer *w,
                               const char *out, const char *what, int64_t slab_slices, int64_t nz,
                               int64_t z0, size_t slice_bytes, int64_t chunk,
                               ctr__slab_record *kept, int64_t *nkept, int64_t *kept_slices) {
  if (chunk < 1) chunk = 1;
  void *buf = ctr__malloc(slice_bytes * (size_t)chunk, "resume check buffer");
  if (!buf) return CTR_E_OUT_OF_MEMORY;
  for (int64_t s = 0; s < j->nslabs; s++) {
    if (!j->done[s]) continue;
    const int64_t z = s * slab_slices, n = nz - z < slab_slices ? nz - z : slab_slices;
    uint32_t crc = 0;
    ctr_status st = CTR_OK;
    for (int64_t k = 0; k < n && st == CTR_OK; k += chunk) {
      const int64_t m = n - k < chunk ? n - k : chunk;
      st = ctr__stack_read_back(w, z + k, m, buf);
      if (st == CTR_OK) crc = ctr__crc32(crc, buf, (size_t)m * slice_bytes);
    }
    if (st == CTR_OK && crc == j->rec[s].crc) {
      kept->min = fminf(kept->min, j->rec[s].min);
      kept->max = fmaxf(kept->max, j->rec[s].max);
      kept->below += j->rec[s].below;
      kept->above += j->rec[s].above;
      ++*nkept;
      *kept_slices += n;
      continue;
    }
    if (st == CTR_OK)
      ctr__log(ctx, CTR_LOG_WARNING,
               "'%s': %s %lld (slices %lld..%lld) changed on disk after it was journalled "
               "(CRC-32 %08x, the journal says %08x): computing it again",
               out, what, (long long)s, (long long)(z0 + z), (long long)(z0 + z + n - 1),
               (unsigned)crc, (unsigned)j->rec[s].crc);
    else
      ctr__log(ctx, CTR_LOG_WARNING,
               "'%s': %s %lld (slices %lld..%lld) cannot be read back (%s): computing it again",
               out, what, (long long)s, (long long)(z0 + z), (long long)(z0 + z + n - 1),
               ctr_error_detail());
    j->done[s] = 0;
    ctr__stack_forget(w, z, n);
  }
  free(buf);
  return CTR_OK;
}

int ctr__journal_end_output(ctr__journal *j, int have_journal, ctr_stack_writer *w, int resumable) {
  int journalled = 0;
  for (int64_t s = 0; have_journal && s < j->nslabs; s++) journalled |= j->done[s];
  if (w) {
    if (resumable && journalled) ctr__stack_suspend(w);
    else ctr_stack_abort(w);
  }
  if (have_journal) ctr__journal_close(j, !journalled);
  return journalled;
}

void ctr__journal_close(ctr__journal *j, int remove) {
  ctr__file_unlock(j->path, j->fd, remove);
  free(j->path);
  free(j->done);
  free(j->rec);
  memset(j, 0, sizeof *j);
  j->fd = -1;
}

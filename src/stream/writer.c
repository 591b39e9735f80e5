/* The writer thread of the streamed pipeline (see writer.h). */
#include "io/stack_partial.h"
#include "stream/writer.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ctr_status ctr__writer_init(ctr__writer *w, int nbuf, size_t buf_bytes, int64_t nslabs) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->dtype = CTR_DTYPE_FLOAT32;
  w->buf = ctr__calloc((size_t)nbuf, sizeof *w->buf, "write buffers");
  w->busy = ctr__calloc((size_t)nbuf, sizeof *w->busy, "write buffers");
  w->slabs = ctr__calloc((size_t)(nslabs > 0 ? nslabs : 1), sizeof *w->slabs, "subvolume records");
  if (!w->buf || !w->busy || !w->slabs) return CTR_E_OUT_OF_MEMORY;
  for (int64_t i = 0; i < nslabs; i++) {
    w->slabs[i].rec.min = INFINITY;
    w->slabs[i].rec.max = -INFINITY;
  }
  w->nslabs = nslabs;
  w->nbuf = nbuf;
  w->buf_bytes = buf_bytes;
  return CTR_OK;
}

static int piece_order(const void *a, const void *b) {
  const int64_t x = ((const struct ctr__writer_piece *)a)->z;
  const int64_t y = ((const struct ctr__writer_piece *)b)->z;
  return (x > y) - (x < y);
}

static ctr_status do_job(ctr__writer *w, const ctr__writer_job *j) {
  if (j->slab < 0 || j->slab >= w->nslabs)
    CTR_FAIL(CTR_E_INTERNAL, "writer: subvolume %lld of %lld", (long long)j->slab,
             (long long)w->nslabs);
  if (w->out) CTR_CHECK(ctr_stack_write(w->out, w->z_offset + j->z, j->nz, w->dtype, w->buf[j->buf]));
  ctr__writer_slab *sl = &w->slabs[j->slab];
  if (w->journal) {
    if (sl->npieces == sl->cap) {
      const int cap = sl->cap ? 2 * sl->cap : 8;
      void *p = realloc(sl->pieces, (size_t)cap * sizeof *sl->pieces);
      if (!p) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "writer: subvolume %lld's checksums", (long long)j->slab);
      sl->pieces = p;
      sl->cap = cap;
    }
    const size_t bytes = (size_t)j->nz * w->slice_bytes;
    sl->pieces[sl->npieces++] =
        (struct ctr__writer_piece){j->z, (int64_t)bytes, ctr__crc32(0, w->buf[j->buf], bytes)};
  }
  sl->rec.min = fminf(sl->rec.min, j->rec.min);
  sl->rec.max = fmaxf(sl->rec.max, j->rec.max);
  sl->rec.below += j->rec.below;
  sl->rec.above += j->rec.above;
  sl->slices += j->nz;
  if (sl->slices == j->slab_nz) {
    if (w->out) CTR_CHECK(ctr__stack_flush(w->out));
    ctr__slab_record rec = sl->rec;
    /* the subvolume's CRC-32: its chunks' in slice order, joined */
    if (sl->npieces > 1) qsort(sl->pieces, (size_t)sl->npieces, sizeof *sl->pieces, piece_order);
    rec.crc = 0;
    for (int i = 0; i < sl->npieces; i++)
      rec.crc = ctr__crc32_combine(rec.crc, sl->pieces[i].crc, sl->pieces[i].bytes);
    free(sl->pieces);
    sl->pieces = NULL;
    sl->npieces = sl->cap = 0;
    if (w->journal) CTR_CHECK(ctr__journal_mark(w->journal, j->slab, j->slab_z, j->slab_nz, &rec));
    w->slabs_written++;
    if (w->kill_after > 0 && w->slabs_written >= w->kill_after) raise(SIGKILL);
    if (w->stop_after > 0 && w->slabs_written >= w->stop_after)
      CTR_FAIL(CTR_E_CANCELLED, "stopped after %lld subvolume(s) (fault injection of a test "
               "build)", (long long)w->slabs_written);
  }
  return CTR_OK;
}

/* Pins the buffers (slow: it runs while the first subvolume is read). */
static void allocate(ctr__writer *w) {
  ctr_status st = CTR_OK;
  for (int i = 0; i < w->nbuf && st == CTR_OK; i++) {
    w->buf[i] = ctr_host_alloc(w->buf_bytes);
    if (!w->buf[i]) st = CTR_E_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&w->mu);
  if (st != CTR_OK) {
    w->status = st;
    snprintf(w->detail, sizeof w->detail, "%s", ctr_error_detail());
  }
  w->ready = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void *writer_main(void *arg) {
  ctr__writer *w = arg;
  allocate(w);
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->qlen && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->qlen && w->stop) break;
    const ctr__writer_job j = w->queue[w->qhead];
    const int failed = w->status != CTR_OK;
    pthread_mutex_unlock(&w->mu);
    ctr_status st = CTR_OK;
    double t = 0;
    if (!failed) {
      const double t0 = ctr__now_s();
      st = do_job(w, &j);
      t = ctr__now_s() - t0;
    }
    pthread_mutex_lock(&w->mu);
    w->busy_s += t;
    if (st != CTR_OK && w->status == CTR_OK) {
      w->status = st;
      snprintf(w->detail, sizeof w->detail, "%s", ctr_error_detail());
    }
    w->busy[j.buf] = 0;
    w->qhead = (w->qhead + 1) % 16;
    w->qlen--;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

ctr_status ctr__writer_start(ctr__writer *w) {
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
    CTR_FAIL(CTR_E_INTERNAL, "cannot start the writer thread");
  w->running = 1;
  return CTR_OK;
}

static ctr_status raise_locked(ctr__writer *w) {
  const ctr_status st = w->status;
  pthread_mutex_unlock(&w->mu);
  return ctr__error_set(st, "%s", w->detail);
}

ctr_status ctr__writer_acquire(ctr__writer *w, int *buf) {
  pthread_mutex_lock(&w->mu);
  for (;;) {
    if (w->status != CTR_OK) return raise_locked(w);
    for (int i = 0; w->ready && i < w->nbuf; i++)
      if (!w->busy[i]) {
        w->busy[i] = 1;
        *buf = i;
        pthread_mutex_unlock(&w->mu);
        return CTR_OK;
      }
    pthread_cond_wait(&w->cv, &w->mu);
  }
}

void ctr__writer_giveback(ctr__writer *w, int buf) {
  pthread_mutex_lock(&w->mu);
  w->busy[buf] = 0;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void ctr__writer_submit(ctr__writer *w, const ctr__writer_job *job) {
  pthread_mutex_lock(&w->mu);
  while (w->qlen == 16) pthread_cond_wait(&w->cv, &w->mu);
  w->queue[(w->qhead + w->qlen) % 16] = *job;
  w->qlen++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

ctr_status ctr__writer_drain(ctr__writer *w) {
  pthread_mutex_lock(&w->mu);
  while (w->qlen) pthread_cond_wait(&w->cv, &w->mu);
  if (w->status != CTR_OK) return raise_locked(w);
  pthread_mutex_unlock(&w->mu);
  return CTR_OK;
}

void ctr__writer_settle(ctr__writer *w, ctr_status st) {
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", ctr_error_detail());
  ctr__writer_drain(w);
  ctr__error_set(st, "%s", detail);
}

void ctr__writer_free(ctr__writer *w) {
  if (w->running) {
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->running = 0;
  }
  for (int i = 0; w->buf && i < w->nbuf; i++) ctr_host_free(w->buf[i]);
  free(w->buf);
  free(w->busy);
  for (int64_t i = 0; w->slabs && i < w->nslabs; i++) free(w->slabs[i].pieces);
  free(w->slabs);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  memset(w, 0, sizeof *w);
}

#ifdef CTR_FAULT_INJECTION
static int64_t env_int(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strtoll(v, NULL, 10) : 0;
}

void ctr__writer_inject(ctr__writer *w, int rank) {
  const char *only = getenv("CTRECON_INJECT_RANK");
  if (only && *only && strtol(only, NULL, 10) != rank) return;
  w->stop_after = env_int("CTRECON_INJECT_STOP_AFTER_SLABS");
  w->kill_after = env_int("CTRECON_INJECT_KILL_AFTER_SLABS");
  w->delay_s = (double)env_int("CTRECON_INJECT_DELAY_MS") / 1000.0;
  if (env_int("CTRECON_INJECT_HANG"))
    for (;;) sleep(1); /* alive, never progressing */
}
#endif

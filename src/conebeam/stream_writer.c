/* The writer thread of the streamed pipeline (see stream_writer.h). */
#include "io/stack_partial.h"
#include "conebeam/stream_writer.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

ctr_status ctr__writer_init(ctr__writer *w, int nbuf, size_t buf_bytes) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->dtype = CTR_DTYPE_FLOAT32;
  w->buf = ctr__calloc((size_t)nbuf, sizeof *w->buf, "write buffers");
  w->busy = ctr__calloc((size_t)nbuf, sizeof *w->busy, "write buffers");
  if (!w->buf || !w->busy) return CTR_E_OUT_OF_MEMORY;
  w->nbuf = nbuf;
  w->buf_bytes = buf_bytes;
  return CTR_OK;
}

static ctr_status do_job(ctr__writer *w, const ctr__writer_job *j) {
  if (w->out) CTR_CHECK(ctr_stack_write(w->out, j->z, j->nz, w->dtype, w->buf[j->buf]));
  if (w->journal) w->crc = ctr__crc32(w->crc, w->buf[j->buf], (size_t)j->nz * w->slice_bytes);
  if (j->slab >= 0) {
    if (w->out) CTR_CHECK(ctr__stack_flush(w->out));
    ctr__slab_record rec = j->rec;
    rec.crc = w->crc;
    w->crc = 0;
    if (w->journal) CTR_CHECK(ctr__journal_mark(w->journal, j->slab, j->slab_z, j->slab_nz, &rec));
    w->slabs_written++;
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
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  memset(w, 0, sizeof *w);
}

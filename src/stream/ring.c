/* The reader ring of the streamed pipeline (see ring.h). */
#include "stream/ring.h"

#include <stdio.h>
#include <string.h>

ctr_status ctr__ring_init(ctr__ring *r, int nbuf, size_t bytes, ctr__ring_fill_fn fill, void *user) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->fill = fill;
  r->user = user;
  r->buf = ctr__calloc((size_t)nbuf, sizeof *r->buf, "read buffers");
  r->put = ctr__calloc((size_t)nbuf, 1, "read buffers");
  if (!r->buf || !r->put) return CTR_E_OUT_OF_MEMORY;
  r->nbuf = nbuf;
  r->bytes = bytes; /* pinned by the producer at first use, overlapping its reads */
  return CTR_OK;
}

static void *producer(void *arg) {
  ctr__ring *r = arg;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->filled < r->count && r->filled - r->consumed >= r->nbuf)
      pthread_cond_wait(&r->cv, &r->mu);
    if (r->stop || r->filled >= r->count || r->status != CTR_OK) {
      pthread_mutex_unlock(&r->mu);
      return NULL;
    }
    const int64_t item = r->filled;
    void *buf = r->buf[item % r->nbuf];
    pthread_mutex_unlock(&r->mu);
    const double t0 = ctr__now_s();
    ctr_status st = CTR_OK;
    if (!buf) {
      buf = ctr_host_alloc(r->bytes);
      if (!buf) st = CTR_E_OUT_OF_MEMORY;
      pthread_mutex_lock(&r->mu);
      r->buf[item % r->nbuf] = buf;
      pthread_mutex_unlock(&r->mu);
    }
    if (st == CTR_OK) st = r->fill(r->user, r->first + item, buf);
    const double t1 = ctr__now_s();
    pthread_mutex_lock(&r->mu);
    r->busy += t1 - t0;
    if (st != CTR_OK) {
      r->status = st;
      snprintf(r->detail, sizeof r->detail, "%s", ctr_error_detail());
    } else {
      r->filled++;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (st != CTR_OK) return NULL;
  }
}

ctr_status ctr__ring_start(ctr__ring *r, int64_t first, int64_t count) {
  ctr__ring_finish(r);
  r->first = first;
  r->count = count;
  r->filled = r->consumed = 0;
  memset(r->put, 0, (size_t)r->nbuf);
  r->stop = 0;
  r->status = CTR_OK;
  r->detail[0] = '\0';
  if (pthread_create(&r->thread, NULL, producer, r) != 0)
    CTR_FAIL(CTR_E_INTERNAL, "cannot start the reader thread");
  r->running = 1;
  return CTR_OK;
}

ctr_status ctr__ring_next(ctr__ring *r, void **buf) {
  pthread_mutex_lock(&r->mu);
  while (r->filled <= r->consumed && r->status == CTR_OK) pthread_cond_wait(&r->cv, &r->mu);
  if (r->filled <= r->consumed) {
    const ctr_status st = r->status;
    pthread_mutex_unlock(&r->mu);
    return ctr__error_set(st, "%s", r->detail);
  }
  *buf = r->buf[r->consumed % r->nbuf];
  pthread_mutex_unlock(&r->mu);
  return CTR_OK;
}

void ctr__ring_release(ctr__ring *r) {
  pthread_mutex_lock(&r->mu);
  r->consumed++;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

ctr_status ctr__ring_get(ctr__ring *r, int64_t item, void **buf) {
  pthread_mutex_lock(&r->mu);
  while (r->filled <= item && r->status == CTR_OK && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
  if (r->filled <= item) {
    const ctr_status st = r->status != CTR_OK ? r->status : CTR_E_CANCELLED;
    pthread_mutex_unlock(&r->mu);
    if (st == CTR_E_CANCELLED && r->detail[0] == '\0')
      CTR_FAIL(CTR_E_CANCELLED, "the read of projection subset %lld was abandoned",
               (long long)(r->first + item));
    return ctr__error_set(st, "%s", r->detail);
  }
  *buf = r->buf[item % r->nbuf];
  pthread_mutex_unlock(&r->mu);
  return CTR_OK;
}

void ctr__ring_put(ctr__ring *r, int64_t item) {
  pthread_mutex_lock(&r->mu);
  r->put[item % r->nbuf] = 1;
  /* every item up to the first one still out is released */
  while (r->consumed < r->filled && r->put[r->consumed % r->nbuf]) {
    r->put[r->consumed % r->nbuf] = 0;
    r->consumed++;
  }
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

void ctr__ring_abort(ctr__ring *r) {
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

void ctr__ring_finish(ctr__ring *r) {
  if (!r->running) return;
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL);
  r->running = 0;
}

void ctr__ring_free(ctr__ring *r) {
  ctr__ring_finish(r);
  for (int i = 0; r->buf && i < r->nbuf; i++) ctr_host_free(r->buf[i]);
  free(r->buf);
  free(r->put);
  r->buf = NULL;
  r->put = NULL;
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

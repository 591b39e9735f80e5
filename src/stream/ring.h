/* A producer thread filling a ring of host buffers in item order (the
 * reader of the streamed pipeline: raw projection subsets from the input
 * file, or filtered subsets from the scratch file). One consumer takes the
 * items in order (next/release); or several consumers take items by index
 * (get/put), each item once, in any interleaving: a buffer is refilled once
 * every item before it has been put back. */
#ifndef CTR_STREAM_RING_H
#define CTR_STREAM_RING_H

#include "core/internal.h"

#include <pthread.h>

/* Fills `buf` with item `item`; runs on the producer thread. */
typedef ctr_status (*ctr__ring_fill_fn)(void *user, int64_t item, void *buf);

typedef struct ctr__ring {
  pthread_t thread;
  int running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nbuf;
  void **buf;
  size_t bytes;
  int64_t first, count; /* items [first, first + count) of the current pass */
  int64_t filled;       /* items filled so far (this pass) */
  int64_t consumed;     /* items released so far (every item before it is released) */
  unsigned char *put;   /* get/put: items of [consumed, consumed + nbuf) put back early */
  int stop;
  ctr_status status;    /* first producer error */
  char detail[1024];
  ctr__ring_fill_fn fill;
  void *user;
  double busy;          /* seconds inside fill */
} ctr__ring;

/* A ring of nbuf pinned buffers of `bytes` (ctr_host_alloc; each pinned by
 * the producer when first used). */
ctr_status ctr__ring_init(ctr__ring *r, int nbuf, size_t bytes, ctr__ring_fill_fn fill, void *user);
/* Starts a pass over items [first, first + count) on a new producer thread. */
ctr_status ctr__ring_start(ctr__ring *r, int64_t first, int64_t count);
/* Waits for the next item of the pass; *buf gets its buffer. A producer
 * error is raised here (its detail copied). */
ctr_status ctr__ring_next(ctr__ring *r, void **buf);
/* Releases the oldest item's buffer for refilling. */
void ctr__ring_release(ctr__ring *r);
/* Waits until item `item` of the pass is filled; *buf gets its buffer. Items
 * are taken by index from any thread (each once); CTR_E_CANCELLED after
 * ctr__ring_abort. */
ctr_status ctr__ring_get(ctr__ring *r, int64_t item, void **buf);
/* Puts item `item`'s buffer back (from any thread). */
void ctr__ring_put(ctr__ring *r, int64_t item);
/* Wakes every waiter with CTR_E_CANCELLED (another consumer failed). */
void ctr__ring_abort(ctr__ring *r);
/* Stops and joins the producer (after a pass or to abandon one). */
void ctr__ring_finish(ctr__ring *r);
void ctr__ring_free(ctr__ring *r);

#endif

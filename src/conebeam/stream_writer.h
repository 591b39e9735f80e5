/* The writer thread of the streamed pipeline: takes finished chunks of
 * subvolumes (already in the file's dtype) from host buffers and writes them
 * at their offset; after a subvolume's last chunk it flushes the file and
 * journals the subvolume with the CRC-32 of its bytes. Its pinned buffers are allocated on its own thread
 * at start, so that pinning overlaps the first subvolume's reads. */
#ifndef CTR_STREAM_WRITER_H
#define CTR_STREAM_WRITER_H

#include "core/internal.h"
#include "conebeam/journal.h"

#include <pthread.h>

typedef struct ctr__writer_job {
  int buf;
  int64_t z, nz;     /* slices relative to the run's first slice */
  int64_t slab;      /* subvolume index; -1: not the subvolume's last chunk */
  int64_t slab_z, slab_nz;
  ctr__slab_record rec; /* last chunk: what the journal records (the thread adds the CRC) */
} ctr__writer_job;

typedef struct ctr__writer {
  pthread_t thread;
  int running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nbuf;
  size_t buf_bytes;
  int ready;              /* buffers allocated */
  void **buf;
  int *busy;              /* buffer handed to the thread */
  ctr__writer_job queue[16];
  int qhead, qlen;
  int stop;
  ctr_status status;
  char detail[1024];
  /* what the thread writes to */
  ctr_stack_writer *out;     /* NULL: only the callback and statistics */
  ctr__journal *journal;     /* may be NULL */
  ctr_dtype dtype;           /* of the buffers and the file */
  size_t slice_bytes;        /* of one slice in the file's dtype */
  /* results */
  double busy_s;
  uint32_t crc;              /* CRC-32 of the current subvolume's chunks so far */
  int64_t slabs_written;
  int64_t stop_after;        /* fault injection (test builds, stream.c): fail after this many
                                subvolumes (0 = never) */
} ctr__writer;

/* nbuf pinned buffers of buf_bytes, allocated when the thread starts. */
ctr_status ctr__writer_init(ctr__writer *w, int nbuf, size_t buf_bytes);
ctr_status ctr__writer_start(ctr__writer *w);
/* A free buffer (blocks while all are being written); raises the thread's
 * error if it failed. */
ctr_status ctr__writer_acquire(ctr__writer *w, int *buf);
/* Returns an acquired buffer unused. */
void ctr__writer_giveback(ctr__writer *w, int buf);
void ctr__writer_submit(ctr__writer *w, const ctr__writer_job *job);
/* Waits until every submitted job is done; returns the thread's status. */
ctr_status ctr__writer_drain(ctr__writer *w);
void ctr__writer_free(ctr__writer *w);
#endif

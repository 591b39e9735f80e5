/* The writer thread of the streamed pipeline: takes finished chunks of
 * subvolumes (already in the file's dtype) from host buffers and writes them
 * at their offset; after a subvolume's last chunk it flushes the file and
 * journals the subvolume with the CRC-32 of its bytes. Its pinned buffers are allocated on its own thread
 * at start, so that pinning overlaps the first subvolume's reads. */
#ifndef CTR_STREAM_WRITER_H
#define CTR_STREAM_WRITER_H

#include "core/internal.h"
#include "stream/journal.h"

#include <pthread.h>

/* A chunk of a subvolume. Chunks come in any order and from any thread
 * (several workers deliver at once, a subvolume's chunks possibly from
 * several of them); once a subvolume's chunks cover all its slices it is
 * flushed and journalled with the CRC-32 of its slices in order. */
typedef struct ctr__writer_job {
  int buf;
  int64_t z, nz;     /* slices relative to the run's first slice */
  int64_t slab;      /* subvolume index */
  int64_t slab_z, slab_nz;
  ctr__slab_record rec; /* this chunk's range and clamped voxels (the CRC is the thread's) */
} ctr__writer_job;

/* What the writer gathered of one subvolume so far. */
typedef struct ctr__writer_slab {
  int64_t slices;      /* written so far */
  int npieces, cap;
  struct ctr__writer_piece { int64_t z, bytes; uint32_t crc; } *pieces;
  ctr__slab_record rec;
} ctr__writer_slab;

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
  int64_t z_offset;          /* the run's first slice is image z_offset of `out` (a
                                distributed rank's piece of the whole output) */
  ctr__journal *journal;     /* may be NULL */
  ctr_dtype dtype;           /* of the buffers and the file */
  size_t slice_bytes;        /* of one slice in the file's dtype */
  /* results */
  double busy_s;
  ctr__writer_slab *slabs;   /* per subvolume */
  int64_t nslabs;
  int64_t slabs_written;
  int64_t stop_after;        /* fault injection (test builds): fail after this many
                                subvolumes (0 = never) */
  int64_t kill_after;        /* fault injection (test builds): the process dies (SIGKILL) after
                                journalling this many (0 = never) */
  double delay_s;            /* fault injection (test builds): a distributed rank waits this
                                long before each subvolume (band) it claims (a slow rank) */
} ctr__writer;

/* nbuf pinned buffers of buf_bytes, allocated when the thread starts, for a
 * run of nslabs subvolumes. */
ctr_status ctr__writer_init(ctr__writer *w, int nbuf, size_t buf_bytes, int64_t nslabs);
ctr_status ctr__writer_start(ctr__writer *w);
/* A free buffer (blocks while all are being written); raises the thread's
 * error if it failed. Every function here may be called from any thread. */
ctr_status ctr__writer_acquire(ctr__writer *w, int *buf);
/* Returns an acquired buffer unused. */
void ctr__writer_giveback(ctr__writer *w, int buf);
void ctr__writer_submit(ctr__writer *w, const ctr__writer_job *job);
/* Waits until every submitted job is done; returns the thread's status. */
ctr_status ctr__writer_drain(ctr__writer *w);
void ctr__writer_free(ctr__writer *w);
/* After a run failed with st: lets the writer finish what it holds (its
 * journalled slabs stay valid), keeping the detail of st's error. */
void ctr__writer_settle(ctr__writer *w, ctr_status st);

#ifdef CTR_FAULT_INJECTION
/* The hooks of a test build (docs/distributed.md, "Tests") for a
 * distributed rank `rank`, when CTRECON_INJECT_RANK is unset or names it:
 * CTRECON_INJECT_STOP_AFTER_SLABS=k fails (CTR_E_CANCELLED) and
 * CTRECON_INJECT_KILL_AFTER_SLABS=k dies (SIGKILL) after k subvolumes
 * (bands) journalled; CTRECON_INJECT_DELAY_MS=t sets delay_s (a slow rank,
 * for the balancing); CTRECON_INJECT_HANG=1 hangs here, never progressing
 * (the hung-rank timeout's case). */
void ctr__writer_inject(ctr__writer *w, int rank);
#endif
#endif

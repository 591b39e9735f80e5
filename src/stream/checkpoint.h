/* The checkpoint of a run: the state after a finished step of a run that
 * continues from it (the iterative solvers: after an iteration; iterative/
 * checkpoint.c), in one file written under a temporary name and renamed
 * into place, so that the file on disk is always a whole state. A resume
 * checks that the checkpoint belongs to the same run, field by field of a
 * typed fingerprint whose every field has a name (a mismatch names it and
 * both values), and that its bytes are intact (CRC-32). Its resume
 * semantics are the streamed outputs' (output.h, "Resume"); unlike a
 * journal, a checkpoint stays after a run that succeeded: it is the point
 * that a later call with more steps continues from.
 *
 * Layout (host byte order: little-endian on every machine ctrecon runs on):
 *   the magic (8 bytes), the fingerprint's int64 fields, its double fields,
 *   the payload (what the kind's `write` puts: byte runs and float32
 *   vectors, in its order), the CRC-32 of everything before it (uint32).
 * Another magic of the same family (an older layout) is refused by name.
 *
 * Not thread-safe: one thread (the run's) calls these. Not installed. */
#ifndef CTR_STREAM_CHECKPOINT_H
#define CTR_STREAM_CHECKPOINT_H

#include "core/internal.h"

#define CTR__CHECKPOINT_MAX_FIELDS 32

/* One field of a fingerprint. */
typedef struct ctr__checkpoint_field {
  const char *name;     /* in messages: "algorithm", "slab_slices" */
  const char *checksum; /* a checksum of what it names ("geometry"): a mismatch says "its
                           NAME differs from this run's (other geometry)", checked before
                           the other fields; NULL: a value, named in messages */
  /* int64 fields: the value's name as the user knows it (an enum's: "sirt"),
     NULL for one it does not know; NULL: the number */
  const char *(*format)(int64_t v);
} ctr__checkpoint_field;

typedef struct ctr__checkpoint_io ctr__checkpoint_io;

/* A kind of checkpoint: its layout and fingerprint, and the operations
 * through which the run puts and gets its payload. Every operation runs on
 * the caller's thread; `self` is the run's state, owned by the caller. */
typedef struct ctr__checkpoint_ops {
  const char *magic;   /* 8 characters: this layout's ("CTRITER3") */
  const char *family;  /* the prefix every layout of the kind begins with ("CTRITER") */
  const char *what;    /* "iterate checkpoint": "'x' is not a ctrecon iterate checkpoint" */
  const char *resume_option; /* "ctr_iterate_options.resume": named in messages */
  int nints, nreals;                  /* each at most CTR__CHECKPOINT_MAX_FIELDS */
  const ctr__checkpoint_field *ints;  /* nints names of the int64 fields, in file order */
  const ctr__checkpoint_field *reals; /* nreals names of the double fields (no format) */
  /* Puts the payload (ctr__checkpoint_put, _put_vector). */
  ctr_status (*write)(void *self, ctr__checkpoint_io *io);
  /* Gets it back in the same order (ctr__checkpoint_get, _get_vector),
   * checking each part against the run before it reads on (CTR_E_FORMAT
   * naming io->path: "cut short?", another count of vectors). Vectors go
   * straight into the run's (upload); the values self keeps aside are its
   * own only once ctr__checkpoint_read succeeded (the CRC-32 is checked
   * after read returns). */
  ctr_status (*read)(void *self, ctr__checkpoint_io *io);
  /* Vector v's values [first, first + n) into host memory `host` (write),
   * and back from it (read); the vector may be in GPU memory. */
  ctr_status (*download)(void *self, int v, int64_t first, int64_t n, float *host);
  ctr_status (*upload)(void *self, int v, int64_t first, int64_t n, const float *host);
} ctr__checkpoint_ops;

/* A checkpoint being written or read: the operations see it through the
 * functions below. */
struct ctr__checkpoint_io {
  const ctr__checkpoint_ops *ops;
  void *self;
  const char *path;
  int fd;
  int64_t size;  /* read: the file's bytes */
  int64_t off;   /* the next byte of the payload */
  uint32_t crc;  /* CRC-32 of the bytes before off */
  float *stage;  /* the vectors' staging buffer (allocated on first use) */
};

/* The payload's parts: n bytes, and vector v of n values (staged through
 * host memory, a part at a time, by the kind's download / upload). */
ctr_status ctr__checkpoint_put(ctr__checkpoint_io *io, const void *data, size_t n);
ctr_status ctr__checkpoint_put_vector(ctr__checkpoint_io *io, int v, int64_t n);
/* A part that the file does not hold (it ends before its CRC-32) is
 * CTR_E_FORMAT "... (cut short?)". */
ctr_status ctr__checkpoint_get(ctr__checkpoint_io *io, void *data, size_t n);
ctr_status ctr__checkpoint_get_vector(ctr__checkpoint_io *io, int v, int64_t n);
/* Reading: the payload's bytes after io->off, before the CRC-32. */
int64_t ctr__checkpoint_left(const ctr__checkpoint_io *io);

/* Writes the checkpoint of kind ops with fingerprint (ints, reals) and
 * self's payload to `path`, atomically (a temporary renamed into place). */
ctr_status ctr__checkpoint_write(const ctr__checkpoint_ops *ops, void *self, const char *path,
                                 const int64_t *ints, const double *reals);
/* Reads checkpoint `path` of kind ops into self: its magic (another
 * layout of the family refused by name, with the advice to start over),
 * its fingerprint against (ints, reals) (CTR_E_FORMAT naming the field
 * that differs and, but for checksums, both values), the payload (ops->read)
 * and its CRC-32 ("damaged"). */
ctr_status ctr__checkpoint_read(const ctr__checkpoint_ops *ops, void *self, const char *path,
                                const int64_t *ints, const double *reals);

/* The start of a run that keeps checkpoint `path`: the run's lock, a write
 * lock (ctr__file_lock_open) on "<path>.lock", held to the end (the
 * checkpoint itself is replaced at each write); a lock file left by a
 * killed run is taken over, one held by another process is
 * CTR_E_INVALID_ARGUMENT "'path' is in use by process N". Then the resume
 * rules (output.h, ctr__stream_resume_rule): resume needs the checkpoint,
 * and a checkpoint there without resume is refused. *lock: the lock's
 * descriptor (-1 on failure: nothing is held). */
ctr_status ctr__checkpoint_begin(const ctr__checkpoint_ops *ops, const char *path, int resume,
                                 int *lock);
/* The end: the lock file removed, the lock released (-1: none held). The
 * checkpoint stays. */
void ctr__checkpoint_end(const char *path, int lock);

#endif

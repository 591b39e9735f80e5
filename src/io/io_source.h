/* The projection source seam (docs/architecture.md, "Sources"): where a live
 * reconstruction takes a scan from while it is acquired. A source kind is an
 * ops table; io_source.c opens one by the form of its address, and checks
 * and counts every frame the kind delivers (the one place of the rules of
 * docs/synchrotron.md, "Message format": sizes, order, duplicates), so a
 * kind only reads.
 *
 * Kinds: the finished file (io_source.c: a stack read through
 * ctr_stack_reader, DXchange's flats, darks and theta; every projection is
 * there, the end comes after the last), the growing DXchange file read under
 * HDF5's SWMR (io_source_swmr.c), the ZeroMQ PULL socket (io_source_zmq.c).
 *
 * Threads: a source serves one thread at a time (the caller's); a kind's
 * operations run on that thread and may keep their own threads (libzmq's). */
#ifndef CTR_IO_SOURCE_H
#define CTR_IO_SOURCE_H

#include "core/internal.h"

#include <ctrecon/live.h>

/* What a kind read: one frame, not checked yet. */
typedef struct ctr__raw_frame {
  ctr_frame_kind kind;
  int end;                 /* 1: the end of the scan (no pixels) */
  int64_t index;           /* projections: as the source numbers them */
  double angle_deg;        /* NAN: none */
  int64_t width, height;
  ctr_dtype dtype;
  const void *pixels;      /* the kind's memory: valid until its next `next` or `close` */
  size_t bytes;            /* of pixels as received (a socket's may be wrong: checked) */
  int64_t count;           /* projections of the scan the frame says (0: not said) */
  double t_arrived;        /* ctr__now_s() when the kind received it (0: when read) */
  int malformed;           /* 1: the kind could not make a frame of it (bad header): dropped */
} ctr__raw_frame;

typedef struct ctr__source_ops {
  const char *name; /* "file", "hdf5-swmr", "zmq": in messages */
  /* The next frame within wait_s seconds: *got 1 and *f filled (its pixels
   * the kind's until its next call), or *got 0 when nothing came (the scan is
   * still being acquired). A frame the kind cannot parse comes back with
   * f->malformed (the seam counts and drops it). After the last projection of a
   * finished file, or an end message, f->end. Errors: the file or socket
   * failed (CTR_E_IO), the file is not a scan (CTR_E_FORMAT). */
  ctr_status (*next)(void *impl, double wait_s, ctr__raw_frame *f, int *got);
  /* The file that holds the whole scan once it is complete ("scan.h5:/exchange/data"
   * or a stack's path), NULL when the frames are all there is (a socket: the
   * caller keeps them). Static while the source is open. */
  const char *(*data_path)(void *impl);
  /* The angles (degrees) the scan announced before its projections (a
   * DXchange file's /exchange/theta: *n of them), or NULL (*n 0) when the
   * frames bring them one by one (a socket), or not yet (a file not yet
   * there). Valid until the next call of the kind. */
  const double *(*angles)(void *impl, int64_t *n);
  /* The address as bound (a socket's port chosen), static while open. */
  const char *(*endpoint)(void *impl);
  /* Optional (NULL: nothing to do): closes the kind's handle on the file
   * that data_path names, so that the final run can open it (HDF5 refuses a
   * second open of a file with other flags in one process); `next` is not
   * called after it. */
  void (*release)(void *impl);
  /* Frees everything; closes the file or socket. */
  void (*close)(void *impl);
} ctr__source_ops;

struct ctr_source {
  const ctr__source_ops *ops;
  void *impl;
  ctr_source_options o;
  ctr_source_status st;
  ctr_dtype dtype;               /* of the first frame */
  unsigned char *seen;           /* projection indices delivered (count known), or NULL */
  int64_t seen_n;
  double *angles;                /* the delivered projections' angles by index (count) */
  double t_last;                 /* ctr__now_s() of the last frame taken */
  double t_oldest_wait;          /* the wait of the oldest frame of the current batch */
};

/* The announced angles (ops->angles) and the finished scan's file
 * (ops->data_path) of an open source. */
const double *ctr__source_angles(const ctr_source *s, int64_t *n);
const char *ctr__source_data_path(const ctr_source *s);
/* ops->release, where the kind has one. */
void ctr__source_release(ctr_source *s);
/* A resumed live run (fbp_live.c): the source, before its first frame, takes
 * the n projections `index` (increasing, angles `angle`) of frames of
 * width x height x dtype as delivered already, and the scan's count (0:
 * not known); frames of those indices are then duplicates, and flats and
 * darks come too late (dropped, counted as out of order). */
ctr_status ctr__source_resume(ctr_source *s, int64_t width, int64_t height, ctr_dtype dtype,
                              int64_t count, const int64_t *index, const double *angle, int64_t n);

/* Each kind's open, called by ctr_source_open: *ops and *impl, or an error
 * naming the address. count: the scan's projections the kind knows (0:
 * not known). Without the library (HDF5, ZeroMQ): CTR_E_UNSUPPORTED saying
 * "built without ...". */
ctr_status ctr__source_file_open(const char *path, const ctr_source_options *o,
                                 const ctr__source_ops **ops, void **impl, int64_t *count);
ctr_status ctr__source_swmr_open(const char *path, const ctr_source_options *o,
                                 const ctr__source_ops **ops, void **impl, int64_t *count);
ctr_status ctr__source_zmq_open(const char *endpoint, const ctr_source_options *o,
                                const ctr__source_ops **ops, void **impl, int64_t *count);

/* The message format's header of a frame (io_source_zmq.c writes and reads it;
 * the replay sends it): JSON into buf, NUL-terminated. */
int ctr__frame_header(char *buf, size_t n, const ctr__raw_frame *f);

/* The DXchange writer of ctr_replay's SWMR destination (io_source_swmr.c):
 * creates `path` (refused when it exists unless overwrite) with
 * /exchange/data (0 x height x width, growing, a chunk a projection),
 * data_white, data_dark (nflat, ndark) and theta (degrees, units "deg"),
 * writes the flats, darks and theta, and starts SWMR writing. */
typedef struct ctr__swmr_writer ctr__swmr_writer;
ctr_status ctr__swmr_writer_create(const char *path, int64_t width, int64_t height, ctr_dtype dtype,
                                   const void *flats, int64_t nflat, const void *darks,
                                   int64_t ndark, const double *theta, int64_t count,
                                   int overwrite, ctr__swmr_writer **out);
/* Appends one projection and flushes it (readers see it after their refresh). */
ctr_status ctr__swmr_writer_append(ctr__swmr_writer *w, const void *pixels);
/* Closes the file (NULL allowed). */
ctr_status ctr__swmr_writer_close(ctr__swmr_writer *w);

/* The ZeroMQ PUSH side of ctr_replay (io_source_zmq.c). */
typedef struct ctr__zmq_sender ctr__zmq_sender;
ctr_status ctr__zmq_sender_open(const char *endpoint, int bind, double linger_s,
                                ctr__zmq_sender **out, const char **bound);
ctr_status ctr__zmq_send_frame(ctr__zmq_sender *s, const ctr__raw_frame *f);
void ctr__zmq_sender_close(ctr__zmq_sender *s);

#endif

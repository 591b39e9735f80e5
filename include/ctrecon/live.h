/* ctrecon/live.h — live beamline reconstruction (docs/synchrotron.md, "Live mode"): projection
 * sources that grow while a scan is acquired (a DXchange HDF5 file written under SWMR, a
 * ZeroMQ socket), their replay for tests and demos, and the live FBP: preview slices
 * updated as projections arrive, then the streamed reconstruction of the finished scan.
 * Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_LIVE_H
#define CTRECON_LIVE_H

#include "ctrecon/core.h"
#include "ctrecon/io.h"
#include "ctrecon/parbeam.h"
#include "ctrecon/synchrotron.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Projection sources ------------------------------------------------------ */

/* A scan as it arrives: flat and dark fields first, then projections in index
 * order, then an end. Threads: one thread at a time per source. */
typedef struct ctr_source ctr_source;

typedef enum ctr_frame_kind {
  CTR_FRAME_PROJECTION = 0,
  CTR_FRAME_FLAT = 1,
  CTR_FRAME_DARK = 2
} ctr_frame_kind;

typedef enum ctr_source_event {
  CTR_SOURCE_FRAME = 0,   /* *frame holds the next frame */
  CTR_SOURCE_WAITING = 1, /* nothing new within the wait: the scan is still being acquired */
  CTR_SOURCE_ENDED = 2    /* the scan ended: every expected projection arrived, or an end
                             frame came (ctr_source_status says how many arrived) */
} ctr_source_event;

/* One frame, as ctr_source_next gives it. */
#define CTR_FRAME_VERSION 1u
typedef struct ctr_frame {
  unsigned version;
  ctr_frame_kind kind;
  int64_t index;        /* projections: the index in the scan (0 ..); flats, darks: their count
                           so far */
  double angle_deg;     /* projections: the angle in degrees (NAN when the source has none) */
  int64_t width, height;
  ctr_dtype dtype;      /* uint16 or float32 */
  const void *pixels;   /* width x height, width fastest, maybe unaligned (copy it out); the
                           source's memory, valid until the next ctr_source_next or
                           ctr_source_close */
} ctr_frame;
#define CTR_FRAME_INIT { CTR_FRAME_VERSION, CTR_FRAME_PROJECTION, 0, 0.0, 0, 0, (ctr_dtype)0, NULL }
CTR_API ctr_status ctr_frame_init(ctr_frame *s, unsigned version);

#define CTR_SOURCE_OPTIONS_VERSION 1u
typedef struct ctr_source_options {
  unsigned version;
  int bind;           /* "tcp://HOST:PORT": 1 binds the PULL socket (PORT 0 or *: a free port,
                         ctr_source_endpoint says which), 0 connects to a sender that binds */
  int64_t count;      /* projections the scan has; 0 = what the source says (DXchange:
                         /exchange/theta's length; a socket: the headers' "count") */
  double poll_s;      /* a growing HDF5 file: how often it is looked at again while waiting
                         (0 = 0.02 s) */
  int follow;         /* an HDF5 file: 1 follows it as it grows (SWMR); 0 reads it as
                         finished (its projections are all there) */
} ctr_source_options;
#define CTR_SOURCE_OPTIONS_INIT { CTR_SOURCE_OPTIONS_VERSION, 0, 0, 0.0, 1 }
CTR_API ctr_status ctr_source_options_init(ctr_source_options *s, unsigned version);

/* What a source has delivered and dropped so far. Frames that cannot be taken are
 * dropped, never used, and counted by cause (docs/synchrotron.md, "Message format");
 * a dropped projection is missing from the scan, so ctr_fbp_live_finish refuses it. */
#define CTR_SOURCE_STATUS_VERSION 1u
typedef struct ctr_source_status {
  unsigned version;
  int64_t width, height;    /* of the frames (0 before the first) */
  int64_t count;            /* projections expected (0: unknown so far) */
  int64_t projections, flats, darks; /* frames delivered */
  int64_t last_index;       /* the last projection delivered (-1: none) */
  int64_t dropped_header;   /* not a two-part message, a header that is not the format's JSON,
                               an unknown kind or dtype, an index beyond count */
  int64_t dropped_size;     /* pixels not shape x dtype bytes, or a shape or dtype other than
                               the first frame's */
  int64_t dropped_duplicate; /* a projection index delivered before */
  int64_t dropped_order;    /* a projection index below the last one delivered (not a
                               duplicate), or a flat or dark after the first projection */
  int ended;                /* 1: the source said the scan ended */
} ctr_source_status;
#define CTR_SOURCE_STATUS_INIT { CTR_SOURCE_STATUS_VERSION, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0 }
CTR_API ctr_status ctr_source_status_init(ctr_source_status *s, unsigned version);

/* Opens a source. `where`:
 *   "tcp://HOST:PORT"   a ZeroMQ PULL socket (needs CTR_FEATURE_ZMQ: otherwise
 *                       CTR_E_UNSUPPORTED "built without ZeroMQ"); frames as
 *                       docs/synchrotron.md's message format;
 *   "scan.h5"           a DXchange file (CTR_FEATURE_HDF5): /exchange/data_white and
 *                       data_dark, then /exchange/data with /exchange/theta's angles; with
 *                       o->follow, read under SWMR as its writer appends (it may not exist
 *                       yet: it is waited for);
 *   another stack       (TIFF, raw with a hint is not possible here: NRRD, TIFF, HDF5
 *                       "file.h5:/dataset") read as finished, without flats or darks.
 * o may be NULL (the defaults). */
CTR_API ctr_status ctr_source_open(const char *where, const ctr_source_options *o,
                                   ctr_source **out);
/* The next frame within wait_s seconds (0: only what is there). Frames that cannot be
 * taken are dropped and counted (ctr_source_get_status) and the wait goes on. Errors:
 * CTR_E_IO (the file or socket failed), CTR_E_FORMAT (the file is not a scan). */
CTR_API ctr_status ctr_source_next(ctr_source *s, double wait_s, ctr_frame *frame,
                                   ctr_source_event *event);
CTR_API ctr_status ctr_source_get_status(const ctr_source *s, ctr_source_status *status);
/* The socket's endpoint as bound ("tcp://127.0.0.1:41234": the port chosen for PORT 0),
 * or the path of a file source; static while the source is open. */
CTR_API const char *ctr_source_endpoint(const ctr_source *s);
CTR_API void ctr_source_close(ctr_source *s);

/* ---- Replaying a scan --------------------------------------------------------- */

#define CTR_REPLAY_OPTIONS_VERSION 1u
typedef struct ctr_replay_options {
  unsigned version;
  double rate;          /* projections per second (0: as fast as it goes) */
  int bind;             /* "tcp://": 1 binds the PUSH socket (PORT 0: a free one, reported
                           through on_endpoint), 0 connects */
  int64_t stop_after;   /* projections sent before stopping without an end (a writer that
                           dies mid-scan, for tests); 0 = all, then the end */
  int overwrite;        /* an HDF5 destination: replace an existing file */
  void (*on_endpoint)(void *user, const char *endpoint); /* the bound endpoint, once */
  ctr_progress_fn progress; /* optional: fraction of the projections sent */
  void *user;
  double linger_s;      /* "tcp://": how long the socket may deliver queued frames after the
                           last one (0 = 30 s) */
} ctr_replay_options;
#define CTR_REPLAY_OPTIONS_INIT { CTR_REPLAY_OPTIONS_VERSION, 0.0, 0, 0, 0, NULL, NULL, NULL, 0.0 }
CTR_API ctr_status ctr_replay_options_init(ctr_replay_options *s, unsigned version);

/* Replays the DXchange file `scan` (flats, darks, then its projections at o->rate)
 * into `to`: "tcp://HOST:PORT" (a ZeroMQ PUSH socket, the message format) or an HDF5
 * file written under SWMR (a DXchange file whose /exchange/data grows one projection
 * at a time, flushed after each: what ctr_source_open follows). *sent (may be NULL):
 * projections sent. */
CTR_API ctr_status ctr_replay(const char *scan, const char *to, const ctr_replay_options *o,
                              int64_t *sent);

/* ---- Live FBP ------------------------------------------------------------------ */

/* A live run: one thread at a time. It has its own preview writer thread
 * (ctr_fbp_live_queue_preview), ended by ctr_fbp_live_free. */
typedef struct ctr_fbp_live ctr_fbp_live;

/* ctr_live_options.accumulate: the full volume summed as projections arrive. */
typedef enum ctr_live_accumulate {
  CTR_LIVE_ACCUMULATE_OFF = 0,  /* the volume reconstructed after the scan (ctr_fbp_stream) */
  CTR_LIVE_ACCUMULATE_ON = 1,   /* kept in memory and summed as projections arrive; a run it
                                   cannot take (memory, options: the error names them) is
                                   refused */
  CTR_LIVE_ACCUMULATE_AUTO = 2  /* ON where the run allows it, else OFF */
} ctr_live_accumulate;

#define CTR_LIVE_OPTIONS_VERSION 2u /* 2: resume, accumulate */
typedef struct ctr_live_options {
  unsigned version;
  const ctr_fbp_stream_options *stream; /* the final run's options (rows, corrections, filter,
                                           output type...); NULL = the defaults. The preview
                                           uses its fbp filter and interpolation and its rows */
  const int64_t *preview_rows;  /* detector rows previewed; NULL: the first, middle and last
                                   of the rows reconstructed */
  int npreview;                 /* entries of preview_rows (1 .. 64) */
  double timeout_s;             /* no frame for this long: the scan stopped (0 = 30 s) */
  const char *spool;            /* a socket's projections are kept in this raw file for the
                                   final run (an existing file is refused unless resume), with
                                   its state SPOOL.index and SPOOL.cal; removed by
                                   ctr_fbp_live_free once the volume is written, kept when
                                   the scan stopped early (resume continues it); NULL: a new
                                   file in the system's temporary folder (P_tmpdir, /tmp),
                                   always removed */
  const char *flat_file, *dark_file; /* stacks of flat and dark fields (any readable stack,
                                   "file.h5:/exchange/data_white"), averaged, instead of the
                                   source's; NULL: the source's (none: ones, zeros) */
  /* version 2 */
  int resume;                   /* 1: continue the stopped run whose state `spool` holds
                                   (docs/synchrotron.md, "Resuming a stopped run"): its
                                   projections are taken as received, the previews rebuilt
                                   from them, and the source's frames of those indices dropped
                                   as duplicates; needs `spool` */
  ctr_live_accumulate accumulate; /* the full volume during the acquisition (default OFF) */
} ctr_live_options;
#define CTR_LIVE_OPTIONS_INIT { CTR_LIVE_OPTIONS_VERSION, NULL, NULL, 0, 0.0, NULL, NULL, NULL, \
                                0, CTR_LIVE_ACCUMULATE_OFF }
CTR_API ctr_status ctr_live_options_init(ctr_live_options *s, unsigned version);

#define CTR_LIVE_STATE_VERSION 5u /* 2: resumed, accumulated; 3: the step's seconds;
                                     4: the preview writer's counts; 5: the device's sum */
typedef struct ctr_live_state {
  unsigned version;
  int64_t projections;  /* arrived (and backprojected into the previews) */
  int64_t expected;     /* the scan's (0: not known yet) */
  int64_t updated;      /* projections this step added to the previews */
  int64_t dropped;      /* frames the source dropped so far (ctr_source_get_status: why) */
  int ended;            /* 0: acquiring; 1: complete (every expected projection);
                           2: stopped early (an end, or timeout_s without a frame, with
                           projections missing) */
  int64_t nx, ny, npreview; /* the preview slices (0 before the first projection) */
  double idle_s;        /* seconds since the last frame */
  double lag_s;         /* this step's oldest frame's wait in the source before it was taken
                           (0: none waited) */
  /* version 2 */
  int64_t resumed;      /* projections taken from a stopped run's state (resume) */
  int64_t accumulated;  /* projections summed into the full volume (accumulate; they go in
                           index order: one that arrived after a gap waits for it) */
  /* version 3: where this step's time went (seconds; docs/synchrotron.md, "Where a
     preview step's time goes") */
  double read_s;        /* taking the frames: the source (a file's refresh, a socket's
                           receive), the spool's writes and its index */
  double filter_s;      /* the previewed rows flat-fielded, -log'ed, filtered and weighted */
  double backproject_s; /* their backprojection into the previews (on a GPU: upload,
                           kernels, download) */
  double accumulate_s;  /* the full volume's sum (accumulate; on a GPU the calls that queue
                           it: the device works on) */
  double write_s;       /* the last preview write that completed (ctr_fbp_live_write_preview,
                           or the writer's of ctr_fbp_live_queue_preview; 0: none yet) */
  /* version 4 */
  int64_t preview_writes;     /* preview writes completed (either way) */
  int64_t preview_superseded; /* queued previews replaced by a newer one before the writer
                                 took them (counted, not written) */
  /* version 5: the GPU's time on the full volume's sum (accumulate on a GPU; 0 on the
     CPU, or when no batch's sum has completed since the last step) */
  double accumulate_upload_s;  /* the device's seconds uploading the last completed batch */
  double accumulate_kernels_s; /* and flat-fielding, filtering and summing it */
} ctr_live_state;
#define CTR_LIVE_STATE_INIT                                                                     \
  { CTR_LIVE_STATE_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, \
    0, 0, 0.0, 0.0 }
CTR_API ctr_status ctr_live_state_init(ctr_live_state *s, unsigned version);

/* A live reconstruction of the scan `src` delivers (the source stays the caller's;
 * close it after ctr_fbp_live_free). params as for ctr_fbp_stream, except that nbins
 * and nangles may be 0 and angles_deg NULL: they come from the source (its frames'
 * angles). The axis must be a value or CTR_AXIS_CENTER for the previews; CTR_AXIS_AUTO
 * previews about the detector's centre and finds the axis in the final run. */
CTR_API ctr_status ctr_fbp_live_open(ctr_context *ctx, ctr_source *src,
                                     const ctr_parallel_params *params,
                                     const ctr_live_options *o, ctr_fbp_live **out);
/* Takes the frames that arrive within wait_s (returning after the first batch), and
 * backprojects each new projection, flat-fielded, -log'ed and ramp-filtered, into the
 * preview slices with its angle's weight in the finished scan (incremental FBP: after
 * every projection the previews are the FBP of the slices' rows, to rounding). */
CTR_API ctr_status ctr_fbp_live_step(ctr_fbp_live *l, double wait_s, ctr_live_state *state);
/* Preview k (0 .. npreview - 1): nx x ny floats into slice; *row (may be NULL) its
 * detector row. */
CTR_API ctr_status ctr_fbp_live_preview(const ctr_fbp_live *l, int64_t k, float *slice,
                                        int64_t *row);
/* Writes the previews now, each atomically (a temporary name renamed into place,
 * replacing the previous one): PREFIX_rowNNNNN.png (8-bit, the slices' 0.5/99.5 %
 * window) for each, and PREFIX.h5:/preview (nx x ny x npreview float32; with HDF5) or
 * PREFIX.zarr. `first`: an existing file is refused unless `overwrite` (later writes
 * replace their own). */
CTR_API ctr_status ctr_fbp_live_write_preview(ctr_fbp_live *l, const char *prefix, int first,
                                              int overwrite);
/* The same files, written by the run's writer thread so that the steps never wait for
 * them (docs/synchrotron.md, "Preview files"): the previews now are copied and queued,
 * and the call returns. A queued state that the writer has not taken yet is replaced
 * (counted in ctr_live_state.preview_superseded, not written): the writer always writes
 * the latest. `first` and `overwrite` are checked here, at once. A failed write is
 * reported by the next queue or flush (the files already there stay whole). */
CTR_API ctr_status ctr_fbp_live_queue_preview(ctr_fbp_live *l, const char *prefix, int first,
                                              int overwrite);
/* Waits until the queued previews are written (the files then hold the last state
 * queued); a write that failed is reported. ctr_fbp_live_write_preview and
 * ctr_fbp_live_free wait too. */
CTR_API ctr_status ctr_fbp_live_flush_preview(ctr_fbp_live *l);
/* After the scan ended complete: the full reconstruction by ctr_fbp_stream of the
 * finished file (the HDF5 source's, opened when its writer has closed it, waiting up to
 * timeout_s) or of the spooled projections, with the source's angles, flat and dark:
 * byte for byte what ctr_fbp_stream gives for the finished file. A scan that stopped
 * early is refused (CTR_E_INVALID_ARGUMENT naming how many projections arrived and
 * which are missing; nothing is written). report as for ctr_fbp_stream. The writer
 * thread may still be writing queued previews meanwhile: both go on side by side (it
 * reads only what is fixed after the first frame); ctr_fbp_live_flush_preview after
 * this call waits for it. */
CTR_API ctr_status ctr_fbp_live_finish(ctr_fbp_live *l, const char *out, ctr_file_format fmt,
                                       ctr_fbp_stream_report *report);
/* Frees the live run (after the writer's queued previews are written); a spool file is
 * removed. */
CTR_API void ctr_fbp_live_free(ctr_fbp_live *l);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_LIVE_H */

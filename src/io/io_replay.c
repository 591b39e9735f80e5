/* ctr_replay: a finished scan sent again as it was acquired, for tests and
 * demos of the live mode (docs/synchrotron.md, "Live mode"): its flats and
 * darks, then its projections at a given rate, into a ZeroMQ PUSH socket
 * (the message format) or a DXchange file written under SWMR. */
#include "io/io_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void sleep_until(double t) {
  const double d = t - ctr__now_s();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
  nanosleep(&ts, NULL);
}

typedef struct replay {
  ctr_replay_options o;
  const char *scan, *to;
  ctr_source *src;
  ctr__zmq_sender *zs;
  ctr__swmr_writer *hw;
  void *cal[2];       /* flats, darks (an HDF5 destination writes them first) */
  int64_t ncal[2];
  int64_t count, sent;
  double t0;
} replay;

static void raw_of(ctr__raw_frame *r, const ctr_frame *f, int64_t count) {
  memset(r, 0, sizeof *r);
  r->kind = f->kind;
  r->index = f->index;
  r->angle_deg = f->angle_deg;
  r->width = f->width;
  r->height = f->height;
  r->dtype = f->dtype;
  r->pixels = f->pixels;
  r->bytes = (size_t)(f->width * f->height) * ctr_dtype_size(f->dtype);
  r->count = count;
}

static ctr_status keep_calibration(replay *r, const ctr_frame *f) {
  const int k = f->kind == CTR_FRAME_DARK;
  const size_t b = (size_t)(f->width * f->height) * ctr_dtype_size(f->dtype);
  void *p = realloc(r->cal[k], b * (size_t)(r->ncal[k] + 1));
  if (!p) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the flat and dark fields)");
  r->cal[k] = p;
  memcpy((char *)p + b * (size_t)r->ncal[k], f->pixels, b);
  r->ncal[k]++;
  return CTR_OK;
}

/* The HDF5 destination, made at the first projection (flats and darks known). */
static ctr_status start_file(replay *r, const ctr_frame *f) {
  double *theta = NULL;
  int64_t n = 0;
  if (ctr_hdf5_read_angles(r->scan, "/exchange/theta", &theta, &n, NULL) != CTR_OK) {
    ctr_error_clear(); /* no angles: the reader's from elsewhere */
    theta = NULL;
    n = 0;
  }
  if (theta && n != r->count) {
    free(theta);
    CTR_FAIL(CTR_E_FORMAT, "'%s': /exchange/theta holds %lld angles for %lld projections", r->scan,
             (long long)n, (long long)r->count);
  }
  const ctr_status st = ctr__swmr_writer_create(r->to, f->width, f->height, f->dtype, r->cal[0],
                                                r->ncal[0], r->cal[1], r->ncal[1], theta, n,
                                                r->o.overwrite, &r->hw);
  free(theta);
  return st;
}

/* One frame to the destination, a projection at its time. */
static ctr_status send_frame(replay *r, const ctr_frame *f) {
  if (f->kind != CTR_FRAME_PROJECTION) {
    if (r->zs) {
      ctr__raw_frame raw;
      raw_of(&raw, f, r->count);
      return ctr__zmq_send_frame(r->zs, &raw);
    }
    return keep_calibration(r, f);
  }
  if (!r->zs && !r->hw) CTR_CHECK(start_file(r, f));
  if (r->sent == 0) r->t0 = ctr__now_s();
  if (r->o.rate > 0) sleep_until(r->t0 + (double)r->sent / r->o.rate);
  if (r->zs) {
    ctr__raw_frame raw;
    raw_of(&raw, f, r->count);
    CTR_CHECK(ctr__zmq_send_frame(r->zs, &raw));
  } else {
    CTR_CHECK(ctr__swmr_writer_append(r->hw, f->pixels));
  }
  r->sent++;
  if (r->o.progress && !r->o.progress(r->o.user, "replay", (double)r->sent / (double)r->count))
    CTR_FAIL(CTR_E_CANCELLED, "the replay of '%s' was cancelled after %lld projections", r->scan,
             (long long)r->sent);
  return CTR_OK;
}

static ctr_status run(replay *r) {
  ctr_source_options so = CTR_SOURCE_OPTIONS_INIT;
  so.follow = 0; /* the scan is finished */
  CTR_CHECK(ctr_source_open(r->scan, &so, &r->src));
  ctr_source_status ss = CTR_SOURCE_STATUS_INIT;
  CTR_CHECK(ctr_source_get_status(r->src, &ss));
  r->count = ss.count;
  if (!strncmp(r->to, "tcp://", 6)) {
    int64_t n = 0;
    if (!ctr__source_angles(r->src, &n) || n != r->count)
      CTR_FAIL(CTR_E_FORMAT, "'%s' has no /exchange/theta of its %lld projections: a frame of the "
               "message format carries its projection's angle", r->scan, (long long)r->count);
    const char *bound = NULL;
    CTR_CHECK(ctr__zmq_sender_open(r->to, r->o.bind, r->o.linger_s ? r->o.linger_s : 30.0, &r->zs,
                                   &bound));
    if (r->o.on_endpoint) r->o.on_endpoint(r->o.user, bound);
  }
  for (;;) {
    ctr_frame f = CTR_FRAME_INIT;
    ctr_source_event ev;
    CTR_CHECK(ctr_source_next(r->src, 0, &f, &ev));
    if (ev != CTR_SOURCE_FRAME) break;
    if (f.kind == CTR_FRAME_PROJECTION && r->o.stop_after && r->sent >= r->o.stop_after)
      return CTR_OK; /* stopped mid-scan, without an end */
    CTR_CHECK(send_frame(r, &f));
  }
  if (r->zs) {
    ctr__raw_frame end;
    memset(&end, 0, sizeof end);
    end.end = 1;
    CTR_CHECK(ctr__zmq_send_frame(r->zs, &end));
  }
  return CTR_OK;
}

ctr_status ctr_replay(const char *scan, const char *to, const ctr_replay_options *opts,
                      int64_t *sent) {
  if (!scan || !*scan || !to || !*to)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_replay: the scan and the destination are required");
  replay r;
  memset(&r, 0, sizeof r);
  r.o = (ctr_replay_options)CTR_REPLAY_OPTIONS_INIT;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_replay_options, &r.o, opts));
  if (!(r.o.rate >= 0) || !isfinite(r.o.rate))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_replay_options.rate", CTR__V_REAL(r.o.rate),
                         "ctr_replay_options.rate = %g: expected projections per second > 0 (0: "
                         "as fast as it goes)", r.o.rate);
  if (r.o.stop_after < 0 || !(r.o.linger_s >= 0))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_replay_options.stop_after and linger_s must be >= 0");
  r.scan = scan;
  r.to = to;
  const ctr_status st = run(&r);
  if (sent) *sent = r.sent;
  const ctr_status cst = ctr__swmr_writer_close(r.hw);
  ctr__zmq_sender_close(r.zs);
  ctr_source_close(r.src);
  free(r.cal[0]);
  free(r.cal[1]);
  return st != CTR_OK ? st : cst;
}

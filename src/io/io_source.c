/* Projection sources (io_source.h): the public ctr_source_* over the kinds'
 * ops tables, the checks every frame passes (docs/synchrotron.md, "Message
 * format": what is dropped and counted), and the finished file's kind. */
#include "io/io_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Opening ------------------------------------------------------------------ */

static int is_tcp(const char *where) { return !strncmp(where, "tcp://", 6); }

/* A bare HDF5 file name (no ":/dataset"): the DXchange layout. */
static int is_dxchange(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot && !strchr(dot, ':') &&
         (!strcmp(dot, ".h5") || !strcmp(dot, ".hdf5") || !strcmp(dot, ".nxs"));
}

ctr_status ctr_source_open(const char *where, const ctr_source_options *opts, ctr_source **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_source_open: out is NULL");
  *out = NULL;
  if (!where || !*where) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_source_open: no address given");
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_source_options, &o, opts));
  if (o.count < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_source_options.count", CTR__V_INT(o.count),
                         "ctr_source_options.count = %lld: expected the scan's projections, or 0 "
                         "(what the source says)", (long long)o.count);
  if (!(o.poll_s >= 0) || o.poll_s > 10)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_source_options.poll_s", CTR__V_REAL(o.poll_s),
                         "ctr_source_options.poll_s = %g: expected 0 (the default, 0.02 s) to 10 "
                         "seconds", o.poll_s);
  if (o.poll_s == 0) o.poll_s = 0.02;
  ctr_source *s = calloc(1, sizeof *s);
  if (!s) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a source)");
  s->o = o;
  s->st = (ctr_source_status)CTR_SOURCE_STATUS_INIT;
  int64_t count = 0;
  ctr_status st;
  if (is_tcp(where)) st = ctr__source_zmq_open(where, &o, &s->ops, &s->impl, &count);
  else if (is_dxchange(where) && o.follow) st = ctr__source_swmr_open(where, &o, &s->ops, &s->impl, &count);
  else st = ctr__source_file_open(where, &o, &s->ops, &s->impl, &count);
  if (st != CTR_OK) {
    free(s);
    return st;
  }
  s->st.count = o.count ? o.count : count;
  s->t_last = ctr__now_s();
  *out = s;
  return CTR_OK;
}

void ctr_source_close(ctr_source *s) {
  if (!s) return;
  if (s->ops) s->ops->close(s->impl);
  free(s->seen);
  free(s->angles);
  free(s);
}

const double *ctr__source_angles(const ctr_source *s, int64_t *n) {
  *n = 0;
  return s && s->ops->angles ? s->ops->angles(s->impl, n) : NULL;
}

const char *ctr__source_data_path(const ctr_source *s) {
  return s && s->ops->data_path ? s->ops->data_path(s->impl) : NULL;
}

void ctr__source_release(ctr_source *s) {
  if (s && s->ops->release) s->ops->release(s->impl);
}

const char *ctr_source_endpoint(const ctr_source *s) {
  return s && s->ops->endpoint ? s->ops->endpoint(s->impl) : "";
}

ctr_status ctr_source_get_status(const ctr_source *s, ctr_source_status *status) {
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_source_get_status: the source is NULL");
  CTR_CHECK(ctr__struct_check(&ctr__struct_source_status, status));
  return ctr__struct_store(&ctr__struct_source_status, status, &s->st);
}

/* ---- The checks of every frame -------------------------------------------------- */

/* Marks projection `index` delivered (the arrays grow as indices do). */
static ctr_status mark_seen(ctr_source *s, int64_t index, double angle) {
  if (index >= s->seen_n) {
    int64_t n = s->seen_n ? s->seen_n : 256;
    while (n <= index) n *= 2;
    unsigned char *seen = realloc(s->seen, (size_t)n);
    if (!seen) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the projections delivered)");
    s->seen = seen;
    memset(s->seen + s->seen_n, 0, (size_t)(n - s->seen_n));
    double *a = realloc(s->angles, sizeof(double) * (size_t)n);
    if (!a) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (the projections' angles)");
    s->angles = a;
    s->seen_n = n;
  }
  s->seen[index] = 1;
  s->angles[index] = angle;
  return CTR_OK;
}

ctr_status ctr__source_resume(ctr_source *s, int64_t width, int64_t height, ctr_dtype dtype,
                              int64_t count, const int64_t *index, const double *angle, int64_t n) {
  if (s->st.width || s->st.projections || s->st.flats || s->st.darks)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "a live run resumes on a source that has delivered nothing "
             "yet (this one has delivered %lld projections)", (long long)s->st.projections);
  if (s->st.count && count && s->st.count != count)
    CTR_FAIL_FIELD_VALUE(CTR_E_SIZE_MISMATCH, "ctr_source_options.count", CTR__V_INT(s->st.count),
                         "the source says the scan has %lld projections, the stopped run's state "
                         "%lld", (long long)s->st.count, (long long)count);
  if (!s->st.count) s->st.count = count;
  s->st.width = width;
  s->st.height = height;
  s->dtype = dtype;
  for (int64_t i = 0; i < n; i++) {
    if (index[i] < 0 || (s->st.count && index[i] >= s->st.count) ||
        (i > 0 && index[i] <= index[i - 1]))
      CTR_FAIL(CTR_E_FORMAT, "the stopped run's projection %lld (index %lld) is not in "
               "increasing order within the scan's %lld", (long long)i, (long long)index[i],
               (long long)s->st.count);
    CTR_CHECK(mark_seen(s, index[i], angle[i]));
    s->st.last_index = index[i];
    s->st.projections++;
  }
  if (s->st.count && s->st.projections == s->st.count) s->st.ended = 1;
  return CTR_OK;
}

/* 1 when f may be delivered, 0 when it is dropped (counted by cause). */
static int admit(ctr_source *s, const ctr__raw_frame *f) {
  ctr_source_status *st = &s->st;
  if (f->malformed || (f->dtype != CTR_DTYPE_UINT16 && f->dtype != CTR_DTYPE_FLOAT32) ||
      f->width < 1 || f->height < 1) {
    st->dropped_header++;
    return 0;
  }
  if (f->count > 0 && !s->o.count && st->count == 0) st->count = f->count;
  if (st->width && (f->width != st->width || f->height != st->height || f->dtype != s->dtype)) {
    st->dropped_size++;
    return 0;
  }
  if (f->bytes != (size_t)(f->width * f->height) * ctr_dtype_size(f->dtype)) {
    st->dropped_size++;
    return 0;
  }
  if (f->kind != CTR_FRAME_PROJECTION) {
    if (st->projections > 0 || st->last_index >= 0) {
      st->dropped_order++;
      return 0;
    }
  } else {
    if (f->index < 0 || (st->count && f->index >= st->count)) {
      st->dropped_header++;
      return 0;
    }
    if (f->index < s->seen_n && s->seen[f->index]) {
      st->dropped_duplicate++;
      return 0;
    }
    if (f->index < st->last_index) {
      st->dropped_order++;
      return 0;
    }
  }
  if (!st->width) {
    st->width = f->width;
    st->height = f->height;
    s->dtype = f->dtype;
  }
  return 1;
}

ctr_status ctr_source_next(ctr_source *s, double wait_s, ctr_frame *frame, ctr_source_event *event) {
  if (!s || !event) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_source_next: source and event are required");
  CTR_CHECK(ctr__struct_check(&ctr__struct_frame, frame));
  if (!(wait_s >= 0)) wait_s = 0;
  const double deadline = ctr__now_s() + wait_s;
  for (;;) {
    if (s->st.ended) {
      *event = CTR_SOURCE_ENDED;
      return CTR_OK;
    }
    double left = deadline - ctr__now_s();
    if (left < 0) left = 0;
    ctr__raw_frame f;
    memset(&f, 0, sizeof f);
    f.angle_deg = NAN;
    int got = 0;
    CTR_CHECK(s->ops->next(s->impl, left, &f, &got));
    if (!got) {
      *event = CTR_SOURCE_WAITING;
      return CTR_OK;
    }
    s->t_last = ctr__now_s();
    if (f.end && !f.malformed) {
      s->st.ended = 1;
      /* a scan that never said its count: as many as its senders numbered */
      if (!s->st.count && s->st.last_index >= 0) s->st.count = s->st.last_index + 1;
      continue;
    }
    if (!admit(s, &f)) continue;
    ctr_frame out = CTR_FRAME_INIT;
    out.kind = f.kind;
    out.angle_deg = f.angle_deg;
    out.width = f.width;
    out.height = f.height;
    out.dtype = f.dtype;
    out.pixels = f.pixels;
    if (f.kind == CTR_FRAME_FLAT) out.index = s->st.flats++;
    else if (f.kind == CTR_FRAME_DARK) out.index = s->st.darks++;
    else {
      out.index = f.index;
      CTR_CHECK(mark_seen(s, f.index, f.angle_deg));
      s->st.last_index = f.index;
      s->st.projections++;
      if (s->st.count && s->st.projections == s->st.count) s->st.ended = 1;
    }
    s->t_oldest_wait = f.t_arrived > 0 ? ctr__wall_s() - f.t_arrived : 0;
    CTR_CHECK(ctr__struct_store(&ctr__struct_frame, frame, &out));
    *event = CTR_SOURCE_FRAME;
    return CTR_OK;
  }
}

/* ---- The finished file ---------------------------------------------------------- */

typedef struct file_src {
  char path[4200];           /* the projections' stack */
  ctr_stack_reader *data;
  ctr_stack_reader *cal[2];  /* DXchange's data_white, data_dark (NULL: none) */
  int64_t ncal[2], next_cal[2];
  int64_t next;              /* the next projection */
  double *theta;             /* DXchange: the angles (degrees), or NULL */
  int64_t ntheta;
  void *buf;
} file_src;

static ctr_status file_next(void *impl, double wait_s, ctr__raw_frame *f, int *got) {
  file_src *s = impl;
  (void)wait_s;
  const ctr_stack_info *i = ctr_stack_reader_get_info(s->data);
  const size_t bytes = (size_t)(i->width * i->height) * ctr_dtype_size(i->dtype);
  *got = 1;
  for (int k = 0; k < 2; k++)
    if (s->cal[k] && s->next_cal[k] < s->ncal[k]) {
      CTR_CHECK(ctr_stack_read(s->cal[k], s->next_cal[k]++, 1, i->dtype, s->buf));
      f->kind = k ? CTR_FRAME_DARK : CTR_FRAME_FLAT;
      goto filled;
    }
  if (s->next >= i->count) {
    f->end = 1;
    return CTR_OK;
  }
  CTR_CHECK(ctr_stack_read(s->data, s->next, 1, i->dtype, s->buf));
  f->kind = CTR_FRAME_PROJECTION;
  f->index = s->next;
  f->angle_deg = s->theta && s->next < s->ntheta ? s->theta[s->next] : NAN;
  s->next++;
filled:
  f->width = i->width;
  f->height = i->height;
  f->dtype = i->dtype;
  f->pixels = s->buf;
  f->bytes = bytes;
  f->count = i->count;
  return CTR_OK;
}

static const char *file_data_path(void *impl) { return ((file_src *)impl)->path; }
static const double *file_angles(void *impl, int64_t *n) {
  const file_src *s = impl;
  *n = s->theta ? s->ntheta : 0;
  return s->theta;
}

static void file_close(void *impl) {
  file_src *s = impl;
  if (!s) return;
  ctr_stack_close(s->data);
  ctr_stack_close(s->cal[0]);
  ctr_stack_close(s->cal[1]);
  free(s->theta);
  free(s->buf);
  free(s);
}

static const ctr__source_ops k_file_ops = {"file", file_next, file_data_path, file_angles,
                                           file_data_path, NULL,
                                           file_close};

ctr_status ctr__source_file_open(const char *path, const ctr_source_options *o,
                                 const ctr__source_ops **ops, void **impl, int64_t *count) {
  file_src *s = calloc(1, sizeof *s);
  if (!s) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a file source)");
  const int dx = is_dxchange(path);
  snprintf(s->path, sizeof s->path, dx ? "%s:/exchange/data" : "%s", path);
  ctr_status st = ctr_stack_open(s->path, CTR_FORMAT_AUTO, NULL, 0, &s->data);
  const ctr_stack_info *i = st == CTR_OK ? ctr_stack_reader_get_info(s->data) : NULL;
  if (st == CTR_OK && i->dtype != CTR_DTYPE_UINT16 && i->dtype != CTR_DTYPE_FLOAT32)
    st = ctr__error_set(CTR_E_FORMAT, "'%s' holds %s projections: expected uint16 or float32",
                        s->path, ctr_dtype_name(i->dtype));
  for (int k = 0; dx && st == CTR_OK && k < 2; k++) {
    char cal[4200];
    snprintf(cal, sizeof cal, "%s:/exchange/%s", path, k ? "data_dark" : "data_white");
    if (ctr_stack_open(cal, CTR_FORMAT_AUTO, NULL, 0, &s->cal[k]) != CTR_OK) {
      s->cal[k] = NULL; /* none: ones and zeros (as `ctrecon fbp` without them) */
      ctr_error_clear();
      continue;
    }
    const ctr_stack_info *c = ctr_stack_reader_get_info(s->cal[k]);
    if (c->width != i->width || c->height != i->height)
      st = ctr__error_set(CTR_E_FORMAT, "'%s' holds images of %lld x %lld, the projections are "
                          "%lld x %lld", cal, (long long)c->width, (long long)c->height,
                          (long long)i->width, (long long)i->height);
    s->ncal[k] = c->count;
  }
  if (dx && st == CTR_OK && ctr_hdf5_read_angles(path, "/exchange/theta", &s->theta, &s->ntheta,
                                                 NULL) != CTR_OK) {
    s->theta = NULL; /* angles from the caller */
    ctr_error_clear();
  }
  if (st == CTR_OK) {
    s->buf = malloc((size_t)(i->width * i->height) * ctr_dtype_size(i->dtype));
    if (!s->buf) st = ctr__error_set(CTR_E_OUT_OF_MEMORY, "out of memory (a projection of '%s')", path);
  }
  if (st != CTR_OK) {
    file_close(s);
    return st;
  }
  (void)o;
  *count = i->count;
  *ops = &k_file_ops;
  *impl = s;
  return CTR_OK;
}

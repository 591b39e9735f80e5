/* Projections on a ZeroMQ socket: the PULL source kind and the PUSH sender
 * of ctr_replay, in the message format of docs/synchrotron.md ("Message
 * format"): a frame is a two-part message, a JSON header
 *   {"kind": "projection", "index": 12, "angle": 2.25, "shape": [ROWS, COLS],
 *    "dtype": "uint16", "count": 720, "time": 1764662400.125}
 * (kind projection, flat, dark or end; angle in degrees; count, the scan's
 * projections, and time, the sender's clock in seconds since 1970,
 * optional) and the pixels, ROWS x COLS little-endian values, columns
 * fastest. An end is a header of kind "end" (a second part, if any, empty).
 * What the header cannot say is dropped by the seam (io_source.c). */
#include "io/io_source.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The header of f (the format above). */
int ctr__frame_header(char *buf, size_t n, const ctr__raw_frame *f) {
  static const char *kinds[] = {"projection", "flat", "dark"};
  if (f->end) return snprintf(buf, n, "{\"kind\": \"end\"}");
  char angle[40] = "";
  if (f->kind == CTR_FRAME_PROJECTION && isfinite(f->angle_deg))
    snprintf(angle, sizeof angle, ", \"angle\": %.17g", f->angle_deg);
  char count[40] = "";
  if (f->count > 0) snprintf(count, sizeof count, ", \"count\": %lld", (long long)f->count);
  return snprintf(buf, n, "{\"kind\": \"%s\", \"index\": %lld%s, \"shape\": [%lld, %lld], "
                  "\"dtype\": \"%s\"%s, \"time\": %.6f}", kinds[f->kind], (long long)f->index,
                  angle, (long long)f->height, (long long)f->width,
                  f->dtype == CTR_DTYPE_UINT16 ? "uint16" : "float32", count, ctr__wall_s());
}

#if CTR_HAVE_ZMQ
#include <cjson/cJSON.h>
#include <errno.h>
#include <zmq.h>

/* "tcp://HOST:0" as libzmq says "a free port": "tcp://HOST:*". */
static void zmq_address(const char *endpoint, char *buf, size_t n) {
  const size_t len = strlen(endpoint);
  if (len > 2 && !strcmp(endpoint + len - 2, ":0")) snprintf(buf, n, "%.*s:*", (int)(len - 2), endpoint);
  else snprintf(buf, n, "%s", endpoint);
}

static ctr_status open_socket(const char *endpoint, int type, int bind, void **ctx, void **sock,
                              char *bound, size_t nbound) {
  char addr[512];
  zmq_address(endpoint, addr, sizeof addr);
  *ctx = zmq_ctx_new();
  *sock = *ctx ? zmq_socket(*ctx, type) : NULL;
  if (!*sock) {
    if (*ctx) zmq_ctx_term(*ctx);
    CTR_FAIL(CTR_E_IO, "'%s': ZeroMQ could not make a socket: %s", endpoint, zmq_strerror(errno));
  }
  const int rc = bind ? zmq_bind(*sock, addr) : zmq_connect(*sock, addr);
  if (rc != 0) {
    const int e = errno;
    zmq_close(*sock);
    zmq_ctx_term(*ctx);
    CTR_FAIL(CTR_E_IO, "cannot %s '%s': %s (expected tcp://HOST:PORT; a port in use, or "
             "another host's address, cannot be bound)", bind ? "bind" : "connect to", endpoint,
             zmq_strerror(e));
  }
  size_t len = nbound;
  if (!bind || zmq_getsockopt(*sock, ZMQ_LAST_ENDPOINT, bound, &len) != 0)
    snprintf(bound, nbound, "%s", endpoint);
  return CTR_OK;
}

/* ---- The PULL source ---------------------------------------------------------- */

typedef struct zmq_src {
  void *ctx, *sock;
  char endpoint[512];
  zmq_msg_t pixels;
  int have_pixels;
} zmq_src;

static ctr_status parse_dtype(const char *s, ctr_dtype *dt) {
  if (!strcmp(s, "uint16") || !strcmp(s, "<u2")) *dt = CTR_DTYPE_UINT16;
  else if (!strcmp(s, "float32") || !strcmp(s, "<f4")) *dt = CTR_DTYPE_FLOAT32;
  else return CTR_E_FORMAT;
  return CTR_OK;
}

/* The header's fields into f; f->malformed when it is not the format. */
static void parse_header(const char *text, size_t len, ctr__raw_frame *f) {
  cJSON *h = cJSON_ParseWithLength(text, len);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(h, "kind");
  f->malformed = 1;
  if (!cJSON_IsObject(h) || !cJSON_IsString(kind)) goto done;
  if (!strcmp(kind->valuestring, "end")) {
    f->end = 1;
    f->malformed = 0;
    goto done;
  }
  if (!strcmp(kind->valuestring, "projection")) f->kind = CTR_FRAME_PROJECTION;
  else if (!strcmp(kind->valuestring, "flat")) f->kind = CTR_FRAME_FLAT;
  else if (!strcmp(kind->valuestring, "dark")) f->kind = CTR_FRAME_DARK;
  else goto done;
  const cJSON *index = cJSON_GetObjectItemCaseSensitive(h, "index");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(h, "shape");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(h, "dtype");
  const cJSON *angle = cJSON_GetObjectItemCaseSensitive(h, "angle");
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(h, "count");
  const cJSON *time = cJSON_GetObjectItemCaseSensitive(h, "time");
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2 || !cJSON_IsString(dtype) ||
      parse_dtype(dtype->valuestring, &f->dtype) != CTR_OK)
    goto done;
  const cJSON *rows = cJSON_GetArrayItem(shape, 0), *cols = cJSON_GetArrayItem(shape, 1);
  if (!cJSON_IsNumber(rows) || !cJSON_IsNumber(cols) || rows->valuedouble < 1 ||
      cols->valuedouble < 1 || rows->valuedouble > 1e6 || cols->valuedouble > 1e6 ||
      rows->valuedouble != floor(rows->valuedouble) || cols->valuedouble != floor(cols->valuedouble))
    goto done;
  f->height = (int64_t)rows->valuedouble;
  f->width = (int64_t)cols->valuedouble;
  if (f->kind == CTR_FRAME_PROJECTION) {
    /* a projection needs its index and angle */
    if (!cJSON_IsNumber(index) || index->valuedouble != floor(index->valuedouble) ||
        index->valuedouble < 0 || index->valuedouble > 1e12 || !cJSON_IsNumber(angle) ||
        !isfinite(angle->valuedouble))
      goto done;
    f->index = (int64_t)index->valuedouble;
    f->angle_deg = angle->valuedouble;
  }
  if (count && (!cJSON_IsNumber(count) || count->valuedouble < 1 || count->valuedouble > 1e12 ||
                count->valuedouble != floor(count->valuedouble)))
    goto done;
  if (count) f->count = (int64_t)count->valuedouble;
  if (time && cJSON_IsNumber(time)) f->t_arrived = time->valuedouble;
  f->malformed = 0;
done:
  cJSON_Delete(h);
}

static ctr_status zmq_next(void *impl, double wait_s, ctr__raw_frame *f, int *got) {
  zmq_src *s = impl;
  *got = 0;
  if (s->have_pixels) {
    zmq_msg_close(&s->pixels);
    s->have_pixels = 0;
  }
  zmq_pollitem_t item = {s->sock, 0, ZMQ_POLLIN, 0};
  const long ms = (long)ceil(wait_s * 1000.0);
  const int rc = zmq_poll(&item, 1, ms);
  if (rc < 0 && errno != EINTR)
    CTR_FAIL(CTR_E_IO, "'%s': ZeroMQ: %s", s->endpoint, zmq_strerror(errno));
  if (rc <= 0) return CTR_OK;
  zmq_msg_t head;
  zmq_msg_init(&head);
  if (zmq_msg_recv(&head, s->sock, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&head);
    if (errno == EAGAIN || errno == EINTR) return CTR_OK;
    CTR_FAIL(CTR_E_IO, "'%s': ZeroMQ: %s", s->endpoint, zmq_strerror(errno));
  }
  *got = 1;
  parse_header(zmq_msg_data(&head), zmq_msg_size(&head), f);
  int parts = 1, more = zmq_msg_more(&head);
  zmq_msg_close(&head);
  /* the second part, the pixels; any more parts make the message malformed */
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, s->sock, 0) < 0) {
      zmq_msg_close(&part);
      CTR_FAIL(CTR_E_IO, "'%s': ZeroMQ: %s", s->endpoint, zmq_strerror(errno));
    }
    more = zmq_msg_more(&part);
    if (++parts == 2) {
      s->pixels = part;
      s->have_pixels = 1;
    } else {
      zmq_msg_close(&part);
    }
  }
  if (f->end) {
    if (parts > 2 || (s->have_pixels && zmq_msg_size(&s->pixels) > 0)) f->malformed = 1;
    return CTR_OK;
  }
  if (parts != 2) f->malformed = 1;
  if (s->have_pixels) {
    f->pixels = zmq_msg_data(&s->pixels);
    f->bytes = zmq_msg_size(&s->pixels);
  }
  return CTR_OK;
}

static const char *zmq_data_path(void *impl) {
  (void)impl;
  return NULL;
}
static const char *zmq_endpoint(void *impl) { return ((zmq_src *)impl)->endpoint; }
static const double *zmq_angles(void *impl, int64_t *n) {
  (void)impl;
  *n = 0;
  return NULL;
}

static void zmq_src_close(void *impl) {
  zmq_src *s = impl;
  if (!s) return;
  if (s->have_pixels) zmq_msg_close(&s->pixels);
  const int linger = 0;
  zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(s->sock);
  zmq_ctx_term(s->ctx);
  free(s);
}

static const ctr__source_ops k_zmq_ops = {"zmq", zmq_next, zmq_data_path, zmq_angles, zmq_endpoint, NULL,
                                          zmq_src_close};

ctr_status ctr__source_zmq_open(const char *endpoint, const ctr_source_options *o,
                                const ctr__source_ops **ops, void **impl, int64_t *count) {
  zmq_src *s = calloc(1, sizeof *s);
  if (!s) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a socket source)");
  const ctr_status st = open_socket(endpoint, ZMQ_PULL, o->bind, &s->ctx, &s->sock, s->endpoint,
                                    sizeof s->endpoint);
  if (st != CTR_OK) {
    free(s);
    return st;
  }
  *count = 0;
  *ops = &k_zmq_ops;
  *impl = s;
  return CTR_OK;
}

/* ---- The PUSH sender ------------------------------------------------------------ */

struct ctr__zmq_sender {
  void *ctx, *sock;
  char endpoint[512];
};

ctr_status ctr__zmq_sender_open(const char *endpoint, int bind, double linger_s,
                                ctr__zmq_sender **out, const char **bound) {
  ctr__zmq_sender *s = calloc(1, sizeof *s);
  if (!s) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "out of memory (a socket)");
  const ctr_status st = open_socket(endpoint, ZMQ_PUSH, bind, &s->ctx, &s->sock, s->endpoint,
                                    sizeof s->endpoint);
  if (st != CTR_OK) {
    free(s);
    return st;
  }
  const int linger = (int)(linger_s * 1000.0);
  zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof linger);
  *out = s;
  *bound = s->endpoint;
  return CTR_OK;
}

ctr_status ctr__zmq_send_frame(ctr__zmq_sender *s, const ctr__raw_frame *f) {
  char head[512];
  const int n = ctr__frame_header(head, sizeof head, f);
  int rc = zmq_send(s->sock, head, (size_t)n, f->end ? 0 : ZMQ_SNDMORE);
  if (rc >= 0 && !f->end) rc = zmq_send(s->sock, f->pixels, f->bytes, 0);
  if (rc < 0) CTR_FAIL(CTR_E_IO, "'%s': ZeroMQ could not send: %s", s->endpoint, zmq_strerror(errno));
  return CTR_OK;
}

void ctr__zmq_sender_close(ctr__zmq_sender *s) {
  if (!s) return;
  zmq_close(s->sock);
  zmq_ctx_term(s->ctx); /* waits up to the linger for queued frames */
  free(s);
}

#else /* !CTR_HAVE_ZMQ */

#define NO_ZMQ "this build has no ZeroMQ (built without ZeroMQ: install libzmq3-dev, "    \
               "scripts/install-deps.sh, and configure with -DCTRECON_ZMQ=on)"

ctr_status ctr__source_zmq_open(const char *endpoint, const ctr_source_options *o,
                                const ctr__source_ops **ops, void **impl, int64_t *count) {
  (void)o, (void)ops, (void)impl, (void)count;
  CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': %s", endpoint, NO_ZMQ);
}
ctr_status ctr__zmq_sender_open(const char *endpoint, int bind, double linger_s,
                                ctr__zmq_sender **out, const char **bound) {
  (void)bind, (void)linger_s, (void)out, (void)bound;
  CTR_FAIL(CTR_E_UNSUPPORTED, "'%s': %s", endpoint, NO_ZMQ);
}
ctr_status ctr__zmq_send_frame(ctr__zmq_sender *s, const ctr__raw_frame *f) {
  (void)s, (void)f;
  return CTR_E_UNSUPPORTED;
}
void ctr__zmq_sender_close(ctr__zmq_sender *s) { (void)s; }

#endif

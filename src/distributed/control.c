/* The control of a distributed run (distributed.h; docs/distributed.md,
 * "Faults" and "How the work is split").
 *
 * Two communicators per run, both duplicates of the cluster's: the steps
 * (ctr__dist_gather / _share) run on the calling thread over one, and a
 * control thread per rank uses the other for everything between them:
 *  - every rank sends rank 0 a heartbeat every `hb` seconds: a counter of
 *    progress reports (ctr__progress on the run's context), whether it waits
 *    in a step, and its slices done;
 *  - rank 0 answers the ranks' requests from its ledger of the work (NEXT: a
 *    piece to run; CLAIM: may this rank compute these slices), and sends
 *    every rank a tick every `hb` seconds;
 *  - a rank whose run fails sends FAIL; rank 0 then sends every rank STOP
 *    with the failing rank's message, and so it does when a rank that is not
 *    waiting in a step has not reported progress for `timeout` seconds (its
 *    own rank included); a rank that hears nothing from rank 0 for that long
 *    stops on its own. Such a run is "broken": a rank is lost, the later
 *    steps fail at once without communicating, and the cluster is not
 *    finalised (MPI_Finalize would wait for the lost rank).
 *
 * All MPI calls are nonblocking and polled, so that a lost rank never
 * blocks the others; the cluster asks for MPI_THREAD_MULTIPLE. A cluster of
 * one runs the ledger on the calling thread, without MPI or a thread. */
#include "distributed/cluster_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum {
  KIND_STEP = 1, /* rank -> 0: a step's status and blob (step communicator) */
  KIND_RESULT,   /* 0 -> rank: the step's result (step communicator) */
  KIND_HB,       /* rank -> 0: v = {alive, waiting, slices done x 1000} */
  KIND_FAIL,     /* rank -> 0: its run failed (status, detail) */
  KIND_STOP,     /* 0 -> every rank: stop (status, culprit in rank, broken in flag, detail) */
  KIND_TICK,     /* 0 -> every rank: rank 0 is alive */
  KIND_NEXT,     /* rank -> 0: v = {seq}; answer KIND_PIECE v = {seq, got, z0, nz} */
  KIND_PIECE,
  KIND_CLAIM,    /* rank -> 0: v = {seq, z, nz}; answer KIND_GRANT v = {seq, granted} */
  KIND_GRANT
};

typedef struct msg_head {
  int32_t kind, status, rank, flag;
  int64_t step;
  int64_t v[4];
  int64_t ndetail, nblob;
} msg_head;

/* What rank 0 knows of each rank. */
typedef struct rank_state {
  int64_t alive;          /* its progress counter, as last heard */
  double alive_at;        /* when it last changed */
  int waiting;            /* in a step: not expected to progress */
  double done;            /* slices done */
  int64_t claimed, last;  /* slices claimed; those of its latest claim */
  double first_at, last_at; /* times of its first and latest claim */
} rank_state;

/* A piece of the ledger. */
typedef struct lpiece {
  int64_t z0, end, next, slab; /* slices [z0, end); first unclaimed; claim size (0: none yet) */
  int owner;
  int state; /* 0 queued, 1 running, 2 finished */
} lpiece;

typedef struct outgoing {
  void *buf;
#if CTR_HAVE_MPI
  MPI_Request req;
#endif
} outgoing;

struct ctr__dist {
  const ctr_cluster *c;
  ctr_context *ctx;
  char what[32];
  int rank, size;
  double timeout, hb;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* the stop (mu) */
  int stopped, broken, culprit;
  ctr_status stop_status;
  char stop_detail[1024];
  /* this rank (mu) */
  int64_t alive;
  int waiting;
  double before, slices, done;
  /* a request of this rank's threads to rank 0, one at a time (req_mu) */
  pthread_mutex_t req_mu;
  int req_kind, req_state; /* 0 none, 1 to send, 2 sent, 3 answered */
  int64_t req_seq, req_v[2], ans[4];
  /* rank 0: the ranks and the ledger (mu) */
  rank_state *rs;
  lpiece *pieces;
  int64_t npieces, cap;
  double total; /* slices of the work */
  double delay; /* test builds: seconds each claim waits (ctr__dist_set_delay) */
  int64_t step;
#if CTR_HAVE_MPI
  MPI_Comm step_comm, ctl_comm;
  pthread_t thread;
  int have_thread, quit;
  double last_from_root;
  outgoing *out;
  int nout, outcap;
#endif
};

static void sleep_ms(long ms) {
  const struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

int ctr__dist_rank(const ctr__dist *d) { return d->rank; }
int ctr__dist_size(const ctr__dist *d) { return d->size; }
const ctr_cluster *ctr__dist_cluster(const ctr__dist *d) { return d->c; }

/* "rank R of N (HOST): " before a rank's message (nothing for a run of one,
 * or a message that names its rank already: the result of an earlier step). */
static void culprit_text(const ctr__dist *d, int r, const char *detail, char *buf, size_t n) {
  int a, b;
  if (d->size <= 1 || sscanf(detail, "rank %d of %d (", &a, &b) == 2) snprintf(buf, n, "%s", detail);
  else snprintf(buf, n, "rank %d of %d (%s): %s", r, d->size, ctr__cluster_host(d->c, r), detail);
}

/* Records the stop (mu held); the first one wins. */
static void stop_locked(ctr__dist *d, int culprit, ctr_status st, int broken, const char *detail) {
  if (!d->stopped) {
    d->stopped = 1;
    d->culprit = culprit;
    d->stop_status = st;
    snprintf(d->stop_detail, sizeof d->stop_detail, "%s", detail);
  }
  if (broken && !d->broken) {
    d->broken = 1;
    ctr__cluster_mark_broken(d->c, culprit);
  }
  pthread_cond_broadcast(&d->cv);
}

static ctr_status stop_error(ctr__dist *d) {
  pthread_mutex_lock(&d->mu);
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", d->stop_detail);
  const ctr_status st = d->stop_status;
  pthread_mutex_unlock(&d->mu);
  return ctr__error_set(st, "%s", detail);
}

int ctr__dist_stopped(ctr__dist *d) {
  pthread_mutex_lock(&d->mu);
  const int s = d->stopped;
  pthread_mutex_unlock(&d->mu);
  return s;
}

ctr_status ctr__dist_check(ctr__dist *d) {
  if (!ctr__dist_stopped(d)) return CTR_OK;
  pthread_mutex_lock(&d->mu);
  char detail[1100];
  snprintf(detail, sizeof detail, "%s", d->stop_detail);
  pthread_mutex_unlock(&d->mu);
  CTR_FAIL(CTR_E_CANCELLED, "stopped: %s", detail);
}

/* ---- The ledger (rank 0, or a cluster of one; mu held) ------------------- */

/* Slices per second of rank r so far: those it claimed before its latest
 * claim over the time between its first and its latest; 0 = not known. */
static double rate_of(const ctr__dist *d, int r) {
  const rank_state *s = &d->rs[r];
  const double t = s->last_at - s->first_at;
  return t > 0 && s->claimed > s->last ? (double)(s->claimed - s->last) / t : 0.0;
}

static ctr_status ledger_add(ctr__dist *d, lpiece p) {
  if (d->npieces == d->cap) {
    const int64_t cap = d->cap ? 2 * d->cap : 16;
    lpiece *q = realloc(d->pieces, (size_t)cap * sizeof *q);
    if (!q) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "the distributed run's ledger of %lld pieces",
                     (long long)cap);
    d->pieces = q;
    d->cap = cap;
  }
  d->pieces[d->npieces++] = p;
  return CTR_OK;
}

/* Unclaimed slices of rank v's pieces. */
static int64_t unclaimed(const ctr__dist *d, int v) {
  int64_t n = 0;
  for (int64_t i = 0; i < d->npieces; i++) {
    const lpiece *p = &d->pieces[i];
    if (p->owner == v && p->state < 2) n += p->end - p->next;
  }
  return n;
}

/* Work for rank r, which has none of its own left: from the rank whose
 * unclaimed slices take longest at its rate, its last piece not started, or
 * the tail of its running piece cut at one of its subvolume (band)
 * boundaries, the share in proportion to the two ranks' rates. */
static ctr_status ledger_steal(ctr__dist *d, int r, ctr__piece *out, int *got) {
  *got = 0;
  for (;;) {
    int best = -1;
    double best_t = 0;
    for (int v = 0; v < d->size; v++) {
      if (v == r) continue;
      const int64_t left = unclaimed(d, v);
      if (left <= 0) continue;
      const double rate = rate_of(d, v);
      const double t = rate > 0 ? (double)left / rate : (double)left * 1e6; /* unknown: first */
      int feasible = 0;
      for (int64_t i = 0; i < d->npieces && !feasible; i++) {
        const lpiece *p = &d->pieces[i];
        feasible = p->owner == v && (p->state == 0 ||
                                     (p->state == 1 && p->slab > 0 &&
                                      (p->end - p->next + p->slab - 1) / p->slab >= 2));
      }
      if (feasible && (best < 0 || t > best_t)) {
        best = v;
        best_t = t;
      }
    }
    if (best < 0) {
      /* a running piece whose rank has not claimed its first subvolume yet
       * (its size unknown) may become worth splitting: ask again */
      for (int64_t i = 0; i < d->npieces && !*got; i++)
        if (d->pieces[i].owner != r && d->pieces[i].state == 1 && d->pieces[i].slab == 0)
          *got = 2;
      return CTR_OK;
    }
    /* a piece it has not started: the last one */
    for (int64_t i = d->npieces - 1; i >= 0; i--) {
      lpiece *p = &d->pieces[i];
      if (p->owner == best && p->state == 0) {
        p->owner = r;
        p->state = 1;
        *out = (ctr__piece){p->z0, p->end - p->z0};
        *got = 1;
        return CTR_OK;
      }
    }
    for (int64_t i = 0; i < d->npieces; i++) {
      lpiece *p = &d->pieces[i];
      if (p->owner != best || p->state != 1 || p->slab <= 0) continue;
      const int64_t k = (p->end - p->next + p->slab - 1) / p->slab; /* its slabs left */
      if (k < 2) continue;
      const double rv = rate_of(d, best), rt = rate_of(d, r);
      const double f = rv > 0 && rt > 0 ? rt / (rt + rv) : 0.5;
      int64_t give = (int64_t)llround((double)k * f);
      if (give < 1) give = 1;
      if (give > k - 1) give = k - 1;
      const int64_t split = p->next + (k - give) * p->slab;
      const lpiece q = {split, p->end, split, 0, r, 1};
      p->end = split;
      CTR_CHECK(ledger_add(d, q));
      *out = (ctr__piece){q.z0, q.end - q.z0};
      *got = 1;
      return CTR_OK;
    }
    return CTR_OK; /* not reached: `best` had a feasible piece */
  }
}

/* Rank r asks for its next piece: its running ones are finished. */
static ctr_status ledger_next(ctr__dist *d, int r, ctr__piece *out, int *got) {
  *got = 0;
  for (int64_t i = 0; i < d->npieces; i++)
    if (d->pieces[i].owner == r && d->pieces[i].state == 1) d->pieces[i].state = 2;
  for (int64_t i = 0; i < d->npieces; i++) {
    lpiece *p = &d->pieces[i];
    if (p->owner == r && p->state == 0) {
      p->state = 1;
      *out = (ctr__piece){p->z0, p->end - p->z0};
      *got = 1;
      return CTR_OK;
    }
  }
  return ledger_steal(d, r, out, got);
}

static int ledger_claim(ctr__dist *d, int r, int64_t z, int64_t nz, double now) {
  for (int64_t i = 0; i < d->npieces; i++) {
    lpiece *p = &d->pieces[i];
    if (p->owner != r || p->state != 1 || z < p->z0 || z >= p->end) continue;
    if (z + nz > p->end || z < p->next) return 0;
    if (nz > p->slab) p->slab = nz;
    p->next = z + nz;
    rank_state *s = &d->rs[r];
    if (s->claimed == 0) s->first_at = now;
    s->last_at = now;
    s->claimed += nz;
    s->last = nz;
    return 1;
  }
  return 0;
}

ctr_status ctr__dist_set_work(ctr__dist *d, const ctr__piece *pieces, const int *owner,
                              int64_t n) {
  pthread_mutex_lock(&d->mu);
  ctr_status st = CTR_OK;
  d->npieces = 0;
  d->total = 0;
  for (int64_t i = 0; i < n && st == CTR_OK; i++) {
    const lpiece p = {pieces[i].z0, pieces[i].z0 + pieces[i].nz, pieces[i].z0, 0,
                      owner[i] >= 0 && owner[i] < d->size ? owner[i] : 0, 0};
    st = ledger_add(d, p);
    d->total += (double)pieces[i].nz;
  }
  pthread_mutex_unlock(&d->mu);
  return st;
}

/* ---- Progress hook --------------------------------------------------------- */

static ctr_status progress_hook(void *user, double *fraction) {
  ctr__dist *d = user;
  pthread_mutex_lock(&d->mu);
  d->alive++;
  d->done = d->before + *fraction * d->slices;
  if (d->rank == 0 && d->total > 0) {
    d->rs[0].done = d->done;
    double sum = 0;
    for (int r = 0; r < d->size; r++) sum += d->rs[r].done;
    *fraction = sum / d->total < 1 ? sum / d->total : 1;
  }
  const int stopped = d->stopped;
  pthread_mutex_unlock(&d->mu);
  return stopped ? ctr__dist_check(d) : CTR_OK;
}

void ctr__dist_piece_progress(ctr__dist *d, double before, double slices) {
  pthread_mutex_lock(&d->mu);
  d->before = before;
  d->slices = slices;
  d->done = before;
  d->alive++;
  pthread_mutex_unlock(&d->mu);
}

#if CTR_HAVE_MPI

/* ---- Messages ----------------------------------------------------------------- */

static void *pack(const msg_head *h, const char *detail, const void *blob, int *bytes) {
  const size_t n = sizeof *h + (size_t)h->ndetail + (size_t)h->nblob;
  char *b = malloc(n > 0 ? n : 1);
  if (!b) return NULL;
  memcpy(b, h, sizeof *h);
  if (h->ndetail && detail) memcpy(b + sizeof *h, detail, (size_t)h->ndetail);
  if (h->nblob && blob) memcpy(b + sizeof *h + h->ndetail, blob, (size_t)h->nblob);
  *bytes = (int)n;
  return b;
}

/* A received message: its head, detail (NUL-terminated) and blob point into
 * buf (free buf). */
typedef struct msg {
  msg_head h;
  int source;
  char *buf;
  const char *detail;
  const void *blob;
} msg;

static int try_recv(MPI_Comm comm, int source, int tag, msg *m) {
  int flag = 0, count = 0;
  MPI_Status s;
  if (MPI_Iprobe(source, tag, comm, &flag, &s) != MPI_SUCCESS || !flag) return 0;
  MPI_Get_count(&s, MPI_BYTE, &count);
  m->buf = malloc((size_t)count + 1);
  if (!m->buf) return 0;
  MPI_Recv(m->buf, count, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, comm, MPI_STATUS_IGNORE);
  m->buf[count] = '\0';
  memset(&m->h, 0, sizeof m->h);
  if ((size_t)count >= sizeof m->h) memcpy(&m->h, m->buf, sizeof m->h);
  if ((size_t)count < sizeof m->h + (size_t)m->h.ndetail + (size_t)m->h.nblob ||
      m->h.ndetail < 0 || m->h.nblob < 0)
    m->h.ndetail = m->h.nblob = 0; /* not ours: nothing to read */
  m->source = s.MPI_SOURCE;
  /* the detail is sent without its NUL: copy it out of the way of the blob */
  static _Thread_local char detail[1100];
  const size_t nd = (size_t)m->h.ndetail < sizeof detail - 1 ? (size_t)m->h.ndetail : sizeof detail - 1;
  memcpy(detail, m->buf + sizeof m->h, nd);
  detail[nd] = '\0';
  m->detail = detail;
  m->blob = m->buf + sizeof m->h + m->h.ndetail;
  return 1;
}

/* Control thread: a message on the control communicator (kept until sent). */
static void post(ctr__dist *d, int dest, const msg_head *h, const char *detail) {
  if (d->nout == d->outcap) {
    const int cap = d->outcap ? 2 * d->outcap : 32;
    outgoing *o = realloc(d->out, (size_t)cap * sizeof *o);
    if (!o) return;
    d->out = o;
    d->outcap = cap;
  }
  int bytes = 0;
  void *buf = pack(h, detail, NULL, &bytes);
  if (!buf) return;
  outgoing *o = &d->out[d->nout];
  o->buf = buf;
  if (MPI_Isend(buf, bytes, MPI_BYTE, dest, h->kind, d->ctl_comm, &o->req) != MPI_SUCCESS) {
    free(buf);
    return;
  }
  d->nout++;
}

/* Frees the buffers of sends that completed. */
static void reap(ctr__dist *d) {
  for (int i = 0; i < d->nout;) {
    int done = 0;
    MPI_Test(&d->out[i].req, &done, MPI_STATUS_IGNORE);
    if (done) {
      free(d->out[i].buf);
      d->out[i] = d->out[--d->nout];
    } else {
      i++;
    }
  }
}

static msg_head head(int kind, int rank) {
  msg_head h;
  memset(&h, 0, sizeof h);
  h.kind = kind;
  h.rank = rank;
  return h;
}

/* Rank 0: stops every rank (itself included) with rank `culprit`'s error. */
static void stop_all(ctr__dist *d, int culprit, ctr_status st, int broken, const char *detail) {
  pthread_mutex_lock(&d->mu);
  const int already = d->stopped;
  stop_locked(d, culprit, st, broken, detail);
  /* the first stop's message; a later broken one still marks the run broken */
  msg_head h = head(KIND_STOP, culprit);
  h.status = d->stop_status;
  h.flag = d->broken;
  h.rank = d->culprit;
  char text[1024];
  snprintf(text, sizeof text, "%s", d->stop_detail);
  pthread_mutex_unlock(&d->mu);
  if (already && !broken) return;
  h.ndetail = (int64_t)strlen(text);
  for (int r = 1; r < d->size; r++) post(d, r, &h, text);
}

/* Rank 0's handling of a message of rank m->source. */
static void root_handle(ctr__dist *d, const msg *m, double now) {
  const int r = m->source;
  rank_state *s = &d->rs[r];
  switch (m->h.kind) {
    case KIND_HB:
      pthread_mutex_lock(&d->mu);
      if (m->h.v[0] != s->alive || s->alive_at == 0) {
        s->alive = m->h.v[0];
        s->alive_at = now;
      }
      if (s->waiting && !m->h.v[1]) s->alive_at = now; /* left a step: a fresh start */
      s->waiting = (int)m->h.v[1];
      if (r != 0) s->done = (double)m->h.v[2] / 1000.0;
      pthread_mutex_unlock(&d->mu);
      break;
    case KIND_FAIL: {
      char text[1024];
      culprit_text(d, r, m->detail, text, sizeof text);
      stop_all(d, r, (ctr_status)m->h.status, 0, text);
      break;
    }
    case KIND_NEXT: {
      ctr__piece p = {0, 0};
      int got = 0;
      pthread_mutex_lock(&d->mu);
      s->alive_at = now;
      if (!d->stopped && ledger_next(d, r, &p, &got) != CTR_OK) got = 0;
      pthread_mutex_unlock(&d->mu);
      msg_head h = head(KIND_PIECE, 0);
      h.v[0] = m->h.v[0];
      h.v[1] = got;
      h.v[2] = p.z0;
      h.v[3] = p.nz;
      post(d, r, &h, NULL);
      break;
    }
    case KIND_CLAIM: {
      pthread_mutex_lock(&d->mu);
      s->alive_at = now;
      const int granted = !d->stopped && ledger_claim(d, r, m->h.v[1], m->h.v[2], now);
      pthread_mutex_unlock(&d->mu);
      msg_head h = head(KIND_GRANT, 0);
      h.v[0] = m->h.v[0];
      h.v[1] = granted;
      post(d, r, &h, NULL);
      break;
    }
    default: break;
  }
}

/* Every rank's handling of rank 0's messages. */
static void rank_handle(ctr__dist *d, const msg *m, double now) {
  pthread_mutex_lock(&d->mu);
  d->last_from_root = now;
  switch (m->h.kind) {
    case KIND_STOP:
      stop_locked(d, m->h.rank, (ctr_status)m->h.status, m->h.flag, m->detail);
      break;
    case KIND_PIECE:
    case KIND_GRANT:
      pthread_mutex_lock(&d->req_mu);
      if (d->req_state == 2 && m->h.v[0] == d->req_seq) {
        memcpy(d->ans, m->h.v, sizeof d->ans);
        d->req_state = 3;
      }
      pthread_mutex_unlock(&d->req_mu);
      pthread_cond_broadcast(&d->cv);
      break;
    default: break;
  }
  pthread_mutex_unlock(&d->mu);
}

/* Rank 0: a rank that is not in a step and has not progressed for
 * `timeout` seconds is hung. */
static void check_hung(ctr__dist *d, double now) {
  pthread_mutex_lock(&d->mu);
  int hung = -1;
  for (int r = 0; r < d->size && hung < 0 && !d->broken; r++)
    if (!d->rs[r].waiting && now - d->rs[r].alive_at > d->timeout) hung = r;
  pthread_mutex_unlock(&d->mu);
  if (hung < 0) return;
  char detail[512], text[1024];
  snprintf(detail, sizeof detail, "made no progress for %g s (hung: a stuck file system or "
           "device?); every rank stops (the timeout is ctr_cluster_options.timeout)", d->timeout);
  culprit_text(d, hung, detail, text, sizeof text);
  stop_all(d, hung, CTR_E_TIMEOUT, 1, text);
}

/* The control thread polls MPI (its progress needs calls) every POLL_BUSY_MS
 * while messages come, every POLL_IDLE_MS after POLL_IDLE_S without any: a
 * claim's round trip stays within a few milliseconds during the exchanges,
 * and an idle rank's thread costs little CPU next to its computation
 * (measured: docs/distributed.md). */
#define POLL_BUSY_MS 1
#define POLL_IDLE_MS 10
#define POLL_IDLE_S 0.05

static void *control_main(void *arg) {
  ctr__dist *d = arg;
  double last_hb = 0, last_tick = 0, last_busy = 0;
  for (;;) {
    pthread_mutex_lock(&d->mu);
    const int quit = d->quit;
    pthread_mutex_unlock(&d->mu);
    if (quit) break;
    int busy = 0;
    double now = ctr__now_s();
    msg m;
    while (try_recv(d->ctl_comm, MPI_ANY_SOURCE, MPI_ANY_TAG, &m)) {
      busy = 1;
      const int from_root_kind = m.h.kind == KIND_STOP || m.h.kind == KIND_TICK ||
                                 m.h.kind == KIND_PIECE || m.h.kind == KIND_GRANT;
      if (from_root_kind) {
        if (m.source == 0) rank_handle(d, &m, now);
      } else if (d->rank == 0) {
        root_handle(d, &m, now);
      }
      free(m.buf);
    }
    /* this rank's request */
    pthread_mutex_lock(&d->req_mu);
    if (d->req_state == 1) {
      msg_head h = head(d->req_kind, d->rank);
      h.v[0] = d->req_seq;
      h.v[1] = d->req_v[0];
      h.v[2] = d->req_v[1];
      post(d, 0, &h, NULL);
      d->req_state = 2;
    }
    pthread_mutex_unlock(&d->req_mu);
    now = ctr__now_s();
    if (now - last_hb >= d->hb) {
      pthread_mutex_lock(&d->mu);
      msg_head h = head(KIND_HB, d->rank);
      h.v[0] = d->alive;
      h.v[1] = d->waiting;
      h.v[2] = (int64_t)(d->done * 1000.0);
      pthread_mutex_unlock(&d->mu);
      post(d, 0, &h, NULL);
      last_hb = now;
    }
    if (d->rank == 0) {
      if (now - last_tick >= d->hb) {
        const msg_head h = head(KIND_TICK, 0);
        for (int r = 1; r < d->size; r++) post(d, r, &h, NULL);
        last_tick = now;
      }
      check_hung(d, now);
    } else {
      pthread_mutex_lock(&d->mu);
      if (!d->broken && now - d->last_from_root > d->timeout) {
        char text[1024];
        snprintf(text, sizeof text, "rank 0 of %d (%s) stopped answering for %g s (hung or "
                 "gone); every rank stops (the timeout is ctr_cluster_options.timeout)",
                 d->size, ctr__cluster_host(d->c, 0), d->timeout);
        stop_locked(d, 0, CTR_E_TIMEOUT, 1, text);
      }
      pthread_mutex_unlock(&d->mu);
    }
    reap(d);
    pthread_mutex_lock(&d->req_mu);
    busy |= d->req_state == 1; /* a request waits to be sent */
    pthread_mutex_unlock(&d->req_mu);
    if (busy) {
      last_busy = now;
      continue;
    }
    /* idle: until the next poll, or until a thread of this rank posts a request */
    const long ms = now - last_busy < POLL_IDLE_S ? POLL_BUSY_MS : POLL_IDLE_MS;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&d->mu);
    if (!d->quit) pthread_cond_timedwait(&d->cv, &d->mu, &until);
    pthread_mutex_unlock(&d->mu);
  }
  /* what is still on its way (a lost rank may never take it) */
  const double t0 = ctr__now_s();
  while (d->nout > 0 && !d->broken && ctr__now_s() - t0 < d->timeout) {
    reap(d);
    if (d->nout) sleep_ms(1);
  }
  return NULL;
}

/* A request to rank 0 from any thread of this rank; waits for the answer
 * (CTR_E_CANCELLED once the run stops). */
static ctr_status request(ctr__dist *d, int kind, int64_t a, int64_t b, int64_t ans[4]) {
  pthread_mutex_lock(&d->req_mu);
  while (d->req_state != 0) { /* another thread's request */
    pthread_mutex_unlock(&d->req_mu);
    CTR_CHECK(ctr__dist_check(d));
    sleep_ms(1);
    pthread_mutex_lock(&d->req_mu);
  }
  d->req_kind = kind;
  d->req_v[0] = a;
  d->req_v[1] = b;
  d->req_seq++;
  d->req_state = 1;
  pthread_mutex_unlock(&d->req_mu);
  pthread_mutex_lock(&d->mu);
  pthread_cond_broadcast(&d->cv); /* the control thread sends it now */
  pthread_mutex_unlock(&d->mu);
  ctr_status st = CTR_OK;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    pthread_mutex_lock(&d->req_mu);
    const int answered = d->req_state == 3;
    if (answered) memcpy(ans, d->ans, sizeof d->ans);
    pthread_mutex_unlock(&d->req_mu);
    if (answered) break;
    if (d->stopped) {
      st = CTR_E_CANCELLED;
      break;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&d->cv, &d->mu, &until);
  }
  d->alive++;
  pthread_mutex_unlock(&d->mu);
  pthread_mutex_lock(&d->req_mu);
  d->req_state = 0;
  pthread_mutex_unlock(&d->req_mu);
  return st == CTR_OK ? CTR_OK : ctr__dist_check(d);
}

/* ---- Steps ------------------------------------------------------------------ */

/* Sends on the step communicator and waits until the send is done (or the
 * run lost a rank). */
static ctr_status step_send(ctr__dist *d, int dest, const msg_head *h, const char *detail,
                            const void *blob) {
  int bytes = 0;
  void *buf = pack(h, detail, blob, &bytes);
  if (!buf) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "a message of %lld bytes", (long long)h->nblob);
  MPI_Request req;
  MPI_Isend(buf, bytes, MPI_BYTE, dest, h->kind, d->step_comm, &req);
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) break;
    pthread_mutex_lock(&d->mu);
    const int broken = d->broken;
    pthread_mutex_unlock(&d->mu);
    if (broken) { /* the peer may never take it: leave the buffer to MPI */
      MPI_Request_free(&req);
      return CTR_OK;
    }
    sleep_ms(1);
  }
  free(buf);
  return CTR_OK;
}

static int is_broken(ctr__dist *d) {
  pthread_mutex_lock(&d->mu);
  const int b = d->broken;
  pthread_mutex_unlock(&d->mu);
  return b;
}

static void set_waiting(ctr__dist *d, int w) {
  pthread_mutex_lock(&d->mu);
  d->waiting = w;
  d->alive++;
  pthread_mutex_unlock(&d->mu);
}

/* The step over MPI: every rank's status, detail and n bytes to rank 0,
 * which answers every rank with the result and `payload` (gather: every
 * rank's bytes; share: its blob). */
static ctr_status step_mpi(ctr__dist *d, ctr_status st, const void *mine, size_t n, int share,
                           void **blob, size_t *nblob, void *all) {
  const int64_t step = ++d->step;
  char mydetail[1024];
  snprintf(mydetail, sizeof mydetail, "%s", st != CTR_OK ? ctr_error_detail() : "");
  set_waiting(d, 1);
  ctr_status result = CTR_OK;
  char detail[1100] = "";
  if (d->rank != 0) {
    msg_head h = head(KIND_STEP, d->rank);
    h.step = step;
    h.status = st;
    h.ndetail = (int64_t)strlen(mydetail);
    h.nblob = share ? 0 : (int64_t)n;
    CTR_CHECK(step_send(d, 0, &h, mydetail, mine));
    msg m;
    for (;;) {
      if (try_recv(d->step_comm, 0, KIND_RESULT, &m)) break;
      if (is_broken(d)) {
        set_waiting(d, 0);
        return stop_error(d);
      }
      sleep_ms(1);
    }
    if (m.h.step != step) {
      free(m.buf);
      set_waiting(d, 0);
      CTR_FAIL(CTR_E_INTERNAL, "distributed run: step %lld got the result of step %lld",
               (long long)step, (long long)m.h.step);
    }
    result = (ctr_status)m.h.status;
    snprintf(detail, sizeof detail, "%s", m.detail);
    if (share) {
      *nblob = (size_t)m.h.nblob;
      *blob = malloc(*nblob ? *nblob : 1);
      if (*blob) memcpy(*blob, m.blob, *nblob);
      else result = ctr__error_set(CTR_E_OUT_OF_MEMORY, "a blob of %zu bytes", *nblob);
    } else if (all && (size_t)m.h.nblob == n * (size_t)d->size) {
      memcpy(all, m.blob, n * (size_t)d->size);
    }
    free(m.buf);
  } else {
    ctr_status *status = ctr__calloc((size_t)d->size, sizeof *status, "step statuses");
    char(*details)[1024] = ctr__calloc((size_t)d->size, sizeof *details, "step details");
    char *allb = share ? NULL : ctr__malloc(n * (size_t)d->size + 1, "step data");
    if (!status || !details || (!share && !allb)) {
      free(status);
      free(details);
      free(allb);
      set_waiting(d, 0);
      return CTR_E_OUT_OF_MEMORY;
    }
    status[0] = st;
    snprintf(details[0], sizeof details[0], "%s", mydetail);
    if (!share && n) memcpy(allb, mine, n);
    int have = 1;
    while (have < d->size) {
      msg m;
      if (try_recv(d->step_comm, MPI_ANY_SOURCE, KIND_STEP, &m)) {
        const int r = m.source;
        if (m.h.step == step && r > 0 && r < d->size) {
          status[r] = (ctr_status)m.h.status;
          snprintf(details[r], sizeof details[r], "%s", m.detail);
          if (!share && (size_t)m.h.nblob == n && n) memcpy(allb + (size_t)r * n, m.blob, n);
          have++;
        }
        free(m.buf);
        continue;
      }
      if (is_broken(d)) break;
      sleep_ms(1);
    }
    if (have < d->size) {
      free(status);
      free(details);
      free(allb);
      set_waiting(d, 0);
      return stop_error(d);
    }
    pthread_mutex_lock(&d->mu);
    if (d->stopped) {
      result = d->stop_status;
      snprintf(detail, sizeof detail, "%s", d->stop_detail);
    }
    pthread_mutex_unlock(&d->mu);
    for (int r = 0; r < d->size && result == CTR_OK; r++)
      if (status[r] != CTR_OK) {
        result = status[r];
        culprit_text(d, r, *details[r] ? details[r] : ctr_status_message(status[r]), detail,
                     sizeof detail);
      }
    msg_head h = head(KIND_RESULT, 0);
    h.step = step;
    h.status = result;
    h.ndetail = (int64_t)strlen(detail);
    h.nblob = share ? (int64_t)*nblob : (int64_t)(n * (size_t)d->size);
    const void *payload = share ? *blob : allb;
    for (int r = 1; r < d->size; r++) step_send(d, r, &h, detail, payload);
    if (!share && all) memcpy(all, allb, n * (size_t)d->size);
    free(status);
    free(details);
    free(allb);
  }
  set_waiting(d, 0);
  if (result != CTR_OK) CTR_FAIL(result, "%s", detail);
  return CTR_OK;
}

#endif /* CTR_HAVE_MPI */

/* ---- Public (to the library) ------------------------------------------------ */

ctr_status ctr__dist_gather(ctr__dist *d, ctr_status st, const void *mine, size_t n, void *all) {
#if CTR_HAVE_MPI
  if (d->size > 1) {
    if (is_broken(d)) return stop_error(d);
    return step_mpi(d, st, mine, n, 0, NULL, NULL, all);
  }
#endif
  if (all && n) memcpy(all, mine, n);
  return st;
}

ctr_status ctr__dist_share(ctr__dist *d, ctr_status st, void **blob, size_t *n) {
#if CTR_HAVE_MPI
  if (d->size > 1) {
    if (is_broken(d)) return stop_error(d);
    if (d->rank != 0) {
      *blob = NULL;
      *n = 0;
    }
    return step_mpi(d, st, NULL, 0, 1, blob, n, NULL);
  }
#endif
  return st;
}

ctr_status ctr__dist_same_run(ctr__dist *d, ctr_status st, const uint64_t fp[3], const char *input,
                              uint64_t *root) {
  *root = 0;
  uint64_t *all = ctr__calloc((size_t)d->size, 3 * sizeof *all, "ranks' fingerprints");
  if (!all && st == CTR_OK) st = CTR_E_OUT_OF_MEMORY;
  st = ctr__dist_gather(d, st, fp, 3 * sizeof *fp, all);
  for (int r = 1; st == CTR_OK && r < d->size; r++)
    if (all[3 * r] != all[0])
      st = ctr__error_set(CTR_E_INVALID_ARGUMENT, "rank %d of %d (%s): its geometry, options or "
                          "output differ from rank 0's: every rank of a distributed run gives "
                          "the same arguments", r, d->size, ctr__cluster_host(d->c, r));
  if (all) *root = all[1];
  /* the input: the rank whose copy differs names it (its path is its own) */
  if (st == CTR_OK && d->size > 1) {
    const ctr_status mine =
        all[3 * d->rank + 2] == all[2]
            ? CTR_OK
            : ctr__error_set(CTR_E_FORMAT, "the input '%s' it reads differs from rank 0's (its "
                             "sizes or the data of its first or last image): every rank must "
                             "read the same data (a node-local copy that is not the same would "
                             "mix two data sets in the output)", input);
    st = ctr__dist_gather(d, mine, NULL, 0, NULL);
  }
  free(all);
  return st;
}

ctr_status ctr__dist_next(ctr__dist *d, ctr__piece *out, int *got) {
  for (;;) { /* got 2: nothing to take yet, but there may be soon */
    *got = 0;
    CTR_CHECK(ctr__dist_check(d));
#if CTR_HAVE_MPI
    if (d->size > 1) {
      int64_t ans[4];
      CTR_CHECK(request(d, KIND_NEXT, 0, 0, ans));
      *got = (int)ans[1];
      *out = (ctr__piece){ans[2], ans[3]};
      if (*got != 2) return CTR_OK;
      sleep_ms(20);
      continue;
    }
#endif
    pthread_mutex_lock(&d->mu);
    const ctr_status st = ledger_next(d, 0, out, got);
    pthread_mutex_unlock(&d->mu);
    return st;
  }
}

void ctr__dist_set_delay(ctr__dist *d, double seconds) { d->delay = seconds; }

static ctr_status claim(ctr__dist *d, int64_t z, int64_t nz, int *granted) {
  *granted = 0;
  CTR_CHECK(ctr__dist_check(d));
#if CTR_HAVE_MPI
  if (d->size > 1) {
    int64_t ans[4];
    CTR_CHECK(request(d, KIND_CLAIM, z, nz, ans));
    *granted = (int)ans[1];
    return CTR_OK;
  }
#endif
  pthread_mutex_lock(&d->mu);
  *granted = ledger_claim(d, 0, z, nz, ctr__now_s());
  pthread_mutex_unlock(&d->mu);
  return CTR_OK;
}

ctr_status ctr__dist_claim(ctr__dist *d, int64_t z, int64_t nz, int *granted) {
  CTR_CHECK(claim(d, z, nz, granted));
  /* test builds: the rank computes what it claimed slowly */
  for (double t0 = ctr__now_s(); *granted && d->delay > 0 && ctr__now_s() - t0 < d->delay;) {
    CTR_CHECK(ctr__dist_check(d));
    pthread_mutex_lock(&d->mu);
    d->alive++; /* slow, not hung */
    pthread_mutex_unlock(&d->mu);
    sleep_ms(10);
  }
  return CTR_OK;
}

void ctr__dist_fail(ctr__dist *d, ctr_status st) {
  if (st == CTR_OK || ctr__dist_stopped(d)) return;
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", *ctr_error_detail() ? ctr_error_detail()
                                                           : ctr_status_message(st));
#if CTR_HAVE_MPI
  if (d->size > 1) {
    /* sent by this thread (MPI_THREAD_MULTIPLE) */
    msg_head h = head(KIND_FAIL, d->rank);
    h.status = st;
    h.ndetail = (int64_t)strlen(detail);
    int bytes = 0;
    void *buf = pack(&h, detail, NULL, &bytes);
    if (buf) {
      MPI_Request req;
      MPI_Isend(buf, bytes, MPI_BYTE, 0, KIND_FAIL, d->ctl_comm, &req);
      const double t0 = ctr__now_s();
      for (;;) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) {
          free(buf);
          break;
        }
        if (is_broken(d) || ctr__now_s() - t0 > d->timeout) {
          MPI_Request_free(&req);
          break;
        }
        sleep_ms(1);
      }
    }
    return;
  }
#endif
  pthread_mutex_lock(&d->mu);
  stop_locked(d, d->rank, st, 0, detail);
  pthread_mutex_unlock(&d->mu);
}

ctr_status ctr__dist_begin(const ctr_cluster *c, ctr_context *ctx, const char *what,
                           ctr__dist **out) {
  *out = NULL;
  if (!c) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "a distributed %s: the cluster is NULL", what);
  if (c->broken)
    CTR_FAIL(CTR_E_TIMEOUT, "a distributed %s: an earlier run of this cluster lost a rank; the "
             "job must end", what);
  ctr__dist *d = ctr__calloc(1, sizeof *d, "distributed run");
  if (!d) return CTR_E_OUT_OF_MEMORY;
  d->c = c;
  d->ctx = ctx;
  snprintf(d->what, sizeof d->what, "%s", what);
  d->rank = c->rank;
  d->size = c->size;
  d->timeout = c->timeout;
  d->hb = d->timeout / 8 < 1.0 ? d->timeout / 8 : 1.0;
  d->culprit = -1;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  pthread_mutex_init(&d->req_mu, NULL);
  d->rs = ctr__calloc((size_t)d->size, sizeof *d->rs, "ranks' states");
  if (!d->rs) {
    ctr__dist_end(d);
    return CTR_E_OUT_OF_MEMORY;
  }
  const double now = ctr__now_s();
  for (int r = 0; r < d->size; r++) d->rs[r].alive_at = now;
#if CTR_HAVE_MPI
  if (d->size > 1) {
    MPI_Comm_dup(c->comm, &d->step_comm);
    MPI_Comm_dup(c->comm, &d->ctl_comm);
    MPI_Comm_set_errhandler(d->step_comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(d->ctl_comm, MPI_ERRORS_RETURN);
    d->last_from_root = now;
    if (pthread_create(&d->thread, NULL, control_main, d) != 0) {
      ctr__dist_end(d);
      CTR_FAIL(CTR_E_INTERNAL, "cannot start the control thread of a distributed %s", what);
    }
    d->have_thread = 1;
  }
#endif
  if (ctx) {
    ctx->progress_hook = progress_hook;
    ctx->progress_hook_user = d;
  }
  *out = d;
  return CTR_OK;
}

void ctr__dist_end(ctr__dist *d) {
  if (!d) return;
  if (d->ctx && d->ctx->progress_hook_user == d) {
    d->ctx->progress_hook = NULL;
    d->ctx->progress_hook_user = NULL;
  }
#if CTR_HAVE_MPI
  if (d->size > 1) {
    if (d->have_thread) {
      pthread_mutex_lock(&d->mu);
      d->quit = 1;
      pthread_cond_broadcast(&d->cv);
      pthread_mutex_unlock(&d->mu);
      pthread_join(d->thread, NULL);
    }
    if (!d->broken) {
      /* every control thread has stopped sending: take what is left, then
       * free the communicators */
      MPI_Barrier(d->step_comm);
      msg m;
      while (try_recv(d->ctl_comm, MPI_ANY_SOURCE, MPI_ANY_TAG, &m)) free(m.buf);
      for (int i = 0; i < d->nout; i++) free(d->out[i].buf);
      MPI_Comm_free(&d->ctl_comm);
      MPI_Comm_free(&d->step_comm);
    }
    free(d->out); /* a broken run leaves its pending buffers to MPI */
  }
#endif
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->req_mu);
  free(d->rs);
  free(d->pieces);
  free(d);
}

/* The cluster (core.h, "Distributed runs"): joining the MPI job, the ranks'
 * host names, ctr_cluster_agree, leaving. Built without MPI, only the local
 * cluster of one exists and ctr_cluster_create says how to get MPI. */
#include "distributed/cluster_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void set_host(char *dst) {
  if (gethostname(dst, CTR__HOST_NAME) != 0) snprintf(dst, CTR__HOST_NAME, "unknown host");
  dst[CTR__HOST_NAME - 1] = '\0';
}

static double resolve_timeout(const ctr_cluster_options *o) {
  return o->timeout > 0 ? o->timeout : CTR__RANK_TIMEOUT_S;
}

static ctr_status check_options(const ctr_cluster_options *in, ctr_cluster_options *o) {
  CTR_CHECK(ctr__struct_copy(&ctr__struct_cluster_options, o, in));
  if (!(o->timeout >= 0) || o->timeout > 1e9)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_cluster_options.timeout",
                   CTR__V_REAL(o->timeout),
                   "ctr_cluster_options.timeout = %g: expected seconds >= 0 "
                   "(0: %g)", o->timeout, CTR__RANK_TIMEOUT_S);
  return CTR_OK;
}

ctr_status ctr__cluster_local(ctr_cluster **out) {
  ctr_cluster *c = ctr__calloc(1, sizeof *c, "cluster");
  if (!c) return CTR_E_OUT_OF_MEMORY;
  c->hosts = ctr__calloc(1, sizeof *c->hosts, "cluster host names");
  if (!c->hosts) {
    free(c);
    return CTR_E_OUT_OF_MEMORY;
  }
  c->size = 1;
  c->local = 1;
  c->lost = -1;
  c->timeout = CTR__RANK_TIMEOUT_S;
  set_host(c->hosts[0]);
  *out = c;
  return CTR_OK;
}

int ctr_cluster_get_rank(const ctr_cluster *c) { return c ? c->rank : 0; }
int ctr_cluster_get_size(const ctr_cluster *c) { return c ? c->size : 1; }

const char *ctr__cluster_host(const ctr_cluster *c, int r) {
  if (!c || !c->hosts) return "";
  return c->hosts[r >= 0 && r < c->size ? r : c->rank];
}

int ctr__cluster_ranks_on_host(const ctr_cluster *c, int r) {
  if (!c || !c->hosts || c->size <= 1) return 1;
  const char *h = ctr__cluster_host(c, r);
  int n = 0;
  for (int i = 0; i < c->size; i++) n += !strcmp(c->hosts[i], h);
  return n > 0 ? n : 1;
}

double ctr__cluster_timeout(const ctr_cluster *c) {
  return c ? c->timeout : CTR__RANK_TIMEOUT_S;
}

void ctr__cluster_mark_broken(const ctr_cluster *c, int lost) {
  if (!c) return;
  ctr_cluster *m = (ctr_cluster *)c; /* the one mutable state of a const cluster */
  if (!m->broken) m->lost = lost;
  m->broken = 1;
}

int ctr_cluster_get_reporter(const ctr_cluster *c) {
  return c && c->broken && c->lost == 0 && c->size > 1 ? 1 : 0;
}

#if CTR_HAVE_MPI

/* Polls a request until it completes or `timeout` seconds pass (1: done). */
static int wait_request(MPI_Request *req, double timeout) {
  const double t0 = ctr__now_s();
  for (;;) {
    int done = 0;
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return 1;
    if (ctr__now_s() - t0 > timeout) return 0;
    const struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
  }
}

ctr_status ctr_cluster_create(const ctr_cluster_options *opts, ctr_cluster **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_cluster_create: out is NULL");
  *out = NULL;
  ctr_cluster_options o;
  CTR_CHECK(check_options(opts, &o));
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      CTR_FAIL(CTR_E_UNSUPPORTED, "ctr_cluster_create: MPI_Init_thread failed");
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (!inited) MPI_Finalize();
    CTR_FAIL(CTR_E_UNSUPPORTED, "ctr_cluster_create: the MPI library gives thread level %d, "
             "ctrecon needs MPI_THREAD_MULTIPLE (%d): its reader, writer and control threads "
             "share MPI (use Open MPI as Debian builds it)", provided, MPI_THREAD_MULTIPLE);
  }
  ctr_cluster *c = ctr__calloc(1, sizeof *c, "cluster");
  if (!c) return CTR_E_OUT_OF_MEMORY;
  c->owns_mpi = !inited;
  c->lost = -1;
  c->timeout = resolve_timeout(&o);
  MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  c->hosts = ctr__calloc((size_t)c->size, sizeof *c->hosts, "cluster host names");
  if (!c->hosts) {
    ctr_cluster_free(c);
    return CTR_E_OUT_OF_MEMORY;
  }
  char mine[CTR__HOST_NAME];
  set_host(mine);
  MPI_Allgather(mine, CTR__HOST_NAME, MPI_CHAR, c->hosts, CTR__HOST_NAME, MPI_CHAR, c->comm);
  *out = c;
  return CTR_OK;
}

ctr_status ctr_cluster_agree(ctr_cluster *c, ctr_status st, const char *why) {
  if (!c) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_cluster_agree: cluster is NULL");
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", st == CTR_OK ? "" : why ? why : ctr_error_detail());
  if (c->size == 1 || c->local) {
    if (st != CTR_OK) ctr__error_set(st, "%s", detail);
    return st;
  }
  if (c->broken)
    CTR_FAIL(CTR_E_TIMEOUT, "ctr_cluster_agree: an earlier run lost a rank; the job must end");
  int *all = ctr__calloc((size_t)c->size, sizeof *all, "statuses");
  if (!all) return CTR_E_OUT_OF_MEMORY;
  const int mine = (int)st;
  MPI_Request req;
  MPI_Iallgather(&mine, 1, MPI_INT, all, 1, MPI_INT, c->comm, &req);
  if (!wait_request(&req, c->timeout)) {
    free(all);
    ctr__cluster_mark_broken(c, -1);
    CTR_FAIL(CTR_E_TIMEOUT, "not every rank of the %d reached this point within %g s (a rank hung "
             "or ended before it; ctr_cluster_options.timeout)", c->size, c->timeout);
  }
  int culprit = -1;
  for (int r = 0; r < c->size && culprit < 0; r++)
    if (all[r] != CTR_OK) culprit = r;
  const ctr_status result = culprit < 0 ? CTR_OK : (ctr_status)all[culprit];
  free(all);
  if (culprit < 0) return CTR_OK;
  MPI_Ibcast(detail, (int)sizeof detail, MPI_CHAR, culprit, c->comm, &req);
  if (!wait_request(&req, c->timeout)) {
    ctr__cluster_mark_broken(c, culprit);
    CTR_FAIL(CTR_E_TIMEOUT, "rank %d of %d failed and did not say why within %g s", culprit,
             c->size, c->timeout);
  }
  detail[sizeof detail - 1] = '\0';
  CTR_FAIL(result, "rank %d of %d (%s): %s", culprit, c->size, ctr__cluster_host(c, culprit),
           *detail ? detail : ctr_status_message(result));
}

void ctr_cluster_free(ctr_cluster *c) {
  if (!c) return;
  if (!c->local && !c->broken) {
    MPI_Comm_free(&c->comm);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (c->owns_mpi && !finalized) MPI_Finalize();
  }
  free(c->hosts);
  free(c);
}

#else /* !CTR_HAVE_MPI */

ctr_status ctr_cluster_create(const ctr_cluster_options *opts, ctr_cluster **out) {
  if (out) *out = NULL;
  ctr_cluster_options o;
  CTR_CHECK(check_options(opts, &o));
  (void)resolve_timeout;
  CTR_FAIL(CTR_E_UNSUPPORTED, "this build of ctrecon has no MPI support (run "
           "scripts/install-deps.sh or apt-get install libopenmpi-dev openmpi-bin, and configure "
           "with -DCTRECON_MPI=on)");
}

ctr_status ctr_cluster_agree(ctr_cluster *c, ctr_status st, const char *why) {
  if (!c) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_cluster_agree: cluster is NULL");
  if (st != CTR_OK) CTR_FAIL(st, "%s", why ? why : ctr_error_detail());
  return CTR_OK;
}

void ctr_cluster_free(ctr_cluster *c) {
  if (!c) return;
  free(c->hosts);
  free(c);
}

#endif

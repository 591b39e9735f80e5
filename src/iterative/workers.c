/* A projector's workers (ctr_projector_options.workers): the forward
 * projection split by views and the matched adjoint by slices over several
 * projectors of the same geometry, one per GPU of the context in turn, run
 * at once on threads. Per ray and per voxel the sums are those of one
 * worker (a ray adds its slabs in order whatever views the others take; a
 * voxel adds its views in slot order whatever slices the others take), so
 * the result has the bits of one worker for any count (test_gpu_iterate).
 *
 * Operands: host vectors are shared (workers write disjoint views or
 * slices); a backend vector, in the memory of the owner's GPU, is copied to
 * a worker's own vector of the same size on its GPU (the backend's copy:
 * peer to peer where the GPUs allow it) and its part copied back. Even two
 * workers on one GPU copy, so that path is tested on one GPU. A worker that
 * cannot get its vectors (GPU memory) leaves the split, with a warning; the
 * others take its share (the same bits).
 *
 * Threads: ctr__proj_workers_run is called on the run's thread; worker 0
 * (the owner) runs there, the others on threads of their own for the call. */
#include "iterative/backend.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct task {
  ctr_projector *w;  /* the worker */
  int k, forward;
  ctr__vec *x, *y;   /* the owner's operands */
  int64_t w0, w1;    /* forward: its views; adjoint: all views */
  int64_t z0, z1;    /* adjoint: its slices */
  ctr_status st;
  char detail[512];
} task;

static void worker_free(ctr_projector *w) {
  if (!w) return;
  if (w->be && w->be->release) w->be->release(w);
  ctr__context_drop(w->ctx);
  free(w);
}

ctr_status ctr__proj_workers_create(ctr_projector *p) {
  p->nworkers = 1;
  if (p->o.workers < 0 || p->o.workers > CTR_MAX_WORKERS)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_projector_options.workers",
                         CTR__V_INT(p->o.workers),
                         "ctr_projector_options.workers is %d: expected 0 (one per GPU of the "
                         "context) to %d", p->o.workers, CTR_MAX_WORKERS);
  if (p->device != CTR_DEVICE_CUDA) return CTR_OK; /* the CPU's threads share its work */
  const int ngpu = ctr_context_get_device_count(p->ctx);
  const int n = p->o.workers > 0 ? p->o.workers : (ngpu > 0 ? ngpu : 1);
  if (n == 1) return CTR_OK;
  p->workers = ctr__calloc((size_t)n, sizeof *p->workers, "projector workers");
  p->wx = ctr__calloc((size_t)n, sizeof *p->wx, "projector workers' vectors");
  p->wy = ctr__calloc((size_t)n, sizeof *p->wy, "projector workers' vectors");
  if (!p->workers || !p->wx || !p->wy) return CTR_E_OUT_OF_MEMORY;
  p->workers[0] = p;
  for (int k = 1; k < n; k++) {
    ctr_projector *w = ctr__malloc(sizeof *w, "projector worker");
    if (!w) return CTR_E_OUT_OF_MEMORY;
    *w = *p; /* the geometry in index space, sizes, options and plan */
    w->gpu = ctr__context_gpu(p->ctx, ngpu > 0 ? k % ngpu : 0);
    w->cuda = w->cuda_fast = NULL;
    w->fast_bp = NULL;
    w->g = NULL;
    w->pg = NULL;
    w->workers = NULL;
    w->wx = w->wy = NULL;
    w->nworkers = 1;
    w->owner = p; /* views and order are the owner's */
    w->order_changed = 1;
    ctr__context_hold(p->ctx);
    p->workers[k] = w;
    p->nworkers = k + 1;
  }
  return CTR_OK;
}

void ctr__proj_workers_free(ctr_projector *p) {
  for (int k = 1; k < p->nworkers; k++) {
    if (!p->workers[k]) continue;
    ctr__vec_free(p->workers[k], &p->wx[k]);
    ctr__vec_free(p->workers[k], &p->wy[k]);
    worker_free(p->workers[k]);
  }
  free(p->workers);
  free(p->wx);
  free(p->wy);
  p->workers = NULL;
  p->wx = p->wy = NULL;
  p->nworkers = 1;
}

void ctr__proj_workers_follow(ctr_projector *p) {
  for (int k = 1; k < p->nworkers; k++) {
    ctr_projector *w = p->workers[k];
    w->slab_slices = p->slab_slices;
    w->block_views = p->block_views;
    w->batch_views = p->batch_views;
    w->order_changed = 1;
  }
}

/* Worker k's copy of a vector like v (its GPU), allocated on first use. */
static ctr_status own_vec(ctr_projector *p, int k, const ctr__vec *v, ctr__vec *mine) {
  if (mine->data && mine->n == v->n) return CTR_OK;
  ctr__vec_free(p->workers[k], mine);
  return ctr__vec_alloc(p->workers[k], v->n, 1, mine);
}

static ctr_status run_task(task *t) {
  ctr_projector *p = t->w->owner ? t->w->owner : t->w, *w = t->w;
  const int64_t npix = p->nu * p->nv, plane = p->n[0] * p->n[1];
  if (t->k == 0) /* the owner: its own operands */
    return t->forward ? p->be->forward(p, t->x, t->y, t->w0, t->w1)
                      : p->be->adjoint(p, t->y, t->x, t->w0, t->w1, t->z0, t->z1);
  ctr__vec *wx = &p->wx[t->k], *wy = &p->wy[t->k];
  const ctr__vec *x = t->x, *y = t->y;
  if (x->device) {
    CTR_CHECK(own_vec(p, t->k, x, wx));
    if (t->forward) CTR_CHECK(w->be->copy(w, wx->data, 1, x->data, 1, x->n));
    x = wx;
  }
  if (y->device) {
    CTR_CHECK(own_vec(p, t->k, y, wy));
    if (!t->forward)
      CTR_CHECK(w->be->copy(w, wy->data + t->w0 * npix, 1, y->data + t->w0 * npix, 1,
                            (t->w1 - t->w0) * npix));
    y = wy;
  }
  if (t->forward) {
    CTR_CHECK(w->be->forward(w, x, (ctr__vec *)y, t->w0, t->w1));
    if (t->y->device)
      CTR_CHECK(w->be->copy(w, t->y->data + t->w0 * npix, 1, y->data + t->w0 * npix, 1,
                            (t->w1 - t->w0) * npix));
  } else {
    CTR_CHECK(w->be->adjoint(w, y, (ctr__vec *)x, t->w0, t->w1, t->z0, t->z1));
    if (t->x->device)
      CTR_CHECK(w->be->copy(w, t->x->data + t->z0 * plane, 1, x->data + t->z0 * plane, 1,
                            (t->z1 - t->z0) * plane));
  }
  return CTR_OK;
}

static void *task_main(void *arg) {
  task *t = arg;
  t->st = run_task(t);
  if (t->st != CTR_OK) snprintf(t->detail, sizeof t->detail, "%s", ctr_error_detail());
  return NULL;
}

/* Share [a, b) among n in contiguous parts, the first ones one larger. */
static void share(int64_t a, int64_t b, int n, int k, int64_t *lo, int64_t *hi) {
  const int64_t len = b - a, q = len / n, r = len % n;
  *lo = a + k * q + (k < r ? k : r);
  *hi = *lo + q + (k < r ? 1 : 0);
}

/* Each worker's copies of the operands that are backend vectors; a worker
 * whose GPU cannot hold them leaves the split, with the ones after it. */
static ctr_status prepare(ctr_projector *p, const ctr__vec *x, const ctr__vec *y) {
  for (int k = 1; k < p->nworkers; k++) {
    ctr_status st = x->device ? own_vec(p, k, x, &p->wx[k]) : CTR_OK;
    if (st == CTR_OK && y->device) st = own_vec(p, k, y, &p->wy[k]);
    if (st == CTR_OK) continue;
    if (st != CTR_E_DEVICE_OUT_OF_MEMORY) return st;
    ctr__log(p->ctx, CTR_LOG_WARNING, "projector: worker %d (GPU %d) cannot hold its copies of "
             "the vectors (%s): %d worker(s) share the projections from now on (the same "
             "result)", k, p->workers[k]->gpu, ctr_error_detail(), k);
    for (int j = p->nworkers - 1; j >= k; j--) {
      ctr__vec_free(p->workers[j], &p->wx[j]);
      ctr__vec_free(p->workers[j], &p->wy[j]);
      worker_free(p->workers[j]);
      p->workers[j] = NULL;
    }
    p->nworkers = k;
  }
  return CTR_OK;
}

ctr_status ctr__proj_workers_run(ctr_projector *p, int forward, ctr__vec *x, ctr__vec *y,
                                 int64_t w0, int64_t w1) {
  CTR_CHECK(prepare(p, x, y));
  const int n = p->nworkers;
  task t[CTR_MAX_WORKERS];
  pthread_t th[CTR_MAX_WORKERS];
  int started[CTR_MAX_WORKERS] = {0};
  const int64_t span = forward ? w1 - w0 : p->n[2];
  const int m = span < n ? (int)(span > 0 ? span : 1) : n; /* no worker without work */
  for (int k = 0; k < m; k++) {
    t[k] = (task){p->workers[k], k, forward, x, y, w0, w1, 0, p->n[2], CTR_OK, {0}};
    if (forward)
      share(w0, w1, m, k, &t[k].w0, &t[k].w1);
    else
      share(0, p->n[2], m, k, &t[k].z0, &t[k].z1);
  }
  for (int k = 1; k < m; k++) {
    started[k] = pthread_create(&th[k], NULL, task_main, &t[k]) == 0;
    if (!started[k]) task_main(&t[k]); /* no thread: on this one */
  }
  task_main(&t[0]);
  for (int k = 1; k < m; k++)
    if (started[k]) pthread_join(th[k], NULL);
  for (int k = 0; k < m; k++) /* the first failure in worker order */
    if (t[k].st != CTR_OK) return ctr__error_set(t[k].st, "%s", t[k].detail);
  return CTR_OK;
}

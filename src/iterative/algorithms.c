/* ctr_iterate: SIRT, CGLS, OS-SART, FISTA-TV and PDHG-TV on the projector (PWLS
 * in pwls.c, through run.h), written
 * once over vectors that live in GPU or host memory as the plan says
 * (docs/iterative.md has the update formulas and the memory of each). Every
 * run: options resolved, a plan, the vectors, b (the projections, in slot
 * order, bad values replaced), x0, the iterations with their report,
 * callback, checkpoint and stopping tests, x back into the caller's volume. */
#include "iterative/backend.h"
#include "iterative/run.h"

#include <math.h>
#include <string.h>

static const ctr_iterate_report report_defaults = CTR_ITERATE_REPORT_INIT;

/* ---- Options ------------------------------------------------------------------ */

#define DEFAULT_SUBSETS 10
#define DEFAULT_TV_ITERATIONS 10
#define DEFAULT_POWER_ITERATIONS 15
/* The power iteration approaches ||A||^2 from below: the step uses 5 % more. */
#define LIPSCHITZ_MARGIN 1.05

/* The TV weights the float TV step holds: mu = W and tau = 1 / (12 W) stay
 * normal floats (1.2e-38 .. 3.4e38) with room for the sums they enter. */
#define TV_WEIGHT_MIN 1e-30
#define TV_WEIGHT_MAX 1e30

static ctr_status resolve(const ctr_projector *p, const ctr_iterate_options *in,
                          ctr_iterate_options *o) {
  if (!in) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_iterate: options are NULL");
  /* the caller's version read into the current layout */
  CTR_CHECK(ctr__struct_copy(&ctr__struct_iterate_options, o, in));
  if ((unsigned)o->algorithm > CTR_ITERATE_PWLS)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.algorithm",
                   CTR__V_INT(o->algorithm),
                   "ctr_iterate_options.algorithm is %d: expected CTR_ITERATE_SIRT, "
                   "CTR_ITERATE_CGLS, CTR_ITERATE_OS_SART, CTR_ITERATE_FISTA_TV, "
                   "CTR_ITERATE_PDHG_TV or CTR_ITERATE_PWLS", (int)o->algorithm);
  if (o->iterations < 1 || o->iterations > 1000000000)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.iterations",
                   CTR__V_INT(o->iterations),
                   "ctr_iterate_options.iterations is %lld: expected 1 .. 1e9",
                   (long long)o->iterations);
  if (!(o->tolerance >= 0 && isfinite(o->tolerance)))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.tolerance",
                   CTR__V_REAL(o->tolerance),
                   "ctr_iterate_options.tolerance is %g: expected >= 0",
                   o->tolerance);
  if (o->subsets < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.subsets",
                   CTR__V_INT(o->subsets),
                   "ctr_iterate_options.subsets is %lld: expected >= 0 (0 = %d)",
                   (long long)o->subsets, DEFAULT_SUBSETS);
  if (o->algorithm == CTR_ITERATE_OS_SART) {
    if (o->subsets == 0) o->subsets = DEFAULT_SUBSETS;
    if (o->subsets > p->nviews) o->subsets = p->nviews;
  } else {
    o->subsets = 1;
  }
  if (o->relaxation == 0) o->relaxation = 1.0;
  if (!(o->relaxation > 0 && o->relaxation < 2))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.relaxation",
                   CTR__V_REAL(o->relaxation),
                   "ctr_iterate_options.relaxation is %g: expected 0 < lambda < 2",
                   o->relaxation);
  if (!(o->tv_weight == 0 || (o->tv_weight >= TV_WEIGHT_MIN && o->tv_weight <= TV_WEIGHT_MAX)))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.tv_weight",
                   CTR__V_REAL(o->tv_weight),
                   "ctr_iterate_options.tv_weight is %g: expected 0 or "
                   "%g .. %g (the TV step computes W and 1 / (12 W) in float)", o->tv_weight,
                   TV_WEIGHT_MIN, TV_WEIGHT_MAX);
  if (o->algorithm != CTR_ITERATE_FISTA_TV && o->algorithm != CTR_ITERATE_PDHG_TV) o->tv_weight = 0;
  if (o->tv_iterations == 0) o->tv_iterations = DEFAULT_TV_ITERATIONS;
  if (o->power_iterations == 0) o->power_iterations = DEFAULT_POWER_ITERATIONS;
  if (o->tv_iterations < 1 || o->tv_iterations > 100000 || o->power_iterations < 1 ||
      o->power_iterations > 100000)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.tv_iterations",
                   "ctr_iterate_options.tv_iterations %lld, power_iterations "
                   "%lld: expected 1 .. 100000 (0 = the defaults)", (long long)o->tv_iterations,
                   (long long)o->power_iterations);
  if (o->box && !(isfinite(o->lower) && isfinite(o->upper) && o->lower < o->upper))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.box",
                   "ctr_iterate_options.box: lower %g, upper %g: expected finite "
                   "lower < upper", o->lower, o->upper);
  if ((o->algorithm == CTR_ITERATE_CGLS || o->algorithm == CTR_ITERATE_PWLS) &&
      (o->nonneg || o->box))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, o->nonneg ? "ctr_iterate_options.nonneg"
                                                     : "ctr_iterate_options.box",
             CTR__V_INT(o->nonneg ? o->nonneg : o->box),
             "ctr_iterate_options.%s: %s is unconstrained (a projection "
             "would break its conjugate directions); use SIRT, OS-SART, FISTA-TV or PDHG-TV for "
             "constraints", o->nonneg ? "nonneg" : "box",
             o->algorithm == CTR_ITERATE_CGLS ? "CGLS" : "PWLS");
  CTR_CHECK(ctr__it_pwls_resolve(o));
  if ((unsigned)o->init > CTR_ITERATE_INIT_GIVEN)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.init", CTR__V_INT(o->init),
                   "ctr_iterate_options.init is %d", (int)o->init);
  if (o->checkpoint_every < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.checkpoint_every",
                   CTR__V_INT(o->checkpoint_every),
                   "ctr_iterate_options.checkpoint_every is %lld: expected >= 0",
                   (long long)o->checkpoint_every);
  if (o->checkpoint_every == 0) o->checkpoint_every = 1;
  if (o->resume && !o->checkpoint)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.resume",
                   "ctr_iterate_options.resume needs ctr_iterate_options.checkpoint");
  if (o->max_slab_slices < 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.max_slab_slices",
                   CTR__V_INT(o->max_slab_slices),
                   "ctr_iterate_options.max_slab_slices is %lld: expected >= 0",
                   (long long)o->max_slab_slices);
  return CTR_OK;
}

ctr_status ctr_iterate_plan_compute(const ctr_projector *p, const ctr_iterate_options *opts,
                            ctr_device_kind device, uint64_t gpu_budget, uint64_t host_budget,
                            ctr_iterate_plan *out) {
  if (!p || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_iterate_plan_compute: NULL argument");
  CTR_CHECK(ctr__struct_check(&ctr__struct_iterate_plan, out));
  ctr_iterate_options o;
  CTR_CHECK(resolve(p, opts, &o));
  int64_t nv, nq;
  ctr__it_vectors(&o, &nv, &nq);
  ctr_iterate_plan plan = CTR_ITERATE_PLAN_INIT;
  CTR_CHECK(ctr__it_plan(p, nv, nq, p->o.pair == CTR_PAIR_FAST, device, gpu_budget, host_budget,
                         o.max_slab_slices ? o.max_slab_slices : p->o.max_slab_slices, &plan));
  return ctr__struct_store(&ctr__struct_iterate_plan, out, &plan); /* in the caller's version */
}

/* ---- The run ------------------------------------------------------------------ */

typedef ctr__it_run run; /* run.h */

/* Starts the clock of an iteration (the projector's queue drained, so its
 * vector work is counted where it was queued). */
static void mark(run *R) {
  if (R->P->be->sync) (void)R->P->be->sync(R->P);
  R->mark_t = ctr__now_s();
  R->mark_fwd = R->P->seconds_forward;
  R->mark_adj = R->P->seconds_adjoint;
}

/* The first iteration of the loop (after a resume, the one after the
 * checkpoint's); the setup ends here. */
static int64_t first_iteration(run *R) {
  mark(R);
  R->rep.seconds_setup = R->mark_t - R->t0;
  return R->k0 + 1;
}

static ctr_status vol_vec(run *R, ctr__vec *v) {
  return ctr__vec_alloc(R->P, R->nvol, R->vdev, v);
}
static ctr_status proj_vec(run *R, ctr__vec *v) {
  return ctr__vec_alloc(R->P, R->nproj, R->pdev, v);
}

/* The iterate: the caller's volume itself when it is where the plan keeps
 * volumes (host memory: one volume less, 2048^3 CGLS fits a 128 GB host;
 * GPU memory: the caller's GPU array), else a vector of the plan's. */
static ctr_status x_vec(run *R, float *vol, ctr__vec *v) {
  (void)vol; /* R->uvol.data */
  if (R->vdev != R->uvol.device) return vol_vec(R, v);
  *v = R->uvol;
  return CTR_OK;
}

/* Frees a volume vector unless it is the caller's volume. */
static void vfree(run *R, ctr__vec *v, const float *vol) {
  if (v->data != vol) ctr__vec_free(R->P, v);
}

/* The result into the caller's volume (nothing to do when it is there). */
static ctr_status x_out(run *R, const ctr__vec *x, float *vol) {
  return x->data == vol ? CTR_OK : ctr__vec_copy(R->P, &R->uvol, x);
}

static ctr_status forward(run *R, const ctr__vec *x, ctr__vec *y) {
  return ctr__proj_forward(R->P, x, y, 0, R->P->nviews);
}
static ctr_status adjoint(run *R, const ctr__vec *y, ctr__vec *x) {
  return ctr__proj_adjoint(R->P, y, x, 0, R->P->nviews);
}
static ctr_status norm(run *R, const ctr__vec *v, double *out) {
  CTR_CHECK(ctr__vec_dot(R->P, v, v, out));
  *out = sqrt(*out);
  return CTR_OK;
}

/* An array in the projections' layout into slot order (cone beam: view by
 * view; parallel beam: transposed, host ones through a staging view, GPU
 * ones by the GPU's copies). */
static ctr_status load_slots(run *R, const ctr__vec *user, ctr__vec *b) {
  ctr_projector *P = R->P;
  const int64_t npix = P->nu * P->nv;
  const float *proj = user->data;
  if (!P->parallel) {
    for (int64_t w = 0; w < P->nviews; w++) {
      ctr__vec part = ctr__vec_part(b, w * npix, npix);
      const ctr__vec view = ctr__vec_part(user, P->order[w] * npix, npix);
      CTR_CHECK(ctr__vec_copy(P, &part, &view));
    }
  } else if (user->device) {
    CTR_CHECK(P->be->slots_device(P, (float *)proj, b->data, 1));
  } else if (!b->device) {
    ctr__proj_to_slots(P, proj, b->data);
  } else {
    float *stage = ctr__malloc(sizeof(float) * (size_t)npix, "projection staging");
    if (!stage) return CTR_E_OUT_OF_MEMORY;
    ctr_status st = CTR_OK;
    for (int64_t w = 0; w < P->nviews && st == CTR_OK; w++) {
      const int64_t view = P->order[w];
      for (int64_t v = 0; v < P->nv; v++)
        memcpy(stage + v * P->nu, proj + (v * P->nviews + view) * P->nu, sizeof(float) * (size_t)P->nu);
      ctr__vec part = ctr__vec_part(b, w * npix, npix);
      st = ctr__vec_upload(P, &part, stage);
    }
    free(stage);
    CTR_CHECK(st);
  }
  return CTR_OK;
}

/* b in slot order from the caller's projections, bad values replaced and
 * counted; ||b||. */
static ctr_status load_b(run *R, const float *proj, ctr__vec *b) {
  ctr_projector *P = R->P;
  (void)proj; /* R->uproj.data */
  CTR_CHECK(load_slots(R, &R->uproj, b));
  int64_t bad = 0;
  CTR_CHECK(ctr__vec_sanitize(P, b, &bad));
  R->rep.nonfinite = bad;
  CTR_CHECK(ctr__values_report(P->ctx, R->o.strict, bad, "the projections"));
  return norm(R, b, &R->rep.norm_b);
}

/* x0: zero, the caller's volume, or FDK / FBP of the projections (computed
 * into the caller's volume, which is overwritten at the end anyway); x may
 * be the caller's volume itself. */
static ctr_status init_x(run *R, const float *proj, float *vol, ctr__vec *x) {
  ctr_projector *P = R->P;
  if (R->o.init == CTR_ITERATE_INIT_ZERO) return ctr__vec_fill(P, x, 0.0f);
  if (R->o.init == CTR_ITERATE_INIT_GIVEN) {
    /* the caller's start under the data policy, as the projections are: a
     * value beyond float arithmetic's reach would make every residual NaN */
    if (x->data != vol) CTR_CHECK(ctr__vec_copy(P, x, &R->uvol));
    int64_t bad = 0;
    CTR_CHECK(ctr__vec_sanitize(P, x, &bad));
    return ctr__values_report(P->ctx, R->o.strict, bad, "the initial volume");
  }
  if (R->o.init == CTR_ITERATE_INIT_FDK) {
    int64_t pd[3], vd[3] = {P->n[0], P->n[1], P->n[2]};
    ctr_projector_get_projection_dims(P, pd);
    ctr_array pa = ctr_array_make((void *)proj, CTR_DTYPE_FLOAT32, 3, pd);
    ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
    if (!P->parallel) {
      ctr_fdk_options fo = CTR_FDK_OPTIONS_INIT;
      fo.strict = R->o.strict;
      CTR_CHECK(ctr_fdk(P->ctx, P->g, &fo, &pa, &va));
    } else {
      ctr_fbp_options fo = CTR_FBP_OPTIONS_INIT;
      fo.strict = R->o.strict;
      CTR_CHECK(ctr_fbp(P->ctx, P->pg, &fo, &pa, &va));
    }
  }
  return x->data == vol ? CTR_OK : ctr__vec_copy(P, x, &R->uvol);
}

/* The checksum of a caller's array in the projections' layout. */
static ctr_status checksum(run *R, const ctr__vec *user, int64_t *out) {
  const int64_t bytes = (int64_t)sizeof(float) * R->nproj;
  if (!user->device) {
    *out = ctr__it_checksum(user->data, bytes);
    return CTR_OK;
  }
  /* GPU arrays: checksummed from a host copy (checkpoints only) */
  ctr__vec h = {ctr__malloc((size_t)bytes, "projections' checksum"), R->nproj, 0};
  if (!h.data) return CTR_E_OUT_OF_MEMORY;
  const ctr_status st = ctr__vec_copy(R->P, &h, user);
  if (st == CTR_OK) *out = ctr__it_checksum(h.data, bytes);
  free(h.data);
  return st;
}

static ctr_status fingerprint(run *R, const float *proj) {
  ctr_projector *P = R->P;
  ctr__it_fingerprint *f = &R->fp;
  memset(f, 0, sizeof *f);
  f->algorithm = R->o.algorithm;
  for (int a = 0; a < 3; a++) f->n[a] = P->n[a];
  f->nu = P->nu, f->nv = P->nv, f->nviews = P->nviews;
  f->subsets = R->o.subsets;
  f->tv_iterations = R->o.algorithm == CTR_ITERATE_FISTA_TV ? R->o.tv_iterations : 0;
  f->nonneg = R->o.nonneg != 0;
  f->box = R->o.box != 0;
  f->pair = P->o.pair;
  f->relaxation = R->o.relaxation;
  f->tv_weight = R->o.tv_weight;
  f->lower = R->o.box ? R->o.lower : 0;
  f->upper = R->o.box ? R->o.upper : 0;
  f->slab_slices = R->plan.slab_slices;
  f->penalty = R->o.penalty;
  f->beta = R->o.beta;
  f->huber_delta = R->o.huber_delta;
  f->i0 = R->o.i0;
  /* the two 32-bit checksums side by side (unsigned: a shift into the sign bit is undefined) */
  const uint64_t rays = (uint64_t)ctr__it_checksum(P->views, (int64_t)sizeof(ctr__it_view) * P->nviews);
  const uint64_t vox = (uint64_t)ctr__it_checksum(P->vox, (int64_t)sizeof P->vox);
  f->geometry = (int64_t)(rays ^ (vox << 32));
  (void)proj; /* R->uproj.data */
  CTR_CHECK(checksum(R, &R->uproj, &f->data));
  return R->uweights.data ? checksum(R, &R->uweights, &f->weights) : CTR_OK;
}

/* The callback of a resumed run sees the iterations of the checkpoint's
 * history first (info.resumed, return value ignored). A history that does
 * not reach the checkpoint's iteration (a checkpoint of an older ctrecon)
 * is not reported, nor continued. */
static void replay(run *R) {
  ctr__it_state *s = &R->state;
  if (s->nhist != s->iteration) {
    s->nhist = 0;
    R->no_history = 1;
    return;
  }
  for (int64_t k = 0; k < s->nhist && R->o.on_iteration; k++) {
    const double *h = s->hist + CTR__IT_HIST * k;
    ctr_iterate_info info;
    memset(&info, 0, sizeof info);
    info.iteration = k + 1;
    info.iterations = R->o.iterations;
    info.residual = h[0], info.relative_residual = h[1], info.error = h[2], info.seconds = h[3];
    info.resumed = 1;
    (void)R->o.on_iteration(R->o.user, &info);
  }
}

/* Appends iteration k's record to the state's history (the run's seconds:
 * those of the resumed part, then this call's). */
static ctr_status history_add(run *R, const ctr_iterate_info *i) {
  ctr__it_state *s = &R->state;
  if (R->no_history || s->nhist != i->iteration - 1) return CTR_OK;
  if (s->nhist == s->hist_cap) {
    const int64_t cap = s->hist_cap ? 2 * s->hist_cap : 64;
    double *h = realloc(s->hist, sizeof(double) * CTR__IT_HIST * (size_t)cap);
    if (!h) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "the iteration history (%lld iterations)", (long long)cap);
    s->hist = h, s->hist_cap = cap;
  }
  double *h = s->hist + CTR__IT_HIST * s->nhist++;
  const double sec0 = R->k0 > 0 ? s->hist[CTR__IT_HIST * R->k0 - 1] : 0; /* the resumed part's */
  h[0] = i->residual, h[1] = i->relative_residual, h[2] = i->error, h[3] = sec0 + i->seconds;
  return CTR_OK;
}

/* Reads the checkpoint into the state when resuming; R->k0 gets its
 * iteration. */
static ctr_status maybe_resume(run *R) {
  if (!R->o.resume) return CTR_OK;
  CTR_CHECK(ctr__it_checkpoint_read(R->P, R->o.checkpoint, &R->fp, &R->state));
  if (R->state.iteration > R->o.iterations)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "checkpoint '%s' holds %lld finished iterations, more than "
             "ctr_iterate_options.iterations (%lld)", R->o.checkpoint,
             (long long)R->state.iteration, (long long)R->o.iterations);
  R->k0 = R->state.iteration;
  R->rep.resumed = R->k0;
  R->rep.iterations = R->k0;
  R->rep.checkpointed = R->k0;
  replay(R);
  return CTR_OK;
}

/* After iteration k with residual res of x: report, callback, checkpoint,
 * stopping tests, cancellation. */
static ctr_status epilogue(run *R, int64_t k, double res, const ctr__vec *x) {
  ctr_projector *P = R->P;
  /* inputs are finite and bounded (the data policy), so this is a defect or
   * an overflow of float arithmetic: stop rather than iterate on NaN */
  if (!isfinite(res))
    CTR_FAIL(CTR_E_INTERNAL, "%s, iteration %lld: the residual is %g (not finite): stopped; the "
             "projections and the start were finite and within +-1e24 (the data policy), so the "
             "float arithmetic overflowed on the options (ctr_iterate_options.relaxation %g, "
             "ctr_iterate_options.tv_weight %g) or the data's scale, or this is a defect to "
             "report", ctr_iterate_algorithm_name(R->o.algorithm), (long long)k, res,
             R->o.relaxation, R->o.tv_weight);
  R->rep.iterations = k;
  R->rep.residual = res;
  ctr_iterate_info info;
  if (P->be->sync) CTR_CHECK(P->be->sync(P));
  info.seconds_forward = P->seconds_forward - R->mark_fwd;
  info.seconds_adjoint = P->seconds_adjoint - R->mark_adj;
  info.seconds_vector = ctr__now_s() - R->mark_t - info.seconds_forward - info.seconds_adjoint;
  R->rep.seconds_vector += info.seconds_vector;
  info.iteration = k;
  info.iterations = R->o.iterations;
  info.residual = res;
  info.relative_residual = R->rep.norm_b > 0 ? res / R->rep.norm_b : 0.0;
  info.error = -1.0;
  if (R->truth.data) {
    double d2;
    CTR_CHECK(ctr__vec_dist2(P, x, &R->truth, &d2));
    info.error = R->norm_truth > 0 ? sqrt(d2) / R->norm_truth : sqrt(d2);
  }
  info.seconds = ctr__now_s() - R->t0;
  info.resumed = 0;
  if (R->o.checkpoint) CTR_CHECK(history_add(R, &info));
  if (R->o.on_iteration && R->o.on_iteration(R->o.user, &info)) {
    R->stop = 1;
    R->rep.stop = CTR_ITERATE_STOP_CALLBACK;
  }
  if (!R->stop && R->o.tolerance > 0 && res <= R->o.tolerance * R->rep.norm_b) {
    R->stop = 1;
    R->rep.stop = CTR_ITERATE_STOP_TOLERANCE;
  }
  if (!R->stop && k >= R->o.iterations) {
    R->stop = 1;
    R->rep.stop = CTR_ITERATE_STOP_ITERATIONS;
  }
  if (R->o.checkpoint && (k % R->o.checkpoint_every == 0 || R->stop)) {
    R->state.iteration = k;
    CTR_CHECK(ctr__it_checkpoint_write(P, R->o.checkpoint, &R->fp, &R->state));
    R->rep.checkpointed = k;
  }
  const ctr_status st = ctr__progress(P->ctx, "iterate", (double)k / (double)R->o.iterations);
  mark(R); /* the next iteration starts after the report, checkpoint and callback */
  return st;
}

/* A 1 (the projection of a volume of ones) has norm^2 a2: 0 (or not a
 * number) when no ray crosses the volume, where every algorithm would stop
 * at once or keep x0 and return it as the result. */
static ctr_status check_seen(double a2) {
  if (!(a2 > 0 && isfinite(a2)))
    CTR_FAIL(CTR_E_GEOMETRY, "no ray of the projections crosses the volume (A 1 is %s): check "
             "the geometry (rotation axis, detector pixel and voxel sizes)", a2 == 0 ? "0" : "not finite");
  return CTR_OK;
}

/* ---- SIRT ------------------------------------------------------------------------ */

/* Rays shorter than half the smallest voxel get no weight (their 1 / length
 * would amplify noise), as TIGRE does (Biguri et al. 2016). */
static float row_threshold(const ctr_projector *P) {
  double m = P->vox[0];
  if (P->vox[1] < m) m = P->vox[1];
  if (P->vox[2] < m) m = P->vox[2];
  return (float)(0.5 * m);
}

/* Rw = 1 / (A 1) over every slot (unless Rw is NULL) and C = 1 / (A^T 1)
 * of slots [w0, w1), with tmp_v and tmp_p as scratch. */
static ctr_status weights(run *R, ctr__vec *Rw, ctr__vec *C, ctr__vec *tmp_v, ctr__vec *tmp_p,
                          int64_t w0, int64_t w1) {
  ctr_projector *P = R->P;
  const int64_t npix = P->nu * P->nv;
  if (Rw) {
    CTR_CHECK(ctr__vec_fill(P, tmp_v, 1.0f));
    CTR_CHECK(ctr__proj_forward(P, tmp_v, tmp_p, 0, P->nviews));
    double a2;
    CTR_CHECK(ctr__vec_dot(P, tmp_p, tmp_p, &a2));
    CTR_CHECK(check_seen(a2));
    CTR_CHECK(ctr__vec_recip(P, Rw, tmp_p, row_threshold(P)));
  }
  ctr__vec rows = ctr__vec_part(tmp_p, w0 * npix, (w1 - w0) * npix);
  CTR_CHECK(ctr__vec_fill(P, &rows, 1.0f));
  CTR_CHECK(ctr__proj_adjoint(P, tmp_p, tmp_v, w0, w1));
  return ctr__vec_recip(P, C, tmp_v, 0.0f);
}

/* r = b - A x over slots [w0, w1); *res2 = ||r||^2 there. */
static ctr_status residual(run *R, const ctr__vec *x, const ctr__vec *b, ctr__vec *r, int64_t w0,
                           int64_t w1, double *res2) {
  const int64_t npix = R->P->nu * R->P->nv;
  CTR_CHECK(ctr__proj_forward(R->P, x, r, w0, w1));
  ctr__vec rs = ctr__vec_part(r, w0 * npix, (w1 - w0) * npix);
  ctr__vec bs = ctr__vec_part(b, w0 * npix, (w1 - w0) * npix);
  CTR_CHECK(ctr__vec_comb(R->P, &rs, 1.0f, &bs, -1.0f, &rs));
  return ctr__vec_dot(R->P, &rs, &rs, res2);
}

/* x += lambda C A^T (R r) over slots [w0, w1) of r, then the constraint. */
static ctr_status sart_step(run *R, ctr__vec *x, ctr__vec *r, const ctr__vec *Rw, const ctr__vec *C,
                            ctr__vec *t, int64_t w0, int64_t w1) {
  ctr_projector *P = R->P;
  const int64_t npix = P->nu * P->nv;
  ctr__vec rs = ctr__vec_part(r, w0 * npix, (w1 - w0) * npix);
  ctr__vec ws = ctr__vec_part(Rw, w0 * npix, (w1 - w0) * npix);
  CTR_CHECK(ctr__vec_mul(P, &rs, &rs, &ws));
  CTR_CHECK(ctr__proj_adjoint(P, r, t, w0, w1));
  CTR_CHECK(ctr__vec_mul(P, t, t, C));
  CTR_CHECK(ctr__vec_comb(P, x, 1.0f, x, (float)R->o.relaxation, t));
  if (R->lo > -INFINITY || R->hi < INFINITY) CTR_CHECK(ctr__vec_clip(P, x, R->lo, R->hi));
  return CTR_OK;
}

/* The vectors SIRT and OS-SART share (x, a volume t; b, R, r), b loaded,
 * the state (x) resumed or x0 made. */
static ctr_status sart_begin(run *R, const float *proj, float *vol, ctr__vec *x, ctr__vec *t,
                             ctr__vec *b, ctr__vec *Rw, ctr__vec *r) {
  CTR_CHECK(x_vec(R, vol, x));
  CTR_CHECK(vol_vec(R, t));
  CTR_CHECK(proj_vec(R, b));
  CTR_CHECK(proj_vec(R, Rw));
  CTR_CHECK(proj_vec(R, r));
  R->state.nvec = 1;
  R->state.vec[0] = x;
  CTR_CHECK(load_b(R, proj, b));
  CTR_CHECK(maybe_resume(R));
  return R->k0 ? CTR_OK : init_x(R, proj, vol, x);
}

/* SIRT (Gregor and Benson 2008): x += lambda C A^T R (b - A x). The
 * residual of each new x is the next iteration's first step. */
static ctr_status sirt(run *R, const float *proj, float *vol) {
  ctr__vec x = {0}, C = {0}, t = {0}, b = {0}, Rw = {0}, r = {0};
  ctr_status st = CTR_OK;
  const int64_t nw = R->P->nviews;
  CTR_CHECK_GOTO(st, vol_vec(R, &C));
  CTR_CHECK_GOTO(st, sart_begin(R, proj, vol, &x, &t, &b, &Rw, &r));
  CTR_CHECK_GOTO(st, weights(R, &Rw, &C, &t, &r, 0, nw));
  double res2;
  CTR_CHECK_GOTO(st, residual(R, &x, &b, &r, 0, nw, &res2));
  R->rep.initial_residual = R->k0 ? R->state.scalars[0] : sqrt(res2);
  R->state.scalars[0] = R->rep.initial_residual;
  for (int64_t k = first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    CTR_CHECK_GOTO(st, sart_step(R, &x, &r, &Rw, &C, &t, 0, nw));
    CTR_CHECK_GOTO(st, residual(R, &x, &b, &r, 0, nw, &res2));
    CTR_CHECK_GOTO(st, epilogue(R, k, sqrt(res2), &x));
  }
  CTR_CHECK_GOTO(st, x_out(R, &x, vol));
cleanup:
  vfree(R, &x, vol);
  ctr__vec_free(R->P, &C);
  ctr__vec_free(R->P, &t);
  ctr__vec_free(R->P, &b);
  ctr__vec_free(R->P, &Rw);
  ctr__vec_free(R->P, &r);
  return st;
}

/* ---- OS-SART ------------------------------------------------------------------------ */

/* OS-SART (Andersen and Kak 1984; Wang and Jiang 2004): the SIRT step on
 * one subset of views at a time, each subset with its own column sums.
 * Subset s holds views s, s + S, s + 2S, ...; the slots are ordered subset
 * after subset so that each is a range. */
static ctr_status os_sart(run *R, const float *proj, float *vol) {
  ctr_projector *P = R->P;
  const int64_t S = R->o.subsets, nw = P->nviews;
  ctr__vec x = {0}, t = {0}, b = {0}, Rw = {0}, r = {0};
  ctr__vec *C = ctr__calloc((size_t)S, sizeof(ctr__vec), "subset weights");
  int64_t *order = ctr__malloc(sizeof(int64_t) * (size_t)nw, "subset order");
  int64_t *start = ctr__malloc(sizeof(int64_t) * (size_t)(S + 1), "subset order");
  ctr_status st = CTR_OK;
  if (!C || !order || !start) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "OS-SART subsets");
  int64_t w = 0;
  for (int64_t s = 0; s < S; s++) {
    start[s] = w;
    for (int64_t v = s; v < nw; v += S) order[w++] = v;
  }
  start[S] = w;
  CTR_CHECK_GOTO(st, ctr__proj_set_order(P, order));
  for (int64_t s = 0; s < S; s++) CTR_CHECK_GOTO(st, vol_vec(R, &C[s]));
  CTR_CHECK_GOTO(st, sart_begin(R, proj, vol, &x, &t, &b, &Rw, &r));
  CTR_CHECK_GOTO(st, weights(R, &Rw, &C[0], &t, &r, 0, start[1]));
  for (int64_t s = 1; s < S; s++)
    CTR_CHECK_GOTO(st, weights(R, NULL, &C[s], &t, &r, start[s], start[s + 1]));
  if (R->k0) {
    R->rep.initial_residual = R->state.scalars[0];
  } else {
    double res2;
    CTR_CHECK_GOTO(st, residual(R, &x, &b, &r, 0, nw, &res2));
    R->rep.initial_residual = sqrt(res2);
  }
  R->state.scalars[0] = R->rep.initial_residual;
  for (int64_t k = first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    double acc = 0.0;
    for (int64_t s = 0; s < S; s++) {
      double res2;
      CTR_CHECK_GOTO(st, residual(R, &x, &b, &r, start[s], start[s + 1], &res2));
      acc += res2;
      CTR_CHECK_GOTO(st, sart_step(R, &x, &r, &Rw, &C[s], &t, start[s], start[s + 1]));
    }
    CTR_CHECK_GOTO(st, epilogue(R, k, sqrt(acc), &x));
  }
  CTR_CHECK_GOTO(st, x_out(R, &x, vol));
cleanup:
  ctr__proj_set_order(P, NULL);
  vfree(R, &x, vol);
  ctr__vec_free(P, &t);
  for (int64_t s = 0; C && s < S; s++) ctr__vec_free(P, &C[s]);
  ctr__vec_free(P, &b);
  ctr__vec_free(P, &Rw);
  ctr__vec_free(P, &r);
  free(C);
  free(order);
  free(start);
  return st;
}

/* ---- CGLS ------------------------------------------------------------------------------ */

/* CGLS (Hestenes and Stiefel 1952; Bjorck 1996, Algorithm 7.4.1): conjugate
 * gradients on A^T A x = A^T b with the residual r = b - A x updated by
 * recurrence; ||r_k|| decreases monotonically. */
static ctr_status cgls(run *R, const float *proj, float *vol) {
  ctr_projector *P = R->P;
  ctr__vec x = {0}, pv = {0}, s = {0}, r = {0}, q = {0};
  ctr_status st = CTR_OK;
  CTR_CHECK_GOTO(st, x_vec(R, vol, &x));
  CTR_CHECK_GOTO(st, vol_vec(R, &pv));
  CTR_CHECK_GOTO(st, vol_vec(R, &s));
  CTR_CHECK_GOTO(st, proj_vec(R, &r));
  CTR_CHECK_GOTO(st, proj_vec(R, &q));
  R->state.nvec = 3;
  R->state.vec[0] = &x;
  R->state.vec[1] = &r;
  R->state.vec[2] = &pv;
  CTR_CHECK_GOTO(st, load_b(R, proj, &r));
  CTR_CHECK_GOTO(st, maybe_resume(R));
  double gamma;
  if (R->k0) {
    gamma = R->state.scalars[0];
    R->rep.initial_residual = R->state.scalars[1];
  } else {
    CTR_CHECK_GOTO(st, init_x(R, proj, vol, &x));
    CTR_CHECK_GOTO(st, forward(R, &x, &q));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &r, 1.0f, &r, -1.0f, &q));
    CTR_CHECK_GOTO(st, adjoint(R, &r, &s));
    CTR_CHECK_GOTO(st, ctr__vec_copy(P, &pv, &s));
    CTR_CHECK_GOTO(st, ctr__vec_dot(P, &s, &s, &gamma));
    CTR_CHECK_GOTO(st, norm(R, &r, &R->rep.initial_residual));
    if (!isfinite(gamma) || !isfinite(R->rep.initial_residual))
      CTR_FAIL_GOTO(st, CTR_E_INTERNAL, "cgls: the first residual (%g) or gradient (%g) is not "
                    "finite: stopped; the projections and the start hold values too large for "
                    "float arithmetic, or this is a defect to report", R->rep.initial_residual,
                    gamma);
    if (!(gamma > 0) && R->rep.initial_residual != 0) { /* solved, or blind? */
      double a2;
      CTR_CHECK_GOTO(st, ctr__vec_fill(P, &s, 1.0f));
      CTR_CHECK_GOTO(st, forward(R, &s, &q));
      CTR_CHECK_GOTO(st, ctr__vec_dot(P, &q, &q, &a2));
      CTR_CHECK_GOTO(st, check_seen(a2));
    }
  }
  R->state.scalars[1] = R->rep.initial_residual;
  R->rep.residual = R->rep.initial_residual;
  for (int64_t k = first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    if (!(gamma > 0)) {
      R->stop = 1;
      R->rep.stop = CTR_ITERATE_STOP_CONVERGED;
      break;
    }
    double delta, gnew, res;
    CTR_CHECK_GOTO(st, forward(R, &pv, &q));
    CTR_CHECK_GOTO(st, ctr__vec_dot(P, &q, &q, &delta));
    if (!(delta > 0)) {
      R->stop = 1;
      R->rep.stop = CTR_ITERATE_STOP_CONVERGED;
      break;
    }
    const double alpha = gamma / delta;
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &x, 1.0f, &x, (float)alpha, &pv));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &r, 1.0f, &r, (float)-alpha, &q));
    CTR_CHECK_GOTO(st, adjoint(R, &r, &s));
    CTR_CHECK_GOTO(st, ctr__vec_dot(P, &s, &s, &gnew));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &pv, 1.0f, &s, (float)(gnew / gamma), &pv));
    gamma = gnew;
    R->state.scalars[0] = gamma;
    CTR_CHECK_GOTO(st, norm(R, &r, &res));
    CTR_CHECK_GOTO(st, epilogue(R, k, res, &x));
  }
  CTR_CHECK_GOTO(st, x_out(R, &x, vol));
cleanup:
  vfree(R, &x, vol);
  ctr__vec_free(P, &pv);
  ctr__vec_free(P, &s);
  ctr__vec_free(P, &r);
  ctr__vec_free(P, &q);
  return st;
}

/* ---- FISTA-TV ------------------------------------------------------------------------- */

static void swap(ctr__vec *a, ctr__vec *b) {
  const ctr__vec t = *a;
  *a = *b;
  *b = t;
}

/* ||A||^2 by power iteration on A^T A from a volume of ones (the matrix is
 * non-negative, so the start has a large component along the top singular
 * vector), with Z, G, y as scratch. */
static ctr_status lipschitz(run *R, ctr__vec *Z, ctr__vec *G, ctr__vec *y, double *L) {
  ctr_projector *P = R->P;
  double est = 0.0;
  CTR_CHECK(ctr__vec_fill(P, Z, 1.0f));
  for (int64_t it = 0; it < R->o.power_iterations; it++) {
    double zn, gn;
    CTR_CHECK(norm(R, Z, &zn));
    CTR_CHECK(forward(R, Z, y));
    CTR_CHECK(adjoint(R, y, G));
    CTR_CHECK(norm(R, G, &gn));
    CTR_CHECK(check_seen(gn * gn * zn)); /* A^T A 1 = 0 exactly when A 1 = 0 */
    est = gn / zn;
    CTR_CHECK(ctr__vec_comb(P, Z, (float)(1.0 / gn), G, 0.0f, NULL));
  }
  *L = LIPSCHITZ_MARGIN * est;
  return CTR_OK;
}

/* The prox of W TV plus the constraint of g into z (Beck and Teboulle 2009b,
 * GP: gradient projection on the dual P, warm-started across iterations). */
static ctr_status tv_prox(run *R, ctr__vec *z, const ctr__vec *g, ctr__vec *Pd) {
  ctr_projector *P = R->P;
  const float mu = (float)R->o.tv_weight;
  if (!(mu > 0)) {
    CTR_CHECK(ctr__vec_copy(P, z, g));
    if (R->lo > -INFINITY || R->hi < INFINITY) CTR_CHECK(ctr__vec_clip(P, z, R->lo, R->hi));
    return CTR_OK;
  }
  const float tau = (float)(1.0 / (12.0 * R->o.tv_weight));
  for (int64_t it = 0; it < R->o.tv_iterations; it++) {
    CTR_CHECK(ctr__vec_tv_primal(P, z, g, Pd, mu, R->lo, R->hi));
    CTR_CHECK(ctr__vec_tv_dual(P, Pd, z, tau));
  }
  return ctr__vec_tv_primal(P, z, g, Pd, mu, R->lo, R->hi);
}

/* The volume vectors of both TV algorithms: the iterate X (the caller's
 * volume where it lives with the vectors), two temporaries and, with TV, the
 * 3-component dual. */
static ctr_status tv_vectors(run *R, float *vol, ctr__vec *X, ctr__vec *G, ctr__vec *Z,
                             ctr__vec *dual) {
  CTR_CHECK(x_vec(R, vol, X));
  CTR_CHECK(vol_vec(R, G));
  CTR_CHECK(vol_vec(R, Z));
  if (R->o.tv_weight > 0) CTR_CHECK(ctr__vec_alloc(R->P, 3 * R->nvol, R->vdev, dual));
  return CTR_OK;
}

/* Frees what tv_vectors made (the caller's volume stays). */
static void tv_vectors_free(run *R, float *vol, ctr__vec *X, ctr__vec *G, ctr__vec *Z,
                            ctr__vec *dual) {
  vfree(R, X, vol);
  vfree(R, G, vol);
  vfree(R, Z, vol);
  ctr__vec_free(R->P, dual);
}

/* The checkpoint's vectors, in order; the dual (NULL: none) last. */
static void set_state(run *R, ctr__vec *const *v, int n, ctr__vec *dual) {
  for (int i = 0; i < n; i++) R->state.vec[i] = v[i];
  if (dual) R->state.vec[n++] = dual;
  R->state.nvec = n;
}

/* FISTA (Beck and Teboulle 2009a) on (1 / 2L) ||A x - b||^2 + W TV(x) over
 * the constraint set: y_k -> g = y_k - A^T (A y_k - b) / L -> x_k = prox(g),
 * then the momentum step. A y_{k+1} comes from A x_k and A x_{k-1} by
 * linearity, so each iteration projects once forward (A x_k, whose residual
 * is reported) and once back. */
static ctr_status fista(run *R, const float *proj, float *vol) {
  ctr_projector *P = R->P;
  ctr__vec X = {0}, G = {0}, Z = {0}, Pd = {0}, b = {0}, AX = {0}, AY = {0};
  ctr_status st = CTR_OK;
  const int tv = R->o.tv_weight > 0;
  CTR_CHECK_GOTO(st, tv_vectors(R, vol, &X, &G, &Z, &Pd));
  CTR_CHECK_GOTO(st, proj_vec(R, &b));
  CTR_CHECK_GOTO(st, proj_vec(R, &AX));
  CTR_CHECK_GOTO(st, proj_vec(R, &AY));
  /* State: x_k, y_{k+1}, A x_k, A y_{k+1}, the dual; t_{k+1}, L, res0. */
  ctr__vec *const state[] = {&X, &G, &AX, &AY};
  set_state(R, state, 4, tv ? &Pd : NULL);
  CTR_CHECK_GOTO(st, load_b(R, proj, &b));
  CTR_CHECK_GOTO(st, maybe_resume(R));
  double t = 1.0, L = 0.0;
  if (R->k0) {
    t = R->state.scalars[0];
    L = R->state.scalars[1];
    R->rep.initial_residual = R->state.scalars[2];
  } else {
    CTR_CHECK_GOTO(st, lipschitz(R, &Z, &G, &AY, &L));
    CTR_CHECK_GOTO(st, init_x(R, proj, vol, &X));
    CTR_CHECK_GOTO(st, forward(R, &X, &AX));
    CTR_CHECK_GOTO(st, ctr__vec_copy(P, &AY, &AX));
    CTR_CHECK_GOTO(st, ctr__vec_copy(P, &G, &X));
    if (tv) CTR_CHECK_GOTO(st, ctr__vec_fill(P, &Pd, 0.0f));
    t = 1.0;
    double d2;
    CTR_CHECK_GOTO(st, ctr__vec_dist2(P, &AX, &b, &d2));
    R->rep.initial_residual = sqrt(d2);
  }
  R->rep.lipschitz = L;
  R->state.scalars[1] = L;
  R->state.scalars[2] = R->rep.initial_residual;
  for (int64_t k = first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AY, 1.0f, &AY, -1.0f, &b)); /* A y - b */
    CTR_CHECK_GOTO(st, adjoint(R, &AY, &Z));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &G, 1.0f, &G, (float)(-1.0 / L), &Z));
    CTR_CHECK_GOTO(st, tv_prox(R, &Z, &G, &Pd)); /* x_k */
    CTR_CHECK_GOTO(st, forward(R, &Z, &AY));     /* A x_k */
    double d2;
    CTR_CHECK_GOTO(st, ctr__vec_dist2(P, &AY, &b, &d2));
    const double tn = 0.5 * (1.0 + sqrt(1.0 + 4.0 * t * t)), c = (t - 1.0) / tn;
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &G, (float)(1.0 + c), &Z, (float)-c, &X));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AX, (float)(1.0 + c), &AY, (float)-c, &AX));
    swap(&AX, &AY); /* AX = A x_k, AY = A y_{k+1} */
    swap(&X, &Z);   /* X = x_k */
    t = tn;
    R->state.scalars[0] = t;
    CTR_CHECK_GOTO(st, epilogue(R, k, sqrt(d2), &X));
  }
  CTR_CHECK_GOTO(st, x_out(R, &X, vol));
cleanup:
  tv_vectors_free(R, vol, &X, &G, &Z, &Pd);
  ctr__vec_free(P, &b);
  ctr__vec_free(P, &AX);
  ctr__vec_free(P, &AY);
  return st;
}

/* ---- PDHG-TV ------------------------------------------------------------------------- */

/* The primal-dual hybrid gradient method of Chambolle and Pock 2011 (their
 * Algorithm 1, theta = 1) with the diagonal preconditioning of Pock and
 * Chambolle 2011 (alpha = 1), on FISTA-TV's problem written as
 *   min_x  ||A x - b||^2 / 2 + lambda TV(x) + (the box),   lambda = L W
 * (the same minimiser as ||A x - b||^2 / (2 L) + W TV(x), L the same power
 * iteration's estimate of ||A||^2), K = (A, grad), the duals p (data: the
 * prox of the conjugate of ||. - b||^2 / 2 is (p + s (y - b)) / (1 + s)) and
 * q = lambda Q (TV: Q projected onto the unit ball per voxel, the isotropic
 * TV's dual). The steps are per element: s = 1 / (A 1) per ray (SIRT's row
 * weights), 1/2 for grad (two entries of +-1 a row), t = 1 / (A^T 1 + 6)
 * per voxel (a voxel enters six differences). Per iteration:
 *   x+ = clip(x - t (A^T p - lambda div Q))
 *   p  = (p + s (A (2 x+ - x) - b)) / (1 + s)   (A x+ by one forward; 2 A x+ -
 *                                              A x by linearity)
 *   Q  = proj(Q + grad (2 x+ - x) / (2 lambda))
 * One forward and one adjoint an iteration, as FISTA-TV; the TV step is
 * exact (no inner iterations). Equal scalar steps 1 / ||K|| converged 30x
 * slower on a 16^3 head (||A||^2 ~ 1e4 against ||grad||^2 <= 12). The
 * residual reported is ||A x+ - b||. */
static ctr_status pdhg(run *R, const float *proj, float *vol) {
  ctr_projector *P = R->P;
  ctr__vec X = {0}, G = {0}, Z = {0}, T = {0}, Q = {0};
  ctr__vec b = {0}, AX = {0}, AXn = {0}, p = {0}, S = {0}, S1 = {0};
  ctr_status st = CTR_OK;
  const int tv = R->o.tv_weight > 0;
  CTR_CHECK_GOTO(st, tv_vectors(R, vol, &X, &G, &Z, &Q));
  CTR_CHECK_GOTO(st, vol_vec(R, &T));
  ctr__vec *const projs[] = {&b, &AX, &AXn, &p, &S, &S1};
  for (int i = 0; i < 6; i++) CTR_CHECK_GOTO(st, proj_vec(R, projs[i]));
  /* State: x, A x, the duals; L, res0 (the steps are recomputed). */
  ctr__vec *const state[] = {&X, &AX, &p};
  set_state(R, state, 3, tv ? &Q : NULL);
  CTR_CHECK_GOTO(st, load_b(R, proj, &b));
  CTR_CHECK_GOTO(st, maybe_resume(R));
  double L = 0.0;
  if (R->k0) {
    L = R->state.scalars[0];
    R->rep.initial_residual = R->state.scalars[1];
  } else {
    CTR_CHECK_GOTO(st, lipschitz(R, &Z, &G, &AXn, &L));
  }
  /* the steps: S = 1 / (A 1) (rays that see nothing: 0), T = 1 / (A^T 1 + 6
   * with TV), S1 = 1 / (1 + S) */
  CTR_CHECK_GOTO(st, weights(R, &S, &T, &G, &AXn, 0, P->nviews));
  if (tv) {
    CTR_CHECK_GOTO(st, ctr__vec_recip(P, &G, &T, 0.0f)); /* A^T 1 (0 where unseen) */
    CTR_CHECK_GOTO(st, ctr__vec_fill(P, &Z, 6.0f));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &G, 1.0f, &G, 1.0f, &Z));
    CTR_CHECK_GOTO(st, ctr__vec_recip(P, &T, &G, 0.0f));
  }
  CTR_CHECK_GOTO(st, ctr__vec_fill(P, &AXn, 1.0f));
  CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AXn, 1.0f, &AXn, 1.0f, &S));
  CTR_CHECK_GOTO(st, ctr__vec_recip(P, &S1, &AXn, 0.0f));
  if (!R->k0) {
    CTR_CHECK_GOTO(st, init_x(R, proj, vol, &X));
    CTR_CHECK_GOTO(st, forward(R, &X, &AX));
    double d2;
    CTR_CHECK_GOTO(st, ctr__vec_dist2(P, &AX, &b, &d2));
    R->rep.initial_residual = sqrt(d2);
    CTR_CHECK_GOTO(st, ctr__vec_fill(P, &p, 0.0f));
    if (tv) CTR_CHECK_GOTO(st, ctr__vec_fill(P, &Q, 0.0f));
  }
  R->rep.lipschitz = L;
  R->state.scalars[0] = L;
  R->state.scalars[1] = R->rep.initial_residual;
  const double lambda = L * R->o.tv_weight;
  for (int64_t k = first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    CTR_CHECK_GOTO(st, adjoint(R, &p, &G));
    if (tv) {
      /* G = A^T p - lambda div Q: Z = A^T p + div Q (the TV step's primal
       * with weight 1, unclipped), G = (1 + lambda) G - lambda Z */
      CTR_CHECK_GOTO(st, ctr__vec_tv_primal(P, &Z, &G, &Q, 1.0f, -INFINITY, INFINITY));
      CTR_CHECK_GOTO(st, ctr__vec_comb(P, &G, (float)(1.0 + lambda), &G, (float)-lambda, &Z));
    }
    CTR_CHECK_GOTO(st, ctr__vec_mul(P, &G, &G, &T));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &Z, 1.0f, &X, -1.0f, &G)); /* x+ */
    if (R->lo > -INFINITY || R->hi < INFINITY) CTR_CHECK_GOTO(st, ctr__vec_clip(P, &Z, R->lo, R->hi));
    CTR_CHECK_GOTO(st, forward(R, &Z, &AXn)); /* A x+ */
    double d2;
    CTR_CHECK_GOTO(st, ctr__vec_dist2(P, &AXn, &b, &d2));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AX, 2.0f, &AXn, -1.0f, &AX)); /* A (2 x+ - x) */
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AX, 1.0f, &AX, -1.0f, &b));
    CTR_CHECK_GOTO(st, ctr__vec_mul(P, &AX, &AX, &S));
    CTR_CHECK_GOTO(st, ctr__vec_comb(P, &AX, 1.0f, &p, 1.0f, &AX));
    CTR_CHECK_GOTO(st, ctr__vec_mul(P, &p, &AX, &S1));
    if (tv) {
      CTR_CHECK_GOTO(st, ctr__vec_comb(P, &G, 2.0f, &Z, -1.0f, &X)); /* 2 x+ - x */
      CTR_CHECK_GOTO(st, ctr__vec_tv_dual(P, &Q, &G, (float)(0.5 / lambda)));
    }
    swap(&X, &Z);
    swap(&AX, &AXn);
    CTR_CHECK_GOTO(st, epilogue(R, k, sqrt(d2), &X));
  }
  CTR_CHECK_GOTO(st, x_out(R, &X, vol));
cleanup:
  tv_vectors_free(R, vol, &X, &G, &Z, &Q);
  ctr__vec_free(P, &T);
  ctr__vec_free(P, &b);
  ctr__vec_free(P, &AX);
  ctr__vec_free(P, &AXn);
  ctr__vec_free(P, &p);
  ctr__vec_free(P, &S);
  ctr__vec_free(P, &S1);
  return st;
}

/* ---- The steps PWLS takes too (run.h) ------------------------------------------------------ */

static ctr_status any_vec(run *R, int volume, ctr__vec *v) {
  return volume ? vol_vec(R, v) : proj_vec(R, v);
}

static const ctr__it_run_steps steps = {any_vec,      x_vec,           vfree,    x_out,
                                        load_slots,   load_b,          init_x,   maybe_resume,
                                        first_iteration, epilogue,     check_seen};

/* ---- Entry point ------------------------------------------------------------------------ */

/* The caller's projections, volume and truth as vectors: each in host
 * memory or in GPU memory of the projector's GPU (ctr_iterate's memory
 * rule; a CPU context refuses GPU memory). */
static ctr_status user_arrays(run *R, const float *proj, float *vol) {
  const ctr_projector *p = R->P;
  const void *ptr[4] = {proj, vol, R->o.truth, R->o.weights};
  const char *const name[4] = {"projections", "volume", "truth", "weights"};
  int gpu[4];
  CTR_CHECK(ctr__gpu_arrays(p->ctx, "ctr_iterate", 1, 4, ptr, name, gpu));
  for (int i = 0; i < 4; i++)
    if (gpu[i] >= 0 && gpu[i] != p->gpu)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_iterate: the %s array is in the memory of GPU %d: "
               "expected host memory or GPU %d (the projector's context)", name[i], gpu[i], p->gpu);
  R->uproj = (ctr__vec){(float *)proj, R->nproj, gpu[0] >= 0};
  R->uvol = (ctr__vec){vol, R->nvol, gpu[1] >= 0};
  R->utruth = (ctr__vec){(float *)R->o.truth, R->nvol, gpu[2] >= 0};
  R->uweights = (ctr__vec){(float *)R->o.weights, R->nproj, gpu[3] >= 0};
  return CTR_OK;
}

ctr_status ctr_iterate(ctr_projector *p, const ctr_iterate_options *opts, const float *proj,
                       float *vol, ctr_iterate_report *report) {
  if (!p || !proj || !vol) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_iterate: NULL argument");
  if (report) CTR_CHECK(ctr__struct_check(&ctr__struct_iterate_report, report));
  run R;
  memset(&R, 0, sizeof R);
  R.P = p;
  R.steps = &steps;
  R.rep = report_defaults;
  R.t0 = ctr__now_s();
  CTR_CHECK(resolve(p, opts, &R.o));
  R.nvol = ctr__proj_vol_count(p);
  R.nproj = ctr__proj_proj_count(p);
  CTR_CHECK(user_arrays(&R, proj, vol));
  if (R.o.algorithm == CTR_ITERATE_CGLS && p->o.pair == CTR_PAIR_FAST)
    ctr__log(p->ctx, CTR_LOG_WARNING, "cgls with the fast (unmatched) pair: CGLS assumes the "
             "backprojector is the exact transpose of the projector, and with an approximate one "
             "its residual need not decrease (set ctr_projector_options.pair to matched, or use sirt or "
             "fista-tv, which tolerate it)");
  uint64_t gpu_budget = R.o.gpu_budget, host_budget = R.o.host_budget;
  CTR_CHECK(ctr__budgets_resolve(p->ctx, p->device == CTR_DEVICE_CUDA ? &gpu_budget : NULL,
                                 &host_budget));
  int64_t nv, nq;
  ctr__it_vectors(&R.o, &nv, &nq);
  const int64_t max_slab = R.o.max_slab_slices ? R.o.max_slab_slices : p->o.max_slab_slices;
  CTR_CHECK(ctr__it_plan(p, nv, nq, p->o.pair == CTR_PAIR_FAST, p->device, gpu_budget,
                         host_budget, max_slab, &R.plan));
  R.rep.plan = R.plan;
  ctr__proj_use(p, &R.plan);
  CTR_CHECK(ctr__proj_set_order(p, NULL));
  R.vdev = R.plan.placement == CTR_PLACE_DEVICE;
  R.pdev = R.vdev || R.plan.placement == CTR_PLACE_PROJ_DEVICE;
  R.lo = R.o.nonneg ? 0.0f : -INFINITY;
  R.hi = INFINITY;
  if (R.o.box) {
    if ((float)R.o.lower > R.lo) R.lo = (float)R.o.lower;
    R.hi = (float)R.o.upper;
  }
  if (R.o.checkpoint) CTR_CHECK(fingerprint(&R, proj));
  int lock = -1;
  if (R.o.checkpoint) CTR_CHECK(ctr__it_checkpoint_begin(R.o.checkpoint, R.o.resume, &lock));
  p->seconds_forward = p->seconds_adjoint = 0;
  p->views_forward = p->views_adjoint = 0;
  char plan[512];
  ctr_iterate_plan_describe(&R.plan, plan, sizeof plan);
  ctr__log(p->ctx, CTR_LOG_DEBUG, "%s: %s", ctr_iterate_algorithm_name(R.o.algorithm), plan);
  ctr_status st = CTR_OK;
  int pinned = 0;
  /* The caller's volume is the iterate when volumes stay in host memory:
   * pinned for the run, its slabs move at full speed. */
  if (p->be->pin && !R.vdev && !R.uvol.device)
    pinned = p->be->pin(p, vol, sizeof(float) * (size_t)R.nvol);
  if (R.o.truth) {
    CTR_CHECK_GOTO(st, vol_vec(&R, &R.truth));
    CTR_CHECK_GOTO(st, ctr__vec_copy(p, &R.truth, &R.utruth));
    CTR_CHECK_GOTO(st, norm(&R, &R.truth, &R.norm_truth));
  }
  switch (R.o.algorithm) {
  case CTR_ITERATE_SIRT: st = sirt(&R, proj, vol); break;
  case CTR_ITERATE_CGLS: st = cgls(&R, proj, vol); break;
  case CTR_ITERATE_OS_SART: st = os_sart(&R, proj, vol); break;
  case CTR_ITERATE_FISTA_TV: st = fista(&R, proj, vol); break;
  case CTR_ITERATE_PDHG_TV: st = pdhg(&R, proj, vol); break;
  case CTR_ITERATE_PWLS: st = ctr__it_pwls(&R, proj, vol); break;
  }
  if (st == CTR_OK) st = ctr__vec_sanitize(p, &R.uvol, &R.rep.out_nonfinite);
  if (st == CTR_OK) {
    st = ctr__values_report(p->ctx, R.o.strict, R.rep.out_nonfinite, "the reconstruction");
  }
cleanup:
  if (pinned) p->be->unpin(p, vol);
  ctr__vec_free(p, &R.truth);
  free(R.state.hist);
  ctr__it_checkpoint_end(R.o.checkpoint, lock);
  R.rep.seconds_forward = p->seconds_forward;
  R.rep.seconds_adjoint = p->seconds_adjoint;
  R.rep.forward_calls = p->views_forward / (p->nviews > 0 ? p->nviews : 1);
  R.rep.adjoint_calls = p->views_adjoint / (p->nviews > 0 ? p->nviews : 1);
  R.rep.seconds_total = ctr__now_s() - R.t0;
  if (report) ctr__struct_store(&ctr__struct_iterate_report, report, &R.rep); /* its version */
  return st;
}

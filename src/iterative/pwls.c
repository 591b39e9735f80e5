/* PWLS, penalised weighted least squares (Sauer and Bouman 1993; Fessler
 * 1994; docs/iterative.md, "PWLS"):
 *   min_x  Phi(x) = (A x - b)^T W (A x - b) / 2 + beta R(x)
 * with statistical weights W (the caller's, or the expected counts i0
 * exp(-b) of log-transformed transmission data, or 1) and the roughness
 * penalty R of itmath.h (ctr__it_penalty_at: 6-neighbour pairs, quadratic
 * or Huber), by preconditioned conjugate gradients on the normal
 * equations (A^T W A + beta H) x = A^T W b (Hestenes and Stiefel 1952),
 * unconstrained. The preconditioner is the diagonal D = A^T W A 1 + beta
 * diag(H) (the column sums of A^T W A, which A >= 0 makes at least its
 * diagonal: the separable curvature of Erdogan and Fessler 1999, plus the
 * penalty's Jacobi diagonal, the number of neighbours).
 *
 * Quadratic penalty (or none): linear PCG, the residual r = b - A x kept by
 * recurrence as CGLS keeps it (one forward and one adjoint an iteration):
 *   q = A p, alpha = gamma / (<q, W q> + beta <p, H p>), x += alpha p, r -= alpha q,
 *   s = A^T W r - beta H x, z = D^-1 s, gamma' = <s, z>, p = z + (gamma' / gamma) p.
 * Huber: the same iteration as a nonlinear PCG (Fletcher and Reeves 1964's
 * coefficient gamma' / gamma) whose step minimises, along p, Huber's
 * quadratic surrogate of R at x (curvature w(t) = psi'(t) / t per pair,
 * Huber 1981, as Erdogan and Fessler 1999 use it): alpha = <s, p> / (<q, W q>
 * + beta <p, H_w(x) p>).
 * The surrogate lies above Phi along the line and touches it at x, so each
 * step along a descent direction lowers Phi (a majorize-minimize step); a
 * direction that is not one (<s, p> <= 0) is replaced by z. */
#include "iterative/backend.h"
#include "iterative/run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The ranges the float arithmetic holds (beta, delta and the weights enter
 * products of projections and voxels); weights, as every input, within
 * +-1e24 (the data policy's bound), so i0 up to 1e20. */
#define PWLS_MAX 1e30
#define PWLS_MIN 1e-30
#define I0_MAX 1e20

/* A PWLS member set for another algorithm: the field's name, else NULL. */
static const char *pwls_member_set(const ctr_iterate_options *o) {
  if (o->weights) return "weights";
  if (o->i0 != 0) return "i0";
  if (o->penalty != CTR_PENALTY_NONE) return "penalty";
  if (o->beta != 0) return "beta";
  if (o->huber_delta != 0) return "huber_delta";
  return NULL;
}

ctr_status ctr__it_pwls_resolve(ctr_iterate_options *o) {
  char field[64];
  if (o->algorithm != CTR_ITERATE_PWLS) {
    const char *m = pwls_member_set(o);
    if (!m) return CTR_OK;
    snprintf(field, sizeof field, "ctr_iterate_options.%s", m);
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, field, "%s applies to CTR_ITERATE_PWLS (the "
                   "algorithm is %s): leave it at its default or set "
                   "ctr_iterate_options.algorithm to CTR_ITERATE_PWLS", field,
                   ctr_iterate_algorithm_name(o->algorithm));
  }
  if ((unsigned)o->penalty > CTR_PENALTY_HUBER)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.penalty",
                         CTR__V_INT(o->penalty), "ctr_iterate_options.penalty is %d: expected "
                         "CTR_PENALTY_NONE, CTR_PENALTY_QUADRATIC or CTR_PENALTY_HUBER",
                         (int)o->penalty);
  if (!(o->i0 == 0 || (o->i0 >= PWLS_MIN && o->i0 <= I0_MAX)))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.i0", CTR__V_REAL(o->i0),
                         "ctr_iterate_options.i0 is %g: expected 0 (off) or the counts of an "
                         "unattenuated ray, %g .. %g", o->i0, PWLS_MIN, I0_MAX);
  if (o->weights && o->i0 > 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.i0", CTR__V_REAL(o->i0),
                         "ctr_iterate_options.i0 is %g and ctr_iterate_options.weights is set: "
                         "the weights come from one of them (set i0 to 0, or weights to NULL)",
                         o->i0);
  if (!(o->beta >= 0 && o->beta <= PWLS_MAX))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.beta", CTR__V_REAL(o->beta),
                         "ctr_iterate_options.beta is %g: expected 0 .. %g", o->beta, PWLS_MAX);
  if (o->penalty == CTR_PENALTY_NONE && o->beta != 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.beta", CTR__V_REAL(o->beta),
                         "ctr_iterate_options.beta is %g with CTR_PENALTY_NONE: set "
                         "ctr_iterate_options.penalty to CTR_PENALTY_QUADRATIC or "
                         "CTR_PENALTY_HUBER, or beta to 0", o->beta);
  if (o->penalty == CTR_PENALTY_HUBER &&
      !(o->huber_delta >= PWLS_MIN && o->huber_delta <= PWLS_MAX))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.huber_delta",
                         CTR__V_REAL(o->huber_delta), "ctr_iterate_options.huber_delta is %g: "
                         "CTR_PENALTY_HUBER needs delta > 0 (%g .. %g) in the volume's units, "
                         "the step between neighbours beyond which the penalty grows linearly",
                         o->huber_delta, PWLS_MIN, PWLS_MAX);
  if (o->penalty != CTR_PENALTY_HUBER && o->huber_delta != 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.huber_delta",
                         CTR__V_REAL(o->huber_delta), "ctr_iterate_options.huber_delta is %g: it "
                         "applies to CTR_PENALTY_HUBER (the penalty is %s)", o->huber_delta,
                         ctr_iterate_penalty_name(o->penalty));
  return CTR_OK;
}

/* W into slot order: the caller's (checked: finite, within +-1e24, >= 0, not
 * all 0), i0 exp(-b) from b, or 1; u is scratch. */
static ctr_status make_weights(ctr__it_run *R, ctr__vec *W, const ctr__vec *b, ctr__vec *u) {
  ctr_projector *P = R->P;
  const char *field = R->uweights.data ? "ctr_iterate_options.weights" : "ctr_iterate_options.i0";
  int64_t bad = 0;
  if (R->uweights.data) {
    CTR_CHECK(R->steps->load_slots(R, &R->uweights, W));
    CTR_CHECK(ctr__vec_sanitize(P, W, &bad));
    if (bad)
      CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, field, "%s: %lld weights are NaN, infinite or "
                     "beyond 1e24: expected finite weights >= 0 (0 for a dead pixel)", field,
                     (long long)bad);
    double neg2;
    CTR_CHECK(ctr__vec_copy(P, u, W));
    CTR_CHECK(ctr__vec_clip(P, u, 0.0f, INFINITY));
    CTR_CHECK(ctr__vec_dist2(P, W, u, &neg2));
    if (neg2 > 0)
      CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, field, "%s holds negative weights: expected "
                     "weights >= 0 (the inverse variance of each ray; 0 for a dead pixel)", field);
  } else if (R->o.i0 > 0) {
    CTR_CHECK(ctr__vec_count_weights(P, W, b, R->o.i0));
    CTR_CHECK(ctr__vec_sanitize(P, W, &bad));
    if (bad)
      CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_iterate_options.i0", CTR__V_REAL(R->o.i0),
                           "ctr_iterate_options.i0 is %g: the count weights i0 exp(-b) of %lld "
                           "rays exceed 1e24, the bound of every input (b below ln(i0) - 55): "
                           "the projections must be line integrals (-ln(counts / i0))", R->o.i0,
                           (long long)bad);
  } else {
    return ctr__vec_fill(P, W, 1.0f);
  }
  double w2;
  CTR_CHECK(ctr__vec_dot(P, W, W, &w2));
  if (!(w2 > 0))
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, field, "%s: every weight is 0 (no ray counts): "
                   "expected some weights > 0", field);
  return CTR_OK;
}

/* The penalty's part: out = op(x for Huber's curvatures, v) (itmath.h). */
typedef struct penalty {
  int on;          /* a penalty with beta > 0 */
  float beta, delta;
  const ctr__vec *wx; /* x for Huber, NULL for the quadratic (curvature 1) */
} penalty;

/* D^-1 = 1 / (A^T W A 1 + beta diag(H)) (0 where it is 0: voxels no ray with
 * weight sees, without a penalty), with t, u and q as scratch. */
static ctr_status preconditioner(ctr__it_run *R, const penalty *pen, const ctr__vec *W,
                                 ctr__vec *Dinv, ctr__vec *t, ctr__vec *s, ctr__vec *q) {
  ctr_projector *P = R->P;
  double a2;
  CTR_CHECK(ctr__vec_fill(P, t, 1.0f));
  CTR_CHECK(ctr__proj_forward(P, t, q, 0, P->nviews));
  CTR_CHECK(ctr__vec_dot(P, q, q, &a2));
  CTR_CHECK(R->steps->check_seen(a2));
  CTR_CHECK(ctr__vec_mul(P, q, q, W));
  CTR_CHECK(ctr__proj_adjoint(P, q, s, 0, P->nviews));
  if (pen->on) {
    CTR_CHECK(ctr__vec_penalty(P, t, NULL, NULL, INFINITY)); /* the number of neighbours */
    CTR_CHECK(ctr__vec_comb(P, s, 1.0f, s, pen->beta, t));
  }
  return ctr__vec_recip(P, Dinv, s, 0.0f);
}

/* s = A^T W r - beta grad R(x) (minus Phi's gradient), with u and t as
 * scratch. */
static ctr_status descent(ctr__it_run *R, const penalty *pen, const ctr__vec *W, const ctr__vec *r,
                          const ctr__vec *x, ctr__vec *s, ctr__vec *u, ctr__vec *t) {
  ctr_projector *P = R->P;
  CTR_CHECK(ctr__vec_mul(P, u, r, W));
  CTR_CHECK(ctr__proj_adjoint(P, u, s, 0, P->nviews));
  if (!pen->on) return CTR_OK;
  CTR_CHECK(ctr__vec_penalty(P, t, pen->wx, x, pen->delta));
  return ctr__vec_comb(P, s, 1.0f, s, -pen->beta, t);
}

/* The vectors of a run: volumes x (the caller's where it lives with the
 * vectors), p, s, D^-1, t; projections W, r, q, u. */
typedef struct vectors {
  ctr__vec x, p, s, Dinv, t, W, r, q, u;
} vectors;

static ctr_status vectors_make(ctr__it_run *R, float *vol, vectors *v) {
  memset(v, 0, sizeof *v);
  CTR_CHECK(R->steps->x(R, vol, &v->x));
  ctr__vec *const vols[] = {&v->p, &v->s, &v->Dinv, &v->t};
  for (int i = 0; i < 4; i++) CTR_CHECK(R->steps->vec(R, 1, vols[i]));
  ctr__vec *const projs[] = {&v->W, &v->r, &v->q, &v->u};
  for (int i = 0; i < 4; i++) CTR_CHECK(R->steps->vec(R, 0, projs[i]));
  return CTR_OK;
}

static void vectors_free(ctr__it_run *R, float *vol, vectors *v) {
  R->steps->vfree(R, &v->x, vol);
  ctr__vec *const rest[] = {&v->p, &v->s, &v->Dinv, &v->t, &v->W, &v->r, &v->q, &v->u};
  for (int i = 0; i < 8; i++) ctr__vec_free(R->P, rest[i]);
}

/* The start: x0, r = b - A x0 (r holds b), s, z = D^-1 s into p, gamma =
 * <s, z>; ||r|| into the report. */
static ctr_status start(ctr__it_run *R, const penalty *pen, const float *proj, float *vol,
                        vectors *v, double *gamma) {
  ctr_projector *P = R->P;
  CTR_CHECK(R->steps->init_x(R, proj, vol, &v->x));
  CTR_CHECK(ctr__proj_forward(P, &v->x, &v->q, 0, P->nviews));
  CTR_CHECK(ctr__vec_comb(P, &v->r, 1.0f, &v->r, -1.0f, &v->q));
  CTR_CHECK(descent(R, pen, &v->W, &v->r, &v->x, &v->s, &v->u, &v->t));
  CTR_CHECK(ctr__vec_mul(P, &v->p, &v->s, &v->Dinv));
  CTR_CHECK(ctr__vec_dot(P, &v->s, &v->p, gamma));
  double r2;
  CTR_CHECK(ctr__vec_dot(P, &v->r, &v->r, &r2));
  R->rep.initial_residual = sqrt(r2);
  if (!isfinite(*gamma) || !isfinite(r2))
    CTR_FAIL(CTR_E_INTERNAL, "pwls: the first residual (%g) or gradient (%g) is not finite: "
             "stopped; the projections, the weights and the start hold values too large for "
             "float arithmetic (or beta is), or this is a defect to report", sqrt(r2), *gamma);
  return CTR_OK;
}

/* One iteration: the step along p, then the new descent direction; *res =
 * ||r||, *done = 1 when the gradient or the curvature vanished. */
static ctr_status step(ctr__it_run *R, const penalty *pen, vectors *v, double *gamma, double *num,
                       double *res, int *done) {
  ctr_projector *P = R->P;
  double dd, dr = 0.0;
  CTR_CHECK(ctr__proj_forward(P, &v->p, &v->q, 0, P->nviews));
  CTR_CHECK(ctr__vec_mul(P, &v->u, &v->q, &v->W));
  CTR_CHECK(ctr__vec_dot(P, &v->q, &v->u, &dd));
  if (pen->on) {
    CTR_CHECK(ctr__vec_penalty(P, &v->t, pen->wx, &v->p, pen->delta)); /* H p (at x: Huber) */
    CTR_CHECK(ctr__vec_dot(P, &v->p, &v->t, &dr));
  }
  const double curv = dd + (double)pen->beta * dr;
  if (!(curv > 0)) return *done = 1, CTR_OK;
  const double alpha = *num / curv;
  CTR_CHECK(ctr__vec_comb(P, &v->x, 1.0f, &v->x, (float)alpha, &v->p));
  CTR_CHECK(ctr__vec_comb(P, &v->r, 1.0f, &v->r, (float)-alpha, &v->q));
  double r2;
  CTR_CHECK(ctr__vec_dot(P, &v->r, &v->r, &r2));
  *res = sqrt(r2);
  CTR_CHECK(descent(R, pen, &v->W, &v->r, &v->x, &v->s, &v->u, &v->t));
  CTR_CHECK(ctr__vec_mul(P, &v->t, &v->s, &v->Dinv)); /* z */
  double gnew, sp = 0.0;
  CTR_CHECK(ctr__vec_dot(P, &v->s, &v->t, &gnew));
  const int huber = pen->on && pen->wx;
  if (huber) CTR_CHECK(ctr__vec_dot(P, &v->s, &v->p, &sp));
  const double c = *gamma > 0 ? gnew / *gamma : 0.0;
  double next = gnew + c * sp; /* <s, z + c p>: the next step's numerator */
  if (huber && !(next > 0)) {  /* not a descent direction: restart along z */
    CTR_CHECK(ctr__vec_copy(P, &v->p, &v->t));
    next = gnew;
  } else {
    CTR_CHECK(ctr__vec_comb(P, &v->p, 1.0f, &v->t, (float)c, &v->p));
  }
  *gamma = gnew;
  *num = huber ? next : gnew;
  return CTR_OK;
}

ctr_status ctr__it_pwls(ctr__it_run *R, const float *proj, float *vol) {
  vectors v;
  ctr_status st = CTR_OK;
  CTR_CHECK_GOTO(st, vectors_make(R, vol, &v));
  penalty pen = {R->o.penalty != CTR_PENALTY_NONE && R->o.beta > 0, (float)R->o.beta,
                 R->o.penalty == CTR_PENALTY_HUBER ? (float)R->o.huber_delta : INFINITY,
                 R->o.penalty == CTR_PENALTY_HUBER ? &v.x : NULL};
  /* State: x, r, p; gamma, the next step's numerator, res0 (W and D^-1 are
   * recomputed with the same bits). */
  R->state.nvec = 3;
  R->state.vec[0] = &v.x;
  R->state.vec[1] = &v.r;
  R->state.vec[2] = &v.p;
  CTR_CHECK_GOTO(st, R->steps->load_b(R, proj, &v.r));
  CTR_CHECK_GOTO(st, make_weights(R, &v.W, &v.r, &v.u));
  CTR_CHECK_GOTO(st, R->steps->resume(R));
  CTR_CHECK_GOTO(st, preconditioner(R, &pen, &v.W, &v.Dinv, &v.t, &v.s, &v.q));
  double gamma, num;
  if (R->k0) {
    gamma = R->state.scalars[0];
    num = R->state.scalars[1];
    R->rep.initial_residual = R->state.scalars[2];
  } else {
    CTR_CHECK_GOTO(st, start(R, &pen, proj, vol, &v, &gamma));
    num = gamma;
  }
  R->state.scalars[2] = R->rep.initial_residual;
  R->rep.residual = R->rep.initial_residual;
  for (int64_t k = R->steps->first_iteration(R); k <= R->o.iterations && !R->stop; k++) {
    int done = !(gamma > 0);
    double res = 0.0;
    if (!done) CTR_CHECK_GOTO(st, step(R, &pen, &v, &gamma, &num, &res, &done));
    if (done) {
      R->stop = 1;
      R->rep.stop = CTR_ITERATE_STOP_CONVERGED;
      break;
    }
    R->state.scalars[0] = gamma;
    R->state.scalars[1] = num;
    CTR_CHECK_GOTO(st, R->steps->epilogue(R, k, res, &v.x));
  }
  CTR_CHECK_GOTO(st, R->steps->x_out(R, &v.x, vol));
cleanup:
  vectors_free(R, vol, &v);
  return st;
}

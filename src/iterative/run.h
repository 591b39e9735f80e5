/* One run of ctr_iterate as the algorithms' files share it: the run's
 * state (options resolved, plan, fingerprint, the caller's arrays, the
 * report and the checkpoint's state) and the steps every algorithm takes
 * (algorithms.c, ctr__it_run_steps): its vectors where the plan keeps
 * them, b, x0, resuming, and the epilogue of each iteration (report,
 * callback, checkpoint, stopping tests). algorithms.c holds SIRT, CGLS, OS-SART, FISTA-TV and
 * PDHG-TV; pwls.c PWLS. One thread drives a run (the projector's). */
#ifndef CTR_ITERATIVE_RUN_H
#define CTR_ITERATIVE_RUN_H

#include "iterative/iterative.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ctr__it_run_steps ctr__it_run_steps;

typedef struct ctr__it_run {
  const ctr__it_run_steps *steps; /* algorithms.c's (below) */
  ctr_projector *P;
  ctr_iterate_options o;
  ctr_iterate_plan plan;
  ctr__it_fingerprint fp;
  int vdev, pdev;       /* volumes / projections on the device */
  int64_t nvol, nproj;
  ctr__vec uproj, uvol, utruth; /* the caller's arrays, host or GPU memory (device set) */
  ctr__vec uweights;    /* PWLS: the caller's weights (data NULL: none) */
  ctr__vec truth;
  double norm_truth;
  double t0;
  float lo, hi;         /* the constraint interval */
  ctr_iterate_report rep;
  ctr__it_state state;  /* what a checkpoint holds */
  int64_t k0;           /* iterations done before this call (resume) */
  int stop;             /* 1: the epilogue ended the run */
  int no_history;       /* 1: resumed from a checkpoint without the history */
  double mark_t, mark_fwd, mark_adj; /* the clock and the projector's seconds when the
                                        current iteration started */
} ctr__it_run;

/* The steps of a run that every algorithm takes, as a table algorithms.c
 * fills with its own (the algorithms' files below it, pwls.c, reach them
 * through it and so do not depend on the file that calls them). Each runs
 * on the run's thread and returns when its results are complete. */
struct ctr__it_run_steps {
  /* A vector of the volume's (volume 1) or the projections' (0) size where
   * the plan keeps that space, zeroed. */
  ctr_status (*vec)(ctr__it_run *R, int volume, ctr__vec *v);
  /* The iterate: the caller's volume vol itself when it is where the plan
   * keeps volumes, else a vector of the plan's; vfree frees a volume
   * vector unless it is vol; x_out copies the result into vol (nothing
   * when x is vol). */
  ctr_status (*x)(ctr__it_run *R, float *vol, ctr__vec *x);
  void (*vfree)(ctr__it_run *R, ctr__vec *v, const float *vol);
  ctr_status (*x_out)(ctr__it_run *R, const ctr__vec *x, float *vol);
  /* An array in the projections' layout (the caller's, host or GPU
   * memory) into a projection vector in slot order. */
  ctr_status (*load_slots)(ctr__it_run *R, const ctr__vec *user, ctr__vec *y);
  /* b from the caller's projections (slot order, bad values replaced and
   * counted under the data policy) and ||b|| into the report. */
  ctr_status (*load_b)(ctr__it_run *R, const float *proj, ctr__vec *b);
  /* x0 as o.init says (x may be the caller's volume). */
  ctr_status (*init_x)(ctr__it_run *R, const float *proj, float *vol, ctr__vec *x);
  /* With o.resume: the checkpoint into R->state (whose vectors the
   * algorithm set), R->k0 its iteration, its history replayed. */
  ctr_status (*resume)(ctr__it_run *R);
  /* The first iteration of the loop (after a resume, the one after the
   * checkpoint's): the setup's time ends and the iteration's clock starts. */
  int64_t (*first_iteration)(ctr__it_run *R);
  /* After iteration k with residual res of x: report, callback,
   * checkpoint, stopping tests (R->stop), cancellation. */
  ctr_status (*epilogue)(ctr__it_run *R, int64_t k, double res, const ctr__vec *x);
  /* CTR_E_GEOMETRY unless ||A 1||^2 = a2 is positive and finite (some ray
   * crosses the volume). */
  ctr_status (*check_seen)(double a2);
};

/* ---- PWLS (pwls.c) ---- */

/* The PWLS members of resolved options: checked (errors name the field),
 * refused for the other algorithms. */
ctr_status ctr__it_pwls_resolve(ctr_iterate_options *o);
/* PWLS's run (R->steps set). */
ctr_status ctr__it_pwls(ctr__it_run *R, const float *proj, float *vol);

#ifdef __cplusplus
}
#endif
#endif

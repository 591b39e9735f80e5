/* ctr_tune_fdk (conebeam.h): the autotuning of cone-beam backprojection run
 * on request, through the backend's `tune` (engine.h; the CUDA one in
 * cuda/engine_cuda.cu and cuda/bp_tune.cu). */
#include "conebeam/engine.h"
#include "conebeam/fdk_internal.h"
#include "core/autotune.h"

ctr_status ctr_tune_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                        int force, ctr_tune_report *report) {
  if (!ctx || !g || !report)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_tune_fdk: ctx, g and report are required");
  ctr_tune_report *r;
  CTR_CHECK(ctr__tune_report_begin(report, &r));
  ctr_fdk_options o;
  const ctr__engine_backend *be = NULL;
  ctr_status st = ctr__fdk_options_resolve(g, opts, &o);
  if (st == CTR_OK) st = ctr__engine_backend_of(ctx, &be);
  if (st == CTR_OK && !be->tune)
    st = ctr__error_set(CTR_E_UNSUPPORTED, "ctr_tune_fdk: the %s backend has no launch "
                        "parameters to tune (create the context for a CUDA device)", be->head.name);
  if (st == CTR_OK) st = be->tune(ctx, ctr__context_gpu(ctx, 0), g, &o, force, r);
  return ctr__tune_report_end(report, r, st);
}

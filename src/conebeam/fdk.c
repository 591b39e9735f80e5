/* ctr_fdk: in-core FDK is the streamed pipeline between arrays in memory
 * (stream.c), with the machine's memory as budgets. */
#include "conebeam/fdk_internal.h"

ctr_status ctr_fdk(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                   const ctr_array *proj, ctr_array *vol) {
  if (!g) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk: geometry is NULL");
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, &so.fdk, opts));
  return ctr_fdk_stream_memory(ctx, g, &so, proj, vol, NULL);
}


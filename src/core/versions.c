/* Versioned public structs: the one place that reads a version (the
 * helpers declared in core/internal.h) and the table of every public
 * struct's versions, with its ctr_<name>_init function. */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

/* ---- The helpers ---------------------------------------------------------- */

enum { MEASURE, READ, WRITE };

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static unsigned version_of(const void *s) {
  unsigned v;
  memcpy(&v, s, sizeof v);
  return v;
}

static ctr_status bad_version(const ctr__struct_desc *d, const char *what, unsigned v,
                              unsigned max) {
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "%s.version is %u: this library accepts %s versions 1 to %u (fill it with "
           "%s_init or the INIT macro of the header it was compiled with)",
           what, v, d->name, max, d->name);
}

/* Bytes of a struct without embedded versioned structs at version v. */
static size_t flat_size(const ctr__struct_desc *d, unsigned v) {
  return round_up(d->versions[v - 1].end, d->align);
}

/* Moves the members of version v between `user` (the caller's struct, laid
 * out as version v) and `full` (the current layout): READ user -> full,
 * WRITE full -> user, MEASURE neither. *size = version v's size. An
 * embedded struct is read in the version its own field gives (at most the
 * one v holds) and written in the one v holds. */
static ctr_status move(const ctr__struct_desc *d, unsigned v, int mode, unsigned char *user,
                       unsigned char *full, size_t *size) {
  const ctr__struct_version *e = &d->versions[v - 1];
  size_t cur = 0, old = 0; /* offsets in the current layout and in version v's */
  for (int i = 0; i < d->nnested && d->nested_offset[i] < e->end; i++) {
    const ctr__struct_desc *n = d->nested_desc[i];
    const size_t len = d->nested_offset[i] - cur;
    if (mode == READ) memcpy(full + cur, user + old, len);
    if (mode == WRITE) memcpy(user + old, full + cur, len);
    old += len;
    cur += len;
    const unsigned held = e->nested[i];
    if (mode == READ) {
      const unsigned nv = version_of(user + old);
      if (nv < 1 || nv > held) {
        char what[160];
        snprintf(what, sizeof what, "%s.%s", d->name, d->nested_name[i]);
        return bad_version(n, what, nv, held);
      }
      memcpy(full + cur, user + old, n->versions[nv - 1].end);
      memcpy(full + cur, &n->current, sizeof n->current);
    } else if (mode == WRITE) {
      memcpy(user + old, full + cur, n->versions[held - 1].end);
      memcpy(user + old, &held, sizeof held);
    }
    old += flat_size(n, held);
    cur += n->size;
  }
  if (e->end > cur) {
    if (mode == READ) memcpy(full + cur, user + old, e->end - cur);
    if (mode == WRITE) memcpy(user + old, full + cur, e->end - cur);
    old += e->end - cur;
  }
  *size = round_up(old, d->align);
  return CTR_OK;
}

ctr_status ctr__struct_check(const ctr__struct_desc *d, const void *s) {
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s is NULL", d->name);
  const unsigned v = version_of(s);
  if (v < 1 || v > d->current) return bad_version(d, d->name, v, d->current);
  return CTR_OK;
}

ctr_status ctr__struct_copy(const ctr__struct_desc *d, void *dst, const void *src) {
  memcpy(dst, d->defaults, d->size);
  if (!src) return CTR_OK;
  CTR_CHECK(ctr__struct_check(d, src));
  size_t size;
  CTR_CHECK(move(d, version_of(src), READ, (unsigned char *)src, dst, &size));
  memcpy(dst, &d->current, sizeof d->current);
  return CTR_OK;
}

ctr_status ctr__struct_store(const ctr__struct_desc *d, void *dst, const void *src) {
  CTR_CHECK(ctr__struct_check(d, dst));
  const unsigned v = version_of(dst);
  size_t size;
  CTR_CHECK(move(d, v, WRITE, dst, (unsigned char *)src, &size));
  memcpy(dst, &v, sizeof v);
  return CTR_OK;
}

ctr_status ctr__struct_init(const ctr__struct_desc *d, void *s, unsigned version) {
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s_init: the struct pointer is NULL", d->name);
  if (version < 1 || version > d->current)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s_init: version %u, this library accepts %s versions 1 to %u", d->name, version,
             d->name, d->current);
  size_t size;
  CTR_CHECK(move(d, version, WRITE, s, (unsigned char *)d->defaults, &size));
  memcpy(s, &version, sizeof version);
  return CTR_OK;
}

int ctr__struct_holds(const ctr__struct_desc *d, const void *s, size_t offset, size_t size) {
  const unsigned v = version_of(s);
  return d->nnested == 0 && v >= 1 && v <= d->current && offset + size <= d->versions[v - 1].end;
}

size_t ctr__struct_size(const ctr__struct_desc *d, unsigned v) {
  size_t size = 0;
  if (v >= 1 && v <= d->current) move(d, v, MEASURE, NULL, NULL, &size);
  return size;
}

ctr_status ctr__struct_desc_check(const ctr__struct_desc *d) {
  if (!d->name || !d->defaults || !d->versions || d->current < 1 || d->size < sizeof(unsigned))
    CTR_FAIL(CTR_E_INTERNAL, "%s: incomplete descriptor", d->name ? d->name : "(unnamed)");
  if (version_of(d->defaults) != d->current)
    CTR_FAIL(CTR_E_INTERNAL, "%s: the defaults hold version %u, the table %u versions", d->name,
             version_of(d->defaults), d->current);
  if (d->versions[d->current - 1].end != d->size)
    CTR_FAIL(CTR_E_INTERNAL, "%s: the current version ends at %zu, sizeof is %zu", d->name,
             d->versions[d->current - 1].end, d->size);
  if (d->nnested < 0 || d->nnested > CTR__STRUCT_MAX_NESTED)
    CTR_FAIL(CTR_E_INTERNAL, "%s: %d embedded structs", d->name, d->nnested);
  for (unsigned v = 1; v <= d->current; v++) {
    const ctr__struct_version *e = &d->versions[v - 1];
    if (e->end < sizeof(unsigned) || e->end > d->size ||
        (v > 1 && e->end < d->versions[v - 2].end))
      CTR_FAIL(CTR_E_INTERNAL, "%s: version %u ends at %zu (sizeof %zu)", d->name, v, e->end,
               d->size);
    for (int i = 0; i < d->nnested; i++) {
      const ctr__struct_desc *n = d->nested_desc[i];
      if (d->nested_offset[i] >= e->end) continue;
      /* an embedded struct is whole in every version that has a member after it */
      if (e->nested[i] < 1 || e->nested[i] > n->current ||
          (v > 1 && d->nested_offset[i] < d->versions[v - 2].end &&
           e->nested[i] < d->versions[v - 2].nested[i]))
        CTR_FAIL(CTR_E_INTERNAL, "%s version %u: %s at version %u (of 1 to %u)", d->name, v,
                 d->nested_name[i], e->nested[i], n->current);
      if (e->end < d->nested_offset[i] + n->size)
        CTR_FAIL(CTR_E_INTERNAL, "%s version %u ends inside %s", d->name, v, d->nested_name[i]);
    }
  }
  for (int i = 0; i < d->nnested; i++) {
    const ctr__struct_desc *n = d->nested_desc[i];
    if (!n || !d->nested_name[i] || n->nnested != 0 || n->align != d->align ||
        d->nested_offset[i] % d->align != 0 ||
        (i > 0 && d->nested_offset[i] < d->nested_offset[i - 1] + d->nested_desc[i - 1]->size) ||
        d->nested_offset[i] + n->size > d->size)
      CTR_FAIL(CTR_E_INTERNAL, "%s: embedded struct %d breaks the rules of core/internal.h",
               d->name, i);
    CTR_CHECK(ctr__struct_desc_check(n));
  }
  /* every version's size is at most the current one's and grows with it */
  size_t prev = 0;
  for (unsigned v = 1; v <= d->current; v++) {
    size_t size;
    CTR_CHECK(move(d, v, MEASURE, NULL, NULL, &size));
    if (size < prev || size > d->size)
      CTR_FAIL(CTR_E_INTERNAL, "%s: version %u is %zu bytes (sizeof %zu)", d->name, v, size,
               d->size);
    prev = size;
  }
  return CTR_OK;
}

/* ---- The public structs --------------------------------------------------- */

/* The descriptor ctr__struct_<stem> of ctr_<stem> from the table
 * <stem>_versions (one row per version, the oldest first) and the defaults
 * <stem>_defaults, and the public ctr_<stem>_init. The table has as many rows
 * as the header's CTR_<STEM>_VERSION says, or this does not compile. A struct
 * that embeds n versioned structs by value gives {their offsets}, {their
 * member names}, {their descriptors} as the variable arguments. */
#define CTR__STRUCT_DEFINE_NESTED(stem, VERSION, n, ...)                                     \
  _Static_assert(sizeof stem##_versions / sizeof stem##_versions[0] == (VERSION),           \
                 "ctr_" #stem ": one table row per version");                              \
  const ctr__struct_desc ctr__struct_##stem = {                                             \
      "ctr_" #stem, sizeof(ctr_##stem), _Alignof(ctr_##stem), &stem##_defaults, (VERSION), \
      stem##_versions, n, __VA_ARGS__};                                                     \
  ctr_status ctr_##stem##_init(ctr_##stem *s, unsigned version) {                           \
    return ctr__struct_init(&ctr__struct_##stem, s, version);                               \
  }
#define CTR__STRUCT_DEFINE(stem, VERSION) \
  CTR__STRUCT_DEFINE_NESTED(stem, VERSION, 0, {0}, {NULL}, {NULL})
/* A struct that has had one version: its defaults, its table and the above. */
#define CTR__STRUCT_DEFINE_V1(stem, VERSION, INIT)                                  \
  static const ctr_##stem stem##_defaults = INIT;                                  \
  static const ctr__struct_version stem##_versions[] = {CTR__V_ALL(ctr_##stem)}; \
  CTR__STRUCT_DEFINE(stem, VERSION)

/* Core */
static const ctr_context_options context_options_defaults = CTR_CONTEXT_OPTIONS_INIT;
static const ctr__struct_version context_options_versions[] = {
    CTR__V_UPTO(ctr_context_options, ndevices), /* 1 */
    CTR__V_ALL(ctr_context_options),            /* 2: ndevices, devices, tuning */
};
CTR__STRUCT_DEFINE(context_options, CTR_CONTEXT_OPTIONS_VERSION)
CTR__STRUCT_DEFINE_V1(device_info, CTR_DEVICE_INFO_VERSION, CTR_DEVICE_INFO_INIT)
CTR__STRUCT_DEFINE_V1(volume_error, CTR_VOLUME_ERROR_VERSION, CTR_VOLUME_ERROR_INIT)
CTR__STRUCT_DEFINE_V1(cluster_options, CTR_CLUSTER_OPTIONS_VERSION, CTR_CLUSTER_OPTIONS_INIT)
CTR__STRUCT_DEFINE_V1(tune_report, CTR_TUNE_REPORT_VERSION, CTR_TUNE_REPORT_INIT)

/* File I/O */
CTR__STRUCT_DEFINE_V1(stack_info, CTR_STACK_INFO_VERSION, CTR_STACK_INFO_INIT)
static const ctr_file_format_info file_format_info_defaults = CTR_FILE_FORMAT_INFO_INIT;
static const ctr__struct_version file_format_info_versions[] = {
    CTR__V_UPTO(ctr_file_format_info, needs_hint), /* 1 */
    CTR__V_ALL(ctr_file_format_info),              /* 2: needs_hint, dataset_path, title */
};
CTR__STRUCT_DEFINE(file_format_info, CTR_FILE_FORMAT_INFO_VERSION)
CTR__STRUCT_DEFINE_V1(preview_options, CTR_PREVIEW_OPTIONS_VERSION, CTR_PREVIEW_OPTIONS_INIT)

/* Cone-beam geometry and FDK */
static const ctr_circular_params circular_params_defaults = CTR_CIRCULAR_PARAMS_INIT;
static const ctr__struct_version circular_params_versions[] = {
    CTR__V_UPTO(ctr_circular_params, detector), /* 1 */
    CTR__V_ALL(ctr_circular_params),            /* 2: detector */
};
CTR__STRUCT_DEFINE(circular_params, CTR_CIRCULAR_PARAMS_VERSION)
static const ctr_helical_params helical_params_defaults = CTR_HELICAL_PARAMS_INIT;
static const ctr__struct_version helical_params_versions[] = {
    CTR__V_UPTO(ctr_helical_params, detector), /* 1 */
    CTR__V_ALL(ctr_helical_params),            /* 2: detector (window_deg's default: auto) */
};
CTR__STRUCT_DEFINE(helical_params, CTR_HELICAL_PARAMS_VERSION)

static const ctr_fdk_options fdk_options_defaults = CTR_FDK_OPTIONS_INIT;
static const ctr__struct_version fdk_options_versions[] = {
    CTR__V_UPTO(ctr_fdk_options, strict),           /* 1 */
    CTR__V_UPTO(ctr_fdk_options, geometry_checked), /* 2: strict */
    CTR__V_UPTO(ctr_fdk_options, offset_weight),    /* 3: geometry_checked */
    CTR__V_ALL(ctr_fdk_options),                    /* 4: offset_weight, offset_overlap */
};
CTR__STRUCT_DEFINE(fdk_options, CTR_FDK_OPTIONS_VERSION)

static const ctr_fdk_plan_request fdk_plan_request_defaults = CTR_FDK_PLAN_REQUEST_INIT;
static const ctr__struct_version fdk_plan_request_versions[] = {
    CTR__V_UPTO(ctr_fdk_plan_request, out_format), /* 1 */
    CTR__V_ALL(ctr_fdk_plan_request),              /* 2: out_format */
};
CTR__STRUCT_DEFINE(fdk_plan_request, CTR_FDK_PLAN_REQUEST_VERSION)

static const ctr_fdk_stream_options fdk_stream_options_defaults = CTR_FDK_STREAM_OPTIONS_INIT;
static const ctr__struct_version fdk_stream_options_versions[] = {
    {offsetof(ctr_fdk_stream_options, workers), {1}}, /* 1: ctr_fdk_options version 1 inside */
    {offsetof(ctr_fdk_stream_options, cluster), {2}}, /* 2: ctr_fdk_options version 2 inside;
                                                     workers, split */
    {offsetof(ctr_fdk_stream_options, overwrite), {2}}, /* 3: cluster */
    {offsetof(ctr_fdk_stream_options, overwrite), {3}}, /* 4: ctr_fdk_options version 3 inside */
    {sizeof(ctr_fdk_stream_options), {3}},              /* 5: overwrite */
    {sizeof(ctr_fdk_stream_options), {4}},              /* 6: ctr_fdk_options version 4 inside */
};
CTR__STRUCT_DEFINE_NESTED(fdk_stream_options, CTR_FDK_STREAM_OPTIONS_VERSION, 1,
                          {offsetof(ctr_fdk_stream_options, fdk)}, {"fdk"},
                          {&ctr__struct_fdk_options})

CTR__STRUCT_DEFINE_V1(fdk_plan, CTR_FDK_PLAN_VERSION, CTR_FDK_PLAN_INIT)
CTR__STRUCT_DEFINE_V1(fdk_stream_timings, CTR_FDK_STREAM_TIMINGS_VERSION, CTR_FDK_STREAM_TIMINGS_INIT)

static const ctr_fdk_stream_report fdk_stream_report_defaults = CTR_FDK_STREAM_REPORT_INIT;
static const ctr__struct_version fdk_stream_report_versions[] = {
    {offsetof(ctr_fdk_stream_report, helix_window_deg), {1, 1}}, /* 1: ctr_fdk_plan 1,
                                                                    ctr_fdk_stream_timings 1 */
    {sizeof(ctr_fdk_stream_report), {1, 1}}, /* 2: helix_window_deg, helix_window_auto */
};
CTR__STRUCT_DEFINE_NESTED(fdk_stream_report, CTR_FDK_STREAM_REPORT_VERSION, 2,
                          {offsetof(ctr_fdk_stream_report, plan), offsetof(ctr_fdk_stream_report, timings)},
                          {"plan", "timings"}, {&ctr__struct_fdk_plan, &ctr__struct_fdk_stream_timings})

/* Parallel beam */
static const ctr_parallel_params parallel_params_defaults = CTR_PARALLEL_PARAMS_INIT;
static const ctr__struct_version parallel_params_versions[] = {
    CTR__V_UPTO(ctr_parallel_params, tilt_deg), /* 1 */
    CTR__V_ALL(ctr_parallel_params),            /* 2: tilt_deg, nrows */
};
CTR__STRUCT_DEFINE(parallel_params, CTR_PARALLEL_PARAMS_VERSION)

static const ctr_fbp_options fbp_options_defaults = CTR_FBP_OPTIONS_INIT;
static const ctr__struct_version fbp_options_versions[] = {
    CTR__V_UPTO(ctr_fbp_options, strict),  /* 1 */
    CTR__V_UPTO(ctr_fbp_options, timings), /* 2: strict, counts */
    CTR__V_UPTO(ctr_fbp_options, gpu_budget), /* 3: timings */
    CTR__V_ALL(ctr_fbp_options),              /* 4: gpu_budget */
};
CTR__STRUCT_DEFINE(fbp_options, CTR_FBP_OPTIONS_VERSION)
CTR__STRUCT_DEFINE_V1(fbp_timings, CTR_FBP_TIMINGS_VERSION, CTR_FBP_TIMINGS_INIT)

CTR__STRUCT_DEFINE_V1(value_counts, CTR_VALUE_COUNTS_VERSION, CTR_VALUE_COUNTS_INIT)

/* Synchrotron pipeline */
CTR__STRUCT_DEFINE_V1(corrections, CTR_CORRECTIONS_VERSION, CTR_CORRECTIONS_INIT)
/* (its fbp member is a pointer to a versioned struct, read by ctr__struct_copy on its own) */
static const ctr_fbp_stream_options fbp_stream_options_defaults = CTR_FBP_STREAM_OPTIONS_INIT;
static const ctr__struct_version fbp_stream_options_versions[] = {
    CTR__V_UPTO(ctr_fbp_stream_options, cluster),    /* 1 */
    CTR__V_UPTO(ctr_fbp_stream_options, read_ahead), /* 2: cluster */
    CTR__V_UPTO(ctr_fbp_stream_options, input_scale), /* 3: read_ahead */
    CTR__V_UPTO(ctr_fbp_stream_options, gpu_budget),  /* 4: input_scale */
    CTR__V_UPTO(ctr_fbp_stream_options, overwrite),   /* 5: gpu_budget */
    CTR__V_ALL(ctr_fbp_stream_options),               /* 6: overwrite */
};
CTR__STRUCT_DEFINE(fbp_stream_options, CTR_FBP_STREAM_OPTIONS_VERSION)
CTR__STRUCT_DEFINE_V1(fbp_stream_report, CTR_FBP_STREAM_REPORT_VERSION,
                      CTR_FBP_STREAM_REPORT_INIT)

/* Live reconstruction */
CTR__STRUCT_DEFINE_V1(frame, CTR_FRAME_VERSION, CTR_FRAME_INIT)
CTR__STRUCT_DEFINE_V1(source_options, CTR_SOURCE_OPTIONS_VERSION, CTR_SOURCE_OPTIONS_INIT)
CTR__STRUCT_DEFINE_V1(source_status, CTR_SOURCE_STATUS_VERSION, CTR_SOURCE_STATUS_INIT)
CTR__STRUCT_DEFINE_V1(replay_options, CTR_REPLAY_OPTIONS_VERSION, CTR_REPLAY_OPTIONS_INIT)
static const ctr_live_options live_options_defaults = CTR_LIVE_OPTIONS_INIT;
static const ctr__struct_version live_options_versions[] = {
    CTR__V_UPTO(ctr_live_options, resume), /* 1 */
    CTR__V_ALL(ctr_live_options),          /* 2: resume, accumulate */
};
CTR__STRUCT_DEFINE(live_options, CTR_LIVE_OPTIONS_VERSION)
static const ctr_live_state live_state_defaults = CTR_LIVE_STATE_INIT;
static const ctr__struct_version live_state_versions[] = {
    CTR__V_UPTO(ctr_live_state, resumed), /* 1 */
    CTR__V_UPTO(ctr_live_state, read_s),  /* 2: resumed, accumulated */
    CTR__V_UPTO(ctr_live_state, preview_writes), /* 3: read_s .. write_s */
    CTR__V_UPTO(ctr_live_state, accumulate_upload_s), /* 4: preview_writes, preview_superseded */
    CTR__V_ALL(ctr_live_state), /* 5: accumulate_upload_s, accumulate_kernels_s */
};
CTR__STRUCT_DEFINE(live_state, CTR_LIVE_STATE_VERSION)

/* PET */
CTR__STRUCT_DEFINE_V1(pet_params, CTR_PET_PARAMS_VERSION, CTR_PET_PARAMS_INIT)
CTR__STRUCT_DEFINE_V1(pet_kernel_params, CTR_PET_KERNEL_PARAMS_VERSION,
                      CTR_PET_KERNEL_PARAMS_INIT)
CTR__STRUCT_DEFINE_V1(pet_sim_options, CTR_PET_SIM_OPTIONS_VERSION, CTR_PET_SIM_OPTIONS_INIT)

static const ctr_pet_recon_options pet_recon_options_defaults = CTR_PET_RECON_OPTIONS_INIT;
static const ctr__struct_version pet_recon_options_versions[] = {
    CTR__V_UPTO(ctr_pet_recon_options, strict), /* 1 */
    CTR__V_ALL(ctr_pet_recon_options),          /* 2: strict */
};
CTR__STRUCT_DEFINE(pet_recon_options, CTR_PET_RECON_OPTIONS_VERSION)

static const ctr_tuning tuning_defaults = CTR_TUNING_INIT;
static const ctr__struct_version tuning_versions[] = {
    CTR__V_UPTO(ctr_tuning, read_threads), /* 1 */
    CTR__V_UPTO(ctr_tuning, host_transfer), /* 2: read_threads */
    CTR__V_UPTO(ctr_tuning, zarr_shard),   /* 3: host_transfer, host_threads, host_stage_kib */
    CTR__V_UPTO(ctr_tuning, fbp_occupancy), /* 4: zarr_shard */
    CTR__V_ALL(ctr_tuning), /* 5: fbp_occupancy, fbp_carveout, fbp_angle_cache, bp_alu */
};
CTR__STRUCT_DEFINE(tuning, CTR_TUNING_VERSION)
CTR__STRUCT_DEFINE_V1(pet_view_info, CTR_PET_VIEW_INFO_VERSION, CTR_PET_VIEW_INFO_INIT)
CTR__STRUCT_DEFINE_V1(pet_recon_timings, CTR_PET_RECON_TIMINGS_VERSION,
                      CTR_PET_RECON_TIMINGS_INIT)
CTR__STRUCT_DEFINE_V1(pet_metrics, CTR_PET_METRICS_VERSION, CTR_PET_METRICS_INIT)

/* Iterative reconstruction */
static const ctr_projector_options projector_options_defaults = CTR_PROJECTOR_OPTIONS_INIT;
static const ctr__struct_version projector_options_versions[] = {
    CTR__V_UPTO(ctr_projector_options, workers), /* 1 */
    CTR__V_ALL(ctr_projector_options),           /* 2: workers */
};
CTR__STRUCT_DEFINE(projector_options, CTR_PROJECTOR_OPTIONS_VERSION)
static const ctr_iterate_options iterate_options_defaults = CTR_ITERATE_OPTIONS_INIT;
static const ctr__struct_version iterate_options_versions[] = {
    CTR__V_UPTO(ctr_iterate_options, weights), /* 1 */
    CTR__V_ALL(ctr_iterate_options),           /* 2: weights, i0, penalty, beta, huber_delta */
};
CTR__STRUCT_DEFINE(iterate_options, CTR_ITERATE_OPTIONS_VERSION)
CTR__STRUCT_DEFINE_V1(iterate_plan, CTR_ITERATE_PLAN_VERSION, CTR_ITERATE_PLAN_INIT)

static const ctr_iterate_report iterate_report_defaults = CTR_ITERATE_REPORT_INIT;
static const ctr__struct_version iterate_report_versions[] = {
    {offsetof(ctr_iterate_report, checkpointed), {1}}, /* 1: ctr_iterate_plan 1 */
    {offsetof(ctr_iterate_report, seconds_setup), {1}}, /* 2: checkpointed */
    {sizeof(ctr_iterate_report), {1}},                  /* 3: seconds_setup, seconds_vector */
};
CTR__STRUCT_DEFINE_NESTED(iterate_report, CTR_ITERATE_REPORT_VERSION, 1,
                          {offsetof(ctr_iterate_report, plan)}, {"plan"},
                          {&ctr__struct_iterate_plan})

const ctr__struct_desc *const ctr__structs[] = {
    &ctr__struct_context_options, &ctr__struct_circular_params, &ctr__struct_helical_params,
    &ctr__struct_fdk_options,
    &ctr__struct_fdk_plan_request,    &ctr__struct_fdk_stream_options,  &ctr__struct_parallel_params,
    &ctr__struct_fbp_options,     &ctr__struct_pet_params,      &ctr__struct_pet_kernel_params,
    &ctr__struct_pet_sim_options, &ctr__struct_pet_recon_options, &ctr__struct_corrections,
    &ctr__struct_fbp_stream_options, &ctr__struct_projector_options, &ctr__struct_iterate_options,
    &ctr__struct_cluster_options, &ctr__struct_source_options, &ctr__struct_replay_options,
    &ctr__struct_live_options,
    /* filled by the library (or both ways: ctr_stack_info, ctr_value_counts) */
    &ctr__struct_device_info, &ctr__struct_volume_error, &ctr__struct_stack_info,
    &ctr__struct_fdk_plan, &ctr__struct_fdk_stream_timings, &ctr__struct_fdk_stream_report,
    &ctr__struct_value_counts, &ctr__struct_pet_view_info, &ctr__struct_pet_recon_timings,
    &ctr__struct_pet_metrics, &ctr__struct_tuning, &ctr__struct_fbp_stream_report,
    &ctr__struct_iterate_plan, &ctr__struct_iterate_report, &ctr__struct_fbp_timings,
    &ctr__struct_file_format_info, &ctr__struct_preview_options, &ctr__struct_frame,
    &ctr__struct_source_status, &ctr__struct_live_state, &ctr__struct_tune_report, NULL};

/* What `ctrecon fbp`'s offline run (cmd_fbp.c) and its live mode
 * (cmd_fbp_follow.c) share: the streamed run's options from the command
 * line and the one report of the bad values the library met. */
#include "cmd_fbp.h"

#include <stdio.h>

void fbp_stream_options(fbp_args *a, ctr_fbp_stream_options *so) {
  *so = (ctr_fbp_stream_options)CTR_FBP_STREAM_OPTIONS_INIT;
  so->fbp = &a->fbp;
  so->corrections = &a->corr;
  so->sinograms = a->sinograms != NULL;
  so->row0 = a->rows_given ? a->rows[0] : 0;
  so->nrows = a->rows_given ? a->rows[1] - a->rows[0] : 0;
  if (a->subset_given) {
    so->angle_first = a->subset[0];
    so->angle_step = a->subset[2];
    so->angle_count = (a->subset[1] - a->subset[0] + a->subset[2] - 1) / a->subset[2];
  }
  so->center_row = a->center_row;
  so->out_dtype = a->out_dtype;
  so->out_scale = a->out_scale;
  so->input_scale = a->input_scale;
  so->out_offset = a->out_offset;
  so->batch = a->batch_given ? a->batch : 0;
  so->read_ahead = (int)a->read_ahead;
  so->host_budget = a->host_mem;
  so->gpu_budget = a->gpu_mem;
  so->resume = a->resume;
  so->overwrite = a->force;
}

/* One warning per kind of bad data the library met over every band. */
void fbp_report_counts(const fbp_args *a, const ctr_fbp_stream_report *c) {
  const char *in = a->sinograms ? a->sinograms : a->projections ? a->projections : a->input;
  if (c->bad_input)
    cli_warn("fbp", "'%s': %lld sinogram values NaN, infinite or beyond +-1e24 replaced by 0 "
             "(--strict makes this an error)", in, (long long)c->bad_input);
  if (c->bad_calibration)
    cli_warn("fbp", "'%s' / '%s': %lld pixels with flat <= dark or a non-finite flat or dark: their "
             "sinogram values set to 0 (--strict makes this an error)",
             a->flat ? a->flat : in, a->dark ? a->dark : "no dark (0)",
             (long long)c->bad_calibration);
  if (c->clamped)
    cli_warn("fbp", "'%s': %lld transmissions (p - dark) / (flat - dark) below 1e-6 or NaN clamped "
             "to 1e-6 (--strict makes this an error)", in, (long long)c->clamped);
  if (c->bad_output)
    cli_warn("fbp", "'%s': %lld non-finite slice values stored as 0 (--strict makes this an error)",
             a->out, (long long)c->bad_output);
  if (a->out_dtype == CTR_DTYPE_UINT16 && (c->below || c->above))
    cli_warn("fbp", "'%s': %lld values below 0 and %lld above 65535 after (value - %g) x %g were "
             "clamped (--out-range or --out-scale/--out-offset choose the scaling)", a->out,
             (long long)c->below, (long long)c->above, a->out_offset, a->out_scale);
}

/* `ctrecon fbp --follow`: the live mode (docs/synchrotron.md, "Live mode"),
 * a thin caller of the library's projection sources and live FBP: the
 * scan's projections as they arrive (a DXchange file followed under SWMR,
 * or a ZeroMQ socket), previews rewritten every --preview-every projections
 * or --preview-seconds, and when the scan ends the volume of the offline
 * `ctrecon fbp` (the same bytes). */
#include "cmd_fbp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ROWS 64

typedef struct follow_run {
  ctr_context *ctx;
  cli_session session;
  ctr_source *src;
  ctr_fbp_live *live;
  double *angles, *shifts;
  int64_t rows[MAX_ROWS];
  int nrows;
  int written;          /* previews written once */
  double t_written;
  int64_t at_written;   /* projections in the previews last written */
  char spool[4200];     /* --input: where the received projections wait ("": none) */
  int told_resumed;
} follow_run;

/* --preview-rows R,R,... */
static int parse_rows_list(const fbp_args *a, follow_run *f) {
  const char *s = a->preview_rows_text;
  if (!s) return 0;
  while (*s) {
    char *end;
    const long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || (*end && *end != ',') || f->nrows == MAX_ROWS)
      return cli_usage_error("fbp", "--preview-rows '%s': expected up to %d detector rows >= 0, "
                             "separated by commas", a->preview_rows_text, MAX_ROWS);
    f->rows[f->nrows++] = v;
    s = *end ? end + 1 : end;
  }
  if (!f->nrows) return cli_usage_error("fbp", "--preview-rows: give at least one row");
  return 0;
}

static int check_files(fbp_args *a, follow_run *f, const cli_opt *opts) {
  int rc = cli_require("fbp", opts, "--out", a->out);
  if (!rc) rc = cli_resolve_format("fbp", "--out", "--out-format", a->out, a->out_format, &a->out_format);
  if (!rc && a->bind && !a->input)
    rc = cli_usage_error("fbp", "--bind applies to --input tcp://HOST:PORT");
  if (!rc && a->spool && !a->input)
    rc = cli_usage_error("fbp", "--spool applies to --input (a file source keeps its own "
                         "projections)");
  if (!rc && a->resume && !a->input)
    rc = cli_usage_error("fbp", "--resume in the live mode continues a socket's spool (--input "
                         "tcp://...); a growing file is its own state: follow it again (--force "
                         "replaces the previews)");
  if (!rc && a->accumulate == CTR_LIVE_ACCUMULATE_ON) {
    /* what the library refuses at the first projection, said before the scan */
    const char *why =
        !a->axis_given || a->axis == CTR_AXIS_AUTO ? "the axis found after the scan: give --axis BIN"
        : a->corr.dezinger > 0 || a->corr.stripe != CTR_STRIPE_NONE || a->corr.stitch_360 ||
                a->corr.paganin_delta_beta > 0 || (a->bin_given && (a->bin[0] > 1 || a->bin[1] > 1))
            ? "the corrections (--dezinger, --rings, --paganin, --stitch-360, --bin), which take "
              "every projection of a row at once"
        : a->input && !a->angles ? "a socket's angles, known only as its frames come: give "
                                   "--angles FILE with --count"
                                 : NULL;
    if (why) rc = cli_usage_error("fbp", "--accumulate on sums the volume as the projections "
                                  "arrive, and cannot with %s (--accumulate auto: where it can)",
                                  why);
  }
  if (!rc && a->input && strncmp(a->input, "tcp://", 6))
    rc = cli_usage_error("fbp", "--input '%s': expected tcp://HOST:PORT", a->input);
  if (!rc && (a->angles || a->shifts) && !a->count)
    rc = cli_usage_error("fbp", "%s in the live mode needs --count N (the scan's projections)",
                         a->angles ? "--angles" : "--axis-shift");
  if (!rc && a->preview)
    rc = cli_usage_error("fbp", "--preview writes the central planes of a finished run; the "
                         "live mode's are --live-preview PREFIX");
  /* a growing file may not exist yet: not an input to check here */
  const cli_file in[] = {{"--flat", a->flat}, {"--dark", a->dark}, {"--angles", a->angles},
                         {"--axis-shift", a->shifts}, {0}};
  /* --resume: the spool and the previews are the stopped run's own */
  const cli_output out[] = {{"--out", a->out, CLI_OUT_DATA},
                            {"--spool", a->spool, a->resume ? CLI_OUT_UNCHECKED : CLI_OUT_FILE},
                            {"--live-preview", a->live_preview, CLI_OUT_UNCHECKED}, {0}};
  if (!rc) rc = cli_check_files("fbp", in, out, a->force);
  /* the default spool, OUT.spool: refused when there (a stopped run's:
   * --resume continues it), replaced with --force */
  if (!rc && a->input && !a->spool) {
    rc = cli_beside_output("fbp", a->out, "spool", f->spool, sizeof f->spool);
    if (!rc && !a->resume) rc = cli_check_new("fbp", "--spool", f->spool, CLI_OUT_FILE, a->force);
  } else if (a->spool) {
    snprintf(f->spool, sizeof f->spool, "%s", a->spool);
  }
  if (!rc && a->resume) {
    char state[4300];
    snprintf(state, sizeof state, "%s.index", f->spool);
    if (access(f->spool, F_OK) != 0 || access(state, F_OK) != 0)
      rc = cli_usage_error("fbp", "--resume: no stopped run's spool '%s' with its state '%s' "
                           "(--spool names another): run without --resume to start the scan",
                           f->spool, state);
  }
  if (!rc && f->spool[0] && a->force && !a->resume) {
    char state[4300];
    unlink(f->spool);
    snprintf(state, sizeof state, "%s.index", f->spool);
    unlink(state);
    snprintf(state, sizeof state, "%s.cal", f->spool);
    unlink(state);
  }
  /* the previews' files known before the first frame (the default rows
   * depend on the projections' height: the library checks those) */
  char path[4200];
  if (!rc && a->live_preview && !a->resume) {
    snprintf(path, sizeof path, "%s.%s", a->live_preview,
             ctr_features() & CTR_FEATURE_HDF5 ? "h5" : "zarr");
    rc = cli_check_new("fbp", "--live-preview", path, CLI_OUT_FILE, a->force);
  }
  for (int k = 0; !rc && a->live_preview && !a->resume && k < f->nrows; k++) {
    snprintf(path, sizeof path, "%s_row%05lld.png", a->live_preview, (long long)f->rows[k]);
    rc = cli_check_new("fbp", "--live-preview", path, CLI_OUT_FILE, a->force);
  }
  return rc;
}

static int open_source(const fbp_args *a, follow_run *f) {
  ctr_source_options o = CTR_SOURCE_OPTIONS_INIT;
  o.bind = a->bind;
  o.count = a->count;
  o.follow = 1;
  const char *where = a->input ? a->input : a->projections;
  const ctr_status st = ctr_source_open(where, &o, &f->src);
  if (st != CTR_OK) return cli_fail_file("fbp", st, where);
  if (a->bind) {
    printf("endpoint: %s\n", ctr_source_endpoint(f->src));
    fflush(stdout);
  }
  return 0;
}

static int open_live(fbp_args *a, follow_run *f, ctr_fbp_stream_options *so) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  int rc = 0;
  double start = 0, range = 180;
  if (a->angles)
    rc = cli_parallel_angles("fbp", a->angles, a->angle_units, a->count, &f->angles, &start, &range);
  if (!rc && a->shifts) rc = cli_read_numbers("fbp", a->shifts, "axis shift", a->count, &f->shifts);
  if (rc) return rc;
  p.nangles = a->angles || a->shifts ? a->count : 0;
  p.angles_deg = f->angles;
  p.axis_shift = f->shifts;
  p.axis = a->axis_given ? a->axis : CTR_AXIS_AUTO;
  if (a->size_given) {
    p.nx = a->size[0];
    p.ny = a->size[1];
  }
  p.voxel = a->voxel;
  p.pixel_size = a->pixel;
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.stream = so;
  lo.preview_rows = f->nrows ? f->rows : NULL;
  lo.npreview = f->nrows;
  lo.timeout_s = a->follow_timeout;
  lo.spool = f->spool[0] ? f->spool : NULL; /* beside the output: the disk that takes the volume */
  lo.flat_file = a->flat;
  lo.dark_file = a->dark;
  lo.resume = a->resume;
  lo.accumulate = (ctr_live_accumulate)a->accumulate;
  const ctr_status st = ctr_fbp_live_open(f->ctx, f->src, &p, &lo, &f->live);
  return st == CTR_OK ? 0 : cli_fail("fbp", st);
}

/* The previews queued for the run's writer thread (the steps go on while it
 * writes; the last state's write goes on beside the volume's, flush_previews waits). */
static int write_previews(const fbp_args *a, follow_run *f, const ctr_live_state *s) {
  if (!a->live_preview || !s->npreview) return 0;
  /* a resumed run's previews replace the stopped run's */
  const ctr_status st = ctr_fbp_live_queue_preview(f->live, a->live_preview,
                                                   !f->written && !a->resume, a->force);
  if (st != CTR_OK) return cli_fail_file("fbp", st, a->live_preview);
  f->written = 1;
  f->t_written = cli_now();
  f->at_written = s->projections;
  return 0;
}

/* The queued previews written completely (the last state's files whole). */
static int flush_previews(const fbp_args *a, follow_run *f) {
  if (!a->live_preview || !f->written) return 0;
  const ctr_status st = ctr_fbp_live_flush_preview(f->live);
  return st == CTR_OK ? 0 : cli_fail_file("fbp", st, a->live_preview);
}

/* Frames until the scan ends (or Ctrl-C); previews as they are due. */
static int follow(const fbp_args *a, follow_run *f, ctr_live_state *s) {
  const int64_t every = a->preview_every ? a->preview_every : 16;
  const double seconds = a->preview_seconds > 0 ? a->preview_seconds : 1.0;
  f->t_written = cli_now();
  for (;;) {
    const ctr_status st = ctr_fbp_live_step(f->live, 0.2, s);
    if (st != CTR_OK) return cli_fail_file("fbp", st, a->input ? a->input : a->projections);
    if (s->resumed && !f->told_resumed) {
      cli_info(&f->session, "fbp: resumed the stopped run: %lld projections from '%s'\n",
               (long long)s->resumed, f->spool);
      f->told_resumed = 1;
    }
    const int due = s->projections > f->at_written &&
                    (s->projections - f->at_written >= every || cli_now() - f->t_written >= seconds);
    if (s->ended || cli_interrupted()) break;
    if (due) {
      int rc = write_previews(a, f, s);
      if (rc) return rc;
      cli_info(&f->session, "fbp: %lld of %lld projections%s, %lld frames dropped\n",
               (long long)s->projections, (long long)s->expected,
               s->expected ? "" : " (count not known yet)", (long long)s->dropped);
    }
  }
  return write_previews(a, f, s); /* the last state: flushed whatever follows (conclude) */
}

/* The end: the volume, or why there is none. */
static int conclude(fbp_args *a, follow_run *f, const ctr_live_state *s) {
  const char *from = ctr_source_endpoint(f->src);
  if (s->ended != 1) {
    const int rc = flush_previews(a, f);
    if (rc) return rc;
    ctr_source_status ss = CTR_SOURCE_STATUS_INIT;
    ctr_source_get_status(f->src, &ss);
    char of[64] = " (the count was never said)";
    if (s->expected) snprintf(of, sizeof of, " of %lld", (long long)s->expected);
    char kept[4400] = "";
    if (f->spool[0] && s->projections && access(f->spool, F_OK) == 0)
      snprintf(kept, sizeof kept, "; '%s' keeps the %lld projections received: the same "
               "command with --resume continues the scan", f->spool, (long long)s->projections);
    cli_error("fbp", CLI_EXIT_INPUT, "the scan from '%s' stopped after %lld%s projections "
              "(%s; frames dropped: %lld bad headers, %lld wrong sizes, %lld duplicates, %lld out "
              "of order): '%s' was not written%s%s%s", from, (long long)s->projections, of,
              cli_interrupted() ? "interrupted"
              : ss.ended ? "an end came early" : "no frame within --follow-timeout",
              (long long)ss.dropped_header, (long long)ss.dropped_size,
              (long long)ss.dropped_duplicate, (long long)ss.dropped_order, a->out,
              a->live_preview ? "; the previews are complete: " : "",
              a->live_preview ? a->live_preview : "", kept);
    return cli_interrupted() ? CLI_EXIT_INTERRUPTED : CLI_EXIT_INPUT;
  }
  ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
  ctr_value_counts counts = CTR_VALUE_COUNTS_INIT;
  a->fbp.counts = &counts;
  const double t0 = cli_now();
  /* the volume while the writer thread writes the last previews (after the last
   * projection, their 0.5 s were the volume's to wait: bench/NOTES.md) */
  const ctr_status st = ctr_fbp_live_finish(f->live, a->out, a->out_format, &rep);
  const double t_volume = cli_now();
  a->fbp.counts = NULL;
  cli_progress_end(&f->session);
  const int prc = flush_previews(a, f); /* after a failure too: the previews whole */
  if (st != CTR_OK) return cli_fail_file("fbp", st, from);
  if (prc) return prc;
  fbp_report_counts(a, &rep);
  if (rep.axis_found) cli_info(&f->session, "rotation axis: %.2f bins (found)\n", rep.axis);
  cli_info(&f->session, "fbp: %lld projections followed; %lld slices of %lld x %lld%s, %.2f s "
           "after the scan ended\nwrote %s\n", (long long)s->projections, (long long)rep.nslices,
           (long long)rep.nx, (long long)rep.ny,
           s->accumulated == s->projections ? " (summed during the acquisition)" : "",
           t_volume - t0, a->out);
  return 0;
}

int fbp_follow(fbp_args *a, const cli_opt *opts) {
  follow_run f;
  memset(&f, 0, sizeof f);
  int rc = parse_rows_list(a, &f);
  if (!rc) rc = check_files(a, &f, opts);
  if (rc) return rc;
  rc = cli_context_create(&f.session, "fbp", &a->common, &f.ctx);
  cli_install_sigint();
  ctr_fbp_stream_options so;
  fbp_stream_options(a, &so);
  ctr_live_state s = CTR_LIVE_STATE_INIT;
  if (!rc) rc = open_source(a, &f);
  if (!rc) rc = open_live(a, &f, &so);
  if (!rc) rc = follow(a, &f, &s);
  if (!rc) rc = conclude(a, &f, &s);
  ctr_fbp_live_free(f.live);
  ctr_source_close(f.src);
  ctr_context_free(f.ctx);
  free(f.angles);
  free(f.shifts);
  return rc;
}

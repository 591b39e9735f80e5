/* `ctrecon stream-send` and `ctrecon hdf5-append`: a finished DXchange scan
 * replayed as if it were being acquired (flats, darks, then projections at
 * --rate), into a ZeroMQ socket or a DXchange file written under SWMR, for
 * tests and demos of `ctrecon fbp --follow` (docs/synchrotron.md, "Live
 * mode"). Thin callers of ctr_replay. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_stream_send = {
    "stream-send",
    "replay a DXchange scan into a ZeroMQ socket at a rate (live-mode demos)",
    "ctrecon stream-send --scan FILE.h5 --to tcp://HOST:PORT [--bind] [--rate N] [options]",
    "Sends the scan's flat and dark fields, then its projections at --rate\n"
    "projections per second, then an end, on a ZeroMQ PUSH socket, one two-part\n"
    "message a frame: a JSON header (kind, index, angle, shape, dtype, count,\n"
    "time) and the pixels (docs/synchrotron.md, \"Message format\"). `ctrecon fbp\n"
    "--follow --input tcp://...` receives them. With --bind the socket binds (PORT\n"
    "0: a free port, printed as 'endpoint: tcp://...'), else it connects to a\n"
    "receiver that binds. --stop-after N stops after N projections without an\n"
    "end, as a detector that dies mid-scan.",
    "  ctrecon stream-send --scan scan.h5 --to tcp://127.0.0.1:5555 --rate 100\n"
    "  ctrecon stream-send --scan scan.h5 --to tcp://127.0.0.1:0 --bind --rate 50\n",
};

const cli_command cli_cmd_hdf5_append = {
    "hdf5-append",
    "replay a DXchange scan into a growing HDF5 file (SWMR) at a rate (live-mode demos)",
    "ctrecon hdf5-append --scan FILE.h5 --out GROWING.h5 [--rate N] [options]",
    "Writes a DXchange file as a beamline would while it acquires: its flat and\n"
    "dark fields and angles (/exchange/theta) first, then /exchange/data one\n"
    "projection at a time at --rate projections per second, each flushed, under\n"
    "HDF5's single-writer / multiple-reader mode (SWMR), so that `ctrecon fbp\n"
    "--follow --projections GROWING.h5` reconstructs while it grows. The file is\n"
    "written in place (readers follow it by its name); an existing one is refused\n"
    "unless --force. --stop-after N stops after N projections (a short file).",
    "  ctrecon hdf5-append --scan scan.h5 --out live.h5 --rate 100\n",
};

typedef struct send_args {
  const char *scan, *to, *out;
  double rate;
  int bind, force, quiet, shown;
  int64_t stop_after;
} send_args;

static void print_endpoint(void *user, const char *endpoint) {
  (void)user;
  printf("endpoint: %s\n", endpoint);
  fflush(stdout);
}

static int progress(void *user, const char *stage, double fraction) {
  send_args *a = user;
  (void)stage;
  const int pct = (int)(100.0 * fraction);
  if (!a->quiet && pct != a->shown) { /* each whole per cent once */
    a->shown = pct;
    fprintf(stderr, "\r%s: %5.1f %%", a->out ? "hdf5-append" : "stream-send", 100.0 * fraction);
    fflush(stderr);
  }
  return !cli_interrupted();
}

/* Both commands: the replay and its summary. */
static int replay(const char *cmd, send_args *a) {
  ctr_replay_options o = CTR_REPLAY_OPTIONS_INIT;
  o.rate = a->rate;
  o.bind = a->bind;
  o.stop_after = a->stop_after;
  o.overwrite = a->force;
  o.on_endpoint = print_endpoint;
  o.progress = progress;
  o.user = a;
  cli_install_sigint();
  int64_t sent = 0;
  const double t0 = cli_now();
  const ctr_status st = ctr_replay(a->scan, a->out ? a->out : a->to, &o, &sent);
  if (!a->quiet) fprintf(stderr, "\n");
  if (st != CTR_OK) return cli_fail_file(cmd, st, a->scan);
  const double s = cli_now() - t0;
  if (!a->quiet)
    fprintf(stderr, "%s: %lld projections of '%s' in %.2f s (%.1f per second)%s\n", cmd,
            (long long)sent, a->scan, s, s > 0 ? (double)sent / s : 0.0,
            a->stop_after ? " (stopped early: --stop-after)" : "");
  return 0;
}

#define SEND_COMMON_OPTIONS(a)                                                               \
  {"--scan", "FILE.h5", "the DXchange scan to replay (required)", cli_parse_string,          \
   &(a)->scan, NULL},                                                                        \
  {"--rate", "N", "projections per second (default 0: as fast as they go)",                  \
   cli_parse_nonneg, &(a)->rate, NULL},                                                      \
  {"--stop-after", "N", "stop after N projections, without an end (default: all)",           \
   cli_parse_count, &(a)->stop_after, NULL},                                                 \
  {"--quiet", NULL, "no progress (default: off)", cli_set_flag, &(a)->quiet, NULL}

int cmd_stream_send(int argc, char **argv) {
  send_args a;
  memset(&a, 0, sizeof a);
  a.shown = -1;
  const cli_opt opts[] = {
      SEND_COMMON_OPTIONS(&a),
      {"--to", "tcp://HOST:PORT", "where to send (required)", cli_parse_string, &a.to, NULL},
      {"--bind", NULL, "bind the socket (PORT 0: a free one, printed) instead of connecting to "
       "a receiver that binds (default: connect)", cli_set_flag, &a.bind, NULL},
      {0},
  };
  int rc = cli_parse(&cli_cmd_stream_send, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if ((rc = cli_require("stream-send", opts, "--scan", a.scan)) ||
      (rc = cli_require("stream-send", opts, "--to", a.to)))
    return rc;
  if (strncmp(a.to, "tcp://", 6))
    return cli_usage_error("stream-send", "--to '%s': expected tcp://HOST:PORT (an HDF5 file is "
                           "`ctrecon hdf5-append --out`)", a.to);
  if (!(ctr_features() & CTR_FEATURE_ZMQ))
    return cli_error("stream-send", CLI_EXIT_UNSUPPORTED, "--to %s: this build has no ZeroMQ "
                     "(built without ZeroMQ: install libzmq3-dev and configure with "
                     "-DCTRECON_ZMQ=on)", a.to);
  const cli_file in[] = {{"--scan", a.scan}, {0}};
  const cli_output out[] = {{0}};
  if ((rc = cli_check_files("stream-send", in, out, 0))) return rc;
  return replay("stream-send", &a);
}

int cmd_hdf5_append(int argc, char **argv) {
  send_args a;
  memset(&a, 0, sizeof a);
  a.shown = -1;
  const cli_opt opts[] = {
      SEND_COMMON_OPTIONS(&a),
      {"--out", "GROWING.h5", "the DXchange file to write as it grows (required)",
       cli_parse_string, &a.out, NULL},
      CLI_FORCE_OPTION(&a.force),
      {0},
  };
  int rc = cli_parse(&cli_cmd_hdf5_append, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if ((rc = cli_require("hdf5-append", opts, "--scan", a.scan)) ||
      (rc = cli_require("hdf5-append", opts, "--out", a.out)))
    return rc;
  if (!(ctr_features() & CTR_FEATURE_HDF5))
    return cli_error("hdf5-append", CLI_EXIT_UNSUPPORTED, "--out %s: this build has no HDF5 "
                     "(install libhdf5-dev and configure with -DCTRECON_HDF5=on)", a.out);
  const cli_file in[] = {{"--scan", a.scan}, {0}};
  const cli_output out[] = {{"--out", a.out, CLI_OUT_FILE}, {0}};
  if ((rc = cli_check_files("hdf5-append", in, out, a.force))) return rc;
  return replay("hdf5-append", &a);
}

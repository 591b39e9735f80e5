/* The context every compute command runs in: log messages, the progress
 * bar on stderr, Ctrl-C turning into a clean cancellation. */
#include "cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define BAR_WIDTH 24
#define BAR_MIN_INTERVAL 0.1 /* seconds between redraws: a terminal is slow */

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Ctrl-C ------------------------------------------------------------- */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
}

int cli_interrupted(void) { return g_interrupted != 0; }

void cli_install_sigint(void) {
  /* The first Ctrl-C (or SIGTERM, SIGHUP: kill, a closed terminal, a batch
   * system's time limit) cancels at the next progress report so temporaries
   * are removed; SA_RESETHAND makes a second one kill the process at once. */
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

/* ---- Progress bar ----------------------------------------------------- */

static void format_time(double s, char *buf, size_t n) {
  if (s < 0) s = 0;
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void draw_bar(cli_session *s, double fraction, double now) {
  char bar[BAR_WIDTH + 1], el[32], eta[32], rate[48] = "";
  int filled = (int)(fraction * BAR_WIDTH + 0.5);
  for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
  bar[BAR_WIDTH] = '\0';
  const double elapsed = now - s->stage_start;
  format_time(elapsed, el, sizeof el);
  /* The ETA needs a few percent of history to mean anything. */
  if (fraction >= 1.0)
    snprintf(eta, sizeof eta, "done");
  else if (fraction > 0.02)
    format_time(elapsed * (1.0 - fraction) / fraction, eta, sizeof eta);
  else
    snprintf(eta, sizeof eta, "?");
  if (s->rate_total > 0 && elapsed > 0 && fraction > 0)
    snprintf(rate, sizeof rate, ", %.2f %s/s", fraction * s->rate_total / elapsed, s->rate_unit);
  /* \r + clear-to-end-of-line: redraw in place. */
  fprintf(stderr, "\r\033[K%-18s [%s] %3d%%  %s elapsed, ETA %s%s", s->stage, bar,
          (int)(fraction * 100.0), el, eta, rate);
  fflush(stderr);
  s->bar_open = 1;
  s->last_draw = now;
}

void cli_progress_end(cli_session *s) {
  if (s && s->bar_open) {
    fputc('\n', stderr);
    s->bar_open = 0;
  }
}

static int on_progress(void *user, const char *stage, double fraction) {
  cli_session *s = user;
  if (!s->bar) return cli_interrupted();
  const double now = cli_now();
  if (strncmp(s->stage, stage, sizeof s->stage - 1) != 0) {
    cli_progress_end(s); /* a new stage starts on a new line */
    snprintf(s->stage, sizeof s->stage, "%s", stage);
    s->stage_start = now;
    s->last_draw = 0;
  }
  if (fraction < 0) fraction = 0;
  if (fraction > 1) fraction = 1;
  if (fraction >= 1.0 || now - s->last_draw >= BAR_MIN_INTERVAL) draw_bar(s, fraction, now);
  if (fraction >= 1.0) {
    cli_progress_end(s);
    s->stage[0] = '\0'; /* the same stage run again gets a fresh bar */
  }
  return cli_interrupted();
}

int cli_progress(cli_session *s, const char *stage, double fraction) {
  return on_progress(s, stage, fraction);
}

/* ---- Log messages ------------------------------------------------------- */

static void on_log(void *user, ctr_log_level level, const char *message) {
  cli_session *s = user;
  if (level == CTR_LOG_DEBUG && !s->debug_log) return;
  if (level == CTR_LOG_INFO && s->common.quiet) return;
  cli_progress_end(s); /* never write into the middle of a bar */
  const char *kind = level == CTR_LOG_ERROR     ? "error"
                     : level == CTR_LOG_WARNING ? "warning"
                     : level == CTR_LOG_INFO    ? "info"
                                                : "debug";
  char text[2048];
  fprintf(stderr, "ctrecon %s: %s: %s\n", s->cmd, kind,
          cli_library_text(message, NULL, text, sizeof text));
}

void cli_info(const cli_session *s, const char *fmt, ...) {
  if (s->common.quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

/* ---- Context ------------------------------------------------------------ */

static void describe_backend(const cli_session *s, const ctr_context *ctx) {
  if (ctr_context_get_device(ctx) == CTR_DEVICE_CUDA) {
    const int n = ctr_context_get_device_count(ctx);
    for (int i = 0; i < n; i++) {
      const int index = ctr_context_get_device_ordinal(ctx, i);
      ctr_device_info d = CTR_DEVICE_INFO_INIT;
      const char *lead = i == 0 ? "using" : "     ";
      if (ctr_cuda_get_device_info(index, &d) == CTR_OK)
        cli_info(s, "%s cuda:%d (%s)\n", lead, index, d.name);
      else
        cli_info(s, "%s cuda:%d\n", lead, index);
    }
    return;
  }
  int threads = s->common.threads;
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#else
  if (threads <= 0) threads = 1;
#endif
  cli_info(s, "using cpu (%d thread%s)\n", threads, threads == 1 ? "" : "s");
}

/* Under a launcher: how many ranks share the run (rank 0 says it). */
static void describe_launch(const cli_session *s) {
  const int n = cli_launch_size();
  if (n > 1) cli_info(s, "distributed over %d ranks (each: the device above)\n", n);
}

int cli_context_create(cli_session *s, const char *cmd, const cli_common *common,
                       ctr_context **out) {
  memset(s, 0, sizeof *s);
  s->cmd = cmd;
  s->common = *common;
  s->bar = !common->quiet && isatty(STDERR_FILENO);
  cli_install_sigint();
  ctr_tuning tuning;
  const int rc = cli_tuning(cmd, common, &tuning);
  if (rc) return rc;
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  o.device = common->device;
  o.device_index = common->device_index;
  o.ndevices = common->ndevices;
  o.devices = common->devices;
  int rank_gpus[64];
  if (common->ndevices == 0 && common->device_index < 0 && common->device != CTR_DEVICE_CPU &&
      (o.ndevices = cli_launch_gpus(rank_gpus, 64)) > 0)
    o.devices = rank_gpus; /* ranks sharing a host share out its GPUs */
  o.num_threads = common->threads;
  o.progress = on_progress;
  o.log = on_log;
  o.user = s;
  o.tuning = &tuning;
  ctr_status st = ctr_context_create(&o, out);
  if (st != CTR_OK) return cli_fail(cmd, st);
  describe_backend(s, *out);
  describe_launch(s);
  return 0;
}

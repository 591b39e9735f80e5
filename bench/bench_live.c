/* The live mode's benchmark (issue 47's targets; docs/synchrotron.md, "Live
 * mode"): a scan replayed at a fixed rate into a ZeroMQ socket (or a
 * growing SWMR file) while the live FBP follows it, then the final
 * reconstruction. Prints one JSON object:
 *   preview_latency_s   median / p95 / max over projections of the time from
 *                       a projection's send to the end of the step that put
 *                       it into the previews (target: <= 0.5 s);
 *   lag_s_max           the most the previews were behind the acquisition:
 *                       (projections sent - projections previewed) / rate
 *                       at the end of each step (target: <= 1 s);
 *   last_to_volume_s    from the last projection's send to the volume written
 *                       (target: <= 15 s at 2048^3);
 *   accumulated         projections summed into the full volume as they came
 *                       (--accumulate on|auto: the scan's angles and the axis
 *                       at the centre given, so a socket's scan can be summed;
 *                       off: the volume after the scan, as before);
 *   step_s              where the steps' time went (ctr_live_state's seconds),
 *                       median and p95 over the steps that took projections:
 *                       read (the source and the spool), filter (the previewed
 *                       rows flat-fielded, filtered), backproject (the
 *                       previews' backprojection: upload, kernels, download on
 *                       a GPU), accumulate (the full volume's sum: on a GPU the
 *                       calls that queue it), step (the whole step), queue
 *                       (a preview queued for the writer thread: the step's
 *                       share of a preview), and write over the preview writes
 *                       (PNG and HDF5 by the writer thread, off the steps'
 *                       path; queued every --preview-every N projections (16;
 *                       0: none) or 1 s, as `ctrecon fbp --follow
 *                       --live-preview` queues them, into DIR/live_preview*);
 *                       preview_writes: how many were written,
 *                       preview_superseded: how many queued were replaced by a
 *                       newer one before the writer took them (not written),
 *                       preview_queued: how many were queued.
 *
 *   bench_sync gen --dir DIR [--n N --angles A]      (the scan's data)
 *   bench_live --dir DIR [--small] [--rate 100] [--source zmq|hdf5]
 *              [--device cuda|cpu] [--out-dtype float32|uint16] [--json FILE]
 *              [--accumulate off|on|auto] [--preview-every N]
 *              [--sender process|thread]  (process, the default: the sender is another
 *              process, as a detector's software is; thread: one of this process, whose
 *              HDF5 writes then share the library's lock with the reader)
 *
 * bench/live.sh runs both; --small there: 256 x 256 x 256 (bench_sync gen
 * --n 256 --angles 256; here --small only labels the JSON). The sizes,
 * 2048 x 2048 x 2048, need disk for: the scan 16 GiB, its
 * DXchange copy 16 GiB, the spool (zmq) or the growing file (hdf5) 16 GiB,
 * the volume 32 GiB as float32). The scan is first rewritten as one
 * DXchange file (flats, darks, theta), untimed. */
#include "bench_common.h"
#include "io/io_source.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The sender: another process (as a detector's software is), sharing with this one a
 * mapped file DIR/live_sent.bin: the count sent, then each projection's monotonic time
 * just after its send (0: not yet; CLOCK_MONOTONIC is the machine's, so the two
 * processes' times compare). A thread of this process with --sender thread. */
typedef struct sent_map {
  atomic_llong sent;
  atomic_int st;         /* the replay's status, once done */
  double t_sent[];
} sent_map;

typedef struct sender {
  const char *scan, *to;
  double rate;
  int64_t count;
  sent_map *m;
  size_t map_bytes;
} sender;

static sender g_send;

static int sent_progress(void *user, const char *stage, double fraction) {
  (void)user, (void)stage;
  const long long i = llround(fraction * (double)g_send.count) - 1;
  if (i >= 0 && i < g_send.count) g_send.m->t_sent[i] = ctr__now_s();
  atomic_store(&g_send.m->sent, i + 1);
  return 1;
}

static void *send_thread(void *arg) {
  (void)arg;
  ctr_replay_options o = CTR_REPLAY_OPTIONS_INIT;
  o.rate = g_send.rate;
  o.progress = sent_progress;
  o.overwrite = 1;
  atomic_store(&g_send.m->st, (int)ctr_replay(g_send.scan, g_send.to, &o, NULL));
  return NULL;
}

static sent_map *map_sent(const char *path, int64_t count, int create, size_t *bytes) {
  *bytes = sizeof(sent_map) + sizeof(double) * (size_t)count;
  const int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);
  if (fd < 0 || (create && ftruncate(fd, (off_t)*bytes) != 0))
    BENCH_DIE("bench_live: cannot make %s (%s)", path, strerror(errno));
  void *p = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) BENCH_DIE("bench_live: cannot map %s (%s)", path, strerror(errno));
  return (sent_map *)p;
}

/* bench_live --send-child SCAN TO RATE COUNT MAP: the sender process. */
static int send_child(char **argv) {
  g_send = (sender){argv[0], argv[1], atof(argv[2]), atoll(argv[3]), NULL, 0};
  g_send.m = map_sent(argv[4], g_send.count, 0, &g_send.map_bytes);
  send_thread(NULL);
  const int st = atomic_load(&g_send.m->st);
  if (st != CTR_OK) fprintf(stderr, "bench_live sender: %s\n", ctr_error_detail());
  return st == CTR_OK ? 0 : 1;
}

/* bench_sync's files as one DXchange file with flats, darks and theta. */
static void make_dxchange(const char *dir, const char *out, int64_t *count) {
  char path[4200];
  snprintf(path, sizeof path, "%s/scan.h5:/exchange/data", dir);
  ctr_stack_reader *r = NULL;
  if (ctr_stack_open(path, CTR_FORMAT_AUTO, NULL, 0, &r) != CTR_OK)
    BENCH_DIE("bench_live: %s (run bench_sync gen --dir %s first)", ctr_error_detail(), dir);
  const ctr_stack_info *i = ctr_stack_reader_get_info(r);
  const int64_t npix = i->width * i->height, na = i->count;
  float *cal = NULL;
  ctr_stack_info ci = CTR_STACK_INFO_INIT;
  uint16_t *flats = malloc(sizeof(uint16_t) * (size_t)npix * 2), *darks = malloc(sizeof(uint16_t) * (size_t)npix * 2);
  uint16_t *img = malloc(sizeof(uint16_t) * (size_t)npix);
  double *theta = malloc(sizeof(double) * (size_t)na);
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/%s.h5:/data", dir, k ? "dark" : "flat");
    if (ctr_stack_load(path, CTR_FORMAT_AUTO, NULL, CTR_DTYPE_FLOAT32, &ci, (void **)&cal) != CTR_OK ||
        ci.width * ci.height != npix || ci.count < 2)
      BENCH_DIE("bench_live: %s", ctr_error_detail());
    for (int64_t p = 0; p < 2 * npix; p++) (k ? darks : flats)[p] = (uint16_t)lrintf(cal[p]);
    free(cal);
  }
  for (int64_t a = 0; a < na; a++) theta[a] = 180.0 * (double)a / (double)na;
  unlink(out);
  ctr__swmr_writer *w = NULL;
  if (ctr__swmr_writer_create(out, i->width, i->height, CTR_DTYPE_UINT16, flats, 2, darks, 2, theta,
                              na, 1, &w) != CTR_OK)
    BENCH_DIE("bench_live: %s", ctr_error_detail());
  for (int64_t a = 0; a < na; a++)
    if (ctr_stack_read(r, a, 1, CTR_DTYPE_UINT16, img) != CTR_OK || ctr__swmr_writer_append(w, img) != CTR_OK)
      BENCH_DIE("bench_live: %s", ctr_error_detail());
  if (ctr__swmr_writer_close(w) != CTR_OK) BENCH_DIE("bench_live: %s", ctr_error_detail());
  *count = na;
  ctr_stack_close(r);
  free(flats);
  free(darks);
  free(img);
  free(theta);
}

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* `"name": {"median": .., "p95": ..}` of n values (sorted here; n 0: zeros). */
static void print_stat(FILE *f, const char *name, double *v, int64_t n, const char *sep) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  fprintf(f, "\"%s\": {\"median\": %.4f, \"p95\": %.4f}%s", name, n ? v[n / 2] : 0.0,
          n ? v[(int64_t)(0.95 * (double)(n - 1))] : 0.0, sep);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *json = NULL, *source = "zmq", *dtype = "float32", *acc = "off";
  double rate = 100.0;
  int small = 0;
  int64_t every = 16;
  const char *sender_kind = "process";
  ctr_device_kind device = CTR_DEVICE_AUTO;
  if (argc == 7 && !strcmp(argv[1], "--send-child")) return send_child(argv + 2);
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--small")) small = 1;
    else if (!strcmp(argv[i], "--dir")) dir = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = argv[++i];
    else if (!strcmp(argv[i], "--rate")) rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--source")) source = argv[++i];
    else if (!strcmp(argv[i], "--out-dtype")) dtype = argv[++i];
    else if (!strcmp(argv[i], "--accumulate")) acc = argv[++i];
    else if (!strcmp(argv[i], "--preview-every")) every = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--sender")) sender_kind = argv[++i];
    else if (!strcmp(argv[i], "--device")) {
      device = !strcmp(v, "cpu") ? CTR_DEVICE_CPU : CTR_DEVICE_CUDA;
      i++;
    } else BENCH_DIE("usage: bench_live --dir DIR [--small] [--rate N] [--source zmq|hdf5] "
                     "[--device cuda|cpu] [--out-dtype float32|uint16] [--json FILE] "
                     "[--accumulate off|on|auto] [--preview-every N] [--sender process|thread]");
  }
  if (strcmp(sender_kind, "process") && strcmp(sender_kind, "thread"))
    BENCH_DIE("bench_live: --sender is '%s', expected process or thread", sender_kind);
  if (!dir || !(rate > 0)) BENCH_DIE("bench_live: --dir DIR (bench_sync gen's) and a --rate > 0");
  char scan[4200], grow[4200], out[4200], prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/live_preview", dir);
  snprintf(scan, sizeof scan, "%s/live_scan.h5", dir);
  snprintf(grow, sizeof grow, "%s/live_growing.h5", dir);
  snprintf(out, sizeof out, "%s/live_volume.raw", dir);
  int64_t count = 0;
  make_dxchange(dir, scan, &count);
  const int hdf5 = !strcmp(source, "hdf5");
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = device;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx) != CTR_OK) BENCH_DIE("bench_live: %s", ctr_error_detail());
  /* the receiver first (a socket bound to a free port, or the file to come) */
  ctr_source_options so = CTR_SOURCE_OPTIONS_INIT;
  so.bind = 1;
  unlink(grow);
  ctr_source *src = NULL;
  if (ctr_source_open(hdf5 ? grow : "tcp://127.0.0.1:0", &so, &src) != CTR_OK)
    BENCH_DIE("bench_live: %s", ctr_error_detail());
  ctr_fbp_stream_options fo = CTR_FBP_STREAM_OPTIONS_INIT;
  fo.out_dtype = !strcmp(dtype, "uint16") ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32;
  fo.overwrite = 1;
  ctr_live_options lo = CTR_LIVE_OPTIONS_INIT;
  lo.stream = &fo;
  lo.timeout_s = 60;
  char spool[4200];
  snprintf(spool, sizeof spool, "%s/live_spool.raw", dir);
  unlink(spool);
  lo.spool = hdf5 ? NULL : spool;
  lo.accumulate = !strcmp(acc, "on")     ? CTR_LIVE_ACCUMULATE_ON
                  : !strcmp(acc, "auto") ? CTR_LIVE_ACCUMULATE_AUTO
                                         : CTR_LIVE_ACCUMULATE_OFF;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT; /* the axis at the centre, as generated */
  double *theta = malloc(sizeof(double) * (size_t)count); /* make_dxchange's */
  for (int64_t a = 0; a < count; a++) theta[a] = 180.0 * (double)a / (double)count;
  if (lo.accumulate != CTR_LIVE_ACCUMULATE_OFF) { /* a socket's angles given before its frames */
    p.angles_deg = theta;
    p.nangles = count;
  }
  ctr_fbp_live *l = NULL;
  if (ctr_fbp_live_open(ctx, src, &p, &lo, &l) != CTR_OK) BENCH_DIE("bench_live: %s", ctr_error_detail());
  char map_path[4200];
  snprintf(map_path, sizeof map_path, "%s/live_sent.bin", dir);
  g_send = (sender){scan, hdf5 ? grow : ctr_source_endpoint(src), rate, count, NULL, 0};
  g_send.m = map_sent(map_path, count, 1, &g_send.map_bytes);
  double *latency = calloc((size_t)count, sizeof(double));
  pthread_t th;
  pid_t child = 0;
  const int in_process = !strcmp(sender_kind, "thread");
  if (in_process) {
    pthread_create(&th, NULL, send_thread, NULL);
  } else {
    char rate_s[64], count_s[64], to_s[4200];
    snprintf(rate_s, sizeof rate_s, "%.17g", rate);
    snprintf(count_s, sizeof count_s, "%lld", (long long)count);
    snprintf(to_s, sizeof to_s, "%s", g_send.to);
    char *cargv[] = {"/proc/self/exe", "--send-child", scan, to_s, rate_s, count_s, map_path, NULL};
    if (posix_spawn(&child, "/proc/self/exe", NULL, NULL, cargv, environ) != 0)
      BENCH_DIE("bench_live: cannot start the sender process (%s)", strerror(errno));
  }
  ctr_live_state st = CTR_LIVE_STATE_INIT;
  double lag_max = 0;
  int64_t done = 0, steps = 0, writes = 0, queued = 0, at_written = 0;
  /* per step that took projections: read, filter, backproject, accumulate, the step; the
     writer's writes (each seen by a step); the queueing */
  double *tm[9]; /* ... 7, 8: the GPU's seconds on a batch of the sum (upload, kernels) */
  int64_t ndev = 0;
  for (int k = 0; k < 9; k++) tm[k] = calloc((size_t)count + 2, sizeof(double));
  double t_written = ctr__now_s();
  while (!st.ended) {
    const double t_step = ctr__now_s();
    if (ctr_fbp_live_step(l, 0.05, &st) != CTR_OK) BENCH_DIE("bench_live: %s", ctr_error_detail());
    const double now = ctr__now_s();
    if (st.updated > 0 && steps < count) {
      tm[0][steps] = st.read_s;
      tm[1][steps] = st.filter_s;
      tm[2][steps] = st.backproject_s;
      tm[3][steps] = st.accumulate_s;
      tm[4][steps] = now - t_step;
    }
    if (st.accumulate_kernels_s > 0 && ndev < count) {
      tm[7][ndev] = st.accumulate_upload_s;
      tm[8][ndev++] = st.accumulate_kernels_s;
    }
    /* a send stamped after its frame was taken (the stamp follows the send)
     * waited less than the stamping: 0 */
    for (; done < st.projections; done++)
      latency[done] = g_send.m->t_sent[done] > 0 ? now - g_send.m->t_sent[done] : 0.0;
    const double behind = (double)(atomic_load(&g_send.m->sent) - st.projections) / rate;
    if (behind > lag_max) lag_max = behind;
    steps += st.updated > 0;
    if (st.preview_writes > writes && writes < count) tm[5][writes++] = st.write_s;
    /* the previews queued as `ctrecon fbp --follow --live-preview` queues them */
    if (every > 0 && st.projections > at_written && queued < count &&
        (st.projections - at_written >= every || ctr__now_s() - t_written >= 1.0 || st.ended)) {
      const double tw = ctr__now_s();
      if (ctr_fbp_live_queue_preview(l, prefix, queued == 0, 1) != CTR_OK)
        BENCH_DIE("bench_live: %s", ctr_error_detail());
      t_written = ctr__now_s();
      tm[6][queued++] = t_written - tw;
      at_written = st.projections;
    }
  }
  const double t_loop = ctr__now_s();
  int child_status = 0;
  if (in_process)
    pthread_join(th, NULL);
  else if (waitpid(child, &child_status, 0) != child || !WIFEXITED(child_status) ||
           WEXITSTATUS(child_status) != 0)
    BENCH_DIE("bench_live: the sender process failed (status %d)", child_status);
  if (st.ended != 1 || atomic_load(&g_send.m->st) != CTR_OK)
    BENCH_DIE("bench_live: the scan ended with %lld of %lld projections", (long long)st.projections,
              (long long)count);
  const double t_last = g_send.m->t_sent[count - 1], t_joined = ctr__now_s();
  ctr_fbp_stream_report rep = CTR_FBP_STREAM_REPORT_INIT;
  /* the volume while the writer thread writes the last preview, as `ctrecon fbp --follow`
     runs them */
  if (ctr_fbp_live_finish(l, out, CTR_FORMAT_RAW, &rep) != CTR_OK)
    BENCH_DIE("bench_live: %s", ctr_error_detail());
  const double t_volume = ctr__now_s();
  /* the last preview written completely, then the writer's counts (a step after the end
     takes nothing; its other fields are the finished run's, so only the writer's kept) */
  ctr_live_state sw = CTR_LIVE_STATE_INIT;
  if (ctr_fbp_live_flush_preview(l) != CTR_OK || ctr_fbp_live_step(l, 0, &sw) != CTR_OK)
    BENCH_DIE("bench_live: %s", ctr_error_detail());
  if (sw.preview_writes > writes && writes < count + 1) tm[5][writes++] = sw.write_s;
  st.preview_writes = sw.preview_writes;
  st.preview_superseded = sw.preview_superseded;
  const double t_flushed = ctr__now_s();
  qsort(latency, (size_t)count, sizeof(double), cmp_double);
  char date[40];
  FILE *f = json ? fopen(json, "w") : stdout;
  if (!f) BENCH_DIE("bench_live: cannot write %s", json);
  fprintf(f, "{\"benchmark\": \"live\", \"date\": \"%s\", \"revision\": \"%s\", \"small\": %d, "
          "\"source\": \"%s\", \"device\": \"%s\", \"detector\": [%lld, %lld], \"projections\": %lld, "
          "\"rate\": %g, \"out_dtype\": \"%s\", \"steps\": %lld, \"preview_rows\": %lld, "
          "\"accumulate\": \"%s\", \"accumulated\": %lld,\n"
          " \"preview_latency_s\": {\"median\": %.4f, \"p95\": %.4f, \"max\": %.4f},\n"
          " \"lag_s_max\": %.4f, \"last_to_volume_s\": %.3f, \"final_seconds_total\": %.3f,\n",
          bench_date(date, sizeof date), bench_revision(), small, source,
          ctr_context_get_device(ctx) == CTR_DEVICE_CUDA ? "cuda" : "cpu", (long long)rep.nx,
          (long long)rep.nslices, (long long)count, rate, dtype, (long long)steps,
          (long long)st.npreview, acc, (long long)st.accumulated, latency[count / 2], latency[(int64_t)(0.95 * (double)(count - 1))],
          latency[count - 1], lag_max, t_volume - t_last, rep.seconds_total);
  fprintf(f, " \"after_last_s\": {\"steps_done\": %.3f, \"previews_flushed\": %.3f, "
          "\"sender_joined\": %.3f, \"volume_written\": %.3f},\n \"final_s\": {\"setup\": %.3f, "
          "\"read\": %.3f, \"compute\": %.3f, \"write\": %.3f, \"total\": %.3f},\n",
          t_loop - t_last, t_flushed - t_last, t_joined - t_last, t_volume - t_last,
          rep.seconds_setup, rep.seconds_read, rep.seconds_compute, rep.seconds_write,
          rep.seconds_total);
  fprintf(f, " \"step_s\": {");
  static const char *const names[5] = {"read", "filter", "backproject", "accumulate", "step"};
  for (int k = 0; k < 5; k++) print_stat(f, names[k], tm[k], steps < count ? steps : count, ", ");
  print_stat(f, "queue", tm[6], queued, ", ");
  print_stat(f, "write", tm[5], writes, ", ");
  print_stat(f, "sum_upload_gpu", tm[7], ndev, ", ");
  print_stat(f, "sum_kernels_gpu", tm[8], ndev, "}, ");
  fprintf(f, "\"sender\": \"%s\", ", sender_kind);
  fprintf(f, "\"preview_writes\": %lld, \"preview_superseded\": %lld, \"preview_queued\": "
          "%lld, \"preview_every\": %lld,\n \"targets\": {\"preview_latency_s\": 0.5, "
          "\"lag_s\": 1.0, \"last_to_volume_s\": 15.0}}\n",
          (long long)st.preview_writes, (long long)st.preview_superseded, (long long)queued,
          (long long)every);
  if (json) fclose(f);
  for (int k = 0; k < 9; k++) free(tm[k]);
  ctr_fbp_live_free(l);
  ctr_source_close(src);
  ctr_context_free(ctx);
  free(latency);
  free(theta);
  munmap(g_send.m, g_send.map_bytes);
  unlink(map_path);
  unlink(out);
  return 0;
}

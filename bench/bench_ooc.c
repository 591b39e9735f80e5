/* Out-of-core FDK benchmark (issue 4; Lu et al. 2016, Tables 3-4, "large dataset"):
 * N^3 volume from V projections of D^2 pixels, file to file through the
 * streamed pipeline, with the per-step busy times; the disk floor of such a
 * run; and the same pipeline between pinned arrays in memory.
 *
 *   bench_ooc gen  --dir DIR [--n N --views V --det D] [--u16]
 *       writes DIR/proj.raw (float32, or uint16 x 1000 with --u16) and
 *       DIR/geom.json. The projections are the Shepp-Logan head's exact line
 *       integrals on a detector of D/4 pixels, upsampled bilinearly to D
 *       (the benchmark times the pipeline; the content only has to be a
 *       realistic CT).
 *   bench_ooc floor --in FILE --out FILE --out-bytes SIZE [--read-bytes SIZE]
 *       [--sequential] [--name NAME] [--json FILE]
 *       the disk floor (issue 26): FILE is read while OUT-BYTES are written to
 *       OUT, both at once on two threads, direct I/O, 1 GiB requests, the
 *       write ended by fsync; the floor is the wall time until both finish
 *       ("floor_seconds" on stdout). --sequential reads, then writes (the
 *       rates each way alone). OUT is deleted at the end; the run refuses to
 *       start without OUT-BYTES + 1 GiB free.
 *   bench_ooc run  --dir DIR --name NAME [--u16] [--gpu-mem SIZE] [--floor SECONDS]
 *       [--read-rate B/s --write-rate B/s] [--json FILE]
 *       DIR/proj.raw -> DIR/vol.nrrd (uint16 with --u16), deleted afterwards.
 *       --floor: the measured floor (bench_ooc floor), reported with the ratio;
 *       --read-rate/--write-rate: sequential rates, for the older "read time
 *       + write time" figure, kept as extra fields.
 *   bench_ooc memory [--n 1024 --views 1200 --det 1024] [--repeats 3] [--json FILE]
 *       pinned arrays in memory: ctr_fdk_stream_memory, wall time with set-up.
 *   Every mode that reconstructs: --gpus N (GPUs 0 .. N-1; 0, the default:
 *   every visible one), --split auto|volume|projections, --workers W (0: one
 *   a GPU; --gpus 1 --workers 2: two workers sharing one GPU). */
#include "bench_common.h"
#include "ctrecon.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DIE(...)                                      \
  do {                                                \
    fprintf(stderr, "bench_ooc: " __VA_ARGS__);       \
    fprintf(stderr, "\n");                            \
    exit(1);                                          \
  } while (0)

typedef struct args {
  const char *mode, *dir, *name, *json, *in, *out;
  int64_t n, views, det;
  int u16, repeats, sequential;
  uint64_t gpu_mem, out_bytes, read_bytes;
  double read_rate, write_rate, floor;
} args;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static ctr_geometry *make_geometry(const args *a, int64_t det) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = p.nv = det;
  p.du = p.dv = 0.2 * (double)a->det / (double)det; /* 409.6 mm detector */
  p.nviews = a->views;
  const double voxel = 250.0 / (double)a->n;
  ctr_volume_geometry vol = {a->n, a->n, a->n, voxel, voxel, voxel, 0, 0, 0};
  ctr_geometry *g = NULL;
  if (ctr_geometry_create_circular(&p, &vol, &g)) DIE("geometry: %s", ctr_error_detail());
  return g;
}

static char *path_in(const args *a, const char *name) {
  static char buf[4][1024];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", a->dir, name);
  return b;
}

/* Bilinear upsampling of a coarse view (c x c) to d x d about the centre. */
static void upsample(const float *src, int64_t c, float *dst, int64_t d) {
  const double f = (double)c / (double)d, oc = 0.5 * (double)(c - 1), od = 0.5 * (double)(d - 1);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < d; v++) {
    double y = (v - od) * f + oc;
    y = y < 0 ? 0 : y > c - 1 ? c - 1 : y;
    const int64_t y0 = (int64_t)y < c - 1 ? (int64_t)y : c - 2;
    const double fy = y - y0;
    for (int64_t u = 0; u < d; u++) {
      double x = (u - od) * f + oc;
      x = x < 0 ? 0 : x > c - 1 ? c - 1 : x;
      const int64_t x0 = (int64_t)x < c - 1 ? (int64_t)x : c - 2;
      const double fx = x - x0;
      const float *r0 = src + y0 * c, *r1 = r0 + c;
      dst[v * d + u] = (float)((1 - fy) * ((1 - fx) * r0[x0] + fx * r0[x0 + 1]) +
                               fy * ((1 - fx) * r1[x0] + fx * r1[x0 + 1]));
    }
  }
}

static void gen(const args *a) {
  const double t0 = now_s();
  const int64_t coarse = a->det / 4;
  ctr_geometry *g = make_geometry(a, a->det), *gc = make_geometry(a, coarse);
  if (ctr_geometry_save_json(g, path_in(a, "geom.json"), 1)) DIE("%s", ctr_error_detail());
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(120.0, 0.02, &ph)) DIE("%s", ctr_error_detail());
  const int64_t cpx = coarse * coarse, px = a->det * a->det;
  float *cproj = malloc(sizeof(float) * (size_t)(cpx * a->views));
  const int64_t cd[3] = {coarse, coarse, a->views};
  ctr_array ca = ctr_array_make(cproj, CTR_DTYPE_FLOAT32, 3, cd);
  if (!cproj || ctr_phantom_project(NULL, ph, gc, 1, &ca)) DIE("project: %s", ctr_error_detail());
  const double t1 = now_s();
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, a->det, a->det, a->views, a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32,
                         {0, 0, 0}, {0, 0, 0}};
  ctr_stack_writer *w = NULL;
  if (ctr_stack_create(path_in(a, "proj.raw"), CTR_FORMAT_RAW, &info, 1, &w))
    DIE("%s", ctr_error_detail());
  const int64_t batch = 16;
  void *buf = NULL;
  if (posix_memalign(&buf, 4096, sizeof(float) * (size_t)(px * batch))) DIE("out of memory");
  float *fb = buf;
  void *buf16 = NULL;
  if (posix_memalign(&buf16, 4096, sizeof(uint16_t) * (size_t)(px * batch))) DIE("out of memory");
  uint16_t *o16 = buf16;
  for (int64_t v0 = 0; v0 < a->views; v0 += batch) {
    const int64_t n = a->views - v0 < batch ? a->views - v0 : batch;
    for (int64_t k = 0; k < n; k++) upsample(cproj + (v0 + k) * cpx, coarse, fb + k * px, a->det);
    if (a->u16) { /* x 1000 */
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n * px; i++) o16[i] = (uint16_t)lrintf(fminf(65535.f, fmaxf(0.f, fb[i] * 1000.f)));
      if (ctr_stack_write(w, v0, n, CTR_DTYPE_UINT16, o16)) DIE("%s", ctr_error_detail());
    } else if (ctr_stack_write(w, v0, n, CTR_DTYPE_FLOAT32, fb)) {
      DIE("%s", ctr_error_detail());
    }
  }
  if (ctr_stack_commit(w)) DIE("%s", ctr_error_detail());
  /* Nothing of the input stays in the page cache (direct I/O already). */
  int fd = open(path_in(a, "proj.raw"), O_RDONLY);
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  printf("generated %s: %lld views of %lld^2 %s in %.1f s (projection %.1f s)\n",
         path_in(a, "proj.raw"), (long long)a->views, (long long)a->det,
         a->u16 ? "uint16" : "float32", now_s() - t0, t1 - t0);
  free(buf);
  free(buf16);
  free(cproj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_geometry_free(gc);
}

static int on_progress(void *user, const char *stage, double f) {
  (void)user, (void)stage, (void)f;
  return 0;
}

/* --gpus N: the context's GPUs are 0 .. N-1 (0: every visible one); --split;
 * --workers W (0: one a GPU; 2 on one GPU: the scheduler's overhead). */
static int g_gpus, g_workers;
static ctr_fdk_split g_split = CTR_FDK_SPLIT_AUTO;

static ctr_context *gpu_context(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = getenv("BENCH_CPU") ? CTR_DEVICE_CPU : CTR_DEVICE_CUDA; /* BENCH_CPU=1: smoke test */
  int devices[64];
  for (int i = 0; i < g_gpus && i < 64; i++) devices[i] = i;
  co.ndevices = g_gpus;
  co.devices = g_gpus ? devices : NULL;
  co.progress = on_progress;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) DIE("%s", ctr_error_detail());
  return ctx;
}

/* "workers": each worker's busy times of the last run (Okitsu et al. 2010,
 * Fig. 4: the per-GPU breakdown). */
static void json_workers(FILE *f, const ctr_fdk_stream_report *rep) {
  fprintf(f, "\"workers\": [");
  for (int w = 0; w < rep->workers && w < CTR_MAX_WORKERS; w++) {
    const ctr_fdk_stream_timings *t = &rep->worker_timings[w];
    fprintf(f, "%s{\"device\": %d, \"upload\": %.4f, \"filter\": %.4f, \"store\": %.4f, "
            "\"reload\": %.4f, \"backproject\": %.4f, \"download\": %.4f, \"reduce\": %.4f, "
            "\"wait\": %.4f}", w ? ", " : "", rep->worker_device[w], t->upload, t->filter, t->store,
            t->reload, t->backproject, t->download, t->reduce, t->wait);
  }
  fprintf(f, "]");
}

static FILE *open_json(const args *a, const char *command) {
  if (!a->json) return NULL;
  FILE *f = fopen(a->json, "w");
  if (!f) DIE("cannot write %s", a->json);
  ctr_device_info info = CTR_DEVICE_INFO_INIT;
  char date[64];
  ctr_cuda_get_device_info(0, &info);
  fprintf(f, "{\"gpu\": \"%s\", \"date\": \"%s\", \"revision\": \"%s\", \"command\": \"%s\",\n"
             " \"cases\": [\n", info.name, bench_date(date, sizeof date), bench_revision(), command);
  return f;
}

static void run(const args *a) {
  ctr_geometry *g = NULL;
  if (ctr_geometry_load_json(path_in(a, "geom.json"), &g)) DIE("%s", ctr_error_detail());
  int64_t nu, nv;
  double du, dv;
  ctr_geometry_get_detector(g, &nu, &nv, &du, &dv);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g);
  ctr_stack_info hint = {CTR_STACK_INFO_VERSION, nu, nv, ctr_geometry_get_view_count(g), a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32,
                         {0, 0, 0}, {0, 0, 0}};
  ctr_context *ctx = gpu_context();
  ctr_stack_reader *r = NULL;
  if (ctr_stack_open(path_in(a, "proj.raw"), CTR_FORMAT_RAW, &hint, 0, &r)) DIE("%s", ctr_error_detail());
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.gpu_budget = a->gpu_mem;
  so.out_dtype = a->u16 ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32;
  so.input_scale = a->u16 ? 1000.0 : 1.0;
  so.out_scale = 1000.0;
  so.split = g_split;
  so.workers = g_workers;
  so.overwrite = 1; /* the volume of the last run */
  const char *out = path_in(a, "vol.nrrd");
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  const double t0 = now_s();
  if (ctr_fdk_stream(ctx, g, &so, r, out, CTR_FORMAT_NRRD, &rep)) DIE("run: %s", ctr_error_detail());
  const double wall = now_s() - t0;
  const double in_bytes = (double)(nu * nv * hint.count) * (double)ctr_dtype_size(hint.dtype);
  const double out_bytes = (double)(vol.nx * vol.ny * vol.nz) * (double)ctr_dtype_size(so.out_dtype);
  /* The floor: the disk reading this input while writing this output, both
   * at once (bench_ooc floor, measured by the caller in the same session). */
  const double floor_s = a->floor;
  /* Older figures, kept as extra fields: read time + write time at the
   * sequential rates (as if the disk could not read and write at once), and
   * the same at docs/design.md's reference rates (1.8 GB/s read, 1.4 GB/s write). */
  const double sum_s = a->read_rate > 0 && a->write_rate > 0
                           ? in_bytes / a->read_rate + out_bytes / a->write_rate : 0;
  const double floor_ref = in_bytes / 1.8e9 + out_bytes / 1.4e9;
  char plan[512];
  ctr_fdk_plan_describe(&rep.plan, plan, sizeof plan);
  const ctr_fdk_stream_timings *t = &rep.timings;
  const double gups = (double)hint.count * (double)(vol.nx * vol.ny * vol.nz) / t->backproject / 1e9;
  printf("%s: %s\n  wall %.2f s, disk floor (concurrent read + write) %.2f s (%.3fx); "
         "read time + write time at the sequential rates %.2f s (%.3fx), at 1.8/1.4 GB/s %.2f s "
         "(%.3fx); values %.4g .. %.4g\n", a->name, plan, wall, floor_s,
         floor_s > 0 ? wall / floor_s : 0, sum_s, sum_s > 0 ? wall / sum_s : 0, floor_ref,
         wall / floor_ref, rep.min, rep.max);
  printf("  busy s: read %.2f upload %.2f filter %.2f store %.2f reload %.2f backproject %.2f "
         "(%.0f GUPS) download %.2f write %.2f setup %.2f total %.2f\n",
         t->read, t->upload, t->filter, t->store, t->reload, t->backproject, gups, t->download,
         t->write, t->setup, t->total);
  FILE *f = open_json(a, "bench_ooc run");
  if (f) {
    fprintf(f,
            "  {\"name\": \"%s\", \"seconds\": %.3f, \"floor_seconds\": %.3f, \"ratio_to_floor\": %.4f,\n"
            "   \"floor_method\": \"concurrent read of the input and write of an output-sized file, direct "
            "I/O, 1 GiB requests, wall time until both finish (bench_ooc floor)\",\n"
            "   \"sum_sequential_seconds\": %.3f, \"ratio_to_sum_sequential\": %.4f,\n"
            "   \"read_rate_sequential\": %.0f, \"write_rate_sequential\": %.0f,\n"
            "   \"sum_reference_rates_seconds\": %.3f, \"ratio_to_sum_reference_rates\": %.4f,\n"
            "   \"n\": %lld, \"views\": %lld, \"det\": %lld, \"input_dtype\": \"%s\", \"output_dtype\": \"%s\",\n"
            "   \"input_bytes\": %.0f, \"output_bytes\": %.0f,\n"
            "   \"gpu_budget\": %llu, \"plan\": \"%s\", \"nslabs\": %lld, \"slab_slices\": %lld,\n"
            "   \"views_per_batch\": %lld, \"store\": \"%s\", \"pair\": %d, \"gups\": %.1f,\n"
            "   \"busy\": {\"read\": %.3f, \"upload\": %.3f, \"filter\": %.3f, \"store\": %.3f, "
            "\"reload\": %.3f, \"backproject\": %.3f, \"download\": %.3f, \"write\": %.3f, "
            "\"setup\": %.3f, \"total\": %.3f},\n   \"gpus\": %d, \"worker_count\": %d, \"split\": \"%s\", ",
            a->name, wall, floor_s, floor_s > 0 ? wall / floor_s : 0, sum_s,
            sum_s > 0 ? wall / sum_s : 0, a->read_rate, a->write_rate, floor_ref, wall / floor_ref,
            (long long)vol.nx, (long long)hint.count, (long long)nu, ctr_dtype_name(hint.dtype),
            ctr_dtype_name(so.out_dtype), in_bytes, out_bytes, (unsigned long long)a->gpu_mem, plan,
            (long long)rep.plan.nslabs, (long long)rep.plan.slab_slices,
            (long long)rep.plan.views_per_batch, ctr_fdk_store_name(rep.plan.store), rep.plan.pair, gups,
            t->read, t->upload, t->filter, t->store, t->reload, t->backproject, t->download, t->write,
            t->setup, t->total, ctr_context_get_device_count(ctx), rep.workers,
            ctr_fdk_split_name(rep.plan.split));
    json_workers(f, &rep);
    fprintf(f, "}\n ]}\n");
    fclose(f);
  }
  unlink(out);
  ctr_stack_close(r);
  ctr_context_free(ctx);
  ctr_geometry_free(g);
}

/* ---- the disk floor (issue 26) ---------------------------------------- */

#define FLOOR_REQUEST ((size_t)1 << 30) /* 1 GiB, the pipeline's request size */
#define FLOOR_ALIGN ((uint64_t)4096)

typedef struct io_job {
  const char *path;
  uint64_t bytes;  /* read: at most this many (0 = the whole file); write: exactly */
  void *buf;       /* FLOOR_REQUEST bytes, 4096-aligned */
  double t0, seconds; /* common start; this job's end - t0 */
  uint64_t done;
  char error[256];
} io_job;

static void *read_job(void *p) {
  io_job *j = p;
  const int fd = open(j->path, O_RDONLY | O_DIRECT);
  if (fd < 0) {
    snprintf(j->error, sizeof j->error, "cannot open %s for direct reading", j->path);
    return NULL;
  }
  const uint64_t limit = j->bytes ? j->bytes & ~(FLOOR_ALIGN - 1) : UINT64_MAX;
  uint64_t off = 0;
  while (off < limit) {
    const size_t want = limit - off < FLOOR_REQUEST ? (size_t)(limit - off) : FLOOR_REQUEST;
    const ssize_t n = pread(fd, j->buf, want, (off_t)off);
    if (n < 0) {
      snprintf(j->error, sizeof j->error, "read of %s failed at byte %llu", j->path, (unsigned long long)off);
      break;
    }
    off += (uint64_t)n;
    if ((size_t)n < want) break; /* end of file */
  }
  close(fd);
  j->done = off;
  j->seconds = now_s() - j->t0;
  return NULL;
}

static void *write_job(void *p) {
  io_job *j = p;
  const uint64_t direct = j->bytes & ~(FLOOR_ALIGN - 1);
  int fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) {
    snprintf(j->error, sizeof j->error, "cannot create %s for direct writing", j->path);
    return NULL;
  }
  uint64_t off = 0;
  while (off < direct) {
    const size_t want = direct - off < FLOOR_REQUEST ? (size_t)(direct - off) : FLOOR_REQUEST;
    const ssize_t n = pwrite(fd, j->buf, want, (off_t)off);
    if (n <= 0) {
      snprintf(j->error, sizeof j->error, "write to %s failed at byte %llu", j->path, (unsigned long long)off);
      break;
    }
    off += (uint64_t)n;
  }
  if (!j->error[0] && off < j->bytes) { /* a tail below the direct-I/O block size */
    close(fd);
    fd = open(j->path, O_WRONLY);
    if (fd < 0 || pwrite(fd, j->buf, (size_t)(j->bytes - off), (off_t)off) != (ssize_t)(j->bytes - off))
      snprintf(j->error, sizeof j->error, "tail write to %s failed", j->path);
    else
      off = j->bytes;
  }
  if (fd >= 0) {
    if (fsync(fd) != 0 && !j->error[0]) snprintf(j->error, sizeof j->error, "fsync of %s failed", j->path);
    close(fd);
  }
  j->done = off;
  j->seconds = now_s() - j->t0;
  return NULL;
}

static void floor_measure(const args *a) {
  if (!a->in || !a->out || !a->out_bytes) DIE("floor needs --in FILE --out FILE --out-bytes SIZE");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", a->out);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  struct statvfs fs;
  if (statvfs(dir, &fs) != 0) DIE("cannot stat the file system of %s", a->out);
  const uint64_t avail = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
  if (avail < a->out_bytes + ((uint64_t)1 << 30))
    DIE("%s has %.1f GB free; the floor writes %.1f GB (+ 1 GiB margin): not started", dir,
        (double)avail / 1e9, (double)a->out_bytes / 1e9);
  void *rbuf = NULL, *wbuf = NULL;
  if (posix_memalign(&rbuf, 4096, FLOOR_REQUEST) || posix_memalign(&wbuf, 4096, FLOOR_REQUEST))
    DIE("out of memory (two 1 GiB buffers)");
  memset(rbuf, 0, FLOOR_REQUEST);
  for (size_t i = 0; i < FLOOR_REQUEST; i++) ((unsigned char *)wbuf)[i] = (unsigned char)(i * 2654435761u >> 24);
  io_job rj = {a->in, a->read_bytes, rbuf, 0, 0, 0, ""}, wj = {a->out, a->out_bytes, wbuf, 0, 0, 0, ""};
  double wall;
  if (a->sequential) { /* each alone, each timed from its own start */
    rj.t0 = now_s();
    read_job(&rj);
    wj.t0 = now_s();
    write_job(&wj);
    wall = rj.seconds + wj.seconds;
  } else {
    pthread_t tr, tw;
    rj.t0 = wj.t0 = now_s();
    if (pthread_create(&tr, NULL, read_job, &rj) != 0) DIE("cannot start the reader thread");
    if (pthread_create(&tw, NULL, write_job, &wj) != 0) DIE("cannot start the writer thread");
    pthread_join(tr, NULL);
    pthread_join(tw, NULL);
    wall = now_s() - rj.t0;
  }
  unlink(a->out);
  free(rbuf);
  free(wbuf);
  if (rj.error[0]) DIE("%s", rj.error);
  if (wj.error[0]) DIE("%s", wj.error);
  const double rr = (double)rj.done / rj.seconds, wr = (double)wj.done / wj.seconds;
  if (a->sequential)
    printf("%s: sequential, direct I/O, 1 GiB requests: read %.2f GB in %.2f s (%.3f GB/s), then write "
           "%.2f GB in %.2f s (%.3f GB/s)\nread_rate %.0f\nwrite_rate %.0f\n", a->name,
           (double)rj.done / 1e9, rj.seconds, rr / 1e9, (double)wj.done / 1e9, wj.seconds, wr / 1e9, rr, wr);
  else
    printf("%s: read %.2f GB of %s while writing %.2f GB, direct I/O, 1 GiB requests: read done at "
           "%.2f s (%.3f GB/s), write + fsync at %.2f s (%.3f GB/s)\nfloor_seconds %.3f\n", a->name,
           (double)rj.done / 1e9, a->in, (double)wj.done / 1e9, rj.seconds, rr / 1e9, wj.seconds,
           wr / 1e9, wall);
  FILE *f = open_json(a, a->sequential ? "bench_ooc floor --sequential" : "bench_ooc floor");
  if (f) {
    fprintf(f,
            "  {\"name\": \"%s\", \"mode\": \"%s\", \"seconds\": %.3f, \"read_bytes\": %llu, "
            "\"write_bytes\": %llu,\n   \"read_seconds\": %.3f, \"write_seconds\": %.3f, \"read_rate\": %.0f, "
            "\"write_rate\": %.0f, \"request_bytes\": %zu, \"direct_io\": true, \"fsync\": true}\n ]}\n",
            a->name, a->sequential ? "sequential" : "concurrent", wall, (unsigned long long)rj.done,
            (unsigned long long)wj.done, rj.seconds, wj.seconds, rr, wr, FLOOR_REQUEST);
    fclose(f);
  }
}

static void memory(const args *a) {
#if CTR_HAVE_CUDA
  ctr_geometry *g = make_geometry(a, a->det);
  const int64_t coarse = a->det / 4, px = a->det * a->det, cpx = coarse * coarse;
  ctr_geometry *gc = make_geometry(a, coarse);
  ctr_phantom *ph = NULL;
  if (ctr_phantom_shepp_logan(120.0, 0.02, &ph)) DIE("%s", ctr_error_detail());
  float *cproj = malloc(sizeof(float) * (size_t)(cpx * a->views));
  const int64_t cd[3] = {coarse, coarse, a->views};
  ctr_array ca = ctr_array_make(cproj, CTR_DTYPE_FLOAT32, 3, cd);
  if (!cproj || ctr_phantom_project(NULL, ph, gc, 1, &ca)) DIE("project: %s", ctr_error_detail());
  float *proj = ctr_host_alloc(sizeof(float) * (size_t)(px * a->views));
  float *vol = ctr_host_alloc(sizeof(float) * (size_t)(a->n * a->n * a->n));
  if (!proj || !vol) DIE("out of pinned memory");
  for (int64_t v = 0; v < a->views; v++) upsample(cproj + v * cpx, coarse, proj + v * px, a->det);
  const int64_t pd[3] = {a->det, a->det, a->views}, vd[3] = {a->n, a->n, a->n};
  ctr_array pa = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, pd);
  ctr_array va = ctr_array_make(vol, CTR_DTYPE_FLOAT32, 3, vd);
  ctr_context *ctx = gpu_context();
  ctr_fdk_stream_options so = CTR_FDK_STREAM_OPTIONS_INIT;
  so.split = g_split;
  so.workers = g_workers;
  const int reps = a->repeats;
  double bp[16], runs[16], cold = 0;
  ctr_fdk_stream_report rep = CTR_FDK_STREAM_REPORT_INIT;
  for (int i = -1; i < reps; i++) { /* i = -1 warms up */
    double t0 = now_s();
    if (ctr_fdk_stream_memory(ctx, g, &so, &pa, &va, &rep)) DIE("stream: %s", ctr_error_detail());
    const double s = now_s() - t0;
    if (i < 0) cold = s; /* the context's first run: its buffers allocated, peer access enabled */
    if (i >= 0) {
      runs[i] = s;
      bp[i] = rep.timings.backproject;
    }
  }
  const double ms = bench_median(runs, reps), bp_med = bench_median(bp, reps);
  char plan[512];
  ctr_fdk_plan_describe(&rep.plan, plan, sizeof plan);
  printf("memory %lld^3 from %lld x %lld^2 on %d worker(s), %s split: %.3f s (first run %.3f s) (%s), "
         "backprojection %.3f s; model: volume %.3f s, projections %.3f s\n", (long long)a->n,
         (long long)a->views, (long long)a->det, rep.workers, ctr_fdk_split_name(rep.plan.split), ms,
         cold, plan, bp_med,
         rep.plan.seconds[CTR_FDK_SPLIT_VOLUME], rep.plan.seconds[CTR_FDK_SPLIT_PROJECTIONS]);
  FILE *f = open_json(a, "bench_ooc memory");
  if (f) {
    fprintf(f,
            "  {\"name\": \"memory-%lld\", \"seconds\": %.4f, "
            "\"backproject_seconds\": %.4f, \"n\": %lld, \"views\": %lld, "
            "\"det\": %lld, \"repeats\": %d, \"plan\": \"%s\", \"gpus\": %d, \"worker_count\": %d, \"split\": \"%s\", "
            "\"split_requested\": \"%s\", \"workers_requested\": %d, \"model_seconds\": {\"volume\": %.4f, "
            "\"projections\": %.4f}, ",
            (long long)a->n, ms, bp_med, (long long)a->n,
            (long long)a->views, (long long)a->det, reps, plan, ctr_context_get_device_count(ctx),
            rep.workers,
            ctr_fdk_split_name(rep.plan.split), ctr_fdk_split_name(g_split), g_workers,
            rep.plan.seconds[CTR_FDK_SPLIT_VOLUME], rep.plan.seconds[CTR_FDK_SPLIT_PROJECTIONS]);
    json_workers(f, &rep);
    fprintf(f, ", \"read\": %.4f, \"write\": %.4f, \"setup\": %.4f, \"first_run_seconds\": %.4f, ",
            rep.timings.read, rep.timings.write, rep.timings.setup, cold);
    bench_json_runs(f, runs, reps);
    fprintf(f, "}\n ]}\n");
    fclose(f);
  }
  ctr_context_free(ctx);
  ctr_host_free(proj);
  ctr_host_free(vol);
  free(cproj);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  ctr_geometry_free(gc);
#else
  (void)a;
  DIE("built without CUDA");
#endif
}

int main(int argc, char **argv) {
  args a = {.dir = ".", .name = "run", .n = 2048, .views = 1200, .det = 2048, .repeats = 3};
  if (argc < 2) DIE("usage: bench_ooc gen|floor|run|memory [options] (see the source's header)");
  a.mode = argv[1];
  int det_given = 0;
  for (int i = 2; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--u16")) { a.u16 = 1; continue; }
    if (!strcmp(k, "--sequential")) { a.sequential = 1; continue; }
    if (!v) DIE("%s needs a value", k);
    i++;
    if (!strcmp(k, "--dir")) a.dir = v;
    else if (!strcmp(k, "--name")) a.name = v;
    else if (!strcmp(k, "--json")) a.json = v;
    else if (!strcmp(k, "--in")) a.in = v;
    else if (!strcmp(k, "--out")) a.out = v;
    else if (!strcmp(k, "--n")) a.n = atoll(v);
    else if (!strcmp(k, "--views")) a.views = atoll(v);
    else if (!strcmp(k, "--det")) { a.det = atoll(v); det_given = 1; }
    else if (!strcmp(k, "--repeats")) a.repeats = atoi(v);
    else if (!strcmp(k, "--gpus")) g_gpus = atoi(v);
    else if (!strcmp(k, "--workers")) g_workers = atoi(v);
    else if (!strcmp(k, "--split")) { if (ctr_fdk_split_parse(v, &g_split)) DIE("%s", ctr_error_detail()); }
    else if (!strcmp(k, "--read-rate")) a.read_rate = atof(v);
    else if (!strcmp(k, "--write-rate")) a.write_rate = atof(v);
    else if (!strcmp(k, "--floor")) a.floor = atof(v);
    else if (!strcmp(k, "--gpu-mem")) { if (ctr_size_parse(v, &a.gpu_mem)) DIE("%s", ctr_error_detail()); }
    else if (!strcmp(k, "--out-bytes")) { if (ctr_size_parse(v, &a.out_bytes)) DIE("%s", ctr_error_detail()); }
    else if (!strcmp(k, "--read-bytes")) { if (ctr_size_parse(v, &a.read_bytes)) DIE("%s", ctr_error_detail()); }
    else DIE("unknown option %s", k);
  }
  if (!det_given) a.det = a.n;
  if (a.repeats < 1 || a.repeats > 16) a.repeats = 3;
  if (!strcmp(a.mode, "gen")) gen(&a);
  else if (!strcmp(a.mode, "floor")) floor_measure(&a);
  else if (!strcmp(a.mode, "run")) run(&a);
  else if (!strcmp(a.mode, "memory")) memory(&a);
  else DIE("unknown mode %s", a.mode);
  return 0;
}

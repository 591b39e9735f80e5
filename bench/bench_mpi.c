/* The distributed FDK (docs/distributed.md, "Measured"): one streamed FDK
 * file to file timed on every rank of an MPI job, against one process with
 * the same cores, and the bytes each rank read against the ideal; and the
 * scaling model's inputs from the geometry (--model).
 *
 *   bench_mpi [--size N] [--views K] [--det D] [--device cpu|cuda] [--threads T]
 *             [--repeats R] [--dir DIR] [--name NAME] [--json FILE]
 *       run under mpirun -np R (one rank each: a cluster), or alone (one
 *       process: the plain ctr_fdk_stream). The data: an N^3 volume of
 *       250 mm from K projections of D^2 pixels over a 409.6 mm detector
 *       (SOD 1000, SDD 1500: bench_ooc's geometry), Shepp-Logan projections
 *       written once to DIR/proj_N_K_D.raw. Each repeat removes the output
 *       first; the time is the slowest rank's (from a barrier to a barrier).
 *       The bytes a rank read are /proc/self/io's rchar over the run: the
 *       input rows, the journals, nothing else; the ideal is the rows its
 *       slices project onto (an equal share each, ctr__geometry_row_band).
 *   bench_mpi --model [--rate G] [--fs B] [--link b] [--json FILE]
 *       for 4096^3 and 8192^3 (K = 0.6 N views of N^2, the same geometry)
 *       on 1, 8, 64 and 512 nodes of one rank: the fraction of the input
 *       the ranks read in all and the largest share one rank reads (from the
 *       geometry), and the time to compute (G updates/s a node; default
 *       1.0e12, an H100 on a cut volume: docs/multi-gpu.md) against the time
 *       to read and write through a file system of B bytes/s in all
 *       (default 100e9) and b per node (default 12.5e9, 100 Gbit/s).
 *
 * Built with MPI it gathers the ranks' figures with MPI itself; without,
 * only the one-process run and the model work. */
#include "bench_common.h"
#include "geometry/geometry_internal.h"

#if CTR_HAVE_MPI
#include <mpi.h>
#endif

#include <math.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct args {
  int64_t n, views, det;
  int threads, repeats, model;
  double rate, fs, link; /* --model: updates/s per node, file system B/s in all and per node */
  ctr_device_kind device;
  const char *dir, *name, *json;
} args;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* bench_ooc's geometry: SOD 1000 mm, SDD 1500 mm, a 409.6 mm detector of
 * det^2 pixels, a 250 mm volume of n^3 voxels. */
static ctr_geometry *make_geometry(int64_t n, int64_t views, int64_t det) {
  ctr_circular_params p = CTR_CIRCULAR_PARAMS_INIT;
  p.sid = 1000;
  p.sdd = 1500;
  p.nu = p.nv = det;
  p.du = p.dv = 409.6 / (double)det;
  p.nviews = views;
  const double voxel = 250.0 / (double)n;
  ctr_volume_geometry vol = {n, n, n, voxel, voxel, voxel, 0, 0, 0};
  ctr_geometry *g = NULL;
  if (ctr_geometry_create_circular(&p, &vol, &g)) BENCH_DIE("geometry: %s", ctr_error_detail());
  return g;
}

/* Rows that the equal shares of `ranks` ranks read: in all, and the most
 * one rank reads (fractions of the detector's rows). */
static void shares(const ctr_geometry *g, int ranks, double *total, double *most) {
  *total = *most = 0;
  for (int r = 0; r < ranks; r++) {
    const int64_t z0 = g->vol.nz * r / ranks, z1 = g->vol.nz * (r + 1) / ranks;
    int64_t row0 = 0, rows = 0;
    if (z1 > z0) ctr__geometry_row_band(g, z0, z1 - z0, &row0, &rows);
    const double f = (double)rows / (double)g->nv;
    *total += f;
    *most = f > *most ? f : *most;
  }
}

/* The model (docs/distributed.md, "Scaling"): per node `rate` voxel
 * updates per second; a file system of `fs` bytes per second in all and
 * `link` per node; float32 in and out. Compute and I/O overlap (the
 * streamed pipeline), so a run takes the longer of the two. */
static void model(const args *a) {
  FILE *f = a->json ? fopen(a->json, "w") : NULL;
  char date[64];
  if (f)
    fprintf(f, "{\n  \"gpu\": null,\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n  \"command\": "
            "\"bench_mpi --model --rate %g --fs %g --link %g\",\n  \"geometry\": \"SOD 1000 mm, SDD "
            "1500 mm, 409.6 mm detector, 250 mm volume, 0.6 N views of N^2\",\n  \"cases\": [\n",
            bench_date(date, sizeof date), bench_revision(), a->rate, a->fs, a->link);
  bench_json j = {f, 0};
  printf("node rate %.3g updates/s, file system %.3g B/s in all, %.3g B/s per node\n", a->rate,
         a->fs, a->link);
  printf("%6s %6s %6s %10s %10s %10s %10s %10s %10s %8s\n", "N", "views", "nodes", "read/in",
         "1 node rd", "compute s", "fs s", "link s", "total s", "bound");
  const int64_t ns[2] = {4096, 8192};
  const int ranks[4] = {1, 8, 64, 512};
  for (int i = 0; i < 2; i++) {
    const int64_t n = ns[i], k = (int64_t)(0.6 * (double)n);
    ctr_geometry *g = make_geometry(n, k, n);
    const double in = (double)k * (double)n * (double)n * 4, out = (double)n * n * n * 4;
    const double updates = (double)k * (double)n * n * n;
    for (int r = 0; r < 4; r++) {
      double total, most;
      shares(g, ranks[r], &total, &most);
      if (ranks[r] == 1) total = most = 1; /* one process reads every row */
      const double tc = updates / (a->rate * ranks[r]);
      const double tfs = (in * total + out) / a->fs;
      const double tlink = (in * most + out / ranks[r]) / a->link;
      const double tio = tfs > tlink ? tfs : tlink, t = tc > tio ? tc : tio;
      const char *bound = tc >= tio ? "compute" : tfs >= tlink ? "fs" : "link";
      printf("%6lld %6lld %6d %10.3f %10.4f %10.1f %10.1f %10.1f %10.1f %8s\n", (long long)n,
             (long long)k, ranks[r], total, most, tc, tfs, tlink, t, bound);
      bench_json_case(&j, "\"name\": \"model-%lld-%d\", \"n\": %lld, \"views\": %lld, "
                      "\"nodes\": %d, \"read_over_input\": %.4f, \"largest_node_share\": %.5f, "
                      "\"compute_s\": %.2f, \"fs_s\": %.2f, \"link_s\": %.2f, \"seconds\": %.2f, "
                      "\"bound\": \"%s\"", (long long)n, ranks[r], (long long)n, (long long)k,
                      ranks[r], total, most, tc, tfs, tlink, t, bound);
    }
    ctr_geometry_free(g);
  }
  if (f) {
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
  }
}

/* This process's CPU time (user + system), seconds. */
static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
         (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static long long rchar(void) {
  FILE *f = fopen("/proc/self/io", "r");
  long long v = -1;
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "rchar: %lld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

/* Rank 0 writes the projections once. */
static void make_input(const args *a, const ctr_geometry *g, const char *path) {
  struct stat s;
  const size_t bytes = (size_t)(g->nu * g->nv * g->nviews) * sizeof(float);
  if (stat(path, &s) == 0 && (size_t)s.st_size == bytes) return;
  float *proj = malloc(bytes);
  ctr_phantom *ph = NULL;
  ctr_context *ctx = bench_context(CTR_DEVICE_CPU, NULL, 0);
  if (!proj || !ctx || ctr_phantom_shepp_logan(110.0, 0.02, &ph))
    BENCH_DIE("projections: %s", ctr_error_detail());
  const int64_t d[3] = {g->nu, g->nv, g->nviews};
  ctr_array arr = ctr_array_make(proj, CTR_DTYPE_FLOAT32, 3, d);
  if (ctr_phantom_project(ctx, ph, g, 1, &arr)) BENCH_DIE("projections: %s", ctr_error_detail());
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(proj, 1, bytes, f) != bytes || fclose(f) || rename(tmp, path))
    BENCH_DIE("cannot write %s", path);
  free(proj);
  ctr_phantom_free(ph);
  ctr_context_free(ctx);
}

static void run(const args *a) {
  ctr_cluster *c = NULL;
  const char *launched = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE")
                                                         : getenv("PMI_SIZE");
  if (launched && ctr_cluster_create(NULL, &c)) BENCH_DIE("cluster: %s", ctr_error_detail());
  const int rank = ctr_cluster_get_rank(c), size = ctr_cluster_get_size(c);
  ctr_geometry *g = make_geometry(a->n, a->views, a->det);
  char path[4096], out[4200];
  snprintf(path, sizeof path, "%s/proj_%lld_%lld_%lld.raw", a->dir, (long long)a->n,
           (long long)a->views, (long long)a->det);
  snprintf(out, sizeof out, "%s/vol_%s.raw", a->dir, a->name);
  if (rank == 0) make_input(a, g, path);
  if (c && ctr_cluster_agree(c, CTR_OK, NULL)) BENCH_DIE("agree: %s", ctr_error_detail());
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = a->device;
  co.num_threads = a->threads;
  ctr_context *ctx = NULL;
  if (ctr_context_create(&co, &ctx)) BENCH_DIE("context: %s", ctr_error_detail());
  ctr_stack_info hint = CTR_STACK_INFO_INIT;
  hint.width = g->nu;
  hint.height = g->nv;
  hint.count = g->nviews;
  hint.dtype = CTR_DTYPE_FLOAT32;
  ctr_stack_reader *in = NULL;
  if (ctr_stack_open(path, CTR_FORMAT_RAW, &hint, 0, &in)) BENCH_DIE("%s", ctr_error_detail());
  double runs[64], cpu[64];
  long long bytes[64];
  const int repeats = a->repeats < 64 ? a->repeats : 64;
  for (int i = 0; i < repeats; i++) {
    if (rank == 0) unlink(out);
    if (c && ctr_cluster_agree(c, CTR_OK, NULL)) BENCH_DIE("agree: %s", ctr_error_detail());
    const long long b0 = rchar();
    const double t0 = now_s(), c0 = cpu_s();
    ctr_fdk_stream_options o = CTR_FDK_STREAM_OPTIONS_INIT;
    o.cluster = c;
    ctr_status st = ctr_fdk_stream(ctx, g, &o, in, out, CTR_FORMAT_RAW, NULL);
    if (c) st = ctr_cluster_agree(c, st, NULL); /* the last rank's end */
    double t = now_s() - t0, tc = cpu_s() - c0;
    bytes[i] = rchar() - b0;
    if (st != CTR_OK) BENCH_DIE("fdk: %s", ctr_error_detail());
#if CTR_HAVE_MPI
    if (c) MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (c) MPI_Allreduce(MPI_IN_PLACE, &tc, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
    runs[i] = t;
    cpu[i] = tc;
  }
  const double med = bench_median(runs, repeats), cpu_med = bench_median(cpu, repeats);
  /* the bytes every rank read in the last run, and its ideal */
  long long *all = calloc((size_t)size, sizeof *all);
  all[0] = bytes[repeats - 1];
#if CTR_HAVE_MPI
  if (c) MPI_Gather(&bytes[repeats - 1], 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
#endif
  if (rank == 0) {
    const double input = (double)(g->nu * g->nv * g->nviews) * 4.0;
    const double updates = (double)g->nviews * (double)(g->vol.nx * g->vol.ny * g->vol.nz);
    printf("case %s: %d rank(s) x %d thread(s), %s, %lld^3 from %lld x %lld^2: %.3f s median of "
           "%d, %.3f GUPS, %.3f CPU s (all ranks)\n", a->name, size, a->threads,
           a->device == CTR_DEVICE_CUDA ? "cuda" : "cpu", (long long)a->n, (long long)a->views,
           (long long)a->det, med, repeats, updates / med / 1e9, cpu_med);
    FILE *f = a->json ? fopen(a->json, "w") : NULL;
    char date[64];
    if (f) {
      fprintf(f, "{\n  \"gpu\": %s,\n  \"date\": \"%s\",\n  \"revision\": \"%s\",\n  "
              "\"command\": \"bench_mpi --size %lld --views %lld --det %lld --threads %d "
              "--repeats %d (%d ranks)\",\n  \"cases\": [\n    {\"name\": \"%s\", \"ranks\": %d, "
              "\"threads_per_rank\": %d, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"gups\": %.4f, "
              "\"volume\": [%lld, %lld, %lld], \"views\": %lld, \"detector\": [%lld, %lld], "
              "\"input_bytes\": %.0f, ",
              a->device == CTR_DEVICE_CUDA ? "\"cuda\"" : "null", bench_date(date, sizeof date),
              bench_revision(), (long long)a->n, (long long)a->views, (long long)a->det, a->threads,
              repeats, size, a->name, size, a->threads, med, cpu_med, updates / med / 1e9,
              (long long)a->n, (long long)a->n, (long long)a->n, (long long)a->views,
              (long long)a->det, (long long)a->det, input);
      bench_json_runs(f, runs, repeats);
      fprintf(f, ", \"ranks_read\": [");
    }
    for (int r = 0; r < size; r++) {
      const int64_t z0 = g->vol.nz * r / size, z1 = g->vol.nz * (r + 1) / size;
      int64_t row0 = 0, rows = 0;
      ctr__geometry_row_band(g, z0, z1 - z0, &row0, &rows);
      const double ideal = size > 1 ? (double)rows / (double)g->nv * input : input;
      printf("  rank %d: read %.1f MB, ideal %.1f MB (rows %lld..%lld of its equal share), "
             "ratio %.3f; %.3f of the input (input/ranks: %.3f)\n", r, (double)all[r] / 1e6,
             ideal / 1e6, (long long)row0, (long long)(row0 + rows - 1), (double)all[r] / ideal,
             (double)all[r] / input, 1.0 / size);
      if (f)
        fprintf(f, "%s{\"rank\": %d, \"bytes\": %lld, \"ideal_bytes\": %.0f, \"ratio\": %.4f}",
                r ? ", " : "", r, all[r], ideal, (double)all[r] / ideal);
    }
    if (f) {
      fprintf(f, "]}\n  ]\n}\n");
      fclose(f);
    }
    unlink(out);
  }
  free(all);
  ctr_stack_close(in);
  ctr_context_free(ctx);
  ctr_geometry_free(g);
  ctr_cluster_free(c);
}

int main(int argc, char **argv) {
  args a = {256, 360, 256, 0, 3, 0, 1.0e12, 100e9, 12.5e9, CTR_DEVICE_CPU, "/tmp", "run", NULL};
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--model")) {
      a.model = 1;
      continue;
    }
    if (!v) BENCH_DIE("%s needs a value", k);
    if (!strcmp(k, "--size")) a.n = atoll(v);
    else if (!strcmp(k, "--views")) a.views = atoll(v);
    else if (!strcmp(k, "--det")) a.det = atoll(v);
    else if (!strcmp(k, "--threads")) a.threads = atoi(v);
    else if (!strcmp(k, "--repeats")) a.repeats = atoi(v);
    else if (!strcmp(k, "--dir")) a.dir = v;
    else if (!strcmp(k, "--name")) a.name = v;
    else if (!strcmp(k, "--json")) a.json = v;
    else if (!strcmp(k, "--device")) a.device = !strcmp(v, "cuda") ? CTR_DEVICE_CUDA : CTR_DEVICE_CPU;
    else if (!strcmp(k, "--rate")) a.rate = atof(v);
    else if (!strcmp(k, "--fs")) a.fs = atof(v);
    else if (!strcmp(k, "--link")) a.link = atof(v);
    else BENCH_DIE("unknown option %s", k);
    i++;
  }
  if (a.model) model(&a);
  else run(&a);
  return 0;
}

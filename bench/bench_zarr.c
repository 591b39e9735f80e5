/* OME-Zarr output against the raw write rate of the same disk (issue 47's
 * targets: Zarr at >= 90 % of the raw rate, the pyramid <= 10 % extra time).
 *
 *   bench_zarr --dir DIR [--n 2048] [--slices 512] [--band 64] [--dtype uint16|float32]
 *              [--repeats 3] [--json FILE]
 *
 * A volume of n x n x slices voxels, held in memory in the file's dtype as the
 * streamed executor hands its bands over (a disc phantom's values with 1 % noise:
 * compressible as a reconstructed volume is, not as zeros are), is written band by band (--band
 * slices a call, as the streamed executor writes) through ctr_stack_create,
 * ctr_stack_write and ctr_stack_commit (temporary name, flush, rename) to
 * DIR, three ways, each --repeats times, in turn:
 *   raw           DIR/bz.raw: the raw stack (direct I/O where the file system
 *                 allows it), the disk's rate through our writer;
 *   zarr          DIR/bz.zarr: OME-Zarr v3, zstd, 64^3 chunks, the default
 *                 sharding, the 2 x 2 x 2 pyramid in the same pass;
 *   zarr-level0   the same without the pyramid (its levels cut by the writer's
 *                 test hook ctr__zarr_set_layout: level 0 only).
 * The JSON gives each median (every run beside it; the commit's flush and the bytes on disk
 * beside it), the rates in GB/s of the
 * volume's bytes in the file's dtype, zarr / raw as a rate (target >= 0.90),
 * and zarr / zarr-level0 - 1 (target <= 0.10). Outputs are deleted after each
 * run. */
#include "bench_common.h"
#include "io/io_internal.h" /* ctr__zarr_set_layout: the pyramid off */

#include <math.h>
#include <stdint.h>
#include <unistd.h>

double ctr__now_s(void);

/* Deterministic noise in [-1, 1). */
static float noise(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*s >> 11) / 4503599627370496.0 - 1.0);
}

static float *make_volume(int64_t n, int64_t nz) {
  float *v = malloc(sizeof(float) * (size_t)(n * n * nz));
  if (!v) BENCH_DIE("bench_zarr: out of memory (%lld x %lld x %lld float32)", (long long)n,
                    (long long)n, (long long)nz);
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < nz; z++) {
    uint64_t s = 0x9E3779B97F4A7C15ULL ^ (uint64_t)z;
    for (int64_t y = 0; y < n; y++)
      for (int64_t x = 0; x < n; x++) {
        const double dx = (x - 0.5 * n) / (0.45 * n), dy = (y - 0.5 * n) / (0.45 * n);
        const double r2 = dx * dx + dy * dy, inner = (dx - 0.3) * (dx - 0.3) + dy * dy;
        const float base = r2 < 1.0 ? (inner < 0.04 ? 0.9f : 0.5f) : 0.0f;
        v[(z * n + y) * n + x] = base + 0.01f * noise(&s);
      }
  }
  return v;
}

/* One write of the volume to path; returns the seconds (create to commit), the commit's
 * share (its flush: what the disk had still to take) in *commit_s. */
static double write_once(const char *path, const void *v, int64_t n, int64_t nz, int64_t band,
                         ctr_dtype dtype, double *commit_s) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = info.height = n;
  info.count = nz;
  info.dtype = dtype;
  info.spacing[0] = info.spacing[1] = info.spacing[2] = 0.1;
  sync(); /* the previous run's pages are not this one's to write back */
  const double t0 = ctr__now_s();
  ctr_stack_writer *w = NULL;
  if (ctr_stack_create(path, CTR_FORMAT_AUTO, &info, 1, &w) != CTR_OK)
    BENCH_DIE("bench_zarr: %s", ctr_error_detail());
  for (int64_t z = 0; z < nz; z += band) {
    const int64_t m = nz - z < band ? nz - z : band;
    if (ctr_stack_write(w, z, m, dtype,
                        (const char *)v + (size_t)(z * n * n) * ctr_dtype_size(dtype)) != CTR_OK)
      BENCH_DIE("bench_zarr: %s", ctr_error_detail());
  }
  const double t1 = ctr__now_s();
  if (ctr_stack_commit(w) != CTR_OK) BENCH_DIE("bench_zarr: %s", ctr_error_detail());
  const double t2 = ctr__now_s();
  *commit_s = t2 - t1;
  return t2 - t0;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *json = NULL, *dt = "uint16";
  int64_t n = 2048, nz = 512, band = 64;
  int repeats = 3;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--dir") && v) dir = argv[++i];
    else if (!strcmp(argv[i], "--json") && v) json = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && v) dt = argv[++i];
    else if (!strcmp(argv[i], "--n") && v) n = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--slices") && v) nz = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--band") && v) band = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--repeats") && v) repeats = atoi(argv[++i]);
    else
      BENCH_DIE("usage: bench_zarr --dir DIR [--n 2048] [--slices 512] [--band 64] "
                "[--dtype uint16|float32] [--repeats 3] [--json FILE]");
  }
  if (!dir || n < 1 || nz < 1 || band < 1 || repeats < 1 || repeats > 15)
    BENCH_DIE("bench_zarr: --dir DIR, and --n, --slices, --band >= 1, --repeats 1 .. 15");
  const ctr_dtype dtype = !strcmp(dt, "float32") ? CTR_DTYPE_FLOAT32 : CTR_DTYPE_UINT16;
  if (dtype == CTR_DTYPE_UINT16 && strcmp(dt, "uint16"))
    BENCH_DIE("bench_zarr: --dtype is '%s', expected uint16 or float32", dt);
  float *v = make_volume(n, nz);
  const void *data = v; /* in the file's dtype, as the streamed executor hands its bands over */
  uint16_t *u16 = NULL;
  if (dtype == CTR_DTYPE_UINT16) { /* the values a uint16 output holds: 2000 .. ~56000 */
    u16 = malloc(sizeof(uint16_t) * (size_t)(n * n * nz));
    if (!u16) BENCH_DIE("bench_zarr: out of memory");
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n * n * nz; i++) u16[i] = (uint16_t)lrintf(v[i] * 60000.0f + 2000.0f);
    data = u16;
  }
  const double bytes = (double)(n * n * nz) * (double)ctr_dtype_size(dtype);
  static const char *const names[3] = {"raw", "zarr", "zarr-level0"};
  double t[3][15], tc[3][15], disk[3] = {0, 0, 0};
  char path[3][4200];
  snprintf(path[0], sizeof path[0], "%s/bz.raw", dir);
  snprintf(path[1], sizeof path[1], "%s/bz.zarr", dir);
  snprintf(path[2], sizeof path[2], "%s/bz0.zarr", dir);
  for (int r = 0; r < repeats; r++)
    for (int k = 0; k < 3; k++) { /* in turn: a drift of the disk shares out */
      if (k == 2) ctr__zarr_set_layout(0, (int64_t)1 << 40, 0); /* level 0 only */
      t[k][r] = write_once(path[k], data, n, nz, band, dtype, &tc[k][r]);
      if (k == 2) ctr__zarr_set_layout(0, 0, 0);
      char cmd[8500];
      snprintf(cmd, sizeof cmd, "du -sb '%s'", path[k]); /* the bytes the disk took */
      FILE *du = popen(cmd, "r");
      if (!du || fscanf(du, "%lf", &disk[k]) != 1) BENCH_DIE("bench_zarr: cannot size %s", path[k]);
      pclose(du);
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", path[k]);
      if (system(cmd) != 0) BENCH_DIE("bench_zarr: cannot remove %s", path[k]);
      fprintf(stderr, "%-12s run %d: %.3f s (%.2f GB/s; commit %.3f s; %.0f bytes on disk)\n",
              names[k], r + 1, t[k][r], bytes / t[k][r] / 1e9, tc[k][r], disk[k]);
    }
  double med[3], medc[3];
  for (int k = 0; k < 3; k++) {
    med[k] = bench_median(t[k], repeats);
    medc[k] = bench_median(tc[k], repeats);
  }
  char date[40];
  FILE *f = json ? fopen(json, "w") : stdout;
  if (!f) BENCH_DIE("bench_zarr: cannot write %s", json);
  fprintf(f, "{\"benchmark\": \"zarr\", \"date\": \"%s\", \"revision\": \"%s\", \"dir\": \"%s\", "
          "\"volume\": [%lld, %lld, %lld], \"dtype\": \"%s\", \"band\": %lld, \"bytes\": %.0f,\n"
          " \"cases\": [\n", bench_date(date, sizeof date), bench_revision(), dir, (long long)n,
          (long long)n, (long long)nz, ctr_dtype_name(dtype), (long long)band, bytes);
  for (int k = 0; k < 3; k++) {
    fprintf(f, "  {\"name\": \"%s\", \"seconds\": %.4f, \"gb_per_s\": %.3f, \"commit_s\": %.4f, "
            "\"bytes_on_disk\": %.0f, \"runs\": [", names[k], med[k], bytes / med[k] / 1e9,
            medc[k], disk[k]);
    for (int r = 0; r < repeats; r++) fprintf(f, "%s%.4f", r ? ", " : "", t[k][r]);
    fprintf(f, "]}%s\n", k < 2 ? "," : "");
  }
  fprintf(f, " ],\n \"zarr_rate_of_raw\": %.4f, \"pyramid_extra\": %.4f,\n"
          " \"targets\": {\"zarr_rate_of_raw\": 0.90, \"pyramid_extra\": 0.10}}\n",
          med[0] / med[1], med[1] / med[2] - 1.0);
  if (json) fclose(f);
  free(v);
  free(u16);
  return 0;
}

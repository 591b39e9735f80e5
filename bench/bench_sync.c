/* The synchrotron pipeline's benchmark data (issue 24; scripts/gpu-check.sh,
 * stage sync): a parallel-beam scan as a DXchange-style HDF5 file of uint16
 * projections, written fast from closed-form line integrals of discs (a
 * cylinder phantom whose discs' radii change along z), with its flat and
 * dark fields and angles:
 *
 *   bench_sync gen --dir DIR [--n 2048] [--angles 2048] [--rows N]
 *
 * writes DIR/scan.h5:/exchange/data (angles x rows x n uint16, one chunk per
 * projection, unfiltered), DIR/flat.h5:/data, DIR/dark.h5:/data (2 images
 * each, float32) and DIR/angles.txt (degrees, 0 .. 180). The axis is at
 * (n - 1) / 2. Timings of the reconstruction are the CLI's (the stage runs
 * `ctrecon fbp` on these files). */
#include <ctrecon.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct disc {
  double x, y, r0, r1, mu; /* centre (bins), radius at the first and last row, 1/bin */
} disc;

static const disc g_discs[] = {
    {0.0, 0.0, 0.46, 0.40, 0.002},   {0.15, 0.1, 0.10, 0.14, 0.004},
    {-0.2, -0.12, 0.08, 0.05, 0.006}, {0.05, -0.25, 0.05, 0.07, -0.002},
    {-0.1, 0.25, 0.03, 0.03, 0.01},
};

int main(int argc, char **argv) {
  const char *dir = NULL;
  int64_t n = 2048, na = 2048, rows = 0;
  if (argc < 2 || strcmp(argv[1], "gen")) {
    fprintf(stderr, "usage: bench_sync gen --dir DIR [--n N] [--angles A] [--rows R]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!strcmp(argv[i], "--n")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--angles")) na = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
    else {
      fprintf(stderr, "bench_sync: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!dir || n < 8 || na < 2) return 2;
  if (!rows) rows = n;
  char path[4096];
  const int64_t batch = 16;
  uint16_t *buf = malloc(sizeof(uint16_t) * (size_t)(n * rows * batch));
  if (!buf) return 1;
  ctr_stack_info info = {CTR_STACK_INFO_VERSION, n, rows, na, CTR_DTYPE_UINT16, {1, 1, 1}, {0, 0, 0}};
  ctr_stack_writer *w = NULL;
  snprintf(path, sizeof path, "%s/scan.h5:/exchange/data", dir);
  ctr_status st = ctr_stack_create(path, CTR_FORMAT_HDF5, &info, 1, &w);
  const double c = 0.5 * (double)(n - 1), I0 = 20000.0, D = 100.0;
  for (int64_t a0 = 0; st == CTR_OK && a0 < na; a0 += batch) {
    const int64_t m = na - a0 < batch ? na - a0 : batch;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < m; k++)
      for (int64_t y = 0; y < rows; y++) {
        const double th = M_PI * (double)(a0 + k) / (double)na, ct = cos(th), s = sin(th);
        const double f = rows > 1 ? (double)y / (double)(rows - 1) : 0.0;
        uint16_t *o = buf + (k * rows + y) * n;
        for (int64_t b = 0; b < n; b++) {
          const double t = (double)b - c;
          double li = 0;
          for (size_t d = 0; d < sizeof g_discs / sizeof g_discs[0]; d++) {
            const disc *q = &g_discs[d];
            const double r = (q->r0 + f * (q->r1 - q->r0)) * (double)n;
            const double u = t - (q->x * ct + q->y * s) * (double)n;
            if (fabs(u) < r) li += 2.0 * sqrt(r * r - u * u) * q->mu;
          }
          o[b] = (uint16_t)lround(D + I0 * exp(-li));
        }
      }
    st = ctr_stack_write(w, a0, m, CTR_DTYPE_UINT16, buf);
  }
  if (st == CTR_OK) st = ctr_stack_commit(w);
  else ctr_stack_abort(w);
  float *fd = malloc(sizeof(float) * (size_t)(2 * n * rows));
  ctr_stack_info fi = {CTR_STACK_INFO_VERSION, n, rows, 2, CTR_DTYPE_FLOAT32, {1, 1, 1}, {0, 0, 0}};
  for (int k = 0; st == CTR_OK && k < 2; k++) {
    for (int64_t i = 0; i < 2 * n * rows; i++) fd[i] = (float)(k ? D : D + I0);
    snprintf(path, sizeof path, "%s/%s.h5:/data", dir, k ? "dark" : "flat");
    st = ctr_stack_save(path, CTR_FORMAT_HDF5, &fi, CTR_DTYPE_FLOAT32, fd, 1);
  }
  snprintf(path, sizeof path, "%s/angles.txt", dir);
  FILE *af = st == CTR_OK ? fopen(path, "w") : NULL;
  for (int64_t a = 0; af && a < na; a++) fprintf(af, "%.17g\n", 180.0 * (double)a / (double)na);
  if (af) fclose(af);
  free(buf);
  free(fd);
  if (st != CTR_OK || !af) {
    fprintf(stderr, "bench_sync: %s\n", st != CTR_OK ? ctr_error_detail() : "cannot write angles.txt");
    return 1;
  }
  printf("wrote %s/scan.h5 (%lld x %lld x %lld uint16), flat.h5, dark.h5, angles.txt\n", dir,
         (long long)na, (long long)rows, (long long)n);
  return 0;
}

/* The RabbitCT module contract, exercised the way the RabbitCT runner does:
 * dlopen the module, dlsym the five entry points by name, fill the global
 * struct, call Prepare, Load, Backprojection once per view in buffered
 * subsets, Finish, Unload. The oracle is RabbitCT's reference formula written
 * out here in double precision (independent of the library):
 *   x = O_L + i R_L (same for y, z);  w = A[2]x + A[5]y + A[8]z + A[11];
 *   u = (A[0]x + A[3]y + A[6]z + A[9]) / w;  v likewise with A[1], A[4], ...;
 *   bilinear with pixel centres at integers, 0 outside;  f += p / w^2.
 *
 *   contract_rabbitct path/to/librabbitct_ctrecon.so
 * CTRECON_DEVICE (cpu / cuda) picks the backend; with cuda and no GPU the
 * test exits 77 (skipped). */
#include <dlfcn.h>
#include <stdint.h>

#include "harness.h"
#include "rabbitct.h"

#define PI 3.14159265358979323846

typedef struct entry_points {
  RabbitCtFunction prepare, load, backprojection, finish, unload;
} entry_points;

static double sample(const float *img, int sx, int sy, double u, double v) {
  const int iu = (int)floor(u), iv = (int)floor(v);
  const double fu = u - iu, fv = v - iv;
  double q[4];
  for (int k = 0; k < 4; k++) {
    const int x = iu + (k & 1), y = iv + (k >> 1);
    q[k] = (x >= 0 && x < sx && y >= 0 && y < sy) ? img[y * sx + x] : 0.0;
  }
  return (1 - fv) * ((1 - fu) * q[0] + fu * q[1]) + fv * ((1 - fu) * q[2] + fu * q[3]);
}

/* C-arm-like views: a short scan with small perturbations, column-major. */
static void make_matrix(int n, int nviews, int sx, int sy, double *A) {
  const double t = (220.0 * n / nviews) * PI / 180.0, sid = 300, sdd = 500, pitch = 1.2;
  const double c = cos(t), s = sin(t);
  const double u0 = 0.5 * (sx - 1) + th_uniform(-0.7, 0.7), v0 = 0.5 * (sy - 1) + th_uniform(-0.7, 0.7);
  const double f = sdd / pitch;
  /* rows of the ideal matrix (source at sid (c, s, 0), u along (-s, c, 0)) */
  double P[3][4] = {{-f * s - u0 * c, f * c - u0 * s, 0, u0 * sid},
                    {-v0 * c, -v0 * s, f, v0 * sid},
                    {-c, -s, 0, sid}};
  for (int r = 0; r < 3; r++) /* small tilt: not a perfect circle */
    P[r][2] += th_uniform(-0.01, 0.01) * P[r][0];
  const double scale = th_uniform(0.5, 2.0); /* RabbitCT matrices come at any scale */
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 4; k++) A[k * 3 + r] = scale * P[r][k];
}

static void reference(int L, float R_L, float O_L, int sx, int sy, int nviews, double **A,
                      float **img, double *f) {
  for (int k = 0; k < L; k++)
    for (int j = 0; j < L; j++)
      for (int i = 0; i < L; i++) {
        const double x = O_L + i * R_L, y = O_L + j * R_L, z = O_L + k * R_L;
        double sum = 0;
        for (int n = 0; n < nviews; n++) {
          const double *a = A[n];
          const double w = a[2] * x + a[5] * y + a[8] * z + a[11];
          const double u = (a[0] * x + a[3] * y + a[6] * z + a[9]) / w;
          const double v = (a[1] * x + a[4] * y + a[7] * z + a[10]) / w;
          sum += sample(img[n], sx, sy, u, v) / (w * w);
        }
        f[((int64_t)k * L + j) * L + i] = sum;
      }
}

/* Runs the module over the data with `nbuf` projection buffers; subsets
 * (or, with nbuf == 0, single views through A_n / I_n alone). */
static int run_module(const entry_points *ep, int L, float R_L, float O_L, int sx, int sy,
                      int nviews, double **A, float **img, int nbuf, float *f) {
  RabbitCtGlobalData r;
  memset(&r, 0, sizeof r);
  r.L = (unsigned)L;
  r.S_x = (unsigned)sx;
  r.S_y = (unsigned)sy;
  r.R_L = R_L;
  r.O_L = O_L;
  r.adv_N = (unsigned)nviews;
  r.adv_ppProjMatrixBuffers = A;
  r.adv_numProjBuffers = (unsigned)nbuf;
  float **buffers = nbuf ? malloc(sizeof(float *) * nbuf) : NULL;
  for (int b = 0; b < nbuf; b++) buffers[b] = malloc(sizeof(float) * sx * sy);
  int ok = 1;
  if (ep->prepare) ok &= ep->prepare(&r);
  ok &= ep->load(&r);
  if (!r.f_L) r.f_L = f; /* the runner allocates and zeroes when the module did not */
  for (int first = 0; ok && first < nviews; first += nbuf ? nbuf : 1) {
    const int avail = nbuf ? (nviews - first < nbuf ? nviews - first : nbuf) : 1;
    for (int k = 0; nbuf && k < avail; k++) memcpy(buffers[k], img[first + k], sizeof(float) * sx * sy);
    r.adv_pProjBuffers = buffers;
    r.adv_firstProjOfSubset = (unsigned)first;
    r.adv_numAvailProjs = nbuf ? (unsigned)avail : 0;
    for (int k = 0; ok && k < avail; k++) {
      r.adv_projNumber = (unsigned)(first + k);
      r.A_n = A[first + k];
      r.I_n = nbuf ? buffers[k] : img[first + k];
      ok &= ep->backprojection(&r);
    }
  }
  ok &= ep->finish(&r);
  if (r.f_L != f) { /* the module's own volume */
    memcpy(f, r.f_L, sizeof(float) * L * L * L);
  }
  ok &= ep->unload(&r);
  for (int b = 0; b < nbuf; b++) free(buffers[b]);
  free(buffers);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/librabbitct_ctrecon.so\n", argv[0]);
    return 2;
  }
  const char *dev = getenv("CTRECON_DEVICE");
  if (dev && !strncmp(dev, "cuda", 4) && ctr_cuda_device_count() < 1) {
    printf("contract_rabbitct: SKIPPED (CTRECON_DEVICE=%s, no usable GPU)\n", dev);
    return 77;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG(h != NULL, "dlopen %s: %s", argv[1], dlerror());
  if (!h) return th_finish("contract_rabbitct");
  entry_points ep;
  ep.prepare = (RabbitCtFunction)dlsym(h, RCT_PREPARE);
  ep.load = (RabbitCtFunction)dlsym(h, RCT_LOAD);
  ep.backprojection = (RabbitCtFunction)dlsym(h, RCT_BACKPROJECTION);
  ep.finish = (RabbitCtFunction)dlsym(h, RCT_FINISH);
  ep.unload = (RabbitCtFunction)dlsym(h, RCT_UNLOAD);
  CHECK(ep.load && ep.backprojection && ep.finish && ep.unload);
  CHECK(dlsym(h, "ctr_fdk") == NULL); /* only the RCT* entry points are exported */
  if (!(ep.load && ep.backprojection && ep.finish && ep.unload)) return th_finish("contract_rabbitct");

  const int L = 20, sx = 48, sy = 40, nviews = 37;
  const float R_L = 3.0f, O_L = -0.5f * (L - 1) * R_L + 1.25f; /* an off-centre volume */
  double **A = malloc(sizeof(double *) * nviews);
  float **img = malloc(sizeof(float *) * nviews);
  for (int n = 0; n < nviews; n++) {
    A[n] = malloc(sizeof(double) * 12);
    img[n] = malloc(sizeof(float) * sx * sy);
    make_matrix(n, nviews, sx, sy, A[n]);
    for (int i = 0; i < sx * sy; i++) /* smooth-ish data with structure in u and v */
      img[n][i] = (float)(sin(0.21 * (i % sx) + 0.1 * n) * cos(0.17 * (i / sx)) + th_uniform(-0.1, 0.1));
  }
  const int64_t nvox = (int64_t)L * L * L;
  double *ref = malloc(sizeof(double) * nvox);
  reference(L, R_L, O_L, sx, sy, nviews, A, img, ref);
  float *f = malloc(sizeof(float) * nvox);
  /* Subsets of 8 (the last one partial), of 1, and views on their own. */
  const int buffers[3] = {8, 1, 0};
  for (int t = 0; t < 3; t++) {
    memset(f, 0, sizeof(float) * nvox);
    CHECK_MSG(run_module(&ep, L, R_L, O_L, sx, sy, nviews, A, img, buffers[t], f),
              "module call failed with %d buffers", buffers[t]);
    double e = 0, s = 0;
    for (int64_t i = 0; i < nvox; i++) {
      e += (f[i] - ref[i]) * (f[i] - ref[i]);
      s += ref[i] * ref[i];
    }
    /* Exact interpolation in fp32 against double: ~1e-6. */
    printf("%d buffers: relative RMS vs the RabbitCT reference %.2e\n", buffers[t], sqrt(e / s));
    CHECK_MSG(s > 0 && sqrt(e / s) < 1e-5, "%d buffers: relative RMS %g", buffers[t], sqrt(e / s));
  }
  /* The runner's scoring on HU: identical up to rounding flips. */
  uint16_t *hu = malloc(sizeof(uint16_t) * nvox);
  const float hu0 = 2000.0f, hu1 = 24.0f;
  for (int64_t i = 0; i < nvox; i++) {
    const double v = ref[i] > 0 ? floor(hu0 * ref[i] + hu1 + 0.5) : 0;
    hu[i] = (uint16_t)(v < 0 ? 0 : v > 4095 ? 4095 : v);
  }
  ctr_rabbitct_score sc;
  CHECK_OK(ctr_rabbitct_score_volume(f, hu, L, hu0, hu1, &sc));
  printf("HU scoring: RMSE %.4f, max error %.0f\n", sc.rmse, sc.max_error);
  CHECK(sc.max_error <= 1.0 && sc.rmse < 0.1);
  for (int n = 0; n < nviews; n++) {
    free(A[n]);
    free(img[n]);
  }
  free(A);
  free(img);
  free(ref);
  free(f);
  free(hu);
  dlclose(h);
  return th_finish("contract_rabbitct");
}

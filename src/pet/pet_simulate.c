/* List-mode TOF-PET simulation into histo-images (ctr_pet_simulate).
 *
 * The events are cut into fixed chunks, each with its own random stream
 * (xoshiro256** seeded by splitmix64 from the seed and the chunk index),
 * and every deposit adds exactly 1.0 to a float: the histo-images depend on
 * the seed alone, not on the number of threads or the order the chunks run
 * in (exact while a voxel holds fewer than 2^24 events).
 *
 * Physics per event: emission point from the phantom; LOR direction with
 * azimuth uniform in [0, pi) and sin(tilt) uniform within the acceptance
 * (isotropic emission restricted to the acceptance); attenuation as survival
 * with probability exp(-mu * chord), the chord being the whole LOR's path
 * through the phantom's finite cylinder; TOF error along the LOR, Gaussian
 * detector blur across it (radial FWHM from the system's model at the true
 * LOR's radial position, with the model's wide shifted component for
 * asymmetric kernels; axial FWHM of the system; for a custom kernel function
 * the system's Gaussian parameters are sampled instead); nearest-voxel
 * deposit in the histo-image of the view whose intervals hold the LOR's
 * angles.
 *
 * opts->events is the expected number of events emitted along LORs within
 * the acceptance; attenuation and the lattice's edges remove some of them,
 * and h->events is the number deposited. (The lattice-edge loss is small for
 * phantoms well inside the lattice; the attenuation loss is the physical one, so
 * that the same `events` with and without attenuation is the same scan.) */
#include "pet/pet.h"
#include "pet/pet_data.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CTR__PI 3.14159265358979323846
#define CTR__FWHM_PER_SIGMA 2.3548200450309493
#define CTR__CHUNK ((int64_t)1 << 16)

/* ---- Random numbers ------------------------------------------------------------ */

typedef struct rng {
  uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Stream `stream` of `seed`: the two are mixed before seeding, so streams of
 * neighbouring seeds do not overlap by a shift. */
static void rng_seed(rng *r, uint64_t seed, uint64_t stream) {
  uint64_t a = seed, b = stream ^ 0x6A09E667F3BCC909ull;
  uint64_t x = splitmix64(&a) ^ (splitmix64(&b) * 0xD1B54A32D192ED03ull);
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(rng *r) {
  uint64_t *s = r->s;
  const uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* [0, 1) */
static inline double uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Standard normal (Box-Muller; one value per call keeps the stream's use
 * per event fixed and simple). */
static inline double normal(rng *r) {
  const double u = 1.0 - uniform(r), v = uniform(r);
  return sqrt(-2.0 * log(u)) * cos(2.0 * CTR__PI * v);
}

/* Poisson(mean): multiplication method for small means, PTRS (Hoermann
 * 1993, transformed rejection with squeeze) otherwise; both exact. */
static int64_t poisson(rng *r, double mean) {
  if (mean <= 0) return 0;
  if (mean < 10) {
    const double limit = exp(-mean);
    double prod = uniform(r);
    int64_t k = 0;
    while (prod > limit) {
      prod *= uniform(r);
      k++;
    }
    return k;
  }
  const double slam = sqrt(mean), loglam = log(mean);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double U = uniform(r) - 0.5, V = uniform(r), us = 0.5 - fabs(U);
    const double k = floor((2 * a / us + b) * U + mean + 0.43);
    if (us >= 0.07 && V <= vr) return (int64_t)k;
    if (k < 0 || (us < 0.013 && V > us)) continue;
    if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -mean + k * loglam - lgamma(k + 1))
      return (int64_t)k;
  }
}

/* ---- Emission points ---------------------------------------------------------- */

enum { SRC_CYLINDER, SRC_SPHERE, SRC_POINT };

typedef struct sampler {
  const ctr_pet_phantom *ph;
  int n;                                   /* components of the analytic phantom */
  int kind[1 + 2 * CTR_PET_MAX_SPHERES];
  int index[1 + 2 * CTR_PET_MAX_SPHERES];
  double cum[1 + 2 * CTR_PET_MAX_SPHERES]; /* cumulative weights */
  const float *act;                        /* voxel phantom instead, with its table */
  double *cdf;
  int64_t nvox, nx, ny;
  double voxel, c[3];
  double total; /* total weight (0: no activity) */
} sampler;

static int inside_sphere(const ctr_pet_sphere *s, const double x[3]) {
  const double dx = x[0] - s->x, dy = x[1] - s->y, dz = x[2] - s->z, r = 0.5 * s->diameter;
  return dx * dx + dy * dy + dz * dz <= r * r;
}

/* The analytic phantom as a mixture: the cylinder at the background value,
 * each sphere at its value, each point source. A cylinder draw inside a
 * sphere, or a sphere draw inside a later sphere, is rejected and drawn
 * again from the start, which leaves exactly the phantom's density (a
 * sphere replaces what lies under it). */
static void sampler_analytic(sampler *S, const ctr_pet_phantom *ph) {
  double w = 0.0;
  S->ph = ph;
  S->n = 0;
  if (ctr__pet_phantom_has_cylinder(ph) && ph->background > 0) {
    const double R = 0.5 * ph->cylinder_diameter;
    w += ph->background * CTR__PI * R * R * ph->cylinder_length;
    S->kind[S->n] = SRC_CYLINDER;
    S->index[S->n] = 0;
    S->cum[S->n++] = w;
  }
  for (int i = 0; i < ph->nspheres; i++) {
    const double r = 0.5 * ph->spheres[i].diameter;
    if (!(r > 0 && ph->spheres[i].activity > 0)) continue;
    w += ph->spheres[i].activity * 4.0 / 3.0 * CTR__PI * r * r * r;
    S->kind[S->n] = SRC_SPHERE;
    S->index[S->n] = i;
    S->cum[S->n++] = w;
  }
  for (int i = 0; i < ph->npoints; i++) {
    if (!(ph->points[i].activity > 0)) continue;
    w += ph->points[i].activity;
    S->kind[S->n] = SRC_POINT;
    S->index[S->n] = i;
    S->cum[S->n++] = w;
  }
  S->total = w;
}

static ctr_status sampler_voxels(sampler *S, const float *act, const ctr_pet_params *p) {
  S->act = act;
  S->nvox = p->nx * p->ny * p->nz;
  S->nx = p->nx;
  S->ny = p->ny;
  S->voxel = p->voxel;
  S->c[0] = 0.5 * (double)(p->nx - 1);
  S->c[1] = 0.5 * (double)(p->ny - 1);
  S->c[2] = 0.5 * (double)(p->nz - 1);
  S->cdf = ctr__malloc((size_t)S->nvox * sizeof(double), "activity table");
  if (!S->cdf) return CTR_E_OUT_OF_MEMORY;
  double w = 0.0;
  for (int64_t i = 0; i < S->nvox; i++) {
    const float v = act[i];
    if (!(v >= 0.0f) || isinf(v))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "ctr_pet_simulate: activity[%lld] is %g, expected finite values >= 0",
               (long long)i, (double)v);
    w += v;
    S->cdf[i] = w;
  }
  S->total = w;
  return CTR_OK;
}

/* Draws one emission point into x; 0 if the draw is rejected. */
static int sample_point(const sampler *S, rng *r, double x[3]) {
  if (S->act) {
    const double u = uniform(r) * S->total;
    int64_t lo = 0, hi = S->nvox - 1; /* first index with cdf > u */
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (S->cdf[mid] > u)
        hi = mid;
      else
        lo = mid + 1;
    }
    const int64_t i = lo % S->nx, j = (lo / S->nx) % S->ny, k = lo / (S->nx * S->ny);
    x[0] = ((double)i - S->c[0] + uniform(r) - 0.5) * S->voxel;
    x[1] = ((double)j - S->c[1] + uniform(r) - 0.5) * S->voxel;
    x[2] = ((double)k - S->c[2] + uniform(r) - 0.5) * S->voxel;
    return 1;
  }
  const ctr_pet_phantom *ph = S->ph;
  const double u = uniform(r) * S->total;
  int c = 0;
  while (c < S->n - 1 && S->cum[c] <= u) c++;
  const int idx = S->index[c];
  if (S->kind[c] == SRC_POINT) {
    x[0] = ph->points[idx].x;
    x[1] = ph->points[idx].y;
    x[2] = ph->points[idx].z;
    return 1;
  }
  int first_blocking; /* spheres from here on replace this component */
  if (S->kind[c] == SRC_CYLINDER) {
    const double R = 0.5 * ph->cylinder_diameter;
    do {
      x[0] = (2 * uniform(r) - 1) * R;
      x[1] = (2 * uniform(r) - 1) * R;
    } while (x[0] * x[0] + x[1] * x[1] > R * R);
    x[2] = (uniform(r) - 0.5) * ph->cylinder_length;
    first_blocking = 0;
  } else {
    const ctr_pet_sphere *s = &ph->spheres[idx];
    const double R = 0.5 * s->diameter;
    double o[3];
    do {
      for (int a = 0; a < 3; a++) o[a] = (2 * uniform(r) - 1) * R;
    } while (o[0] * o[0] + o[1] * o[1] + o[2] * o[2] > R * R);
    x[0] = s->x + o[0];
    x[1] = s->y + o[1];
    x[2] = s->z + o[2];
    first_blocking = idx + 1;
  }
  for (int i = first_blocking; i < ph->nspheres; i++)
    if (inside_sphere(&ph->spheres[i], x)) return 0;
  return 1;
}

/* ---- Events --------------------------------------------------------------------- */

typedef struct sim {
  const ctr_pet_system *s;
  const ctr_pet_phantom *att; /* NULL: no attenuation */
  sampler S;
  int blur;
  int64_t nx, ny, nz, nvox;
  int na, nc;
  double voxel, c[3];
  double sin_acc, acc, sigma_tof, sigma_axial;
  double asym_p, asym_shift; /* asymmetric radial blur: wide share, shift in sigmas */
  float *counts;
} sim;

/* One event; returns 1 if it was deposited. */
static int event(const sim *m, rng *r) {
  double x[3];
  while (!sample_point(&m->S, r, x)) {
  }
  const double phi = uniform(r) * CTR__PI;
  const double st = (2 * uniform(r) - 1) * m->sin_acc, ct = sqrt(1.0 - st * st);
  int a = (int)(phi * m->na / CTR__PI);
  if (a >= m->na) a = m->na - 1;
  int c = 0;
  if (m->nc > 1) {
    c = (int)floor((asin(st) + m->acc) / (2 * m->acc) * m->nc);
    c = c < 0 ? 0 : c >= m->nc ? m->nc - 1 : c;
  }
  const double cp = cos(phi), sp = sin(phi);
  const double d[3] = {ct * cp, ct * sp, st}, rr[3] = {-sp, cp, 0.0},
               ax[3] = {-st * cp, -st * sp, ct}; /* d x r */
  const double rho = x[0] * rr[0] + x[1] * rr[1];
  if (m->att) {
    const double chord = ctr__pet_cylinder_chord(m->att, x, d);
    if (uniform(r) >= exp(-m->att->mu_per_mm * chord)) return 0;
  }
  const double e_tof = m->sigma_tof > 0 ? m->sigma_tof * normal(r) : 0.0;
  double e_rad = 0.0, e_ax = 0.0;
  if (m->blur) {
    const double sr = ctr_pet_system_radial_fwhm(m->s, rho) / CTR__FWHM_PER_SIGMA;
    if (m->asym_p > 0 && uniform(r) < m->asym_p) /* the wide component, towards the axis */
      e_rad = (rho >= 0 ? -1.0 : 1.0) * m->asym_shift * sr + 2.0 * sr * normal(r);
    else
      e_rad = sr * normal(r);
    e_ax = m->sigma_axial * normal(r);
  }
  double idx[3];
  const int64_t n[3] = {m->nx, m->ny, m->nz};
  for (int i = 0; i < 3; i++) {
    const double p = x[i] + e_tof * d[i] + e_rad * rr[i] + e_ax * ax[i];
    idx[i] = floor(p / m->voxel + m->c[i] + 0.5);
    if (!(idx[i] >= 0 && idx[i] < (double)n[i])) return 0; /* off the lattice */
  }
  const int64_t v = (int64_t)c * m->na + a;
  float *cell = m->counts + v * m->nvox +
                ((int64_t)idx[2] * m->ny + (int64_t)idx[1]) * m->nx + (int64_t)idx[0];
#pragma omp atomic update
  *cell += 1.0f;
  return 1;
}

/* ---- Factors ---------------------------------------------------------------------- */

/* factors_v = sensitivity_v x exp(-mu x chord through the voxel centre along
 * view v's central direction). sensitivity_v is the view's share of the
 * emitted LORs relative to the mean view, nc (sin t_hi - sin t_lo) /
 * (2 sin acc): the co-polar intervals are equal in angle, not in solid
 * angle, so with it factors_v (A_v f) is the expected histo-image of every
 * view up to one common scale. */
static ctr_status compute_factors(ctr_context *ctx, const sim *m, float *factors, double p0) {
  const ctr_pet_params *p = ctr_pet_system_get_params(m->s);
  const int64_t nviews = (int64_t)m->na * m->nc;
  for (int64_t v = 0; v < nviews; v++) {
    ctr__pet_frame f;
    ctr__pet_frame_of(m->s, v, &f);
    const int64_t c = v / m->na;
    double sens = 1.0;
    if (m->nc > 1) {
      const double w = 2 * m->acc / m->nc, lo = -m->acc + (double)c * w;
      sens = m->nc * (sin(lo + w) - sin(lo)) / (2 * m->sin_acc);
    }
    float *out = factors + v * m->nvox;
    const int nt = ctr__num_threads(ctx);
    (void)nt;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
    for (int64_t k = 0; k < p->nz; k++)
      for (int64_t j = 0; j < p->ny; j++)
        for (int64_t i = 0; i < p->nx; i++) {
          const double x[3] = {((double)i - m->c[0]) * m->voxel, ((double)j - m->c[1]) * m->voxel,
                               ((double)k - m->c[2]) * m->voxel};
          const double att =
              m->att ? exp(-m->att->mu_per_mm * ctr__pet_cylinder_chord(m->att, x, f.d)) : 1.0;
          out[(k * p->ny + j) * p->nx + i] = (float)(sens * att);
        }
    CTR_CHECK(ctr__progress(ctx, "simulate", p0 + (1 - p0) * (double)(v + 1) / (double)nviews));
  }
  return CTR_OK;
}

/* ---- Driver ---------------------------------------------------------------------- */

static ctr_status check_args(const ctr_pet_system *s, const ctr_pet_phantom *ph,
                             const ctr_pet_sim_options *o, ctr_pet_histo **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_simulate: out is NULL");
  *out = NULL;
  if (!s) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_simulate: system is NULL");
  if (!(o->events >= 0 && o->events <= 1e13))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_simulate: events is %g, expected 0 .. 1e13",
             o->events);
  if (!o->activity && !ph)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_simulate: no phantom: give an analytic phantom or opts->activity");
  if (ph) CTR_CHECK(ctr__pet_phantom_check(ph, "ctr_pet_simulate"));
  const ctr_pet_params *p = ctr_pet_system_get_params(s);
  if (p->n_copolar > 1 && !(p->acceptance_deg > 0))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_simulate: %d co-polar views need acceptance_deg > 0 (it is %g)",
             p->n_copolar, p->acceptance_deg);
  return CTR_OK;
}

ctr_status ctr_pet_simulate(ctr_context *ctx, const ctr_pet_system *s, const ctr_pet_phantom *ph,
                            const ctr_pet_sim_options *opts, ctr_pet_histo **out) {
  ctr_pet_sim_options o_;
  if (out) *out = NULL;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_sim_options, &o_, opts));
  const ctr_pet_sim_options *o = &o_;
  CTR_CHECK(check_args(s, ph, o, out));
  /* simulated on the host into host histo-images */
  CTR_CHECK(ctr__gpu_rule(ctx, "ctr_pet_simulate", 0, o->activity, "activity", NULL, NULL));
  const ctr_pet_params *p = ctr_pet_system_get_params(s);
  const ctr_pet_kernel_params *k = ctr_pet_system_get_kernel(s);
  ctr_status st = CTR_OK;
  sim m;
  memset(&m, 0, sizeof m);
  m.s = s;
  m.blur = o->detector_blur != 0;
  m.nx = p->nx;
  m.ny = p->ny;
  m.nz = p->nz;
  m.nvox = p->nx * p->ny * p->nz;
  m.na = p->n_azimuth;
  m.nc = p->n_copolar;
  m.voxel = p->voxel;
  m.c[0] = 0.5 * (double)(p->nx - 1);
  m.c[1] = 0.5 * (double)(p->ny - 1);
  m.c[2] = 0.5 * (double)(p->nz - 1);
  m.acc = p->acceptance_deg * CTR__PI / 180.0;
  m.sin_acc = sin(m.acc);
  m.sigma_tof = k->tof_fwhm_ps * CTR_PET_C_MM_PER_PS / 2.0 / CTR__FWHM_PER_SIGMA;
  m.sigma_axial = k->axial_fwhm_mm / CTR__FWHM_PER_SIGMA;
  if (k->asymmetric && k->asym_weight > 0 && !k->custom) {
    /* The model's radial profile is G(sigma) + w/2 G(2 sigma, shifted) in
     * amplitudes (pet_kernel.c); the areas are 1 : w. */
    m.asym_p = k->asym_weight / (1.0 + k->asym_weight);
    m.asym_shift = k->asym_shift_sigma;
  }
  if (o->attenuation && ph && ph->mu_per_mm > 0 && ctr__pet_phantom_has_cylinder(ph)) m.att = ph;
  ctr_pet_histo *h = NULL;
  const int with_factors = o->with_factors && m.att;
  if (o->activity)
    CTR_CHECK_GOTO(st, sampler_voxels(&m.S, o->activity, p));
  else
    sampler_analytic(&m.S, ph);
  if (!(m.S.total > 0) && o->events > 0)
    CTR_FAIL_GOTO(st, CTR_E_INVALID_ARGUMENT,
                  "ctr_pet_simulate: the %s has no activity (expected some source with "
                  "activity > 0)",
                  o->activity ? "activity image" : "phantom");
  CTR_CHECK_GOTO(st, ctr_pet_histo_create(p, with_factors, &h));
  m.counts = h->counts;

  rng master;
  rng_seed(&master, o->seed, 0);
  const int64_t total = poisson(&master, o->events);
  const int64_t nchunks = (total + CTR__CHUNK - 1) / CTR__CHUNK;
  const double p_events = with_factors ? 0.8 : 1.0; /* progress share of the events */
  int64_t next = 0, done = 0;
  int cancel = 0;
  double deposited = 0.0;
  const int nt = ctr__num_threads(ctx);
  (void)nt;
#pragma omp parallel num_threads(nt) reduction(+ : deposited)
  {
    int master_thread = 1;
#ifdef _OPENMP
    master_thread = omp_get_thread_num() == 0;
#endif
    for (;;) {
      if (__atomic_load_n(&cancel, __ATOMIC_RELAXED)) break;
      const int64_t chunk = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
      if (chunk >= nchunks) break;
      rng r;
      rng_seed(&r, o->seed, (uint64_t)chunk + 1);
      const int64_t first = chunk * CTR__CHUNK;
      const int64_t n = total - first < CTR__CHUNK ? total - first : CTR__CHUNK;
      for (int64_t e = 0; e < n; e++) deposited += event(&m, &r);
      const int64_t finished = __atomic_add_fetch(&done, 1, __ATOMIC_RELAXED);
      /* The master thread is the caller: the callback and the error detail
       * stay on the caller's thread. */
      if (master_thread &&
          ctr__progress(ctx, "simulate", p_events * (double)finished / (double)nchunks) != CTR_OK)
        __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
    }
  }
  if (cancel) {
    st = CTR_E_CANCELLED; /* detail set by ctr__progress */
    goto cleanup;
  }
  if (with_factors) CTR_CHECK_GOTO(st, compute_factors(ctx, &m, h->factors, p_events));
  CTR_CHECK_GOTO(st, ctr__progress(ctx, "simulate", 1.0));
  h->tof_fwhm_ps = k->tof_fwhm_ps;
  h->events = deposited;
  *out = h;
  h = NULL;
cleanup:
  ctr_pet_histo_free(h);
  free(m.S.cdf);
  return st;
}

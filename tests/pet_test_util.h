/* Shared pieces of the PET tests: small lattices, kernel models, random
 * images, dot products, and the context of the backend under test
 * (PET_TEST_BACKEND 1 = CPU, 2 = CUDA; the same sources build both). */
#ifndef CTR_PET_TEST_UTIL_H
#define CTR_PET_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctrecon.h"

#ifndef PET_TEST_BACKEND
#define PET_TEST_BACKEND 1
#endif

/* A small lattice with the default 40 x 3 views. */
static inline ctr_pet_params pet_test_params(int64_t nx, int64_t ny, int64_t nz, double voxel) {
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = nx, p.ny = ny, p.nz = nz, p.voxel = voxel;
  return p;
}

/* Symmetric invariant kernels (FFT-compatible). */
static inline ctr_pet_kernel_params pet_test_kernel_invariant(void) {
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  k.tof_fwhm_ps = 300, k.radial_fwhm_center_mm = k.radial_fwhm_edge_mm = 10;
  k.axial_fwhm_mm = 8;
  return k;
}

/* Strongly variant kernels, so the variant effects show on small lattices. */
static inline ctr_pet_kernel_params pet_test_kernel_variant(void) {
  ctr_pet_kernel_params k = CTR_PET_KERNEL_PARAMS_INIT;
  k.tof_fwhm_ps = 300, k.radial_fwhm_center_mm = 6, k.radial_fwhm_edge_mm = 24;
  k.edge_radius_mm = 100, k.axial_fwhm_mm = 6;
  return k;
}

/* The coarse sphere study of test_pet_recon: an n x n x nz lattice of 8 mm
 * voxels spanning the 350 mm cylinder, n_azimuth views in one co-polar
 * interval, kernels of 8 mm (centre) to 12 mm (edge) radial and 8 mm axial
 * FWHM, the spheres phantom (contrast 4) with its spheres enlarged to 40 mm
 * so they are several voxels wide and the cylinder as long as the lattice. */
static inline void pet_test_spheres(int64_t n, int64_t nz, int n_azimuth, ctr_pet_params *p,
                                    ctr_pet_kernel_params *k, ctr_pet_phantom *ph) {
  *p = pet_test_params(n, n, nz, 8.0);
  p->n_azimuth = n_azimuth, p->n_copolar = 1;
  const ctr_pet_kernel_params k0 = CTR_PET_KERNEL_PARAMS_INIT;
  *k = k0;
  k->radial_fwhm_center_mm = 8, k->radial_fwhm_edge_mm = 12, k->axial_fwhm_mm = 8;
  ctr_pet_phantom_spheres(ph, 4.0);
  for (int i = 0; i < ph->nspheres; i++) ph->spheres[i].diameter = 40;
  ph->cylinder_length = (double)nz * p->voxel;
}

static inline void pet_test_random(float *x, int64_t n, unsigned seed) {
  unsigned long long s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < n; i++) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    x[i] = (float)((s * 0x2545F4914F6CDD1Dull >> 11) / 9007199254740992.0);
  }
}

/* Data for a reconstruction: h's factors random in [0.5, 1) (seed) and its
 * counts the forward projections of x (n voxels) through pr, times `scale`
 * and the factors. */
static inline ctr_status pet_test_histo_fill(ctr_pet_projector *pr, ctr_pet_histo *h,
                                             const float *x, int64_t n, unsigned seed,
                                             float scale) {
  pet_test_random(h->factors, n * h->nviews, seed);
  for (int64_t i = 0; i < n * h->nviews; i++) h->factors[i] = 0.5f + 0.5f * h->factors[i];
  for (int64_t v = 0; v < h->nviews; v++) {
    const ctr_status st = ctr_pet_project(pr, CTR_PET_FORWARD, v, x, h->counts + v * n);
    if (st != CTR_OK) return st;
    for (int64_t i = 0; i < n; i++) h->counts[v * n + i] *= scale * h->factors[v * n + i];
  }
  return CTR_OK;
}

static inline double pet_test_dot(const float *a, const float *b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* RMS(a - ref) / RMS(ref). */
static inline double pet_test_rel_rms(const float *a, const double *ref, int64_t n) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; i++) {
    d += (a[i] - ref[i]) * (a[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return sqrt(d / (r > 0 ? r : 1));
}

/* The context of the backend under test; CTR_E_NO_DEVICE (skip) when the
 * CUDA backend is asked for and no GPU is usable. */
static inline ctr_status pet_test_context(ctr_context **ctx, int backend) {
  ctr_context_options o = CTR_CONTEXT_OPTIONS_INIT;
  if (backend == 2) {
    if (ctr_cuda_get_device_count() < 1) {
      printf("no usable GPU: skipped\n");
      return CTR_E_NO_DEVICE;
    }
    o.device = CTR_DEVICE_CUDA;
  } else {
    o.device = CTR_DEVICE_CPU;
  }
  return ctr_context_create(&o, ctx);
}

#endif

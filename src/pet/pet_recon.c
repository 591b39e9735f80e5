/* DIRECT reconstruction on the CPU: block-RAMLA with one view per
 * sub-iteration, OSEM with one view per subset, and MLEM (the CUDA backend
 * runs the same steps on the device, pet_cuda.cu). With h_v the histo-image
 * of view v, n_v its factors (1 if none) and A_v the projector:
 *   expected  y_v = n_v (A_v f)
 *   ratio     q_v = n_v h_v / y_v          (0 where y_v = 0)
 *   sens.     s_v = A_v^T n_v,  S = sum_v s_v
 *   OSEM      f <- f A_v^T q_v / s_v
 *   MLEM      f <- f sum_v A_v^T q_v / S
 *   RAMLA     f <- f + lambda_k f (A_v^T q_v - s_v) / (S / V)
 * with lambda_k = relax0 / (1 + relax_decay k) for pass k and V views, and
 * f kept >= 0. The shared per-voxel steps are in pet_update.h. A backend
 * with its own reconstruction (backend.h) runs it instead. */
#include "pet/backend.h"
#include "pet/pet_update.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ctr_status ctr__pet_recon_check(const ctr_pet_system *s, const ctr_pet_histo *h,
                                const ctr_pet_recon_options *o, const float *image) {
  if (!h || !o || !image) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_reconstruct: NULL argument");
  const ctr_pet_params *a = &s->p, *b = &h->params;
  if (a->nx != b->nx || a->ny != b->ny || a->nz != b->nz || a->voxel != b->voxel)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "histo-images are %lld x %lld x %lld of %g mm but the system is %lld x %lld x %lld "
             "of %g mm",
             (long long)b->nx, (long long)b->ny, (long long)b->nz, b->voxel, (long long)a->nx,
             (long long)a->ny, (long long)a->nz, a->voxel);
  if (a->n_azimuth != b->n_azimuth || a->n_copolar != b->n_copolar ||
      a->acceptance_deg != b->acceptance_deg || h->nviews != s->nviews)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "histo-images hold %lld views (%d x %d, +-%g deg) but the system has %lld (%d x %d, "
             "+-%g deg)",
             (long long)h->nviews, b->n_azimuth, b->n_copolar, b->acceptance_deg,
             (long long)s->nviews, a->n_azimuth, a->n_copolar, a->acceptance_deg);
  if (o->iterations < 1 || o->iterations > 100000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "iterations %d: expected 1..100000", o->iterations);
  if (o->algorithm != CTR_PET_RAMLA && o->algorithm != CTR_PET_OSEM &&
      o->algorithm != CTR_PET_MLEM)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "algorithm %d: expected ramla, osem or mlem",
             (int)o->algorithm);
  if (o->algorithm == CTR_PET_RAMLA &&
      (!(o->relax0 > 0) || !(o->relax_decay >= 0) || !isfinite(o->relax0) ||
       !isfinite(o->relax_decay)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "RAMLA relaxation %g (decay %g): expected relax0 > 0 and decay >= 0", o->relax0,
             o->relax_decay);
  return CTR_OK;
}

/* The uniform start in a host image that is all 0. */
static void initial_image(float uniform, int64_t nvox, float *image) {
  for (int64_t i = 0; i < nvox; i++)
    if (image[i] != 0) return;
  for (int64_t i = 0; i < nvox; i++) image[i] = uniform;
}

static ctr_status reconstruct_host(ctr_pet_projector *p, const ctr_pet_histo *h,
                                   const ctr_pet_recon_options *opts, float uniform, float *image,
                                   ctr_pet_recon_timings *timings, int64_t *out_bad);

#define CTR__BAD_COUNTS "counts or factors NaN, infinite, negative or beyond +-1e+24"

/* The data policy's word on the histo-images (a ctr__pet_data_check,
 * backend.h): bad counts or factors used as 0 with a warning or, strict, an
 * error; the uniform start from the counts' total. */
typedef struct data_report {
  const ctr_context *ctx;
  int strict;
  int64_t nvox;
} data_report;

static ctr_status report_data(void *user, int64_t bad, double total, float *uniform) {
  const data_report *r = (const data_report *)user;
  CTR_CHECK(ctr__values_report_kind(r->ctx, r->strict, bad, "histo-images", CTR__BAD_COUNTS,
                                    "used as 0"));
  *uniform = ctr__pet_uniform_value(total, r->nvox);
  return CTR_OK;
}

/* The host's data check for the host iterations: counts and factors with
 * bad values are copied and cleaned (the caller's data are const); *h
 * then points to the clean copies, freed with cc and cf. */
static ctr_status check_host_data(const data_report *rep, const ctr_pet_histo **h,
                                  ctr_pet_histo *clean, float **cc, float **cf, float *uniform) {
  const ctr_pet_histo *d = *h;
  const int64_t n = rep->nvox * d->nviews;
  double total = 0; /* of the counts, bad ones as 0 */
  const int64_t bad = ctr__values_count_nonneg(d->counts, n, &total) +
                      (d->factors ? ctr__values_count_nonneg(d->factors, n, NULL) : 0);
  CTR_CHECK(report_data((void *)rep, bad, total, uniform));
  if (!bad) return CTR_OK;
  *clean = *d;
  *cc = ctr__malloc((size_t)n * sizeof(float), "cleaned PET counts");
  *cf = d->factors ? ctr__malloc((size_t)n * sizeof(float), "cleaned PET factors") : NULL;
  if (!*cc || (d->factors && !*cf)) return CTR_E_OUT_OF_MEMORY;
  memcpy(*cc, d->counts, (size_t)n * sizeof(float));
  ctr__values_sanitize_nonneg(*cc, n);
  clean->counts = *cc;
  if (*cf) {
    memcpy(*cf, d->factors, (size_t)n * sizeof(float));
    ctr__values_sanitize_nonneg(*cf, n);
    clean->factors = *cf;
  }
  *h = clean;
  return CTR_OK;
}

/* The data policy (src/core/values.c) around the reconstruction: bad counts
 * or factors (host data on both backends) are used as 0 or, strict, an
 * error, checked where the data are used (the host's copy for the host
 * iterations; the GPU's, in the upload's wake, for a backend that
 * reconstructs: a host pass over them cost a third of a first iteration);
 * a non-finite result voxel is stored as 0 by the backend, where the image
 * is (on the GPU for CUDA), and reported here (strict: an error). The image
 * may be GPU memory on a CUDA projector (ctr__gpu_arrays). */
ctr_status ctr_pet_reconstruct(ctr_pet_projector *p, const ctr_pet_histo *h,
                               const ctr_pet_recon_options *opts, float *image,
                               ctr_pet_recon_timings *timings) {
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_reconstruct: projector is NULL");
  ctr_pet_recon_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_recon_options, &o, opts));
  if (timings) CTR_CHECK(ctr__struct_check(&ctr__struct_pet_recon_timings, timings));
  CTR_CHECK(ctr__pet_recon_check(p->sys, h, &o, image));
  CTR_CHECK(ctr__gpu_rule(p->ctx, "ctr_pet_reconstruct", 1, image, "image", NULL, NULL));
  if (o.strict && h->replaced > 0)
    CTR_FAIL(CTR_E_FORMAT, "histo-images: %lld " CTR__BAD_COUNTS " were replaced by 0 when loaded: "
             "expected none (strict mode); fix the data, or drop strict mode to accept them",
             (long long)h->replaced);
  const data_report rep = {p->ctx, o.strict, p->sys->p.nx * p->sys->p.ny * p->sys->p.nz};
  ctr_pet_recon_timings t = CTR_PET_RECON_TIMINGS_INIT;
  int64_t out_bad = 0;
  ctr_status st;
  if (p->be->reconstruct) {
    st = p->be->reconstruct(p->impl, h, &o, report_data, (void *)&rep, image, &t, &out_bad);
  } else {
    ctr_pet_histo clean;
    float *cc = NULL, *cf = NULL, uniform = 1;
    st = check_host_data(&rep, &h, &clean, &cc, &cf, &uniform);
    if (st == CTR_OK) st = reconstruct_host(p, h, &o, uniform, image, &t, &out_bad);
    free(cc);
    free(cf);
  }
  if (timings) ctr__struct_store(&ctr__struct_pet_recon_timings, timings, &t);
  if (st != CTR_OK) return st;
  return ctr__values_report_kind(p->ctx, o.strict, out_bad, "the reconstructed image",
                                 "voxels NaN, infinite or beyond +-1e+24", "stored as 0");
}

/* The host iterations over the backend's `project`. */
static ctr_status reconstruct_host(ctr_pet_projector *p, const ctr_pet_histo *h,
                                   const ctr_pet_recon_options *opts, float uniform, float *image,
                                   ctr_pet_recon_timings *timings, int64_t *out_bad) {
  const ctr_pet_recon_options o = *opts;
  ctr_pet_recon_timings t = CTR_PET_RECON_TIMINGS_INIT;
  const int64_t nvox = p->sys->p.nx * p->sys->p.ny * p->sys->p.nz, nv = h->nviews;
  initial_image(uniform, nvox, image);
  ctr_status st = CTR_OK;
  double t0 = ctr__now_s(), t1;
  float *sens = ctr__malloc((size_t)(nvox * nv) * sizeof(float), "PET sensitivities");
  float *total = ctr__calloc((size_t)nvox, sizeof(float), "PET total sensitivity");
  float *y = ctr__malloc((size_t)nvox * sizeof(float), "PET expected data");
  float *b = ctr__malloc((size_t)nvox * sizeof(float), "PET back projection");
  float *acc = ctr__calloc((size_t)nvox, sizeof(float), "PET MLEM sum");
  float *ones = ctr__malloc((size_t)nvox * sizeof(float), "PET ones");
  if (!sens || !total || !y || !b || !acc || !ones) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", ctr_error_detail());
  for (int64_t i = 0; i < nvox; i++) ones[i] = 1.0f;
  for (int64_t v = 0; v < nv; v++) {
    const float *nfac = h->factors ? h->factors + v * nvox : ones;
    CTR_CHECK_GOTO(st, ctr__pet_project(p, CTR_PET_BACK, v, nfac, sens + v * nvox));
    for (int64_t i = 0; i < nvox; i++) total[i] += sens[v * nvox + i];
    CTR_CHECK_GOTO(st, ctr__progress(p->ctx, "sensitivity", (v + 1.0) / nv));
  }
  t.back += ctr__now_s() - t0;
  for (int it = 0; it < o.iterations; it++) {
    double lambda = o.relax0 / (1.0 + o.relax_decay * it);
    for (int64_t v = 0; v < nv; v++) {
      const float *hv = h->counts + v * nvox, *nfac = h->factors ? h->factors + v * nvox : NULL;
      t1 = ctr__now_s();
      CTR_CHECK_GOTO(st, ctr__pet_project(p, CTR_PET_FORWARD, v, image, y));
      t.forward += ctr__now_s() - t1, t1 = ctr__now_s();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < nvox; i++) y[i] = ctr__pet_ratio(hv[i], nfac ? nfac[i] : 1.0f, y[i]);
      t.discrepancy += ctr__now_s() - t1, t1 = ctr__now_s();
      CTR_CHECK_GOTO(st, ctr__pet_project(p, CTR_PET_BACK, v, y, b));
      t.back += ctr__now_s() - t1, t1 = ctr__now_s();
      const float *sv = sens + v * nvox;
      if (o.algorithm == CTR_PET_MLEM) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nvox; i++) acc[i] += b[i];
      } else if (o.algorithm == CTR_PET_OSEM) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nvox; i++) image[i] = ctr__pet_osem(image[i], b[i], sv[i]);
      } else {
        float scale = (float)(lambda * nv);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nvox; i++)
          image[i] = ctr__pet_ramla(image[i], b[i], sv[i], total[i], scale);
      }
      t.update += ctr__now_s() - t1;
      CTR_CHECK_GOTO(st, ctr__progress(p->ctx, "reconstruct", (it + (v + 1.0) / nv) / o.iterations));
    }
    if (o.algorithm == CTR_PET_MLEM) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < nvox; i++) {
        image[i] = ctr__pet_osem(image[i], acc[i], total[i]);
        acc[i] = 0;
      }
    }
    if (o.on_iteration && o.on_iteration(o.user, it + 1, image)) break;
  }
  if (st == CTR_OK) *out_bad = ctr__values_sanitize(image, nvox);
cleanup:
  t.total = ctr__now_s() - t0;
  if (timings) *timings = t;
  free(sens), free(total), free(y), free(b), free(acc), free(ones);
  return st;
}

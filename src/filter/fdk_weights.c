/* FDK pre-weights (cosine, Parker) and the per-view post-filter scale, and
 * the CPU filtering step of FDK. */
#include "filter/filter.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif


ctr_status ctr__fdk_filter_init(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, ctr__fdk_filter *f) {
  memset(f, 0, sizeof *f);
  f->g = g;
  CTR_CHECK(ctr__scan_analyse(g, &f->scan));
  switch (o->short_scan) {
    case CTR_SHORT_SCAN_AUTO: f->parker = !f->scan.full; break;
    case CTR_SHORT_SCAN_OFF: f->parker = 0; break;
    case CTR_SHORT_SCAN_PARKER: f->parker = 1; break;
    default:
      ctr__fdk_filter_free(f);
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "short_scan = %d: expected auto, off or parker", (int)o->short_scan);
  }
  if (f->parker) {
    /* Less than 180 degrees plus the fan is ctr__fdk_geometry_report's
     * warning (ctr_fdk, ctr_fdk_stream*; callers of the halves ask
     * ctr_geometry_fdk_check); less than 180 has no weights. */
    if (f->scan.range < CTR__PI_D) {
      ctr__fdk_filter_free(f);
      CTR_FAIL(CTR_E_GEOMETRY, "short scan covers %.1f degrees: Parker weighting needs at least 180",
               f->scan.range * 180.0 / CTR__PI_D);
    }
  }
  double bmax = 0.0;
  for (int64_t k = 0; k < g->nviews; k++) bmax = fmax(bmax, f->scan.beta[k]);
  f->beta_shift = 0.5 * (f->scan.range - bmax);
  ctr_status st = ctr__ramp_create(g->nu, o->window, o->cutoff, &f->ramp);
  if (st != CTR_OK) ctr__fdk_filter_free(f);
  return st;
}

void ctr__fdk_filter_free(ctr__fdk_filter *f) {
  if (!f) return;
  ctr__scan_free(&f->scan);
  ctr__ramp_free(f->ramp);
  f->ramp = NULL;
}

ctr__fdk_view_params ctr__fdk_view_params_of(const ctr__fdk_filter *f, int64_t i) {
  const ctr__view *v = &f->g->views[i];
  ctr__fdk_view_params p;
  p.u0 = v->u0;
  p.v0 = v->v0;
  p.fu = v->fu;
  p.fv = v->fv;
  /* Views sample the middle of their angular interval. */
  p.beta = f->scan.beta[i] + f->beta_shift;
  p.range = f->scan.range;
  p.u_sign = f->scan.u_sign[i];
  p.parker = f->parker;
  /* Full scans count every ray twice; Parker weights already sum to one. */
  const double redundancy = f->parker ? 1.0 : 0.5;
  const double pitch_iso = v->dist / v->fu; /* detector pitch scaled to the origin, mm */
  p.scale = (float)(f->scan.dbeta[i] * redundancy / pitch_iso);
  return p;
}

void ctr__fdk_view_weights(const ctr__fdk_filter *f, int64_t i, float *w, float *scale) {
  const int64_t nu = f->g->nu, nv = f->g->nv;
  const ctr__fdk_view_params p = ctr__fdk_view_params_of(f, i);
  for (int64_t iv = 0; iv < nv; iv++) /* rows of the detector: a window's start at row0 */
    for (int64_t iu = 0; iu < nu; iu++)
      w[iv * nu + iu] = (float)ctr__fdk_pixel_weight(&p, (double)iu, (double)(f->g->row0 + iv));
  *scale = p.scale;
}

ctr_status ctr__fdk_filter_run(const ctr_context *ctx, const ctr__fdk_filter *f, int64_t v0,
                               int64_t n, float *proj, int64_t view_stride, int64_t row_stride) {
  const int64_t nu = f->g->nu, nv = f->g->nv;
  int failed = 0;
#pragma omp parallel num_threads(ctr__num_threads(ctx))
  {
    ctr__ramp_work *w = ctr__ramp_work_create(f->ramp);
    float *wt = ctr__malloc((size_t)(nu * nv) * sizeof(float), "filter weights");
    if (!w || !wt) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < n; k++) {
      int stop;
#pragma omp atomic read
      stop = failed;
      if (stop) continue;
      float scale;
      ctr__fdk_view_weights(f, v0 + k, wt, &scale);
      float *img = proj + k * view_stride;
      for (int64_t iv = 0; iv < nv; iv++)
        ctr__ramp_apply(f->ramp, w, img + iv * row_stride, wt + iv * nu, scale);
    }
    ctr__ramp_work_free(w);
    free(wt);
  }
  if (failed) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot allocate per-thread filter buffers");
  return CTR_OK;
}

ctr_status ctr_fdk_filter(ctr_context *ctx, const ctr_geometry *g, const ctr_fdk_options *opts,
                          int64_t v0, int64_t n, float *proj) {
  if (!g || !proj) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_fdk_filter: NULL geometry or data");
  ctr_fdk_options o;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_fdk_options, &o, opts));
  if (v0 < 0 || n < 0 || v0 + n > g->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "views [%lld, %lld): expected a range inside [0, %lld)",
             (long long)v0, (long long)(v0 + n), (long long)g->nviews);
  /* The data policy (src/core/values.c): bad values would spread over
   * whole rows in the filter. */
  const int64_t bad = ctr__values_count(proj, n * g->nu * g->nv);
  CTR_CHECK(ctr__values_report(ctx, o.strict, bad, "ctr_fdk_filter: projections"));
  if (bad) ctr__values_sanitize(proj, n * g->nu * g->nv);
  ctr__fdk_filter f;
  CTR_CHECK(ctr__fdk_filter_init(ctx, g, &o, &f));
  ctr_status st = ctr__fdk_filter_run(ctx, &f, v0, n, proj, g->nu * g->nv, g->nu);
  ctr__fdk_filter_free(&f);
  return st;
}

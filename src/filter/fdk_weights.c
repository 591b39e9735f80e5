/* FDK pre-weights (cosine, Parker, offset detector) and the per-view post-filter scale, and
 * the CPU filtering step of FDK. */
#include "filter/filter.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The overlap of view v: the distance (columns) from the principal point to
 * the centre of the farthest column on the detector's narrow side, whose
 * mirror image about u0 is also on the detector. */
static double overlap_half(const ctr_geometry *g, const ctr__view *v) {
  return fmin(v->u0, (double)(g->nu - 1) - v->u0);
}

/* The fan angle between columns of a cylindrical detector (radians: du /
 * sdd = 1 / fu), 0 for a flat detector (the ramp kernel's fan_step). */
static double fan_step(const ctr_geometry *g) {
  return g->curved ? 1.0 / fabs(g->views[0].fu) : 0.0;
}

/* Chooses the offset-detector weights (docs/geometry.md, "Offset detectors"). */
static ctr_status offset_init(const ctr_geometry *g, const ctr_fdk_options *o,
                              ctr__fdk_filter *f) {
  switch (o->offset_weight) {
    case CTR_OFFSET_WEIGHT_AUTO: f->offset = !g->helical && ctr__offset_detector(g, &f->scan); break;
    case CTR_OFFSET_WEIGHT_OFF: f->offset = 0; break;
    case CTR_OFFSET_WEIGHT_WANG: f->offset = 1; break;
    default:
      CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fdk_options.offset_weight",
                           CTR__V_INT(o->offset_weight),
                           "offset_weight = %d: expected auto, off or wang", (int)o->offset_weight);
  }
  if (!(o->offset_overlap >= 0.0 && isfinite(o->offset_overlap)))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fdk_options.offset_overlap",
                         CTR__V_REAL(o->offset_overlap),
                         "offset_overlap = %g columns: expected >= 0 (0: the whole overlap)",
                         o->offset_overlap);
  if (!f->offset) return CTR_OK;
  /* Both weightings at once would count conjugate rays twice over. */
  if (!f->scan.full)
    CTR_FAIL_FIELD(CTR_E_GEOMETRY, "ctr_fdk_options.offset_weight",
                   "offset (half-fan) weights need a full turn; the orbit covers %.1f degrees",
                   f->scan.range * 180.0 / CTR__PI_D);
  if (f->parker)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_fdk_options.offset_weight",
                   "offset (half-fan) weights and Parker weights together: a full turn needs "
                   "no Parker weights (short_scan auto or off)");
  double least = INFINITY;
  for (int64_t i = 0; i < g->nviews; i++) least = fmin(least, overlap_half(g, &g->views[i]));
  if (!(least > 0.0))
    CTR_FAIL_FIELD(CTR_E_GEOMETRY, "ctr_fdk_options.offset_weight",
                   "offset (half-fan) weights need a detector that reaches past the rotation "
                   "axis; the principal point is %.1f columns inside it in some view", least);
  if (o->offset_overlap > 2.0 * least + 1e-9)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_fdk_options.offset_overlap",
                         CTR__V_REAL(o->offset_overlap),
                         "offset_overlap = %g columns: the geometry's overlap is %.6g columns "
                         "(0: all of it)", o->offset_overlap, 2.0 * least);
  f->offset_half = 0.5 * o->offset_overlap;
  return CTR_OK;
}

ctr_status ctr__fdk_filter_init(const ctr_context *ctx, const ctr_geometry *g,
                                const ctr_fdk_options *o, ctr__fdk_filter *f) {
  memset(f, 0, sizeof *f);
  f->g = g;
  CTR_CHECK(ctr__helix_fdk_check(g));
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
  ctr_status st = offset_init(g, o, f);
  if (st == CTR_OK && g->helical && (f->parker || f->offset)) {
    /* the helix's window is its redundancy weighting */
    st = ctr__error_set_field(CTR_E_UNSUPPORTED, f->parker ? "ctr_fdk_options.short_scan"
                                                           : "ctr_fdk_options.offset_weight",
                              "a helical orbit's FDK weights its redundancy with its own window "
                              "(docs/geometry.md, \"Helical orbits\"), not with %s weights: "
                              "leave %s at auto or off",
                              f->parker ? "Parker" : "offset (half-fan)",
                              f->parker ? "short_scan" : "offset_weight");
  }
  if (st != CTR_OK) {
    ctr__fdk_filter_free(f);
    return st;
  }
  double bmax = 0.0;
  for (int64_t k = 0; k < g->nviews; k++) bmax = fmax(bmax, f->scan.beta[k]);
  f->beta_shift = 0.5 * (f->scan.range - bmax);
  f->pad_lo = 0;
  f->nu_ext = g->nu;
  st = ctr__ramp_create_fan(g->nu, o->window, o->cutoff, fan_step(g), &f->ramp);
  if (st != CTR_OK) ctr__fdk_filter_free(f);
  return st;
}

ctr_status ctr__fdk_filter_extend(const ctr_fdk_options *o, ctr__fdk_filter *f) {
  if (!f->offset) return CTR_OK;
  const ctr_geometry *g = f->g;
  /* The mirror image about u0 of the wide side's farthest column centre: at
   * 2 u0 - (nu - 1) when the wide side is high, at 2 u0 when it is low. */
  double lo = 0.0, hi = 0.0;
  for (int64_t i = 0; i < g->nviews; i++) {
    const double u0 = g->views[i].u0, up = (double)(g->nu - 1) - u0;
    lo = fmax(lo, up - u0);
    hi = fmax(hi, u0 - up);
  }
  const int64_t pad_lo = (int64_t)ceil(lo - 1e-6), pad_hi = (int64_t)ceil(hi - 1e-6);
  if (!pad_lo && !pad_hi) return CTR_OK;
  ctr__ramp *r = NULL;
  CTR_CHECK(ctr__ramp_create_fan(g->nu + pad_lo + pad_hi, o->window, o->cutoff, fan_step(g), &r));
  ctr__ramp_free(f->ramp);
  f->ramp = r;
  f->pad_lo = pad_lo;
  f->nu_ext = g->nu + pad_lo + pad_hi;
  return CTR_OK;
}

ctr_status ctr__fdk_row_width(const ctr_context *ctx, const ctr_geometry *g,
                              const ctr_fdk_options *o, int64_t *pad_lo, int64_t *nu_ext) {
  ctr__fdk_filter f;
  CTR_CHECK(ctr__fdk_filter_init(ctx, g, o, &f));
  const ctr_status st = ctr__fdk_filter_extend(o, &f);
  *pad_lo = f.pad_lo;
  *nu_ext = f.nu_ext;
  ctr__fdk_filter_free(&f);
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
  p.offset_side = 0;
  p.offset_gamma = 0.0;
  if (f->offset) {
    const double h = f->offset_half > 0.0 ? f->offset_half : overlap_half(f->g, v);
    p.offset_side = (double)(f->g->nu - 1) - v->u0 >= v->u0 ? 1 : -1;
    p.offset_gamma = ctr__geometry_fan_angle(f->g, v, h);
  }
  p.curved = f->g->curved;
  /* Full scans count every ray twice; Parker and offset weights already sum
   * to one. */
  const double redundancy = f->parker || f->offset ? 1.0 : 0.5;
  const double pitch_iso = v->dist / v->fu; /* detector pitch scaled to the origin, mm */
  p.scale = (float)(f->scan.dbeta[i] * redundancy / pitch_iso);
  return p;
}

void ctr__fdk_view_weights(const ctr__fdk_filter *f, int64_t i, float *w, float *scale) {
  const int64_t nu = f->nu_ext, nv = f->g->nv;
  const ctr__fdk_view_params p = ctr__fdk_view_params_of(f, i);
  for (int64_t iv = 0; iv < nv; iv++) /* rows of the detector: a window's start at row0 */
    for (int64_t iu = 0; iu < nu; iu++)
      w[iv * nu + iu] =
          (float)ctr__fdk_pixel_weight(&p, (double)(iu - f->pad_lo), (double)(f->g->row0 + iv));
  *scale = p.scale;
}

ctr_status ctr__fdk_filter_run(const ctr_context *ctx, const ctr__fdk_filter *f, int64_t v0,
                               int64_t n, float *proj, int64_t view_stride, int64_t row_stride) {
  const int64_t nu = f->nu_ext, nv = f->g->nv;
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
  ctr_status st = ctr__fdk_filter_extend(&o, &f);
  if (st == CTR_OK && f.nu_ext != g->nu)
    st = ctr__error_set_field(CTR_E_UNSUPPORTED, "ctr_fdk_options.offset_weight",
        "ctr_fdk_filter: an offset (half-fan) detector's weighted rows are filtered with %lld "
        "zero columns beyond the narrow edge (%lld columns, not the detector's %lld), which the "
        "nu x nv arrays of ctr_fdk_filter and ctr_fdk_backproject cannot hold: use ctr_fdk or "
        "ctr_fdk_stream, which extend the rows, or offset_weight = CTR_OFFSET_WEIGHT_OFF",
        (long long)(f.nu_ext - g->nu), (long long)f.nu_ext, (long long)g->nu);
  if (st == CTR_OK) st = ctr__fdk_filter_run(ctx, &f, v0, n, proj, g->nu * g->nv, g->nu);
  ctr__fdk_filter_free(&f);
  return st;
}

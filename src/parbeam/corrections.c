/* The corrections' options, their array functions (dispatch to the
 * context's backend, backend.h) and 360-degree stitching
 * (docs/synchrotron.md). */
#include "parbeam/backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ---- Options ---------------------------------------------------------------- */

ctr_status ctr__corrections_resolve(const ctr_corrections *in, ctr_corrections *o) {
  /* the caller's version read into the current layout (NULL: the defaults) */
  CTR_CHECK(ctr__struct_copy(&ctr__struct_corrections, o, in));
  if (o->center_method < CTR_CENTER_AUTO || o->center_method > CTR_CENTER_CORRELATION)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.center_method",
                   CTR__V_INT(o->center_method),
                   "ctr_corrections.center_method = %d: expected "
                   "CTR_CENTER_AUTO, CTR_CENTER_VO or CTR_CENTER_CORRELATION", (int)o->center_method);
  if (!isfinite(o->center_min) || !isfinite(o->center_max) || o->center_max < o->center_min)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_corrections.center_min",
                   "ctr_corrections.center_min, center_max = %g, %g: expected "
                   "finite bins, min <= max (both 0: the whole detector)", o->center_min, o->center_max);
  if (!(o->dezinger >= 0) || !isfinite(o->dezinger))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.dezinger",
                   CTR__V_REAL(o->dezinger),
                   "ctr_corrections.dezinger = %g: expected a threshold >= 0 "
                   "(-log units; 0 = off)", o->dezinger);
  if (!o->dezinger_size) o->dezinger_size = 3;
  if (o->dezinger_size < 3 || o->dezinger_size > 15 || o->dezinger_size % 2 == 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.dezinger_size",
                   CTR__V_INT(o->dezinger_size),
                   "ctr_corrections.dezinger_size = %d: expected an odd size "
                   "3 .. 15", o->dezinger_size);
  if (o->stripe < CTR_STRIPE_NONE || o->stripe > CTR_STRIPE_WAVELET)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stripe", CTR__V_INT(o->stripe),
                   "ctr_corrections.stripe = %d: expected CTR_STRIPE_NONE, "
                   "CTR_STRIPE_SORTING or CTR_STRIPE_WAVELET", (int)o->stripe);
  if (!o->stripe_size) o->stripe_size = 21;
  if (o->stripe_size < 3 || o->stripe_size > 255 || o->stripe_size % 2 == 0)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stripe_size",
                   CTR__V_INT(o->stripe_size),
                   "ctr_corrections.stripe_size = %d: expected an odd width "
                   "3 .. 255", o->stripe_size);
  if (!o->stripe_level) o->stripe_level = 3;
  if (o->stripe_level < 1 || o->stripe_level > 8)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stripe_level",
                   CTR__V_INT(o->stripe_level),
                   "ctr_corrections.stripe_level = %d: expected 1 .. 8",
                   o->stripe_level);
  if (o->stripe_sigma == 0) o->stripe_sigma = 1.0;
  if (!(o->stripe_sigma > 0) || !isfinite(o->stripe_sigma))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stripe_sigma",
                   CTR__V_REAL(o->stripe_sigma),
                   "ctr_corrections.stripe_sigma = %g: expected > 0",
                   o->stripe_sigma);
  if (!o->stripe_wavelet) o->stripe_wavelet = 5;
  if (o->stripe_wavelet < 1 || o->stripe_wavelet > 10)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stripe_wavelet",
                   CTR__V_INT(o->stripe_wavelet),
                   "ctr_corrections.stripe_wavelet = %d: expected a Daubechies "
                   "order 1 .. 10", o->stripe_wavelet);
  if (!(o->paganin_delta_beta >= 0) || !isfinite(o->paganin_delta_beta))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.paganin_delta_beta",
                   CTR__V_REAL(o->paganin_delta_beta),
                   "ctr_corrections.paganin_delta_beta = %g: expected >= 0 "
                   "(0 = off)", o->paganin_delta_beta);
  const int energy_ok = o->energy_kev > 0 && isfinite(o->energy_kev);
  if (o->paganin_delta_beta > 0 && (!energy_ok || !(o->distance_mm > 0) ||
                                    !isfinite(o->distance_mm)))
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT,
                   energy_ok ? "ctr_corrections.distance_mm" : "ctr_corrections.energy_kev",
                   CTR__V_REAL(energy_ok ? o->distance_mm : o->energy_kev),
                   "ctr_corrections.energy_kev = %g, distance_mm = %g: "
                   "Paganin's filter needs a photon energy and a sample-detector distance > 0",
                   o->energy_kev, o->distance_mm);
  if (o->stitch_360 != 0 && o->stitch_360 != 1)
    CTR_FAIL_FIELD_VALUE(CTR_E_INVALID_ARGUMENT, "ctr_corrections.stitch_360",
                   CTR__V_INT(o->stitch_360),
                   "ctr_corrections.stitch_360 = %d: expected 0 or 1",
                   o->stitch_360);
  if (o->bin_x == 0) o->bin_x = 1;
  if (o->bin_y == 0) o->bin_y = 1;
  if (o->bin_x < 1 || o->bin_y < 1 || o->bin_x > 64 || o->bin_y > 64)
    CTR_FAIL_FIELD(CTR_E_INVALID_ARGUMENT, "ctr_corrections.bin_x",
                   "ctr_corrections.bin_x, bin_y = %d, %d: expected 1 .. 64",
                   o->bin_x, o->bin_y);
  return CTR_OK;
}

int ctr__corrections_any(const ctr_corrections *c) {
  return c->dezinger > 0 || c->stripe != CTR_STRIPE_NONE || c->paganin_delta_beta > 0 ||
         c->stitch_360 || c->bin_x > 1 || c->bin_y > 1;
}

static ctr_status check_sino(const char *fn, int64_t nb, int64_t na, int64_t ns, const void *p) {
  if (nb < 1 || na < 1 || ns < 1 || !p)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: nbins, nangles, nslices = %lld, %lld, %lld and the "
             "sinograms %s: expected sizes >= 1 and data", fn, (long long)nb, (long long)na,
             (long long)ns, p ? "given" : "NULL");
  return CTR_OK;
}

/* ---- Array functions ---------------------------------------------------------- */

ctr_status ctr_sinogram_dezinger(ctr_context *ctx, const ctr_corrections *c, int64_t nbins,
                                 int64_t nangles, int64_t nslices, float *sino, int64_t *replaced) {
  ctr_corrections o;
  if (replaced) *replaced = 0;
  CTR_CHECK(ctr__corrections_resolve(c, &o));
  CTR_CHECK(check_sino("ctr_sinogram_dezinger", nbins, nangles, nslices, sino));
  if (!(o.dezinger > 0)) return CTR_OK;
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  int64_t n = 0;
  CTR_CHECK(be->dezinger(ctx, o.dezinger, o.dezinger_size, nbins, nangles, nslices, sino, &n));
  if (replaced) *replaced = n;
  return CTR_OK;
}

ctr_status ctr_sinogram_remove_stripes(ctr_context *ctx, const ctr_corrections *c, int64_t nbins,
                                       int64_t nangles, int64_t nslices, float *sino) {
  ctr_corrections o;
  CTR_CHECK(ctr__corrections_resolve(c, &o));
  CTR_CHECK(check_sino("ctr_sinogram_remove_stripes", nbins, nangles, nslices, sino));
  if (o.stripe == CTR_STRIPE_NONE) return CTR_OK;
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  return be->stripes(ctx, &o, nbins, nangles, nslices, sino);
}

/* ---- Paganin ------------------------------------------------------------------- */

ctr_status ctr_paganin_filter(ctr_context *ctx, const ctr_corrections *c, double pixel_mm,
                              int64_t width, int64_t height, int64_t n, float *images) {
  ctr_corrections o;
  CTR_CHECK(ctr__corrections_resolve(c, &o));
  if (width < 1 || height < 1 || n < 1 || !images)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_paganin_filter: width, height, n = %lld, %lld, %lld and "
             "images %s: expected sizes >= 1 and data", (long long)width, (long long)height,
             (long long)n, images ? "given" : "NULL");
  if (!(o.paganin_delta_beta > 0)) return CTR_OK;
  if (!(pixel_mm > 0) || !isfinite(pixel_mm))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_paganin_filter: pixel_mm = %g, expected the detector "
             "pixel in mm (> 0)", pixel_mm);
  const ctr__par_backend *be;
  CTR_CHECK(ctr__par_backend_of(ctx, &be));
  return be->paganin(ctx, &o, pixel_mm, ctr_paganin_margin(&o, pixel_mm), width, height, n, images);
}

/* ---- 360-degree stitching -------------------------------------------------------- */

ctr_status ctr_stitch_360_geometry(const ctr_parallel_geometry *g, ctr_parallel_geometry **out) {
  if (!g || !out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stitch_360_geometry: g and out are required");
  *out = NULL;
  const ctr_parallel_params *p = &g->p;
  const int64_t na = p->nangles, half = na / 2;
  if (na < 2 || na % 2)
    CTR_FAIL(CTR_E_GEOMETRY, "360-degree stitching: %lld angles, expected an even number (a "
             "full turn: angle a + nangles / 2 = angle a + 180)", (long long)na);
  for (int64_t a = 0; a < half; a++)
    if (fabs(g->angles_deg[a + half] - g->angles_deg[a] - 180.0) > 1e-3)
      CTR_FAIL(CTR_E_GEOMETRY, "360-degree stitching: angle %lld is %.6g degrees and angle %lld "
               "%.6g: expected 180 degrees apart (a full turn of evenly paired projections)",
               (long long)a, g->angles_deg[a], (long long)(a + half), g->angles_deg[a + half]);
  const double c = p->axis, n1 = (double)(p->nbins - 1);
  const int64_t tmin = (int64_t)floor(fmin(0.0, 2.0 * c - n1));
  const int64_t tmax = (int64_t)ceil(fmax(n1, 2.0 * c));
  ctr_parallel_params q = *p;
  q.nbins = tmax - tmin + 1;
  q.nangles = half;
  q.angles_deg = g->angles_deg;
  q.axis = c - (double)tmin;
  q.axis_shift = NULL;
  if (p->nx == p->nbins && p->ny == p->nbins) q.nx = q.ny = 0;
  return ctr_parallel_create(&q, out);
}

double ctr__stitch_weight(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                          double t_out) {
  const double c = g->p.axis, n1 = (double)(g->p.nbins - 1);
  const double t = t_out + (c - out->p.axis); /* bins of g */
  const double o0 = fmax(0.0, 2.0 * c - n1), o1 = fmin(n1, 2.0 * c);
  if (o1 <= o0) return t >= 0 && t <= n1 ? 1.0 : 0.0;
  const double f = (t - o0) / (o1 - o0);
  if (c >= n1 / 2) return f <= 0 ? 1.0 : f >= 1 ? 0.0 : 1.0 - f; /* direct on the left */
  return f <= 0 ? 0.0 : f >= 1 ? 1.0 : f;                        /* direct on the right */
}

/* Keys' cubic convolution (a = -1/2; Keys 1981) of row r (n samples,
 * edges repeated) at x in [0, n - 1]: exact for quadratics, continuous
 * first derivative. */
double ctr__cubic(const float *r, int64_t n, double x) {
  const int64_t i = (int64_t)floor(x);
  const double t = x - (double)i;
  double p[4];
  for (int k = 0; k < 4; k++) {
    int64_t j = i - 1 + k;
    p[k] = r[j < 0 ? 0 : j >= n ? n - 1 : j];
  }
  return p[1] + 0.5 * t * (p[2] - p[0] + t * (2.0 * p[0] - 5.0 * p[1] + 4.0 * p[2] - p[3] +
                                              t * (3.0 * (p[1] - p[2]) + p[3] - p[0])));
}

void ctr__stitch_rows(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                      int64_t nslices, const float *sino, float *out_sino) {
  const int64_t nb = g->p.nbins, na = g->p.nangles, half = na / 2, nbo = out->p.nbins;
  const double c = g->p.axis, shift = c - out->p.axis;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t s = 0; s < nslices; s++)
    for (int64_t a = 0; a < half; a++) {
      const float *d = sino + (s * na + a) * nb, *m = sino + (s * na + a + half) * nb;
      float *o = out_sino + (s * half + a) * nbo;
      for (int64_t j = 0; j < nbo; j++) {
        const double t = (double)j + shift, u = 2.0 * c - t; /* direct bin, mirrored bin */
        const double w = ctr__stitch_weight(g, out, (double)j);
        double v = 0;
        if (w > 0 && t >= 0 && t <= (double)(nb - 1)) v += w * d[(int64_t)llround(t)];
        if (w < 1 && u >= 0 && u <= (double)(nb - 1)) v += (1 - w) * ctr__cubic(m, nb, u);
        o[j] = (float)v;
      }
    }
}

ctr_status ctr_stitch_360(const ctr_parallel_geometry *g, const ctr_parallel_geometry *out,
                          int64_t nslices, const float *sino, float *out_sino) {
  if (!g || !out || !sino || !out_sino || nslices < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stitch_360: g, out, sino, out_sino and nslices >= 1 "
             "are required");
  if (out->p.nangles * 2 != g->p.nangles)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_stitch_360: out has %lld angles, expected %lld (from "
             "ctr_stitch_360_geometry)", (long long)out->p.nangles, (long long)(g->p.nangles / 2));
  ctr__stitch_rows(g, out, nslices, sino, out_sino);
  return CTR_OK;
}

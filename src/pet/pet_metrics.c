/* Contrast recovery and noise of a reconstructed PET image (Ha et al. 2013,
 * section 6.1): 2D circular and annular ROIs on one slice, each pixel weighted by the
 * fraction of its area inside the ROI (8 x 8 point samples per pixel). */
#include "core/internal.h"

#include <math.h>
#include <string.h>

/* Point samples per pixel side for the ROI membership weights. */
#define PET_ROI_SUPERSAMPLE 8
/* Ha et al. 2013, section 6.1: the annulus starts 14 mm (in diameter) beyond the
 * sphere and is 8 mm thick; the noise ROI is 50 mm across. */
#define PET_ANNULUS_GAP_MM 14.0
#define PET_ANNULUS_WIDTH_MM 8.0
#define PET_NOISE_ROI_MM 50.0

/* Weighted sums of one ROI: weights w (pixel area fraction inside), values f. */
typedef struct roi_sums {
  double w, w2, wf; /* sum w, sum w^2, sum w f */
  int64_t pixels;   /* pixels with w > 0 */
} roi_sums;

/* Fraction of pixel (i, j)'s area (centre cx, cy; side v) whose distance r
 * from (x0, y0) satisfies r_in <= r < r_out (r_in = 0: a disc). */
static double pixel_fraction(double cx, double cy, double v, double x0, double y0, double r_in,
                             double r_out) {
  const int n = PET_ROI_SUPERSAMPLE;
  const double rin2 = r_in * r_in, rout2 = r_out * r_out;
  int inside = 0;
  for (int b = 0; b < n; b++) {
    const double y = cy + ((b + 0.5) / n - 0.5) * v - y0;
    for (int a = 0; a < n; a++) {
      const double x = cx + ((a + 0.5) / n - 0.5) * v - x0;
      const double r2 = x * x + y * y;
      inside += r2 >= rin2 && r2 < rout2;
    }
  }
  return (double)inside / (double)(n * n);
}

/* Pixel bounds [lo, hi] of the lattice along one axis (n voxels of v mm,
 * centred) whose area may meet [c - r, c + r]; empty (lo > hi) when none. */
static void pixel_range(int64_t n, double v, double c, double r, int64_t *lo, int64_t *hi) {
  const double h = 0.5 * (double)(n - 1);
  double a = floor((c - r) / v + h - 0.5), b = ceil((c + r) / v + h + 0.5);
  if (a < 0) a = 0;
  if (b > (double)(n - 1)) b = (double)(n - 1);
  *lo = (int64_t)a;
  *hi = (int64_t)b;
}

/* Visits the pixels of slice k meeting the ROI (x0, y0, r_in, r_out); for
 * each with weight w > 0 calls the accumulation given by `mean` (second pass
 * of the variance when mean is non-NULL). Fails on a non-finite value. */
static ctr_status roi_accumulate(const ctr_pet_params *p, const float *image, int64_t k,
                                 double x0, double y0, double r_in, double r_out,
                                 const char *what, roi_sums *s, const double *mean,
                                 double *sq) {
  const double v = p->voxel, hx = 0.5 * (double)(p->nx - 1), hy = 0.5 * (double)(p->ny - 1);
  int64_t i0, i1, j0, j1;
  pixel_range(p->nx, v, x0, r_out, &i0, &i1);
  pixel_range(p->ny, v, y0, r_out, &j0, &j1);
  const float *slice = image + k * p->nx * p->ny;
  for (int64_t j = j0; j <= j1; j++) {
    const double cy = ((double)j - hy) * v;
    for (int64_t i = i0; i <= i1; i++) {
      const double cx = ((double)i - hx) * v;
      const double w = pixel_fraction(cx, cy, v, x0, y0, r_in, r_out);
      if (w <= 0.0) continue;
      const double f = (double)slice[j * p->nx + i];
      if (!isfinite(f))
        CTR_FAIL(CTR_E_INVALID_ARGUMENT,
                 "ctr_pet_metrics_compute: image value at voxel (%lld, %lld, %lld) in the %s is "
                 "not finite",
                 (long long)i, (long long)j, (long long)k, what);
      if (mean) {
        *sq += w * (f - *mean) * (f - *mean);
      } else {
        s->w += w;
        s->w2 += w * w;
        s->wf += w * f;
        s->pixels++;
      }
    }
  }
  return CTR_OK;
}

/* Weighted mean of an ROI; fails when the ROI holds no pixel of the lattice. */
static ctr_status roi_mean(const ctr_pet_params *p, const float *image, int64_t k, double x0,
                           double y0, double r_in, double r_out, const char *what, roi_sums *s,
                           double *mean) {
  memset(s, 0, sizeof *s);
  CTR_CHECK(roi_accumulate(p, image, k, x0, y0, r_in, r_out, what, s, NULL, NULL));
  if (s->w <= 0.0)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_metrics_compute: the %s (centre %.6g, %.6g mm, radii %.6g..%.6g mm, slice "
             "%lld) covers no pixel of the %lld x %lld lattice of %.6g mm",
             what, x0, y0, r_in, r_out, (long long)k, (long long)p->nx, (long long)p->ny, p->voxel);
  *mean = s->wf / s->w;
  return CTR_OK;
}

/* Slice whose centre is nearest to z (ties go up: the central slice of an
 * even lattice is nz / 2); -1 when z lies outside the lattice. */
static int64_t nearest_slice(const ctr_pet_params *p, double z) {
  const double t = z / p->voxel + 0.5 * (double)(p->nz - 1);
  if (!(t >= -0.5 && t <= (double)p->nz - 0.5)) return -1;
  int64_t k = (int64_t)floor(t + 0.5);
  return k < 0 ? 0 : k >= p->nz ? p->nz - 1 : k;
}

ctr_status ctr_pet_metrics_compute(const ctr_pet_params *p, const ctr_pet_phantom *ph,
                                   const float *image, ctr_pet_metrics *out) {
  if (!p || !ph || !image || !out)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_metrics_compute: NULL %s",
             !p ? "params" : !ph ? "phantom" : !image ? "image" : "out");
  ctr_pet_params pc;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_params, &pc, p));
  p = &pc;
  CTR_CHECK(ctr__struct_check(&ctr__struct_pet_metrics, out));
  if (p->nx < 1 || p->ny < 1 || p->nz < 1)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_metrics_compute: lattice %lld x %lld x %lld: expected sizes >= 1",
             (long long)p->nx, (long long)p->ny, (long long)p->nz);
  if (!(p->voxel > 0.0) || !isfinite(p->voxel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_metrics_compute: voxel %g mm: expected a finite "
             "size > 0", p->voxel);
  if (ph->nspheres < 1 || ph->nspheres > CTR_PET_MAX_SPHERES)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_metrics_compute: the phantom has %d spheres: expected 1 .. %d (CRC needs "
             "spheres, e.g. ctr_pet_phantom_spheres)",
             ph->nspheres, CTR_PET_MAX_SPHERES);
  if (!(ph->background > 0.0) || !isfinite(ph->background))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_metrics_compute: phantom background activity %g: expected > 0 (the ideal "
             "contrast is sphere / background - 1)",
             ph->background);
  const double half_x = 0.5 * (double)p->nx * p->voxel, half_y = 0.5 * (double)p->ny * p->voxel;
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  m.nspheres = ph->nspheres;
  double crc_sum = 0.0;
  for (int s = 0; s < ph->nspheres; s++) {
    const ctr_pet_sphere *sp = &ph->spheres[s];
    if (!(sp->diameter > 0.0) || !isfinite(sp->diameter) || !isfinite(sp->activity))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "ctr_pet_metrics_compute: spheres[%d]: diameter %g mm, activity %g: expected a "
               "finite diameter > 0 and a finite activity",
               s, sp->diameter, sp->activity);
    const int64_t k = nearest_slice(p, sp->z);
    if (k < 0 || !(fabs(sp->x) <= half_x) || !(fabs(sp->y) <= half_y))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "ctr_pet_metrics_compute: spheres[%d] at (%g, %g, %g) mm lies outside the lattice "
               "(%lld x %lld x %lld voxels of %g mm: |x| <= %g, |y| <= %g, |z| <= %g mm)",
               s, sp->x, sp->y, sp->z, (long long)p->nx, (long long)p->ny, (long long)p->nz,
               p->voxel, half_x, half_y, 0.5 * (double)p->nz * p->voxel);
    const double c = sp->activity / ph->background - 1.0;
    if (c == 0.0)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "ctr_pet_metrics_compute: spheres[%d] has the background's activity %g: the ideal "
               "contrast is 0, CRC is undefined",
               s, sp->activity);
    const double r = 0.5 * sp->diameter, r_in = 0.5 * (sp->diameter + PET_ANNULUS_GAP_MM);
    roi_sums rs, bs;
    double ps = 0.0, pb = 0.0;
    CTR_CHECK(roi_mean(p, image, k, sp->x, sp->y, 0.0, r, "sphere ROI", &rs, &ps));
    CTR_CHECK(roi_mean(p, image, k, sp->x, sp->y, r_in, r_in + PET_ANNULUS_WIDTH_MM,
                       "background annulus", &bs, &pb));
    if (!(pb > 0.0))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT,
               "ctr_pet_metrics_compute: background mean %g in the annulus of spheres[%d] (slice "
               "%lld): expected > 0",
               pb, s, (long long)k);
    m.crc_sphere[s] = (ps - pb) / pb / c;
    crc_sum += m.crc_sphere[s];
  }
  m.crc = crc_sum / (double)ph->nspheres;

  /* Noise: weighted relative standard deviation in the central 50 mm disc,
   * with the unbiased (reliability weights) normalisation V1 - V2 / V1,
   * which is n - 1 when every weight is 1. */
  const int64_t kc = p->nz / 2;
  const double rn = 0.5 * PET_NOISE_ROI_MM;
  roi_sums ns;
  double mean = 0.0, sq = 0.0;
  CTR_CHECK(roi_mean(p, image, kc, 0.0, 0.0, 0.0, rn, "noise ROI", &ns, &mean));
  if (!(mean > 0.0))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_metrics_compute: background mean %g in the 50 mm noise ROI at the centre "
             "of slice %lld: expected > 0",
             mean, (long long)kc);
  CTR_CHECK(roi_accumulate(p, image, kc, 0.0, 0.0, 0.0, rn, "noise ROI", &ns, &mean, &sq));
  const double denom = ns.w - ns.w2 / ns.w;
  m.noise = denom > 0.0 ? sqrt(sq / denom) / mean : 0.0;
  m.background_mean = mean;
  return ctr__struct_store(&ctr__struct_pet_metrics, out, &m);
}

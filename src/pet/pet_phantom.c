/* TOF-PET activity phantoms: Ha et al. 2013's sphere and point-source phantoms,
 * their validation and evaluation, and voxelisation onto the image lattice.
 *
 * Units: the cylinder's background and a sphere's activity are activity per
 * unit volume (a sphere's value replaces the background inside it); a point
 * source's activity is its total activity, i.e. background-per-mm^3 units
 * times mm^3. Voxelisation therefore adds activity / voxel^3 to the point's
 * voxel, so that sum(image) * voxel^3 is the phantom's total activity for
 * every kind of source, and the simulator (which weighs points by activity
 * and the continuous part by its integral) agrees with a simulation from
 * the voxelised image. */
#include "pet/pet_data.h"

#include <math.h>
#include <string.h>

#define CTR__PI 3.14159265358979323846

ctr_status ctr__pet_params_check(const ctr_pet_params *in, const char *who, ctr_pet_params *p) {
  if (!in) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: PET parameters are NULL", who);
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_params, p, in));
  const int64_t n[3] = {p->nx, p->ny, p->nz};
  static const char *names[3] = {"nx", "ny", "nz"};
  for (int i = 0; i < 3; i++)
    if (n[i] < 1 || n[i] > 65536)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: lattice %s is %lld, expected 1 .. 65536", who,
               names[i], (long long)n[i]);
  if (!(p->voxel > 0) || !isfinite(p->voxel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: voxel is %g mm, expected a finite size > 0", who,
             p->voxel);
  if (p->n_azimuth < 1 || p->n_azimuth > 100000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: n_azimuth is %d, expected 1 .. 100000", who,
             p->n_azimuth);
  if (p->n_copolar < 1 || p->n_copolar > 100000)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: n_copolar is %d, expected 1 .. 100000", who,
             p->n_copolar);
  if (!(p->acceptance_deg >= 0 && p->acceptance_deg < 90))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: acceptance_deg is %g, expected 0 <= value < 90", who,
             p->acceptance_deg);
  return CTR_OK;
}

static int nonneg(double v) { return isfinite(v) && v >= 0; }

ctr_status ctr__pet_phantom_check(const ctr_pet_phantom *ph, const char *who) {
  if (!ph) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: phantom is NULL", who);
  if (!nonneg(ph->cylinder_diameter) || !nonneg(ph->cylinder_length))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "%s: cylinder diameter %g mm / length %g mm: expected finite values >= 0", who,
             ph->cylinder_diameter, ph->cylinder_length);
  if (!nonneg(ph->background))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: background is %g, expected a finite activity >= 0",
             who, ph->background);
  if (!nonneg(ph->mu_per_mm))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: mu_per_mm is %g, expected a finite value >= 0", who,
             ph->mu_per_mm);
  if (ph->nspheres < 0 || ph->nspheres > CTR_PET_MAX_SPHERES)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: nspheres is %d, expected 0 .. %d", who, ph->nspheres,
             CTR_PET_MAX_SPHERES);
  if (ph->npoints < 0 || ph->npoints > CTR_PET_MAX_SPHERES)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: npoints is %d, expected 0 .. %d", who, ph->npoints,
             CTR_PET_MAX_SPHERES);
  for (int k = 0; k < ph->nspheres + ph->npoints; k++) {
    const int is_point = k >= ph->nspheres;
    const ctr_pet_sphere *s = is_point ? &ph->points[k - ph->nspheres] : &ph->spheres[k];
    const int i = is_point ? k - ph->nspheres : k;
    const char *kind = is_point ? "points" : "spheres";
    if (!isfinite(s->x) || !isfinite(s->y) || !isfinite(s->z))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s[%d] position is not finite", who, kind, i);
    if (!is_point && !nonneg(s->diameter))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: spheres[%d].diameter is %g, expected >= 0 mm", who,
               i, s->diameter);
    if (!nonneg(s->activity))
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s[%d].activity is %g, expected a finite value >= 0",
               who, kind, i, s->activity);
  }
  return CTR_OK;
}

int ctr__pet_phantom_has_cylinder(const ctr_pet_phantom *ph) {
  return ph->cylinder_diameter > 0 && ph->cylinder_length > 0;
}

double ctr__pet_phantom_density(const ctr_pet_phantom *ph, const double x[3]) {
  for (int k = ph->nspheres - 1; k >= 0; k--) {
    const ctr_pet_sphere *s = &ph->spheres[k];
    const double dx = x[0] - s->x, dy = x[1] - s->y, dz = x[2] - s->z, r = 0.5 * s->diameter;
    if (dx * dx + dy * dy + dz * dz <= r * r) return s->activity;
  }
  if (!ctr__pet_phantom_has_cylinder(ph)) return 0.0;
  const double R = 0.5 * ph->cylinder_diameter;
  if (x[0] * x[0] + x[1] * x[1] <= R * R && fabs(x[2]) <= 0.5 * ph->cylinder_length)
    return ph->background;
  return 0.0;
}

double ctr__pet_cylinder_chord(const ctr_pet_phantom *ph, const double x[3], const double d[3]) {
  if (!ctr__pet_phantom_has_cylinder(ph)) return 0.0;
  const double R = 0.5 * ph->cylinder_diameter, H = 0.5 * ph->cylinder_length;
  double lo = -INFINITY, hi = INFINITY;
  /* Radial: |x_xy + s d_xy| <= R. */
  const double A = d[0] * d[0] + d[1] * d[1];
  const double B = x[0] * d[0] + x[1] * d[1];
  const double C = x[0] * x[0] + x[1] * x[1] - R * R;
  if (A > 1e-300) {
    const double disc = B * B - A * C;
    if (disc <= 0) return 0.0;
    const double q = sqrt(disc);
    lo = (-B - q) / A;
    hi = (-B + q) / A;
  } else if (C > 0) {
    return 0.0;
  }
  /* Axial: |z + s dz| <= H. */
  if (d[2] != 0) {
    double a = (-H - x[2]) / d[2], b = (H - x[2]) / d[2];
    if (a > b) {
      const double t = a;
      a = b;
      b = t;
    }
    if (a > lo) lo = a;
    if (b < hi) hi = b;
  } else if (fabs(x[2]) > H) {
    return 0.0;
  }
  return hi > lo ? hi - lo : 0.0;
}

/* z = 0 is a slice boundary of a lattice with an even number of slices; the
 * spheres and points sit at the centre of slice 24 of the default 48-slice
 * 4 mm lattice instead, so the central slice cuts them through the middle. */
#define CTR__CENTRAL_SLICE_Z 2.0

void ctr_pet_phantom_spheres(ctr_pet_phantom *ph, double contrast) {
  if (!ph) return;
  memset(ph, 0, sizeof *ph);
  ph->cylinder_diameter = 350.0;
  /* The default lattice's axial extent (48 slices of 4 mm): the phantom
   * fills it, and no activity is simulated where no voxel can hold it. */
  ph->cylinder_length = 192.0;
  ph->background = 1.0;
  ph->mu_per_mm = 0.0096;
  ph->nspheres = 6;
  for (int i = 0; i < 6; i++) {
    const double a = i * CTR__PI / 3.0;
    ctr_pet_sphere *s = &ph->spheres[i];
    s->x = 75.0 * cos(a);
    s->y = 75.0 * sin(a);
    s->z = CTR__CENTRAL_SLICE_Z;
    s->diameter = 10.0;
    s->activity = contrast;
  }
}

void ctr_pet_phantom_points(ctr_pet_phantom *ph) {
  if (!ph) return;
  memset(ph, 0, sizeof *ph);
  ph->npoints = 3;
  for (int i = 0; i < 3; i++) {
    ph->points[i].y = 60.0 * i;
    ph->points[i].z = CTR__CENTRAL_SLICE_Z;
    ph->points[i].activity = 1.0;
  }
}

ctr_status ctr_pet_phantom_voxelize(const ctr_pet_phantom *ph, const ctr_pet_params *p,
                                    int supersample, float *image) {
  CTR_CHECK(ctr__pet_phantom_check(ph, "ctr_pet_phantom_voxelize"));
  ctr_pet_params pc;
  CTR_CHECK(ctr__pet_params_check(p, "ctr_pet_phantom_voxelize", &pc));
  p = &pc;
  if (supersample < 1 || supersample > 64)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "ctr_pet_phantom_voxelize: supersample is %d, expected 1 .. 64", supersample);
  if (!image) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_phantom_voxelize: image is NULL");
  const int64_t nx = p->nx, ny = p->ny, nz = p->nz;
  const double v = p->voxel, cx = 0.5 * (double)(nx - 1), cy = 0.5 * (double)(ny - 1),
               cz = 0.5 * (double)(nz - 1);
  const int ss = supersample;
  const double inv = 1.0 / ((double)ss * ss * ss);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < nz; k++)
    for (int64_t j = 0; j < ny; j++)
      for (int64_t i = 0; i < nx; i++) {
        double sum = 0.0;
        for (int c = 0; c < ss; c++)
          for (int b = 0; b < ss; b++)
            for (int a = 0; a < ss; a++) {
              /* Sub-voxel centres. */
              const double x[3] = {((double)i - cx + (a + 0.5) / ss - 0.5) * v,
                                   ((double)j - cy + (b + 0.5) / ss - 0.5) * v,
                                   ((double)k - cz + (c + 0.5) / ss - 0.5) * v};
              sum += ctr__pet_phantom_density(ph, x);
            }
        image[(k * ny + j) * nx + i] = (float)(sum * inv);
      }
  for (int n = 0; n < ph->npoints; n++) {
    const ctr_pet_sphere *s = &ph->points[n];
    const double fi = floor(s->x / v + cx + 0.5), fj = floor(s->y / v + cy + 0.5),
                 fk = floor(s->z / v + cz + 0.5);
    if (fi < 0 || fj < 0 || fk < 0 || fi >= (double)nx || fj >= (double)ny || fk >= (double)nz)
      continue; /* outside the lattice: nothing can hold it */
    const int64_t idx = ((int64_t)fk * ny + (int64_t)fj) * nx + (int64_t)fi;
    image[idx] += (float)(s->activity / (v * v * v));
  }
  return CTR_OK;
}

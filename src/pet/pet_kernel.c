/* The SR-kernel model of a PET system: each view's frame, the kernel
 * identifiers along the LOR-radial axis, the kernel values and the extent of
 * their support (Ha et al. 2013, section 4.1; asymmetric kernels section 5.2). Used
 * by the system (pet_system.c) and the view tables (pet_lut.c); calls
 * nothing else in src/pet. */
#include "pet/pet.h"

#include <math.h>

void ctr__pet_frame_of(const ctr_pet_system *s, int64_t v, ctr__pet_frame *f) {
  const ctr_pet_params *p = &s->p;
  int64_t a = v % p->n_azimuth, c = v / p->n_azimuth;
  double acc = p->acceptance_deg * M_PI / 180.0;
  f->phi = (a + 0.5) * M_PI / p->n_azimuth;
  f->theta = -acc + (c + 0.5) * 2.0 * acc / p->n_copolar;
  double cp = cos(f->phi), sp = sin(f->phi), ct = cos(f->theta), st = sin(f->theta);
  f->d[0] = ct * cp, f->d[1] = ct * sp, f->d[2] = st;
  f->r[0] = -sp, f->r[1] = cp, f->r[2] = 0;
  /* a = d x r */
  f->a[0] = f->d[1] * f->r[2] - f->d[2] * f->r[1];
  f->a[1] = f->d[2] * f->r[0] - f->d[0] * f->r[2];
  f->a[2] = f->d[0] * f->r[1] - f->d[1] * f->r[0];
}

double ctr__pet_sigma_radial(const ctr_pet_system *s, double rho_mm) {
  return ctr_pet_system_radial_fwhm(s, rho_mm) * CTR__PET_FWHM_TO_SIGMA;
}

double ctr_pet_system_radial_fwhm(const ctr_pet_system *s, double rho_mm) {
  const ctr_pet_kernel_params *k = &s->k;
  double r = fabs(rho_mm);
  if (k->radial_table_n > 0) {
    const double *t = s->radial_table;
    int n = k->radial_table_n;
    if (r <= t[0]) return t[1];
    for (int i = 1; i < n; i++)
      if (r <= t[2 * i]) {
        double u = (r - t[2 * i - 2]) / (t[2 * i] - t[2 * i - 2]);
        return t[2 * i - 1] + u * (t[2 * i + 1] - t[2 * i - 1]);
      }
    return t[2 * n - 1];
  }
  double u = r >= s->edge_radius ? 1.0 : r / s->edge_radius;
  return k->radial_fwhm_center_mm + u * (k->radial_fwhm_edge_mm - k->radial_fwhm_center_mm);
}

int ctr_pet_system_is_kernel_invariant(const ctr_pet_system *s) {
  const ctr_pet_kernel_params *k = &s->k;
  if (k->custom || k->asymmetric) return 0;
  if (k->radial_table_n > 0) {
    for (int i = 1; i < k->radial_table_n; i++)
      if (s->radial_table[2 * i + 1] != s->radial_table[1]) return 0;
    return 1;
  }
  return k->radial_fwhm_center_mm == k->radial_fwhm_edge_mm;
}

double ctr__pet_kernel_rho(const ctr_pet_system *s, int id) {
  return (id + 0.5 - s->nk / 2) * s->k.epsilon_mm;
}

int ctr__pet_kernel_id(const ctr_pet_system *s, double rho_mm) {
  double q = floor(rho_mm / s->k.epsilon_mm) + s->nk / 2;
  if (q < 0) return 0;
  if (q > s->nk - 1) return s->nk - 1;
  return (int)q;
}

double ctr__pet_kernel_raw(const ctr_pet_system *s, const ctr__pet_frame *f, double rho_mm,
                           const double o[3]) {
  double t = o[0] * f->d[0] + o[1] * f->d[1] + o[2] * f->d[2];
  double q = o[0] * f->r[0] + o[1] * f->r[1];
  double z = o[0] * f->a[0] + o[1] * f->a[1] + o[2] * f->a[2];
  const ctr_pet_kernel_params *k = &s->k;
  if (k->custom) return k->custom(k->custom_user, t, q, z, rho_mm);
  double st = s->sigma_tof, sa = s->sigma_axial, sr = ctr__pet_sigma_radial(s, rho_mm);
  double g = exp(-0.5 * (t * t / (st * st) + z * z / (sa * sa)));
  double radial = exp(-0.5 * q * q / (sr * sr));
  if (k->asymmetric) {
    /* the wide component sits towards the axis: at -sign(rho) * shift */
    double w = 2.0 * sr, c = (rho_mm >= 0 ? -1.0 : 1.0) * k->asym_shift_sigma * sr;
    radial += k->asym_weight * 0.5 * exp(-0.5 * (q - c) * (q - c) / (w * w));
  }
  return g * radial;
}

/* The support's half-widths: cut_k sigma of the widest kernel (for
 * asymmetric ones, the wide component's reach). */
void ctr__pet_support_axes(const ctr_pet_system *s, double h[3]) {
  const ctr_pet_kernel_params *k = &s->k;
  if (k->custom) {
    for (int i = 0; i < 3; i++) h[i] = k->custom_extent_mm[i];
    return;
  }
  double smax = 0;
  for (int id = 0; id < s->nk; id++) {
    double sr = ctr__pet_sigma_radial(s, ctr__pet_kernel_rho(s, id));
    if (sr > smax) smax = sr;
  }
  double hr = k->cut_k * smax;
  if (k->asymmetric && k->asym_weight > 0) {
    double wide = k->asym_shift_sigma * smax + k->cut_k * 2.0 * smax;
    if (wide > hr) hr = wide;
  }
  h[0] = k->cut_k * s->sigma_tof, h[1] = hr, h[2] = k->cut_k * s->sigma_axial;
}

void ctr__pet_support_box(const ctr_pet_system *s, const ctr__pet_frame *f, int box[3]) {
  double h[3];
  ctr__pet_support_axes(s, h);
  for (int i = 0; i < 3; i++) {
    double e = sqrt(pow(h[0] * f->d[i], 2) + pow(h[1] * f->r[i], 2) + pow(h[2] * f->a[i], 2));
    box[i] = (int)floor(e / s->p.voxel + 1e-9);
  }
}

/* The PET system: lattice, views and the SR-kernel model (seed 002 section
 * 4.1, asymmetric kernels section 5.2). The look-up tables of each view are
 * built on first use by pet_lut.c. */
#include "pet/pet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FWHM_TO_SIGMA (1.0 / 2.3548200450309493)

static ctr_status check_params(const ctr_pet_params *p) {
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PET parameters: NULL");
  if (p->nx < 1 || p->ny < 1 || p->nz < 1 || p->nx > 4096 || p->ny > 4096 || p->nz > 4096)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "PET lattice %lld x %lld x %lld: each size must be in 1..4096 voxels",
             (long long)p->nx, (long long)p->ny, (long long)p->nz);
  if (!(p->voxel > 0) || !isfinite(p->voxel))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PET voxel %g mm: expected a positive size", p->voxel);
  if (p->n_azimuth < 1 || p->n_azimuth > 3600 || p->n_copolar < 1 || p->n_copolar > 360)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "PET views %d x %d: expected 1..3600 azimuthal and 1..360 co-polar intervals",
             p->n_azimuth, p->n_copolar);
  if (!(p->acceptance_deg >= 0 && p->acceptance_deg < 60))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "PET acceptance %g degrees: expected an axial half-angle in [0, 60)",
             p->acceptance_deg);
  return CTR_OK;
}

static ctr_status check_kernel(const ctr_pet_kernel_params *k) {
  if (!k) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PET kernel parameters: NULL");
  if (!(k->cut_k >= 1 && k->cut_k <= 8))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "kernel cut %g sigma: expected 1..8", k->cut_k);
  if (!(k->epsilon_mm > 0) || !isfinite(k->epsilon_mm))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "LORmap epsilon %g mm: expected a positive step",
             k->epsilon_mm);
  if (k->custom) {
    for (int i = 0; i < 3; i++)
      if (!(k->custom_extent_mm[i] >= 0) || !isfinite(k->custom_extent_mm[i]))
        CTR_FAIL(CTR_E_INVALID_ARGUMENT,
                 "custom kernel extent[%d] = %g mm: expected a half-width >= 0", i,
                 k->custom_extent_mm[i]);
    return CTR_OK;
  }
  if (!(k->tof_fwhm_ps > 0) || !isfinite(k->tof_fwhm_ps))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "TOF resolution %g ps: expected a positive FWHM",
             k->tof_fwhm_ps);
  if (!(k->axial_fwhm_mm > 0) || !isfinite(k->axial_fwhm_mm))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "LOR-axial FWHM %g mm: expected a positive width",
             k->axial_fwhm_mm);
  if (k->radial_table_n > 0) {
    if (!k->radial_table)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "radial table: %d pairs announced but no data",
               k->radial_table_n);
    for (int i = 0; i < k->radial_table_n; i++) {
      double r = k->radial_table[2 * i], f = k->radial_table[2 * i + 1];
      if (!(r >= 0) || !isfinite(r) || (i > 0 && !(r > k->radial_table[2 * i - 2])))
        CTR_FAIL(CTR_E_INVALID_ARGUMENT,
                 "radial table row %d: radius %g mm: expected radii >= 0, strictly ascending",
                 i + 1, r);
      if (!(f > 0) || !isfinite(f))
        CTR_FAIL(CTR_E_INVALID_ARGUMENT, "radial table row %d: FWHM %g mm: expected > 0", i + 1,
                 f);
    }
  } else if (!(k->radial_fwhm_center_mm > 0) || !(k->radial_fwhm_edge_mm > 0) ||
             !isfinite(k->radial_fwhm_center_mm) || !isfinite(k->radial_fwhm_edge_mm)) {
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "LOR-radial FWHM %g mm (centre) / %g mm (edge): expected positive widths",
             k->radial_fwhm_center_mm, k->radial_fwhm_edge_mm);
  }
  if (!(k->edge_radius_mm >= 0) || !isfinite(k->edge_radius_mm))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "edge radius %g mm: expected >= 0 (0 = half the lattice)",
             k->edge_radius_mm);
  if (k->asymmetric && (!(k->asym_weight >= 0) || !(k->asym_shift_sigma >= 0) ||
                        !isfinite(k->asym_weight) || !isfinite(k->asym_shift_sigma)))
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "asymmetric kernel: weight %g and shift %g sigma must be >= 0", k->asym_weight,
             k->asym_shift_sigma);
  return CTR_OK;
}

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
  return ctr_pet_system_radial_fwhm(s, rho_mm) * FWHM_TO_SIGMA;
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

ctr_status ctr_pet_system_create(const ctr_pet_params *p, const ctr_pet_kernel_params *k,
                                 ctr_pet_system **out) {
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_system_create: out is NULL");
  *out = NULL;
  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PET parameters: NULL");
  if (!k) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "PET kernel parameters: NULL");
  ctr_pet_params pc;
  ctr_pet_kernel_params kc;
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_params, &pc, p));
  CTR_CHECK(ctr__struct_copy(&ctr__struct_pet_kernel_params, &kc, k));
  p = &pc;
  k = &kc;
  CTR_CHECK(check_params(p));
  CTR_CHECK(check_kernel(k));
  ctr_pet_system *s = ctr__calloc(1, sizeof *s, "PET system");
  if (!s) return CTR_E_OUT_OF_MEMORY;
  s->p = *p;
  s->k = *k;
  s->k.radial_table = NULL;
  if (k->radial_table_n > 0) {
    s->radial_table = ctr__malloc(2 * (size_t)k->radial_table_n * sizeof(double), "radial table");
    if (!s->radial_table) {
      free(s);
      return CTR_E_OUT_OF_MEMORY;
    }
    memcpy(s->radial_table, k->radial_table, 2 * (size_t)k->radial_table_n * sizeof(double));
    s->k.radial_table = s->radial_table;
  }
  s->nviews = (int64_t)p->n_azimuth * p->n_copolar;
  s->sigma_tof = k->tof_fwhm_ps * CTR_PET_C_MM_PER_PS / 2.0 * FWHM_TO_SIGMA;
  s->sigma_axial = k->axial_fwhm_mm * FWHM_TO_SIGMA;
  s->edge_radius = k->edge_radius_mm > 0 ? k->edge_radius_mm : 0.5 * p->nx * p->voxel;
  /* signed radial positions up to the lattice's half-diagonal, one bin spare */
  double hx = 0.5 * p->nx * p->voxel, hy = 0.5 * p->ny * p->voxel;
  int half = (int)ceil(sqrt(hx * hx + hy * hy) / k->epsilon_mm) + 1;
  s->nk = 2 * half;
  for (int64_t v = 0; v < s->nviews; v++) {
    ctr__pet_frame f;
    int box[3];
    ctr__pet_frame_of(s, v, &f);
    ctr__pet_support_box(s, &f, box);
    for (int i = 0; i < 3; i++)
      if (box[i] > s->halo[i]) s->halo[i] = box[i];
  }
  if (s->halo[0] > 1000 || s->halo[1] > 1000 || s->halo[2] > 1000) {
    ctr_pet_system_free(s);
    CTR_FAIL(CTR_E_INVALID_ARGUMENT,
             "SR kernel support spans %d x %d x %d voxels each way: too wide for %g mm voxels "
             "(check the TOF and LOR FWHM)",
             s->halo[0], s->halo[1], s->halo[2], p->voxel);
  }
  s->luts = ctr__calloc((size_t)s->nviews, sizeof *s->luts, "PET view tables");
  if (!s->luts) {
    ctr_pet_system_free(s);
    return CTR_E_OUT_OF_MEMORY;
  }
  pthread_mutex_init(&s->lock, NULL);
  *out = s;
  return CTR_OK;
}

void ctr_pet_system_free(ctr_pet_system *s) {
  if (!s) return;
  if (s->luts) {
    for (int64_t v = 0; v < s->nviews; v++) ctr__pet_lut_free(s->luts[v]);
    free(s->luts);
    pthread_mutex_destroy(&s->lock);
  }
  free(s->radial_table);
  free(s);
}

const ctr_pet_params *ctr_pet_system_get_params(const ctr_pet_system *s) { return &s->p; }
const ctr_pet_kernel_params *ctr_pet_system_get_kernel(const ctr_pet_system *s) { return &s->k; }
int64_t ctr_pet_system_get_view_count(const ctr_pet_system *s) { return s->nviews; }

ctr_status ctr_pet_system_get_view_info(ctr_pet_system *s, int64_t view, ctr_pet_view_info *info) {
  if (!s || !info) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_pet_system_get_view_info: NULL argument");
  CTR_CHECK(ctr__struct_check(&ctr__struct_pet_view_info, info));
  if (view < 0 || view >= s->nviews)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "view %lld: expected 0..%lld", (long long)view,
             (long long)s->nviews - 1);
  const ctr__pet_lut *L = ctr__pet_lut_get(s, view);
  if (!L) return CTR_E_OUT_OF_MEMORY;
  ctr_pet_view_info full = CTR_PET_VIEW_INFO_INIT, *out = &full;
  out->azimuth_deg = L->f.phi * 180.0 / M_PI;
  out->copolar_deg = L->f.theta * 180.0 / M_PI;
  for (int i = 0; i < 3; i++) out->dir[i] = L->f.d[i];
  out->support = L->nent;
  out->columns = L->ncols;
  out->kernels = L->nk;
  out->half_extent[0] = L->hx, out->half_extent[1] = L->hy, out->half_extent[2] = L->hz;
  return ctr__struct_store(&ctr__struct_pet_view_info, info, out);
}

const char *ctr_pet_algorithm_name(ctr_pet_algorithm a) {
  switch (a) {
    case CTR_PET_RAMLA: return "ramla";
    case CTR_PET_OSEM: return "osem";
    case CTR_PET_MLEM: return "mlem";
  }
  return "unknown";
}

ctr_status ctr_pet_algorithm_parse(const char *name, ctr_pet_algorithm *out) {
  static const ctr_pet_algorithm all[] = {CTR_PET_RAMLA, CTR_PET_OSEM, CTR_PET_MLEM};
  for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(name, ctr_pet_algorithm_name(all[i]))) {
      *out = all[i];
      return CTR_OK;
    }
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "algorithm '%s': expected ramla, osem or mlem",
           name ? name : "(null)");
}

/* The PET system: lattice, views and the SR-kernel parameters, checked and
 * resolved (Ha et al. 2013, section 4.1; asymmetric kernels section 5.2). The
 * kernel model is pet_kernel.c; the look-up tables of each view are built on
 * first use by pet_lut.c. */
#include "pet/pet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  s->sigma_tof = k->tof_fwhm_ps * CTR_PET_C_MM_PER_PS / 2.0 * CTR__PET_FWHM_TO_SIGMA;
  s->sigma_axial = k->axial_fwhm_mm * CTR__PET_FWHM_TO_SIGMA;
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

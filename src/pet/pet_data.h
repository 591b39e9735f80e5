/* Internals shared by the PET data side (activity phantoms, histo-image
 * files, the list-mode simulator). Not installed. */
#ifndef CTR_PET_DATA_H
#define CTR_PET_DATA_H

#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lattice and view parameters: sizes >= 1, voxel > 0, 0 <= acceptance < 90
 * degrees. Errors (CTR_E_INVALID_ARGUMENT) start with `who` and name the
 * field and the accepted range. */
ctr_status ctr__pet_params_check(const ctr_pet_params *in, const char *who, ctr_pet_params *p);

/* Phantom sanity: counts within 0 .. CTR_PET_MAX_SPHERES, sizes and
 * activities finite and >= 0. Errors start with `who`. */
ctr_status ctr__pet_phantom_check(const ctr_pet_phantom *ph, const char *who);

/* Activity per unit volume at x (mm), point sources excluded: the activity
 * of the last listed sphere that contains x, else the background inside the
 * cylinder, else 0. */
double ctr__pet_phantom_density(const ctr_pet_phantom *ph, const double x[3]);

/* 1 if the phantom has a cylinder (diameter and length > 0). */
int ctr__pet_phantom_has_cylinder(const ctr_pet_phantom *ph);

/* Length (mm) of the part of the line through x with unit direction d that
 * lies inside the phantom's finite cylinder (0 without one). */
double ctr__pet_cylinder_chord(const ctr_pet_phantom *ph, const double x[3], const double d[3]);

/* ---- Histo-image files (pet_histo_file.c dispatching to pet_histo.c and
 * pet_histo_hdf5.c) ------------------------------------------------------- */

/* 1 if path ends in .h5 or .hdf5 (any case). */
int ctr__pet_histo_is_hdf5(const char *path);
/* Every value of counts (and factors) finite and >= 0; CTR_E_FORMAT names
 * `file`, the array, the view and the voxel of the first bad value. */
ctr_status ctr__pet_histo_check_values(const ctr_pet_histo *h, const char *file);
/* Loading under the data policy: bad counts and factors (NaN, infinite,
 * negative, beyond 1e24) replaced by 0 and counted in h->replaced. */
void ctr__pet_histo_sanitize(ctr_pet_histo *h);
/* JSON description + raw float32 arrays (pet_histo.c); the arguments are
 * checked already. */
ctr_status ctr__pet_histo_save_json(const char *path, const ctr_pet_histo *h, int overwrite);
ctr_status ctr__pet_histo_load_json(const char *path, ctr_pet_histo **out);
/* HDF5 form (CTR_E_UNSUPPORTED without HDF5 in the build). */
ctr_status ctr__pet_histo_save_hdf5(const char *path, const ctr_pet_histo *h, int overwrite);
ctr_status ctr__pet_histo_load_hdf5(const char *path, ctr_pet_histo **out);

#ifdef __cplusplus
}
#endif
#endif

/* ctrecon/phantom.h — analytic ellipsoid phantoms: exact cone-beam projections and voxelisation. Include <ctrecon.h> (all of the API) or this header. */
#ifndef CTRECON_PHANTOM_H
#define CTRECON_PHANTOM_H

#include "ctrecon/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Phantoms                                                                  */
/* ------------------------------------------------------------------------- */

/* An ellipsoid: centre (mm), semi-axes (mm), Euler angles (z-x-z, degrees)
 * and an additive density (attenuation in 1/mm or any unit you choose). */
typedef struct ctr_ellipsoid {
  double density;
  double cx, cy, cz;
  double ax, ay, az;
  double phi_deg, theta_deg, psi_deg;
} ctr_ellipsoid;

/* Threads: a phantom does not change under the calls that take it const;
 * any number of threads may use one at once. */
typedef struct ctr_phantom ctr_phantom;

/* The 3D modified (high-contrast) Shepp-Logan head scaled so that its unit
 * cube [-1, 1]^3 spans `radius` mm, times `scale` in density. */
CTR_API ctr_status ctr_phantom_shepp_logan(double radius, double scale, ctr_phantom **out);
/* A flat phantom for laminography (docs/phantoms.md): a stack of three thin
 * coaxial disks about the z axis, oblate ellipsoids of semi-axes (radius,
 * radius, thickness / 2) centred at z = -(thickness + gap), 0 and
 * +(thickness + gap) mm, so that gap mm of nothing separates their centres'
 * faces; densities 1, 0.5 and 0.75 (bottom to top) times `scale`. */
CTR_API ctr_status ctr_phantom_disk_stack(double radius, double thickness, double gap,
                                          double scale, ctr_phantom **out);
/* A phantom from a list of ellipsoids (copied). */
CTR_API ctr_status ctr_phantom_from_ellipsoids(const ctr_ellipsoid *e, int64_t n,
                                               ctr_phantom **out);
/* JSON list of ellipsoids (docs/phantoms.md). */
CTR_API ctr_status ctr_phantom_load_json(const char *path, ctr_phantom **out);
CTR_API void ctr_phantom_free(ctr_phantom *p);
CTR_API int64_t ctr_phantom_get_ellipsoid_count(const ctr_phantom *p);
CTR_API const ctr_ellipsoid *ctr_phantom_get_ellipsoids(const ctr_phantom *p);

/* Exact line integral from point `origin` along unit direction `dir`
 * (the whole line). */
CTR_API double ctr_phantom_line_integral(const ctr_phantom *p, const double origin[3],
                                         const double dir[3]);
/* Density at a point. */
CTR_API double ctr_phantom_density(const ctr_phantom *p, const double pt[3]);
/* Exact cone-beam projections for every view: out is nu x nv x nviews float32
 * (contiguous). Each pixel is the mean of supersample^2 exact ray integrals
 * (1 = the ray through the pixel centre). */
CTR_API ctr_status ctr_phantom_project(ctr_context *ctx, const ctr_phantom *p,
                                       const ctr_geometry *g, int supersample, ctr_array *out);
/* Voxelised phantom on the geometry's volume grid, each voxel the mean of
 * supersample^3 point samples. out: nx x ny x nz float32. Slices [z0, z0+nz)
 * of out's third dimension only, so big volumes can be made in slabs. */
CTR_API ctr_status ctr_phantom_voxelize(ctr_context *ctx, const ctr_phantom *p,
                                        const ctr_volume_geometry *vol, int supersample, int64_t z0,
                                        ctr_array *out);

#ifdef __cplusplus
}
#endif
#endif /* CTRECON_PHANTOM_H */

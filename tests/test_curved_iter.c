/* The iterative projector pair on a cylindrical (curved) detector, issue 45
 * item 4 (docs/iterative.md, docs/geometry.md "Curved (cylindrical)
 * detectors"): the rays against the detector's maps (core/cylmath.h), the
 * in-plane lines of a column shared bit for bit by its rows, the adjoint's
 * pixel boxes against every pixel whose ray weighs a voxel, the adjoint
 * identity, the float projection against the double reference, CGLS of
 * exact curved projections against the same on a flat detector, and the
 * fast pair's refusal.
 *
 * Built twice: as test_curved_iter on the CPU, and with CTR_TEST_CUDA as
 * test_gpu_curved_iter, where the projector runs on the GPU and its forward
 * projection and adjoint are compared with the CPU's to 1e-5 relative RMS
 * (exit 77, skipped, without a GPU). */
#include "harness.h"

#include "iterative/iterative.h"

static ctr_context *g_ctx, *g_cpu;

/* A curved circular scan: detector offsets (u and v), an anisotropic,
 * off-centre volume, a start angle no symmetry hides. `tall` makes the rows
 * steep enough for rays stepping along z. */
static ctr_geometry *curved(int64_t nx, int64_t nz, double sid, double sdd, int64_t nu,
                            int64_t nv, double du, double dv, int64_t nviews, double off_u,
                            double off_v, ctr_detector_shape shape) {
  ctr_circular_params p = th_circular_params(sid, sdd, nu, nv, du, dv, nviews, shape);
  p.offset_u = off_u;
  p.offset_v = off_v;
  p.angle_start_deg = 11;
  ctr_volume_geometry vol = {nx, nx - 3, nz, 1.0, 1.1, 1.25, 0.3, -0.4, 0.2};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_circular(&p, &vol, &g));
  return g;
}

/* A helix over a curved detector (the source's height zs in the maps):
 * two turns climbing 12 mm each, from 6 mm below the volume's centre. */
static ctr_geometry *curved_helix(void) {
  ctr_helical_params h = CTR_HELICAL_PARAMS_INIT;
  h.sid = 70;
  h.sdd = 105;
  h.nu = 36;
  h.nv = 20;
  h.du = 1.6;
  h.dv = 1.4;
  h.offset_u = 1.1;
  h.nviews = 24;
  h.angle_start_deg = 11;
  h.angle_range_deg = 720;
  h.pitch_mm = 12;
  h.z0_mm = -6;
  h.detector = CTR_DETECTOR_CYLINDRICAL;
  ctr_volume_geometry vol = {20, 17, 13, 1.0, 1.1, 1.25, 0.3, -0.4, 0.2};
  ctr_geometry *g = NULL;
  CHECK_OK(ctr_geometry_create_helical(&h, &vol, &g));
  return g;
}

/* The test geometries: 0 an ordinary cone with offsets (x and y families),
 * 1 a short, tall one (all three families), 2 a half-fan offset detector,
 * 3 a helix. */
#define NGEOM 4
static const char *g_names[NGEOM] = {"offsets", "tall cone", "half fan", "helix"};
static ctr_geometry *g_geoms[NGEOM];

static void make_geometries(void) {
  g_geoms[0] = curved(20, 13, 70, 105, 36, 30, 1.6, 1.4, 17, 2.3, -1.7, CTR_DETECTOR_CYLINDRICAL);
  g_geoms[1] = curved(14, 36, 24, 36, 44, 48, 1.6, 2.0, 9, 0.4, 0.9, CTR_DETECTOR_CYLINDRICAL);
  g_geoms[2] = curved(16, 10, 60, 90, 24, 20, 1.7, 1.7, 13, 14.0, 0.0, CTR_DETECTOR_CYLINDRICAL);
  g_geoms[3] = curved_helix();
}

static ctr_projector *projector(ctr_context *ctx, const ctr_geometry *g, int64_t max_slab) {
  ctr_projector_options o = CTR_PROJECTOR_OPTIONS_INIT;
  o.max_slab_slices = max_slab;
  ctr_projector *p = NULL;
  if (g) CHECK_OK(ctr_projector_create_cone(ctx, g, &o, &p));
  return p;
}

static void counts(const ctr_projector *p, int64_t *nvol, int64_t *nproj) {
  int64_t vd[3], pd[3];
  ctr_projector_get_volume_dims(p, vd);
  ctr_projector_get_projection_dims(p, pd);
  *nvol = vd[0] * vd[1] * vd[2];
  *nproj = pd[0] * pd[1] * pd[2];
}

/* ---- Rays ------------------------------------------------------------------------- */

/* The ray of pixel (u, v), from the view's origin along its direction
 * (itmath.h), reaches the cylinder of radius sdd at the pixel: the maps
 * (ctr__cyl_project) of a point on it give back (u, v) to 1e-9 pixels, at
 * random real (u, v), on a circle and on a helix. And every row of a column has bitwise the same A_p,
 * B_p and family when its ray steps along x or y, so that every view (no
 * ray steps along z here) takes the separable adjoint (itmath.h, "The
 * adjoint of column-separable views"). */
static void rays_of(int gi) {
  ctr_projector *p = projector(g_cpu, g_geoms[gi], 0);
  REQUIRE(p);
  const ctr_volume_geometry vol = ctr_geometry_get_volume(g_geoms[gi]);
  const double off[3] = {vol.offset_x, vol.offset_y, vol.offset_z};
  double worst = 0;
  int64_t same = 1, columns = 0, separable = 0;
  for (int64_t i = 0; i < p->nviews; i++) {
    const ctr__it_view *w = &p->views[i];
    CHECK(w->curved == 1);
    separable += w->cols;
    for (int k = 0; k < 50; k++) {
      const double u = th_uniform(-0.5, (double)p->nu - 0.5), v = th_uniform(-0.5, (double)p->nv - 0.5);
      double hu[3], X[3];
      ctr__it_ray_hu(w, p->vox, u, hu);
      for (int a = 0; a < 3; a++) /* the direction in world mm */
        X[a] = (w->d[a] + hu[a] + v * w->dv[a]) * p->vox[a];
      /* a point 73.5 mm (horizontally) from the source along the ray, in world mm */
      const double hn = hypot(X[0], X[1]);
      double pt[3], uu, vv, ww;
      for (int a = 0; a < 3; a++) {
        const double src = w->o[a] * p->vox[a] + off[a] - p->vox[a] * 0.5 * (double)(p->n[a] - 1);
        pt[a] = src + 73.5 * X[a] / hn;
      }
      ctr__cyl_project(&w->cyl, pt[0], pt[1], pt[2], &uu, &vv, &ww);
      worst = fmax(worst, fmax(fabs(uu - u), fabs(vv - v)));
    }
    int64_t b0[3] = {0, 0, 0}, b1[3] = {p->n[0], p->n[1], p->n[2]};
    for (int64_t u = 0; u < p->nu; u++) {
      ctr__it_ray r0;
      ctr__it_ray_setup(w, p->vox, b0, b1, (double)u, 0.0, &r0);
      for (int64_t v = 1; v < p->nv; v++) {
        ctr__it_ray r;
        ctr__it_ray_setup(w, p->vox, b0, b1, (double)u, (double)v, &r);
        if (r.f == 2 || r0.f == 2) continue;
        same &= r.f == r0.f && !memcmp(&r.A[0], &r0.A[0], sizeof(float)) &&
                !memcmp(&r.B[0], &r0.B[0], sizeof(float));
      }
      columns++;
    }
  }
  printf("rays %s: the maps of a point on the ray of (u, v) within %.2e pixels of (u, v); %lld "
         "columns: one A_p, B_p and family per column: %s; %lld of %lld views column-separable\n",
         g_names[gi], worst, (long long)columns, same ? "yes" : "no", (long long)separable,
         (long long)p->nviews);
  CHECK_MSG(separable == p->nviews, "%lld of %lld views column-separable", (long long)separable,
            (long long)p->nviews);
  CHECK_MSG(worst < 1e-9, "a ray misses its pixel by %.3e", worst);
  CHECK_MSG(same, "rows of a column differ in A_p, B_p or family");
  ctr_projector_free(p);
}

static void test_rays(void) {
  rays_of(0);
  rays_of(3);
}

/* ---- Boxes ------------------------------------------------------------------------ */

/* Every pixel whose ray gives a voxel a positive weight lies in the voxel's
 * pixel box (ctr__it_box_view of the 2 x 2 square in the ray's plane), at
 * random voxels of every view of every geometry; and the boxes are not
 * wasteful: at most 4 times the pixels they must hold, over all. */
static void test_boxes(void) {
  int64_t missed = 0, needed = 0, boxed = 0;
  for (int gi = 0; gi < NGEOM; gi++) {
    ctr_projector *p = projector(g_cpu, g_geoms[gi], 0);
    if (!p) continue;
    int64_t b0[3] = {0, 0, 0}, b1[3] = {p->n[0], p->n[1], p->n[2]};
    const int64_t npix = p->nu * p->nv;
    ctr__it_ray *rays = malloc(sizeof(ctr__it_ray) * (size_t)npix);
    REQUIRE(rays);
    for (int64_t w = 0; w < p->nviews; w++) {
      const ctr__it_view *view = &p->views[w];
      for (int64_t r = 0; r < npix; r++)
        ctr__it_ray_setup(view, p->vox, b0, b1, (double)(r % p->nu), (double)(r / p->nu), &rays[r]);
      for (int k = 0; k < 40; k++) {
        const int X[3] = {(int)th_uniform(0, (double)p->n[0] - 1e-9),
                          (int)th_uniform(0, (double)p->n[1] - 1e-9),
                          (int)th_uniform(0, (double)p->n[2] - 1e-9)};
        for (int f = 0; f < 3; f++) {
          const int pa = ctr__it_paxis(f), qa = ctr__it_qaxis(f);
          int u0, u1, v0, v1;
          ctr__it_box_view(&view->cam, (float)X[0], (float)X[1], (float)X[2], pa, qa, 1.0f, 1.0f,
                           (int)p->nu, (int)p->nv, &u0, &u1, &v0, &v1);
          if (u0 <= u1 && v0 <= v1) boxed += (int64_t)(u1 - u0 + 1) * (v1 - v0 + 1);
          for (int64_t r = 0; r < npix; r++) {
            const ctr__it_ray *ray = &rays[r];
            if (ray->f != f || ray->lo > ray->hi) continue;
            const float wgt = ctr__it_weight(ctr__it_pos(ray->A[0], ray->B[0], X[f]),
                                             ctr__it_pos(ray->A[1], ray->B[1], X[f]),
                                             (float)X[pa], (float)X[qa]);
            if (!(wgt > 0.0f)) continue;
            needed++;
            const int u = (int)(r % p->nu), v = (int)(r / p->nu);
            if (u < u0 || u > u1 || v < v0 || v > v1) missed++;
          }
        }
      }
    }
    free(rays);
    ctr_projector_free(p);
  }
  printf("boxes: %lld pixels weigh their voxel, %lld outside its box; the boxes hold %.2f "
         "times as many\n", (long long)needed, (long long)missed,
         needed ? (double)boxed / (double)needed : 0.0);
  CHECK_MSG(needed > 1000 && missed == 0, "%lld of %lld weighing pixels outside their box",
            (long long)missed, (long long)needed);
  CHECK_MSG(boxed <= 4 * needed, "boxes of %lld pixels for %lld needed", (long long)boxed,
            (long long)needed);
}

/* ---- Adjoint and reference ----------------------------------------------------------- */

/* <A x, y> = <x, A^T y> to 1e-6 relative (dot products in double), whole
 * and with slabs of 4 slices; the float projection against the double
 * reference (relative RMS below 1e-5, as for flat detectors); the families
 * present in the tall cone include z. */
static void test_adjoint_reference(void) {
  for (int gi = 0; gi < NGEOM; gi++)
    for (int forced = 0; forced < 2; forced++) {
      ctr_projector *p = projector(g_ctx, g_geoms[gi], forced ? 4 : 0);
      if (!p) continue;
      int64_t nvol, nproj;
      counts(p, &nvol, &nproj);
      float *x = th_randoms(nvol, 0, 1), *y = th_randoms(nproj, 0, 1);
      float *Ax = malloc(sizeof(float) * (size_t)nproj), *Aty = malloc(sizeof(float) * (size_t)nvol);
      double *ref = malloc(sizeof(double) * (size_t)nproj);
      REQUIRE(x && y && Ax && Aty && ref);
      CHECK_OK(ctr_projector_forward(p, x, Ax));
      CHECK_OK(ctr_projector_adjoint(p, y, Aty));
      const double l = th_dot(Ax, y, nproj), r = th_dot(x, Aty, nvol), rel = fabs(l - r) / fabs(l);
      printf("adjoint %-9s%s: <Ax,y> %.9e <x,A^T y> %.9e relative %.2e\n", g_names[gi],
             forced ? " (slabs of 4)" : "", l, r, rel);
      CHECK_MSG(l > 0 && rel <= 1e-6, "%s: relative %.3e", g_names[gi], rel);
      if (!forced) {
        CHECK_OK(ctr__it_reference_forward(p, x, ref, NULL, NULL));
        double e = 0, s = 0;
        for (int64_t k = 0; k < nproj; k++) {
          e += (Ax[k] - ref[k]) * (Ax[k] - ref[k]);
          s += ref[k] * ref[k];
        }
        printf("reference %-9s: relative RMS %.2e\n", g_names[gi], sqrt(e / s));
        CHECK_MSG(s > 0 && sqrt(e / s) < 1e-5, "%s: relative RMS %.3e", g_names[gi], sqrt(e / s));
      }
      if (gi == 1 && !forced) {
        int fams = 0;
        int64_t b0[3] = {0, 0, 0}, b1[3] = {p->n[0], p->n[1], p->n[2]};
        for (int64_t w = 0; w < p->nviews; w++)
          for (int64_t k = 0; k < p->nu * p->nv; k++) {
            ctr__it_ray ray;
            ctr__it_ray_setup(&p->views[w], p->vox, b0, b1, (double)(k % p->nu),
                              (double)(k / p->nu), &ray);
            if (ray.lo <= ray.hi) fams |= 1 << ray.f;
          }
        CHECK_MSG(fams == 7, "tall cone: ray families %d, expected all three (7)", fams);
      }
#ifdef CTR_TEST_CUDA
      /* the GPU against the CPU: the same positions and weights, sums that
       * differ where the GPU fuses a multiply and an add (relative RMS 1e-5,
       * as test_iterative) */
      ctr_projector *c = projector(g_cpu, g_geoms[gi], forced ? 4 : 0);
      float *cx = malloc(sizeof(float) * (size_t)nproj), *cy = malloc(sizeof(float) * (size_t)nvol);
      REQUIRE(c && cx && cy);
      CHECK_OK(ctr_projector_forward(c, x, cx));
      CHECK_OK(ctr_projector_adjoint(c, y, cy));
      double df = 0, nf = 0, da = 0, na = 0;
      for (int64_t k = 0; k < nproj; k++)
        df += ((double)cx[k] - Ax[k]) * ((double)cx[k] - Ax[k]), nf += (double)cx[k] * cx[k];
      for (int64_t k = 0; k < nvol; k++)
        da += ((double)cy[k] - Aty[k]) * ((double)cy[k] - Aty[k]), na += (double)cy[k] * cy[k];
      printf("GPU vs CPU %-9s%s: forward relative RMS %.2e, adjoint %.2e\n", g_names[gi],
             forced ? " (slabs of 4)" : "", sqrt(df / nf), sqrt(da / na));
      CHECK_MSG(nf > 0 && na > 0 && sqrt(df / nf) < 1e-5 && sqrt(da / na) < 1e-5,
                "%s: GPU and CPU differ (forward %.3e, adjoint %.3e)", g_names[gi], sqrt(df / nf),
                sqrt(da / na));
      free(cx);
      free(cy);
      ctr_projector_free(c);
#endif
      free(x);
      free(y);
      free(Ax);
      free(Aty);
      free(ref);
      ctr_projector_free(p);
    }
}

/* ---- CGLS ------------------------------------------------------------------------------- */

/* CGLS (20 iterations) of a Shepp-Logan head's exact projections on a
 * curved detector and on the flat detector of the same fan angle and rows
 * (the same number of columns over the same angle): the RMSE against the
 * voxelised truth over the voxels inside the head is comparable (curved at
 * most 1.25 times the flat one, and below 0.1). */
static double cgls_rmse(ctr_detector_shape shape, double *res) {
  const int64_t n = 40, nu = 64, nv = 40, nviews = 90;
  const double sid = 120, sdd = 180;
  /* the curved arc's fan: nu du_c / sdd; the flat's: 2 atan(nu du_f / 2 sdd) */
  const double du_c = 1.8, fan = (double)nu * du_c / sdd;
  const double du = shape == CTR_DETECTOR_CYLINDRICAL ? du_c : 2.0 * sdd * tan(0.5 * fan) / (double)nu;
  ctr_circular_params cp = th_circular_params(sid, sdd, nu, nv, du, 1.8, nviews, shape);
  ctr_volume_geometry vol = {n, n, n, 1.5, 1.5, 1.5, 0, 0, 0};
  ctr_geometry *g = NULL;
  ctr_phantom *ph = NULL;
  CHECK_OK(ctr_geometry_create_circular(&cp, &vol, &g));
  CHECK_OK(ctr_phantom_shepp_logan(26.0, 1.0, &ph));
  ctr_projector *p = projector(g_ctx, g, 0);
  if (!g || !ph || !p) return 1.0;
  const int64_t nvol = n * n * n, nproj = nu * nv * nviews;
  float *truth = malloc(sizeof(float) * (size_t)nvol), *x = malloc(sizeof(float) * (size_t)nvol),
        *b = malloc(sizeof(float) * (size_t)nproj);
  int64_t vd[3] = {n, n, n}, pd[3] = {nu, nv, nviews};
  ctr_array ta = ctr_array_make(truth, CTR_DTYPE_FLOAT32, 3, vd),
            ba = ctr_array_make(b, CTR_DTYPE_FLOAT32, 3, pd);
  CHECK_OK(ctr_phantom_voxelize(g_cpu, ph, &vol, 3, 0, &ta));
  CHECK_OK(ctr_phantom_project(g_cpu, ph, g, 2, &ba));
  ctr_iterate_options o = CTR_ITERATE_OPTIONS_INIT;
  o.algorithm = CTR_ITERATE_CGLS;
  o.iterations = 20;
  ctr_iterate_report r = CTR_ITERATE_REPORT_INIT;
  CHECK_OK(ctr_iterate(p, &o, b, x, &r));
  double e = 0;
  int64_t m = 0;
  for (int64_t k = 0; k < nvol; k++)
    if (truth[k] != 0.0f) e += ((double)x[k] - truth[k]) * ((double)x[k] - truth[k]), m++;
  *res = r.residual / r.norm_b;
  free(truth);
  free(x);
  free(b);
  ctr_projector_free(p);
  ctr_phantom_free(ph);
  ctr_geometry_free(g);
  return m ? sqrt(e / (double)m) : 1.0;
}

static void test_cgls(void) {
  double rc, rf;
  const double ec = cgls_rmse(CTR_DETECTOR_CYLINDRICAL, &rc), ef = cgls_rmse(CTR_DETECTOR_FLAT, &rf);
  printf("CGLS 20 iterations, Shepp-Logan 40^3, exact projections: RMSE inside the head curved "
         "%.4f, flat %.4f (ratio %.3f); relative residual %.4f, %.4f\n", ec, ef, ec / ef, rc, rf);
  CHECK_MSG(ec < 0.1 && ec <= 1.25 * ef, "curved RMSE %.4f against flat %.4f", ec, ef);
}

/* ---- Refusals ----------------------------------------------------------------------------- */

static void test_refusals(void) {
  ctr_projector_options o = CTR_PROJECTOR_OPTIONS_INIT;
  o.pair = CTR_PAIR_FAST;
  ctr_projector *p = NULL;
  CHECK_FAILS(ctr_projector_create_cone(g_ctx, g_geoms[0], &o, &p), CTR_E_UNSUPPORTED,
              "ctr_projector_options.pair");
  /* the source inside the volume is still refused */
  ctr_geometry *g = curved(8, 8, 5.0, 9.0, 16, 16, 1.0, 1.0, 4, 0, 0, CTR_DETECTOR_CYLINDRICAL);
  CHECK_FAILS(ctr_projector_create_cone(g_ctx, g, NULL, &p), CTR_E_GEOMETRY, "within one voxel");
  ctr_geometry_free(g);
}

int main(void) {
  const int rc = th_contexts("test_gpu_curved_iter", &g_cpu, &g_ctx);
  if (rc) return rc;
  make_geometries();
  test_rays();
  test_boxes();
  test_adjoint_reference();
  test_cgls();
  test_refusals();
  for (int i = 0; i < NGEOM; i++) ctr_geometry_free(g_geoms[i]);
#ifdef CTR_TEST_CUDA
  ctr_context_free(g_ctx);
#endif
  ctr_context_free(g_cpu);
#ifdef CTR_TEST_CUDA
  return th_finish("test_gpu_curved_iter");
#else
  return th_finish("test_curved_iter");
#endif
}

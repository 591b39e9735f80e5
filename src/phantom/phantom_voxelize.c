/* Point densities and voxelisation of ellipsoid phantoms. */
#include "phantom/phantom_internal.h"

#include <math.h>
#include <string.h>

double ctr_phantom_density(const ctr_phantom *p, const double pt[3]) {
  if (!p || !pt) return NAN;
  double sum = 0.0;
  for (int64_t k = 0; k < p->n; k++) {
    const ctr__ellipsoid_pre *e = &p->pre[k];
    if (pt[0] < e->lo[0] || pt[0] > e->hi[0] || pt[1] < e->lo[1] || pt[1] > e->hi[1] ||
        pt[2] < e->lo[2] || pt[2] > e->hi[2])
      continue;
    double r2 = 0.0;
    for (int i = 0; i < 3; i++) {
      double q = e->R[3 * i] * pt[0] + e->R[3 * i + 1] * pt[1] + e->R[3 * i + 2] * pt[2] - e->Rc[i];
      r2 += q * q;
    }
    if (r2 <= 1.0) sum += e->density;
  }
  return sum;
}

/* Sampling of one axis: sample m (voxel m / s, sub-sample m % s) sits at
 * x0 + m * h. */
typedef struct axis_samples {
  double x0, h;
} axis_samples;

static axis_samples axis_of(int64_t n, double voxel, double offset, int s) {
  axis_samples a;
  a.h = voxel / s;
  a.x0 = offset + ((0.5 / s - 0.5) - (double)(n - 1) / 2.0) * voxel;
  return a;
}

/* Adds, to acc[0..nx), density times the number of x samples inside each
 * active ellipsoid along the sample line (y, z). Solving for the x interval
 * once per line makes this exact point sampling at the cost of one quadratic
 * per line instead of one test per sample. */
static void add_line(const ctr_phantom *ph, const int64_t *active, int64_t na, double y, double z,
                     axis_samples ax, int64_t nx, int s, double *acc) {
  const int64_t nsamp = nx * s;
  for (int64_t a = 0; a < na; a++) {
    const ctr__ellipsoid_pre *e = &ph->pre[active[a]];
    if (y < e->lo[1] || y > e->hi[1] || z < e->lo[2] || z > e->hi[2]) continue;
    const double *R = e->R;
    /* Unit-sphere frame: p(x) = p0 + x r. */
    const double r[3] = {R[0], R[3], R[6]};
    const double p0[3] = {R[1] * y + R[2] * z - e->Rc[0], R[4] * y + R[5] * z - e->Rc[1],
                          R[7] * y + R[8] * z - e->Rc[2]};
    double rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    double B = p0[0] * r[0] + p0[1] * r[1] + p0[2] * r[2];
    double pp = p0[0] * p0[0] + p0[1] * p0[1] + p0[2] * p0[2];
    double disc = B * B - rr * (pp - 1.0);
    if (disc < 0.0) continue;
    double sq = sqrt(disc);
    double x1 = (-B - sq) / rr, x2 = (-B + sq) / rr;
    double mlo = ceil((x1 - ax.x0) / ax.h), mhi = floor((x2 - ax.x0) / ax.h);
    if (mlo < 0.0) mlo = 0.0;
    if (mhi > (double)(nsamp - 1)) mhi = (double)(nsamp - 1);
    if (mlo > mhi) continue;
    int64_t lo = (int64_t)mlo, hi = (int64_t)mhi;
    for (int64_t i = lo / s; i <= hi / s; i++) {
      int64_t first = i * s > lo ? i * s : lo;
      int64_t last = i * s + s - 1 < hi ? i * s + s - 1 : hi;
      acc[i] += e->density * (double)(last - first + 1);
    }
  }
}

typedef struct voxel_job {
  const ctr_phantom *ph;
  int64_t nx, ny, z0;
  int s;
  axis_samples ax, ay, az;
  float *img;
  double *acc;     /* [thread][nx] */
  int64_t *active; /* [thread][ellipsoid] */
} voxel_job;

/* Row r of the slab: global slice z0 + r / ny, row r % ny. */
static void voxel_job_row(void *arg, int tid, int64_t r) {
  const voxel_job *jb = arg;
  const ctr_phantom *p = jb->ph;
  const int64_t nx = jb->nx, n = p->n, s = jb->s;
  /* Global slice index: a voxel's value must not depend on the slab. */
  const int64_t k = jb->z0 + r / jb->ny, j = r % jb->ny;
  double *a = jb->acc + (size_t)tid * (size_t)nx;
  int64_t *act = jb->active + (size_t)tid * (size_t)n;
  const double zlo = jb->az.x0 + (double)(k * s) * jb->az.h;
  const double zhi = jb->az.x0 + (double)(k * s + s - 1) * jb->az.h;
  const double ylo = jb->ay.x0 + (double)(j * s) * jb->ay.h;
  const double yhi = jb->ay.x0 + (double)(j * s + s - 1) * jb->ay.h;
  int64_t na = 0;
  for (int64_t e = 0; e < n; e++)
    if (p->pre[e].hi[2] >= zlo && p->pre[e].lo[2] <= zhi && p->pre[e].hi[1] >= ylo &&
        p->pre[e].lo[1] <= yhi)
      act[na++] = e;
  float *dst = jb->img + r * nx;
  if (na == 0) {
    memset(dst, 0, (size_t)nx * sizeof *dst);
    return;
  }
  memset(a, 0, (size_t)nx * sizeof *a);
  for (int64_t sz = 0; sz < s; sz++) {
    double z = jb->az.x0 + (double)(k * s + sz) * jb->az.h;
    for (int64_t sy = 0; sy < s; sy++) {
      double y = jb->ay.x0 + (double)(j * s + sy) * jb->ay.h;
      add_line(p, act, na, y, z, jb->ax, nx, (int)s, a);
    }
  }
  const double inv_samples = 1.0 / ((double)s * (double)s * (double)s);
  for (int64_t i = 0; i < nx; i++) dst[i] = (float)(a[i] * inv_samples);
}

ctr_status ctr_phantom_voxelize(ctr_context *ctx, const ctr_phantom *p,
                                const ctr_volume_geometry *vol, int supersample, int64_t z0,
                                ctr_array *out) {
  ctr_status st = CTR_OK;
  double *acc = NULL;
  int64_t *active = NULL;

  if (!p) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_voxelize: phantom is NULL");
  if (!out) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_voxelize: out is NULL");
  CTR_CHECK(ctr__phantom_check_volume(vol, "ctr_phantom_voxelize"));
  if (supersample < 1 || supersample > 64)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_voxelize: supersample is %d, expected 1..64",
             supersample);
  if (out->dtype != CTR_DTYPE_FLOAT32)
    CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_voxelize: out dtype is %s, expected float32",
             ctr_dtype_name(out->dtype));
  if (out->ndim != 3 || out->dims[0] != vol->nx || out->dims[1] != vol->ny || out->dims[2] < 1)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "ctr_phantom_voxelize: out has ndim %d and dims %lld x %lld x %lld, expected "
             "nx x ny x nz_out = %lld x %lld x (1..%lld)",
             out->ndim, (long long)(out->ndim > 0 ? out->dims[0] : 0),
             (long long)(out->ndim > 1 ? out->dims[1] : 0),
             (long long)(out->ndim > 2 ? out->dims[2] : 0), (long long)vol->nx,
             (long long)vol->ny, (long long)vol->nz);
  const int64_t nx = vol->nx, ny = vol->ny, nz_out = out->dims[2];
  if (z0 < 0 || z0 > vol->nz - nz_out)
    CTR_FAIL(CTR_E_SIZE_MISMATCH,
             "ctr_phantom_voxelize: slices [z0, z0 + nz_out) = [%lld, %lld) exceed the volume, "
             "expected 0 <= z0 and z0 + nz_out <= nz = %lld",
             (long long)z0, (long long)(z0 + nz_out), (long long)vol->nz);
  if (!out->data) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_phantom_voxelize: out data is NULL");

  voxel_job job;
  job.ph = p;
  job.nx = vol->nx;
  job.ny = vol->ny;
  job.z0 = z0;
  job.s = supersample;
  job.ax = axis_of(vol->nx, vol->voxel_x, vol->offset_x, supersample);
  job.ay = axis_of(vol->ny, vol->voxel_y, vol->offset_y, supersample);
  job.az = axis_of(vol->nz, vol->voxel_z, vol->offset_z, supersample);
  job.img = out->data;
  const int nthreads = ctr__num_threads(ctx);
  acc = ctr__calloc((size_t)nthreads * (size_t)nx, sizeof *acc, "voxelisation row buffers");
  active = ctr__calloc((size_t)nthreads * (size_t)p->n, sizeof *active, "voxelisation scratch");
  if (!acc || !active) {
    st = CTR_E_OUT_OF_MEMORY; /* detail set by ctr__calloc */
    goto cleanup;
  }
  job.acc = acc;
  job.active = active;
  st = ctr__phantom_rows(ctx, "voxelizing phantom", nz_out * ny, nthreads, voxel_job_row, &job);
cleanup:
  free(acc);
  free(active);
  return st;
}

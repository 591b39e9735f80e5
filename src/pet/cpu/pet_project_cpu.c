/* CPU projectors of one view (OpenMP). Back projection: each voxel gathers
 * with its own kernel, out(x) = sum_e K_id(x)(o_e) in(x + o_e). Forward
 * projection as a gather with the neighbours' kernels (Ha et al. 2013, Fig. 2):
 * out(x) = sum_e K_id(x + o_e)(-o_e) in(x + o_e), entry nent - 1 - e holding
 * -o_e. The input is copied into the interior of a buffer with a zero halo
 * (the system's largest support) and ids come from the LUT's padded LORmap,
 * so the inner loops need no bounds checks; each thread accumulates one output row (x fastest) per
 * support entry, so the inner loop is a contiguous multiply-add over x with
 * a gather of kernel values by id. */
#include "pet/pet.h"

#include <stdlib.h>
#include <string.h>

int64_t ctr__pet_padded_voxels(const ctr_pet_system *s) {
  const ctr_pet_params *p = &s->p;
  return (p->nx + 2 * s->halo[0]) * (p->ny + 2 * s->halo[1]) * (p->nz + 2 * s->halo[2]);
}

ctr_status ctr__pet_project_cpu(const ctr_pet_system *s, const ctr__pet_lut *L,
                                ctr_pet_direction dir, const float *in, float *pad, float *out) {
  const ctr_pet_params *p = &s->p;
  const int64_t nx = p->nx, ny = p->ny, nz = p->nz;
  const int hx = s->halo[0], hy = s->halo[1], hz = s->halo[2], nk = L->nk, ne = L->nent;
  const int64_t px = nx + 2 * hx, py = ny + 2 * hy;
  float *pin = pad;
  const int32_t *pid = L->pid;
  int failed = 0;
  /* only the interior changes; the halo stays zero */
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      memcpy(pin + ((z + hz) * py + y + hy) * px + hx, in + (z * ny + y) * nx,
             (size_t)nx * sizeof(float));
  const int fwd = dir == CTR_PET_FORWARD;
#pragma omp parallel
  {
    float *acc = malloc((size_t)nx * sizeof(float));
#pragma omp for collapse(2) schedule(static)
    for (int64_t z = 0; z < nz; z++)
      for (int64_t y = 0; y < ny; y++) {
        if (!acc) {
          failed = 1;
          continue;
        }
        memset(acc, 0, (size_t)nx * sizeof(float));
        for (int c = 0; c < L->ncols; c++) {
          const ctr__pet_column *col = &L->cols[c];
          const int32_t *ids = fwd ? pid + (y + hy + col->dy) * px + hx + col->dx
                                   : pid + (y + hy) * px + hx;
          for (int k = 0; k < col->len; k++) {
            int e = col->e0 + k;
            const float *w = L->w + (size_t)(fwd ? ne - 1 - e : e) * nk;
            const float *src = pin + ((z + hz + col->dz0 + k) * py + y + hy + col->dy) * px + hx +
                               col->dx;
#pragma omp simd
            for (int64_t x = 0; x < nx; x++) acc[x] += w[ids[x]] * src[x];
          }
        }
        memcpy(out + (z * ny + y) * nx, acc, (size_t)nx * sizeof(float));
      }
    free(acc);
  }
  if (failed) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "PET projector: no memory for a row accumulator");
  return CTR_OK;
}

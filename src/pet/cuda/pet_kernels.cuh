/* CUDA kernels of the DIRECT projectors and the reconstruction steps.
 *
 * Projector (Ha et al. 2013, section 4.2, Figs. 2 and 3): one thread per lattice
 * column (x, y) and Z consecutive slices (Z = 1: the thread-level form;
 * Z = 16: the instruction-level form with 16 voxels per thread along z). The
 * kernel support is walked as z-runs (ctr__pet_column); a run of len entries
 * is taken LC entries at a time: LC weights and a window of Z + LC - 1 input
 * values along z feed Z x LC multiply-adds from registers, so every input
 * value loaded serves up to LC outputs and every weight Z outputs.
 * Back projection gathers with the voxel's own kernel id; forward projection
 * gathers with the neighbour's id at the mirrored entry nent - 1 - e.
 *
 * With few lattice columns per SM (144 x 144 x 48 / Z = 3 blocks of 128
 * threads per SM at Z = 24) the runs are split among nsplit blocks per
 * output tile for latency hiding; their partial sums are added in a fixed
 * order afterwards.
 *
 * Look-up tables by access pattern: the runs are read by all threads of a
 * warp at the same address (constant memory when they fit, else the
 * read-only path); kernel values w[e * nk + id] are read with ids that
 * differ between neighbouring threads but stay close (read-only path, one or
 * two cache lines per warp); LORmap and the image through the read-only
 * path, coalesced along x.
 *
 * The input is padded: a zero halo (HX, HY, HZ) around the lattice, the z
 * extent rounded up to whole Z blocks plus LC - 1 slices, so no load needs a
 * bounds check. */
#ifndef CTR_PET_KERNELS_CUH
#define CTR_PET_KERNELS_CUH

/* Entries of a run per register pass: PET_LC (4) or 8. */
#define PET_LC 4
#define PET_LC_MAX 8
#define PET_CONST_COLS 5400       /* runs that fit in constant memory (12 bytes each) */

/* A run on the device: x = offset of its first input (padded layout) from
 * the output voxel, y = offset of the neighbour's LORmap entry, z = e0 | len << 24. */
__constant__ int3 c_pet_cols[PET_CONST_COLS];

template <int Z, int LC, bool FWD, bool CONST_COLS>
__global__ void __launch_bounds__(256)
    pet_project_kernel(const float *__restrict__ in, float *__restrict__ out,
                       const int *__restrict__ pid, const float *__restrict__ w,
                       const int3 *__restrict__ gcols, int ncols, int nk, int nent, int nx, int ny,
                       int nz, int PX, int PY, int HX, int HY, int HZ, int nsplit) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int split = blockIdx.z % nsplit, z0 = blockIdx.z / nsplit * Z;
  /* this block's share of the runs; split > 0 writes a partial sum */
  const int per = (ncols + nsplit - 1) / nsplit, c1 = min(ncols, (split + 1) * per);
  if (x >= nx || y >= ny) return;
  const long long pxy = (long long)PX * PY;
  const int idbase = (y + HY) * PX + x + HX;
  const float *base = in + (long long)(z0 + HZ) * pxy + idbase;
  const int myid = __ldg(pid + idbase);
  float acc[Z];
#pragma unroll
  for (int j = 0; j < Z; j++) acc[j] = 0.0f;
  for (int c = split * per; c < c1; c++) {
    int3 col;
    if (CONST_COLS) {
      col = c_pet_cols[c];
    } else {
      const int *g = reinterpret_cast<const int *>(gcols + c);
      col = make_int3(__ldg(g), __ldg(g + 1), __ldg(g + 2));
    }
    const int id = FWD ? __ldg(pid + idbase + col.y) : myid;
    const int e0 = col.z & 0xFFFFFF, len = col.z >> 24;
    const float *src = base + col.x;
    for (int k0 = 0; k0 < len; k0 += LC) {
      float wr[LC], buf[Z + LC - 1];
#pragma unroll
      for (int k = 0; k < LC; k++) {
        const int e = e0 + k0 + k;
        wr[k] = k0 + k < len ? __ldg(w + (long long)(FWD ? nent - 1 - e : e) * nk + id) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < Z + LC - 1; i++) buf[i] = __ldg(src + (k0 + i) * pxy);
#pragma unroll
      for (int k = 0; k < LC; k++)
#pragma unroll
        for (int j = 0; j < Z; j++) acc[j] = fmaf(wr[k], buf[j + k], acc[j]);
    }
  }
  const long long nxy = (long long)nx * ny;
  out += split * nxy * nz;
#pragma unroll
  for (int j = 0; j < Z; j++)
    if (z0 + j < nz) out[(z0 + j) * nxy + (long long)y * nx + x] = acc[j];
}

/* out = sum of the nsplit partial projections in part (fixed order: the
 * result does not depend on scheduling). */
__global__ void pet_reduce_kernel(const float *__restrict__ part, float *__restrict__ out,
                                  long long n, int nsplit) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = part[i];
  for (int k = 1; k < nsplit; k++) s += part[k * n + i];
  out[i] = s;
}

/* Unpadded image -> the interior of the padded buffer. */
__global__ void pet_pad_kernel(const float *__restrict__ src, float *__restrict__ dst, int nx,
                               int ny, int nz, int PX, int PY, int HX, int HY, int HZ) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= nx) return;
  dst[((long long)(z + HZ) * PY + y + HY) * PX + x + HX] = src[((long long)z * ny + y) * nx + x];
}

#endif

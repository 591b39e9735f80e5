/* The CUDA backend of the iterative projector: Joseph forward projection
 * (one thread per ray, software bilinear samples of zero-padded plane
 * stacks), its exact adjoint (one thread per voxel gathering the rays of its
 * footprints from per-batch ray tables), both with the maths and the bits of
 * itmath.h; and the driver that runs them for every placement of the
 * vectors: volume and projections on the GPU (DEVICE), projections on the
 * GPU and the volume streamed slab by slab (PROJ_DEVICE), or both streamed,
 * slabs times blocks of views (STREAMED). Per voxel the adjoint adds its views
 * in slot order whatever the placement, so its result does not depend on
 * the plan; the forward projection adds a ray's slabs in order.
 *
 * Design and expected speed: bench/NOTES.md ("Iterative projector"). */
#include <cuda_runtime.h>
#include <string.h>

#include "gpu/cuda_util.h"
#include "gpu/gpu_buffers.h"
#include "iterative/cuda/iterative_cuda.h"

/* Threads per block of the projection kernels: 32 detector columns x 4 rows
 * (forward: a warp's rays cross neighbouring voxels of each plane, so its
 * loads of a plane row are contiguous). The adjoint's blocks: k_adjoint. */
#define FWD_BX 32
#define FWD_BY 4
/* Views of one adjoint launch (their matrices sit in shared memory). */
#define ADJ_MAX_BATCH 64
/* Grid limits: launches with more blocks along y or z than these go in
 * several parts (the volume's and detector's sizes reach 2^20). */
#define MAX_GRID_Z 65535
#define MAX_GRID_Y 65535
/* Views whose blocks of one detector tile the forward launch places next to
 * each other (blockIdx.x: the view within its group fastest, then the tile's
 * column), so that they run at once and read the same planes' rows through
 * L2: neighbouring views' rays of one pixel lie within a few voxels of each
 * other. With the view in blockIdx.z the GPU held a fraction of one view at a
 * time and each view streamed the plane stack from HBM again (bench/NOTES.md,
 * "Forward projection"). Each ray is computed as before: the same bits. */
#define FWD_VIEWS 16

/* The device buffers come from the context's GPU buffer cache
 * (src/gpu/gpu_buffers.h) and go back to it, with their sizes, when they
 * grow and when the projector is freed (its context outlives it). */
typedef struct it_cuda {
  cudaStream_t s;
  ctr__it_view *d_views; /* the projector's views in slot order */
  int views_valid;
  float *d_stacks;       /* two plane stacks of a slab */
  size_t stacks_cap;     /* floats */
  float *d_slab;         /* a slab of the volume (host volumes) */
  size_t slab_cap;
  float2 *d_cols;        /* the column tables (projector.c), in slot order */
  float4 *d_line;        /* ray tables of an adjoint batch */
  float2 *d_yf;
  int *d_fam;
  size_t table_cap;      /* rays */
  float *d_block;        /* a block of views (STREAMED) */
  size_t block_cap;
  double *d_part;
  unsigned long long *d_count;
} it_cuda;

/* The grid box of a launch (itmath.h's b0, b1) and the voxel size. */
typedef struct it_grid {
  double vox[3];
  long long b0[3], b1[3];
} it_grid;

/* ---- State ------------------------------------------------------------------------ */

/* The fixed buffers' sizes. */
static size_t views_bytes(const ctr_projector *p) { return sizeof(ctr__it_view) * (size_t)p->nviews; }
static size_t cols_bytes(const ctr_projector *p) {
  return sizeof(float2) * (size_t)(p->nviews * p->nu);
}
#define PART_BYTES (sizeof(double) * CTR__IT_RED_BLOCKS)
#define COUNT_BYTES sizeof(unsigned long long)
#define FAM_BYTES (sizeof(int) * ADJ_MAX_BATCH)

void ctr__it_cuda_release(ctr_projector *p) {
  it_cuda *c = (it_cuda *)p->cuda;
  if (!c) return;
  cudaSetDevice(p->gpu);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  const ctr_context *ctx = p->ctx;
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_views, views_bytes(p));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_cols, cols_bytes(p));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_stacks, c->stacks_cap * sizeof(float));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_slab, c->slab_cap * sizeof(float));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_line, c->table_cap * sizeof(float4));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_yf, c->table_cap * sizeof(float2));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_fam, FAM_BYTES);
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_block, c->block_cap * sizeof(float));
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_part, PART_BYTES);
  ctr__gpu_buffer_put(ctx, p->gpu, c->d_count, COUNT_BYTES);
  if (c->s) cudaStreamDestroy(c->s);
  free(c);
  p->cuda = NULL;
}

static ctr_status state(ctr_projector *p, it_cuda **out) {
  ctr_status st = CTR_OK;
  it_cuda *c = (it_cuda *)p->cuda;
  if (!c) {
    c = (it_cuda *)ctr__calloc(1, sizeof *c, "CUDA projector");
    if (!c) return CTR_E_OUT_OF_MEMORY;
    p->cuda = c;
    /* A blocking stream: it waits for the vector operations of the default
     * stream and they wait for it. */
    CU(cudaStreamCreate(&c->s));
    GPU_GET(p->ctx, c->d_views, views_bytes(p), "projector views");
    GPU_GET(p->ctx, c->d_cols, cols_bytes(p), "projector column tables");
    GPU_GET(p->ctx, c->d_part, PART_BYTES, "reduction partial sums");
    GPU_GET(p->ctx, c->d_count, COUNT_BYTES, "reduction counter");
  }
  if (!c->views_valid || p->order_changed) {
    ctr__it_view *h = (ctr__it_view *)ctr__malloc(sizeof(ctr__it_view) * (size_t)p->nviews, "views");
    if (!h) return CTR_E_OUT_OF_MEMORY;
    for (int64_t w = 0; w < p->nviews; w++) h[w] = p->views[p->order[w]];
    const cudaError_t e = cudaMemcpy(c->d_views, h, sizeof(ctr__it_view) * (size_t)p->nviews,
                                     cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) return ctr__cuda_status(e, "cudaMemcpy(views)");
    const size_t row = sizeof(float2) * (size_t)p->nu;
    for (int64_t w = 0; w < p->nviews; w++) {
      const cudaError_t ec = cudaMemcpy((char *)c->d_cols + (size_t)w * row,
                                        p->cols + 2 * p->order[w] * p->nu, row,
                                        cudaMemcpyHostToDevice);
      if (ec != cudaSuccess) return ctr__cuda_status(ec, "cudaMemcpy(column tables)");
    }
    c->views_valid = 1;
    p->order_changed = 0;
  }
  *out = c;
cleanup:
  return st;
}

ctr_status ctr__it_cuda_scratch(ctr_projector *p, double **part, unsigned long long **count) {
  it_cuda *c;
  CTR_CHECK(state(p, &c));
  *part = c->d_part;
  *count = c->d_count;
  return CTR_OK;
}

int ctr__it_cuda_pin(ctr_projector *p, void *ptr, size_t bytes) {
  if (cudaSetDevice(p->gpu) != cudaSuccess) return cudaGetLastError(), 0;
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, ptr) == cudaSuccess && a.type == cudaMemoryTypeHost) return 0;
  cudaGetLastError();
  if (cudaHostRegister(ptr, bytes, cudaHostRegisterDefault) != cudaSuccess) return cudaGetLastError(), 0;
  return 1;
}

void ctr__it_cuda_unpin(ctr_projector *p, void *ptr) {
  cudaSetDevice(p->gpu);
  if (cudaHostUnregister(ptr) != cudaSuccess) cudaGetLastError();
}

/* Grows a device buffer of c (used on c->s only) to hold n elements of
 * `size` bytes: the old one goes back to the cache once c->s is done with
 * it, the new one comes from there. */
static ctr_status reserve(const ctr_projector *p, const it_cuda *c, void **buf, size_t *cap,
                          size_t n, size_t size, const char *what) {
  if (*cap >= n) return CTR_OK;
  if (*buf) {
    const cudaError_t e = cudaStreamSynchronize(c->s);
    if (e != cudaSuccess) return ctr__cuda_status(e, "cudaStreamSynchronize");
  }
  ctr__gpu_buffer_put(p->ctx, p->gpu, *buf, *cap * size);
  *buf = NULL;
  *cap = 0;
  CTR_CHECK(ctr__gpu_buffer_get(p->ctx, p->gpu, n * size, what, buf));
  *cap = n;
  return CTR_OK;
}

/* ---- Plane stacks ------------------------------------------------------------------ */

#define PAD CTR__IT_PAD
#define PADS (2 * CTR__IT_PAD)

/* sz: x fastest, then y, then z, zero-bordered on every axis. */
__global__ void k_stack_z(const float *__restrict__ x, float *__restrict__ sz, int nx, int ny, int zs,
                          int nxp, int nyp) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.z;
  if (i >= nxp) return;
  for (int j = blockIdx.y; j < nyp; j += gridDim.y) { /* nyp may exceed the grid's y limit */
    const int xi = i - PAD, yj = j - PAD, zk = k - PAD;
    const bool in = xi >= 0 && xi < nx && yj >= 0 && yj < ny && zk >= 0 && zk < zs;
    sz[((long long)k * nyp + j) * nxp + i] = in ? x[((long long)zk * ny + yj) * nx + xi] : 0.0f;
  }
}

/* sx: y fastest, then x, then z (the transpose of each slice), zero-bordered;
 * through a shared tile so that reads and writes are both contiguous. */
__global__ void k_stack_x(const float *__restrict__ x, float *__restrict__ sx, int nx, int ny, int zs,
                          int nxp, int nyp) {
  __shared__ float tile[32][33];
  const int k = blockIdx.z, zk = k - PAD;
  const int i0 = blockIdx.y * 32, j0 = blockIdx.x * 32; /* padded indices */
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int xi = i0 + threadIdx.x - PAD, yj = j0 + r - PAD;
    const bool in = xi >= 0 && xi < nx && yj >= 0 && yj < ny && zk >= 0 && zk < zs;
    tile[r][threadIdx.x] = in ? x[((long long)zk * ny + yj) * nx + xi] : 0.0f;
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += blockDim.y) {
    const int i = i0 + r, j = j0 + threadIdx.x;
    if (i < nxp && j < nyp) sx[((long long)k * nxp + i) * nyp + j] = tile[threadIdx.x][r];
  }
}

static ctr_status build_stacks(ctr_projector *p, it_cuda *c, const float *slab, int64_t zs) {
  ctr_status st = CTR_OK;
  const int nx = (int)p->n[0], ny = (int)p->n[1];
  const int nxp = nx + PADS, nyp = ny + PADS, nzp = (int)zs + PADS;
  const size_t per = (size_t)nxp * nyp * nzp;
  CTR_CHECK(reserve(p, c, (void **)&c->d_stacks, &c->stacks_cap, 2 * per, sizeof(float), "plane stacks"));
  k_stack_z<<<dim3((nxp + 127) / 128, nyp < MAX_GRID_Y ? nyp : MAX_GRID_Y, nzp), 128, 0, c->s>>>(slab, c->d_stacks, nx, ny, (int)zs,
                                                                  nxp, nyp);
  CU_LAUNCHED("k_stack_z");
  k_stack_x<<<dim3((nyp + 31) / 32, (nxp + 31) / 32, nzp), dim3(32, 8), 0, c->s>>>(
      slab, c->d_stacks + per, nx, ny, (int)zs, nxp, nyp);
  CU_LAUNCHED("k_stack_x");
cleanup:
  return st;
}

/* ---- Forward projection --------------------------------------------------------------- */

/* The ray of this thread's pixel (u, v) in view w: the block copies the view
 * into shared memory (`view`), then each thread inside the detector sets up
 * its ray for the grid box. Returns 0 for threads outside the detector.
 * Blocks of FWD_BX x FWD_BY threads. */
__device__ int block_ray(const ctr__it_view *__restrict__ views, long long w, ctr__it_view *view,
                         int nu, int nv, int v_first, const it_grid &grid, int tile_u, int *u,
                         int *v, ctr__it_ray *r) {
  const int t = threadIdx.y * FWD_BX + threadIdx.x;
  if (t < (int)(sizeof(ctr__it_view) / sizeof(int)))
    ((int *)view)[t] = ((const int *)(views + w))[t];
  __syncthreads();
  *u = tile_u * FWD_BX + threadIdx.x;
  *v = v_first + blockIdx.y * FWD_BY + threadIdx.y;
  if (*u >= nu || *v >= nv) return 0;
  const int64_t b0[3] = {grid.b0[0], grid.b0[1], grid.b0[2]};
  const int64_t b1[3] = {grid.b1[0], grid.b1[1], grid.b1[2]};
  ctr__it_ray_setup(view, grid.vox, b0, b1, (double)*u, (double)*v, r);
  return 1;
}

/* One ray per thread: slots [w_launch, w_end), FWD_VIEWS of them a group
 * (blockIdx.z), the view within its group blockIdx.x % FWD_VIEWS and the
 * detector column tile blockIdx.x / FWD_VIEWS; y holds slots from y_first on.
 * The stacks are of slab [z0, z0 + zs). */
__global__ void __launch_bounds__(FWD_BX *FWD_BY)
    k_forward(const ctr__it_view *__restrict__ views, long long w_launch, long long w_end,
              long long y_first, int nu, int nv, int v_first, it_grid grid,
              const float *__restrict__ sz,
              const float *__restrict__ sx, int nxp, int nyp, int z0, float *__restrict__ y,
              int accumulate) {
  __shared__ ctr__it_view view;
  const long long w = w_launch + (long long)blockIdx.z * FWD_VIEWS + blockIdx.x % FWD_VIEWS;
  if (w >= w_end) return; /* the last group's missing views: whole blocks */
  int u, v;
  ctr__it_ray r;
  if (!block_ray(views, w, &view, nu, nv, v_first, grid, (int)(blockIdx.x / FWD_VIEWS), &u, &v, &r))
    return;
  float sum = 0.0f;
  if (r.lo <= r.hi) {
    const long long pitch_z = (long long)nxp * nyp;
    if (r.f == 0) {
      const float *base = sx + (PAD * (long long)nxp + PAD) * nyp + PAD;
      sum = ctr__it_ray_sum(base, nyp, (int)pitch_z, &r, r.lo, r.hi, 0, (float)z0);
    } else {
      const float *base = sz + (PAD * (long long)nyp + PAD) * nxp + PAD;
      if (r.f == 1)
        sum = ctr__it_ray_sum(base, nxp, (int)pitch_z, &r, r.lo, r.hi, 0, (float)z0);
      else
        sum = ctr__it_ray_sum(base, pitch_z, nxp, &r, r.lo, r.hi, z0, 0.0f);
    }
  }
  const float value = CTR__FMUL(r.len, sum);
  float *out = y + ((w - y_first) * nv + v) * (long long)nu + u;
  *out = accumulate ? CTR__FADD(*out, value) : value;
}

static it_grid grid_of(const ctr_projector *p, int64_t z0, int64_t z1) {
  it_grid g;
  int64_t b0[3], b1[3];
  ctr__proj_box(p, z0, z1, b0, b1);
  for (int a = 0; a < 3; a++) {
    g.vox[a] = p->vox[a];
    g.b0[a] = b0[a];
    g.b1[a] = b1[a];
  }
  return g;
}

/* Slots [w0, w1) of the slab in the stacks into y (slot y_first first). */
static ctr_status launch_forward(ctr_projector *p, it_cuda *c, int64_t z0, int64_t zs, int64_t w0,
                                 int64_t w1, float *y, int64_t y_first, int accumulate) {
  ctr_status st = CTR_OK;
  const int nx = (int)p->n[0], ny = (int)p->n[1], nxp = nx + PADS, nyp = ny + PADS;
  const size_t per = (size_t)nxp * nyp * (size_t)(zs + PADS);
  const it_grid g = grid_of(p, z0, z0 + zs);
  const int64_t most = (int64_t)MAX_GRID_Z * FWD_VIEWS; /* views of one launch */
  const int64_t rows = (int64_t)MAX_GRID_Y * FWD_BY;     /* detector rows of one launch */
  for (int64_t a = w0; a < w1; a += most) {
    const int64_t n = w1 - a < most ? w1 - a : most;
    for (int64_t v0 = 0; v0 < p->nv; v0 += rows) {
      const int64_t nr = p->nv - v0 < rows ? p->nv - v0 : rows;
      const dim3 blocks((unsigned)((p->nu + FWD_BX - 1) / FWD_BX * FWD_VIEWS),
                        (unsigned)((nr + FWD_BY - 1) / FWD_BY),
                        (unsigned)((n + FWD_VIEWS - 1) / FWD_VIEWS));
      k_forward<<<blocks, dim3(FWD_BX, FWD_BY), 0, c->s>>>(
          c->d_views, a, a + n, y_first, (int)p->nu, (int)p->nv, (int)v0, g, c->d_stacks,
          c->d_stacks + per, nxp, nyp, (int)z0, y, accumulate);
      CU_LAUNCHED("k_forward");
    }
  }
cleanup:
  return st;
}

/* The slab [z0, z0 + zs) of x on the device: x itself when it is there,
 * else an upload into the staging slab. */
static ctr_status slab_of(ctr_projector *p, it_cuda *c, const ctr__vec *x, int64_t z0, int64_t zs,
                          const float **out) {
  const int64_t plane = p->n[0] * p->n[1];
  if (x->device) {
    *out = x->data + z0 * plane;
    return CTR_OK;
  }
  ctr_status st = CTR_OK;
  CTR_CHECK(reserve(p, c, (void **)&c->d_slab, &c->slab_cap, (size_t)(plane * zs), sizeof(float), "volume slab"));
  CU(cudaMemcpyAsync(c->d_slab, x->data + z0 * plane, sizeof(float) * (size_t)(plane * zs),
                     cudaMemcpyHostToDevice, c->s));
  *out = c->d_slab;
cleanup:
  return st;
}

ctr_status ctr__it_cuda_sync(ctr_projector *p) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  CU(cudaDeviceSynchronize());
cleanup:
  return st;
}

ctr_status ctr__it_cuda_forward(ctr_projector *p, const ctr__vec *x, ctr__vec *y, int64_t w0,
                                int64_t w1) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  it_cuda *c;
  CTR_CHECK(state(p, &c));
  const int64_t nz = p->n[2], zs = p->slab_slices, npix = p->nu * p->nv;
  if (w0 == w1) return CTR_OK;
  if (y->device) {
    for (int64_t z0 = 0; z0 < nz; z0 += zs) {
      const int64_t n = z0 + zs < nz ? zs : nz - z0;
      const float *slab;
      CTR_CHECK_GOTO(st, slab_of(p, c, x, z0, n, &slab));
      CTR_CHECK_GOTO(st, build_stacks(p, c, slab, n));
      CTR_CHECK_GOTO(st, launch_forward(p, c, z0, n, w0, w1, y->data, 0, z0 > 0));
    }
  } else {
    const int64_t bv = p->block_views;
    CTR_CHECK(reserve(p, c, (void **)&c->d_block, &c->block_cap, (size_t)(bv * npix), sizeof(float),
                      "block of views"));
    for (int64_t b0 = w0; b0 < w1; b0 += bv) {
      const int64_t b1 = b0 + bv < w1 ? b0 + bv : w1;
      for (int64_t z0 = 0; z0 < nz; z0 += zs) {
        const int64_t n = z0 + zs < nz ? zs : nz - z0;
        const float *slab;
        CTR_CHECK_GOTO(st, slab_of(p, c, x, z0, n, &slab));
        CTR_CHECK_GOTO(st, build_stacks(p, c, slab, n));
        CTR_CHECK_GOTO(st, launch_forward(p, c, z0, n, b0, b1, c->d_block, b0, z0 > 0));
      }
      CU(cudaMemcpyAsync(y->data + b0 * npix, c->d_block, sizeof(float) * (size_t)((b1 - b0) * npix),
                         cudaMemcpyDeviceToHost, c->s));
      CU(cudaStreamSynchronize(c->s));
    }
  }
  CU(cudaStreamSynchronize(c->s));
cleanup:
  return st;
}

/* ---- Adjoint ---------------------------------------------------------------------------- */

/* The ray tables of slots [w_first, w_first + nb): per ray (A_p, B_p, A_q,
 * B_q) and (Y = y len, f) with f = 3 for a ray that weighs no voxel, per view
 * the families present and CTR__IT_FAM_SPLIT when a column-separable view's
 * ray differs from its column's line. y holds slots from y_first on. */
__global__ void k_tables(const ctr__it_view *__restrict__ views, long long w_first, long long y_first,
                         int nu, int nv, int v_first, it_grid grid, const float *__restrict__ y,
                         const float2 *__restrict__ cols, float4 *__restrict__ line,
                         float2 *__restrict__ yf, int *__restrict__ fam) {
  __shared__ ctr__it_view view;
  const long long k = blockIdx.z, w = w_first + k;
  int u, v;
  ctr__it_ray r;
  if (!block_ray(views, w, &view, nu, nv, v_first, grid, (int)blockIdx.x, &u, &v, &r)) return;
  const int f = r.lo <= r.hi ? r.f : 3;
  const long long i = (k * nv + v) * (long long)nu + u;
  line[i] = make_float4(r.A[0], r.B[0], r.A[1], r.B[1]);
  yf[i] = make_float2(CTR__FMUL(y[((w - y_first) * nv + v) * (long long)nu + u], r.len), (float)f);
  if (f < 3) atomicOr(fam + k, 1 << f);
  if (view.cols) {
    const float2 cp = cols[w * nu + u];
    const float cpa[2] = {cp.x, cp.y};
    if (!ctr__it_sep_check(&view, cpa, u, f, r.A[0], r.B[0])) atomicOr(fam + k, CTR__IT_FAM_SPLIT);
  }
}

/* The adjoint of a batch's nb views into a tile of ADJ_T x ADJ_T x ADJ_ZT
 * voxels (x, y, z: 16 x 16 x 16) per block, a column of ADJ_ZT voxels along z
 * per thread:
 * out (slices [zo, z1) of the grid, relative to the slab at z_out) =
 * (accumulate ? out : 0) + the views' terms, in order. A column-separable
 * view (itmath.h) is gathered through the sums T(u, k) of its columns: per
 * family, for each of the tile's planes, the pixel box of the tile's
 * rectangle gives the columns that can weigh it; ADJ_CMAX of them at a time
 * walk their rows into T (shared memory, a thread a column), then each
 * voxel finds the columns within one voxel of it (a binary search: a
 * plane's column lines are monotone in u) and adds wp T. Other views take
 * the plain gather (ctr__it_gather_column) with shared accumulators. */
#define ADJ_T 16                      /* voxels along x and y of a tile */
#define ADJ_ZT (2 * CTR__IT_COLUMN)   /* along z (the plain gather: two columns) */
#define ADJ_THREADS (ADJ_T * ADJ_T)
#define ADJ_CMAX 32                   /* columns of a plane per pass */
#define ADJ_TS (ADJ_ZT + 3)           /* T slots of a column: a spare each side, one pad */
#define ADJ_PS (ADJ_CMAX * ADJ_TS + 1) /* T floats of a plane (odd: planes on other banks) */

/* The first index c in [0, n) with dir * p[c] > x (n if none). */
__device__ int adj_first_above(const float *p, int n, float dir, float x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (dir * p[mid] > x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

__global__ void __launch_bounds__(ADJ_THREADS)
    k_adjoint(const ctr__it_view *__restrict__ views, long long w_first, int nb,
              const float2 *__restrict__ cols, const float4 *__restrict__ line,
              const float2 *__restrict__ yf, const int *__restrict__ fam, int nu, int nv, int nx,
              int ny, int j_first, int zo, int z1, int z_out, float *__restrict__ out,
              int accumulate) {
  __shared__ ctr__it_view V;
  __shared__ int F[ADJ_MAX_BATCH];
  __shared__ int box[ADJ_T][5]; /* per plane: u0, u1, v0, v1, columns */
  __shared__ float pp[ADJ_T][ADJ_CMAX + 1];
  /* T, or the plain gather's accumulators (ADJ_ZT x ADJ_THREADS) */
  __shared__ float T[ADJ_T * ADJ_PS > ADJ_ZT * ADJ_THREADS ? ADJ_T * ADJ_PS : ADJ_ZT * ADJ_THREADS];
  float *sacc = T;
  const int t = threadIdx.x, tx = t % ADJ_T, ty = t / ADJ_T;
  for (int e = t; e < nb; e += ADJ_THREADS) F[e] = fam[e];
  const int i0 = blockIdx.x * ADJ_T, j0 = j_first + blockIdx.y * ADJ_T;
  const int i = i0 + tx, j = j0 + ty, inside = i < nx && j < ny;
  const int k0 = zo + blockIdx.z * ADJ_ZT, nk = z1 - k0 < ADJ_ZT ? z1 - k0 : ADJ_ZT;
  const long long slice = (long long)nx * ny, npix = (long long)nu * nv;
  float *o = out + ((long long)(k0 - z_out) * ny + j) * nx + i;
  float acc[ADJ_ZT];
#pragma unroll
  for (int s = 0; s < ADJ_ZT; s++) acc[s] = inside && s < nk && accumulate ? o[s * slice] : 0.0f;
  const float zc = (float)k0 + 0.5f * (float)(nk - 1), zh = 0.5f * (float)(nk + 1);
  for (int q = 0; q < nb; q++) {
    __syncthreads(); /* the last view's readers of V, box, pp and T are done */
    if (t < (int)(sizeof(ctr__it_view) / sizeof(int)))
      ((int *)&V)[t] = ((const int *)(views + w_first + q))[t];
    __syncthreads();
    const float *lq = (const float *)(line + q * npix), *yq = (const float *)(yf + q * npix);
    if (!V.cols || (F[q] & (CTR__IT_FAM_SPLIT | 4))) {
      if (inside) {
#pragma unroll
        for (int s = 0; s < ADJ_ZT; s++) sacc[s * ADJ_THREADS + t] = acc[s];
        for (int h = 0; h < nk; h += CTR__IT_COLUMN) /* a voxel's terms: the order of its own gather */
          ctr__it_gather_column(&V.cam, lq, yq, nu, nv, F[q], i, j, k0 + h,
                                nk - h < CTR__IT_COLUMN ? nk - h : CTR__IT_COLUMN,
                                sacc + h * ADJ_THREADS + t, ADJ_THREADS);
#pragma unroll
        for (int s = 0; s < ADJ_ZT; s++) acc[s] = sacc[s * ADJ_THREADS + t];
      }
      continue;
    }
    const float2 *cq = cols + (w_first + q) * (long long)nu;
    for (int f = 0; f < 2; f++) {
      if (V.run[f][0] > V.run[f][1]) continue;
      __syncthreads(); /* the last family's readers of box are done */
      if (t < ADJ_T) { /* plane t of the tile: its columns' box */
        const int fi = (f == 0 ? i0 : j0) + t;
        int u0 = 1, u1 = 0, v0 = 1, v1 = 0;
        if (fi < (f == 0 ? nx : ny)) {
          const float c = 0.5f * (float)(ADJ_T - 1);
          if (f == 0)
            ctr__it_box_view(&V.cam, (float)fi, (float)j0 + c, zc, 1, 2, c + 1.0f, zh, nu, nv, &u0,
                             &u1, &v0, &v1);
          else
            ctr__it_box_view(&V.cam, (float)i0 + c, (float)fi, zc, 0, 2, c + 1.0f, zh, nu, nv, &u0,
                             &u1, &v0, &v1);
          if (u0 < V.run[f][0]) u0 = V.run[f][0];
          if (u1 > V.run[f][1]) u1 = V.run[f][1];
        }
        box[t][0] = u0, box[t][1] = u1, box[t][2] = v0, box[t][3] = v1;
        box[t][4] = u0 <= u1 && v0 <= v1 ? u1 - u0 + 1 : 0;
      }
      __syncthreads();
      int ncol = 0;
      for (int P = 0; P < ADJ_T; P++) ncol = box[P][4] > ncol ? box[P][4] : ncol;
      const float ff = (float)f;
      for (int c0 = 0; c0 < ncol; c0 += ADJ_CMAX) {
        /* T of the planes' columns c0 .. c0 + ADJ_CMAX - 1: a warp a plane. */
        for (int e = t; e < ADJ_T * ADJ_CMAX; e += ADJ_THREADS) {
          const int P = e / ADJ_CMAX, c = e % ADJ_CMAX;
          float *Tc = T + P * ADJ_PS + c * ADJ_TS;
#pragma unroll
          for (int s = 0; s < ADJ_ZT + 2; s++) Tc[s] = 0.0f;
          if (c0 + c < box[P][4]) {
            const int u = box[P][0] + c0 + c, fi = (f == 0 ? i0 : j0) + P;
            const float2 cl = cq[u];
            pp[P][c] = ctr__it_pos(cl.x, cl.y, fi);
            ctr__it_sep_walk(lq, yq, nu, u, box[P][2], box[P][3], ff, fi, k0, nk, Tc + 1, 1);
          }
        }
        __syncthreads();
        /* Each voxel: the columns of its plane within one voxel of it. */
        const int P = f == 0 ? tx : ty;
        const int n = box[P][4] - c0 < ADJ_CMAX ? box[P][4] - c0 : ADJ_CMAX;
        if (n > 0) {
          const float jp = (float)(f == 0 ? j : i);
          const float *p = pp[P];
          const float dir = p[n - 1] >= p[0] ? 1.0f : -1.0f;
          /* From one before the first line beyond jp - 1 (in the lines'
           * order) to one past the first beyond jp + 1: the lines are
           * monotone but for their last bits. */
          int c = adj_first_above(p, n, dir, dir * jp - 1.0f) - 1;
          const int c1 = adj_first_above(p, n, dir, dir * jp + 1.0f);
          if (c < 0) c = 0;
          for (; c <= c1 && c < n; c++) {
            const float wp = 1.0f - fabsf(CTR__FADD(p[c], -jp));
            if (!(wp > 0.0f)) continue;
            const float *Tc = T + P * ADJ_PS + c * ADJ_TS + 1;
#pragma unroll
            for (int s = 0; s < ADJ_ZT; s++) acc[s] += wp * Tc[s];
          }
        }
        __syncthreads(); /* T and pp are rewritten by the next pass */
      }
    }
  }
  if (inside)
    for (int s = 0; s < nk; s++) o[s * slice] = acc[s];
}

/* Tables for slots [b, b + nb) from y (slot y_first first on the device),
 * then the gather into slices [z0, z1) of out (a slab starting at z_out). */
static ctr_status adjoint_batch(ctr_projector *p, it_cuda *c, const float *y, int64_t y_first,
                                int64_t b, int64_t nb, float *out, int64_t z_out, int64_t z0,
                                int64_t z1, int accumulate) {
  ctr_status st = CTR_OK;
  const int64_t npix = p->nu * p->nv;
  if (c->table_cap < (size_t)(nb * npix)) {
    if (c->d_line) CU(cudaStreamSynchronize(c->s)); /* the old tables' last readers */
    ctr__gpu_buffer_put(p->ctx, p->gpu, c->d_line, c->table_cap * sizeof(float4));
    ctr__gpu_buffer_put(p->ctx, p->gpu, c->d_yf, c->table_cap * sizeof(float2));
    c->d_line = NULL;
    c->d_yf = NULL;
    c->table_cap = 0;
    /* the two tables share table_cap: both or neither */
    GPU_GET(p->ctx, c->d_line, sizeof(float4) * (size_t)(nb * npix), "adjoint ray tables");
    st = ctr__gpu_buffer_get(p->ctx, p->gpu, sizeof(float2) * (size_t)(nb * npix),
                             "adjoint ray tables", (void **)&c->d_yf);
    if (st != CTR_OK) {
      ctr__gpu_buffer_put(p->ctx, p->gpu, c->d_line, sizeof(float4) * (size_t)(nb * npix));
      c->d_line = NULL;
      goto cleanup;
    }
    c->table_cap = (size_t)(nb * npix);
  }
  if (!c->d_fam) GPU_GET(p->ctx, c->d_fam, FAM_BYTES, "adjoint batch families");
  CU(cudaMemsetAsync(c->d_fam, 0, sizeof(int) * (size_t)nb, c->s));
  {
    const it_grid g = grid_of(p, 0, p->n[2]);
    const int64_t rows = (int64_t)MAX_GRID_Y * FWD_BY; /* detector rows of one launch */
    for (int64_t v0 = 0; v0 < p->nv; v0 += rows) {
      const int64_t nr = p->nv - v0 < rows ? p->nv - v0 : rows;
      const dim3 blocks((unsigned)((p->nu + FWD_BX - 1) / FWD_BX), (unsigned)((nr + FWD_BY - 1) / FWD_BY),
                        (unsigned)nb);
      k_tables<<<blocks, dim3(FWD_BX, FWD_BY), 0, c->s>>>(c->d_views, b, y_first, (int)p->nu,
                                                          (int)p->nv, (int)v0, g, y, c->d_cols,
                                                          c->d_line, c->d_yf, c->d_fam);
      CU_LAUNCHED("k_tables");
    }
  }
  for (int64_t a = z0; a < z1; a += (int64_t)MAX_GRID_Z * ADJ_ZT) {
    const int64_t e = z1 - a < (int64_t)MAX_GRID_Z * ADJ_ZT ? z1 : a + (int64_t)MAX_GRID_Z * ADJ_ZT;
    const int64_t rows = (int64_t)MAX_GRID_Y * ADJ_T; /* volume rows of one launch */
    for (int64_t j0 = 0; j0 < p->n[1]; j0 += rows) {
      const int64_t nr = p->n[1] - j0 < rows ? p->n[1] - j0 : rows;
      const dim3 blocks((unsigned)((p->n[0] + ADJ_T - 1) / ADJ_T), (unsigned)((nr + ADJ_T - 1) / ADJ_T),
                        (unsigned)((e - a + ADJ_ZT - 1) / ADJ_ZT));
      k_adjoint<<<blocks, ADJ_THREADS, 0, c->s>>>(
          c->d_views, b, (int)nb, c->d_cols, c->d_line, c->d_yf, c->d_fam, (int)p->nu,
          (int)p->nv, (int)p->n[0], (int)p->n[1], (int)j0, (int)a, (int)e, (int)z_out, out,
          accumulate);
      CU_LAUNCHED("k_adjoint");
    }
  }
cleanup:
  return st;
}

/* The adjoint of slots [w0, w1) into slices [z0, z1) of out (a slab that
 * starts at z_out): from y on the device, or y uploaded block by block. */
static ctr_status adjoint_into(ctr_projector *p, it_cuda *c, const ctr__vec *y, int64_t w0,
                               int64_t w1, float *out, int64_t z_out, int64_t z0, int64_t z1) {
  ctr_status st = CTR_OK;
  const int64_t npix = p->nu * p->nv;
  int64_t nb = p->batch_views < ADJ_MAX_BATCH ? p->batch_views : ADJ_MAX_BATCH;
  if (nb < 1) nb = 1;
  if (w0 == w1) {
    CU(cudaMemsetAsync(out + (z0 - z_out) * p->n[0] * p->n[1], 0,
                       sizeof(float) * (size_t)(p->n[0] * p->n[1] * (z1 - z0)), c->s));
    return CTR_OK;
  }
  if (y->device) {
    for (int64_t b = w0; b < w1; b += nb)
      CTR_CHECK(adjoint_batch(p, c, y->data, 0, b, b + nb < w1 ? nb : w1 - b, out, z_out, z0, z1,
                              b > w0));
    return CTR_OK;
  }
  {
    const int64_t bv = p->block_views;
    CTR_CHECK(reserve(p, c, (void **)&c->d_block, &c->block_cap, (size_t)(bv * npix), sizeof(float),
                      "block of views"));
    for (int64_t b0 = w0; b0 < w1; b0 += bv) {
      const int64_t b1 = b0 + bv < w1 ? b0 + bv : w1;
      CU(cudaMemcpyAsync(c->d_block, y->data + b0 * npix, sizeof(float) * (size_t)((b1 - b0) * npix),
                         cudaMemcpyHostToDevice, c->s));
      for (int64_t b = b0; b < b1; b += nb)
        CTR_CHECK(adjoint_batch(p, c, c->d_block, b0, b, b + nb < b1 ? nb : b1 - b, out, z_out, z0,
                                z1, b > w0));
    }
  }
cleanup:
  return st;
}

ctr_status ctr__it_cuda_adjoint(ctr_projector *p, const ctr__vec *y, ctr__vec *x, int64_t w0,
                                int64_t w1, int64_t za, int64_t zb) {
  CU_DEVICE(p->gpu);
  ctr_status st = CTR_OK;
  it_cuda *c;
  CTR_CHECK(state(p, &c));
  const int64_t plane = p->n[0] * p->n[1];
  if (x->device) {
    CTR_CHECK_GOTO(st, adjoint_into(p, c, y, w0, w1, x->data, 0, za, zb));
  } else {
    const int64_t zs = p->slab_slices;
    CTR_CHECK(reserve(p, c, (void **)&c->d_slab, &c->slab_cap, (size_t)(plane * zs), sizeof(float), "volume slab"));
    for (int64_t z0 = za; z0 < zb; z0 += zs) {
      const int64_t z1 = z0 + zs < zb ? z0 + zs : zb;
      CTR_CHECK_GOTO(st, adjoint_into(p, c, y, w0, w1, c->d_slab, z0, z0, z1));
      CU(cudaMemcpyAsync(x->data + z0 * plane, c->d_slab, sizeof(float) * (size_t)((z1 - z0) * plane),
                         cudaMemcpyDeviceToHost, c->s));
      CU(cudaStreamSynchronize(c->s));
    }
  }
  CU(cudaStreamSynchronize(c->s));
cleanup:
  return st;
}

/* ---- Arrays the caller holds in GPU memory (ctr_projector_*_device) ------------------- */

ctr_status ctr__it_cuda_device_args(ctr_projector *p, const char *fn, const void *a,
                                    const char *a_name, const void *b, const char *b_name) {
  CU_DEVICE(p->gpu);
  const void *ptr[2] = {a, b};
  const char *name[2] = {a_name, b_name};
  for (int i = 0; i < 2; i++) {
    cudaPointerAttributes at;
    const cudaError_t e = cudaPointerGetAttributes(&at, ptr[i]);
    if (e != cudaSuccess) {
      cudaGetLastError(); /* clears the error a host pointer may leave */
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s is not GPU memory (%s)", fn, name[i],
               cudaGetErrorString(e));
    }
    if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s is %s memory: expected GPU memory of device %d (the "
               "projector's context)", fn, name[i], at.type == cudaMemoryTypeHost ? "pinned host" : "host",
               p->gpu);
    if (at.device != p->gpu)
      CTR_FAIL(CTR_E_INVALID_ARGUMENT, "%s: %s is memory of GPU %d: expected GPU %d (the projector's "
               "context)", fn, name[i], at.device, p->gpu);
  }
  /* the arrays' producers (any stream of any library) finish first */
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return ctr__cuda_status(e, "cudaDeviceSynchronize");
  return CTR_OK;
}

ctr_status ctr__it_cuda_slots_device(ctr_projector *p, float *user, float *slots, int to_slots) {
  ctr_status st = CTR_OK;
  it_cuda *c;
  CU_DEVICE(p->gpu);
  CTR_CHECK(state(p, &c));
  {
    const int64_t nu = p->nu, nv = p->nv, na = p->nviews;
    const size_t row = sizeof(float) * (size_t)nu, user_pitch = row * (size_t)na;
    for (int64_t w = 0; w < na; w++) {
      float *u = user + p->order[w] * nu, *s = slots + w * nv * nu;
      if (to_slots)
        CU(cudaMemcpy2DAsync(s, row, u, user_pitch, row, (size_t)nv, cudaMemcpyDefault, c->s));
      else
        CU(cudaMemcpy2DAsync(u, user_pitch, s, row, row, (size_t)nv, cudaMemcpyDefault, c->s));
    }
    CU(cudaStreamSynchronize(c->s));
  }
cleanup:
  return st;
}

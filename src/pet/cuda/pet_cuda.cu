/* CUDA backend of the DIRECT projectors and reconstruction: the padded
 * image, the per-view tables uploaded on first use, projections of one view
 * from host or GPU arrays, and the whole reconstruction on the device (data,
 * sensitivities, discrepancy and update stay on the GPU). */
#include "gpu/cuda_timing.cuh"
#include "pet/cuda/pet_cuda.cuh"
#include "pet/cuda/pet_kernels.cuh"
#include "core/autotune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Launch shape: Z slices per thread (16: the instruction-level form of Ha et
 * al. 2013, Fig. 3; 1: the thread-level form), LC run entries per register pass and
 * the block's x by y threads, and how many blocks share the runs of one
 * output tile (0: enough for about 24 blocks per SM). Default rows: 32, 48
 * or 64 threads, whichever pads the lattice's x least. The context's
 * ctr_tuning.pet_z, pet_lc, pet_block_x/y and pet_split override the
 * defaults (pet_const = -1: runs from global memory even when they fit in
 * constant memory); the benchmark compares them (bench/NOTES.md has the
 * figures). ctr_context_create checked their ranges. */
static void pet_launch_choice(ctr__pet_cuda *c) {
  const ctr_tuning *t = ctr__tuning(c->ctx);
  c->split = t->pet_split;
  c->const_runs = t->pet_const >= 0;
  if (c->split < 0 || c->split > PET_MAX_SPLIT) c->split = 0;
  int z = t->pet_z, lc = t->pet_lc ? t->pet_lc : PET_LC;
  if (z != 1 && z != 8 && z != 16 && z != 24) { /* the largest with little z padding */
    z = 8;
    for (int cand = 24; cand > 8; cand -= 8)
      if ((c->nz + cand - 1) / cand * cand <= 1.1 * c->nz) {
        z = cand;
        break;
      }
  }
  c->Z = z;
  c->LC = lc == 8 ? 8 : 4;
  const int bx = t->pet_block_x, by = t->pet_block_y;
  if (bx >= 1 && by >= 1 && bx * by <= 256 && bx * by % 32 == 0) {
    c->bx = bx, c->by = by;
  } else { /* rows of 32, 48 or 64 threads, whichever pads x least (48 x 2 for 144) */
    c->bx = 32, c->by = 4;
    for (int w = 48; w <= 64; w += 16)
      if ((c->nx + w - 1) / w * w < (c->nx + c->bx - 1) / c->bx * c->bx) c->bx = w, c->by = 2;
  }
}

/* The constant-memory bank of runs (c_pet_cols) is one per device for the
 * whole process, shared by every projector on it, each on its own stream.
 * Per device: which view's runs it holds (tags are unique to a projector's
 * view) and an event after the last launch that read it. A projector that
 * needs other runs there makes its stream wait for that event before its
 * upload, and every launch that reads the bank records the event, all under
 * g_bank_lock, so no upload overwrites runs a kernel may still read
 * (launches and uploads are queued, not waited for, while it is held). */
static unsigned long long g_tag_next = 1;
static struct {
  unsigned long long tag;
  cudaEvent_t last; /* NULL until the bank's first use on that device */
} g_bank[64];
static pthread_mutex_t g_bank_lock = PTHREAD_MUTEX_INITIALIZER;

/* The sizes of a view's device tables (their buffers' in the cache). */
static size_t pid_bytes(const ctr__pet_cuda *c) { return (size_t)c->PX * c->PY * sizeof(int); }
static size_t w_bytes(const dev_view *dv) { return (size_t)dv->nent * dv->nk * sizeof(float); }
static size_t cols_bytes(const dev_view *dv) { return (size_t)dv->ncols * sizeof(int3); }

/* Gives a view's tables back (the work that read them has finished). */
static void view_free(const ctr__pet_cuda *c, dev_view *dv) {
  ctr__gpu_buffer_put(c->ctx, c->device, dv->pid, pid_bytes(c));
  ctr__gpu_buffer_put(c->ctx, c->device, dv->w, w_bytes(dv));
  ctr__gpu_buffer_put(c->ctx, c->device, dv->cols, cols_bytes(dv));
  dv->pid = NULL, dv->w = NULL, dv->cols = NULL;
  dv->ready = 0;
}

static ctr_status upload_view(ctr__pet_cuda *c, int64_t v, dev_view **out) {
  dev_view *dv = &c->views[v];
  ctr_status st = CTR_OK;
  int3 *hcols = NULL; /* the runs as the kernel reads them, until the copy */
  if (dv->ready) {
    *out = dv;
    return CTR_OK;
  }
  const ctr__pet_lut *L = ctr__pet_lut_get(c->sys, v);
  if (!L) return CTR_E_OUT_OF_MEMORY;
  dv->ncols = L->ncols, dv->nent = L->nent, dv->nk = L->nk;
  hcols = (int3 *)ctr__malloc((size_t)L->ncols * sizeof(int3), "PET runs");
  if (!hcols) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", ctr_error_detail());
  for (int i = 0; i < L->ncols; i++) {
    const ctr__pet_column *col = &L->cols[i];
    if (col->len > 255 || col->e0 >= (1 << 24))
      CTR_FAIL_GOTO(st, CTR_E_UNSUPPORTED,
                    "SR kernel support too large for the CUDA projector (%d entries, runs of %d): "
                    "use larger voxels or narrower kernels",
                    L->nent, (int)col->len);
    long long off = ((long long)col->dz0 * c->PY + col->dy) * c->PX + col->dx;
    hcols[i] = make_int3((int)off, col->dy * c->PX + col->dx, col->e0 | ((int)col->len << 24));
  }
  /* kept until the projector is freed (ctr__pet_cuda_free) */
  GPU_GET(c->ctx, dv->pid, pid_bytes(c), "PET LORmap");
  GPU_GET(c->ctx, dv->w, w_bytes(dv), "PET kernel values");
  GPU_GET(c->ctx, dv->cols, cols_bytes(dv), "PET runs");
  /* the LUT's padded LORmap has exactly this layout (halo = the system's) */
  CU(cudaMemcpy(dv->pid, L->pid, pid_bytes(c), cudaMemcpyHostToDevice));
  CU(cudaMemcpy(dv->w, L->w, w_bytes(dv), cudaMemcpyHostToDevice));
  CU(cudaMemcpy(dv->cols, hcols, cols_bytes(dv), cudaMemcpyHostToDevice));
  dv->tag = __atomic_fetch_add(&g_tag_next, 1, __ATOMIC_RELAXED);
  dv->ready = 1;
  *out = dv;
cleanup:
  if (st != CTR_OK) view_free(c, dv); /* synchronous copies: nothing reads them */
  free(hcols);
  return st;
}

template <int Z, int LC, bool FWD>
static void launch_z(const ctr__pet_cuda *c, const dev_view *dv, bool cc, const float *in,
                     float *out) {
  const int gx = (c->nx + c->bx - 1) / c->bx, gy = (c->ny + c->by - 1) / c->by;
  const int zb = c->nzr / Z;
  int ns = c->split;
  if (ns == 0) { /* about 24 blocks per SM, each with at least 32 runs */
    ns = (24 * c->sms + gx * gy * zb - 1) / (gx * gy * zb);
    ns = ns < 1 ? 1 : (ns > PET_MAX_SPLIT ? PET_MAX_SPLIT : ns);
    while (ns > 1 && dv->ncols / ns < 32) ns--;
  }
  float *dst = ns > 1 ? c->d_part : out;
  dim3 block(c->bx, c->by), grid(gx, gy, zb * ns);
  if (cc)
    pet_project_kernel<Z, LC, FWD, true><<<grid, block, 0, c->stream>>>(
        in, dst, dv->pid, dv->w, dv->cols, dv->ncols, dv->nk, dv->nent, c->nx, c->ny, c->nz,
        c->PX, c->PY, c->HX, c->HY, c->HZ, ns);
  else
    pet_project_kernel<Z, LC, FWD, false><<<grid, block, 0, c->stream>>>(
        in, dst, dv->pid, dv->w, dv->cols, dv->ncols, dv->nk, dv->nent, c->nx, c->ny, c->nz,
        c->PX, c->PY, c->HX, c->HY, c->HZ, ns);
  if (ns > 1)
    pet_reduce_kernel<<<(unsigned)((c->nvox + 255) / 256), 256, 0, c->stream>>>(c->d_part, out,
                                                                              c->nvox, ns);
}

template <int Z, int LC>
static void launch_dir(const ctr__pet_cuda *c, const dev_view *dv, bool cc, bool fwd,
                       const float *in, float *out) {
  if (fwd)
    launch_z<Z, LC, true>(c, dv, cc, in, out);
  else
    launch_z<Z, LC, false>(c, dv, cc, in, out);
}

template <int LC>
static void launch_lc(const ctr__pet_cuda *c, const dev_view *dv, bool cc, bool fwd,
                      const float *in, float *out) {
  switch (c->Z) {
    case 1: launch_dir<1, LC>(c, dv, cc, fwd, in, out); break;
    case 8: launch_dir<8, LC>(c, dv, cc, fwd, in, out); break;
    case 24: launch_dir<24, LC>(c, dv, cc, fwd, in, out); break;
    default: launch_dir<16, LC>(c, dv, cc, fwd, in, out); break;
  }
}

/* The launch of ctr__pet_project_device with dv's runs in the device's
 * constant bank; the caller holds g_bank_lock. */
static ctr_status launch_from_bank(ctr__pet_cuda *c, const dev_view *dv, bool fwd,
                                   const float *d_pin, float *d_out) {
  ctr_status st = CTR_OK;
  const int slot = c->device & 63;
  if (!g_bank[slot].last) CU(cudaEventCreateWithFlags(&g_bank[slot].last, cudaEventDisableTiming));
  if (g_bank[slot].tag != dv->tag) {
    CU(cudaStreamWaitEvent(c->stream, g_bank[slot].last, 0));
    g_bank[slot].tag = 0; /* unknown until the copy is queued */
    /* from the view's device copy: a copy from pageable host memory would
     * wait for the stream and keep the host from running ahead (the counts'
     * upload beside the sensitivities found it, issue 43) */
    CU(cudaMemcpyToSymbolAsync(c_pet_cols, dv->cols, (size_t)dv->ncols * sizeof(int3), 0,
                               cudaMemcpyDeviceToDevice, c->stream));
    g_bank[slot].tag = dv->tag;
  }
  if (c->LC == 8)
    launch_lc<8>(c, dv, true, fwd, d_pin, d_out);
  else
    launch_lc<4>(c, dv, true, fwd, d_pin, d_out);
  CU_LAUNCHED("pet_project_kernel");
  CU(cudaEventRecord(g_bank[slot].last, c->stream));
cleanup:
  return st;
}

/* out (unpadded, device) = A_v in or A_v^T in, in padded on the device. */
ctr_status ctr__pet_project_device(ctr__pet_cuda *c, ctr_pet_direction dir, int64_t v,
                                 const float *d_pin, float *d_out) {
  ctr_status st = CTR_OK;
  dev_view *dv = NULL;
  CTR_CHECK(upload_view(c, v, &dv));
  const bool cc = c->const_runs && dv->ncols <= PET_CONST_COLS;
  if (cc) {
    pthread_mutex_lock(&g_bank_lock);
    st = launch_from_bank(c, dv, dir == CTR_PET_FORWARD, d_pin, d_out);
    pthread_mutex_unlock(&g_bank_lock);
    return st;
  }
  if (c->LC == 8)
    launch_lc<8>(c, dv, false, dir == CTR_PET_FORWARD, d_pin, d_out);
  else
    launch_lc<4>(c, dv, false, dir == CTR_PET_FORWARD, d_pin, d_out);
  CU_LAUNCHED("pet_project_kernel");
cleanup:
  return st;
}

void ctr__pet_pad_device(const ctr__pet_cuda *c, const float *src, float *dst) {
  dim3 b(128), g((c->nx + 127) / 128, c->ny, c->nz);
  pet_pad_kernel<<<g, b, 0, c->stream>>>(src, dst, c->nx, c->ny, c->nz, c->PX, c->PY, c->HX,
                                         c->HY, c->HZ);
}

/* ---- Autotuning (core/autotune.h, family "pet-projector") ------------------
 * pet_z, pet_block and pet_split left at 0 are tuned on first use per GPU
 * and class: forward and back projections of three of the system's views,
 * with the projector's own buffers (its padded input sized for the largest
 * Z tried, then resized). Z and the block do not change a voxel's sum (each
 * thread adds its runs in the same order whatever the shape); the split
 * regroups it (rounding-level differences, as the default split does when
 * the grid changes). */

static int nzr_of(int nz, int Z) { return (nz + Z - 1) / Z * Z; }

static void pet_apply(ctr__pet_cuda *c, const int *v) {
  c->Z = v[0];
  c->bx = CTR__TUNE_X(v[1]), c->by = CTR__TUNE_Y(v[1]);
  c->split = v[2];
  c->nzr = nzr_of(c->nz, c->Z);
}

typedef struct pet_timer {
  ctr__pet_cuda *proj;
  int64_t views[3];
} pet_timer;

static ctr_status pet_trial(void *arg) {
  pet_timer *t = (pet_timer *)arg;
  ctr__pet_cuda *c = t->proj;
  for (int i = 0; i < 3; i++) {
    CTR_CHECK(ctr__pet_project_device(c, CTR_PET_FORWARD, t->views[i], c->d_in, c->d_out));
    CTR_CHECK(ctr__pet_project_device(c, CTR_PET_BACK, t->views[i], c->d_in, c->d_out));
  }
  return CTR_OK;
}

static ctr_status pet_time(void *user, const int *v, double *ms) {
  pet_timer *t = (pet_timer *)user;
  pet_apply(t->proj, v);
  return ctr__cuda_median_ms(t->proj->stream, 3, pet_trial, t, ms);
}

/* The request for c's class; 0 when nothing is to be tuned (off, or every
 * parameter set by hand). */
typedef struct pet_tune_req {
  ctr__tune_request q;
  ctr__tune_gpu gpu;
  char cls[256];
  int def[3], fixed[3];
  pet_timer timer;
} pet_tune_req;

static int pet_tune_request(ctr__pet_cuda *c, int force, pet_tune_req *w) {
  const ctr_tuning *t = ctr__tuning(c->ctx);
  const ctr__tune_space *s = ctr__tune_space_find("pet-projector");
  memset(w, 0, sizeof *w);
  w->fixed[0] = t->pet_z;
  w->fixed[1] = t->pet_block_x > 0 ? CTR__TUNE_XY(t->pet_block_x, t->pet_block_y) : 0;
  w->fixed[2] = t->pet_split;
  if (t->tune < 0 || !s || (w->fixed[0] && w->fixed[1] && w->fixed[2])) return 0;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, c->device) != cudaSuccess ||
      cudaDriverGetVersion(&w->gpu.driver) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  snprintf(w->gpu.name, sizeof w->gpu.name, "%s", prop.name);
  w->gpu.cc_major = prop.major, w->gpu.cc_minor = prop.minor;
  snprintf(w->cls, sizeof w->cls, "lattice=%lldx%lldx%lld halo=%dx%dx%d lc=%d const=%d",
           (long long)ctr__tune_bucket(c->nx), (long long)ctr__tune_bucket(c->ny),
           (long long)ctr__tune_bucket(c->nz), c->HX, c->HY, c->HZ, c->LC, c->const_runs);
  w->def[0] = c->Z, w->def[1] = CTR__TUNE_XY(c->bx, c->by), w->def[2] = c->split;
  const int64_t nv = c->sys->nviews;
  w->timer.proj = c;
  for (int i = 0; i < 3; i++) w->timer.views[i] = i * nv / 3;
  w->q.space = s, w->q.gpu = &w->gpu, w->q.problem_class = w->cls;
  w->q.def = w->def, w->q.fixed = w->fixed, w->q.time = pet_time, w->q.user = &w->timer;
  w->q.force = force;
  return 1;
}

ctr_status ctr__pet_cuda_create_tuned(ctr_context *ctx, int device, ctr_pet_system *s, int force,
                                      ctr_tune_report *r, ctr__pet_cuda **out) {
  ctr_status st = CTR_OK;
  if (r) memset(r, 0, sizeof *r);
  ctr__pet_cuda *c = (ctr__pet_cuda *)ctr__calloc(1, sizeof *c, "PET CUDA state");
  pet_tune_req *w = (pet_tune_req *)ctr__calloc(1, sizeof *w, "PET tuning");
  if (!c || !w) {
    free(c);
    free(w);
    return CTR_E_OUT_OF_MEMORY;
  }
  const ctr_pet_params *p = &s->p;
  c->ctx = ctx, c->device = device, c->sys = s;
  c->nx = (int)p->nx, c->ny = (int)p->ny, c->nz = (int)p->nz;
  c->HX = s->halo[0], c->HY = s->halo[1], c->HZ = s->halo[2];
  pet_launch_choice(c);
  c->nzr = nzr_of(c->nz, c->Z);
  int searching = 0, best[3];
  CU(cudaSetDevice(device));
  if (pet_tune_request(c, force, w)) {
    if (ctr__tune_known(ctx, &w->q, best, r)) pet_apply(c, best);
    else searching = 1;
  }
  c->PX = c->nx + 2 * c->HX, c->PY = c->ny + 2 * c->HY;
  {
    int nzr = c->nzr; /* a search's input holds the largest Z tried */
    const ctr__tune_param *zp = searching && !w->fixed[0] ? &w->q.space->params[0] : NULL;
    for (int i = 0; zp && i < zp->nvalues; i++)
      if (nzr_of(c->nz, zp->values[i]) > nzr) nzr = nzr_of(c->nz, zp->values[i]);
    c->PZ = nzr + 2 * c->HZ + PET_LC_MAX - 1;
  }
  c->nvox = (long long)c->nx * c->ny * c->nz;
  c->npad = (long long)c->PX * c->PY * c->PZ;
  c->views = (dev_view *)ctr__calloc((size_t)s->nviews, sizeof(dev_view), "PET device views");
  if (!c->views) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "%s", ctr_error_detail());
  CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  GPU_GET(ctx, c->d_in, (size_t)c->npad * sizeof(float), "PET padded image");
  GPU_GET(ctx, c->d_out, (size_t)c->nvox * sizeof(float), "PET projection");
  GPU_GET(ctx, c->d_tmp, (size_t)c->nvox * sizeof(float), "PET staging image");
  GPU_GET(ctx, c->d_part, (size_t)c->nvox * PET_MAX_SPLIT * sizeof(float), "PET partial projections");
  CU(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, device));
  CU(cudaMemset(c->d_in, 0, (size_t)c->npad * sizeof(float)));
  if (searching) {
    CTR_CHECK_GOTO(st, ctr__tune_get(ctx, &w->q, best, r));
    pet_apply(c, best);
    CU(cudaStreamSynchronize(c->stream));
    const long long npad = (long long)c->PX * c->PY * (c->nzr + 2 * c->HZ + PET_LC_MAX - 1);
    if (npad != c->npad) { /* the input resized for the Z chosen */
      ctr__gpu_buffer_put(ctx, device, c->d_in, (size_t)c->npad * sizeof(float));
      c->d_in = NULL;
      c->npad = npad;
      c->PZ = c->nzr + 2 * c->HZ + PET_LC_MAX - 1;
      GPU_GET(ctx, c->d_in, (size_t)c->npad * sizeof(float), "PET padded image");
      CU(cudaMemset(c->d_in, 0, (size_t)c->npad * sizeof(float)));
    }
  }
  free(w);
  *out = c;
  return CTR_OK;
cleanup:
  free(w);
  ctr__pet_cuda_free(c);
  return st;
}

ctr_status ctr__pet_cuda_create(ctr_context *ctx, int device, ctr_pet_system *s,
                                ctr__pet_cuda **out) {
  return ctr__pet_cuda_create_tuned(ctx, device, s, 0, NULL, out);
}

/* The backend's tune (backend.h): a projector made and freed, its report
 * kept. */
ctr_status ctr__pet_cuda_tune(ctr_context *ctx, int device, ctr_pet_system *s, int force,
                              ctr_tune_report *r) {
  ctr__pet_cuda *c = NULL;
  CTR_CHECK(ctr__pet_cuda_create_tuned(ctx, device, s, force, r, &c));
  if (r && !r->params[0])
    snprintf(r->note, sizeof r->note, "not tuned: %s", ctr__tuning(ctx)->tune < 0
                 ? "ctr_tuning.tune is off" : "pet_z, pet_block and pet_split are set by hand");
  ctr__pet_cuda_free(c);
  return CTR_OK;
}

void ctr__pet_cuda_free(ctr__pet_cuda *c) {
  if (!c) return;
  cudaSetDevice(c->device);
  cudaDeviceSynchronize(); /* the buffers go back unused */
  if (c->views)
    for (int64_t v = 0; v < c->sys->nviews; v++) view_free(c, &c->views[v]);
  free(c->views);
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_in, (size_t)c->npad * sizeof(float));
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_out, (size_t)c->nvox * sizeof(float));
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_tmp, (size_t)c->nvox * sizeof(float));
  ctr__gpu_buffer_put(c->ctx, c->device, c->d_part, (size_t)c->nvox * PET_MAX_SPLIT * sizeof(float));
  if (c->stream) cudaStreamDestroy(c->stream);
  free(c);
}

ctr_status ctr__pet_cuda_project(ctr__pet_cuda *c, ctr_pet_direction dir, int64_t view,
                                 const float *in, float *out) {
  ctr_status st = CTR_OK;
  const size_t bytes = (size_t)c->nvox * sizeof(float);
  CU(cudaSetDevice(c->device));
  /* host memory, or a GPU array copied on the GPU (no host round trip) */
  CU(cudaMemcpyAsync(c->d_tmp, in, bytes, cudaMemcpyDefault, c->stream));
  ctr__pet_pad_device(c, c->d_tmp, c->d_in);
  CU_LAUNCHED("pet_pad_kernel");
  CTR_CHECK_GOTO(st, ctr__pet_project_device(c, dir, view, c->d_in, c->d_out));
  CU(cudaMemcpyAsync(out, c->d_out, bytes, cudaMemcpyDefault, c->stream));
  CU(cudaStreamSynchronize(c->stream));
cleanup:
  return st;
}

typedef struct time_args {
  ctr__pet_cuda *c;
  ctr_pet_direction dir;
  int64_t view;
} time_args;

static ctr_status time_work(void *arg) {
  time_args *a = (time_args *)arg;
  return ctr__pet_project_device(a->c, a->dir, a->view, a->c->d_in, a->c->d_out);
}

/* Benchmark hook: median time (ms) of one view's projection with the data
 * already on the GPU (the first call uploads the view's tables). */
extern "C" ctr_status ctr__pet_cuda_time_view(ctr__pet_cuda *c, ctr_pet_direction dir,
                                              int64_t view, int reps, double *ms) {
  ctr_status st = CTR_OK;
  time_args a = {c, dir, view};
  CU(cudaSetDevice(c->device));
  st = ctr__cuda_median_ms(c->stream, reps, time_work, &a, ms);
cleanup:
  return st;
}

/* Loads an image into the projector's padded input (benchmark hook). */
extern "C" ctr_status ctr__pet_cuda_set_input(ctr__pet_cuda *c, const float *img) {
  ctr_status st = CTR_OK;
  CU(cudaSetDevice(c->device));
  CU(cudaMemcpy(c->d_tmp, img, (size_t)c->nvox * sizeof(float), cudaMemcpyHostToDevice));
  ctr__pet_pad_device(c, c->d_tmp, c->d_in);
  CU_LAUNCHED("pet_pad_kernel");
  CU(cudaStreamSynchronize(c->stream));
cleanup:
  return st;
}

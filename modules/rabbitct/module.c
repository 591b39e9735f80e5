/* The ctrecon RabbitCT module: a shared library the RabbitCT runner loads
 * with dlopen. Backprojection runs on the GPU when one is usable (CPU
 * otherwise), with software bilinear interpolation at double-precision
 * positions by default.
 *
 * The protocol is the published runner's (RabbitCT 1.0.3, Rohkohl et al.
 * 2009; docs/rabbitct.md):
 *  - RCTPrepareAlgorithm (optional; timed apart from the benchmark) and
 *    RCTLoadAlgorithm (not timed) come first, with all N matrices in
 *    adv_ppProjMatrixBuffers and adv_numProjBuffers the runner's buffer
 *    count. A module may hand the runner its own projection buffers by
 *    setting adv_pProjBuffers in Load; otherwise the runner allocates them
 *    after Load (plain, pageable memory).
 *  - The runner then reads a subset of views into the buffers (not timed)
 *    and calls RCTAlgorithmBackprojection once per view of the subset, each
 *    call timed: adv_projNumber is the absolute view index,
 *    adv_numAvailProjs the number of views in the subset, I_n its buffer
 *    (adv_pProjBuffers[i] for the i-th call of the subset), A_n its matrix,
 *    and adv_firstProjOfSubset a flag, 1 on the subset's first call only.
 *
 * What this module does with it:
 *  - Load hands the runner page-locked buffers of its own (ctr_host_alloc),
 *    so every subset goes up to the GPU at full PCIe speed. Buffers a
 *    runner gave before Load are pinned in place instead (Load is not
 *    timed); buffers that appear only after Load (CTRECON_RABBITCT_BUFFERS=
 *    runner, or when the module's could not be allocated) are staged
 *    through pinned memory by the library's host-transfer layer, hidden
 *    behind the backprojection: registering them in the first timed call
 *    cost more (L = 512 on an H200: 0.106-0.116 s registered, 0.092-0.106 s
 *    staged, bench/NOTES.md, issue 43); --tune host_transfer=registered
 *    still registers them there.
 *  - Timing is honest: a view's backprojection is complete when the call
 *    that covers it returns. The flagged first call of a subset backprojects
 *    all of the subset's views (the runner has read them all before it) and
 *    returns when they are in the volume; the subset's later calls find
 *    their view done. A call outside that pattern backprojects its own view
 *    (A_n, I_n). Nothing is deferred to RCTFinishAlgorithm, which only
 *    copies the volume out.
 *
 * Environment (the protocol has no other way to configure a module):
 *   CTRECON_DEVICE  = auto | cpu | cuda          (default auto)
 *   CTRECON_INTERP  = precise | exact | texture   (default precise: RabbitCT
 *                     scores rounded HU, which float positions near pixel
 *                     1000 perturb; GPU only, the CPU has one path)
 *   CTRECON_RABBITCT_BUFFERS = module | runner    (default module: who
 *                     allocates the projection buffers when the runner
 *                     leaves it to the module)
 *   CTRECON_<KEY>   = the tuning switches of docs/tuning.md (e.g.
 *                     CTRECON_BP_CHUNKS=32,32), passed to the library as
 *                     its context's tuning table (ctr_tuning_set_env) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrecon.h"
#include "rabbitct.h"

extern char **environ;

#define EXPORT __attribute__((visibility("default")))
#define PREFIX "ctrecon RabbitCT module: "

typedef struct module_state {
  ctr_context *ctx;
  ctr_geometry *g;
  ctr_backprojector *bp;
  int64_t cap; /* entries of idx, images, weights */
  int64_t *idx;
  const float **images;
  float *weights;
  int64_t done_first, done_end; /* views [done_first, done_end) are in the volume */
  float *own_block;             /* the module's buffers (one block), handed to the runner */
  float **own_ptrs;
  float **given;                /* the runner's buffers pinned in Load */
  unsigned n_given;
  int host_transfer; /* the tuning table's (ctr_tuning.host_transfer): the runner's buffers are
                        pinned in place when it is 0 (auto) or 2 (registered) */
} module_state;

static module_state M;

static bool fail(const char *what) {
  fprintf(stderr, PREFIX "%s: %s\n", what, ctr_error_detail());
  return false;
}

static size_t view_bytes(const RabbitCtGlobalData *r) {
  return (size_t)r->S_x * (size_t)r->S_y * sizeof(float);
}

/* Unpins the runner's buffers. Done in Finish: the published runner frees
 * its buffers before it calls Unload. */
static void unpin_runner_buffers(void) {
  while (M.n_given > 0) ctr_host_unregister(M.given[--M.n_given]);
  free(M.given);
  M.given = NULL;
}

static void release(void) {
  unpin_runner_buffers();
  ctr_host_free(M.own_block);
  free(M.own_ptrs);
  ctr_backprojector_free(M.bp);
  ctr_geometry_free(M.g);
  ctr_context_free(M.ctx);
  free(M.idx);
  free(M.images);
  free(M.weights);
  memset(&M, 0, sizeof M);
}

static bool make_context(void) {
  if (M.ctx) return true;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  const char *dev = getenv("CTRECON_DEVICE");
  if (dev && !strcmp(dev, "cpu")) co.device = CTR_DEVICE_CPU;
  else if (dev && !strncmp(dev, "cuda", 4)) co.device = CTR_DEVICE_CUDA;
  /* Tuning switches come as CTRECON_<KEY> variables too (ctrecon rabbitct
   * --tune sets them; docs/tuning.md); the library takes them as its
   * context's tuning table. */
  ctr_tuning t;
  if (ctr_tuning_init(&t, CTR_TUNING_VERSION) != CTR_OK ||
      ctr_tuning_set_env(&t, environ) != CTR_OK)
    return fail("tuning variables");
  co.tuning = &t;
  M.host_transfer = t.host_transfer;
  return ctr_context_create(&co, &M.ctx) == CTR_OK || fail("cannot create a context");
}

/* Room for n views in one call. */
static bool reserve(int64_t n) {
  if (n <= M.cap) return true;
  int64_t *idx = realloc(M.idx, (size_t)n * sizeof *idx);
  if (idx) M.idx = idx;
  const float **images = realloc(M.images, (size_t)n * sizeof *images);
  if (images) M.images = images;
  float *weights = realloc(M.weights, (size_t)n * sizeof *weights);
  if (weights) M.weights = weights;
  if (!idx || !images || !weights) {
    fprintf(stderr, PREFIX "out of memory for a subset of %lld views\n", (long long)n);
    return false;
  }
  M.cap = n;
  return true;
}

/* Geometry and backprojector from the runner's data (needs all matrices). */
static bool setup(const RabbitCtGlobalData *r) {
  if (M.bp) return true;
  if (!make_context()) return false;
  if (!r->adv_ppProjMatrixBuffers || r->adv_N == 0) {
    fprintf(stderr, PREFIX "the runner gave no projection matrices (adv_ppProjMatrixBuffers)\n");
    return false;
  }
  if (ctr_geometry_create_rabbitct(r->S_x, r->S_y, r->adv_N,
                                 (const double *const *)r->adv_ppProjMatrixBuffers, r->L, r->R_L,
                                 r->O_L, &M.g) != CTR_OK)
    return fail("invalid geometry");
  ctr_fdk_options o = CTR_FDK_OPTIONS_INIT;
  const char *interp = getenv("CTRECON_INTERP");
  o.interp = !interp || !strcmp(interp, "precise") ? CTR_INTERP_PRECISE
             : !strcmp(interp, "texture")          ? CTR_INTERP_TEXTURE
                                                   : CTR_INTERP_EXACT;
  if (ctr_backprojector_create(M.ctx, M.g, &o, &M.bp) != CTR_OK)
    return fail("cannot create the backprojector");
  M.done_first = M.done_end = -1;
  return reserve(r->adv_numProjBuffers > 0 ? r->adv_numProjBuffers : 1);
}

/* The module's own buffers for the runner: adv_numProjBuffers views in one
 * page-locked block (plain memory without a GPU). On failure the runner
 * allocates its own, as the protocol has it. */
static void provide_buffers(RabbitCtGlobalData *r) {
  const char *who = getenv("CTRECON_RABBITCT_BUFFERS");
  const size_t n = r->adv_numProjBuffers, bytes = view_bytes(r);
  if ((who && !strcmp(who, "runner")) || n == 0 || bytes == 0) return;
  if (bytes > SIZE_MAX / n) return;
  M.own_ptrs = malloc(n * sizeof *M.own_ptrs);
  M.own_block = M.own_ptrs ? ctr_host_alloc(n * bytes) : NULL;
  if (!M.own_block) {
    fprintf(stderr, PREFIX "cannot allocate %zu projection buffers (%s); the runner's are used\n",
            n, ctr_error_detail());
    free(M.own_ptrs);
    M.own_ptrs = NULL;
    return;
  }
  memset(M.own_block, 0, n * bytes);
  for (size_t k = 0; k < n; k++) M.own_ptrs[k] = M.own_block + k * (bytes / sizeof(float));
  r->adv_pProjBuffers = M.own_ptrs;
}

/* Pins the runner's n buffers in place (page-locks them) so that uploads
 * from them run at full speed: one registration for the block when they
 * are contiguous, as the published runner allocates them, else one each;
 * all or none (a buffer registered in part would upload as if pinned).
 * Not when the tuning table's host_transfer asks for staging or the
 * driver's copy (--tune host_transfer=staged): the library's host-transfer
 * layer moves them then. */
static void pin_runner_buffers(const RabbitCtGlobalData *r, unsigned n) {
  float *const *b = r->adv_pProjBuffers;
  const size_t bytes = view_bytes(r), floats = bytes / sizeof(float);
  if (!b || n == 0 || M.given || (M.host_transfer != 0 && M.host_transfer != 2)) return;
  int contiguous = 1;
  for (unsigned k = 0; k < n && contiguous; k++) contiguous = b[k] && b[k] == b[0] + k * floats;
  M.given = calloc(n, sizeof *M.given);
  if (!M.given) return;
  if (contiguous) {
    if (ctr_host_register(b[0], (size_t)n * bytes) == CTR_OK) M.given[M.n_given++] = b[0];
    return;
  }
  for (unsigned k = 0; k < n; k++) {
    if (!b[k] || ctr_host_register(b[k], bytes) != CTR_OK) {
      unpin_runner_buffers();
      return;
    }
    M.given[M.n_given++] = b[k];
  }
}

EXPORT bool RCTPrepareAlgorithm(RabbitCtGlobalData *r) {
  (void)r;
  return make_context(); /* GPU start-up happens here, outside the timed calls */
}

EXPORT bool RCTLoadAlgorithm(RabbitCtGlobalData *r) {
  if (!make_context()) return false;
  if (r->adv_pProjBuffers) pin_runner_buffers(r, r->adv_numProjBuffers); /* given before Load */
  else provide_buffers(r);
  /* The matrices may arrive only with the first backprojection call. */
  return r->adv_ppProjMatrixBuffers ? setup(r) : true;
}

/* The flagged first call of a subset: views p .. p + avail - 1 are in
 * adv_pProjBuffers[0 .. avail - 1]. Runner buffers that appeared after Load
 * are staged (their uploads hidden behind the updates), or pinned in place
 * on the first such call when the tuning table asks for registration and
 * they will be reused for later subsets. */
static bool backproject_subset(const RabbitCtGlobalData *r, int64_t p, int64_t avail) {
  if (!reserve(avail)) return false;
  if (r->adv_pProjBuffers != M.own_ptrs && !M.given && r->adv_numProjBuffers < r->adv_N &&
      M.host_transfer == 2)
    pin_runner_buffers(r, r->adv_numProjBuffers);
  for (int64_t k = 0; k < avail; k++) {
    M.idx[k] = p + k;
    M.images[k] = r->adv_pProjBuffers[k];
    M.weights[k] = (float)ctr_rabbitct_weight(r->adv_ppProjMatrixBuffers[p + k]);
  }
  if (ctr_backprojector_add(M.bp, avail, M.idx, M.images, M.weights) != CTR_OK)
    return fail("backprojection failed");
  M.done_first = p;
  M.done_end = p + avail;
  return true;
}

EXPORT bool RCTAlgorithmBackprojection(RabbitCtGlobalData *r) {
  if (!setup(r)) return false;
  const int64_t p = r->adv_projNumber, avail = r->adv_numAvailProjs, N = r->adv_N;
  if (r->adv_firstProjOfSubset && r->adv_pProjBuffers && avail >= 1 && p + avail <= N &&
      r->I_n == r->adv_pProjBuffers[0])
    return backproject_subset(r, p, avail);
  if (p >= M.done_first && p < M.done_end) return true; /* done by the subset's first call */
  /* One view on its own. */
  if (!r->A_n || !r->I_n || p >= N) {
    fprintf(stderr, PREFIX "view %lld of %lld has no matrix (A_n) or image (I_n)\n", (long long)p,
            (long long)N);
    return false;
  }
  const int64_t view = p;
  const float *img = r->I_n;
  const float w = (float)ctr_rabbitct_weight(r->A_n);
  if (ctr_backprojector_add(M.bp, 1, &view, &img, &w) != CTR_OK)
    return fail("backprojection failed");
  return true;
}

EXPORT bool RCTFinishAlgorithm(RabbitCtGlobalData *r) {
  if (!M.bp) {
    fprintf(stderr, PREFIX "finish before any backprojection\n");
    return false;
  }
  if (!r->f_L) {
    fprintf(stderr, PREFIX "no output volume (f_L is NULL)\n");
    return false;
  }
  const bool ok = ctr_backprojector_read(M.bp, r->f_L) == CTR_OK || fail("cannot read the volume");
  unpin_runner_buffers();
  return ok;
}

EXPORT bool RCTUnloadAlgorithm(RabbitCtGlobalData *r) {
  if (r && M.own_ptrs && r->adv_pProjBuffers == M.own_ptrs) r->adv_pProjBuffers = NULL;
  release();
  return true;
}

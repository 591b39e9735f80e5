/* The backend seam of TOF-PET DIRECT, in the manner of conebeam/engine.h.
 * A backend (CPU, CUDA) is a ctr__pet_backend found by device kind
 * (registry backends.c; the table in cuda/ has no operations in a build
 * without CUDA). A projector (struct ctr_pet_projector, pet.h) holds its
 * context's backend and the state that backend created for it.
 *
 * Memory: arrays are host memory on the CPU; the CUDA backend takes host
 * or GPU memory alike (copied with cudaMemcpyDefault) and returns when its
 * results are in them. Threading: a projector serves one thread at a time
 * (include/ctrecon/pet.h; its state holds scratch buffers and, on the GPU,
 * the views' tables uploaded so far); projectors, of one system or several,
 * may run on different threads at once (the system builds each view's
 * tables under its lock; tests/test_backends.c on the CPU), on one GPU too (the device's
 * constant bank of runs is shared under a lock, pet_cuda.cu;
 * tests/test_gpu_pet.c). fft keeps no state but the system's tables (the
 * system's rule applies). */
#ifndef CTR_PET_BACKEND_H
#define CTR_PET_BACKEND_H

#include "pet/pet.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The data policy's word on the histo-images of a reconstruction (pet_recon.c),
 * for a backend that checks them where it keeps them: bad the count of counts
 * and factors that are NaN, infinite, negative or beyond +-1e+24 (already
 * replaced by 0 in the backend's copy), total the sum of the counts (bad ones
 * as 0) in double, the same bits on every run. Returns an error to stop the
 * reconstruction (strict mode: the message names the data), else CTR_OK with
 * *uniform the start of an image that is all 0 (ctr__pet_uniform_value). */
typedef ctr_status (*ctr__pet_data_check)(void *user, int64_t bad, double total, float *uniform);

typedef struct ctr__pet_backend {
  ctr__backend_head head; /* name, device kind, built (core/internal.h) */
  /* A projector's state for system s (which outlives it) on device ordinal
   * `device` (ignored by the CPU); *out freed by destroy (accepts NULL). */
  ctr_status (*create)(ctr_context *ctx, int device, ctr_pet_system *s, void **out);
  void (*destroy)(void *impl);
  /* ctr_pet_project after its checks: view `view` of the system, forward
   * (image -> histo-image) or back; in and out nx x ny x nz floats. */
  ctr_status (*project)(void *impl, ctr_pet_direction dir, int64_t view, const float *in,
                        float *out);
  /* Optional (NULL: pet_recon.c's host data check and host iterations over
   * `project`): the whole reconstruction of ctr_pet_reconstruct after its
   * argument checks, image in and out (nx x ny x nz floats), the data
   * policy included: the histo-images (host memory, const) are checked
   * where the backend holds its copy, bad values replaced by 0 there, and
   * `check` is called once with the count and the counts' total before any
   * iteration (its error is returned as it is); an image that is all 0
   * starts at the *uniform it gives; *bad gets the count of result voxels
   * stored as 0; t gets the step times. */
  ctr_status (*reconstruct)(void *impl, const ctr_pet_histo *h, const ctr_pet_recon_options *o,
                            ctr__pet_data_check check, void *user, float *image,
                            ctr_pet_recon_timings *t, int64_t *bad);
  /* ctr_pet_project_fft after its checks, on device ordinal `device` of
   * ctx (whose GPU buffer cache lends its buffers; both ignored by the
   * CPU). */
  ctr_status (*fft)(const ctr_context *ctx, int device, ctr_pet_system *s, int64_t view,
                    int64_t pad, const float *in, float *out);
  /* Optional (NULL: nothing to tune, the CPU): ctr_tune_pet after its
   * checks: the projectors' launch shape for s on device ordinal `device`
   * of ctx, tuned (force: timed again) and reported in r. */
  ctr_status (*tune)(ctr_context *ctx, int device, ctr_pet_system *s, int force,
                     ctr_tune_report *r);
} ctr__pet_backend;

/* The backends of this library, defined by each backend's folder. */
extern const ctr__pet_backend ctr__pet_backend_cpu;
extern const ctr__pet_backend ctr__pet_backend_cuda;

/* The backend of a context's resolved device kind (a NULL context: the
 * CPU); CTR_E_UNSUPPORTED when the build lacks it. */
ctr_status ctr__pet_backend_of(const ctr_context *ctx, const ctr__pet_backend **out);

#ifdef __cplusplus
}
#endif
#endif

/* The CPU backend's entry in the backend table (pet/backend.h): the
 * look-up-table projector (pet_project_cpu.c) and the FFTW reference
 * (pet_fft.c); reconstruction by pet_recon.c's host iterations. */
#include "pet/backend.h"

#include <stdlib.h>

/* A projector's state: its system and the padded input (zero halo),
 * allocated on first use. */
typedef struct cpu_state {
  ctr_pet_system *sys;
  float *pad;
} cpu_state;

static ctr_status cpu_create(ctr_context *ctx, int device, ctr_pet_system *s, void **out) {
  (void)ctx;
  (void)device;
  cpu_state *c = ctr__calloc(1, sizeof *c, "PET projector");
  if (!c) return CTR_E_OUT_OF_MEMORY;
  c->sys = s;
  *out = c;
  return CTR_OK;
}

static void cpu_destroy(void *impl) {
  cpu_state *c = impl;
  if (!c) return;
  free(c->pad);
  free(c);
}

static ctr_status cpu_project(void *impl, ctr_pet_direction dir, int64_t view, const float *in,
                              float *out) {
  cpu_state *c = impl;
  const ctr__pet_lut *L = ctr__pet_lut_get(c->sys, view);
  if (!L) return CTR_E_OUT_OF_MEMORY;
  if (!c->pad &&
      !(c->pad = ctr__calloc((size_t)ctr__pet_padded_voxels(c->sys), sizeof(float),
                             "PET padded image")))
    return CTR_E_OUT_OF_MEMORY;
  return ctr__pet_project_cpu(c->sys, L, dir, in, c->pad, out);
}

static ctr_status cpu_fft(const ctr_context *ctx, int device, ctr_pet_system *s, int64_t view,
                          int64_t pad, const float *in, float *out) {
  (void)ctx;
  (void)device;
  return ctr__pet_fft_cpu(s, view, pad, in, out);
}

const ctr__pet_backend ctr__pet_backend_cpu = {
    .head = {"cpu", CTR_DEVICE_CPU, 1},
    .create = cpu_create,
    .destroy = cpu_destroy,
    .project = cpu_project,
    .fft = cpu_fft,
};

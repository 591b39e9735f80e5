/* Paganin's phase-retrieval filter (Paganin et al. 2002): its frequency
 * response and the margin its convolution needs, shared by the CPU and GPU
 * filters (cpu/paganin_cpu.c, cuda/corrections_cuda.cu). */
#include "parbeam/sync.h"

#include <math.h>

#define PI 3.14159265358979323846
/* h c in mm keV: lambda = HC_MM_KEV / E */
#define HC_MM_KEV 1.23984198e-6

/* pi lambda z delta / beta in mm^2 */
static double paganin_a(const ctr_corrections *c) {
  return PI * HC_MM_KEV / c->energy_kev * c->distance_mm * c->paganin_delta_beta;
}

double ctr_paganin_response(const ctr_corrections *c, double pixel_mm, double fx, double fy) {
  if (!c || !(c->paganin_delta_beta > 0) || !(pixel_mm > 0)) return 1.0;
  return 1.0 / (1.0 + paganin_a(c) * (fx * fx + fy * fy) / (pixel_mm * pixel_mm));
}

int64_t ctr_paganin_margin(const ctr_corrections *c, double pixel_mm) {
  if (!c || !(c->paganin_delta_beta > 0) || !(c->energy_kev > 0) || !(c->distance_mm > 0) ||
      !(pixel_mm > 0))
    return 0;
  /* 1 / (1 + L^2 |k|^2), k in radians per mm: the kernel decays as
   * exp(-r / L); 8 L leaves below 3e-4 of it */
  const double L = sqrt(paganin_a(c) / (4.0 * PI * PI));
  const double m = ceil(8.0 * L / pixel_mm);
  return m < 1 ? 1 : m > 1e6 ? 1000000 : (int64_t)m;
}

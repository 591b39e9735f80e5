/* Per-voxel steps of the DIRECT reconstructions, shared by the CPU
 * (pet_recon.c) and CUDA (pet_cuda.cu) backends. */
#ifndef CTR_PET_UPDATE_H
#define CTR_PET_UPDATE_H

#if defined(__CUDACC__)
#define CTR__PET_HD __host__ __device__ static inline
#else
#define CTR__PET_HD static inline
#endif

/* Expected counts below this are treated as none (no data can be explained). */
#define CTR__PET_TINY 1e-12f

/* n h / (n y): the measured-over-expected ratio weighted by the factor n (the
 * forward model is n (A f)); 0 where nothing is expected. */
CTR__PET_HD float ctr__pet_ratio(float h, float n, float ay) {
  float y = n * ay;
  return y > CTR__PET_TINY ? n * h / y : 0.0f;
}

/* EM step f b / s (f unchanged where the sensitivity is 0). */
CTR__PET_HD float ctr__pet_osem(float f, float b, float s) {
  return s > CTR__PET_TINY ? f * b / s : f;
}

/* RAMLA step f + lambda f (b - s_v) / (S / V), scale = lambda V. A step
 * never takes more than 99.9 % of a voxel away, so the image stays positive
 * and no voxel is stuck at zero (a multiplicative update could not revive it). */
CTR__PET_HD float ctr__pet_ramla(float f, float b, float sv, float total, float scale) {
  if (!(total > CTR__PET_TINY)) return f;
  float g = f + scale * f * (b - sv) / total;
  return g > 1e-3f * f ? g : 1e-3f * f;
}

#endif

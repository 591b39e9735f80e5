/* libcufft.so.11 stand-in for the astra-toolbox wheel on a machine that has
 * only CUDA 13's cuFFT (libcufft.so.12). ASTRA calls five functions, with the
 * symbol version "libcufft.so.11"; this forwards them to the installed cuFFT,
 * whose interface for these calls is unchanged. Benchmark use only. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int cufftHandle;
typedef int cufftResult;
typedef int cufftType;
typedef void *cudaStream_t;

static void *resolve(const char *name) {
  static void *lib;
  if (!lib) lib = dlopen("libcufft.so.12", RTLD_NOW | RTLD_LOCAL);
  void *f = lib ? dlsym(lib, name) : NULL;
  if (!f) {
    fprintf(stderr, "cufft11_shim: cannot resolve %s: %s\n", name, dlerror());
    abort();
  }
  return f;
}

cufftResult cufftPlan1d(cufftHandle *plan, int nx, cufftType type, int batch) {
  return ((cufftResult(*)(cufftHandle *, int, cufftType, int))resolve("cufftPlan1d"))(plan, nx, type, batch);
}
cufftResult cufftExecR2C(cufftHandle plan, float *in, void *out) {
  return ((cufftResult(*)(cufftHandle, float *, void *))resolve("cufftExecR2C"))(plan, in, out);
}
cufftResult cufftExecC2R(cufftHandle plan, void *in, float *out) {
  return ((cufftResult(*)(cufftHandle, void *, float *))resolve("cufftExecC2R"))(plan, in, out);
}
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t s) {
  return ((cufftResult(*)(cufftHandle, cudaStream_t))resolve("cufftSetStream"))(plan, s);
}
cufftResult cufftDestroy(cufftHandle plan) {
  return ((cufftResult(*)(cufftHandle))resolve("cufftDestroy"))(plan);
}

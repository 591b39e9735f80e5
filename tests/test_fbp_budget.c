/* FBP's GPU budget on any machine: ctr_fbp_stream_options.gpu_budget and
 * ctr_fbp_options.gpu_budget through their versions (an older caller's
 * struct reads as 0 = detected), and the memory models of the GPU pipeline
 * and of the GPU backprojection of ctr_fbp_backproject
 * (parbeam/fbp_gpu_memory.c, pure functions of sizes): chunks shrink to fit
 * a budget (the backprojection's stay whole when they fit, else multiples of
 * 4 slices), and a given budget too small for chunks of one slice is refused
 * naming the option and what the smallest working set needs. The same
 * slices under a small budget on a GPU: test_gpu_fbp. */
#include "parbeam/parbeam.h"
#include "harness.h"

#include <stddef.h>
#include <string.h>

static void test_versions(void) {
  /* a version-4 caller (before gpu_budget): the member reads as 0 */
  ctr_fbp_stream_options old, cur;
  memset(&old, 0x5A, sizeof old);
  CHECK_OK(ctr_fbp_stream_options_init(&old, 4));
  CHECK_OK(ctr__struct_copy(&ctr__struct_fbp_stream_options, &cur, &old));
  CHECK(cur.version == CTR_FBP_STREAM_OPTIONS_VERSION && cur.gpu_budget == 0);
  CHECK(ctr__struct_size(&ctr__struct_fbp_stream_options, 4) <=
        offsetof(ctr_fbp_stream_options, gpu_budget));
  /* the current version carries it */
  ctr_fbp_stream_options o = CTR_FBP_STREAM_OPTIONS_INIT;
  o.gpu_budget = (uint64_t)3 << 30;
  CHECK_OK(ctr__struct_copy(&ctr__struct_fbp_stream_options, &cur, &o));
  CHECK(cur.gpu_budget == (uint64_t)3 << 30);
  ctr_fbp_options f3, f;
  memset(&f3, 0x5A, sizeof f3);
  CHECK_OK(ctr_fbp_options_init(&f3, 3));
  CHECK_OK(ctr__struct_copy(&ctr__struct_fbp_options, &f, &f3));
  CHECK(f.gpu_budget == 0 && f.version == CTR_FBP_OPTIONS_VERSION);
  ctr_fbp_options f4 = CTR_FBP_OPTIONS_INIT;
  f4.gpu_budget = 12345;
  CHECK_OK(ctr__struct_copy(&ctr__struct_fbp_options, &f, &f4));
  CHECK(f.gpu_budget == 12345);
}

static void test_model(void) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = 2048;
  p.nangles = 1500;
  p.nx = p.ny = 2048;
  const size_t u16 = 2;
  const uint64_t b1 = ctr__fbp_gpu_bytes(&p, u16, 64, 1), b5 = ctr__fbp_gpu_bytes(&p, u16, 64, 5);
  const uint64_t b16 = ctr__fbp_gpu_bytes(&p, u16, 64, CTR__FBP_GPU_CHUNK);
  CHECK(b1 < b5 && b5 < b16);
  /* two buffer sets of the chunk's slices at least: filtered sinograms and slices */
  CHECK(b16 > 2u * 16u * 4u * (2048u * 1500u + 2048u * 2048u));
  CHECK(ctr__fbp_gpu_bytes(&p, 0, 0, 5) < b5); /* sinograms in place, no flat/dark */
  int64_t S = 0;
  CHECK_OK(ctr__fbp_gpu_chunk(&p, u16, 64, 64, b16, "ctr_fbp_stream_options.gpu_budget", &S));
  CHECK(S == CTR__FBP_GPU_CHUNK);
  CHECK_OK(ctr__fbp_gpu_chunk(&p, u16, 64, 3, b16, "ctr_fbp_stream_options.gpu_budget", &S));
  CHECK(S == 3); /* never more than the slices */
  CHECK_OK(ctr__fbp_gpu_chunk(&p, u16, 64, 64, b5, "ctr_fbp_stream_options.gpu_budget", &S));
  CHECK(S == 5);
  CHECK_OK(ctr__fbp_gpu_chunk(&p, u16, 64, 64, b5 - 1, "ctr_fbp_stream_options.gpu_budget", &S));
  CHECK(S == 4);
  /* too small for chunks of one slice: refused, naming the option and the need */
  CHECK_FAILS(ctr__fbp_gpu_chunk(&p, u16, 64, 64, b1 - 1, "ctr_fbp_stream_options.gpu_budget", &S),
              CTR_E_DEVICE_OUT_OF_MEMORY, "ctr_fbp_stream_options.gpu_budget");
  CHECK(strstr(ctr_error_detail(), "smallest working set") != NULL);
  CHECK(!strcmp(ctr_error_get_field(), "ctr_fbp_stream_options.gpu_budget")); /* the CLI's --gpu-budget */
  CHECK(strstr(ctr_error_detail(), "2048 bins x 1500 angles") != NULL);
  /* a detected budget (no name) is never refused: the allocation decides */
  CHECK_OK(ctr__fbp_gpu_chunk(&p, u16, 64, 64, 1000, NULL, &S));
  CHECK(S == 1);
}

/* ctr_fbp_backproject's plan: every slice in one pass when they fit (the
 * work of a run without a budget), else the most that fit in a multiple of
 * 4 (the 2- and 4-slice kernels' launches as in one pass), refused naming
 * ctr_fbp_options.gpu_budget below one slice. */
static void test_backproject_model(void) {
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = 2048;
  p.nangles = 1500;
  p.nx = p.ny = 2048;
  const char *field = "ctr_fbp_options.gpu_budget";
  const uint64_t b1 = ctr__fbp_bp_gpu_bytes(&p, 1), b2 = ctr__fbp_bp_gpu_bytes(&p, 2);
  const uint64_t b100 = ctr__fbp_bp_gpu_bytes(&p, 100);
  /* the chunk's sinograms and slices at least, and linear in the slices */
  CHECK(b1 > 4u * (2048u * 1500u + 2048u * 2048u));
  CHECK(b100 - b1 == 99u * (b2 - b1));
  CHECK(b2 - b1 == 4u * (2048u * 1500u + 2048u * 2048u));
  int64_t S = 0;
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 100, b100, field, &S));
  CHECK(S == 100); /* all at once: no chunking where it fits */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 100, UINT64_MAX, NULL, &S));
  CHECK(S == 100);
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 99, b100, field, &S));
  CHECK(S == 99); /* never more than the slices, and not rounded when whole */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 100, b100 - 1, field, &S));
  CHECK(S == 96); /* 99 fit: a multiple of CTR__FBP_BP_ALIGN */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 1000, ctr__fbp_bp_gpu_bytes(&p, 37), field, &S));
  CHECK(S == 36 && S % CTR__FBP_BP_ALIGN == 0);
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 1000, ctr__fbp_bp_gpu_bytes(&p, 3), field, &S));
  CHECK(S == 3); /* below the alignment: as many as fit */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 1000, b1, field, &S));
  CHECK(S == 1);
  /* for every budget between one slice and all: the most that fit, aligned */
  for (int64_t k = 1; k <= 40; k++) {
    const uint64_t budget = ctr__fbp_bp_gpu_bytes(&p, k) + (uint64_t)(k % 3);
    CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 41, budget, field, &S));
    CHECK_MSG(ctr__fbp_bp_gpu_bytes(&p, S) <= budget &&
                  S == (k >= CTR__FBP_BP_ALIGN ? k - k % CTR__FBP_BP_ALIGN : k),
              "budget for %lld slices: chunks of %lld", (long long)k, (long long)S);
  }
  /* too small for one slice: refused, naming the option and the need */
  CHECK_FAILS(ctr__fbp_bp_gpu_chunk(&p, 100, b1 - 1, field, &S), CTR_E_DEVICE_OUT_OF_MEMORY,
              field);
  CHECK(strstr(ctr_error_detail(), "GPU backprojection") != NULL);
  CHECK(strstr(ctr_error_detail(), "smallest working set") != NULL);
  CHECK(!strcmp(ctr_error_get_field(), field)); /* the CLI's --gpu-budget */
  /* a detected budget is never refused: the allocation decides */
  CHECK_OK(ctr__fbp_bp_gpu_chunk(&p, 100, 1000, NULL, &S));
  CHECK(S == 1);
  /* the texture array holds CTR__FBP_TEX_LAYERS angles at most: beyond,
   * an angle costs its sinogram row and tables only */
  ctr_parallel_params q1 = p, q2 = p;
  q1.nangles = 2 * CTR__FBP_TEX_LAYERS;
  q2.nangles = 4 * CTR__FBP_TEX_LAYERS;
  CHECK(ctr__fbp_bp_gpu_bytes(&q2, 1) - ctr__fbp_bp_gpu_bytes(&q1, 1) ==
        (uint64_t)(2 * CTR__FBP_TEX_LAYERS) * (4u * 2048u + 28u));
}

int main(void) {
  test_versions();
  test_model();
  test_backproject_model();
  return th_finish("test_fbp_budget");
}

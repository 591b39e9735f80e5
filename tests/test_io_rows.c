/* ctr_stack_read_rows: a block of rows of every image equals the same rows
 * of whole-image reads, for raw (direct pread of the rows), NRRD, a
 * multi-page TIFF and a TIFF stack (whole images read and cut), float32 and
 * uint16 files read as either dtype; argument errors. */
#include "harness.h"
#include "scratch_dir.h"

#include <stdlib.h>

static void check_file(const char *path, ctr_file_format fmt, const ctr_stack_info *info) {
  ctr_stack_reader *r = NULL;
  CHECK_OK(ctr_stack_open(path, fmt, fmt == CTR_FORMAT_RAW ? info : NULL, 0, &r));
  if (!r) return;
  const int64_t w = info->width, h = info->height, n = info->count;
  float *whole = malloc(sizeof(float) * (size_t)(w * h * n));
  float *rows = malloc(sizeof(float) * (size_t)(w * h * n));
  uint16_t *rows16 = malloc(sizeof(uint16_t) * (size_t)(w * h * n));
  uint16_t *whole16 = malloc(sizeof(uint16_t) * (size_t)(w * h * n));
  CHECK_OK(ctr_stack_read(r, 0, n, CTR_DTYPE_FLOAT32, whole));
  CHECK_OK(ctr_stack_read(r, 0, n, CTR_DTYPE_UINT16, whole16));
  const int64_t blocks[][2] = {{0, 1}, {3, 4}, {0, h}, {h - 2, 2}};
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
    const int64_t r0 = blocks[b][0], nr = blocks[b][1];
    CHECK_OK(ctr_stack_read_rows(r, 1, n - 1, r0, nr, CTR_DTYPE_FLOAT32, rows));
    CHECK_OK(ctr_stack_read_rows(r, 1, n - 1, r0, nr, CTR_DTYPE_UINT16, rows16));
    int same = 1, same16 = 1;
    for (int64_t i = 0; i < n - 1; i++)
      for (int64_t y = 0; y < nr; y++) {
        const int64_t src = ((i + 1) * h + r0 + y) * w, dst = (i * nr + y) * w;
        same &= !memcmp(rows + dst, whole + src, sizeof(float) * (size_t)w);
        same16 &= !memcmp(rows16 + dst, whole16 + src, sizeof(uint16_t) * (size_t)w);
      }
    CHECK_MSG(same && same16, "'%s' rows [%lld, %lld): differ from whole-image reads", path,
              (long long)r0, (long long)(r0 + nr));
  }
  CHECK(ctr_stack_read_rows(r, 0, 1, h - 1, 2, CTR_DTYPE_FLOAT32, rows) == CTR_E_INVALID_ARGUMENT);
  CHECK(strstr(ctr_error_detail(), "rows") != NULL);
  CHECK(ctr_stack_read_rows(r, n, 1, 0, 1, CTR_DTYPE_FLOAT32, rows) == CTR_E_INVALID_ARGUMENT);
  CHECK(ctr_stack_read_rows(r, 0, 1, 0, 0, CTR_DTYPE_FLOAT32, rows) == CTR_E_INVALID_ARGUMENT);
  ctr_stack_close(r);
  free(whole);
  free(rows);
  free(rows16);
  free(whole16);
}

int main(void) {
  if (!scratch_open("io_rows")) return 1;
  const int64_t w = 37, h = 11, n = 5;
  float *f = malloc(sizeof(float) * (size_t)(w * h * n));
  for (int64_t i = 0; i < w * h * n; i++) f[i] = (float)th_uniform(0, 60000);
  for (int dt = 0; dt < 2; dt++) {
    ctr_stack_info info = {CTR_STACK_INFO_VERSION, w, h, n, dt ? CTR_DTYPE_UINT16 : CTR_DTYPE_FLOAT32, {1, 1, 1}, {0, 0, 0}};
    const char *names[4] = {"a.raw", "a.nrrd", "a.tif", "st/a_%02d.tif"};
    const ctr_file_format fmts[4] = {CTR_FORMAT_RAW, CTR_FORMAT_NRRD, CTR_FORMAT_TIFF,
                                     CTR_FORMAT_TIFF_STACK};
    mkdir(P("st"), 0777);
    for (int k = 0; k < 4; k++) {
      CHECK_OK(ctr_stack_save(P(names[k]), fmts[k], &info, CTR_DTYPE_FLOAT32, f,
                              dt)); /* uint16 replaces */
      check_file(P(names[k]), fmts[k], &info);
    }
  }
  CHECK(ctr_stack_read_rows(NULL, 0, 1, 0, 1, CTR_DTYPE_FLOAT32, f) == CTR_E_INVALID_ARGUMENT);
  free(f);
  scratch_close();
  return th_finish("test_io_rows");
}

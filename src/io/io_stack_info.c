/* Stack descriptions (ctr_stack_info), shared by the dispatcher (io_stack.c)
 * and every format backend: the argument check, the bytes of one image and a
 * one-line description for messages. Calls nothing above it in src/io. */
#include "io/io_internal.h"

#include <stdio.h>

size_t ctr__image_bytes(const ctr_stack_info *info) {
  return (size_t)info->width * (size_t)info->height * ctr_dtype_size(info->dtype);
}

const char *ctr__stack_describe(const ctr_stack_info *info, char *buf, size_t n) {
  snprintf(buf, n, "%lld x %lld x %lld %s", (long long)info->width, (long long)info->height,
           (long long)info->count, ctr_dtype_name(info->dtype));
  return buf;
}

ctr_status ctr__stack_info_check(const ctr_stack_info *info, const char *what,
                                 ctr_status status) {
  if (info->width <= 0 || info->height <= 0 || info->count <= 0)
    CTR_FAIL(status, "%s: width, height and count must be > 0, got %lld x %lld x %lld", what,
             (long long)info->width, (long long)info->height, (long long)info->count);
  int64_t es = (int64_t)ctr_dtype_size(info->dtype);
  if (!es)
    CTR_FAIL(status, "%s: unknown dtype %d: expected float32 or uint16", what, (int)info->dtype);
  /* Byte offsets are int64_t and buffers size_t: both must hold the total. */
  int64_t limit = (uint64_t)INT64_MAX > (uint64_t)SIZE_MAX ? (int64_t)SIZE_MAX : INT64_MAX;
  if (info->width > limit / info->height || info->width * info->height > limit / info->count ||
      info->width * info->height * info->count > limit / es)
    CTR_FAIL(status, "%s: %lld x %lld x %lld %s does not fit in memory addresses", what,
             (long long)info->width, (long long)info->height, (long long)info->count,
             ctr_dtype_name(info->dtype));
  return CTR_OK;
}

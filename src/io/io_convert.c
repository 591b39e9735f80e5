/* Element conversions between the stored and the requested dtype, and byte
 * order swapping. */
#include "io/io_internal.h"

#include <string.h>

uint16_t ctr__float_to_u16(float v) {
  /* !(v > 0) also catches NaN. The rounding is done in double because
   * v + 0.5f rounds 0.49999997f up to 1 in single precision. */
  if (!(v > 0.0f)) return 0;
  if (v >= 65534.5f) return 65535;
  return (uint16_t)((double)v + 0.5);
}

void ctr__convert(void *dst, ctr_dtype dst_type, const void *src, ctr_dtype src_type, size_t n) {
  if (dst_type == src_type) {
    memcpy(dst, src, n * ctr_dtype_size(src_type));
  } else if (dst_type == CTR_DTYPE_FLOAT32) {
    const uint16_t *s = src;
    float *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = (float)s[i];
  } else {
    const float *s = src;
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = ctr__float_to_u16(s[i]);
  }
}

void ctr__byteswap(void *buf, size_t elem, size_t n) {
  unsigned char *p = buf;
  for (size_t i = 0; i < n; i++, p += elem)
    for (size_t a = 0, b = elem - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

int ctr__host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

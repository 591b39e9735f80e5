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

uint16_t ctr__float_to_half(float v) {
  uint32_t x;
  memcpy(&x, &v, sizeof x);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) /* infinity, NaN (a quiet NaN keeps its top payload bits) */
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds beyond 65504 */
  if (ax < 0x38800000u) {                                    /* below 2^-14: subnormal or 0 */
    if (ax < 0x33000000u) return sign;                       /* below half of 2^-24 */
    const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e; /* 14 .. 24: m >> shift is in units of 2^-24 */
    uint32_t h = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  /* normal: rebias the exponent, round the mantissa to 10 bits, nearest even */
  uint32_t h = ((ax >> 13) - (112u << 10));
  const uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

float ctr__half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0x1fu) {
    x = sign | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    x = sign | ((e + 112u) << 23) | (m << 13);
  } else if (m == 0) {
    x = sign;
  } else { /* subnormal: m * 2^-24, exact in float */
    const float f = (float)m * 5.9604644775390625e-8f;
    memcpy(&x, &f, sizeof x);
    x |= sign;
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* One element as float. */
static inline float load_float(const void *src, ctr_dtype t, size_t i) {
  switch (t) {
    case CTR_DTYPE_UINT16: return (float)((const uint16_t *)src)[i];
    case CTR_DTYPE_FLOAT16: return ctr__half_to_float(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
  }
}

void ctr__convert(void *dst, ctr_dtype dst_type, const void *src, ctr_dtype src_type, size_t n) {
  if (dst_type == src_type) {
    memcpy(dst, src, n * ctr_dtype_size(src_type));
  } else if (dst_type == CTR_DTYPE_FLOAT32) {
    float *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = load_float(src, src_type, i);
  } else if (dst_type == CTR_DTYPE_UINT16) {
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = ctr__float_to_u16(load_float(src, src_type, i));
  } else {
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = ctr__float_to_half(load_float(src, src_type, i));
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

/* Order statistics: the k-th smallest of an array by selection. */
#include "core/internal.h"

/* Partition about the median of three, in linear time on average; the
 * value is the one a sort would put at k (-0 and +0 compare equal: either
 * may come back for a zero). */
float ctr__select_kth(float *s, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const float a = s[lo], b = s[mid], c = s[hi];
    const float pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (s[i] < pivot) i++;
      while (s[j] > pivot) j--;
      if (i <= j) {
        const float t = s[i];
        s[i++] = s[j];
        s[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return s[k]; /* between the parts: equal to the pivot */
  }
  return s[k];
}

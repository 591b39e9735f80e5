/* RabbitCT data files (docs/rabbitct.md): ctr_rabbitct_open (the layout
 * detection from header and size), then the first and last view and the
 * smallest reference volume, as `ctrecon rabbitct` reads them. */
#include "fuzz_util.h"

#include <ctrecon.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "data.rctd");
  fz_write_file(path, data, size);
  ctr_rabbitct *r = NULL;
  if (ctr_rabbitct_open(path, &r) != CTR_OK) return 0;
  const ctr_rabbitct_header *h = ctr_rabbitct_get_header(r);
  /* open checked that the file holds every view, so an image is at most
   * the input's size */
  float *img = malloc((size_t)(h->width * h->height) * sizeof(float));
  double m[12];
  if (img) {
    (void)ctr_rabbitct_read_view(r, 0, m, img);
    (void)ctr_rabbitct_read_view(r, h->nviews - 1, m, img);
    free(img);
  }
  if (h->nref > 0) {
    const int64_t L = h->ref_sizes[0];
    uint16_t *ref = malloc((size_t)(L * L * L) * sizeof(uint16_t));
    if (ref) {
      (void)ctr_rabbitct_read_reference(r, L, ref);
      free(ref);
    }
  }
  ctr_rabbitct_close(r);
  return 0;
}

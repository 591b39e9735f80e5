/* The journal of a streamed run (src/conebeam/journal.c):
 * ctr__journal_resume, as `ctrecon fdk --resume` opens "<out>.partial.journal".
 * The run's fingerprint is fixed; the seeds carry it. */
#include "fuzz_util.h"

#include "io/journal.h"

#define FZ_FINGERPRINT 0x0123456789abcdefull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "vol.raw.partial.journal");
  fz_write_file(path, data, size);
  ctr__journal j;
  if (ctr__journal_resume(&j, path, FZ_FINGERPRINT, "ctr_stream_options.resume") == CTR_OK) {
    for (int64_t i = 0; i < j.nslabs && i < 4; i++) (void)j.done[i];
    /* marking appends and syncs: one input in 16 (by size, as a replay) */
    if (size % 16 == 0) {
      const ctr__slab_record rec = {0x12345678u, -1.0f, 2.0f, 0, 0};
      (void)ctr__journal_mark(&j, 0, 0, j.slab_slices, &rec);
    }
  }
  ctr__journal_close(&j, 0);
  return 0;
}

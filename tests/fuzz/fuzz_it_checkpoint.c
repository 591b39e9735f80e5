/* Checkpoints of iterative runs (src/iterative/checkpoint.c over
 * src/stream/checkpoint.c), as `ctrecon iterate --resume` reads
 * OUT.checkpoint: the run's start (the lock file beside it, as a run holds
 * it, and the resume rules), ctr__it_checkpoint_read into a
 * state of two vectors against a fixed fingerprint (fuzz_checkpoint.h; the
 * seeds carry it), the lock released. A checkpoint that reads back must hold
 * a history within its iterations, and one input in 16 (by size, as a
 * replay) is written again and must read back the same. */
#include "fuzz_util.h"

#include "fuzz_checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctr__it_state s;
  ctr__vec v[FZ_CK_NVEC];
  ctr_projector *p = fz_ck_projector(&s, v);
  if (!p) __builtin_trap();
  const ctr__it_fingerprint fp = fz_ck_fingerprint();
  const char *path = fz_path(0, "rec.raw.checkpoint");
  fz_write_file(path, data, size);
  int lock = -1;
  /* nobody else holds it, and the file is there for the resume */
  if (ctr__it_checkpoint_begin(path, 1, &lock) != CTR_OK) __builtin_trap();
  if (ctr__it_checkpoint_read(p, path, &fp, &s) == CTR_OK) {
    if (s.iteration < 0 || s.nhist < 0 || s.nhist > s.iteration || (s.nhist && !s.hist))
      __builtin_trap();
    if (size % 16 == 0) {
      const int64_t it = s.iteration, nh = s.nhist;
      const char *again = fz_path(0, "again.checkpoint");
      if (ctr__it_checkpoint_write(p, again, &fp, &s) != CTR_OK ||
          ctr__it_checkpoint_read(p, again, &fp, &s) != CTR_OK || s.iteration != it ||
          s.nhist != nh)
        __builtin_trap();
      unlink(again);
    }
  }
  ctr__it_checkpoint_end(path, lock);
  free(s.hist);
  for (int i = 0; i < FZ_CK_NVEC; i++) ctr__vec_free(p, &v[i]);
  return 0;
}

/* The journals of streamed runs (src/stream/journal.c): ctr__journal_resume, as
 * `ctrecon fdk --resume` opens "<out>.partial.journal"; and a distributed
 * run's readers, as its rank 0 reads them on a resume (src/distributed/
 * dist_output.c): the kind, the master journal (or a one-process journal)
 * and the ranks' journals it names, here the same bytes, and the unit.
 * The run's fingerprint is fixed; the seeds carry it. A resume takes the
 * run's lock on the journal (fcntl; released when the journal is closed). */
#include "fuzz_util.h"

#include "stream/journal.h"

#define FZ_FINGERPRINT 0x0123456789abcdefull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fz_path(0, "vol.raw.partial.journal");
  fz_write_file(path, data, size);
  ctr__journal j;
  if (ctr__journal_resume(&j, path, FZ_FINGERPRINT, "ctr_fdk_stream_options.resume") == CTR_OK) {
    for (int64_t i = 0; i < j.nslabs && i < 4; i++) (void)j.done[i];
    /* what a resume takes over as its split and worker count */
    if (j.split < 0 || j.split > 2 || j.workers < 1 || j.workers > CTR_MAX_WORKERS) __builtin_trap();
    /* marking appends and syncs: one input in 16 (by size, as a replay) */
    if (size % 16 == 0) {
      const ctr__slab_record rec = {0x12345678u, -1.0f, 2.0f, 0, 0};
      (void)ctr__journal_mark(&j, 0, 0, j.slab_slices, &rec);
    }
  }
  ctr__journal_close(&j, 0);

  (void)ctr__journal_kind(path);
  (void)ctr__journal_unit(path);
  ctr__journal_ranges r;
  memset(&r, 0, sizeof r);
  if (ctr__journal_read_ranges(path, FZ_FINGERPRINT, "--resume", &r) == CTR_OK) {
    /* the bounds every caller relies on */
    if (r.master && (r.ranks < 1 || r.generation < 1 || r.previous >= r.generation)) __builtin_trap();
    for (int64_t i = 0; i < r.n; i++)
      if (r.r[i].z0 < 0 || r.r[i].nz < 1 || r.r[i].z0 + r.r[i].nz < r.r[i].z0) __builtin_trap();
    for (int64_t k = 0; r.master && k < r.ranks && k < 2; k++) {
      char *rank = ctr__journal_rank_path(path, r.generation, (int)k);
      if (!rank) break;
      fz_write_file(rank, data, size);
      (void)ctr__journal_read_rank(rank, FZ_FINGERPRINT, "--resume", &r);
      unlink(rank);
      free(rank);
    }
  }
  ctr__journal_ranges_free(&r);
  return 0;
}

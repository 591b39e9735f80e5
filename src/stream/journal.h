/* The journal of a streamed run (FDK, FBP), "<out>.partial.journal": a fingerprint of
 * everything that determines the result, the decomposition, and one line per
 * subvolume whose slices are written and flushed, with the CRC-32 of its
 * bytes (a resumed run recomputes a subvolume whose bytes changed on disk)
 * and the values a summary of the whole output needs. Lines are appended
 * and synced one at a time, so a crash leaves a valid prefix. */
#ifndef CTR_JOURNAL_H
#define CTR_JOURNAL_H

#include "core/internal.h"

/* What a journal line records of a finished subvolume. */
typedef struct ctr__slab_record {
  uint32_t crc;         /* CRC-32 (zlib) of its bytes as written: the file's dtype, host
                           byte order, slice after slice */
  float min, max;       /* value range of the run's subvolumes up to this one (a union of
                           these over the journal is the range of the subvolumes in it) */
  int64_t below, above; /* uint16 output: its voxels clamped to 0 / 65535 */
} ctr__slab_record;

/* Widens rec's range by n values. Comparisons, not fminf/fmaxf: the same
 * result (a NaN never wins either way), but the loop vectorises, several
 * times faster on the thread that hands slices to the writer. */
static inline void ctr__slab_range(ctr__slab_record *rec, const float *v, int64_t n) {
  float lo = rec->min, hi = rec->max;
  for (int64_t i = 0; i < n; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  rec->min = lo;
  rec->max = hi;
}

typedef struct ctr__journal {
  char *path;
  int fd;
  uint64_t fingerprint;
  int64_t slab_slices, views_per_batch;
  int store, pair;
  int64_t nslabs;
  int split, workers; /* FDK: a projection split's workers (its sums depend on them) */
  unsigned char *done; /* per subvolume */
  ctr__slab_record *rec; /* per subvolume, valid where done */
} ctr__journal;

/* The decomposition a journal records (a resumed run repeats it): the
 * slices of a subvolume (a slab, a band), and three numbers the executor
 * interprets (FDK: views per subset, the filtered projections' store, the
 * pair flag; FBP: the projections used, 0, 0), and FDK's split and workers
 * (a journal without them, older or not FDK's: 0 and 1, the volume split). */
typedef struct ctr__journal_layout {
  int64_t slab_slices, views_per_batch;
  int store, pair;
  int64_t nslabs;
  int split, workers;
} ctr__journal_layout;

/* Creates (truncating) a journal for a fresh run. */
ctr_status ctr__journal_create(ctr__journal *j, const char *path, uint64_t fingerprint,
                               const ctr__journal_layout *plan);
/* Opens an existing journal for --resume: checks the fingerprint (a
 * different run is CTR_E_INVALID_ARGUMENT naming what to do) and reads the
 * plan and the finished subvolumes. `resume` names the caller's resume
 * option in messages ("ctr_fdk_stream_options.resume"). */
ctr_status ctr__journal_resume(ctr__journal *j, const char *path, uint64_t fingerprint,
                               const char *resume);
/* Records subvolume `index` [z0, z0 + nz) as complete (appended, synced). */
ctr_status ctr__journal_mark(ctr__journal *j, int64_t index, int64_t z0, int64_t nz,
                             const ctr__slab_record *rec);
/* A resumed run trusts a journalled slab (slab s: slices [s x slab_slices,
 * + slab_slices) of nz) only if the partial output w still holds its bytes:
 * each one's CRC-32, read back `chunk` slices of slice_bytes at a time, is
 * compared with the journal's. A slab that changed on disk (or cannot be read
 * back) is marked not done and forgotten by w, with a warning through ctx's
 * log naming `what` ("subvolume", "band") and its slices (numbered from z0).
 * What the kept ones recorded goes into *kept (range and clamped values
 * joined), their count into *nkept and their slices into *kept_slices. */
ctr_status ctr__journal_verify(const ctr_context *ctx, ctr__journal *j, ctr_stack_writer *w,
                               const char *out, const char *what, int64_t slab_slices, int64_t nz,
                               int64_t z0, size_t slice_bytes, int64_t chunk,
                               ctr__slab_record *kept, int64_t *nkept, int64_t *kept_slices);
/* The end of a streamed run's output: w (when still open: the run failed)
 * is kept for a resume (ctr__stack_suspend) if the format is resumable and a
 * slab of it is journalled, else removed; the journal (when open) is closed
 * and removed unless a slab is journalled. Returns 1 if one is. */
int ctr__journal_end_output(ctr__journal *j, int have_journal, ctr_stack_writer *w, int resumable);
/* Closes; with `remove`, deletes the file. */
void ctr__journal_close(ctr__journal *j, int remove);

/* ---- Journals of distributed runs (docs/distributed.md, "Resume") ---------
 * A distributed run keeps "<out>.partial.journal" as its master journal
 * (written whole by rank 0, replaced by rename): the fingerprint, its
 * generation (one per run: fresh or resumed) and rank count, the previous
 * generation's, the unit of its ranges (a band), and the slabs verified when the run started, each a slice
 * range with its CRC-32 as in a "slab" line. Each rank r appends the slabs
 * it finishes to its own journal "<master>.G.r" (the format above, index
 * being the piece's subvolume or the band). A resume, with any rank count,
 * joins the master's and the last generation's ranks' ranges. */
typedef struct ctr__journal_range {
  int64_t index, z0, nz; /* slices [z0, z0 + nz) of the output */
  ctr__slab_record rec;
} ctr__journal_range;

typedef struct ctr__journal_ranges {
  ctr__journal_range *r;
  int64_t n, cap;
  int64_t generation, ranks, previous, previous_ranks;
  int64_t unit; /* the slices of the unit the run's ranges are made of (FBP: a band; 0: none) */
  int master;   /* read from a master journal (0: a one-process run's journal) */
} ctr__journal_ranges;

/* What "path" is: 0 none, 1 a one-process journal, 2 a distributed run's
 * master journal, 3 something else. */
int ctr__journal_kind(const char *path);
/* Reads a master journal, or a one-process run's journal (as generation 0
 * of one rank), appending its slab lines to out; the fingerprint must be
 * `fingerprint` (CTR_E_INVALID_ARGUMENT naming `resume` otherwise), a
 * damaged one is CTR_E_FORMAT. */
ctr_status ctr__journal_read_ranges(const char *path, uint64_t fingerprint, const char *resume,
                                    ctr__journal_ranges *out);
/* Appends the slab lines of rank journal `path` (a missing or cut-short one
 * holds none). */
ctr_status ctr__journal_read_rank(const char *path, uint64_t fingerprint, const char *resume,
                                  ctr__journal_ranges *out);
/* Writes j (generation, ranks, previous, ranges) as the master journal
 * `path`: a temporary, synced, renamed onto it. */
ctr_status ctr__journal_write_master(const char *path, uint64_t fingerprint,
                                     const ctr__journal_ranges *j);
/* The unit a master journal records, or the subvolume (band) slices of a
 * one-process run's journal; 0 when there is none. */
int64_t ctr__journal_unit(const char *path);
/* "<master>.G.r" (malloc'd). */
char *ctr__journal_rank_path(const char *master, int64_t generation, int rank);
void ctr__journal_ranges_free(ctr__journal_ranges *j);

/* CRC-32 (zlib's) of n bytes, chained from crc (start with 0). */
uint32_t ctr__crc32(uint32_t crc, const void *data, size_t n);
/* The CRC-32 of two byte runs one after the other, from theirs (crc2 over
 * len2 bytes). */
uint32_t ctr__crc32_combine(uint32_t crc1, uint32_t crc2, int64_t len2);

/* FNV-1a over bytes, chained from h (start with CTR__FNV_SEED). */
#define CTR__FNV_SEED 1469598103934665603ull
uint64_t ctr__fnv1a(uint64_t h, const void *data, size_t n);

#endif

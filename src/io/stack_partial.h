/* Resumable, crash-safe stack output for the out-of-core executor: a writer
 * whose files have fixed "<name>.partial" names beside their targets, so that
 * an interrupted run can reopen them and write only the missing images.
 * Also the I/O module's test hooks. Not installed. */
#ifndef CTR_STACK_PARTIAL_H
#define CTR_STACK_PARTIAL_H

#include "ctrecon.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raw and NRRD data go through O_DIRECT (bypassing the page cache) when the
 * file offset, the byte count and the buffer address are all multiples of
 * this; allocate slab buffers with posix_memalign(&p, CTR__IO_ALIGN, n) to
 * benefit. ctr_stack_reader_set_direct_io / ctr_stack_writer_set_direct_io
 * turn direct I/O off per reader or writer. */
#define CTR__IO_ALIGN 4096

/* Creates a writer whose data go to fixed names beside the target, so an
 * interrupted run can be resumed:
 *  raw / attached NRRD (.nrrd): "<path>.partial";
 *  detached NRRD (.nhdr): "<path>.partial" (header) and "<datafile>.partial"
 *  (the .raw);
 *  TIFF stack: each image "<file>.partial" (created when the image is
 *  written).
 * A format that cannot be resumed (multi-page TIFF, HDF5) is CTR_E_UNSUPPORTED
 * with a detail naming those that can (ctr__format_list).
 * resume == 0: existing partial files are replaced (truncate / recreate).
 * resume == 1: the partial files are opened without truncation; a missing one
 * is CTR_E_IO naming it and saying the run cannot be resumed; images i with
 * done[i] != 0 (done has info->count flags; NULL = none) count as written
 * (TIFF stack: their "<file>.partial" must exist, else CTR_E_IO naming it).
 * A partial file that cannot belong to this stack (another NRRD header,
 * longer than the stack, shorter than its images marked done, a TIFF of
 * another size) is CTR_E_SIZE_MISMATCH naming it. A failed resume leaves the
 * partial files as they were.
 * ctr_stack_write / ctr_stack_commit / ctr_stack_abort work as for
 * ctr_stack_create: commit fsyncs, renames the partial names onto the targets
 * (data before header) and fsyncs the directory; abort removes the partial
 * files. The commit keeps an existing target (its refusal is ctr_stack_create's)
 * unless ctr__stack_set_overwrite said otherwise; whether one exists before
 * the run is the caller's to check (ctr_stack_check_output). An image
 * rewritten after a failed write is undefined until written again: clear its
 * done flag first. */
ctr_status ctr__stack_create_partial(const char *path, ctr_file_format fmt,
                                     const ctr_stack_info *info, int resume,
                                     const unsigned char *done, ctr_stack_writer **out);
/* Whether w's commit may replace existing files of its output (a writer
 * starts with ctr_stack_create's overwrite, a partial writer with 0): the
 * caller's overwrite option, given before the commit. Accepts NULL. */
void ctr__stack_set_overwrite(ctr_stack_writer *w, int on);
/* The sharding of an OME-Zarr writer's output, as ctr_tuning.zarr_shard:
 * shards of n chunks a side (n >= 1), -1 none, 0 the default (shards of 8
 * chunks a side on a level of more than 512 chunks). Before the writer's
 * first write or read back (a resumed writer finds the complete rows of
 * this layout); no effect on other formats. Accepts NULL. */
void ctr__stack_set_zarr_shard(ctr_stack_writer *w, int n);
/* Makes every image written so far durable (fdatasync of the data file(s);
 * the first flush of a resumable writer also syncs its partial files' names
 * into their directory); CTR_E_IO naming the file on failure. Works on any
 * writer, also after a failed write. */
ctr_status ctr__stack_flush(ctr_stack_writer *w);
/* Closes and frees w, keeping its partial files for a later resume (images
 * not flushed may be lost in a crash). Accepts NULL. A writer from
 * ctr_stack_create has nothing to resume: it is aborted. */
void ctr__stack_suspend(ctr_stack_writer *w);
/* Reads back images [first, first + n) of a resumable writer as they are in
 * its partial files (the file's dtype, host byte order): what a resumed run
 * checks against the journal's checksums. CTR_E_IO / CTR_E_SIZE_MISMATCH
 * naming the file. */
ctr_status ctr__stack_read_back(ctr_stack_writer *w, int64_t first, int64_t n, void *buf);
/* Marks images [first, first + n) as not written: they must be written again
 * before the commit (a resumed subvolume whose checksum failed). */
void ctr__stack_forget(ctr_stack_writer *w, int64_t first, int64_t n);
/* Removes the partial files a resumable writer of (path, fmt, count images)
 * may have left; missing files are fine. */
void ctr__stack_remove_partial(const char *path, ctr_file_format fmt, int64_t count);
/* The name of the main partial file ("<path>.partial"; for a TIFF stack the
 * partial name of image 0) - malloc'd, caller frees. NULL (error raised) for
 * a multi-page TIFF, an unknown format or no memory. */
char *ctr__stack_partial_name(const char *path, ctr_file_format fmt);

/* The capabilities of a format (its row of the format table, io_format.c):
 * what the executors ask instead of listing formats. NULL with
 * CTR_E_INVALID_ARGUMENT raised for CTR_FORMAT_AUTO or an unknown value. */
const ctr_file_format_info *ctr__format_info(ctr_file_format fmt);
/* What a format can do, for ctr__format_list. */
typedef enum ctr__format_cap {
  CTR__CAP_RESUMABLE = 1,  /* info.resumable */
  CTR__CAP_MANY_RANKS = 2, /* info.many_ranks */
  CTR__CAP_ANY_ORDER = 3   /* !info.in_order: images written in any order, by several writers */
} ctr__format_cap;
/* The formats that have `cap`, as a message lists them: "raw, nrrd or a
 * TIFF stack pattern" (one-file formats in the table's order, then stacks of
 * files; with `stem`, the stack's example name: "... or a TIFF stack
 * pattern such as 'vol_%04d.tif'"). Into buf (n bytes, cut to fit);
 * returns buf. The one place messages get such a list from: a new format
 * is named in them by its row of the table (io_format.c). */
const char *ctr__format_list(ctr__format_cap cap, const char *stem, char *buf, size_t n);

/* ---- Test hooks --------------------------------------------------------- */

/* Test builds only (the library compiled with CTR_FAULT_INJECTION, which
 * the tests that inject link; the user's library has no hook):
 * CTRECON_INJECT_ENOSPC_AFTER=N simulates a disk with N free bytes: raw and
 * NRRD writes (everything through ctr__pwrite_full) that would take the
 * bytes written by the process past N write what fits and fail with ENOSPC
 * (CTR_E_IO, "No space left on device"). The variable is read at the first
 * write; this re-reads it and zeroes the byte count. */
void ctr__io_fault_reset(void);
/* Bytes moved through O_DIRECT descriptors by this process so far. */
int64_t ctr__io_direct_bytes(void);

#ifdef __cplusplus
}
#endif
#endif

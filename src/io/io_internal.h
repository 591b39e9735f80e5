/* Internals shared by the file I/O module: POSIX file helpers, atomic output
 * files, dtype conversion, and the backend interface that io_stack.c
 * dispatches to (RAW, NRRD, TIFF, TIFF stack, HDF5, OME-Zarr). Not installed.
 * Calls inside src/io point one way: io_partial.c (resumable writers) ->
 * io_stack.c (the public API, dispatching) -> the format backends (NRRD over
 * RAW, the TIFF stack over the TIFF glue) -> the leaves io_output.c,
 * io_stack_info.c, io_file.c, io_convert.c. */
#ifndef CTR_IO_INTERNAL_H
#define CTR_IO_INTERNAL_H

#include "core/internal.h"
#include "io/stack_partial.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Plain files (io_file.c) -------------------------------------------- */

/* Opens `path` read-only; *size gets its length. CTR_E_IO names the path and
 * strerror (directories are refused too). */
ctr_status ctr__file_open_read(const char *path, int *fd, int64_t *size);
/* A text file whole, NUL-terminated, into *out (malloc'd; NULL on failure).
 * A file of more than `max` bytes is CTR_E_FORMAT "'path' has N bytes:
 * expected WHAT (at most MAX bytes)"; open and read errors as above. */
ctr_status ctr__file_read_text(const char *path, int64_t max, const char *what, char **out);
/* Reads exactly n bytes at off. A file that ends early is
 * CTR_E_SIZE_MISMATCH; an OS error is CTR_E_IO; both name `path`. */
ctr_status ctr__pread_full(int fd, void *buf, size_t n, int64_t off, const char *path);
/* Counts against CTRECON_INJECT_ENOSPC_AFTER (stack_partial.h). */
ctr_status ctr__pwrite_full(int fd, const void *buf, size_t n, int64_t off, const char *path);
/* The same through a descriptor opened with O_DIRECT: *moved gets the bytes
 * transferred. Stops early without raising (CTR_OK, *moved < n) when the
 * kernel refuses the request (EINVAL), a transfer ends unaligned, the file
 * ends, or an injected full disk is near, so that the caller can finish
 * through a buffered descriptor; other OS errors are CTR_E_IO naming path. */
ctr_status ctr__pread_direct(int fd, void *buf, size_t n, int64_t off, const char *path,
                             size_t *moved);
ctr_status ctr__pwrite_direct(int fd, const void *buf, size_t n, int64_t off, const char *path,
                              size_t *moved);
/* Starts the write-back of every dirty page of `fd` without waiting for it
 * (sync_file_range, Linux; nothing elsewhere): a writer of many files calls it as
 * each is complete, so the disk takes them while the next ones are computed and the
 * final flush waits for the tail only. Failures are left to that flush. */
void ctr__start_writeback(int fd);
/* fsync of the directory holding `path`, making a created or renamed name
 * durable; failures only lose durability and are not reported. */
void ctr__sync_parent_dir(const char *path);
/* 1 if `path` exists (any file type). */
int ctr__file_exists(const char *path);
/* The run lock of an output: a whole-file write lock (fcntl F_SETLK) on the
 * open descriptor fd of `path`, held until the process closes a descriptor
 * of that file (any: fcntl locks are per process and file). Held by another
 * process: CTR_E_INVALID_ARGUMENT "'path' is in use by process N: ...",
 * where `what` names the run ("a run writing 'rec.nrrd'"). */
ctr_status ctr__file_lock(int fd, const char *path, const char *what);
/* The run lock of `path` (a journal, a checkpoint's lock file): `path`
 * opened with `flags` (O_CREAT: created when missing, mode 0666) and locked
 * (ctr__file_lock; a refusal names `name` and `what`). A run that ends
 * removes the file it locked (ctr__file_unlock): a descriptor opened before
 * that belongs to no name any more, so the open and the lock are repeated
 * until the locked file is the one the name holds. *fd: the locked
 * descriptor, -1 on failure; CTR_E_IO names path when it cannot be opened. */
ctr_status ctr__file_lock_open(const char *path, int flags, const char *name, const char *what,
                               int *fd);
/* The end of a run lock: `path` removed (with `remove`) while the lock is
 * still held, so that a run waiting for the name finds a new file, then fd
 * closed (-1: none). */
void ctr__file_unlock(const char *path, int fd, int remove);
/* The same refusal when another process holds the lock of `path` now; CTR_OK
 * when the file is missing or nobody holds it (a stale file of a run that
 * ended). Opens and closes `path`: not for a file this process has locked. */
ctr_status ctr__file_lock_check(const char *path, const char *what);
/* The refusal to replace an existing output (ctr_error_get_field "overwrite",
 * the value `path` as the caller gave it): CTR_E_INVALID_ARGUMENT naming
 * `found`, the file that exists (a file of `path`'s stack, its data file, or
 * `path` itself), and saying how to proceed. `appeared`: it appeared while
 * the output was written (the rename found it). Returns the status. */
ctr_status ctr__output_exists(const char *path, const char *found, int appeared);
/* printf into a new malloc'd string; NULL (CTR_E_OUT_OF_MEMORY raised) on
 * failure. */
char *ctr__io_sprintf(const char *fmt, ...) CTR__PRINTF(1, 2);

/* An output file written under a temporary name beside its target
 * ("<path>.tmp.<pid>.<n>", or a fixed "<path>.partial" for resumable output)
 * and renamed into place only when complete. */
typedef struct ctr__atomic_file {
  char *path;     /* target */
  char *tmp;      /* temporary name; NULL once renamed or discarded */
  int fd;         /* -1 once closed */
  int no_replace; /* 1: the rename never replaces a file at `path` (one that appeared while
                     this one was written): the output was to be new (overwrite 0);
                     0 after each create (set it after) */
} ctr__atomic_file;

#define CTR__ATOMIC_FILE_INIT {NULL, NULL, -1, 0}

/* Creates the temporary file; CTR_E_IO names `path` and strerror when the
 * directory is missing or not writable. */
ctr_status ctr__atomic_create(ctr__atomic_file *f, const char *path);
/* Opens the fixed temporary `tmp` of `path`: created or truncated when keep
 * is 0; when 1, opened as it is, and a missing one is CTR_E_IO naming it and
 * saying that the run cannot be resumed. */
ctr_status ctr__atomic_create_fixed(ctr__atomic_file *f, const char *path, const char *tmp,
                                    int keep);
/* fdatasync of the open temporary (with name_too: fsync, and the directory
 * too so that the temporary's name survives a crash). CTR_E_IO names it. */
ctr_status ctr__atomic_sync(ctr__atomic_file *f, int name_too);
/* Closes (without syncing) and frees the names, leaving the temporary on
 * disk for a later resume. */
void ctr__atomic_keep(ctr__atomic_file *f);
/* fsync + close, keeping the temporary for a later ctr__atomic_rename. */
ctr_status ctr__atomic_close(ctr__atomic_file *f);
/* Renames a closed temporary onto its target and syncs the directory. With
 * f->no_replace, a target that exists is kept (renameat2 RENAME_NOREPLACE,
 * else link + unlink, else a check just before the rename where the file
 * system has neither) and the rename fails with the refusal of
 * ctr__output_exists, the temporary left for the caller to discard. */
ctr_status ctr__atomic_rename(ctr__atomic_file *f);
/* Renames the closed temporaries files[0 .. n) in order (ctr__atomic_rename,
 * each with `no_replace`); when one fails, the targets renamed before it are
 * removed again where they were new (no_replace), so that no part of a
 * refused output stays. */
ctr_status ctr__atomic_rename_all(ctr__atomic_file *files, int64_t n, int no_replace);
/* close + rename. */
ctr_status ctr__atomic_commit(ctr__atomic_file *f);
/* Closes and removes the temporary (if any) and frees the names. Safe on an
 * initialised, committed or already discarded file. */
void ctr__atomic_discard(ctr__atomic_file *f);

/* ---- dtype conversion (io_convert.c) ------------------------------------ */

/* Rounds to nearest, clamps to [0, 65535], NaN -> 0. */
uint16_t ctr__float_to_u16(float v);
/* IEEE binary16 from float (round to nearest even; beyond 65504:
 * infinite; NaN stays NaN) and back (exact). */
uint16_t ctr__float_to_half(float v);
float ctr__half_to_float(uint16_t h);
/* Converts n elements; src and dst must not overlap (same dtype: copy).
 * Conversions go through float (uint16 targets round and clamp). */
void ctr__convert(void *dst, ctr_dtype dst_type, const void *src, ctr_dtype src_type, size_t n);
/* Reverses the byte order of n elements of `elem` bytes in place. */
void ctr__byteswap(void *buf, size_t elem, size_t n);
int ctr__host_is_little_endian(void);

/* ---- Stacks: shared description checks (io_stack_info.c) ---------------- */

/* Validates width/height/count > 0, a known dtype and that the byte size fits
 * in int64_t and size_t; `what` names the source (file or "info"). */
ctr_status ctr__stack_info_check(const ctr_stack_info *info, const char *what, ctr_status status);
/* Bytes of one image in the stack's dtype. */
size_t ctr__image_bytes(const ctr_stack_info *info);
/* "37 x 23 x 5 float32" into buf. */
const char *ctr__stack_describe(const ctr_stack_info *info, char *buf, size_t n);

/* ---- Writers: how output files are named (io_output.c) ------------------ */

typedef enum ctr__out_mode {
  CTR__OUT_TEMP = 0,        /* ctr_stack_create: "<name>.tmp.<pid>.<n>" */
  CTR__OUT_PARTIAL_NEW = 1, /* resumable, fresh: "<name>.partial", truncated */
  CTR__OUT_PARTIAL_RESUME = 2 /* resumable, resumed: "<name>.partial" as it is */
} ctr__out_mode;

/* "<target>.partial" (malloc'd; NULL with CTR_E_OUT_OF_MEMORY raised). */
char *ctr__partial_path(const char *target);
/* Creates (or, resuming, opens) the output file for `target` as `mode` says.
 * A backend's commit sets its files' no_replace from w->overwrite before
 * renaming them. */
ctr_status ctr__output_create(ctr__atomic_file *f, const char *target, ctr__out_mode mode);
/* Writes n bytes to `path` atomically (a temporary renamed when complete
 * and flushed); an existing path is refused, and kept, unless overwrite
 * (ctr_file_check_output). `what` names the file in errors ("geometry
 * file"). */
ctr_status ctr__file_save(const char *path, const void *data, size_t n, int overwrite,
                          const char *what);
/* ctr__file_save of a text and a newline after it (a JSON file's last line). */
ctr_status ctr__file_save_line(const char *path, const char *text, int overwrite,
                               const char *what);
/* A file that exists: *found = a copy of `path` (malloc'd), else NULL. The
 * format table's `existing` of one-file formats. */
ctr_status ctr__file_existing(const char *path, char **found);

/* ---- Backends ----------------------------------------------------------- */

typedef struct ctr__reader_ops {
  /* Images [first, first+n) in the file's dtype and byte order into buf;
   * the range is already validated. */
  ctr_status (*read)(ctr_stack_reader *r, int64_t first, int64_t n, void *buf);
  void (*close)(ctr_stack_reader *r);
  /* Optional: rows [row0, row0+nrows) of images [first, first+n), image
   * after image, in the file's dtype and byte order (NULL: the generic path
   * reads whole images). */
  ctr_status (*read_rows)(ctr_stack_reader *r, int64_t first, int64_t n, int64_t row0,
                          int64_t nrows, void *buf);
  /* Optional: the rows a block of rows should start at a multiple of and
   * span a multiple of, so that no stored unit (a compressed strip or tile,
   * a filtered HDF5 chunk) is decoded twice over a run of blocks (NULL: 1,
   * any row is read alone). */
  int64_t (*row_block)(const ctr_stack_reader *r);
  /* Optional: sizes the reader's caches for reads of n images x nrows rows
   * (HDF5's chunk cache). */
  ctr_status (*prepare_rows)(ctr_stack_reader *r, int64_t n, int64_t nrows);
} ctr__reader_ops;

/* ops->row_block of r, or 1. */
int64_t ctr__stack_row_block(const ctr_stack_reader *r);
/* ops->prepare_rows of r when it has one (CTR_OK otherwise). */
ctr_status ctr__stack_prepare_rows(ctr_stack_reader *r, int64_t n, int64_t nrows);

struct ctr_stack_reader {
  ctr_stack_info info; /* dtype is the file's */
  char *path;
  int swap; /* file byte order differs from the host's */
  int read_threads; /* ctr_stack_reader_set_read_threads (0: the default) */
  const ctr__reader_ops *ops;
  void *impl;
};

typedef struct ctr__writer_ops {
  /* Images [first, first+n) in the file's dtype and byte order; the range
   * (and, for ordered formats, nothing else) is validated. */
  ctr_status (*write)(ctr_stack_writer *w, int64_t first, int64_t n, const void *buf);
  ctr_status (*commit)(ctr_stack_writer *w); /* leaves nothing on failure */
  void (*abort)(ctr_stack_writer *w);
  /* fdatasync of everything written so far (ctr__stack_flush). */
  ctr_status (*flush)(ctr_stack_writer *w);
  /* Frees impl, keeping the partial files; NULL: the format cannot be
   * resumed. */
  void (*suspend)(ctr_stack_writer *w);
  /* Optional (resumable formats): images [first, first+n) as they are in
   * the file(s), in the file's dtype and host byte order. */
  ctr_status (*read_back)(ctr_stack_writer *w, int64_t first, int64_t n, void *buf);
} ctr__writer_ops;

struct ctr_stack_writer {
  ctr_stack_info info;
  char *path;
  int swap;
  const ctr__writer_ops *ops;
  void *impl;
  unsigned char *written; /* one flag per image; preset from `done` on resume */
  int failed;             /* a backend write failed: only abort is left */
  ctr__out_mode mode;     /* how the backend names its files */
  int overwrite;          /* the commit may replace existing files of the output (ctr_stack_create's
                             overwrite, ctr__stack_set_overwrite); 0: the backend's commit renames
                             its files keeping a file that exists (ctr__atomic_file.no_replace) */
  int zarr_shard;         /* an OME-Zarr writer's sharding (ctr__stack_set_zarr_shard); 0: the
                             default */
};

/* The writer behind ctr_stack_create (mode CTR__OUT_TEMP) and
 * ctr__stack_create_partial: checks the arguments, presets the written flags
 * from `done` (may be NULL) and creates the backend, with w->overwrite set
 * (the backends read it when they create and when they commit). */
ctr_status ctr__stack_writer_open(const char *path, ctr_file_format fmt, const ctr_stack_info *info,
                                  ctr__out_mode mode, const unsigned char *done, int overwrite,
                                  ctr_stack_writer **out);
/* Frees the writer itself (the backend's impl must be gone). */
void ctr__stack_writer_free(ctr_stack_writer *w);

/* Each open/create fills r->info, r->ops, r->impl (and r->swap) from r->path,
 * or raises and leaves nothing open. The opens share raw's signature (the
 * format table's): the others ignore the hint and the offset. */
ctr_status ctr__raw_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t offset);
/* Serves r (info already set) from `fd` (taken over, closed on failure) at
 * `offset`; checks that data_path is long enough. */
ctr_status ctr__raw_reader_init(ctr_stack_reader *r, int fd, int64_t file_size,
                                const char *data_path, int64_t offset);
ctr_status ctr__nrrd_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
ctr_status ctr__tiff_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
ctr_status ctr__tiff_stack_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
/* "file.h5:/group/dataset" (io_hdf5.c): a 3D dataset read by hyperslab;
 * CTR_E_UNSUPPORTED in builds without HDF5. */
ctr_status ctr__hdf5_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
/* The HDF5 writer of w->path ("file.h5[:/dataset]", default dataset /data). */
ctr_status ctr__hdf5_create(ctr_stack_writer *w);
/* The format table's `existing`: the dataset in an existing file (*found =
 * a copy of path); a file there that is not HDF5 is CTR_E_IO. */
ctr_status ctr__hdf5_existing(const char *path, char **found);
/* A 1D numeric dataset (e.g. "/exchange/theta") of HDF5 file `file` as
 * doubles: *out (malloc'd, free with free) gets *n >= 1 values. Errors name
 * the file and dataset; CTR_E_UNSUPPORTED in builds without HDF5. */
ctr_status ctr__hdf5_read_vector(const char *file, const char *dataset, double **out,
                                 int64_t *n);
/* The string attribute `name` of that dataset into buf (n bytes), "" when
 * it has none; CTR_E_FORMAT naming it when it is not one string. */
ctr_status ctr__hdf5_read_attr_string(const char *file, const char *dataset, const char *name,
                                      char *buf, size_t n);

ctr_status ctr__raw_create(ctr_stack_writer *w);
/* Raw image data in `data_path`, after `prefix` (written at offset 0). A
 * `companion` file with the given text (a detached header) is committed after
 * the data file. Files are named as w->mode says; a resumed file must hold
 * its prefix or text already (or a cut-short copy of it, completed here). */
ctr_status ctr__raw_writer_init(ctr_stack_writer *w, const char *data_path, const char *prefix,
                                const char *companion_path, const char *companion_text);
ctr_status ctr__nrrd_create(ctr_stack_writer *w);
/* The data file of a detached NRRD header ("x.nhdr" -> "x.raw") into *out;
 * NULL for an attached ".nrrd". */
ctr_status ctr__nrrd_data_path(const char *path, char **out);
ctr_status ctr__tiff_create(ctr_stack_writer *w);
ctr_status ctr__tiff_stack_create(ctr_stack_writer *w);
/* The file of image `index` of a TIFF stack pattern (malloc'd; NULL with the
 * error raised for a bad pattern). */
char *ctr__tiff_stack_file(const char *pattern, int64_t index);
/* Removes "<file>.partial" of images [0, count) of the pattern. */
void ctr__tiff_stack_remove_partial(const char *pattern, int64_t count);
/* The format table's `existing`: any file the pattern names (a number of
 * any width where the conversion is; the directory is listed), *found the
 * name of the lowest-numbered one (malloc'd), else NULL. */
ctr_status ctr__tiff_stack_existing(const char *pattern, char **found);

/* The partial name of image 0 of a TIFF stack pattern (malloc'd; NULL with
 * the error raised). */
char *ctr__tiff_stack_partial_name(const char *pattern);
/* Remove the partial files a resumable raw / NRRD writer of `path` may have
 * left (count: unused, the table's common signature). */
void ctr__raw_remove_partial(const char *path, int64_t count);
void ctr__nrrd_remove_partial(const char *path, int64_t count);
/* The format table's `existing` of NRRD: the header, or a detached
 * header's data file. */
ctr_status ctr__nrrd_existing(const char *path, char **found);

/* OME-Zarr (io_zarr.c): "NAME.zarr", a directory holding a Zarr v3
 * group with OME-NGFF 0.5 multiscales metadata and one array per level of
 * a 2 x 2 x 2 averaged pyramid; zstd chunks. Written to a temporary
 * directory renamed when complete (resumable: "<path>.partial/", whose
 * complete rows of chunks a resumed run keeps); read through the first
 * multiscales dataset (or an array's own zarr.json). */
ctr_status ctr__zarr_open(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
ctr_status ctr__zarr_create(ctr_stack_writer *w);
/* The format table's remove_partial of OME-Zarr: "<path>.partial/". */
void ctr__zarr_remove_partial(const char *path, int64_t count);
/* The layout of the OME-Zarr outputs written from now on (process-wide,
 * not thread-safe; for tests): chunks of `chunk` voxels a side (even; at
 * most the volume's size), and a further pyramid level while the last
 * one's smallest side is at least `min_side`. 0: the defaults, 64 and 64.
 * `shard`: shards of that many chunks a side (fewer where a level has
 * fewer), 0 no sharding, < 0 the default (shards of 1 x 8 x 8 chunks on a
 * level of more than 512 chunks). */
void ctr__zarr_set_layout(int64_t chunk, int64_t min_side, int64_t shard);
/* CRC-32C (Castagnoli; RFC 3720) of n bytes: the crc32c codec of Zarr v3. */
uint32_t ctr__crc32c(const void *data, size_t n);
/* The format table's `writer_bytes` of OME-Zarr (ctr__format_writer_bytes). */
uint64_t ctr__zarr_writer_bytes(int64_t nx, int64_t ny, int64_t nz, ctr_dtype d, int streams);

/* ---- The format table (io_format.c) ------------------------------------- */

/* One format: its capabilities (the public row), how ctr_format_guess
 * recognises it and the backends that io_stack.c and io_partial.c call. */
typedef struct ctr__format_row {
  ctr_file_format fmt;
  ctr_file_format_info info;
  /* For the message of an unknown ending: what follows the name after the
   * row's endings ("; tiff-stack with a %d pattern"); NULL: the row shares
   * another's endings and is named there. */
  const char *guess_note;
  /* How a message lists it among formats ("raw", "a TIFF stack pattern":
   * ctr__format_list) and, for a stack of files, the ending of an example
   * name after a stem ("_%04d.tif"; NULL: none). */
  const char *listed, *example;
  /* Fill r (or w) from its path or raise (ctr__raw_open and friends). */
  ctr_status (*open)(ctr_stack_reader *r, const ctr_stack_info *hint, int64_t raw_offset);
  ctr_status (*create)(ctr_stack_writer *w);
  /* Resumable formats (info.resumable): the name of the main partial file
   * of OUT (malloc'd), and removing every partial file a run left. */
  char *(*partial_name)(const char *path);
  void (*remove_partial)(const char *path, int64_t count);
  /* A file of the output `path` that exists now (any file of a stack, a
   * data file, an HDF5 dataset): *found its name (malloc'd), else NULL;
   * what a writer replaces, refused unless asked (ctr_stack_check_output). */
  ctr_status (*existing)(const char *path, char **found);
  /* Host bytes its writer holds of its own (ctr__format_writer_bytes);
   * NULL: none beyond the caller's buffers. */
  uint64_t (*writer_bytes)(int64_t nx, int64_t ny, int64_t nz, ctr_dtype d, int streams);
} ctr__format_row;

/* The row of a format (not CTR_FORMAT_AUTO); NULL with
 * CTR_E_INVALID_ARGUMENT raised for another value. */
const ctr__format_row *ctr__format_row_of(ctr_file_format f);
/* The host memory a writer of format f holds of its own while a volume of
 * nz images of ny x nx voxels of dtype d is written to it (the buffers
 * between the caller and the writer not included): an OME-Zarr writer's
 * rows of chunks at every pyramid level and its chunk scratch, 0 for the
 * formats that write what they are given (and for CTR_FORMAT_AUTO: no file
 * output). `streams`: how many places of the volume are written at once
 * (1: images in order; the workers of a volume split write their
 * subvolumes at once); each holds rows of its own. The streamed planners
 * count it in their host memory (docs/out-of-core.md). */
uint64_t ctr__format_writer_bytes(ctr_file_format f, int64_t nx, int64_t ny, int64_t nz,
                                  ctr_dtype d, int streams);
/* The names of the formats that store dtype d: "raw, tiff, tiff-stack or
 * hdf5" (into buf, returned). */
const char *ctr__format_names_storing(ctr_dtype d, char *buf, size_t n);
/* CTR_OK if the row's format stores d; else CTR_E_UNSUPPORTED naming `path`,
 * the formats that store d and the dtypes this one stores. */
ctr_status ctr__format_check_dtype(const ctr__format_row *row, ctr_dtype d, const char *path);

/* 8-bit PNG of w x h pixels with 1 (grey) or 3 (RGB) channels, rows top
 * first, written to a temporary name and renamed when complete; an existing
 * path is refused, and kept, unless overwrite (ctr_file_check_output). */
ctr_status ctr__png_save(const char *path, const uint8_t *pix, uint32_t w, uint32_t h,
                         int channels, int overwrite);
/* ctr_png_write_gray with the automatic window, replacing the file, at zlib's
 * fastest level and without the per-row filter search (the live previews:
 * larger files, written several times faster; other PNGs keep their bytes). */
ctr_status ctr__png_write_gray_fast(const char *path, const float *img, int64_t width,
                                    int64_t height);
/* The previews' automatic grey window: the 0.5 / 99.5 % percentiles of the
 * finite values of v[0..n) (of at most 2^20 evenly spaced samples); 0 and 1
 * when none is finite. */
ctr_status ctr__png_window(const float *v, size_t n, float *lo, float *hi);
/* The three files "<prefix><suffix[k]>" of a preview: none is written when
 * one of them exists (unless overwrite), then write(user, k, path) makes
 * each in turn; one that fails removes those written before it that were
 * new. */
ctr_status ctr__png_save_three(const char *prefix, const char *const suffix[3],
                               ctr_status (*write)(void *user, int k, const char *path),
                               void *user, int overwrite);

#endif

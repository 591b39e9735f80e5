/* Entering and leaving the HDF5 library (io_hdf5.c): the serial library is
 * not thread-safe, so every call into it, from any module, holds one
 * process-wide mutex; HDF5's automatic error printing is off inside (the
 * caller's setting is restored on leaving), and the innermost message of its
 * error stack becomes part of our error detail. Only for sources built with
 * HDF5 (CTR_HAVE_HDF5). */
#ifndef CTR_IO_HDF5_GUARD_H
#define CTR_IO_HDF5_GUARD_H

#include <hdf5.h>

/* 1: H5Dget_chunk_info_by_coord asks the chunk index (HDF5 1.14); HDF5 1.10
 * walks every chunk of the dataset for it (a read of many chunks took
 * minutes), and H5Dget_chunk_storage_size is the lookup that asks the index. */
#if H5_VERSION_GE(1, 14, 0)
#define CTR__H5_LOOKUP_INDEXED 1
#else
#define CTR__H5_LOOKUP_INDEXED 0
#endif

typedef struct ctr__h5_guard {
  H5E_auto2_t func;
  void *data;
} ctr__h5_guard;

typedef struct ctr__h5_msg {
  char text[384];
} ctr__h5_msg;

void ctr__h5_enter(ctr__h5_guard *g);
void ctr__h5_leave(ctr__h5_guard *g);
/* "HDF5: <innermost message>" of the current error stack (then cleared), or
 * `fallback`; the text lives in m. */
const char *ctr__h5_detail(ctr__h5_msg *m, const char *fallback);

/* Opens `file` read-only for ctrecon's readers (io_hdf5_driver.c): through
 * the checked file driver (reads and structures held to the file's size,
 * local heaps checked before HDF5 decodes them), file locking where the
 * file system has it, no sieve buffer. On failure -1, and m gets HDF5's
 * reason. Call inside ctr__h5_enter. */
hid_t ctr__h5_open_read(const char *file, ctr__h5_msg *m);
/* How many times the checked driver has refused a read or a structure so far
 * (a count that changes across a failed call: the file is damaged, not
 * merely missing what was asked). */
unsigned long ctr__h5_driver_refusals(void);
/* 1: `driver` (H5Pget_driver) is the checked driver; its handle
 * (H5Fget_vfd_handle) is an int file descriptor, as sec2's. */
int ctr__h5_is_checked_driver(hid_t driver);
/* CTR_E_FORMAT (naming file and dataset) when the raw data a read of
 * [start, start + count) would touch (NULL: the whole dataset) is stored in
 * fewer bytes than it needs: a short compact layout or an unfiltered chunk
 * of the wrong size, where HDF5 itself would read past a buffer. Call inside
 * ctr__h5_enter, before H5Dread. */
/* check_decode: chunks behind deflate are also decoded (io_hdf5_chunks.c),
 * and must give back exactly their elements; 0 where the caller reads them
 * through ctr__h5_read_decoded, which checks as it decodes. */
ctr_status ctr__h5_check_storage(hid_t dset, const char *file, const char *name,
                                 const hsize_t *start, const hsize_t *count, int check_decode);
/* The same, and for a chunked dataset the address of every chunk the
 * selection touches (last axis fastest; HADDR_UNDEF: never written) into
 * addrs, which has room for naddrs (ctr__h5_pread_chunks), each one checked as
 * above: after the superblock, inside the file, its stored size what its
 * filters give (without filters, exactly its elements). *addressed is 1 when
 * all naddrs were filled, 0 when the check could not look them up (HDF5 1.10,
 * more than CTR__H5_ADDR_CHUNKS chunks in the dataset: sizes only) or the
 * dataset is not chunked. start and count must be given. */
ctr_status ctr__h5_check_storage_at(hid_t dset, const char *file, const char *name,
                                    const hsize_t *start, const hsize_t *count, int check_decode,
                                    haddr_t *addrs, size_t naddrs, int *addressed);

/* ---- Chunks decoded by ctrecon (io_hdf5_chunks.c) ---- */
#define CTR__H5_PIPELINE_MAX 32
typedef struct ctr__h5_pipeline {
  int n;       /* filters, in the order of the chunks' mask bits */
  int ours;    /* 1: every one is deflate, shuffle or Fletcher-32 */
  int deflate; /* how many are deflate */
  H5Z_filter_t id[CTR__H5_PIPELINE_MAX];
  unsigned elem[CTR__H5_PIPELINE_MAX]; /* each filter's first client value (shuffle: element size) */
} ctr__h5_pipeline;
/* The dataset's filter pipeline into p; returns p->ours (0 also for more
 * than CTR__H5_PIPELINE_MAX filters). */
int ctr__h5_pipeline_get(hid_t dcpl, ctr__h5_pipeline *p);
/* 1: the index lookup that H5Dread and H5Dread_chunk read a chunk by
 * (H5Dget_chunk_storage_size) gives the chunk at off the size got; in a
 * damaged index it can name another entry (the HDF5 1.14 long runs,
 * 2026-11-27: 38 bytes by H5Dget_chunk_info_by_coord, 1840 by the lookup,
 * read into a buffer of 1093; regress-chunk-sizes-disagree.h5). Only for a
 * chunk stored with a filter or one whose size was checked: an unfiltered
 * chunk's lookup gives its elements' size, not what is stored. */
int ctr__h5_chunk_size_agrees(hid_t dset, const hsize_t *off, hsize_t got);
/* NULL: the stored chunk at off (got bytes) decodes through p to exactly raw
 * bytes (read with H5Dread_chunk, its filters undone here); else what is
 * wrong with it, worded to follow "the chunk ... ". */
const char *ctr__h5_chunk_check(hid_t dset, const hsize_t *off, const ctr__h5_pipeline *p,
                                hsize_t raw, hsize_t got);
/* Reads the 3D selection [start, start + count) of a chunked dataset whose
 * pipeline is ours into out (count[0] x count[1] x count[2] elements of
 * memtype, last axis fastest): each chunk it touches read raw once, decoded,
 * held to exactly its elements (CTR_E_FORMAT naming file, dataset and chunk
 * otherwise), converted, copied; unwritten chunks give the fill value. Call
 * inside ctr__h5_enter, after ctr__h5_check_storage(..., 0). */
ctr_status ctr__h5_read_decoded(hid_t dset, hid_t memtype, const ctr__h5_pipeline *p,
                                const char *file, const char *name, const hsize_t start[3],
                                const hsize_t count[3], void *out);

/* ---- Unfiltered data read by ctrecon with threads (io_hdf5_pread.c) ---- */
typedef struct ctr__h5_pread {
  int usable;     /* 1: this dataset's row bands can be read here */
  int chunked;    /* 0: contiguous, one "chunk" of the whole dataset at addr */
  int swap;       /* integers stored in the other byte order */
  size_t elem;    /* bytes of an element */
  hsize_t cd[3];  /* chunk dims (contiguous: the dataset's dims) */
  haddr_t addr;   /* contiguous: where the data start (checked to lie in the file) */
  int fd;         /* our own descriptor of the file (-1: none) */
} ctr__h5_pread;
/* Decides whether dataset dset of file fid (opened by HDF5 from `file`),
 * read as memtype, can be read here (p->usable; io_hdf5_pread.c says when)
 * and opens the descriptor. Never fails: p->usable is 0 instead. Call inside
 * ctr__h5_enter. */
void ctr__h5_pread_open(ctr__h5_pread *p, hid_t fid, hid_t dset, hid_t memtype,
                        const char *file);
void ctr__h5_pread_close(ctr__h5_pread *p);
/* The chunks [start, start + count) touches (1 for contiguous data; 0 for
 * an empty selection or too many to count). */
size_t ctr__h5_pread_chunks(const ctr__h5_pread *p, const hsize_t start[3],
                            const hsize_t count[3]);
/* Threads a read uses for a reader setting (0: the default, 8). */
int ctr__h5_read_threads(int setting);
/* Reads [start, start + count) (whole rows of the selection's columns) into
 * out as memtype, with up to ctr__h5_read_threads(threads) threads (fewer
 * for small reads), each chunk from its address in addrs (as
 * ctr__h5_check_storage_at gave them; every one written). No HDF5 call:
 * call outside ctr__h5_enter. CTR_E_IO naming file, dataset, rows and
 * images when a read fails or the file ends early. */
ctr_status ctr__h5_pread_read(const ctr__h5_pread *p, const haddr_t *addrs,
                              const hsize_t start[3], const hsize_t count[3], int threads,
                              void *out, const char *file, const char *name);

#endif

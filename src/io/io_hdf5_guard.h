/* Entering and leaving the HDF5 library (io_hdf5.c): the serial library is
 * not thread-safe, so every call into it, from any module, holds one
 * process-wide mutex; HDF5's automatic error printing is off inside (the
 * caller's setting is restored on leaving), and the innermost message of its
 * error stack becomes part of our error detail. Only for sources built with
 * HDF5 (CTR_HAVE_HDF5). */
#ifndef CTR_IO_HDF5_GUARD_H
#define CTR_IO_HDF5_GUARD_H

#include <hdf5.h>

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
/* CTR_E_FORMAT (naming file and dataset) when the raw data a read of
 * [start, start + count) would touch (NULL: the whole dataset) is stored in
 * fewer bytes than it needs: a short compact layout or an unfiltered chunk
 * of the wrong size, where HDF5 itself would read past a buffer. Call inside
 * ctr__h5_enter, before H5Dread. */
/* Chunks behind deflate are inflated once each to be checked; a reader that
 * reads a chunk in several pieces (row bands) keeps this memo of the chunks
 * already checked (zeroed before the first call, ctr__h5_memo_free after the
 * last); NULL: none kept. */
typedef struct ctr__h5_memo {
  unsigned char *bits; /* one bit per chunk of the dataspace, last axis fastest */
  size_t nchunks;
} ctr__h5_memo;
ctr_status ctr__h5_check_storage(hid_t dset, const char *file, const char *name,
                                 const hsize_t *start, const hsize_t *count, ctr__h5_memo *memo);
void ctr__h5_memo_free(ctr__h5_memo *memo);

#endif

/* libtiff glue shared by the multi-page TIFF (io_tiff.c) and the TIFF stack
 * (io_tiff_stack.c) backends. Every helper names its subject through `what`,
 * e.g. "page 3 of 'scan.tif'" or "'img_0003.tif'". */
#ifndef CTR_IO_TIFF_H
#define CTR_IO_TIFF_H

#include "io/io_internal.h"

#include <tiffio.h>

/* Data above this many bytes goes to BigTIFF; classic TIFF offsets stop at
 * 4 GiB and directories need some room too. */
#define CTR__BIGTIFF_BYTES ((int64_t)3500000000)

/* CTR_E_INVALID_ARGUMENT unless width and height fit TIFF's 32-bit fields. */
ctr_status ctr__tiff_check_dims(const ctr_stack_info *info, const char *path);
/* Opens `path` for reading (CTR_E_IO if missing, CTR_E_FORMAT if not TIFF). */
ctr_status ctr__tiff_open_read(const char *path, TIFF **out);
/* Starts a TIFF in the atomic file's descriptor (BigTIFF above the limit).
 * The TIFF does not own the descriptor: end it with ctr__tiff_finish. */
ctr_status ctr__tiff_open_write(ctr__atomic_file *f, int64_t data_bytes, TIFF **out);
/* Flushes and frees the TIFF without closing its descriptor. */
ctr_status ctr__tiff_finish(TIFF *tif, const char *path);
/* Frees a TIFF whose output is being thrown away: no flush, no message. */
void ctr__tiff_abandon(TIFF *tif);

/* width, height, dtype and (from a centimetre resolution) spacing of the
 * current page; CTR_E_FORMAT names any unsupported sample layout. */
ctr_status ctr__tiff_page_info(TIFF *tif, const char *what, ctr_stack_info *out);
/* CTR_E_SIZE_MISMATCH unless `got` has the width, height and dtype of `want`
 * (`like` names where `want` came from). */
ctr_status ctr__tiff_check_like(const ctr_stack_info *got, const ctr_stack_info *want,
                                const char *what, const char *like);
/* Decodes the current page (strips or tiles) into buf. */
ctr_status ctr__tiff_read_page(TIFF *tif, const char *what, const ctr_stack_info *info,
                               void *buf);
/* Rows [row0, row0 + nrows) of the current page into buf (host byte order):
 * decodes only the strips or tiles that hold them. */
ctr_status ctr__tiff_read_page_rows(TIFF *tif, const char *what, const ctr_stack_info *info,
                                    int64_t row0, int64_t nrows, void *buf);
/* Where the current page's pixels are when they are stored uncompressed,
 * in strips that follow each other without gaps (as ctr__tiff_write_page
 * and most writers store them): the byte offset of row 0, rows then lying
 * width x element bytes apart, in the file's byte order (*swapped: not the
 * host's). -1 for any other layout (compressed, tiled, strips apart). */
int64_t ctr__tiff_page_data_offset(TIFF *tif, const ctr_stack_info *info, int *swapped);
/* The rows of the current page that decode together: the tile length, rows
 * per strip when compressed, 1 for uncompressed strips (any row is read
 * alone). */
int64_t ctr__tiff_page_row_block(TIFF *tif, const ctr_stack_info *info);
/* Reads rows [row0, row0 + nrows) of an image stored as
 * ctr__tiff_page_data_offset describes (offset `off`) with one pread from
 * fd, swapping to host order when `swapped`. */
ctr_status ctr__tiff_pread_rows(int fd, const char *what, const ctr_stack_info *info, int64_t off,
                                int swapped, int64_t row0, int64_t nrows, void *buf);
/* Writes one page and its directory; npages > 1 marks it as page `page` of a
 * multi-page file. */
ctr_status ctr__tiff_write_page(TIFF *tif, const char *what, const ctr_stack_info *info,
                                int64_t page, int64_t npages, const void *buf);

#endif

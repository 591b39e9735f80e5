/* Row bands of unfiltered HDF5 data read by ctrecon with several threads
 * (pread(2) on a descriptor of our own), beside H5Dread.
 *
 * Why: H5Dread of a band of rows over a DXchange file (one chunk per
 * projection) asks the sec2 driver for one piece of each chunk after the
 * other, at queue depth 1: 2048 pieces of 256 KiB for a band of 64 rows of
 * 2048 projections of 2048^2 uint16, which an NVMe disk serves far below its
 * bandwidth (issue 24; bench/NOTES.md, "reader busy"). Here the same pieces
 * are read by up to ctr_stack_reader_set_read_threads threads at once.
 *
 * When: the dataset is contiguous (not external) or chunked without any
 * filter, its elements are the memory type as stored or, for integers, the
 * same in the other byte order (swapped here, as HDF5's conversion does),
 * the file has no user block (chunk addresses are then file offsets) and
 * HDF5 reads it through the checked driver (io_hdf5_driver.c) or sec2 from
 * the file our descriptor opens.
 * Everything else (filters, compact and virtual layouts, conversions,
 * big-endian floats) stays on H5Dread. The chunk addresses are those
 * ctr__h5_check_storage_at checked for the read (after the superblock,
 * inside the file, exactly one chunk of elements stored); a read touching a
 * chunk never written (the fill value) goes through H5Dread too.
 *
 * Buffered pread, not O_DIRECT: a piece starts wherever its chunk and row
 * put it, so direct I/O would need an aligned bounce buffer reading up to
 * 4 KiB more around every piece (the bytes would no longer be read once,
 * tests/test_rows_once.c) and a second copy of every byte; a piece of 256
 * KiB is one large request either way. */
#include "io/io_internal.h"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Threads when the reader's setting is 0. */
#define CTR__H5_READ_THREADS_DEFAULT 8
/* At most this many, whatever the setting. */
#define CTR__H5_READ_THREADS_MAX 64
/* A thread for at least this many bytes of a read: a small read (a few rows
 * of a few images) runs on the caller's thread alone. */
#define CTR__H5_BYTES_PER_THREAD ((size_t)256 << 10)

int ctr__h5_read_threads(int setting) {
  if (setting <= 0) return CTR__H5_READ_THREADS_DEFAULT;
  return setting < CTR__H5_READ_THREADS_MAX ? setting : CTR__H5_READ_THREADS_MAX;
}

/* 1: the file HDF5 reads `fid` from through ctrecon's checked driver
 * (io_hdf5_driver.c, every file ctrecon opens for reading) or the sec2
 * driver (both pread a descriptor of their own, their handle) is the one
 * behind `fd`; 0 for another driver or file. */
static int same_file(hid_t fid, int fd) {
  int same = 0;
  hid_t fapl = H5Fget_access_plist(fid);
  void *handle = NULL;
  struct stat a, b;
  const hid_t driver = fapl >= 0 ? H5Pget_driver(fapl) : -1;
  if ((driver == H5FD_SEC2 || ctr__h5_is_checked_driver(driver)) &&
      H5Fget_vfd_handle(fid, fapl, &handle) >= 0 && handle && fstat(*(int *)handle, &a) == 0 &&
      fstat(fd, &b) == 0)
    same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  if (fapl >= 0) H5Pclose(fapl);
  return same;
}

/* 1: elements of file type ftype are those of memtype byte for byte (*swap
 * 0) or, integers, in the other byte order (*swap 1). */
static int served_as_stored(hid_t ftype, hid_t memtype, int *swap) {
  *swap = 0;
  if (H5Tequal(ftype, memtype) > 0) return 1;
  if (H5Tget_class(memtype) != H5T_INTEGER) return 0; /* floats: HDF5 converts */
  hid_t other = H5Tcopy(memtype);
  const H5T_order_t o = H5Tget_order(memtype);
  int ok = other >= 0 && (o == H5T_ORDER_LE || o == H5T_ORDER_BE) &&
           H5Tset_order(other, o == H5T_ORDER_LE ? H5T_ORDER_BE : H5T_ORDER_LE) >= 0 &&
           H5Tequal(ftype, other) > 0;
  if (other >= 0) H5Tclose(other);
  *swap = ok;
  return ok;
}

void ctr__h5_pread_open(ctr__h5_pread *p, hid_t fid, hid_t dset, hid_t memtype,
                        const char *file) {
  memset(p, 0, sizeof *p);
  p->fd = -1;
  hid_t dcpl = H5Dget_create_plist(dset), ftype = H5Dget_type(dset), sp = H5Dget_space(dset);
  hid_t fcpl = H5Fget_create_plist(fid);
  hsize_t ub = 1, dims[3], eof = 0;
  H5F_info2_t fi;
  const H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
  int ok = dcpl >= 0 && ftype >= 0 && sp >= 0 && fcpl >= 0 &&
           H5Sget_simple_extent_ndims(sp) == 3 && H5Sget_simple_extent_dims(sp, dims, NULL) == 3 &&
           H5Pget_userblock(fcpl, &ub) >= 0 && ub == 0 &&
           served_as_stored(ftype, memtype, &p->swap) && (p->elem = H5Tget_size(ftype)) > 0;
  if (ok && layout == H5D_CHUNKED) {
    ok = H5Pget_nfilters(dcpl) == 0 && H5Pget_chunk(dcpl, 3, p->cd) == 3 && p->cd[0] > 0 &&
         p->cd[1] > 0 && p->cd[2] > 0;
    p->chunked = 1;
  } else if (ok && layout == H5D_CONTIGUOUS) {
    /* the whole dataset is one "chunk" at its address, checked here: after
     * the superblock, its elements inside the file */
    size_t need = 0;
    const haddr_t addr = H5Dget_offset(dset);
    ok = H5Pget_external_count(dcpl) == 0 && addr != HADDR_UNDEF &&
         H5Fget_info2(fid, &fi) >= 0 && H5Fget_filesize(fid, &eof) >= 0 &&
         ctr__mul_size((size_t)dims[0], (size_t)dims[1], &need) &&
         ctr__mul_size(need, (size_t)dims[2], &need) && ctr__mul_size(need, p->elem, &need) && H5Dget_storage_size(dset) == (hsize_t)need &&
         addr >= fi.super.super_size && (hsize_t)need <= eof && addr <= eof - (hsize_t)need;
    memcpy(p->cd, dims, sizeof dims);
    p->addr = addr;
  } else {
    ok = 0; /* compact, virtual */
  }
  if (ok) {
    do {
      p->fd = open(file, O_RDONLY | O_CLOEXEC);
    } while (p->fd < 0 && errno == EINTR);
    ok = p->fd >= 0 && same_file(fid, p->fd);
  }
  if (!ok && p->fd >= 0) close(p->fd);
  if (!ok) p->fd = -1;
  p->usable = ok;
  if (fcpl >= 0) H5Pclose(fcpl);
  if (sp >= 0) H5Sclose(sp);
  if (ftype >= 0) H5Tclose(ftype);
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Eclear2(H5E_DEFAULT);
}

void ctr__h5_pread_close(ctr__h5_pread *p) {
  if (p->fd >= 0) close(p->fd);
  p->fd = -1;
  p->usable = 0;
}

/* Chunks along axis i that [start, start + count) touches. */
static hsize_t along(const ctr__h5_pread *p, int i, const hsize_t *start, const hsize_t *count) {
  return (start[i] + count[i] - 1) / p->cd[i] - start[i] / p->cd[i] + 1;
}

size_t ctr__h5_pread_chunks(const ctr__h5_pread *p, const hsize_t start[3],
                            const hsize_t count[3]) {
  if (!p->chunked) return 1;
  if (!count[0] || !count[1] || !count[2]) return 0;
  const double n = (double)along(p, 0, start, count) * (double)along(p, 1, start, count) *
                   (double)along(p, 2, start, count);
  return n < (double)(SIZE_MAX / sizeof(haddr_t)) ? (size_t)n : 0;
}

/* ---- The threads --------------------------------------------------------- */

/* One read: the items are (image, chunk of the image's rows and columns),
 * image after image; each reads its rows of one chunk, in one piece where
 * both the chunk's rows and the band's are whole (one chunk across the
 * width), else row by row. */
typedef struct band {
  const ctr__h5_pread *p;
  const haddr_t *addrs; /* per chunk, last axis fastest (contiguous: &p->addr) */
  hsize_t start[3], count[3];
  hsize_t ny, nx;       /* chunks touched along rows and columns */
  unsigned char *out;
  size_t items;
  atomic_size_t next;
  atomic_int failed;
  pthread_mutex_t lock; /* guards the first failure below */
  ctr_status status;    /* the first failure's, and its message */
  char detail[512];
  const char *file;
} band;

/* n bytes at file offset `at` into dst (io_file.c's loop); 0 on failure,
 * the first one's status and message (the worker's own) kept in b. */
static int piece(band *b, unsigned char *dst, size_t n, unsigned long long at) {
  const ctr_status st = ctr__pread_full(b->p->fd, dst, n, (int64_t)at, b->file);
  if (st != CTR_OK) {
    pthread_mutex_lock(&b->lock);
    if (!atomic_load(&b->failed)) {
      b->status = st;
      snprintf(b->detail, sizeof b->detail, "%s", ctr_error_detail());
      atomic_store(&b->failed, 1);
    }
    pthread_mutex_unlock(&b->lock);
    return 0;
  }
  if (b->p->swap) ctr__byteswap(dst, b->p->elem, n / b->p->elem);
  return 1;
}

static void item(band *b, size_t i) {
  const ctr__h5_pread *p = b->p;
  const hsize_t *s = b->start, *c = b->count, *cd = p->cd;
  const size_t e = p->elem;
  const hsize_t zi = i / (b->ny * b->nx), j = i % (b->ny * b->nx);
  const hsize_t z = s[0] + zi, yc = j / b->nx, xc = j % b->nx;
  const hsize_t oz = z / cd[0] * cd[0], oy = (s[1] / cd[1] + yc) * cd[1],
                ox = (s[2] / cd[2] + xc) * cd[2];
  const hsize_t y0 = oy > s[1] ? oy : s[1], y1 = oy + cd[1] < s[1] + c[1] ? oy + cd[1] : s[1] + c[1];
  const hsize_t x0 = ox > s[2] ? ox : s[2], x1 = ox + cd[2] < s[2] + c[2] ? ox + cd[2] : s[2] + c[2];
  const size_t chunk = p->chunked ? (size_t)(((z / cd[0] - s[0] / cd[0]) * b->ny + yc) * b->nx + xc)
                                  : 0;
  const unsigned long long base = (unsigned long long)b->addrs[chunk];
  const size_t run = (size_t)(x1 - x0);
  const int whole = x1 - x0 == cd[2] && x1 - x0 == c[2]; /* rows follow each other in both */
  for (hsize_t y = y0; y < y1 && !atomic_load(&b->failed); y += whole ? y1 - y0 : 1) {
    const size_t rows = whole ? (size_t)(y1 - y0) : 1;
    const unsigned long long at = base + (((z - oz) * cd[1] + (y - oy)) * cd[2] + (x0 - ox)) * e;
    unsigned char *dst = b->out + (size_t)((zi * c[1] + (y - s[1])) * c[2] + (x0 - s[2])) * e;
    if (!piece(b, dst, rows * run * e, at)) return;
  }
}

static void *worker(void *arg) {
  band *b = arg;
  for (;;) {
    const size_t i = atomic_fetch_add(&b->next, 1);
    if (i >= b->items || atomic_load(&b->failed)) break;
    item(b, i);
  }
  return NULL;
}

ctr_status ctr__h5_pread_read(const ctr__h5_pread *p, const haddr_t *addrs,
                              const hsize_t start[3], const hsize_t count[3], int threads,
                              void *out, const char *file, const char *name) {
  band b;
  memset(&b, 0, sizeof b);
  b.p = p;
  b.file = file;
  b.addrs = p->chunked ? addrs : &p->addr;
  memcpy(b.start, start, sizeof b.start);
  memcpy(b.count, count, sizeof b.count);
  if (!count[0] || !count[1] || !count[2]) return CTR_OK;
  b.ny = p->chunked ? along(p, 1, start, count) : 1;
  b.nx = p->chunked ? along(p, 2, start, count) : 1;
  b.out = out;
  b.items = (size_t)count[0] * (size_t)(b.ny * b.nx);
  atomic_init(&b.next, 0);
  atomic_init(&b.failed, 0);
  pthread_mutex_init(&b.lock, NULL);
  const size_t bytes = (size_t)count[0] * (size_t)count[1] * (size_t)count[2] * p->elem;
  size_t n = (size_t)ctr__h5_read_threads(threads);
  if (n > bytes / CTR__H5_BYTES_PER_THREAD) n = bytes / CTR__H5_BYTES_PER_THREAD;
  if (n > b.items) n = b.items;
  if (n < 1) n = 1;
  pthread_t tid[CTR__H5_READ_THREADS_MAX];
  size_t started = 0;
  /* n threads, the caller waiting (one: the caller reads); a thread that
   * cannot start leaves its share to the others, or to the caller */
  for (; n > 1 && started < n; started++)
    if (pthread_create(&tid[started], NULL, worker, &b) != 0) break;
  if (!started) worker(&b);
  for (size_t i = 0; i < started; i++) pthread_join(tid[i], NULL);
  pthread_mutex_destroy(&b.lock);
  if (!atomic_load(&b.failed)) return CTR_OK;
  const long long r0 = (long long)start[1], i0 = (long long)start[0];
  CTR_FAIL(CTR_E_IO, "cannot read rows [%lld, %lld) of images [%lld, %lld) of dataset '%s': %s%s",
           r0, r0 + (long long)count[1], i0, i0 + (long long)count[0], name, b.detail,
           b.status == CTR_E_SIZE_MISMATCH ? " (was it shortened while open?)" : "");
}

#endif /* CTR_HAVE_HDF5 */

/* The file driver ctrecon reads HDF5 files through (io_hdf5_guard.h): HDF5's
 * own POSIX driver (sec2) with three refusals, for damaged files that make
 * HDF5 allocate without bound inside its open calls, where no API call of
 * ours can look first (tests/fuzz/README.md, "Out of memory"):
 *
 *  - a read reaching past the end of the file fails (sec2 fills it with
 *    zeros: a heap that claims gigabytes in a 12 kB file was allocated and
 *    zero-filled to its claimed size);
 *  - an end of allocation past the end of the file fails: HDF5 sizes the
 *    metadata it loads against it (H5C__verify_len_eoa), so a claimed size
 *    beyond the file is refused before HDF5 allocates for it;
 *  - every local heap HDF5 loads (its "HEAP" prefix, format version 0 of the
 *    HDF5 file format specification) is checked before HDF5 decodes it: data
 *    segment inside the file, free list inside the segment, no free block
 *    visited twice and no more blocks than the segment can hold. HDF5 walks
 *    the list allocating a node per block and does not look for a cycle: one
 *    fuzz input grew it to 42 M nodes (2.2 GB).
 *
 * Read-only: open refuses write access. Reads are pread(2) on a descriptor of
 * its own; locking is flock(2), where the file system has it. Every call
 * comes from inside the HDF5 library, so under the mutex of
 * ctr__h5_enter. */
#include "io/io_internal.h"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#if H5_VERSION_GE(1, 14, 0)
#include <H5FDdevelop.h>
#endif

typedef struct checked_file {
  H5FD_t pub; /* HDF5's part; first */
  int fd;
  haddr_t eof; /* the file's size at open */
  haddr_t eoa;
  dev_t dev;
  ino_t ino;
  /* from the superblock once HDF5 has read it: where it lies (HDF5's base
   * address for the file's relative addresses) and the sizes of addresses
   * and lengths (0: not seen yet) */
  int have_base;
  haddr_t base;
  unsigned sizeof_addr, sizeof_size;
  char path[]; /* for messages */
} checked_file;

static unsigned long g_refusals; /* under the HDF5 mutex */

#define FAILV(ret, minor, ...)                                                                  \
  do {                                                                                          \
    g_refusals++;                                                                               \
    H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_VFL, minor,          \
             __VA_ARGS__);                                                                      \
    return ret;                                                                                 \
  } while (0)

static const unsigned char SIGNATURE[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
#define FREE_NULL 1 /* end of a local heap's free list on disk */

/* little-endian unsigned of n (1..8) bytes */
static uint64_t decode(const unsigned char *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

/* n bytes at absolute address a, all inside the file (io_file.c's loop;
 * its message, naming the file, in ctr_error_detail) */
static int read_exact(const checked_file *f, haddr_t a, void *buf, size_t n) {
  if (a > f->eof || n > f->eof - a) return -1;
  return ctr__pread_full(f->fd, buf, n, (int64_t)a, f->path) == CTR_OK ? 0 : -1;
}

/* The superblock, as HDF5 reads it (format versions 0-3): its location and
 * the sizes of addresses and lengths. */
static void note_superblock(checked_file *f, haddr_t addr, size_t size, const unsigned char *p) {
  if (size < 8 || memcmp(p, SIGNATURE, 8) != 0) return;
  f->have_base = 1;
  f->base = addr;
  if (size < 15) return;
  if (p[8] <= 1) { /* versions 0 and 1: four version bytes, then the sizes */
    f->sizeof_addr = p[13];
    f->sizeof_size = p[14];
  } else {
    f->sizeof_addr = p[9];
    f->sizeof_size = p[10];
  }
}

static int size_ok(unsigned n) { return n == 2 || n == 4 || n == 8; }

/* A local heap's prefix at absolute address addr (p, size bytes as read):
 * 0, or -1 with HDF5's error stack set. */
static int check_local_heap(const checked_file *f, haddr_t addr, size_t size, const unsigned char *p) {
  const unsigned sa = f->sizeof_addr, ss = f->sizeof_size;
  if (!f->have_base || !size_ok(sa) || !size_ok(ss))
    FAILV(-1, H5E_BADVALUE,
          "local heap at byte %llu: the superblock's sizes of addresses (%u) and lengths (%u) "
          "are not 2, 4 or 8",
          (unsigned long long)addr, sa, ss);
  const size_t prefix = 8 + 2 * (size_t)ss + sa;
  if (size < prefix) return 0; /* HDF5 finds it short itself */
  const uint64_t len = decode(p + 8, ss), head = decode(p + 8 + ss, ss);
  const uint64_t seg = decode(p + 8 + 2 * ss, sa);
  const uint64_t seg_abs = seg + f->base;
  if (seg_abs < seg || seg_abs > f->eof || len > f->eof - seg_abs)
    FAILV(-1, H5E_BADVALUE,
          "local heap at byte %llu: its data segment (%llu bytes at %llu) lies past the end of the "
          "file (%llu bytes); the file is damaged or truncated",
          (unsigned long long)addr, (unsigned long long)len, (unsigned long long)seg,
          (unsigned long long)f->eof);
  /* The free list: each block holds the next block's offset and its own
   * size (2 lengths), so a sound list has at most len / (2 ss) blocks; a
   * longer walk has visited a block twice. */
  const uint64_t most = len / (2 * ss);
  uint64_t off = head, n = 0;
  while (off != FREE_NULL) {
    if (off >= len) return 0; /* HDF5: "bad heap free list" */
    if (2 * (uint64_t)ss > len - off)
      FAILV(-1, H5E_BADVALUE,
            "local heap at byte %llu: free block at offset %llu runs past its data segment "
            "(%llu bytes)",
            (unsigned long long)addr, (unsigned long long)off, (unsigned long long)len);
    if (++n > most)
      FAILV(-1, H5E_BADVALUE,
            "local heap at byte %llu: its free list loops (more than %llu blocks in a data "
            "segment of %llu bytes)",
            (unsigned long long)addr, (unsigned long long)most, (unsigned long long)len);
    unsigned char b[16];
    if (read_exact(f, seg_abs + off, b, 2 * (size_t)ss) != 0)
      FAILV(-1, H5E_READERROR, "local heap at byte %llu: cannot read its free list",
            (unsigned long long)addr);
    const uint64_t next = decode(b, ss);
    if (next == 0) return 0; /* HDF5: "free block size is zero?" */
    off = next;
  }
  return 0;
}

/* ---- The driver's calls ---------------------------------------------------- */

static H5FD_t *d_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  (void)fapl;
  (void)maxaddr;
  if (flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT | H5F_ACC_EXCL))
    FAILV(NULL, H5E_CANTOPENFILE, "%s: ctrecon's checked driver reads only", name);
  const int fd = open(name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) FAILV(NULL, H5E_CANTOPENFILE, "%s: %s", name, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    FAILV(NULL, H5E_CANTOPENFILE, "%s: %s", name, strerror(errno));
  }
  checked_file *f = calloc(1, sizeof *f + strlen(name) + 1);
  if (!f) {
    close(fd);
    FAILV(NULL, H5E_CANTALLOC, "%s: out of memory", name);
  }
  f->fd = fd;
  memcpy(f->path, name, strlen(name) + 1);
  f->eof = (haddr_t)sb.st_size;
  f->dev = sb.st_dev;
  f->ino = sb.st_ino;
  return &f->pub;
}

static herr_t d_close(H5FD_t *file) {
  checked_file *f = (checked_file *)file;
  const int rc = close(f->fd);
  free(f);
  if (rc != 0) FAILV(-1, H5E_CANTCLOSEFILE, "close: %s", strerror(errno));
  return 0;
}

static int d_cmp(const H5FD_t *a, const H5FD_t *b) {
  const checked_file *x = (const checked_file *)a, *y = (const checked_file *)b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

static herr_t d_query(const H5FD_t *file, unsigned long *flags) {
  (void)file;
  *flags = 0; /* no metadata accumulation, sieving or aggregation: reads as asked */
  return 0;
}

static haddr_t d_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const checked_file *)file)->eoa;
}

static herr_t d_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
  (void)type;
  checked_file *f = (checked_file *)file;
  /* before the superblock is found, HDF5 moves the end of allocation over
   * the places a signature may lie (0, 512, 1024, ...), also past a short
   * file's end: only a file's own structures are held to its size */
  if (f->have_base && addr > f->eof)
    FAILV(-1, H5E_TRUNCATED,
          "the file's structures claim %llu bytes but it has %llu: it is truncated or damaged",
          (unsigned long long)addr, (unsigned long long)f->eof);
  f->eoa = addr;
  return 0;
}

static haddr_t d_get_eof(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const checked_file *)file)->eof;
}

static herr_t d_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
  (void)fapl;
  *handle = &((checked_file *)file)->fd;
  return 0;
}

static herr_t d_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf) {
  (void)dxpl;
  checked_file *f = (checked_file *)file;
  if (!f->have_base && type == H5FD_MEM_SUPER && size <= 8 && (addr > f->eof || size > f->eof - addr)) {
    /* the signature search looking past a short file's end: zeros, as sec2
     * gives, so that HDF5 says it found no signature */
    memset(buf, 0, size);
    if (addr < f->eof && read_exact(f, addr, buf, (size_t)(f->eof - addr)) != 0)
      FAILV(-1, H5E_READERROR, "%s", ctr_error_detail());
    return 0;
  }
  if (addr > f->eof || size > f->eof - addr)
    FAILV(-1, H5E_READERROR,
          "read of %zu bytes at byte %llu reaches past the end of the file (%llu bytes): it is "
          "truncated or damaged",
          size, (unsigned long long)addr, (unsigned long long)f->eof);
  if (read_exact(f, addr, buf, size) != 0) FAILV(-1, H5E_READERROR, "%s", ctr_error_detail());
  if (type == H5FD_MEM_SUPER) note_superblock(f, addr, size, buf);
  if (type == H5FD_MEM_LHEAP && size >= 4 && memcmp(buf, "HEAP", 4) == 0 &&
      check_local_heap(f, addr, size, buf) != 0)
    return -1;
  return 0;
}

static herr_t d_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                      const void *buf) {
  (void)file, (void)type, (void)dxpl, (void)addr, (void)size, (void)buf;
  FAILV(-1, H5E_WRITEERROR, "ctrecon's checked driver reads only");
}

static herr_t d_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
  (void)file, (void)dxpl, (void)closing;
  return 0; /* read-only: nothing to do */
}

static herr_t d_lock(H5FD_t *file, hbool_t rw) {
  const checked_file *f = (const checked_file *)file;
  if (flock(f->fd, (rw ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    /* HDF5 goes on where the file system has no locks (file locking's
     * "ignore when disabled"), as with its own driver */
    if (errno == ENOSYS || errno == ENOLCK || errno == EOPNOTSUPP) return 0;
    FAILV(-1, H5E_CANTLOCKFILE, "cannot lock the file: %s (another program writes it?)",
          strerror(errno));
  }
  return 0;
}

static herr_t d_unlock(H5FD_t *file) {
  const checked_file *f = (const checked_file *)file;
  if (flock(f->fd, LOCK_UN) != 0 && errno != ENOSYS && errno != ENOLCK && errno != EOPNOTSUPP)
    FAILV(-1, H5E_CANTUNLOCKFILE, "cannot unlock the file: %s", strerror(errno));
  return 0;
}

static const H5FD_class_t CHECKED = {
#if H5_VERSION_GE(1, 14, 0)
    .version = H5FD_CLASS_VERSION,
    .value = (H5FD_class_value_t)510, /* HDF5 leaves 256-511 to drivers of others */
#endif
    .name = "ctrecon-checked",
    .maxaddr = (haddr_t)INT64_MAX,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = d_open,
    .close = d_close,
    .cmp = d_cmp,
    .query = d_query,
    .get_eoa = d_get_eoa,
    .set_eoa = d_set_eoa,
    .get_eof = d_get_eof,
    .get_handle = d_get_handle,
    .read = d_read,
    .write = d_write,
    .truncate = d_truncate,
    .lock = d_lock,
    .unlock = d_unlock,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

static hid_t g_driver = -1;

unsigned long ctr__h5_driver_refusals(void) { return g_refusals; }

int ctr__h5_is_checked_driver(hid_t driver) { return driver >= 0 && g_driver >= 0 && driver == g_driver; }

hid_t ctr__h5_open_read(const char *file, ctr__h5_msg *m) {
  /* registered once per opening of the library (H5close invalidates ids) */
  if (g_driver < 0 || H5Iis_valid(g_driver) <= 0) g_driver = H5FDregister(&CHECKED);
  hid_t fapl = g_driver < 0 ? -1 : H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0 || H5Pset_driver(fapl, g_driver, NULL) < 0) {
    ctr__h5_detail(m, "cannot set up HDF5's file access");
    if (fapl >= 0) H5Pclose(fapl);
    return -1;
  }
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 12, 0)) || H5_VERSION_GE(1, 12, 1)
  /* Lock where the file system can; read anyway where it cannot (NFS). */
  H5Pset_file_locking(fapl, 1, 1);
#endif
  /* No sieve buffer: a read of contiguous (or unfiltered, uncached chunked)
   * data fetches exactly the selected bytes, not 64 KiB around them; the
   * row blocks of ctr_stack_read_rows then read every byte once. */
  H5Pset_sieve_buf_size(fapl, 0);
  const hid_t f = H5Fopen(file, H5F_ACC_RDONLY, fapl);
  if (f < 0) ctr__h5_detail(m, "not an HDF5 file"); /* before H5Pclose clears the stack */
  H5Pclose(fapl);
  return f;
}

#endif /* CTR_HAVE_HDF5 */

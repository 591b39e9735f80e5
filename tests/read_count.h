/* Bytes read from one file, whoever reads it: this header defines read,
 * pread and pread64 for the test executable (they count, then call libc's),
 * so the library's, libtiff's and HDF5's reads of that file are counted and
 * nothing else is. /proc/self/io's rchar counts every read of the process:
 * on a GPU the CUDA driver's own reads (hundreds of KB a run) made a
 * read-once check fail that the input file passed. stdio's reads inside
 * glibc are not seen (only headers are read that way). Include in one test
 * source only, after harness.h; read_count_start(path), then
 * read_count_bytes() after the reads (read_count_other(): those of them
 * read by threads other than the one that called read_count_start). */
#ifndef CTR_TEST_READ_COUNT_H
#define CTR_TEST_READ_COUNT_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/types.h>

static dev_t g_rc_dev;
static ino_t g_rc_ino;
static atomic_int g_rc_on;
static atomic_llong g_rc_bytes, g_rc_other;
static pthread_t g_rc_thread;

static void rc_count(int fd, ssize_t n) {
  struct stat st;
  if (n > 0 && atomic_load(&g_rc_on) && fstat(fd, &st) == 0 && st.st_dev == g_rc_dev &&
      st.st_ino == g_rc_ino) {
    atomic_fetch_add(&g_rc_bytes, (long long)n);
    if (!pthread_equal(pthread_self(), g_rc_thread)) atomic_fetch_add(&g_rc_other, (long long)n);
  }
}

/* Counts from now the bytes read from `path` (0: it cannot be stat'ed). */
static inline int read_count_start(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  atomic_store(&g_rc_on, 0);
  g_rc_dev = st.st_dev;
  g_rc_ino = st.st_ino;
  g_rc_thread = pthread_self();
  atomic_store(&g_rc_bytes, 0);
  atomic_store(&g_rc_other, 0);
  atomic_store(&g_rc_on, 1);
  return 1;
}

static inline long long read_count_bytes(void) { return atomic_load(&g_rc_bytes); }
static inline long long read_count_other(void) { return atomic_load(&g_rc_other); }

/* The definitions, under their exact symbol names (asm labels: the headers
 * may rename pread to pread64). off_t is 64 bits on the 64-bit targets we
 * build for. */
typedef ssize_t (*rc_read_fn)(int, void *, size_t);
typedef ssize_t (*rc_pread_fn)(int, void *, size_t, long long);
ssize_t rc_read(int fd, void *buf, size_t n) __asm__("read");
ssize_t rc_pread(int fd, void *buf, size_t n, long long off) __asm__("pread");
ssize_t rc_pread64(int fd, void *buf, size_t n, long long off) __asm__("pread64");

/* libc's function of that name (resolved once), its result counted. */
static ssize_t rc_pread_via(rc_pread_fn *real, const char *name, int fd, void *buf, size_t n,
                            long long off) {
  if (!*real) *real = (rc_pread_fn)dlsym(RTLD_NEXT, name);
  const ssize_t k = (*real)(fd, buf, n, off);
  rc_count(fd, k);
  return k;
}

ssize_t rc_read(int fd, void *buf, size_t n) {
  static rc_read_fn real;
  if (!real) real = (rc_read_fn)dlsym(RTLD_NEXT, "read");
  const ssize_t k = real(fd, buf, n);
  rc_count(fd, k);
  return k;
}

ssize_t rc_pread(int fd, void *buf, size_t n, long long off) {
  static rc_pread_fn real;
  return rc_pread_via(&real, "pread", fd, buf, n, off);
}

ssize_t rc_pread64(int fd, void *buf, size_t n, long long off) {
  static rc_pread_fn real;
  return rc_pread_via(&real, "pread64", fd, buf, n, off);
}

#endif

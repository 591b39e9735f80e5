/* Shared by the libFuzzer targets (tests/fuzz/README.md): a private
 * temporary directory that every input reuses and that is removed at exit,
 * files written into it, and inputs split into several files.
 *
 * Per-input work is bounded through the allocator: ASan returns NULL for any
 * single allocation over FZ_MAX_ALLOC_MB, so a header asking for more takes
 * the library's own out-of-memory path (a normal error status) instead of
 * allocating gigabytes. Every non-OK status is a normal outcome; only
 * sanitizer reports, leaks, crashes and timeouts are findings. */
#ifndef CTR_FUZZ_UTIL_H
#define CTR_FUZZ_UTIL_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FZ_MAX_ALLOC_MB 256
#define FZ_STR2(x) #x
#define FZ_STR(x) FZ_STR2(x)

/* Read by the ASan runtime at start-up (the environment's ASAN_OPTIONS
 * still override it). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=" FZ_STR(FZ_MAX_ALLOC_MB);
}

/* LeakSanitizer: HDF5 (1.10) loses blocks of its own free lists on some
 * error paths of damaged files; only stacks through libhdf5 are suppressed,
 * so a leak of ctrecon's own allocations still counts. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libhdf5\n"; }

/* AddressSanitizer, targets that define FZ_THIRD_PARTY_HDF5 (fuzz_hdf5.c,
 * fuzz_pet_hdf5.c): libhdf5 (Debian 12: 1.10.8) is not instrumented, and
 * memory errors of its own on damaged object headers (e.g. a heap over-read
 * in H5Aexists decoding an attribute message) are reported only through the
 * memcpy interceptor it calls. Those reports are suppressed for calls made
 * directly by libhdf5 and listed in README.md; errors in ctrecon's code, and
 * the damaged raw data ctrecon checks for itself (ctr__h5_check_storage),
 * still count. */
#ifdef FZ_THIRD_PARTY_HDF5
const char *__asan_default_suppressions(void);
const char *__asan_default_suppressions(void) { return "interceptor_via_lib:libhdf5\n"; }

/* After each input every HDF5 object ctrecon opened is closed: a file left
 * open would be found again by the next input's open of the same path, its
 * cached metadata describing bytes that are no longer there (the HDF5 long
 * runs crashed in H5Dread on inputs that do not crash alone). A handle left
 * open is a finding in ctrecon (abort). */
#include <hdf5.h>
/* HDF5 keeps freed blocks of its own free lists only up to 64 kB a list
 * (H5set_free_list_limits' defaults): larger ones, such as the metadata
 * cache's hash table allocated at every file open (512 kB), went back to the
 * sanitizer's allocator, which maps and unmaps such blocks each time: page
 * faults and zeroing took about half of each execution, and on 64 cores the
 * kernel's locking made 64 jobs run at half the rate of 32 (2026-11-27).
 * Kept up to 16 MB a list (64 MB in all), the two HDF5 targets ran 2.1x and
 * 2.2x as many inputs a second against HDF5 1.14 (the 2-core VM, 8000 runs
 * from the same corpus and seed).
 * A block is reused only for a request of its own size, so a read past the
 * requested size still meets the sanitizer's redzone. */
__attribute__((constructor)) static void fz_hdf5_free_lists(void) {
  H5set_free_list_limits(64 << 20, 16 << 20, 64 << 20, 16 << 20, 64 << 20, 16 << 20);
}

static void fz_hdf5_all_closed(void) {
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) {
    fprintf(stderr, "fuzz: %zd HDF5 object(s) still open after the input\n", open);
    abort();
  }
}
#endif

static char fz_dir_path[512];

static __attribute__((unused)) int fz_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static __attribute__((unused)) void fz_cleanup(void) {
  if (fz_dir_path[0]) nftw(fz_dir_path, fz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* The private directory, created on first use. */
static __attribute__((unused)) const char *fz_dir(void) {
  if (!fz_dir_path[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(fz_dir_path, sizeof fz_dir_path, "%s/ctrecon-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(fz_dir_path)) {
      perror("fuzz: mkdtemp");
      abort();
    }
    atexit(fz_cleanup);
  }
  return fz_dir_path;
}

/* Path of `name` inside the private directory (static buffer per slot). */
static __attribute__((unused)) const char *fz_path(int slot, const char *name) {
  static char buf[8][1024];
  snprintf(buf[slot & 7], sizeof buf[0], "%s/%s", fz_dir(), name);
  return buf[slot & 7];
}

/* Writes data to `path` as a new file; aborts on a write error of the
 * harness itself, which is no finding in the library. (Unlinked first rather
 * than truncated: ext4 flushes a file truncated and rewritten on close, which
 * costs ten times the parse.) */
static __attribute__((unused)) void fz_write_file(const char *path, const uint8_t *data, size_t n) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    perror("fuzz: open");
    abort();
  }
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, data + off, n - off);
    if (w <= 0) {
      perror("fuzz: write");
      abort();
    }
    off += (size_t)w;
  }
  close(fd);
}

/* Splits an input at the marker FZ_SPLIT into at most `max` parts; returns
 * the number of parts (at least 1). Lets one input carry several files
 * (a header and its data file, the pages of a TIFF stack). */
#define FZ_SPLIT "\n#CTRFUZZ#\n"
typedef struct fz_part {
  const uint8_t *data;
  size_t size;
} fz_part;

static __attribute__((unused)) int fz_split(const uint8_t *data, size_t size, fz_part *parts, int max) {
  const size_t m = sizeof FZ_SPLIT - 1;
  int n = 0;
  size_t start = 0;
  for (size_t i = 0; n < max - 1 && i + m <= size; i++)
    if (!memcmp(data + i, FZ_SPLIT, m)) {
      parts[n].data = data + start;
      parts[n++].size = i - start;
      start = i + m;
      i += m - 1;
    }
  parts[n].data = data + start;
  parts[n++].size = size - start;
  return n;
}

/* A NUL-terminated copy (malloc'd) of the input, for text parsers. */
static __attribute__((unused)) char *fz_text(const uint8_t *data, size_t size) {
  char *t = malloc(size + 1);
  if (!t) abort();
  memcpy(t, data, size);
  t[size] = '\0';
  return t;
}

#endif

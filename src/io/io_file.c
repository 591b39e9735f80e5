/* POSIX file helpers of the I/O module: full pread/pwrite loops and atomic
 * (temporary name + rename) output files. */
/* 64-bit off_t and st_size on 32-bit systems too: stacks exceed 4 GB. */
#define _FILE_OFFSET_BITS 64

#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linux transfers at most ~2 GiB per call; larger requests loop anyway. */
#define CTR__IO_CHUNK ((size_t)1 << 30)

char *ctr__io_sprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) {
    ctr__error_set(CTR_E_OUT_OF_MEMORY, "cannot allocate a string for '%s'", fmt);
    return NULL;
  }
  return s;
}

ctr_status ctr__file_open_read(const char *path, int *fd_out, int64_t *size) {
  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) CTR_FAIL(CTR_E_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    CTR_FAIL(CTR_E_IO, "cannot stat '%s': %s", path, strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    CTR_FAIL(CTR_E_IO, "cannot read '%s': %s", path, strerror(EISDIR));
  }
  *fd_out = fd;
  *size = (int64_t)st.st_size;
  return CTR_OK;
}

int ctr__file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

ctr_status ctr__pread_full(int fd, void *buf, size_t n, int64_t off, const char *path) {
  unsigned char *p = buf;
  size_t done = 0;
  while (done < n) {
    size_t want = n - done < CTR__IO_CHUNK ? n - done : CTR__IO_CHUNK;
    ssize_t got = pread(fd, p + done, want, (off_t)(off + (int64_t)done));
    if (got < 0) {
      if (errno == EINTR) continue;
      CTR_FAIL(CTR_E_IO, "cannot read %zu bytes at offset %lld of '%s': %s", n, (long long)off,
               path, strerror(errno));
    }
    if (got == 0)
      CTR_FAIL(CTR_E_SIZE_MISMATCH,
               "file '%s' ends at byte %lld, expected %zu bytes at offset %lld", path,
               (long long)(off + (int64_t)done), n, (long long)off);
    done += (size_t)got;
  }
  return CTR_OK;
}

ctr_status ctr__pwrite_full(int fd, const void *buf, size_t n, int64_t off, const char *path) {
  const unsigned char *p = buf;
  size_t done = 0;
  while (done < n) {
    size_t want = n - done < CTR__IO_CHUNK ? n - done : CTR__IO_CHUNK;
    ssize_t put = pwrite(fd, p + done, want, (off_t)(off + (int64_t)done));
    if (put < 0) {
      if (errno == EINTR) continue;
      CTR_FAIL(CTR_E_IO, "cannot write %zu bytes at offset %lld of '%s': %s", n, (long long)off,
               path, strerror(errno));
    }
    /* pwrite returning 0 for a non-zero request means no progress is
     * possible (POSIX leaves it unspecified); treat it as a full disk. */
    if (put == 0)
      CTR_FAIL(CTR_E_IO, "cannot write %zu bytes at offset %lld of '%s': %s", n, (long long)off,
               path, strerror(ENOSPC));
    done += (size_t)put;
  }
  return CTR_OK;
}

/* ---- Atomic files ------------------------------------------------------- */

/* Distinguishes temporaries of several writers of one process. */
static atomic_uint g_tmp_counter;

ctr_status ctr__atomic_create(ctr__atomic_file *f, const char *path) {
  ctr_status st = CTR_OK;
  f->path = f->tmp = NULL;
  f->fd = -1;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "output path is empty");
  f->path = strdup(path);
  if (!f->path) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  /* O_RDWR: libtiff reads back directories it links. O_EXCL: a leftover temporary of a crashed run with the same pid and
   * counter is never reused; try the next counter instead. */
  for (int attempt = 0; attempt < 100; attempt++) {
    free(f->tmp);
    f->tmp = ctr__io_sprintf("%s.tmp.%ld.%u", path, (long)getpid(),
                             atomic_fetch_add(&g_tmp_counter, 1u));
    if (!f->tmp) {
      st = CTR_E_OUT_OF_MEMORY;
      goto cleanup;
    }
    do {
      f->fd = open(f->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    } while (f->fd < 0 && errno == EINTR);
    if (f->fd >= 0) return CTR_OK;
    if (errno != EEXIST) break;
  }
  CTR_FAIL_GOTO(st, CTR_E_IO, "cannot create '%s' (temporary '%s'): %s", path, f->tmp,
                strerror(errno));
cleanup:
  free(f->tmp);
  free(f->path);
  f->tmp = f->path = NULL;
  return st;
}

ctr_status ctr__atomic_close(ctr__atomic_file *f) {
  if (f->fd < 0) return CTR_OK;
  int fd = f->fd;
  f->fd = -1;
  if (fsync(fd) != 0) {
    int e = errno;
    close(fd);
    CTR_FAIL(CTR_E_IO, "cannot flush '%s' (temporary '%s'): %s", f->path, f->tmp, strerror(e));
  }
  /* close() reports deferred write errors on network file systems. */
  if (close(fd) != 0 && errno != EINTR)
    CTR_FAIL(CTR_E_IO, "cannot close '%s' (temporary '%s'): %s", f->path, f->tmp,
             strerror(errno));
  return CTR_OK;
}

/* Makes a rename durable; a failure here only loses durability, not data, so
 * it is not reported. */
static void sync_parent_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

ctr_status ctr__atomic_rename(ctr__atomic_file *f) {
  if (!f->tmp) CTR_FAIL(CTR_E_INTERNAL, "'%s' has no temporary file to rename", f->path);
  if (rename(f->tmp, f->path) != 0)
    CTR_FAIL(CTR_E_IO, "cannot rename '%s' to '%s': %s", f->tmp, f->path, strerror(errno));
  free(f->tmp);
  f->tmp = NULL;
  sync_parent_dir(f->path);
  return CTR_OK;
}

ctr_status ctr__atomic_commit(ctr__atomic_file *f) {
  CTR_CHECK(ctr__atomic_close(f));
  return ctr__atomic_rename(f);
}

void ctr__atomic_discard(ctr__atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp) unlink(f->tmp);
  free(f->tmp);
  free(f->path);
  f->tmp = f->path = NULL;
  f->fd = -1;
}

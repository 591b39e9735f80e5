/* POSIX file helpers of the I/O module: full pread/pwrite loops (buffered or
 * O_DIRECT, with the ENOSPC hook of test builds) and atomic (temporary name + rename)
 * output files. */
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

ctr_status ctr__file_read_text(const char *path, int64_t max, const char *what, char **out) {
  int fd = -1;
  int64_t size = 0;
  *out = NULL;
  CTR_CHECK(ctr__file_open_read(path, &fd, &size));
  ctr_status st = CTR_OK;
  char *text = NULL;
  if (size > max)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "'%s' has %lld bytes: expected %s (at most %lld bytes)",
                  path, (long long)size, what, (long long)max);
  text = ctr__malloc((size_t)size + 1, what);
  if (!text) {
    st = CTR_E_OUT_OF_MEMORY;
    goto cleanup;
  }
  CTR_CHECK_GOTO(st, ctr__pread_full(fd, text, (size_t)size, 0, path));
  text[size] = '\0';
  *out = text;
  text = NULL;
cleanup:
  free(text);
  close(fd);
  return st;
}

int ctr__file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* ---- Run locks ------------------------------------------------------------ */

static ctr_status in_use(const char *path, const char *what, long pid) {
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "'%s' is in use by process %ld (%s, still going): wait for it "
           "to end, or write to another name", path, pid, what);
}

/* The process holding a lock that conflicts with a write lock on fd; 0: none. */
static long lock_holder(int fd) {
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_GETLK, &l) != 0 || l.l_type == F_UNLCK) return 0;
  return (long)l.l_pid;
}

ctr_status ctr__file_lock(int fd, const char *path, const char *what) {
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_SETLK, &l) == 0) return CTR_OK;
  if (errno == EACCES || errno == EAGAIN) {
    const long pid = lock_holder(fd);
    return in_use(path, what, pid > 0 ? pid : -1);
  }
  /* a file system without locks (some network mounts): run unlocked */
  return CTR_OK;
}

ctr_status ctr__file_lock_open(const char *path, int flags, const char *name, const char *what,
                               int *fd) {
  *fd = -1;
  ctr_status st = CTR_OK;
  /* a run that ends removes the file it locked (ctr__file_unlock): a
     descriptor opened before that is no longer the name's, and the name is
     taken again */
  for (int tries = 0; tries < 100; tries++) {
    int f;
    do {
      f = open(path, flags | O_CLOEXEC, 0666);
    } while (f < 0 && errno == EINTR);
    if (f < 0)
      CTR_FAIL(CTR_E_IO, "cannot %s '%s': %s", flags & O_CREAT ? "create" : "open", path,
               strerror(errno));
    st = ctr__file_lock(f, name, what);
    struct stat a, b;
    if (st == CTR_OK && fstat(f, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      *fd = f;
      return CTR_OK;
    }
    close(f);
    if (st != CTR_OK) return st;
  }
  CTR_FAIL(CTR_E_IO, "cannot lock '%s': its file is replaced again and again", path);
}

void ctr__file_unlock(const char *path, int fd, int remove) {
  if (remove && path) unlink(path); /* while still held: the next run makes a new one */
  if (fd >= 0) close(fd);
}

ctr_status ctr__file_lock_check(const char *path, const char *what) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CTR_OK;
  const long pid = lock_holder(fd);
  close(fd);
  return pid > 0 && pid != (long)getpid() ? in_use(path, what, pid) : CTR_OK;
}

/* ---- Transfers ---------------------------------------------------------- */

/* The pread/pwrite loop behind the transfer functions; *moved gets the bytes
 * done. On a `direct` (O_DIRECT) descriptor, EINVAL, an unaligned partial
 * transfer and the end of the file stop it without an error. */
static ctr_status transfer(int fd, int writing, unsigned char *p, size_t n, int64_t off,
                           const char *path, int direct, size_t *moved) {
  ctr_status st = CTR_OK;
  size_t done = 0;
  while (done < n) {
    size_t want = n - done < CTR__IO_CHUNK ? n - done : CTR__IO_CHUNK;
    const off_t at = (off_t)(off + (int64_t)done);
    ssize_t k = writing ? pwrite(fd, p + done, want, at) : pread(fd, p + done, want, at);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && direct && errno == EINVAL) break;
    if (k < 0) {
      st = ctr__error_set(CTR_E_IO, "cannot %s %zu bytes at offset %lld of '%s': %s",
                          writing ? "write" : "read", n, (long long)off, path, strerror(errno));
      break;
    }
    if (k == 0) {
      if (direct) break;
      /* pwrite returning 0 for a non-zero request means no progress is
       * possible (POSIX leaves it unspecified); treat it as a full disk. */
      st = writing ? ctr__error_set(CTR_E_IO, "cannot write %zu bytes at offset %lld of '%s': %s",
                                    n, (long long)off, path, strerror(ENOSPC))
                   : ctr__error_set(CTR_E_SIZE_MISMATCH,
                                    "file '%s' ends at byte %lld, expected %zu bytes at offset "
                                    "%lld",
                                    path, (long long)at, n, (long long)off);
      break;
    }
    done += (size_t)k;
    if (direct && (size_t)k % CTR__IO_ALIGN) break;
  }
  *moved = done;
  return st;
}

/* ---- Injected full disk (test builds only) ------------------------------ */

#ifdef CTR_FAULT_INJECTION
/* CTRECON_INJECT_ENOSPC_AFTER (stack_partial.h). Compiled only into the
 * test library (CMakeLists.txt, CTR_FAULT_INJECTION): the user's library
 * has no hook. */
static atomic_int g_fault_read;          /* the variable was read */
static atomic_llong g_fault_limit = -1;  /* free bytes; -1: no injection */
static atomic_llong g_fault_written;     /* bytes written since the reset */

void ctr__io_fault_reset(void) {
  const char *v = getenv("CTRECON_INJECT_ENOSPC_AFTER");
  long long limit = -1;
  if (v && *v) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*end && !errno && x >= 0) limit = x;
  }
  atomic_store(&g_fault_limit, limit);
  atomic_store(&g_fault_written, 0);
  atomic_store(&g_fault_read, 1);
}

/* How many of n bytes still fit on the simulated disk. */
static size_t fault_room(size_t n) {
  if (!atomic_load(&g_fault_read)) ctr__io_fault_reset();
  const long long limit = atomic_load(&g_fault_limit);
  if (limit < 0) return n;
  const long long left = limit - atomic_load(&g_fault_written);
  if (left <= 0) return 0;
  return (unsigned long long)left < n ? (size_t)left : n;
}

static void fault_count(size_t n) {
  if (atomic_load(&g_fault_limit) >= 0) atomic_fetch_add(&g_fault_written, (long long)n);
}
#else
static size_t fault_room(size_t n) { return n; }
static void fault_count(size_t n) { (void)n; }
#endif

static atomic_llong g_direct_bytes; /* bytes moved with O_DIRECT */

int64_t ctr__io_direct_bytes(void) { return (int64_t)atomic_load(&g_direct_bytes); }

/* ---- Plain and direct transfers ----------------------------------------- */

ctr_status ctr__pread_full(int fd, void *buf, size_t n, int64_t off, const char *path) {
  size_t moved;
  return transfer(fd, 0, buf, n, off, path, 0, &moved);
}

ctr_status ctr__pwrite_full(int fd, const void *buf, size_t n, int64_t off, const char *path) {
  const size_t room = fault_room(n);
  size_t moved;
  ctr_status st = transfer(fd, 1, (unsigned char *)buf, room, off, path, 0, &moved);
  fault_count(moved);
#ifdef CTR_FAULT_INJECTION
  if (st == CTR_OK && room < n)
    CTR_FAIL(CTR_E_IO, "cannot write %zu bytes at offset %lld of '%s': %s "
             "(injected by CTRECON_INJECT_ENOSPC_AFTER)", n, (long long)off, path,
             strerror(ENOSPC));
#endif
  return st;
}

ctr_status ctr__pread_direct(int fd, void *buf, size_t n, int64_t off, const char *path,
                             size_t *moved) {
  ctr_status st = transfer(fd, 0, buf, n, off, path, 1, moved);
  atomic_fetch_add(&g_direct_bytes, (long long)*moved);
  return st;
}

ctr_status ctr__pwrite_direct(int fd, const void *buf, size_t n, int64_t off, const char *path,
                              size_t *moved) {
  *moved = 0;
  /* An injected full disk is reported by the buffered path. */
  if (fault_room(n) < n) return CTR_OK;
  ctr_status st = transfer(fd, 1, (unsigned char *)buf, n, off, path, 1, moved);
  fault_count(*moved);
  atomic_fetch_add(&g_direct_bytes, (long long)*moved);
  return st;
}

/* ---- Atomic files ------------------------------------------------------- */

/* Distinguishes temporaries of several writers of one process. */
static atomic_uint g_tmp_counter;

ctr_status ctr__atomic_create(ctr__atomic_file *f, const char *path) {
  ctr_status st = CTR_OK;
  f->path = f->tmp = NULL;
  f->fd = -1;
  f->no_replace = 0;
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

ctr_status ctr__atomic_create_fixed(ctr__atomic_file *f, const char *path, const char *tmp,
                                    int keep) {
  ctr_status st = CTR_OK;
  f->path = f->tmp = NULL;
  f->fd = -1;
  f->no_replace = 0;
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "output path is empty");
  f->path = strdup(path);
  f->tmp = strdup(tmp);
  if (!f->path || !f->tmp) CTR_FAIL_GOTO(st, CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  const int flags = O_RDWR | O_CLOEXEC | (keep ? 0 : O_CREAT | O_TRUNC);
  do {
    f->fd = open(f->tmp, flags, 0666);
  } while (f->fd < 0 && errno == EINTR);
  if (f->fd >= 0) return CTR_OK;
  if (keep)
    CTR_FAIL_GOTO(st, CTR_E_IO,
                  "cannot resume writing '%s': its partial file '%s' cannot be opened: %s; the "
                  "run cannot be resumed",
                  path, tmp, strerror(errno));
  CTR_FAIL_GOTO(st, CTR_E_IO, "cannot create '%s' (partial file '%s'): %s", path, tmp,
                strerror(errno));
cleanup:
  free(f->tmp);
  free(f->path);
  f->tmp = f->path = NULL;
  return st;
}

ctr_status ctr__atomic_sync(ctr__atomic_file *f, int name_too) {
  if (f->fd < 0) return CTR_OK;
  if ((name_too ? fsync(f->fd) : fdatasync(f->fd)) != 0)
    CTR_FAIL(CTR_E_IO, "cannot flush '%s' (temporary '%s'): %s", f->path, f->tmp,
             strerror(errno));
  if (name_too) ctr__sync_parent_dir(f->tmp);
  return CTR_OK;
}

void ctr__atomic_keep(ctr__atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  free(f->tmp);
  free(f->path);
  f->tmp = f->path = NULL;
  f->fd = -1;
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

void ctr__start_writeback(int fd) {
#ifdef SYNC_FILE_RANGE_WRITE
  (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
#endif
}

/* A failure here only loses durability, not data, so it is not reported. */
void ctr__sync_parent_dir(const char *path) {
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

ctr_status ctr__output_exists(const char *path, const char *found, int appeared) {
  char of[4200] = "";
  if (strcmp(found, path) != 0) snprintf(of, sizeof of, " (of the output '%s')", path);
  return ctr__error_set_value(CTR_E_INVALID_ARGUMENT, "overwrite", path,
                              "'%s'%s %s: set overwrite to replace it, or write the output to "
                              "another name", found, of,
                              appeared ? "appeared while the output was written: it is kept and "
                                         "the output discarded"
                                       : "exists and is kept");
}

/* rename(2) that keeps an existing target (errno EEXIST). */
static int rename_new(const char *from, const char *to) {
#ifdef RENAME_NOREPLACE
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
#endif
  /* a file system without it: link() fails on an existing target too */
  if (link(from, to) == 0) return unlink(from), 0;
  if (errno == EEXIST) return -1;
  /* nor hard links (FAT, some network file systems): check, then rename */
  struct stat s;
  if (lstat(to, &s) == 0) return errno = EEXIST, -1;
  return rename(from, to);
}

ctr_status ctr__atomic_rename(ctr__atomic_file *f) {
  if (!f->tmp) CTR_FAIL(CTR_E_INTERNAL, "'%s' has no temporary file to rename", f->path);
  if ((f->no_replace ? rename_new(f->tmp, f->path) : rename(f->tmp, f->path)) != 0) {
    if (f->no_replace && errno == EEXIST) return ctr__output_exists(f->path, f->path, 1);
    CTR_FAIL(CTR_E_IO, "cannot rename '%s' to '%s': %s", f->tmp, f->path, strerror(errno));
  }
  free(f->tmp);
  f->tmp = NULL;
  ctr__sync_parent_dir(f->path);
  return CTR_OK;
}

ctr_status ctr__atomic_rename_all(ctr__atomic_file *files, int64_t n, int no_replace) {
  for (int64_t i = 0; i < n; i++) files[i].no_replace = no_replace;
  for (int64_t i = 0; i < n; i++) {
    const ctr_status st = ctr__atomic_rename(&files[i]);
    if (st == CTR_OK) continue;
    for (int64_t k = 0; no_replace && k < i; k++) unlink(files[k].path);
    return st;
  }
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

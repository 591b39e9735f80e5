/* Another process holding the run lock of a file: a child that takes a
 * whole-file fcntl write lock on `path` (created if missing), as a second
 * ctrecon run would find the first's, and keeps it until lock_holder_end.
 * The child only makes system calls (safe after fork in a threaded test). */
#ifndef CTR_TEST_LOCK_HOLDER_H
#define CTR_TEST_LOCK_HOLDER_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct lock_holder {
  pid_t pid;  /* the child; -1 when it could not start or lock */
  int release; /* write end: closing it ends the child */
} lock_holder;

static inline lock_holder lock_holder_start(const char *path) {
  lock_holder h = {-1, -1};
  int ready[2], release[2];
  if (pipe(ready) || pipe(release)) return h;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(release[1]);
    const int fd = open(path, O_RDWR | O_CREAT, 0666);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    char ok = fd >= 0 && fcntl(fd, F_SETLK, &l) == 0;
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    (void)!read(release[0], &ok, 1); /* until the parent closes its end */
    _exit(0);
  }
  close(ready[1]);
  close(release[0]);
  char ok = 0;
  if (pid < 0 || read(ready[0], &ok, 1) != 1 || !ok) {
    close(ready[0]);
    close(release[1]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return h;
  }
  close(ready[0]);
  h.pid = pid;
  h.release = release[1];
  return h;
}

static inline void lock_holder_end(lock_holder *h) {
  if (h->pid <= 0) return;
  close(h->release);
  waitpid(h->pid, NULL, 0);
  h->pid = -1;
}

#endif

/* The checkpoint of a run (checkpoint.h). */
#include "stream/checkpoint.h"

#include "io/io_internal.h"
#include "stream/journal.h"
#include "stream/output.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Vectors move through host memory 16 MiB at a time. */
#define STAGE_FLOATS ((int64_t)1 << 22)

ctr_status ctr__checkpoint_put(ctr__checkpoint_io *io, const void *data, size_t n) {
  if (!n) return CTR_OK; /* zlib's CRC-32 of a NULL buffer is its start value */
  io->crc = ctr__crc32(io->crc, data, n);
  CTR_CHECK(ctr__pwrite_full(io->fd, data, n, io->off, io->path));
  io->off += (int64_t)n;
  return CTR_OK;
}

int64_t ctr__checkpoint_left(const ctr__checkpoint_io *io) { return io->size - 4 - io->off; }

ctr_status ctr__checkpoint_get(ctr__checkpoint_io *io, void *data, size_t n) {
  if (!n) return CTR_OK;
  if ((int64_t)n > ctr__checkpoint_left(io))
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s': %lld bytes, expected at least %lld (cut short?)",
             io->path, (long long)io->size, (long long)(io->off + (int64_t)n + 4));
  CTR_CHECK(ctr__pread_full(io->fd, data, n, io->off, io->path));
  io->crc = ctr__crc32(io->crc, data, n);
  io->off += (int64_t)n;
  return CTR_OK;
}

static ctr_status stage(ctr__checkpoint_io *io) {
  if (!io->stage) io->stage = ctr__malloc(sizeof(float) * (size_t)STAGE_FLOATS, "checkpoint staging");
  return io->stage ? CTR_OK : CTR_E_OUT_OF_MEMORY;
}

ctr_status ctr__checkpoint_put_vector(ctr__checkpoint_io *io, int v, int64_t n) {
  CTR_CHECK(stage(io));
  for (int64_t a = 0; a < n; a += STAGE_FLOATS) {
    const int64_t m = n - a < STAGE_FLOATS ? n - a : STAGE_FLOATS;
    CTR_CHECK(io->ops->download(io->self, v, a, m, io->stage));
    CTR_CHECK(ctr__checkpoint_put(io, io->stage, sizeof(float) * (size_t)m));
  }
  return CTR_OK;
}

ctr_status ctr__checkpoint_get_vector(ctr__checkpoint_io *io, int v, int64_t n) {
  CTR_CHECK(stage(io));
  for (int64_t a = 0; a < n; a += STAGE_FLOATS) {
    const int64_t m = n - a < STAGE_FLOATS ? n - a : STAGE_FLOATS;
    CTR_CHECK(ctr__checkpoint_get(io, io->stage, sizeof(float) * (size_t)m));
    CTR_CHECK(io->ops->upload(io->self, v, a, m, io->stage));
  }
  return CTR_OK;
}

ctr_status ctr__checkpoint_write(const ctr__checkpoint_ops *ops, void *self, const char *path,
                                 const int64_t *ints, const double *reals) {
  ctr__atomic_file f = CTR__ATOMIC_FILE_INIT;
  ctr__checkpoint_io io = {ops, self, path, -1, 0, 0, 0, NULL};
  ctr_status st = ctr__atomic_create(&f, path);
  if (st != CTR_OK) return st;
  io.fd = f.fd;
  CTR_CHECK_GOTO(st, ctr__checkpoint_put(&io, ops->magic, 8));
  CTR_CHECK_GOTO(st, ctr__checkpoint_put(&io, ints, sizeof(int64_t) * (size_t)ops->nints));
  CTR_CHECK_GOTO(st, ctr__checkpoint_put(&io, reals, sizeof(double) * (size_t)ops->nreals));
  CTR_CHECK_GOTO(st, ops->write(self, &io));
  CTR_CHECK_GOTO(st, ctr__pwrite_full(f.fd, &io.crc, sizeof io.crc, io.off, path));
  st = ctr__atomic_commit(&f);
cleanup:
  free(io.stage);
  ctr__atomic_discard(&f);
  return st;
}

/* A field's value as the user knows it. */
static const char *field_value(const ctr__checkpoint_field *f, int64_t v, char *buf, size_t n) {
  const char *name = f->format ? f->format(v) : NULL;
  if (name) snprintf(buf, n, "%s", name);
  else snprintf(buf, n, "%lld", (long long)v);
  return buf;
}

/* The magic and the fingerprint against the run's: checksums first (other
 * data make every other difference beside the point), then the values in
 * file order. */
static ctr_status check_head(ctr__checkpoint_io *io, const int64_t *ints, const double *reals) {
  const ctr__checkpoint_ops *ops = io->ops;
  char magic[8];
  CTR_CHECK(ctr__checkpoint_get(io, magic, 8));
  const size_t family = strlen(ops->family);
  if (!memcmp(magic, ops->family, family) && memcmp(magic, ops->magic, 8))
    CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s' was written by an earlier ctrecon (layout %.8s; this "
             "one reads %s): it cannot be resumed; delete it and run without %s to start over",
             io->path, magic, ops->magic, ops->resume_option);
  if (memcmp(magic, ops->magic, 8))
    CTR_FAIL(CTR_E_FORMAT, "'%s' is not a ctrecon %s", io->path, ops->what);
  int64_t had[CTR__CHECKPOINT_MAX_FIELDS];
  double hadr[CTR__CHECKPOINT_MAX_FIELDS];
  CTR_CHECK(ctr__checkpoint_get(io, had, sizeof(int64_t) * (size_t)ops->nints));
  CTR_CHECK(ctr__checkpoint_get(io, hadr, sizeof(double) * (size_t)ops->nreals));
  for (int i = 0; i < ops->nints; i++)
    if (ops->ints[i].checksum && had[i] != ints[i])
      CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s differs from this "
               "run's (other %s)", io->path, ops->ints[i].name, ops->ints[i].checksum);
  for (int i = 0; i < ops->nints; i++)
    if (!ops->ints[i].checksum && had[i] != ints[i]) {
      char was[64], is[64];
      CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s is %s, this run's %s",
               io->path, ops->ints[i].name, field_value(&ops->ints[i], had[i], was, sizeof was),
               field_value(&ops->ints[i], ints[i], is, sizeof is));
    }
  for (int i = 0; i < ops->nreals; i++) /* bit for bit: the same run computes the same bits */
    if (memcmp(&hadr[i], &reals[i], sizeof(double)))
      CTR_FAIL(CTR_E_FORMAT, "checkpoint '%s' belongs to another run: its %s is %.17g, this "
               "run's %.17g", io->path, ops->reals[i].name, hadr[i], reals[i]);
  return CTR_OK;
}

ctr_status ctr__checkpoint_read(const ctr__checkpoint_ops *ops, void *self, const char *path,
                                const int64_t *ints, const double *reals) {
  ctr__checkpoint_io io = {ops, self, path, -1, 0, 0, 0, NULL};
  ctr_status st = ctr__file_open_read(path, &io.fd, &io.size);
  if (st != CTR_OK) return st;
  const int64_t head = 8 + (int64_t)sizeof(int64_t) * ops->nints +
                       (int64_t)sizeof(double) * ops->nreals;
  if (io.size < head + 4)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': %lld bytes, too short for a checkpoint",
                  path, (long long)io.size);
  CTR_CHECK_GOTO(st, check_head(&io, ints, reals));
  CTR_CHECK_GOTO(st, ops->read(self, &io));
  uint32_t crc = 0;
  if (ctr__checkpoint_left(&io) != 0)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s': %lld bytes, expected %lld", path,
                  (long long)io.size, (long long)(io.off + 4));
  CTR_CHECK_GOTO(st, ctr__pread_full(io.fd, &crc, sizeof crc, io.off, path));
  if (crc != io.crc)
    CTR_FAIL_GOTO(st, CTR_E_FORMAT, "checkpoint '%s' is damaged (CRC-32 mismatch): delete it and "
                  "start over", path);
cleanup:
  free(io.stage);
  close(io.fd);
  return st;
}

/* ---- The run ------------------------------------------------------------------ */

ctr_status ctr__checkpoint_begin(const ctr__checkpoint_ops *ops, const char *path, int resume,
                                 int *lock) {
  *lock = -1;
  char *lock_path = ctr__io_sprintf("%s.lock", path);
  if (!lock_path) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr__file_lock_open(lock_path, O_RDWR | O_CREAT, path,
                                      "another run with this checkpoint", lock);
  /* under the lock: no other run writes the checkpoint while it is judged */
  if (st == CTR_OK)
    st = ctr__stream_resume_rule(path, "checkpoint", "the state of an earlier run", NULL, resume,
                                 ops->resume_option);
  if (st != CTR_OK && *lock >= 0) {
    ctr__file_unlock(lock_path, *lock, 1);
    *lock = -1;
  }
  free(lock_path);
  return st;
}

void ctr__checkpoint_end(const char *path, int lock) {
  if (lock < 0) return;
  char *lock_path = ctr__io_sprintf("%s.lock", path);
  ctr__file_unlock(lock_path, lock, lock_path != NULL);
  free(lock_path);
}

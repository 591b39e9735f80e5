/* How output files are named (ctr__out_mode): under a temporary name for
 * ctr_stack_create, or under the fixed "<name>.partial" of a resumable
 * writer; whole small files saved atomically; what of an output exists.
 * Shared by the format backends, io_partial.c and the writers of other
 * files (geometry, PET, RabbitCT); calls only the plain-file helpers
 * (io_file.c). */
#include "io/io_internal.h"

#include <string.h>

char *ctr__partial_path(const char *target) { return ctr__io_sprintf("%s.partial", target); }

ctr_status ctr__output_create(ctr__atomic_file *f, const char *target, ctr__out_mode mode) {
  if (mode == CTR__OUT_TEMP) return ctr__atomic_create(f, target);
  char *tmp = ctr__partial_path(target);
  if (!tmp) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr__atomic_create_fixed(f, target, tmp, mode == CTR__OUT_PARTIAL_RESUME);
  free(tmp);
  return st;
}

ctr_status ctr_file_check_output(const char *path, int overwrite) {
  if (!path || !*path) CTR_FAIL(CTR_E_INVALID_ARGUMENT, "ctr_file_check_output: empty path");
  return overwrite || !ctr__file_exists(path) ? CTR_OK : ctr__output_exists(path, path, 0);
}

ctr_status ctr__file_save(const char *path, const void *data, size_t n, int overwrite,
                          const char *what) {
  ctr__atomic_file f = CTR__ATOMIC_FILE_INIT;
  CTR_CHECK(ctr_file_check_output(path, overwrite));
  ctr_status st = ctr__atomic_create(&f, path);
  f.no_replace = !overwrite;
  if (st == CTR_OK) st = ctr__pwrite_full(f.fd, data, n, 0, path);
  if (st == CTR_OK) st = ctr__atomic_commit(&f);
  if (st != CTR_OK && st != CTR_E_INVALID_ARGUMENT)
    st = ctr__error_set(st, "cannot write %s '%s': %s", what, path, ctr_error_detail());
  ctr__atomic_discard(&f);
  return st;
}

ctr_status ctr__file_save_line(const char *path, const char *text, int overwrite,
                               const char *what) {
  const size_t n = strlen(text);
  char *line = malloc(n + 2);
  if (!line) CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot hold the text of %s '%s'", what, path);
  memcpy(line, text, n);
  line[n] = '\n';
  line[n + 1] = '\0';
  const ctr_status st = ctr__file_save(path, line, n + 1, overwrite, what);
  free(line);
  return st;
}

ctr_status ctr__file_existing(const char *path, char **found) {
  *found = NULL;
  if (ctr__file_exists(path) && !(*found = strdup(path)))
    CTR_FAIL(CTR_E_OUT_OF_MEMORY, "cannot copy path '%s'", path);
  return CTR_OK;
}

/* How output files are named (ctr__out_mode): under a temporary name for
 * ctr_stack_create, or under the fixed "<name>.partial" of a resumable
 * writer. Shared by the format backends and io_partial.c; calls only the
 * plain-file helpers (io_file.c). */
#include "io/io_internal.h"

char *ctr__partial_path(const char *target) { return ctr__io_sprintf("%s.partial", target); }

ctr_status ctr__output_create(ctr__atomic_file *f, const char *target, ctr__out_mode mode) {
  if (mode == CTR__OUT_TEMP) return ctr__atomic_create(f, target);
  char *tmp = ctr__partial_path(target);
  if (!tmp) return CTR_E_OUT_OF_MEMORY;
  ctr_status st = ctr__atomic_create_fixed(f, target, tmp, mode == CTR__OUT_PARTIAL_RESUME);
  free(tmp);
  return st;
}

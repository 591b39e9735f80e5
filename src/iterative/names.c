/* The names of the iterative module's enums (algorithms, projector pairs),
 * apart from the code that uses them: the checkpoint's messages name both,
 * and the run calls the checkpoint. */
#include "iterative/iterative.h"

#include <string.h>

static const char *const ALGORITHM_NAMES[] = {"sirt", "cgls", "os-sart", "fista-tv", "pdhg-tv"};
#define NALGORITHMS (int)(sizeof ALGORITHM_NAMES / sizeof *ALGORITHM_NAMES)

const char *ctr_iterate_algorithm_name(ctr_iterate_algorithm a) {
  return (unsigned)a < (unsigned)NALGORITHMS ? ALGORITHM_NAMES[a] : "unknown";
}

ctr_status ctr_iterate_algorithm_parse(const char *name, ctr_iterate_algorithm *out) {
  for (int i = 0; name && out && i < NALGORITHMS; i++)
    if (!strcmp(name, ALGORITHM_NAMES[i])) return *out = (ctr_iterate_algorithm)i, CTR_OK;
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "algorithm '%s': expected sirt, cgls, os-sart, fista-tv or pdhg-tv",
           name ? name : "(null)");
}

const char *ctr_projector_pair_name(ctr_projector_pair p) {
  return p == CTR_PAIR_MATCHED ? "matched" : p == CTR_PAIR_FAST ? "fast" : "unknown";
}

ctr_status ctr_projector_pair_parse(const char *name, ctr_projector_pair *out) {
  if (name && out && !strcmp(name, "matched")) return *out = CTR_PAIR_MATCHED, CTR_OK;
  if (name && out && !strcmp(name, "fast")) return *out = CTR_PAIR_FAST, CTR_OK;
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "projector pair '%s': expected matched or fast",
           name ? name : "(null)");
}

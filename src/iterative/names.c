/* The names of the iterative module's enums (algorithms, projector pairs,
 * PWLS's penalties), apart from the code that uses them: the checkpoint's
 * messages name them, and the run calls the checkpoint. */
#include "iterative/iterative.h"

#include <string.h>

static const char *const ALGORITHM_NAMES[] = {"sirt",     "cgls",    "os-sart",
                                              "fista-tv", "pdhg-tv", "pwls"};
#define NALGORITHMS (int)(sizeof ALGORITHM_NAMES / sizeof *ALGORITHM_NAMES)
static const char *const PENALTY_NAMES[] = {"none", "quadratic", "huber"};
#define NPENALTIES (int)(sizeof PENALTY_NAMES / sizeof *PENALTY_NAMES)

/* The index of name among n names, -1 for none (name NULL too). */
static int index_of(const char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

const char *ctr_iterate_algorithm_name(ctr_iterate_algorithm a) {
  return (unsigned)a < (unsigned)NALGORITHMS ? ALGORITHM_NAMES[a] : "unknown";
}

ctr_status ctr_iterate_algorithm_parse(const char *name, ctr_iterate_algorithm *out) {
  const int i = index_of(ALGORITHM_NAMES, NALGORITHMS, name);
  if (i >= 0 && out) return *out = (ctr_iterate_algorithm)i, CTR_OK;
  CTR_FAIL(CTR_E_INVALID_ARGUMENT,
           "algorithm '%s': expected sirt, cgls, os-sart, fista-tv, pdhg-tv or pwls",
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

const char *ctr_iterate_penalty_name(ctr_iterate_penalty p) {
  return (unsigned)p < (unsigned)NPENALTIES ? PENALTY_NAMES[p] : "unknown";
}

ctr_status ctr_iterate_penalty_parse(const char *name, ctr_iterate_penalty *out) {
  const int i = index_of(PENALTY_NAMES, NPENALTIES, name);
  if (i >= 0 && out) return *out = (ctr_iterate_penalty)i, CTR_OK;
  CTR_FAIL(CTR_E_INVALID_ARGUMENT, "penalty '%s': expected none, quadratic or huber",
           name ? name : "(null)");
}

/* What every benchmark JSON carries besides its cases (docs/design.md): the UTC
 * date and the git revision (CTR_GIT_REVISION, set by scripts/gpu-check.sh;
 * "unknown" otherwise). */
#ifndef CTR_BENCH_COMMON_H
#define CTR_BENCH_COMMON_H

#include <stdlib.h>
#include <time.h>

static inline const char *bench_revision(void) {
  const char *rev = getenv("CTR_GIT_REVISION");
  return rev ? rev : "unknown";
}

/* ISO 8601 UTC time stamp into buf. */
static inline const char *bench_date(char *buf, size_t n) {
  time_t t = time(NULL);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  return buf;
}

#endif

/* Monotonic wall clock for the pipeline's step timings. */
#include "core/internal.h"

#include <time.h>

double ctr__now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The calendar clock (seconds since 1970): times that cross processes, as
 * the live sources' frame stamps (docs/synchrotron.md, "Message format"). */
double ctr__wall_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

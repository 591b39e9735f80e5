/* Entering and leaving the HDF5 library (io_hdf5_guard.h): one process-wide
 * mutex around every call, HDF5's automatic error printing off inside, the
 * innermost message of its error stack for our error details. A leaf below
 * the HDF5 readers and writers (io_hdf5.c, io_hdf5_chunks.c, the PET file). */
#include "io/io_internal.h"

#if defined(CTR_HAVE_HDF5) && CTR_HAVE_HDF5

#include "io/io_hdf5_guard.h"

#include <pthread.h>
#include <stdio.h>

/* ---- Entering and leaving the library ----------------------------------- */

static pthread_mutex_t g_h5_lock = PTHREAD_MUTEX_INITIALIZER;

void ctr__h5_enter(ctr__h5_guard *g) {
  pthread_mutex_lock(&g_h5_lock);
  g->func = NULL;
  g->data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &g->func, &g->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  H5Eclear2(H5E_DEFAULT);
}

void ctr__h5_leave(ctr__h5_guard *g) {
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, g->func, g->data);
  pthread_mutex_unlock(&g_h5_lock);
}

static herr_t walk_first(unsigned n, const H5E_error2_t *e, void *data) {
  ctr__h5_msg *m = data;
  if (n != 0 || !e) return 0;
  char minor[128] = "";
  if (H5Eget_msg(e->min_num, NULL, minor, sizeof minor) < 0) minor[0] = '\0';
  const char *desc = e->desc ? e->desc : "";
  if (*desc && *minor)
    snprintf(m->text, sizeof m->text, "HDF5: %s (%s)", desc, minor);
  else if (*desc || *minor)
    snprintf(m->text, sizeof m->text, "HDF5: %s", *desc ? desc : minor);
  return 0;
}

const char *ctr__h5_detail(ctr__h5_msg *m, const char *fallback) {
  m->text[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_first, m);
  H5Eclear2(H5E_DEFAULT);
  if (!m->text[0]) snprintf(m->text, sizeof m->text, "%s", fallback);
  return m->text;
}

#endif /* CTR_HAVE_HDF5 */

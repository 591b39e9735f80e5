/* The parallel-beam kernel selector's cache (src/parbeam/fbp_tune.c): round
 * trips, several keys, replacement, and a missing, corrupt, stale or
 * unwritable cache treated as empty (re-tune, never a crash). The choice
 * itself under the context's tuning table: tests/test_tuning.c. */
#include "harness.h"
#include "scratch_dir.h"
#include "parbeam/fbp_tune.h"

#include <stdlib.h>

static ctr__fbp_tune_key key(int64_t n, int interp) {
  ctr__fbp_tune_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "%s", "Test GPU 80GB");
  k.nbins = k.nx = k.ny = n;
  k.nangles = 2 * n;
  k.interp = interp;
  k.multi = 1;
  return k;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

int main(void) {
  if (!scratch_open("fbp_tune")) return 1;
  char name[32];
  const ctr__fbp_tune_key a = key(512, 0), b = key(1024, 0), c = key(512, 1);
  CHECK(!ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name)); /* no cache yet */
  CHECK_OK(ctr__fbp_tune_store(g_dir, &a, "alu2", 3000.0));
  CHECK(exists(P("fbp-kernels.json")));
  CHECK(ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name) && !strcmp(name, "alu2"));
  CHECK(!ctr__fbp_tune_lookup(g_dir, &b, name, sizeof name)); /* other size */
  CHECK(!ctr__fbp_tune_lookup(g_dir, &c, name, sizeof name)); /* other interpolation */
  CHECK_OK(ctr__fbp_tune_store(g_dir, &b, "alu", 2000.0));
  CHECK_OK(ctr__fbp_tune_store(g_dir, &c, "tex2", 1000.0));
  CHECK(ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name) && !strcmp(name, "alu2"));
  CHECK(ctr__fbp_tune_lookup(g_dir, &b, name, sizeof name) && !strcmp(name, "alu"));
  CHECK(ctr__fbp_tune_lookup(g_dir, &c, name, sizeof name) && !strcmp(name, "tex2"));
  CHECK_OK(ctr__fbp_tune_store(g_dir, &a, "alu", 2500.0)); /* replaces, does not duplicate */
  CHECK(ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name) && !strcmp(name, "alu"));
  long long size;
  unsigned char *text = read_all(P("fbp-kernels.json"), &size);
  int entries = 0;
  for (const char *q = (const char *)text; text && (q = strstr(q, "\"kernel\"")); q++) entries++;
  CHECK_MSG(entries == 3, "%d entries, expected 3", entries);
  free(text);
  /* A name too long for the caller's buffer is not returned truncated. */
  char tiny[3];
  CHECK(!ctr__fbp_tune_lookup(g_dir, &a, tiny, sizeof tiny));
  /* Corrupt, truncated and stale caches read as empty; a store replaces them. */
  const char *bad[] = {"garbage {", "{\"version\": 1, \"entries\": [ {\"gpu\": ", "",
                       "{\"version\": 99, \"entries\": []}", "[1, 2, 3]",
                       "{\"version\": 1, \"entries\": [{\"gpu\": 5, \"kernel\": \"alu\"}]}",
                       /* strict members: an entry for `a` with a misspelt extra field, and
                        * an unknown root field, are corrupt, not used */
                       "{\"version\": 1, \"entries\": [{\"gpu\": \"Test GPU 80GB\", \"nbins\": 512, "
                       "\"nangles\": 1024, \"nx\": 512, \"ny\": 512, \"interp\": 0, \"multi\": 1, "
                       "\"kernel\": \"tex\", \"gups\": 1, \"kernal\": \"alu\"}]}",
                       "{\"version\": 1, \"entires\": [], \"entries\": [{\"gpu\": \"Test GPU 80GB\", "
                       "\"nbins\": 512, \"nangles\": 1024, \"nx\": 512, \"ny\": 512, \"interp\": 0, "
                       "\"multi\": 1, \"kernel\": \"tex\", \"gups\": 1}]}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(P("fbp-kernels.json"), bad[i]);
    CHECK_MSG(!ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name), "cache '%s' read as valid", bad[i]);
    CHECK_OK(ctr__fbp_tune_store(g_dir, &a, "alu2", 3000.0));
    CHECK(ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name) && !strcmp(name, "alu2"));
  }
  /* Sizes must match exactly: 512.5 is not 512 (a cast once truncated it),
   * and 1e300 is no size (the cast was undefined; found by fuzz_fbp_tune). */
  const char *near[] = {
      "{\"version\": 1, \"entries\": [{\"gpu\": \"Test GPU 80GB\", \"nbins\": 512.5, "
      "\"nangles\": 1024, \"nx\": 512, \"ny\": 512, \"interp\": 0, \"multi\": 1, "
      "\"kernel\": \"alu\"}]}",
      "{\"version\": 1, \"entries\": [{\"gpu\": \"Test GPU 80GB\", \"nbins\": 512, "
      "\"nangles\": 1e300, \"nx\": 512, \"ny\": 512, \"interp\": 0.9, \"multi\": 1, "
      "\"kernel\": \"alu\"}]}"};
  for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
    write_text(P("fbp-kernels.json"), near[i]);
    CHECK_MSG(!ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name), "cache '%s' matched key 512", near[i]);
  }
  /* the exact entry does match (the cases above differ only there) */
  write_text(P("fbp-kernels.json"),
             "{\"version\": 1, \"entries\": [{\"gpu\": \"Test GPU 80GB\", \"nbins\": 512, "
             "\"nangles\": 1024, \"nx\": 512, \"ny\": 512, \"interp\": 0, \"multi\": 1, "
             "\"kernel\": \"alu\"}]}");
  CHECK(ctr__fbp_tune_lookup(g_dir, &a, name, sizeof name) && !strcmp(name, "alu"));
  CHECK(count_temporaries() == 0);
  /* An unusable cache directory: lookups miss, stores fail with a message;
   * no directory at all: the same. */
  const char *bad_dir = "/proc/ctrecon-no-such-dir";
  CHECK(!ctr__fbp_tune_lookup(bad_dir, &a, name, sizeof name));
  CHECK(ctr__fbp_tune_store(bad_dir, &a, "alu2", 1.0) == CTR_E_IO);
  CHECK(strstr(ctr_error_detail(), "kernel cache") != NULL);
  CHECK(!ctr__fbp_tune_lookup(NULL, &a, name, sizeof name));
  CHECK_FAILS(ctr__fbp_tune_store(NULL, &a, "alu2", 1.0), CTR_E_IO, "cache_dir");
  scratch_close();
  return th_finish("test_fbp_tune");
}

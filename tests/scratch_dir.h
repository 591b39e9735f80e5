/* A scratch directory for file tests: created with scratch_open, removed with
 * everything in it by scratch_close; P() names a file inside it; helpers to
 * check what was left behind. Include after harness.h. */
#ifndef CTR_TEST_SCRATCH_DIR_H
#define CTR_TEST_SCRATCH_DIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_dir[64];

/* Path inside the scratch directory; a few rotating buffers so several can
 * be used in one call. */
static const char *P(const char *name) {
  static char buf[8][512];
  static int next = 0;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
  return b;
}

/* Bytes this process has read through read()/pread() so far (rchar of
 * /proc/self/io; -1 without it). */
static inline long long bytes_read(void) {
  FILE *f = fopen("/proc/self/io", "r");
  long long v = -1;
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "rchar: %lld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

static inline int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static inline long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Whole file into memory, followed by a NUL so that text can be read as a
 * string (*size excludes it); NULL if it cannot be read. */
static inline unsigned char *read_all(const char *path, long long *size) {
  *size = file_size(path);
  if (*size < 0) return NULL;
  unsigned char *buf = malloc((size_t)*size + 1);
  FILE *f = fopen(path, "rb");
  if (!buf || !f || fread(buf, 1, (size_t)*size, f) != (size_t)*size) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[*size] = '\0';
  if (f) fclose(f);
  return buf;
}

/* 1 if both files can be read and hold the same bytes. */
static inline int same_files(const char *a, const char *b) {
  long long na, nb;
  unsigned char *x = read_all(a, &na), *y = read_all(b, &nb);
  const int same = x && y && na == nb && !memcmp(x, y, (size_t)na);
  free(x);
  free(y);
  return same;
}

/* Temporaries anywhere under the scratch directory ("*.tmp.*"). */
static int g_tmp_found;
static int find_tmp(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  if (strstr(path + strlen(g_dir), ".tmp.")) g_tmp_found++;
  return 0;
}
static inline int count_temporaries(void) {
  g_tmp_found = 0;
  nftw(g_dir, find_tmp, 16, FTW_PHYS);
  return g_tmp_found;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* mkdtemp under /tmp with the given name prefix; 0 on failure. */
static inline int scratch_open(const char *prefix) {
  snprintf(g_dir, sizeof g_dir, "/tmp/%s_XXXXXX", prefix);
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 0;
  }
  return 1;
}

static inline void scratch_close(void) { nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

#endif

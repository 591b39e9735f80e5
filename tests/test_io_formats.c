/* The format table (ctr_file_format_get_info): every row against what its
 * format's reader and writer actually do: the names parse back, every
 * ending is guessed as the row's format, the dtypes it lists are written
 * and the others refused, in-order formats refuse images out of order,
 * resumable formats take partial writers (named as the row says) and the
 * others refuse them, a format that adds to a file keeps the file's other
 * contents, every format refuses to replace an output unless asked (what
 * exists found by its row: a stack's files, an HDF5 dataset) and keeps one
 * that appears before its commit. Runs in a scratch directory under /tmp. */
#include "harness.h"
#include "scratch_dir.h"

#include "io/stack_partial.h"

#include <stdio.h>
#include <string.h>

enum { NX = 5, NY = 4, NZ = 3 };

/* Every format of the table: the values from 1 up to the first it does not
 * know (a new row is tested without editing this file). */
static ctr_file_format k_formats[32];
static size_t NFORMATS;

static void list_formats(void) {
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  for (int f = 1; f < 32 && ctr_file_format_get_info((ctr_file_format)f, &fi) == CTR_OK; f++)
    k_formats[NFORMATS++] = (ctr_file_format)f;
  CHECK_MSG(NFORMATS >= 5, "the table has %zu formats", NFORMATS);
}

static float g_data[NX * NY * NZ];

static ctr_stack_info make_info(ctr_dtype dt) {
  const ctr_stack_info info = {CTR_STACK_INFO_VERSION, NX, NY, NZ, dt, {0, 0, 0}, {0, 0, 0}};
  return info;
}

/* A path of format f in the scratch directory: "<stem>.<first ending>", a
 * pattern for a stack of files, a dataset for HDF5. */
static const char *path_of(const ctr_file_format_info *fi, const char *stem) {
  char ext[16];
  snprintf(ext, sizeof ext, "%.*s", (int)strcspn(fi->extensions, " "), fi->extensions);
  char name[128];
  if (fi->stack_of_files) snprintf(name, sizeof name, "%s_%%03d%s", stem, ext);
  else if (fi->dataset_path) snprintf(name, sizeof name, "%s%s:/%s", stem, ext, stem);
  else snprintf(name, sizeof name, "%s%s", stem, ext);
  return P(name);
}

static int built(const ctr_file_format_info *fi) {
  return (ctr_features() & fi->feature) == fi->feature;
}

static void test_names_and_guesses(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    CHECK(fi.name && !strcmp(fi.name, ctr_format_name(k_formats[i])));
    ctr_file_format back = CTR_FORMAT_AUTO;
    CHECK_OK(ctr_format_parse(fi.name, &back));
    CHECK_MSG(back == k_formats[i], "%s parses back as %d", fi.name, (int)back);
    /* every ending is this format's */
    for (const char *e = fi.extensions; *e;) {
      const size_t n = strcspn(e, " ");
      char path[64];
      snprintf(path, sizeof path, fi.stack_of_files ? "d/x_%%04d%.*s" : "d/x%.*s", (int)n, e);
      CHECK_OK(ctr_format_guess(path, &back));
      CHECK_MSG(back == k_formats[i], "'%s' is guessed as %s, its row is %s", path,
                ctr_format_name(back), fi.name);
      e += n;
      e += strspn(e, " ");
    }
    CHECK_MSG(fi.extensions[0] != '\0', "%s has no ending", fi.name);
    /* what the executors rely on: a format many ranks write is resumable and
     * takes images in any order; a resumable one names its partial output */
    CHECK_MSG(!fi.many_ranks || (fi.resumable && !fi.in_order), "%s", fi.name);
    CHECK_MSG(!fi.resumable == !fi.partial, "%s: resumable %d, partial %s", fi.name,
              fi.resumable, fi.partial ? fi.partial : "(none)");
    CHECK_MSG(fi.dtypes & (1u << CTR_DTYPE_FLOAT32), "%s stores no float32", fi.name);
    CHECK_MSG(fi.title && *fi.title, "%s has no title", fi.name);
  }
  ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
  CHECK_FAILS(ctr_file_format_get_info(CTR_FORMAT_AUTO, &fi), CTR_E_INVALID_ARGUMENT,
              "CTR_FORMAT_AUTO");
  CHECK_FAILS(ctr_file_format_get_info((ctr_file_format)(NFORMATS + 1), &fi),
              CTR_E_INVALID_ARGUMENT, "expected raw, tiff");
  fi.version = 0;
  CHECK_FAILS(ctr_file_format_get_info(CTR_FORMAT_RAW, &fi), CTR_E_INVALID_ARGUMENT,
              "ctr_file_format_info");
  CHECK_FAILS(ctr_file_format_get_info(CTR_FORMAT_RAW, NULL), CTR_E_INVALID_ARGUMENT,
              "ctr_file_format_info");
}

/* Writes NZ images of dtype dt (image 1 first when out_of_order). */
static ctr_status write_stack_as(const char *path, ctr_dtype dt, int out_of_order,
                                 int overwrite) {
  const ctr_stack_info info = make_info(dt);
  ctr_stack_writer *w = NULL;
  ctr_status st = ctr_stack_create(path, CTR_FORMAT_AUTO, &info, overwrite, &w);
  if (st != CTR_OK) return st;
  const int64_t order[NZ] = {out_of_order ? 1 : 0, out_of_order ? 0 : 1, 2};
  for (int k = 0; k < NZ && st == CTR_OK; k++)
    st = ctr_stack_write(w, order[k], 1, CTR_DTYPE_FLOAT32, g_data + order[k] * NX * NY);
  if (st != CTR_OK) {
    ctr_stack_abort(w);
    return st;
  }
  return ctr_stack_commit(w);
}

static ctr_status write_stack(const char *path, ctr_dtype dt, int out_of_order) {
  return write_stack_as(path, dt, out_of_order, 0);
}

static void test_writers(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    if (!built(&fi)) {
      printf("%s: SKIPPED (not built)\n", fi.name);
      continue;
    }
    static const ctr_dtype dtypes[] = {CTR_DTYPE_FLOAT32, CTR_DTYPE_UINT16, CTR_DTYPE_FLOAT16};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
      char stem[32];
      snprintf(stem, sizeof stem, "dt%zu_%s", d, ctr_dtype_name(dtypes[d]));
      const ctr_status st = write_stack(path_of(&fi, stem), dtypes[d], 0);
      const int listed = (fi.dtypes >> dtypes[d]) & 1u;
      CHECK_MSG((st == CTR_OK) == listed, "%s %s: row says %d, writer gives %s (%s)", fi.name,
                ctr_dtype_name(dtypes[d]), listed, ctr_status_name(st), ctr_error_detail());
    }
    const ctr_status st = write_stack(path_of(&fi, "order"), CTR_DTYPE_FLOAT32, 1);
    CHECK_MSG((st != CTR_OK) == fi.in_order, "%s: in_order %d, out-of-order write gives %s",
              fi.name, fi.in_order, ctr_status_name(st));
  }
}

static void test_partials(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    if (!built(&fi)) continue;
    const char *path = path_of(&fi, "part");
    const ctr_stack_info info = make_info(CTR_DTYPE_FLOAT32);
    ctr_stack_writer *w = NULL;
    const ctr_status st = ctr__stack_create_partial(path, k_formats[i], &info, 0, NULL, &w);
    CHECK_MSG((st == CTR_OK) == fi.resumable, "%s: resumable %d, partial writer gives %s",
              fi.name, fi.resumable, ctr_status_name(st));
    char *name = ctr__stack_partial_name(path, k_formats[i]);
    CHECK_MSG(!name == !fi.resumable, "%s: partial name %s", fi.name, name ? name : "(none)");
    if (st != CTR_OK) {
      CHECK_MSG(strstr(ctr_error_detail(), path) != NULL, "%s: %s", fi.name, ctr_error_detail());
      free(name);
      continue;
    }
    CHECK_OK(ctr_stack_write(w, 0, NZ, CTR_DTYPE_FLOAT32, g_data));
    CHECK_OK(ctr__stack_flush(w));
    CHECK_MSG(name && exists(name), "%s: the partial '%s' (%s) is not there", fi.name,
              name ? name : "", fi.partial);
    ctr__stack_suspend(w);
    ctr__stack_remove_partial(path, k_formats[i], NZ);
    CHECK_MSG(name && !exists(name), "%s: the partial '%s' is left", fi.name, name ? name : "");
    free(name);
  }
}

/* needs_hint: a format that says it opens without a hint does, one that
 * needs one is refused without it and opens with it. */
static void test_needs_hint(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    if (!built(&fi)) continue;
    const char *path = path_of(&fi, "hint");
    CHECK_OK(write_stack(path, CTR_DTYPE_FLOAT32, 0));
    const ctr_stack_info hint = make_info(CTR_DTYPE_FLOAT32);
    ctr_stack_reader *r = NULL;
    const ctr_status st = ctr_stack_open(path, k_formats[i], NULL, 0, &r);
    CHECK_MSG((st == CTR_OK) == !fi.needs_hint, "%s: needs_hint %d, opened without one: %s",
              fi.name, fi.needs_hint, ctr_status_name(st));
    ctr_stack_close(r);
    r = NULL;
    CHECK_OK(ctr_stack_open(path, k_formats[i], &hint, 0, &r));
    ctr_stack_close(r);
  }
}

static void test_adds_to_file(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    /* (raw has no header to say which output it holds) */
    if (!built(&fi) || fi.stack_of_files || fi.needs_hint) continue;
    const char *first = path_of(&fi, "add"), *second = first;
    char other[512];
    if (fi.adds_to_file) { /* "add.h5:/add" then "add.h5:/more" */
      snprintf(other, sizeof other, "%.*s:/more", (int)(strrchr(first, ':') - first), first);
      second = other;
    }
    CHECK_OK(write_stack(first, CTR_DTYPE_FLOAT32, 0));
    CHECK_OK(write_stack_as(second, CTR_DTYPE_UINT16, 0, !fi.adds_to_file)); /* replaces it */
    ctr_stack_reader *r = NULL;
    CHECK_OK(ctr_stack_open(first, CTR_FORMAT_AUTO, NULL, 0, &r));
    if (!r) continue;
    const ctr_dtype kept = ctr_stack_reader_get_info(r)->dtype;
    CHECK_MSG((kept == CTR_DTYPE_FLOAT32) == fi.adds_to_file,
              "%s: adds_to_file %d, the first output is %s after the second", fi.name,
              fi.adds_to_file, ctr_dtype_name(kept));
    ctr_stack_close(r);
  }
}

/* The lists of formats that messages give (ctr__format_list): every format
 * with the capability once, one-file formats first, the wording messages
 * had before the list came from the table. */
static void test_lists(void) {
  static const struct {
    ctr__format_cap cap;
    const char *stem, *today;
  } k[] = {{CTR__CAP_RESUMABLE, NULL, "raw, nrrd, OME-Zarr or a TIFF stack pattern"},
           {CTR__CAP_MANY_RANKS, "vol", "raw, nrrd or a TIFF stack pattern such as "
                                        "'vol_%04d.tif'"},
           {CTR__CAP_ANY_ORDER, NULL, "raw, nrrd, HDF5, OME-Zarr or a TIFF stack pattern"}};
  for (size_t c = 0; c < sizeof k / sizeof k[0]; c++) {
    char list[256];
    ctr__format_list(k[c].cap, k[c].stem, list, sizeof list);
    CHECK_MSG(!strcmp(list, k[c].today), "capability %d: '%s'", (int)k[c].cap, list);
    int with = 0, items = 1;
    for (size_t i = 0; i < NFORMATS; i++) {
      ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
      CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
      with += k[c].cap == CTR__CAP_RESUMABLE    ? fi.resumable
              : k[c].cap == CTR__CAP_MANY_RANKS ? fi.many_ranks
                                                : !fi.in_order;
    }
    for (const char *p = list; (p = strpbrk(p, ",o")) != NULL; p++)
      items += *p == ',' || !strncmp(p - 1, " or ", 4);
    CHECK_MSG(items == with, "capability %d: %d formats have it, '%s' lists %d", (int)k[c].cap,
              with, list, items);
  }
  char small[12];
  ctr__format_list(CTR__CAP_RESUMABLE, NULL, small, sizeof small);
  CHECK(strlen(small) == sizeof small - 1 && !strncmp(small, "raw, nrrd", 9));
}

/* The files an output of format fi at `path` consists of (a stack's three,
 * a detached NRRD's data file, an HDF5 dataset's file, an OME-Zarr
 * directory's metadata and first chunk), into names[]. */
static int files_of(const ctr_file_format_info *fi, const char *path, char names[4][600]) {
  int n = 0;
  if (!strcmp(fi->name, "zarr")) {
    snprintf(names[n++], 600, "%s/zarr.json", path);
    snprintf(names[n++], 600, "%s/0/zarr.json", path);
    snprintf(names[n++], 600, "%s/0/c/0/0/0", path);
  } else if (fi->stack_of_files) {
    for (int k = 0; k < NZ; k++) snprintf(names[n++], 600, path, k);
  } else if (fi->dataset_path) {
    snprintf(names[n++], 600, "%.*s", (int)(strrchr(path, ':') - path), path);
  } else {
    snprintf(names[n++], 600, "%s", path);
  }
  return n;
}

/* Keeps copies of an output's files; 1 if they are all as they were. */
static int unchanged(int n, char names[4][600], const char *tag) {
  int same = 1;
  for (int k = 0; k < n; k++) {
    char copy[700], flat[600]; /* beside the output (a file inside a directory: flattened) */
    snprintf(flat, sizeof flat, "%s", names[k] + strlen(g_dir) + 1);
    for (char *p = flat; *p; p++)
      if (*p == '/') *p = '_';
    snprintf(copy, sizeof copy, "%s/%s.%s", g_dir, flat, tag);
    if (!exists(copy)) { /* the first call keeps them */
      long long len;
      unsigned char *b = read_all(names[k], &len);
      FILE *f = b ? fopen(copy, "wb") : NULL;
      same = f && fwrite(b, 1, (size_t)len, f) == (size_t)len && same;
      if (f) fclose(f);
      free(b);
    } else {
      same = same_files(names[k], copy) && same;
    }
  }
  return same;
}

/* Outputs are never replaced unless asked: an existing one is refused at
 * create (field "overwrite", value the path), its files byte-identical and
 * no temporary left; overwrite replaces it. One that appears while a writer
 * writes (another writer's commit) is kept, and the late commit leaves
 * nothing of its own. */
static void test_overwrite(void) {
  for (size_t i = 0; i < NFORMATS; i++) {
    ctr_file_format_info fi = CTR_FILE_FORMAT_INFO_INIT;
    CHECK_OK(ctr_file_format_get_info(k_formats[i], &fi));
    if (!built(&fi)) continue;
    char names[4][600];
    const char *path = path_of(&fi, "ow");
    const int n = files_of(&fi, path, names);
    CHECK_OK(ctr_stack_check_output(path, k_formats[i], 0));
    CHECK_OK(write_stack(path, CTR_DTYPE_FLOAT32, 0));
    CHECK(unchanged(n, names, "kept"));
    CHECK_FAILS(ctr_stack_check_output(path, CTR_FORMAT_AUTO, 0), CTR_E_INVALID_ARGUMENT,
                "set overwrite to replace it");
    CHECK_OK(ctr_stack_check_output(path, CTR_FORMAT_AUTO, 1));
    ctr_stack_writer *w = NULL;
    const ctr_stack_info info = make_info(CTR_DTYPE_UINT16);
    CHECK_FAILS(ctr_stack_create(path, CTR_FORMAT_AUTO, &info, 0, &w), CTR_E_INVALID_ARGUMENT,
                "exists and is kept");
    CHECK_MSG(!strcmp(ctr_error_get_field(), "overwrite") && !strcmp(ctr_error_get_value(), path),
              "%s: field '%s', value '%s'", fi.name, ctr_error_get_field(), ctr_error_get_value());
    CHECK_MSG(!w && unchanged(n, names, "kept") && count_temporaries() == 0,
              "%s: the refused create changed the output or left a temporary", fi.name);
    CHECK_OK(write_stack_as(path, CTR_DTYPE_UINT16, 0, 1));
    CHECK_MSG(!unchanged(n, names, "kept"), "%s: overwrite did not replace the output", fi.name);

    /* two writers of one new output: the second commit finds the first's */
    const char *late = path_of(&fi, "late");
    ctr_stack_writer *a = NULL, *b = NULL;
    CHECK_OK(ctr_stack_create(late, CTR_FORMAT_AUTO, &info, 0, &a));
    CHECK_OK(ctr_stack_create(late, CTR_FORMAT_AUTO, &info, 0, &b));
    if (!a || !b) {
      ctr_stack_abort(a);
      ctr_stack_abort(b);
      continue;
    }
    for (int k = 0; k < NZ; k++) {
      CHECK_OK(ctr_stack_write(a, k, 1, CTR_DTYPE_FLOAT32, g_data + k * NX * NY));
      CHECK_OK(ctr_stack_write(b, k, 1, CTR_DTYPE_FLOAT32, g_data));
    }
    CHECK_OK(ctr_stack_commit(a));
    const int m = files_of(&fi, late, names);
    CHECK(unchanged(m, names, "first"));
    CHECK_FAILS(ctr_stack_commit(b), CTR_E_INVALID_ARGUMENT, "appeared while the output was");
    CHECK_MSG(!strcmp(ctr_error_get_field(), "overwrite"), "%s: field '%s'", fi.name,
              ctr_error_get_field());
    CHECK_MSG(unchanged(m, names, "first") && count_temporaries() == 0,
              "%s: the late commit changed the first output or left a temporary", fi.name);
  }
  /* one file of any kind */
  CHECK_OK(ctr_file_check_output(P("none.png"), 0));
  CHECK_FAILS(ctr_file_check_output(path_of(&(ctr_file_format_info){CTR_FILE_FORMAT_INFO_VERSION,
                                    "raw", ".raw", 0, 0, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}, "ow"), 0),
              CTR_E_INVALID_ARGUMENT, "exists and is kept");
}

int main(void) {
  if (!scratch_open("ctr_test_io_formats")) return 1;
  for (size_t k = 0; k < sizeof g_data / sizeof g_data[0]; k++) g_data[k] = (float)(k % 17);
  list_formats();
  test_names_and_guesses();
  test_writers();
  test_partials();
  test_needs_hint();
  test_adds_to_file();
  test_lists();
  test_overwrite();
  scratch_close();
  return th_finish("test_io_formats");
}

/* The tool's words for library messages (cli/cli_fields.c, compiled into
 * this test): the error's field (ctr_error_get_field) and the fields and
 * constants a detail names become the tool's flags and values, through the
 * table keyed by field; the rules for lists of members ("row0, nrows"),
 * "set FIELD" of a switch, "FIELD = CTR_X", a leading API call, fields
 * without a row. Every row renders as its flag. And the library's side: the
 * field a failed call reports. */
#include "harness.h"

#include "../cli/cli.h"

static const char *words(const char *text, const char *field) {
  static char buf[1024];
  return cli_library_text(text, field, buf, sizeof buf);
}

#define CHECK_WORDS(text, field, want)                                                   \
  do {                                                                                   \
    const char *got_ = words(text, field);                                               \
    const char *f_ = (field);                                                            \
    CHECK_MSG(!strcmp(got_, want), "'%s' (field %s): '%s', expected '%s'", text,         \
              f_ ? f_ : "none", got_, want);                                             \
  } while (0)

static void test_rules(void) {
  const char *it = "ctr_iterate_options.iterations";
  CHECK_WORDS("ctr_iterate_options.iterations is 0: expected 1 .. 1e9", it,
              "--iterations is 0: expected 1 .. 1e9");
  /* a list of members: one flag once, two flags each */
  CHECK_WORDS("ctr_corrections.bin_x, bin_y = 3, 3: expected 1 .. 64", "ctr_corrections.bin_x",
              "--bin = 3, 3: expected 1 .. 64");
  CHECK_WORDS("ctr_fbp_stream_options.row0, nrows = 5, 9: the input has 2 rows",
              "ctr_fbp_stream_options.row0", "--rows = 5, 9: the input has 2 rows");
  CHECK_WORDS("ctr_fbp_stream_options.out_scale, out_offset = 0, 1: expected", NULL,
              "--out-scale, --out-offset = 0, 1: expected");
  /* a member named alone in the error's struct; an English word is not one */
  CHECK_WORDS("voxel 1, pixel_size 0: expected a pixel_size of 1e-30 .. 1e9 mm",
              "ctr_parallel_params.pixel_size",
              "voxel 1, --pixel-size 0: expected a --pixel-size of 1e-30 .. 1e9 mm");
  CHECK_WORDS("cannot resume: no journal 'a_b.journal'; run without "
              "ctr_fdk_stream_options.resume to start over", "ctr_fdk_stream_options.resume",
              "cannot resume: no journal 'a_b.journal'; run without --resume to start over");
  CHECK_WORDS("'j' holds an interrupted run: set ctr_fbp_stream_options.resume to continue it",
              "ctr_fbp_stream_options.resume", "'j' holds an interrupted run: add --resume to "
              "continue it");
  CHECK_WORDS("no usable GPU (use the CPU: ctr_context_options.device = CTR_DEVICE_CPU)",
              "ctr_context_options.device", "no usable GPU (use the CPU: --device cpu)");
  CHECK_WORDS("ctr_fbp: ctr_fbp_options.cutoff = 2, expected 0 < cutoff <= 1",
              "ctr_fbp_options.cutoff", "--cutoff = 2, expected 0 < cutoff <= 1");
  CHECK_WORDS("'r.checkpoint' holds the state of an earlier run: set ctr_iterate_options.resume "
              "to continue it, or delete 'r.checkpoint' to start over",
              "ctr_iterate_options.resume", "'r.checkpoint' holds the state of an earlier run: "
              "add --resume to continue it, or delete 'r.checkpoint' to start over");
  CHECK_WORDS("ctr_iterate_options.resume needs ctr_iterate_options.checkpoint",
              "ctr_iterate_options.resume", "--resume needs --checkpoint");
  CHECK_WORDS("apart, as CTR_CENTER_CORRELATION needs: use CTR_CENTER_VO", NULL,
              "apart, as --center-method correlation needs: use --center-method vo");
  CHECK_WORDS("ctr_iterate_options.algorithm is 9: expected CTR_ITERATE_SIRT, CTR_ITERATE_CGLS, "
              "CTR_ITERATE_OS_SART or CTR_ITERATE_FISTA_TV", "ctr_iterate_options.algorithm",
              "--algorithm is 9: expected sirt, cgls, os-sart or fista-tv");
  CHECK_WORDS("use an iterative solver instead (ctr_iterate)", NULL,
              "use an iterative solver instead (ctrecon iterate)");
  /* log messages (no field); unique fields; fields without a row */
  CHECK_WORDS("lower gpu_budget to plan for less", NULL, "lower --gpu-mem to plan for less");
  CHECK_WORDS("ctr_parallel_params.nbins, nangles = 3, 4", NULL, "nbins, nangles = 3, 4");
  CHECK_WORDS("rank 1 of 2 (h): ctr_fbp_stream_memory: ctr_fbp_stream_options.read_ahead = 17",
              "ctr_fbp_stream_options.read_ahead", "rank 1 of 2 (h): --read-ahead = 17");
  CHECK_WORDS("", NULL, "");
  char small[8];
  cli_library_text("ctr_iterate_options.iterations is 0", it, small, sizeof small);
  CHECK(strlen(small) == sizeof small - 1 && !strncmp(small, "--itera", 7));
}

static void test_every_row(void) {
  int n = 0;
  for (const cli_field *f = cli_fields(); f->field; f++, n++) {
    char text[256];
    snprintf(text, sizeof text, "%s is 7", f->field);
    CHECK_MSG(!strncmp(words(text, f->field), f->flag, strlen(f->flag)), "%s: '%s'", f->field,
              words(text, f->field));
    CHECK(cli_field_find(f->field) == f);
  }
  CHECK(n > 40);
  CHECK(cli_field_find("ctr_iterate_options.no_such_member") == NULL);
}

/* The library names the field of a failure; an error about none clears it. */
static void test_library_field(void) {
  ctr_tuning t;
  CHECK(ctr_tuning_init(&t, CTR_TUNING_VERSION) == CTR_OK);
  t.bp_regs = 63;
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  co.tuning = &t;
  ctr_context *ctx = NULL;
  CHECK(ctr_context_create(&co, &ctx) == CTR_E_INVALID_ARGUMENT);
  CHECK_MSG(!strcmp(ctr_error_get_field(), "ctr_tuning.bp_regs"), "'%s'", ctr_error_get_field());
  /* a field without a row: the member alone */
  CHECK(!strncmp(words(ctr_error_detail(), ctr_error_get_field()), "bp_regs is 63", 13));
  ctr_dtype d;
  CHECK(ctr_dtype_parse("int7", &d) != CTR_OK);
  CHECK(!*ctr_error_get_field());
}

int main(void) {
  test_rules();
  test_every_row();
  test_library_field();
  return th_finish("test_cli_fields");
}

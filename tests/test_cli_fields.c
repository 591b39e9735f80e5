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
  /* the one field of every writer: a switch named alone */
  CHECK_WORDS("'v.nrrd' exists and is kept: set overwrite to replace it, or write the output to "
              "another name", "overwrite", "'v.nrrd' exists and is kept: add --force to replace "
              "it, or write the output to another name");
  /* log messages (no field); unique fields; fields without a row */
  CHECK_WORDS("lower gpu_budget to plan for less", NULL, "lower --gpu-budget to plan for less");
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
  CHECK_MSG(!strcmp(ctr_error_get_value(), "63"), "'%s'", ctr_error_get_value());
  /* a field without a row: the member alone */
  CHECK(!strncmp(words(ctr_error_detail(), ctr_error_get_field()), "bp_regs is 63", 13));
  ctr_dtype d;
  CHECK(ctr_dtype_parse("int7", &d) != CTR_OK);
  CHECK(!*ctr_error_get_field());
  CHECK(!*ctr_error_get_value());
}

/* The value of the field an error is about, as given (ctr_error_get_value):
 * integers, reals in their shortest form, budgets in bytes; none for an
 * error about a pair of members; cleared with the field. */
static void test_library_value(void) {
  ctr_context_options co = CTR_CONTEXT_OPTIONS_INIT;
  co.device = CTR_DEVICE_CPU;
  ctr_context *ctx = NULL;
  CHECK(ctr_context_create(&co, &ctx) == CTR_OK);
  ctr_parallel_geometry *g = NULL;
  ctr_parallel_params p = CTR_PARALLEL_PARAMS_INIT;
  p.nbins = 16;
  p.nangles = 12;
  p.voxel = 1e7;
  CHECK(ctr_parallel_create(&p, &g) == CTR_E_GEOMETRY);
  CHECK(!strcmp(ctr_error_get_field(), "ctr_parallel_params.voxel"));
  CHECK_MSG(!strcmp(ctr_error_get_value(), "1e+07"), "'%s'", ctr_error_get_value());
  p.voxel = 0;
  p.pixel_size = 0.1;
  p.angle_range_deg = 0;
  CHECK(ctr_parallel_create(&p, &g) == CTR_E_GEOMETRY);
  CHECK(!strcmp(ctr_error_get_field(), "ctr_parallel_params.angle_range_deg"));
  CHECK_MSG(!strcmp(ctr_error_get_value(), "0"), "'%s'", ctr_error_get_value());
  ctr_corrections c = CTR_CORRECTIONS_INIT;
  c.stripe_sigma = -0.1;
  p.angle_range_deg = 180;
  CHECK(ctr_parallel_create(&p, &g) == CTR_OK);
  float sino[16 * 12] = {0};
  CHECK(ctr_sinogram_remove_stripes(ctx, &c, 16, 12, 1, sino) == CTR_E_INVALID_ARGUMENT);
  CHECK(!strcmp(ctr_error_get_field(), "ctr_corrections.stripe_sigma"));
  CHECK_MSG(!strcmp(ctr_error_get_value(), "-0.1"), "'%s'", ctr_error_get_value());
  c = (ctr_corrections)CTR_CORRECTIONS_INIT;
  c.bin_x = 99; /* bin_x, bin_y: a pair, no one value */
  CHECK(ctr_sinogram_remove_stripes(ctx, &c, 16, 12, 1, sino) == CTR_E_INVALID_ARGUMENT);
  CHECK(!strcmp(ctr_error_get_field(), "ctr_corrections.bin_x"));
  CHECK(!*ctr_error_get_value());
  /* a budget, in bytes */
  ctr_fdk_plan_request req = CTR_FDK_PLAN_REQUEST_INIT;
  req.host_budget = 1000;
  ctr_geometry *cg = NULL;
  ctr_circular_params cp = CTR_CIRCULAR_PARAMS_INIT;
  ctr_volume_geometry vol = {16, 16, 16, 1, 1, 1, 0, 0, 0};
  cp.sid = 100;
  cp.sdd = 150;
  cp.nu = cp.nv = 16;
  cp.nviews = 8;
  ctr_fdk_plan plan = CTR_FDK_PLAN_INIT;
  if (ctr_geometry_create_circular(&cp, &vol, &cg) == CTR_OK) {
    CHECK(ctr_fdk_plan_compute(cg, &req, &plan) == CTR_E_OUT_OF_MEMORY);
    CHECK(!strcmp(ctr_error_get_field(), "host_budget"));
    CHECK_MSG(!strcmp(ctr_error_get_value(), "1000"), "'%s'", ctr_error_get_value());
  } else {
    CHECK_MSG(0, "geometry: %s", ctr_error_detail());
  }
  ctr_error_clear();
  CHECK(!*ctr_error_get_field() && !*ctr_error_get_value() && !*ctr_error_detail());
  ctr_geometry_free(cg);
  ctr_parallel_free(g);
  ctr_context_free(ctx);
}

int main(void) {
  test_rules();
  test_every_row();
  test_library_field();
  test_library_value();
  return th_finish("test_cli_fields");
}

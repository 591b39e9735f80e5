/* `ctrecon tune`: the autotuner on request (docs/tuning.md, "Autotuning"):
 * tune a kernel family for a problem (fdk: a geometry file; pet: a lattice
 * and views), rerun it (--force), print (--list) or clear (--clear) the
 * cache of results. Public API only: ctr_tune_fdk, ctr_tune_pet,
 * ctr_tune_cache_list, ctr_tune_cache_clear. */
#include "cli.h"
#include "cli_pet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_tune = {
    "tune",
    "autotune the GPU kernels' launch parameters for a problem; list or clear the cache",
    "ctrecon tune fdk|pet [options] | ctrecon tune --list | ctrecon tune --clear FAMILY|all",
    "Times the candidate launch parameters of a kernel family on this GPU for a\n"
    "problem class and caches the fastest (kernels.json in the tuning cache\n"
    "directory: --tune cache_dir=DIR, else $XDG_CACHE_HOME/ctrecon, else\n"
    "~/.cache/ctrecon). FDK and PET runs do the same on first use of a class\n"
    "unless --tune tune=off. This command searches ahead of the runs (for\n"
    "FDK, the class of a run holding the whole volume on the GPU), or again\n"
    "(--force).\n"
    "Today's defaults are always timed and kept unless another candidate is\n"
    "faster by more than 3 %; a parameter set with --tune KEY=VALUE is never\n"
    "tuned; the search stops after 8 s with the best so far.\n\n"
    "families:\n"
    "  fdk   cone-beam backprojection: bp_slices x bp_block of the kernel that\n"
    "        --interp selects (--geometry required)\n"
    "  pet   the TOF-PET projectors: pet_z x pet_block x pet_split (--lattice,\n"
    "        --views, --voxel, --tof-ps: the system; the defaults of pet recon)\n"
    "The parallel-beam kernel choice (fbp --bp-kernel auto) is tuned by its\n"
    "first run and kept in fbp-kernels.json beside (--list shows it, --clear\n"
    "fbp-kernel removes it). The iterative projectors have no launch parameter.\n"
    "Progress: a line per candidate timed, then the table and the choice.",
    "  ctrecon tune fdk --geometry geom.json --interp exact\n"
    "  ctrecon tune pet --lattice 144x144x48 --views 40x3 --force\n"
    "  ctrecon tune --list\n"
    "  ctrecon tune --clear conebeam-bp\n"
    "  ctrecon tune --clear all --list\n",
};

typedef struct tune_args {
  const char *geometry, *clear;
  ctr_fdk_options fdk;
  int64_t lattice[3];
  int views[2];
  double voxel, tof_ps;
  int force, list, clear_given;
  cli_common common;
} tune_args;

/* --clear FAMILY|all. */
static int parse_clear(const char *cmd, const char *name, const char *value, void *dst) {
  tune_args *a = dst;
  a->clear_given = 1;
  if (value && strcmp(value, "all") && strcmp(value, "conebeam-bp") &&
      strcmp(value, "pet-projector") && strcmp(value, "fbp-kernel"))
    return cli_usage_error(cmd, "%s '%s': expected all, conebeam-bp, pet-projector or "
                           "fbp-kernel", name, value);
  a->clear = value && strcmp(value, "all") ? value : NULL;
  return 0;
}

static void print_report(const cli_session *s, const ctr_tune_report *r) {
  if (r->note[0]) {
    cli_info(s, "%s: %s", r->family[0] ? r->family : "tune", r->note);
    return;
  }
  cli_info(s, "%s on %s, class %s", r->family, r->gpu, r->problem);
  if (r->from_cache) {
    cli_info(s, "cached: %s (%.4f ms); --force times it again", r->params, r->ms);
    return;
  }
  for (int i = 0; i < r->ncandidates; i++)
    cli_info(s, "  %3d  %-40s %9.4f ms%s%s", i + 1, r->candidates[i].params, r->candidates[i].ms,
             i == 0 ? "  (default)" : "", i == r->winner ? "  <- chosen" : "");
  cli_info(s, "chosen %s: %.4f ms, default %.4f ms (%d of %d candidates timed in %.2f s%s)",
           r->params, r->ms, r->default_ms, r->ncandidates, r->total, r->seconds,
           r->budget_hit ? ", time budget spent" : "");
}

static int tune_fdk(const tune_args *a, cli_session *s, ctr_context *ctx, ctr_tune_report *r) {
  if (!a->geometry) return cli_usage_error("tune", "tune fdk: missing --geometry FILE");
  ctr_geometry *g = NULL;
  ctr_status st = ctr_geometry_load_json(a->geometry, &g);
  if (st != CTR_OK) return cli_fail_file("tune", st, a->geometry);
  cli_info(s, "tuning cone-beam backprojection for '%s'...", a->geometry);
  st = ctr_tune_fdk(ctx, g, &a->fdk, a->force, r);
  ctr_geometry_free(g);
  return st == CTR_OK ? 0 : cli_fail("tune", st);
}

static int tune_pet(const tune_args *a, cli_session *s, ctr_context *ctx, ctr_tune_report *r) {
  ctr_pet_params p = (ctr_pet_params)CTR_PET_PARAMS_INIT;
  ctr_pet_kernel_params k = (ctr_pet_kernel_params)CTR_PET_KERNEL_PARAMS_INIT;
  if (a->lattice[0]) p.nx = a->lattice[0], p.ny = a->lattice[1], p.nz = a->lattice[2];
  if (a->views[0]) p.n_azimuth = a->views[0], p.n_copolar = a->views[1];
  if (a->voxel > 0) p.voxel = a->voxel;
  if (a->tof_ps > 0) k.tof_fwhm_ps = a->tof_ps;
  ctr_pet_system *sys = NULL;
  ctr_status st = ctr_pet_system_create(&p, &k, &sys);
  if (st != CTR_OK) return cli_fail("tune", st);
  cli_info(s, "tuning the PET projectors for %lldx%lldx%lld, %dx%d views...", (long long)p.nx,
           (long long)p.ny, (long long)p.nz, p.n_azimuth, p.n_copolar);
  st = ctr_tune_pet(ctx, sys, a->force, r);
  ctr_pet_system_free(sys);
  return st == CTR_OK ? 0 : cli_fail("tune", st);
}

static int list_or_clear(const tune_args *a, ctr_context *ctx) {
  if (a->clear_given) {
    int n = 0;
    const ctr_status st = ctr_tune_cache_clear(ctx, a->clear, &n);
    if (st != CTR_OK) return cli_fail("tune", st);
    printf("removed %d cached result%s (%s)\n", n, n == 1 ? "" : "s", a->clear ? a->clear : "all");
  }
  if (a->list) {
    size_t need = 0;
    ctr_status st = ctr_tune_cache_list(ctx, NULL, 0, &need);
    char *text = st == CTR_OK ? malloc(need) : NULL;
    if (st == CTR_OK && !text) return cli_error("tune", CLI_EXIT_RUNTIME, "out of memory");
    if (st == CTR_OK) st = ctr_tune_cache_list(ctx, text, need, NULL);
    if (st == CTR_OK) fputs(text, stdout);
    free(text);
    if (st != CTR_OK) return cli_fail("tune", st);
  }
  return 0;
}

int cmd_tune(int argc, char **argv) {
  tune_args a;
  memset(&a, 0, sizeof a);
  a.fdk = (ctr_fdk_options)CTR_FDK_OPTIONS_INIT;
  a.common = (cli_common)CLI_COMMON_INIT;
  const cli_opt opts[] = {
      {"--geometry", "FILE", "fdk: the geometry file of the runs to tune for (required for fdk)",
       cli_parse_string, &a.geometry, NULL},
      {"--interp", "MODE",
       "fdk: the interpolation of those runs, auto, texture, exact or precise (default auto: "
       "texture)", cli_parse_interp, &a.fdk.interp, NULL},
      {"--lattice", "NXxNYxNZ", "pet: the image lattice (default 144x144x48)",
       pet_parse_lattice, a.lattice, NULL},
      {"--views", "NAZIMUTHxNCOPOLAR", "pet: the views (default 40x3)", pet_parse_views, a.views,
       NULL},
      {"--voxel", "MM", "pet: the voxel size (default 4)", cli_parse_positive, &a.voxel, NULL},
      {"--tof-ps", "PS", "pet: the timing resolution (default 400)", cli_parse_positive,
       &a.tof_ps, NULL},
      {"--force", NULL, "time the candidates again even if the class is cached (default: use "
       "the cache)", cli_set_flag, &a.force, NULL},
      {"--list", NULL, "print the cached results (after --clear when both are given)",
       cli_set_flag, &a.list, NULL},
      {"--clear", "FAMILY|all", "remove the cached results of FAMILY (conebeam-bp, "
       "pet-projector, fbp-kernel) or all of them (default: keep them)", parse_clear, &a, NULL},
      CLI_COMMON_OPTIONS(&a.common),
      {0},
  };
  /* the family is the first word, when one is given */
  const char *family = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
  int rc = family ? cli_parse(&cli_cmd_tune, opts, argc - 1, argv + 1)
                  : cli_parse(&cli_cmd_tune, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  if (family && strcmp(family, "fdk") && strcmp(family, "pet"))
    return cli_usage_error("tune", "unknown family '%s': expected fdk or pet", family);
  if (!family && !a.list && !a.clear_given)
    return cli_usage_error("tune", "nothing to do: give a family (fdk or pet), --list or --clear");
  cli_session s;
  ctr_context *ctx = NULL;
  memset(&s, 0, sizeof s);
  rc = cli_context_create(&s, "tune", &a.common, &ctx);
  s.debug_log = !a.common.quiet; /* the candidates' lines as they are timed */
  if (!rc) rc = list_or_clear(&a, ctx);
  if (!rc && family) {
    ctr_tune_report *r = malloc(sizeof *r);
    if (!r || ctr_tune_report_init(r, CTR_TUNE_REPORT_VERSION) != CTR_OK)
      rc = cli_error("tune", CLI_EXIT_RUNTIME, "out of memory");
    if (!rc) rc = !strcmp(family, "fdk") ? tune_fdk(&a, &s, ctx, r) : tune_pet(&a, &s, ctx, r);
    if (!rc) print_report(&s, r);
    free(r);
  }
  ctr_context_free(ctx);
  return rc;
}

/* `ctrecon pet`: TOF-PET DIRECT reconstruction (Matej et al. 2009; Ha et al.
 * 2013). Dispatches to `pet simulate` (cmd_pet_simulate.c), `pet recon`
 * (cmd_pet_recon.c) and `pet metrics` (here); their shared option parsers and
 * helpers are in cli_pet.c. */
#include "cli_pet.h"
#include "cmd_pet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_pet = {
    "pet",
    "TOF-PET DIRECT: simulate histo-images, reconstruct (RAMLA/OSEM/MLEM), CRC and noise",
    "ctrecon pet simulate|recon|metrics [options]",
    "Time-of-flight PET reconstruction in the DIRECT form (Matej et al. 2009;\n"
    "docs/pet.md): events are grouped into views (azimuth x co-polar angle\n"
    "intervals) and deposited into one histo-image per view on the image\n"
    "lattice; projectors are per-view convolutions with spatially variant\n"
    "system-response kernels (Ha et al. 2013).\n\n"
    "subcommands:\n"
    "  simulate   list-mode simulation of a phantom into a histo-image file\n"
    "  recon      reconstruct an image from a histo-image file (block-RAMLA, OSEM,\n"
    "             MLEM), optionally with CRC/noise per iteration and a plot\n"
    "  metrics    contrast recovery (per sphere) and noise of a reconstructed image\n\n"
    "'ctrecon pet <subcommand> --help' lists the options of each.",
    "  ctrecon pet simulate --out data.json --events 2e7\n"
    "  ctrecon pet recon --data data.json --out image.nrrd --iterations 10 \\\n"
    "      --metrics crc.csv --plot crc.png\n"
    "  ctrecon pet metrics --image image.nrrd\n"
    "  ctrecon demo --pet\n",
};

const cli_command cli_cmd_pet_metrics = {
    "pet metrics",
    "contrast recovery and noise of a reconstructed PET image",
    "ctrecon pet metrics --image FILE [--phantom spheres] [--contrast C] [--lattice NXxNYxNZ] "
    "[--voxel MM]",
    "Contrast recovery coefficient (CRC) of every sphere of the phantom and the\n"
    "noise of the image, as Ha et al. 2013 (section 6.1) define them. For each\n"
    "sphere, CRC = ((p_s - p_b) / p_b) / c with p_s the mean in a disc of the\n"
    "sphere's diameter on the slice nearest its centre, p_b the mean in the\n"
    "annulus of inner diameter (diameter + 14 mm), 8 mm thick, and c = sphere /\n"
    "background - 1; noise = standard deviation / mean in a 50 mm disc at the\n"
    "centre of the central slice. Pixels count with the fraction of their area\n"
    "inside an ROI. The lattice and voxel size come from the image file (NRRD\n"
    "keeps both); a raw file needs --lattice and --voxel.",
    "  ctrecon pet metrics --image image.nrrd\n"
    "  ctrecon pet metrics --image image.raw --lattice 144x144x48 --voxel 4 --contrast 8\n",
};

/* ---- pet metrics ---------------------------------------------------------------- */

int cmd_pet_metrics(int argc, char **argv) {
  const char *cmd = "pet metrics", *image = NULL;
  pet_phantom_kind kind = PET_PHANTOM_SPHERES;
  double contrast = 4.0, voxel = 0.0;
  int64_t lat[3] = {0, 0, 0};
  int lattice_given = 0, voxel_given = 0;
  const cli_opt opts[] = {
      {"--image", "FILE", "reconstructed image: {titles}; raw as float32 (required)",
       cli_parse_string, &image, NULL},
      {"--phantom", "spheres", "phantom whose spheres are measured (default spheres: Ha et al.'s "
       "six 10 mm spheres at 75 mm)", pet_parse_phantom, &kind, NULL},
      {"--contrast", "C", "sphere activity / background of the phantom (default 4)",
       cli_parse_positive, &contrast, NULL},
      {"--lattice", "NXxNYxNZ", "image size; required for raw, checked otherwise (default: from "
       "the file)", pet_parse_lattice, lat, &lattice_given},
      {"--voxel", "MM", "voxel size (default: the file's spacing; required when it has none)",
       cli_parse_positive, &voxel, &voxel_given},
      {0},
  };
  int rc = cli_parse(&cli_cmd_pet_metrics, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  rc = cli_require(cmd, opts, "--image", image);
  if (rc) return rc;
  if (kind != PET_PHANTOM_SPHERES)
    return cli_usage_error(cmd, "--phantom %s: CRC needs spheres (--phantom spheres)",
                           pet_phantom_name(kind));
  ctr_file_format fmt;
  rc = cli_resolve_format(cmd, "--image", NULL, image, CTR_FORMAT_AUTO, &fmt);
  if (rc) return rc;
  const int raw = cli_format_needs_hint(fmt); /* no sizes in the file */
  if (raw && !lattice_given)
    return cli_usage_error(cmd, "--image '%s' is %s: give --lattice NXxNYxNZ (and --voxel MM)",
                           image, ctr_format_name(fmt));
  if (raw && (rc = pet_check_raw_size(cmd, "--image", image, lat[0], lat[1],
                                                        lat[2])))
    return rc;
  ctr_stack_info hint = CTR_STACK_INFO_INIT, info = CTR_STACK_INFO_INIT;
  hint.width = lat[0];
  hint.height = lat[1];
  hint.count = lat[2];
  hint.dtype = CTR_DTYPE_FLOAT32;
  void *data = NULL;
  ctr_status st = ctr_stack_load(image, fmt, lattice_given ? &hint : NULL, CTR_DTYPE_FLOAT32,
                                 &info, &data);
  if (st != CTR_OK) return cli_fail_file(cmd, st, image);
  if (lattice_given && (info.width != lat[0] || info.height != lat[1] || info.count != lat[2])) {
    free(data);
    return cli_error(cmd, CLI_EXIT_INPUT, "'%s' holds %lld x %lld x %lld voxels, --lattice says "
                     "%lld x %lld x %lld", image, (long long)info.width, (long long)info.height,
                     (long long)info.count, (long long)lat[0], (long long)lat[1],
                     (long long)lat[2]);
  }
  ctr_pet_params p = CTR_PET_PARAMS_INIT;
  p.nx = info.width;
  p.ny = info.height;
  p.nz = info.count;
  if (voxel_given) {
    p.voxel = voxel;
  } else if (info.spacing[0] > 0) {
    p.voxel = info.spacing[0];
    if (fabs(info.spacing[1] - p.voxel) > 1e-6 * p.voxel ||
        fabs(info.spacing[2] - p.voxel) > 1e-6 * p.voxel)
      cli_warn(cmd, "'%s' has spacing %g x %g x %g mm: PET voxels are cubic, using %g mm", image,
               info.spacing[0], info.spacing[1], info.spacing[2], p.voxel);
  } else {
    free(data);
    return cli_usage_error(cmd, "'%s' carries no voxel size: give --voxel MM", image);
  }
  ctr_pet_phantom ph;
  pet_make_phantom(kind, contrast, &ph);
  ctr_pet_metrics m = CTR_PET_METRICS_INIT;
  st = ctr_pet_metrics_compute(&p, &ph, data, &m);
  free(data);
  if (st != CTR_OK) return cli_fail_file(cmd, st, image);
  printf("%s: %lld x %lld x %lld voxels of %g mm, phantom %s (contrast %g)\n", image,
         (long long)p.nx, (long long)p.ny, (long long)p.nz, p.voxel, pet_phantom_name(kind),
         contrast);
  printf("sphere     x (mm)     y (mm)     z (mm)  diameter      CRC\n");
  for (int s = 0; s < m.nspheres; s++)
    printf("%6d %10.1f %10.1f %10.1f %9.1f %8.4f\n", s + 1, ph.spheres[s].x, ph.spheres[s].y,
           ph.spheres[s].z, ph.spheres[s].diameter, m.crc_sphere[s]);
  printf("mean CRC %.4f\n", m.crc);
  printf("noise %.3f %% (standard deviation / mean in the 50 mm central ROI; mean %.6g)\n",
         100.0 * m.noise, m.background_mean);
  return 0;
}

/* ---- Dispatch ------------------------------------------------------------------- */

int cmd_pet(int argc, char **argv) {
  if (argc < 2) return cli_usage_error("pet", "missing subcommand: simulate, recon or metrics");
  const char *sub = argv[1];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
    cli_print_help(&cli_cmd_pet, NULL);
    return 0;
  }
  if (!strcmp(sub, "simulate")) return cmd_pet_simulate(argc - 1, argv + 1);
  if (!strcmp(sub, "recon")) return cmd_pet_recon(argc - 1, argv + 1);
  if (!strcmp(sub, "metrics")) return cmd_pet_metrics(argc - 1, argv + 1);
  return cli_usage_error("pet", "unknown subcommand '%s': expected simulate, recon or metrics",
                         sub);
}

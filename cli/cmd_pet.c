/* `ctrecon pet`: TOF-PET DIRECT reconstruction (seed 002). Dispatches to
 * `pet simulate` (cmd_pet_simulate.c), `pet recon` (cmd_pet_recon.c) and
 * `pet metrics` (here), and holds their shared option parsers and helpers. */
#include "cmd_pet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const cli_command cli_cmd_pet = {
    "pet",
    "TOF-PET DIRECT: simulate histo-images, reconstruct (RAMLA/OSEM/MLEM), CRC and noise",
    "ctrecon pet simulate|recon|metrics [options]",
    "Time-of-flight PET reconstruction in the DIRECT form (seed 002, docs/pet.md):\n"
    "events are grouped into views (azimuth x co-polar angle intervals) and\n"
    "deposited into one histo-image per view on the image lattice; projectors\n"
    "are per-view convolutions with spatially variant system-response kernels.\n\n"
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
    "noise of the image, as seed 002 section 6.1 defines them: for each sphere,\n"
    "CRC = ((p_s - p_b) / p_b) / c with p_s the mean in a disc of the sphere's\n"
    "diameter on the slice nearest its centre, p_b the mean in the annulus of\n"
    "inner diameter (diameter + 14 mm), 8 mm thick, and c = sphere / background\n"
    "- 1; noise = standard deviation / mean in a 50 mm disc at the centre of the\n"
    "central slice. Pixels count with the fraction of their area inside an ROI.\n"
    "The lattice and voxel size come from the image file (NRRD keeps both);\n"
    "a raw file needs --lattice and --voxel.",
    "  ctrecon pet metrics --image image.nrrd\n"
    "  ctrecon pet metrics --image image.raw --lattice 144x144x48 --voxel 4 --contrast 8\n",
};

/* ---- Option parsers ---------------------------------------------------------- */

static int to_double(const char *s, double *out) {
  char *end;
  errno = 0;
  const double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* "A" or "A:B" into doubles; -1 when malformed. */
static int split_pair(const char *value, double *a, double *b, int *has_b) {
  char buf[128];
  if (strlen(value) >= sizeof buf) return -1;
  strcpy(buf, value);
  char *colon = strchr(buf, ':');
  *has_b = colon != NULL;
  if (colon) {
    *colon = '\0';
    if (to_double(colon + 1, b)) return -1;
  }
  return to_double(buf, a);
}

int pet_parse_fwhm_pair(const char *cmd, const char *name, const char *value, void *dst) {
  pet_pair *p = dst;
  if (split_pair(value, &p->a, &p->b, &p->has_b) || !(p->a > 0) || (p->has_b && !(p->b > 0)))
    return cli_usage_error(cmd, "%s '%s': expected CENTRE or CENTRE:EDGE (FWHM in mm, > 0)", name,
                           value);
  if (!p->has_b) p->b = p->a;
  return 0;
}

int pet_parse_relax(const char *cmd, const char *name, const char *value, void *dst) {
  pet_pair *p = dst;
  if (split_pair(value, &p->a, &p->b, &p->has_b) || !(p->a > 0) || (p->has_b && !(p->b >= 0)))
    return cli_usage_error(cmd, "%s '%s': expected LAMBDA0 or LAMBDA0:DECAY (LAMBDA0 > 0, DECAY "
                           ">= 0)", name, value);
  return 0;
}

int pet_parse_lattice(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b, c;
  int used = 0;
  if (sscanf(value, "%lldx%lldx%lld%n", &a, &b, &c, &used) != 3 || value[used] || a < 1 ||
      b < 1 || c < 1 || a > 65536 || b > 65536 || c > 65536)
    return cli_usage_error(cmd, "%s '%s': expected NXxNYxNZ (voxels, each 1 .. 65536), e.g. "
                           "144x144x48", name, value);
  int64_t *d = dst;
  d[0] = a;
  d[1] = b;
  d[2] = c;
  return 0;
}

int pet_parse_views(const char *cmd, const char *name, const char *value, void *dst) {
  long long a, b;
  int used = 0;
  if (sscanf(value, "%lldx%lld%n", &a, &b, &used) != 2 || value[used] || a < 1 || b < 1 ||
      a > 100000 || b > 100000)
    return cli_usage_error(cmd, "%s '%s': expected NAZIMUTHxNCOPOLAR (view intervals, each >= 1), "
                           "e.g. 40x3", name, value);
  int *d = dst;
  d[0] = (int)a;
  d[1] = (int)b;
  return 0;
}

int pet_parse_int(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (end == value || *end || errno || v < 1 || v > 100000)
    return cli_usage_error(cmd, "%s '%s': expected an integer in 1 .. 100000", name, value);
  *(int *)dst = (int)v;
  return 0;
}

int pet_parse_seed(const char *cmd, const char *name, const char *value, void *dst) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(value, &end, 10);
  if (end == value || *end || errno || value[0] == '-')
    return cli_usage_error(cmd, "%s '%s': expected an unsigned integer", name, value);
  *(uint64_t *)dst = (uint64_t)v;
  return 0;
}

int pet_parse_nonneg(const char *cmd, const char *name, const char *value, void *dst) {
  double v;
  if (to_double(value, &v) || !(v >= 0))
    return cli_usage_error(cmd, "%s '%s': expected a finite number >= 0", name, value);
  *(double *)dst = v;
  return 0;
}

int pet_parse_phantom(const char *cmd, const char *name, const char *value, void *dst) {
  if (!strcmp(value, "spheres"))
    *(pet_phantom_kind *)dst = PET_PHANTOM_SPHERES;
  else if (!strcmp(value, "points"))
    *(pet_phantom_kind *)dst = PET_PHANTOM_POINTS;
  else
    return cli_usage_error(cmd, "%s '%s': expected spheres or points", name, value);
  return 0;
}

void pet_make_phantom(pet_phantom_kind kind, double contrast, ctr_pet_phantom *ph) {
  if (kind == PET_PHANTOM_POINTS)
    ctr_pet_phantom_points(ph);
  else
    ctr_pet_phantom_spheres(ph, contrast);
}

const char *pet_phantom_name(pet_phantom_kind kind) {
  return kind == PET_PHANTOM_POINTS ? "points" : "spheres";
}

ctr_stack_info pet_image_info(const ctr_pet_params *p) {
  ctr_stack_info info = CTR_STACK_INFO_INIT;
  info.width = p->nx;
  info.height = p->ny;
  info.count = p->nz;
  info.dtype = CTR_DTYPE_FLOAT32;
  info.spacing[0] = info.spacing[1] = info.spacing[2] = p->voxel;
  info.origin[0] = -0.5 * (double)(p->nx - 1) * p->voxel;
  info.origin[1] = -0.5 * (double)(p->ny - 1) * p->voxel;
  info.origin[2] = -0.5 * (double)(p->nz - 1) * p->voxel;
  return info;
}

const char *pet_replace_ext(const char *path, const char *suffix, char *buf, size_t n) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t len = strlen(path);
  if (dot && (!slash || dot > slash) && dot != path && dot[-1] != '/') len = (size_t)(dot - path);
  snprintf(buf, n, "%.*s%s", (int)len, path, suffix);
  return buf;
}

int pet_check_raw_size(const char *cmd, const char *option, const char *path, int64_t nx,
                       int64_t ny, int64_t nz) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0; /* the reader reports it */
  const long long want = (long long)(nx * ny * nz) * 4;
  if ((long long)sb.st_size != want)
    return cli_error(cmd, CLI_EXIT_INPUT, "%s '%s' holds %lld bytes, expected %lld for %lld x %lld "
                     "x %lld float32 voxels (--lattice)", option, path, (long long)sb.st_size,
                     want, (long long)nx, (long long)ny, (long long)nz);
  return 0;
}

/* ---- Metrics curve ------------------------------------------------------------ */

int pet_curve_add(const char *cmd, pet_curve *c, int iteration, const ctr_pet_metrics *m) {
  if (c->n == c->cap) {
    const int cap = c->cap ? 2 * c->cap : 32;
    int *it = realloc(c->iteration, sizeof(int) * (size_t)cap);
    if (it) c->iteration = it;
    double *no = realloc(c->noise, sizeof(double) * (size_t)cap);
    if (no) c->noise = no;
    double *cr = realloc(c->crc, sizeof(double) * (size_t)cap);
    if (cr) c->crc = cr;
    double *cs = realloc(c->crc_sphere, sizeof(double) * (size_t)cap * CTR_PET_MAX_SPHERES);
    if (cs) c->crc_sphere = cs;
    if (!it || !no || !cr || !cs) return cli_error(cmd, CLI_EXIT_RUNTIME, "out of memory");
    c->cap = cap;
  }
  c->iteration[c->n] = iteration;
  c->noise[c->n] = m->noise;
  c->crc[c->n] = m->crc;
  c->nspheres = m->nspheres;
  for (int s = 0; s < m->nspheres; s++)
    c->crc_sphere[(size_t)c->n * CTR_PET_MAX_SPHERES + (size_t)s] = m->crc_sphere[s];
  c->n++;
  return 0;
}

void pet_curve_free(pet_curve *c) {
  free(c->iteration);
  free(c->noise);
  free(c->crc);
  free(c->crc_sphere);
  memset(c, 0, sizeof *c);
}

int pet_curve_write_csv(const char *cmd, const pet_curve *c, const char *path) {
  char tmp[4200];
  /* NAME.tmp.PID.N as the library names its temporaries (cli_check_files) */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.0", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
  fprintf(f, "iteration,noise,crc");
  for (int s = 0; s < c->nspheres; s++) fprintf(f, ",crc_sphere%d", s + 1);
  fputc('\n', f);
  for (int i = 0; i < c->n; i++) {
    fprintf(f, "%d,%.9g,%.9g", c->iteration[i], c->noise[i], c->crc[i]);
    for (int s = 0; s < c->nspheres; s++)
      fprintf(f, ",%.9g", c->crc_sphere[(size_t)i * CTR_PET_MAX_SPHERES + (size_t)s]);
    fputc('\n', f);
  }
  const int bad = ferror(f) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
  if ((fclose(f) != 0) | bad || rename(tmp, path) != 0) {
    const int e = errno;
    unlink(tmp);
    return cli_error(cmd, CLI_EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(e));
  }
  return 0;
}

/* ---- pet metrics ---------------------------------------------------------------- */

int cmd_pet_metrics(int argc, char **argv) {
  const char *cmd = "pet metrics", *image = NULL;
  pet_phantom_kind kind = PET_PHANTOM_SPHERES;
  double contrast = 4.0, voxel = 0.0;
  int64_t lat[3] = {0, 0, 0};
  int lattice_given = 0, voxel_given = 0;
  const cli_opt opts[] = {
      {"--image", "FILE", "reconstructed image: NRRD, TIFF or raw float32 (required)",
       cli_parse_string, &image, NULL},
      {"--phantom", "spheres", "phantom whose spheres are measured (default spheres: the seed's "
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
  if (fmt == CTR_FORMAT_RAW && !lattice_given)
    return cli_usage_error(cmd, "--image '%s' is raw: give --lattice NXxNYxNZ (and --voxel MM)",
                           image);
  if (fmt == CTR_FORMAT_RAW && (rc = pet_check_raw_size(cmd, "--image", image, lat[0], lat[1],
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

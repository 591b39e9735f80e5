/* `ctrecon info`: version, built features, CPU threads and GPUs. */
#include "cli.h"

#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const cli_command cli_cmd_info = {
    "info",
    "version, built features, CPU threads and GPUs",
    "ctrecon info",
    "Prints the library version, the optional features compiled into this build,\n"
    "the number of OpenMP threads and every usable CUDA device.",
    "  ctrecon info\n",
};

static void print_features(unsigned f) {
  static const struct {
    unsigned bit;
    const char *name;
  } all[] = {{CTR_FEATURE_OPENMP, "openmp"}, {CTR_FEATURE_CUDA, "cuda"}, {CTR_FEATURE_HDF5, "hdf5"},
             {CTR_FEATURE_MPI, "mpi"},       {CTR_FEATURE_TIFF, "tiff"},
             {CTR_FEATURE_PNG, "png"},       {CTR_FEATURE_ZMQ, "zmq"}};
  printf("features:\n");
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    printf("  %-8s %s\n", all[i].name, (f & all[i].bit) ? "yes" : "no");
  if (f & CTR_FEATURE_MPI)
    printf("distributed runs: mpirun -np N ctrecon fdk|fbp ... (docs/distributed.md)\n");
  else
    printf("distributed runs: not built (scripts/install-deps.sh installs Open MPI; "
           "-DCTRECON_MPI=on)\n");
}

static void print_gpus(unsigned features) {
  const int n = ctr_cuda_get_device_count();
  if (n <= 0) {
    printf("GPUs: none (%s)\n", (features & CTR_FEATURE_CUDA)
                                    ? "CUDA is built but no usable GPU or driver was found"
                                    : "this build has no CUDA backend");
    return;
  }
  printf("GPUs: %d\n", n);
  for (int i = 0; i < n; i++) {
    ctr_device_info d = CTR_DEVICE_INFO_INIT;
    char total[32], avail[32];
    if (ctr_cuda_get_device_info(i, &d) != CTR_OK) {
      printf("  cuda:%d  (cannot query: %s)\n", i, cli_detail());
      continue;
    }
    printf("  cuda:%d  %s, %s memory (%s free), compute capability %d.%d, %d SMs\n", i, d.name,
           cli_bytes((double)d.total_memory, total, sizeof total),
           cli_bytes((double)d.free_memory, avail, sizeof avail), d.cc_major, d.cc_minor,
           d.multiprocessors);
  }
}

int cmd_info(int argc, char **argv) {
  static const cli_opt opts[] = {{0}};
  int rc = cli_parse(&cli_cmd_info, opts, argc, argv);
  if (rc) return rc < 0 ? 0 : rc;
  const unsigned f = ctr_features();
  printf("ctrecon %s\n", ctr_version_string());
  print_features(f);
#ifdef _OPENMP
  printf("OpenMP max threads: %d\n", omp_get_max_threads());
#else
  printf("OpenMP max threads: 1 (built without OpenMP)\n");
#endif
  print_gpus(f);
  return 0;
}

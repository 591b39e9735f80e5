/* ctrecon: command-line front end of libctrecon. Dispatches to one
 * subcommand per file (cmd_*.c); prints the global help and version. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const cli_subcommand g_commands[] = {
    {&cli_cmd_info, cmd_info}, {&cli_cmd_geometry, cmd_geometry}, {&cli_cmd_phantom, cmd_phantom},
    {&cli_cmd_fdk, cmd_fdk},   {&cli_cmd_fbp, cmd_fbp}, {&cli_cmd_demo, cmd_demo},
    {&cli_cmd_rabbitct_make, cmd_rabbitct_make}, {&cli_cmd_rabbitct, cmd_rabbitct},
    {&cli_cmd_pet, cmd_pet}, {&cli_cmd_iterate, cmd_iterate},
    {&cli_cmd_stream_send, cmd_stream_send}, {&cli_cmd_hdf5_append, cmd_hdf5_append},
    {&cli_cmd_tune, cmd_tune},
};
#define N_COMMANDS (sizeof g_commands / sizeof g_commands[0])

static const cli_subcommand *find_command(const char *name) {
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (!strcmp(g_commands[i].info->name, name)) return &g_commands[i];
  return NULL;
}

/* The usage error for an unknown command, with the nearest one. */
static int unknown_command(const char *name) {
  const char *names[N_COMMANDS];
  for (size_t i = 0; i < N_COMMANDS; i++) names[i] = g_commands[i].info->name;
  return cli_unknown_name(NULL, "command", name, names, (int)N_COMMANDS);
}

static void print_global_help(void) {
  printf(
      "usage: ctrecon [--version] [--help] <command> [options]\n"
      "       ctrecon help <command>\n\n"
      "Tomographic reconstruction on the GPU or the CPU: cone-beam FDK (in memory or\n"
      "streamed file to file), parallel-beam FBP, iterative reconstruction (SIRT,\n"
      "CGLS, OS-SART, FISTA-TV), TOF-PET DIRECT and RabbitCT, with exact analytic\n"
      "phantoms.\n\n"
      "commands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    printf("  %-13s  %s\n", g_commands[i].info->name, g_commands[i].info->summary);
  printf(
      "\n"
      "Every command takes --help. The compute commands (phantom, fdk, fbp, iterate,\n"
      "demo, rabbitct-make, pet simulate, pet recon) also take --quiet, --threads N\n"
      "and --device auto|cpu|cuda[:N].\n\n"
      "exit codes:\n"
      "  0    success\n"
      "  1    runtime failure: I/O error, out of memory, device error, internal error\n"
      "  2    usage error: unknown command or option, bad or missing option value\n"
      "  3    invalid input: bad geometry, malformed file, sizes that do not match\n"
      "  4    unsupported: feature not built into this ctrecon, or no usable GPU\n"
      "  130  interrupted (Ctrl-C); nothing half-written is left behind\n\n"
      "examples:\n"
      "  ctrecon demo                       # phantom -> projections -> FDK, ~10 s\n"
      "  ctrecon geometry --out geom.json --views 720\n"
      "  ctrecon phantom --geometry geom.json --out proj.nrrd\n"
      "  ctrecon fdk --geometry geom.json --projections proj.nrrd --out recon.nrrd\n"
      "  ctrecon fbp --projections scan.h5 --rows 500:520 --out slices.nrrd\n"
      "  ctrecon iterate --geometry geom.json --projections proj.nrrd --out rec.nrrd \\\n"
      "      --algorithm cgls --iterations 20\n"
      "  ctrecon pet simulate --out data.json && ctrecon pet recon --data data.json --out pet.nrrd\n"
      "  ctrecon rabbitct-make --out shepp.rct && ctrecon rabbitct shepp.rct --size 128\n");
}

/* `ctrecon help [command]` */
static int run_help(int argc, char **argv) {
  if (argc < 2) {
    print_global_help();
    return 0;
  }
  const cli_subcommand *c = find_command(argv[1]);
  if (!c) return unknown_command(argv[1]);
  char *args[] = {argv[1], "--help", NULL};
  return c->run(2, args);
}

/* Commands that share one run among the ranks of an MPI job; the others
 * run whole in every process, which a launcher with several ranks makes a
 * mistake. */
static int distributes(const char *name) {
  return !strcmp(name, "fdk") || !strcmp(name, "fbp") || !strcmp(name, "info") ||
         !strcmp(name, "help") || name[0] == '-';
}

int main(int argc, char **argv) {
  cli_launch_init();
  if (argc < 2) return cli_usage_error(NULL, "no command given");
  if (cli_launch_size() > 1 && !distributes(argv[1]))
    return cli_usage_error(NULL, "'%s' runs in one process: start it without mpirun or srun "
                           "(fdk and fbp share one run among the ranks)", argv[1]);
  const char *first = argv[1];
  if (!strcmp(first, "--version") || !strcmp(first, "-V")) {
    printf("ctrecon %s\n", ctr_version_string());
    return 0;
  }
  if (!strcmp(first, "--help") || !strcmp(first, "-h")) {
    print_global_help();
    return 0;
  }
  if (!strcmp(first, "help")) return run_help(argc - 1, argv + 1);
  if (first[0] == '-') return cli_usage_error(NULL, "unknown option '%s'", first);
  const cli_subcommand *c = find_command(first);
  if (!c) return unknown_command(first);
  return c->run(argc - 1, argv + 1);
}

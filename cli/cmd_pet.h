/* The subcommands of `ctrecon pet` (dispatched by cmd_pet.c). Their shared
 * option parsers and helpers are in cli_pet.h. Public API only. */
#ifndef CTRECON_CMD_PET_H
#define CTRECON_CMD_PET_H

#include "cli.h"

extern const cli_command cli_cmd_pet_simulate, cli_cmd_pet_recon, cli_cmd_pet_metrics;
int cmd_pet_simulate(int argc, char **argv); /* cmd_pet_simulate.c */
int cmd_pet_recon(int argc, char **argv);    /* cmd_pet_recon.c */
int cmd_pet_metrics(int argc, char **argv);  /* cmd_pet.c */

#endif

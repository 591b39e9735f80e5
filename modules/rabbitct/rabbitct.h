/* The RabbitCT 1.0.3 module interface: the global-data struct in its exact
 * field order and the entry points a runner looks up with dlsym. Shared by
 * the module, `ctrecon rabbitct` and the contract test. */
#ifndef CTR_RABBITCT_MODULE_H
#define CTR_RABBITCT_MODULE_H

#include <stdbool.h> /* C's bool is one byte, like the C++ bool of the runner */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RabbitCtGlobalData {
  unsigned int L;                    /* problem size: the volume is L^3 */
  unsigned int S_x, S_y;             /* projection width and height */
  double *A_n;                       /* current 3x4 matrix, (row r, column c) at A_n[c*3 + r] */
  float *I_n;                        /* current projection, row j at I_n[j * S_x] */
  float R_L;                         /* voxel size, mm */
  float O_L;                         /* world coordinate of voxel index 0 */
  float *f_L;                        /* output volume, f_L[k*L*L + j*L + i]; runner allocates if NULL */
  unsigned int adv_numProjBuffers;   /* projection buffers (views per subset) */
  float **adv_pProjBuffers;          /* the buffers; a module may provide them in Load,
                                        else the runner allocates them after Load */
  unsigned int adv_N;                /* total views */
  unsigned int adv_projNumber;       /* current view, absolute: 0 .. adv_N - 1 */
  double **adv_ppProjMatrixBuffers;  /* all N matrices, set before Prepare */
  unsigned int adv_numAvailProjs;    /* views in the current subset */
  unsigned int adv_firstProjOfSubset;/* a flag: 1 on the subset's first call, else 0 (the
                                        published header: "is this the first projection of a
                                        RAM-buffer-subset?") */
} RabbitCtGlobalData;

typedef bool (*RabbitCtFunction)(RabbitCtGlobalData *);

/* Names the runner looks up; Prepare is optional. */
#define RCT_LOAD "RCTLoadAlgorithm"
#define RCT_PREPARE "RCTPrepareAlgorithm"
#define RCT_BACKPROJECTION "RCTAlgorithmBackprojection"
#define RCT_FINISH "RCTFinishAlgorithm"
#define RCT_UNLOAD "RCTUnloadAlgorithm"

/* The module built with ctrecon: <build>/modules/rabbitct/librabbitct_ctrecon.so.
 * It reads CTRECON_DEVICE (auto | cpu | cuda, default auto),
 * CTRECON_INTERP (precise | exact | texture, default precise) and
 * CTRECON_RABBITCT_BUFFERS (module | runner, default module) from the
 * environment. */
#define CTR_RABBITCT_MODULE_NAME "librabbitct_ctrecon.so"

#ifdef __cplusplus
}
#endif
#endif

/*
 * ctrecon.h — the public API of libctrecon (C99): includes every domain header.
 * Conventions and the meaning of each part: the headers themselves and docs/.
 */
#ifndef CTRECON_H
#define CTRECON_H

#include "ctrecon/core.h"
#include "ctrecon/tuning.h"
#include "ctrecon/geometry.h"
#include "ctrecon/phantom.h"
#include "ctrecon/io.h"
#include "ctrecon/conebeam.h"
#include "ctrecon/parbeam.h"
#include "ctrecon/synchrotron.h"
#include "ctrecon/rabbitct.h"
#include "ctrecon/pet.h"
#include "ctrecon/iterative.h"
#include "ctrecon/live.h"

#endif /* CTRECON_H */

/* SPDX-License-Identifier: MIT */
/*
 * Keeping this copy of the library loaded: see pin.c.
 */
#ifndef RANGELOCK_PIN_H
#define RANGELOCK_PIN_H

#include <stdbool.h>

/* Called once, before the first pthread key destructor of this copy can be
 * left pending in a thread.  True: this copy's code stays mapped until the
 * process exits (the destructor may be registered); false: it might be
 * unmapped while a thread still lives (register none). */
__attribute__((visibility("hidden"))) bool rl_pin_self(void);

#endif /* RANGELOCK_PIN_H */

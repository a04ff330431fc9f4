/* SPDX-License-Identifier: MIT */
#ifndef IOPULSE_STACK_H
#define IOPULSE_STACK_H

/*
 * stack — give back the stack a deep one-off call left resident (issue 15,
 * memory). A thread's stack pages stay resident once touched, and with GCC's
 * stack clash probes every page of a large frame is touched: opening a target
 * (path buffers of PATH_MAX) or loading the configuration goes far deeper once
 * than the thread's loop does afterwards.
 */

#include <stddef.h>

/* Hands back to the kernel the pages of the calling thread's stack below the
 * caller's frame, sparing STACK_KEEP bytes for the calls still to come and
 * reaching at most STACK_RELEASE_MAX below it. They are below the stack
 * pointer, so unused; a later touch gets a fresh zero page. Returns the bytes
 * given back (0 when the stack cannot be found). */
size_t stack_release(void);

#define STACK_KEEP	  4096		/* below the caller's frame: its next calls */
#define STACK_RELEASE_MAX (1024 * 1024) /* deeper than any of our call chains */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * stack — stack_release() (stack.h): the pages of the calling thread's stack
 * below the current frame and STACK_KEEP given back with madvise(MADV_DONTNEED).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/stack.h"

size_t stack_release(void)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	volatile char here = 0;
	/* The page holding this frame is kept, and STACK_KEEP below it. */
	uintptr_t end = ((uintptr_t)&here & ~(page - 1)) - STACK_KEEP;
	uintptr_t lo = end - STACK_RELEASE_MAX;
	pthread_attr_t a;
	size_t size;
	void *base;

	/* For the main thread glibc derives the stack from its mapping and the
	 * rlimit, never past the mapping below it. */
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return 0;
	if (pthread_attr_getstack(&a, &base, &size) != 0) {
		pthread_attr_destroy(&a);
		return 0;
	}
	pthread_attr_destroy(&a);
	if ((uintptr_t)base > lo)
		lo = ((uintptr_t)base + page - 1) & ~(page - 1);
	if (end <= lo)
		return 0;
	/* The main thread's stack grows on demand: what is not mapped yet fails
	 * with ENOMEM after the mapped part was done. */
	(void)madvise((void *)lo, end - lo, MADV_DONTNEED);
	return end - lo;
}

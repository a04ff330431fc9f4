/* SPDX-License-Identifier: MIT */
/* stack: after a deep call, stack_release() makes the pages it touched below the
 * caller non-resident (mincore), on a thread and on the main thread, and leaves
 * the caller's own frame as it was. */
#include <setjmp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/stack.h"

#define DEEP (64 * 1024) /* how deep deep_call() goes */

static uintptr_t deep_lo, deep_hi; /* what deep_call() touched */

/* Touches DEEP bytes of stack below its caller, and says where. */
static __attribute__((noinline)) void deep_call(void)
{
	volatile char big[DEEP];

	for (size_t i = 0; i < sizeof(big); i += 512)
		big[i] = 1;
	deep_lo = (uintptr_t)&big[0];
	deep_hi = (uintptr_t)&big[sizeof(big) - 1];
}

/* Resident pages among those wholly inside what deep_call() touched, but for
 * its top 16 KiB: the frames of this function and of stack_release() are there,
 * and STACK_KEEP below them. */
static size_t deep_resident(void)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (deep_lo + page - 1) & ~(page - 1), hi = (deep_hi - 16384) & ~(page - 1);
	unsigned char vec[DEEP / 4096 + 1];
	size_t n = (hi - lo) / page, resident = 0;

	assert_true(n > 4 && n <= sizeof(vec));
	assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < n; i++)
		resident += vec[i] & 1;
	return resident;
}

/* The check itself, on whichever thread calls it: 0, or which step failed
 * (cmocka's asserts cannot leave another thread). */
static int check_release(void)
{
	volatile char mine[256]; /* the caller's frame: must survive */

	memset((char *)mine, 0x5a, sizeof(mine));
	deep_call();
	if (deep_resident() == 0)
		return 1; /* nothing to give back: the test proves nothing */
	if (stack_release() < DEEP / 2)
		return 2;
	if (deep_resident() != 0)
		return 3;
	for (size_t i = 0; i < sizeof(mine); i++)
		if (mine[i] != 0x5a)
			return 4;
	deep_call(); /* the pages come back, zeroed, when touched again */
	return deep_resident() > 0 ? 0 : 5;
}

static void *on_thread(void *arg)
{
	*(int *)arg = check_release();
	return NULL;
}

static void test_thread(void **state)
{
	pthread_attr_t a;
	pthread_t t;
	int r = -1;

	(void)state;
	assert_int_equal(pthread_attr_init(&a), 0);
	assert_int_equal(pthread_attr_setstacksize(&a, 512 * 1024), 0);
	assert_int_equal(pthread_create(&t, &a, on_thread, &r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
	assert_int_equal(r, 0);
}

static void test_main_thread(void **state)
{
	(void)state;
	assert_int_equal(check_release(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread),
		cmocka_unit_test(test_main_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

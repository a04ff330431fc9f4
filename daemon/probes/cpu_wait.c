/* SPDX-License-Identifier: MIT */
/*
 * cpu_wait — see cpu_wait.h. Per thread, as the kernel keeps the figure: a
 * descriptor of /proc/thread-self/... is bound to the thread that opened it,
 * so each thread opens its own, on first use, and a key's destructor closes it
 * when the thread ends (a burst's job threads end with each run).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/schedstat.h"
#include "lib/fd.h"
#include "daemon/probes/cpu_wait.h"

/* Set by cpu_wait_setup(), before the threads that read them start (a thread
 * started later sees them: pthread_create() orders it); atomics for a unit
 * test that sets up again between runs. */
static _Atomic unsigned setup_gen; /* 0: never set up */
static _Atomic bool measuring;
static char proc_root[PATH_MAX];

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t fd_key;
static bool key_ok;

/* This thread's: the set-up it opened its file for (0: none yet) and the file. */
static _Thread_local unsigned tl_gen;
static _Thread_local int tl_fd = -1;

/* A thread ends: its file with it. The value is the descriptor + 1 (non-NULL). */
static void close_at_exit(void *v)
{
	close((int)(intptr_t)v - 1);
}

static void make_key(void)
{
	key_ok = pthread_key_create(&fd_key, close_at_exit) == 0;
}

/* This thread's first call since set-up @gen: its file. */
static void thread_setup(unsigned gen)
{
	int fd;

	if (tl_fd >= 0) { /* a set-up again (unit tests): opened anew */
		(void)pthread_setspecific(fd_key, NULL);
		tl_fd = safe_close(tl_fd);
	}
	tl_gen = gen;
	if (!atomic_load_explicit(&measuring, memory_order_relaxed) ||
	    pthread_once(&key_once, make_key) != 0 || !key_ok)
		return;
	fd = schedstat_open(proc_root);
	if (fd < 0)
		return;
	if (pthread_setspecific(fd_key, (void *)(intptr_t)(fd + 1)) != 0) {
		safe_close(fd);
		return;
	}
	tl_fd = fd;
}

int cpu_wait_setup(const char *proc)
{
	int fd = -ENAMETOOLONG;

	if ((size_t)snprintf(proc_root, sizeof(proc_root), "%s", proc) < sizeof(proc_root))
		fd = schedstat_open(proc_root);
	safe_close(fd);
	atomic_store(&measuring, fd >= 0);
	atomic_fetch_add(&setup_gen, 1);
	return fd < 0 ? fd : 0;
}

bool cpu_wait_measured(void)
{
	return atomic_load_explicit(&measuring, memory_order_relaxed);
}

bool cpu_wait_now(uint64_t *ns)
{
	unsigned gen = atomic_load_explicit(&setup_gen, memory_order_acquire);

	if (!gen)
		return false;
	if (tl_gen != gen)
		thread_setup(gen);
	return tl_fd >= 0 && schedstat_read(tl_fd, ns) == 0;
}

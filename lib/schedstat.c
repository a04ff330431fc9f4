/* SPDX-License-Identifier: MIT */
/*
 * schedstat — see schedstat.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/schedstat.h"
#include "lib/fd.h"

/* "RUN WAIT SLICES\n" is 3 numbers of at most 20 digits. */
#define SCHEDSTAT_TEXT_MAX 72

/*
 * One decimal field of @s ending in @end, into *@out; the character after it
 * in *@next. By hand rather than strtoull(), which takes signs, blanks and an
 * overflow as a value: this is the kernel's exact format, read around every
 * ping. False on anything else.
 */
static bool field(const char *s, char end, uint64_t *out, const char **next)
{
	uint64_t v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s || (*p != end && !(end == '\n' && *p == '\0')))
		return false;
	*out = v;
	*next = *p ? p + 1 : p;
	return true;
}

int schedstat_parse(const char *text, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices)
{
	uint64_t run, wait, n;
	const char *p = text;

	if (!field(p, ' ', &run, &p) || !field(p, ' ', &wait, &p) || !field(p, '\n', &n, &p))
		return -EINVAL;
	*run_ns = run;
	*wait_ns = wait;
	*slices = n;
	return 0;
}

/* The text at offset 0 of @fd, parsed. 0 or -errno. */
static int read_parse(int fd, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *slices)
{
	char buf[SCHEDSTAT_TEXT_MAX];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return schedstat_parse(buf, run_ns, wait_ns, slices);
}

int schedstat_open(const char *proc)
{
	char path[PATH_MAX];
	uint64_t run, wait, slices;
	int fd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/thread-self/schedstat", proc) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read_parse(fd, &run, &wait, &slices);
	/* The thread reading was put on a CPU at least once: a kernel that keeps
	 * the figures counts that (its time there may still read 0: it is added
	 * up when the thread leaves the CPU or at a tick). */
	if (r == 0 && slices == 0)
		r = -ENODATA;
	if (r < 0) {
		safe_close(fd);
		return r;
	}
	return fd;
}

int schedstat_read(int fd, uint64_t *wait_ns)
{
	uint64_t run, slices;

	return read_parse(fd, &run, wait_ns, &slices);
}

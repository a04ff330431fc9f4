/* SPDX-License-Identifier: MIT */
/*
 * ioprio — see ioprio.h. glibc has no wrapper for ioprio_get/ioprio_set, hence
 * syscall(2).
 */
#include <errno.h>
#include <linux/ioprio.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/ioprio.h"

/* "best-effort:N" and "realtime:N": the level after the class's prefix. */
static int parse_level(const char *s, int class, int *out)
{
	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	if (s[1] != '\0')
		return (s[1] >= '0' && s[1] <= '9') ? -ERANGE : -EINVAL;
	if (s[0] - '0' >= IOPRIO_NR_LEVELS)
		return -ERANGE;
	*out = (int)IOPRIO_PRIO_VALUE(class, s[0] - '0');
	return 0;
}

int ioprio_parse(const char *s, int *out)
{
	static const char be[] = "best-effort:", rt[] = "realtime:";

	if (!s)
		return -EINVAL;
	if (strcmp(s, "none") == 0) {
		*out = 0;
		return 0;
	}
	if (strcmp(s, "idle") == 0) {
		*out = (int)IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
		return 0;
	}
	if (strncmp(s, be, sizeof(be) - 1) == 0)
		return parse_level(s + sizeof(be) - 1, IOPRIO_CLASS_BE, out);
	if (strncmp(s, rt, sizeof(rt) - 1) == 0)
		return parse_level(s + sizeof(rt) - 1, IOPRIO_CLASS_RT, out);
	return -EINVAL;
}

const char *ioprio_format(int prio, char *buf, size_t len)
{
	const int level = (int)IOPRIO_PRIO_DATA(prio);

	switch (IOPRIO_PRIO_CLASS(prio)) {
	case IOPRIO_CLASS_NONE:
		snprintf(buf, len, "none");
		break;
	case IOPRIO_CLASS_IDLE:
		snprintf(buf, len, "idle");
		break;
	case IOPRIO_CLASS_BE:
		snprintf(buf, len, "best-effort:%d", level);
		break;
	case IOPRIO_CLASS_RT:
		snprintf(buf, len, "realtime:%d", level);
		break;
	default:
		snprintf(buf, len, "class%d:%d", (int)IOPRIO_PRIO_CLASS(prio), level);
		break;
	}
	return buf;
}

int ioprio_is_realtime(int prio)
{
	return IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_RT;
}

int ioprio_thread_get(void)
{
	long r = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);

	return r < 0 ? -errno : (int)r;
}

int ioprio_thread_set(int prio)
{
	/* Who 0 is the calling thread, not the whole process (ioprio_set(2)). */
	return syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, prio) < 0 ? -errno : 0;
}

int ioprio_check_allowed(int prio)
{
	int old = ioprio_thread_get(), r;

	if (prio == 0)
		return 0;
	if (old < 0)
		return old;
	r = ioprio_thread_set(prio);
	if (r == 0)
		(void)ioprio_thread_set(old);
	return r;
}

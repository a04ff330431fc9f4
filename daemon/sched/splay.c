/* SPDX-License-Identifier: MIT */
/*
 * splay — see splay.h: the probes' phases, hashed from the host's id and their
 * names, and their first due times.
 */
#include <errno.h>
#include <string.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include "engines/engine.h"
#include "daemon/probes/probe.h"
#include "daemon/sched/splay.h"

#define FNV_PRIME 0x100000001b3ULL /* FNV-1a 64 prime */

/*
 * FNV-1a, by hand rather than from a library: it is five lines, and its output
 * is fixed by its published definition, so a host's phases never move with a
 * library upgrade (xxHash or SipHash would need a dependency, and SipHash a key
 * we would have to fix forever anyway). Its weak low bits do not matter here:
 * the interval is not a power of two in general, and the 64-bit hash dwarfs it
 * (at most 24h = 8.6e13 ns), so the modulo bias is below 1e-5.
 */
uint64_t splay_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t splay_offset(const char *host_id, const char *name, uint64_t interval_ns)
{
	/* The NUL keeps ("ab", "c") and ("a", "bc") apart. */
	uint64_t h = splay_fnv1a(SPLAY_FNV_OFFSET, host_id, strlen(host_id) + 1);

	h = splay_fnv1a(h, name, strlen(name));
	return h % interval_ns;
}

int splay_host_id(char *buf, size_t n, bool *from_hostname)
{
	sd_id128_t id;

	*from_hostname = false;
	if (n < SD_ID128_STRING_MAX)
		return -ENOBUFS;
	/* libsystemd reads and validates /etc/machine-id (and the initrd's). */
	if (sd_id128_get_machine(&id) >= 0) {
		sd_id128_to_string(id, buf);
		return 0;
	}
	*from_hostname = true;
	if (gethostname(buf, n - 1) < 0)
		return -errno;
	buf[n - 1] = '\0';
	return 0;
}

/* Without splay: a target's probes evenly over the shortest of its intervals, at
 * most a second, so that probes with multiple intervals do not fall due together
 * forever and defer each other (they run one at a time on the target's lane). */
static void unsplayed_first_due(const struct config *cfg, unsigned ti, uint64_t now, uint64_t *due)
{
	uint64_t spread = NSEC_PER_SEC;
	unsigned n = 0, k = 0;

	for (unsigned i = 0; i < cfg->n_probes; i++) {
		if (cfg->probes[i].target != ti)
			continue;
		n++;
		if (cfg->probes[i].interval_ns < spread)
			spread = cfg->probes[i].interval_ns;
	}
	for (unsigned i = 0; i < cfg->n_probes; i++)
		if (cfg->probes[i].target == ti)
			due[i] = now + spread * k++ / n;
}

void splay_first_due(const struct config *cfg, const char *host_id, uint64_t mono_now,
		     uint64_t real_now, uint64_t *due)
{
	for (unsigned ti = 0; ti < cfg->n_targets; ti++)
		unsplayed_first_due(cfg, ti, mono_now, due);
	if (!cfg->splay)
		return;
	/* The kinds with PROBE_F_SPLAY only (bursts): pings are small and frequent,
	 * a fleet's pings in step load nothing, and pings at random phases on one
	 * lane would collide for ever, counting a "busy" deferral at every run.
	 * Their even spread stays. */
	for (unsigned i = 0; i < cfg->n_probes; i++) {
		const struct cfg_probe *p = &cfg->probes[i];
		uint64_t phase, into;

		if (!(probe_ops_of(p->kind)->flags & PROBE_F_SPLAY))
			continue;
		phase = splay_offset(host_id, p->name, p->interval_ns);
		into = real_now % p->interval_ns; /* where the wall clock is */
		due[i] = mono_now + (phase + p->interval_ns - into) % p->interval_ns;
	}
}

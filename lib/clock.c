/* SPDX-License-Identifier: MIT */
/*
 * clock — eng_now_ns(), the one monotonic clock of engines, probes, bursts and
 * the scheduler: CLOCK_MONOTONIC, or the CPU's time-stamp counter scaled to it.
 *
 * Alone in its file on purpose: iopulse_core is a static library, so a test
 * binary that defines its own eng_now_ns() (a fake clock, tests/unit/test_golden.c)
 * links that one and this object is never pulled from the archive. The daemon
 * gets this one, called directly, at no cost.
 *
 * Why a TSC clock (docs/measurement.md, "The clock"): at QD1 on the null engine,
 * two clock reads per I/O were half of a burst's CPU. The vDSO's CLOCK_MONOTONIC
 * is an ordered TSC read (lfence; rdtsc) plus a seqlock and a timespec; a plain
 * rdtsc and one multiply cost about a third as much. It is used only where the
 * kernel itself keeps CLOCK_MONOTONIC on the TSC (current clocksource "tsc": the
 * kernel has checked it is synchronised across CPUs and watches it for drift)
 * and the CPU says the TSC is invariant (constant rate, runs in deep C-states).
 *
 * The TSC clock is CLOCK_MONOTONIC, scaled: eng_sleep_until() sleeps on
 * CLOCK_MONOTONIC until a time read from it. So it is re-anchored on
 * CLOCK_MONOTONIC every TSC_PERIOD_NS: each anchor measures the true rate over
 * the period just gone (NTP's slewing included) and steers the next period to
 * end on CLOCK_MONOTONIC, without a step, so the clock never goes back and stays
 * within a few microseconds of CLOCK_MONOTONIC (TSC_STEER_MAX_NS at most; more,
 * and it steps back onto CLOCK_MONOTONIC and calibrates again). Until the first
 * calibration (TSC_CALIBRATE_NS after eng_clock_init()) and everywhere the TSC
 * is not trusted, eng_now_ns() is clock_gettime(CLOCK_MONOTONIC).
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

#include "lib/clock.h"

#define TSC_CALIBRATE_NS 20000000ULL   /* first rate: over 20ms, ~2 ppm */
#define TSC_PERIOD_NS	 1000000000ULL /* then re-anchored every second */
#define TSC_STEER_MAX_NS 1000000ULL    /* off by more at an anchor: step, recalibrate */
#define TSC_PAIR_MAX	 2000ULL       /* ticks around a CLOCK_MONOTONIC read, at most */
#define TSC_STEPS_MAX	 3	       /* steps before the TSC is given up for good */

#if HAVE_TSC

/* The mapping, under a seqlock: ns = base_ns + (tsc - base_tsc) * mult / 2^32,
 * until tsc reaches next_tsc (the next anchor). Relaxed atomics: the sequence
 * number orders them. */
static struct {
	_Atomic uint32_t seq;
	_Atomic uint64_t base_tsc, base_ns, mult, next_tsc;
} map;

static _Atomic int mode;	      /* ENG_CLOCK_MONOTONIC or ENG_CLOCK_TSC */
static _Atomic uint64_t calibrate_at; /* CLOCK_MONOTONIC of the first calibration; 0: none */
static atomic_flag writer = ATOMIC_FLAG_INIT; /* one anchoring at a time */
/* The last measured (tsc, CLOCK_MONOTONIC) pair, and steps so far: the writer's. */
static uint64_t pair_tsc, pair_ns;
static int steps;
/* Steps because the TSC was off by more than steering takes (not for want of a
 * pair): for tests, which cannot tell a preempted pair read from a bad rate. */
static _Atomic unsigned drift_steps;

/* An ordered read, for calibration pairs: nothing before it is still running. */
static inline uint64_t tsc_ordered(void)
{
	_mm_lfence();
	return __rdtsc();
}

/*
 * One (tsc, CLOCK_MONOTONIC) pair: the TSC on both sides of the clock read, and
 * the midpoint of the tightest of a few tries. False when every try was preempted
 * or slow (TSC_PAIR_MAX ticks around it).
 */
static bool read_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = tsc_ordered(), n = eng_mono_ns(), b = tsc_ordered();

		if (b >= a && b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
	return best <= TSC_PAIR_MAX;
}

static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t period_ticks)
{
	uint32_t s = atomic_load_explicit(&map.seq, memory_order_relaxed);

	/* A seqlock without fences (ThreadSanitizer does not model them): each
	 * release store keeps the odd sequence number before it, and a reader that
	 * acquires any new field then sees the sequence moved. Plain moves on x86. */
	atomic_store_explicit(&map.seq, s + 1, memory_order_relaxed);
	atomic_store_explicit(&map.base_tsc, base_tsc, memory_order_release);
	atomic_store_explicit(&map.base_ns, base_ns, memory_order_release);
	atomic_store_explicit(&map.mult, mult, memory_order_release);
	atomic_store_explicit(&map.next_tsc, base_tsc + period_ticks, memory_order_release);
	atomic_store_explicit(&map.seq, s + 2, memory_order_release);
}

static inline uint64_t map_apply(uint64_t tsc, uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	/* Signed: an unordered rdtsc may run a little ahead of the loads of a
	 * mapping anchored a moment ago, on another CPU. */
	int64_t d = (int64_t)(tsc - base_tsc);

	return base_ns + (uint64_t)(int64_t)(((__int128)d * (__int128)mult) >> 32);
}

/* 2^32 ns per tick, from @ns nanoseconds over @ticks; 0 when implausible (below
 * 50 MHz or above 20 GHz: not a TSC we understand). */
static uint64_t rate(uint64_t ns, uint64_t ticks)
{
	unsigned __int128 m;

	if (!ticks || ns * 20 < ticks || ns > ticks * 20)
		return 0;
	m = ((unsigned __int128)ns << 32) / ticks;
	return (uint64_t)m;
}

/* Back on CLOCK_MONOTONIC, calibrating afresh from a new pair (or for good after
 * TSC_STEPS_MAX steps, or when no pair can be read). */
static void step_back(uint64_t now_ns)
{
	atomic_store_explicit(&mode, ENG_CLOCK_MONOTONIC, memory_order_release);
	if (++steps > TSC_STEPS_MAX || !read_pair(&pair_tsc, &pair_ns)) {
		atomic_store_explicit(&calibrate_at, 0, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&calibrate_at, now_ns + TSC_CALIBRATE_NS, memory_order_relaxed);
}

/* The first rate, TSC_CALIBRATE_NS after the first pair: the mapping starts on
 * CLOCK_MONOTONIC itself, so switching to it moves nothing. */
static void calibrate(void)
{
	uint64_t t = 0, n = 0, m;

	if (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
		return;
	if (!atomic_load_explicit(&calibrate_at, memory_order_relaxed) ||
	    atomic_load_explicit(&mode, memory_order_relaxed) == ENG_CLOCK_TSC)
		goto out;
	if (!read_pair(&t, &n) || t <= pair_tsc || n <= pair_ns ||
	    !(m = rate(n - pair_ns, t - pair_tsc))) {
		step_back(eng_mono_ns());
		goto out;
	}
	publish(t, n, m, ((unsigned __int128)TSC_PERIOD_NS << 32) / m);
	pair_tsc = t;
	pair_ns = n;
	atomic_store_explicit(&calibrate_at, 0, memory_order_relaxed);
	atomic_store_explicit(&mode, ENG_CLOCK_TSC, memory_order_release);
out:
	atomic_flag_clear_explicit(&writer, memory_order_release);
}

/*
 * At an anchor (@tsc past next_tsc): the rate over the period just gone, and
 * the next period steered to end on CLOCK_MONOTONIC, starting where the current
 * mapping is now (no step). Off by more than TSC_STEER_MAX_NS (a TSC that jumped
 * or changed rate, a suspend): back to CLOCK_MONOTONIC.
 */
static void reanchor(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	uint64_t t = 0, n = 0, here, m, ticks;
	int64_t off;

	if (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
		return; /* another thread is at it: the old mapping holds meanwhile */
	if (atomic_load_explicit(&map.base_tsc, memory_order_relaxed) != base_tsc ||
	    atomic_load_explicit(&mode, memory_order_relaxed) != ENG_CLOCK_TSC)
		goto out; /* done already */
	if (!read_pair(&t, &n)) {
		/* Five tries preempted, or clock_gettime() slow (the kernel left the
		 * TSC for another clocksource): without a pair, no anchor. */
		step_back(eng_mono_ns());
		goto out;
	}
	here = map_apply(t, base_tsc, base_ns, mult);
	off = (int64_t)(n - here);
	m = t > pair_tsc && n > pair_ns ? rate(n - pair_ns, t - pair_tsc) : 0;
	if (!m || off > (int64_t)TSC_STEER_MAX_NS || off < -(int64_t)TSC_STEER_MAX_NS) {
		atomic_fetch_add_explicit(&drift_steps, 1, memory_order_relaxed);
		step_back(n);
		goto out;
	}
	/* Steer: reach CLOCK_MONOTONIC + PERIOD from here over PERIOD's ticks at
	 * rate m. |off| <= 1ms of 1s: the slope stays within 0.1% of m, positive. */
	ticks = ((unsigned __int128)TSC_PERIOD_NS << 32) / m;
	publish(t, here, rate(TSC_PERIOD_NS + (uint64_t)((int64_t)off), ticks), ticks);
	pair_tsc = t;
	pair_ns = n;
	steps = 0;
out:
	atomic_flag_clear_explicit(&writer, memory_order_release);
}

static uint64_t tsc_now_ns(void)
{
	uint64_t base_tsc, base_ns, mult, next, t;
	uint32_t s;

	do {
		/* Acquire loads (see publish()): the recheck below cannot move above them. */
		s = atomic_load_explicit(&map.seq, memory_order_acquire);
		base_tsc = atomic_load_explicit(&map.base_tsc, memory_order_acquire);
		base_ns = atomic_load_explicit(&map.base_ns, memory_order_acquire);
		mult = atomic_load_explicit(&map.mult, memory_order_acquire);
		next = atomic_load_explicit(&map.next_tsc, memory_order_acquire);
	} while ((s & 1) || s != atomic_load_explicit(&map.seq, memory_order_relaxed));
	/* Plain rdtsc, not ordered: see docs/measurement.md for why that is honest. */
	t = __rdtsc();
	if (__builtin_expect(t >= next, 0)) {
		reanchor(base_tsc, base_ns, mult);
		if (atomic_load_explicit(&mode, memory_order_acquire) != ENG_CLOCK_TSC)
			return eng_mono_ns();
	}
	return map_apply(t, base_tsc, base_ns, mult);
}

/* The CPU's word (invariant TSC: CPUID 0x80000007 EDX bit 8) and the kernel's
 * (its clocksource is the TSC), both. */
static bool tsc_trusted(void)
{
	unsigned a, b, c, d;
	char cs[16] = "";
	ssize_t n = -1;
	int fd;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return false;
	__cpuid(0x80000007, a, b, c, d);
	if (!(d & (1U << 8)))
		return false;
	fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cs, sizeof(cs) - 1);
		close(fd);
	}
	return n > 0 && strncmp(cs, "tsc\n", 4) == 0;
}

uint64_t eng_now_ns(void)
{
	uint64_t due, ns;

	if (__builtin_expect(atomic_load_explicit(&mode, memory_order_acquire) == ENG_CLOCK_TSC, 1))
		return tsc_now_ns();
	ns = eng_mono_ns();
	due = atomic_load_explicit(&calibrate_at, memory_order_relaxed);
	if (__builtin_expect(due && ns >= due, 0))
		calibrate();
	return ns;
}

int eng_clock_init(enum eng_clock want)
{
	atomic_store_explicit(&mode, ENG_CLOCK_MONOTONIC, memory_order_release);
	atomic_store_explicit(&calibrate_at, 0, memory_order_relaxed);
	steps = 0;
	if (want == ENG_CLOCK_MONOTONIC)
		return ENG_CLOCK_MONOTONIC;
	if (!tsc_trusted() || !read_pair(&pair_tsc, &pair_ns))
		return ENG_CLOCK_MONOTONIC;
	atomic_store_explicit(&calibrate_at, pair_ns + TSC_CALIBRATE_NS, memory_order_relaxed);
	return ENG_CLOCK_TSC;
}

enum eng_clock eng_clock_mode(void)
{
	return atomic_load_explicit(&mode, memory_order_acquire);
}

void eng_clock_test_skew(int64_t ppm)
{
	uint64_t t, m, ticks;

	if (eng_clock_mode() != ENG_CLOCK_TSC)
		return;
	while (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
		;
	t = __rdtsc();
	m = atomic_load_explicit(&map.mult, memory_order_relaxed);
	ticks = atomic_load_explicit(&map.next_tsc, memory_order_relaxed);
	ticks = ticks > t ? ticks - t : 1;
	publish(t,
		map_apply(t, atomic_load_explicit(&map.base_tsc, memory_order_relaxed),
			  atomic_load_explicit(&map.base_ns, memory_order_relaxed), m),
		(uint64_t)((double)m * (1 + (double)ppm / 1e6)), ticks);
	atomic_flag_clear_explicit(&writer, memory_order_release);
}

unsigned eng_clock_test_drift_steps(void)
{
	return atomic_load_explicit(&drift_steps, memory_order_relaxed);
}

#else /* no TSC: CLOCK_MONOTONIC, always */

uint64_t eng_now_ns(void)
{
	return eng_mono_ns();
}

int eng_clock_init(enum eng_clock want)
{
	(void)want;
	return ENG_CLOCK_MONOTONIC;
}

enum eng_clock eng_clock_mode(void)
{
	return ENG_CLOCK_MONOTONIC;
}

void eng_clock_test_skew(int64_t ppm)
{
	(void)ppm;
}

unsigned eng_clock_test_drift_steps(void)
{
	return 0;
}

#endif

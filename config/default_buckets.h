/* SPDX-License-Identifier: MIT */
/*
 * The default classic histogram bounds, 10 us .. 10 s in 1-2.5-5 steps: an
 * initializer, so that the benchmarks (built without the config module) measure
 * exactly what the daemon uses.
 */
#ifndef IOPULSE_DEFAULT_BUCKETS_H
#define IOPULSE_DEFAULT_BUCKETS_H

#define CFG_DEFAULT_BUCKETS_NS                                                                     \
	{                                                                                          \
		10000ULL, 25000ULL, 50000ULL, 100000ULL, 250000ULL, 500000ULL, 1000000ULL,         \
			2500000ULL, 5000000ULL, 10000000ULL, 25000000ULL, 50000000ULL,             \
			100000000ULL, 250000000ULL, 500000000ULL, 1000000000ULL, 2500000000ULL,    \
			5000000000ULL, 10000000000ULL,                                             \
	}

#endif

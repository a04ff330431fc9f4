/* SPDX-License-Identifier: MIT */
/*
 * fuzz — what every harness in tests/fuzz defines.
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput() and nothing else public. It
 * is linked two ways: with libFuzzer (clang -fsanitize=fuzzer, `./dev.sh fuzz`)
 * to search for new inputs, and with replay.c (any compiler, the test suite) to run
 * the committed corpus as an ordinary test. A harness returns 0 and aborts on a
 * broken invariant, so both ways report it as a crash.
 */
#ifndef IOPULSE_FUZZ_H
#define IOPULSE_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif

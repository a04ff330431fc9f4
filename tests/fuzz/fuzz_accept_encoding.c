/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the Accept-Encoding parser: http_accepts_gzip() on any NUL-terminated
 * header answers, never crashes or reads past the string, and gives the same
 * answer twice.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *accept_encoding = malloc(size + 1);
	bool gzip;

	if (!accept_encoding)
		abort();
	memcpy(accept_encoding, data, size);
	accept_encoding[size] = '\0';
	gzip = http_accepts_gzip(accept_encoding);
	if (http_accepts_gzip(accept_encoding) != gzip)
		abort();
	free(accept_encoding);
	return 0;
}

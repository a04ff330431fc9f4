/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the Accept parser: http_negotiate() on any NUL-terminated header picks
 * one of the formats (text when nothing else is acceptable), never crashes or
 * reads past the string, and gives the same answer twice.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/http/http.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A header as libmicrohttpd hands it over: a C string (an embedded NUL ends it). */
	char *accept = malloc(size + 1);
	enum http_format f;

	if (!accept)
		abort();
	memcpy(accept, data, size);
	accept[size] = '\0';
	f = http_negotiate(accept);
	if (f != HTTP_FORMAT_TEXT && f != HTTP_FORMAT_OPENMETRICS && f != HTTP_FORMAT_PROTOBUF)
		abort();
	if (http_negotiate(accept) != f || !http_format_content_type(f))
		abort();
	free(accept);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * static_page — the ceiling for bench/scrape.sh: libmicrohttpd, configured as
 * iopulse configures it, serving a constant buffer of the size of iopulse's page
 * with no work at all per request. Whatever rate this reaches is the most any
 * exporter of that page size can reach through the same library and kernel.
 *
 *   static_page PORT BYTES
 */
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *page;
static size_t page_len;

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *data,
			     size_t *data_len, void **req)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls, (void)url, (void)method, (void)version, (void)data, (void)data_len, (void)req;
	r = MHD_create_response_from_buffer(page_len, page, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct MHD_Daemon *d;

	if (argc != 3)
		return 64;
	page_len = strtoul(argv[2], NULL, 10);
	page = malloc(page_len ? page_len : 1);
	if (!page)
		return 1;
	memset(page, 'x', page_len);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL,
			     (uint16_t)atoi(argv[1]), NULL, NULL, serve, NULL,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	if (!d)
		return 1;
	pause();
	return 0;
}

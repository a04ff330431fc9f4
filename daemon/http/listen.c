/* SPDX-License-Identifier: MIT */
/*
 * listen — the listening socket: one bound here (a plain bind(), nothing
 * shared) or the one the service manager passed (socket activation); the
 * address it is bound to, and whether that is a loopback one (http.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/http/http.h"
#include "daemon/log.h"
#include "lib/addr.h"

/*
 * A plain bind(): when anything else holds the address, the port is in use and
 * the caller says so. A process with a thread stuck in the kernel (an
 * uninterruptible wait on a hung disk) cannot finish exiting even after SIGKILL,
 * and its listening socket stays open until that thread returns; socket
 * activation is how a new instance serves meanwhile: systemd holds the socket and
 * hands the same one to each instance (http_listen_activated()), so there is no
 * second socket to compete with the stuck one.
 */

/* A socket bound to @ss and listening, with SO_REUSEADDR (a restart binds over
 * connections left in TIME_WAIT). The descriptor or -errno. */
static int listening_socket(const struct sockaddr_storage *ss, bool v6only)
{
	socklen_t len =
		ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r;
	int one = 1, v6o = v6only;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss->ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6o, sizeof(v6o)) < 0) ||
	    bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int http_listen(const char *host, uint16_t port, uint16_t *bound_port)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	/* "" means every address: one dual-stack socket. */
	bool v6 = host[0] == '\0' || strchr(host, ':'), v6only = host[0] != '\0';
	socklen_t len = sizeof(ss);
	int fd, r;

	if (!v6) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -EINVAL;
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		if (host[0] && inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
	}
	fd = listening_socket(&ss, v6only);
	if (fd == -EAFNOSUPPORT && host[0] == '\0') {
		/* Every address on a kernel without IPv6: IPv4 only. */
		memset(&ss, 0, sizeof(ss));
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		fd = listening_socket(&ss, false);
	}
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*bound_port = ntohs(ss.ss_family == AF_INET ? sin->sin_port : sin6->sin6_port);
	return fd;
}

int http_listen_activated(unsigned *n_fds)
{
	int n = sd_listen_fds(1), fd = SD_LISTEN_FDS_START, r, flags;

	*n_fds = n > 0 ? (unsigned)n : 0;
	if (n <= 0)
		return n;
	if (n > 1)
		return -E2BIG;
	r = sd_is_socket_inet(fd, 0, SOCK_STREAM, 1, 0);
	if (r < 0)
		return r;
	if (r == 0)
		return -ENOTSOCK;
	/* As http_listen() makes its own: non-blocking, not inherited. */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return fd;
}

int http_local_address(int fd, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	const void *a;
	uint16_t port;
	bool v6;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	v6 = ss.ss_family == AF_INET6;
	if (!v6 && ss.ss_family != AF_INET)
		return -EAFNOSUPPORT;
	a = v6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
	       : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
	port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
			: ((struct sockaddr_in *)&ss)->sin_port);
	if (!inet_ntop(ss.ss_family, a, ip, sizeof(ip)))
		return -errno;
	return addr_format(buf, n, ip, port);
}

/* 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104: a client can only be on this host. */
static bool sockaddr_is_loopback(const struct sockaddr_storage *ss)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;

	if (ss->ss_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24 == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(a6) ||
		       (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
	return false;
}

bool http_host_is_loopback(const char *host)
{
	struct sockaddr_storage ss = {0};

	/* Always a loopback address, never looked up (RFC 6761, 6.3). */
	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	return sockaddr_is_loopback(&ss);
}

bool http_socket_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && sockaddr_is_loopback(&ss);
}

/* The socket the service manager passed, if any (*fd -1 when none). EX_OK or EX_USAGE. */
static int activated_listener(int *fd, char *where, size_t len)
{
	unsigned n_fds;
	int r = http_listen_activated(&n_fds);

	if (r == -E2BIG)
		log_error("The service manager passed %u sockets; iopulse serves on exactly one "
			  "(check ListenStream= in the .socket unit)",
			  n_fds);
	else if (r == -ENOTSOCK)
		log_error("The socket passed by the service manager is not a listening TCP "
			  "socket (check ListenStream= in the .socket unit)");
	else if (r < 0)
		log_error_errno(r, "Cannot use the socket passed by the service manager: %m");
	if (r < 0)
		return EX_USAGE;
	*fd = r > 0 ? r : -1;
	if (r > 0) {
		if (http_local_address(r, where, len) < 0)
			snprintf(where, len, "?");
		log_info("Using the socket passed by the service manager (%s); 'listen:' and "
			 "--listen are ignored",
			 where);
	}
	return EX_OK;
}

/* Bind 'listen:' (or --listen). EX_OK, or EX_UNAVAILABLE when the address is taken
 * or not ours to take, EXIT_FAILURE otherwise. */
static int bound_listener(const char *host, uint16_t port, int *fd, char *where, size_t len)
{
	char addr[80];
	uint16_t bound;
	int r = http_listen(host, port, &bound);

	if (r >= 0) {
		*fd = r;
		addr_format(where, len, host[0] ? host : "0.0.0.0", bound);
		return EX_OK;
	}
	addr_format(addr, sizeof(addr), host[0] ? host : "0.0.0.0", port);
	if (r == -EADDRINUSE)
		log_error("Cannot listen on %s: address already in use; stop what holds it, "
			  "pick another address ('listen:' or --listen), or run under "
			  "iopulse.socket so that systemd holds the port for every instance",
			  addr);
	else
		log_error_errno(r, "Cannot listen on %s: %m", addr);
	return r == -EADDRINUSE || r == -EADDRNOTAVAIL || r == -EACCES ? EX_UNAVAILABLE
								       : EXIT_FAILURE;
}

/*
 * The listening socket: one from the service manager wins over 'listen:' and
 * --listen (systemd holds it across restarts, so even a stuck old instance
 * cannot keep the port from a new one). EX_OK with *fd and @where, or the exit
 * status.
 */
int http_open_listener(const char *listen, const struct config *cfg, int *fd, char *where,
		       size_t len)
{
	char host[64];
	uint16_t port = cfg->listen_port;
	int r;

	snprintf(host, sizeof(host), "%s", cfg->listen_host);
	if (listen && cfg_parse_listen(listen, host, sizeof(host), &port) < 0) {
		log_error("Invalid --listen '%s': expected ADDR:PORT with a numeric address, "
			  "e.g. 127.0.0.1:10035 or [::1]:10035",
			  listen);
		return EX_USAGE;
	}
	r = activated_listener(fd, where, len);
	if (r != EX_OK || *fd >= 0)
		return r;
	return bound_listener(host, port, fd, where, len);
}

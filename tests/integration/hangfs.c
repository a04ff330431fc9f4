/* SPDX-License-Identifier: MIT */
/*
 * hangfs — a FUSE pass-through filesystem whose data path can be frozen, for
 * the integration tests: a disk that hangs, without device-mapper.
 *
 *   hangfs BACKING_DIR MOUNTPOINT [FUSE options]
 *
 * Runs in the foreground, multi-threaded, until unmounted (or SIGTERM/SIGINT).
 * Everything under MOUNTPOINT is BACKING_DIR.
 *
 *   SIGUSR1  freeze: read, write and fsync/fdatasync requests block until thawed
 *   SIGUSR2  thaw: blocked requests go on and complete normally
 *
 * Metadata (lookup, getattr, statfs, create, rename...) never blocks: like a
 * device whose queue is stuck while the page and dentry caches still answer.
 * HANGFS_FREEZE_METADATA=1 in the environment makes getattr (so stat and lookup,
 * once the kernel's 1-second attribute cache expires), statfs, open and create
 * block too, like a hung NFS server.
 *
 * A disk that fails instead (the data path only; metadata always works):
 *
 *   SIGRTMIN    every write fails with EIO; fsync and fdatasync succeed
 *   SIGRTMIN+1  flapping: every other write and every other fsync/fdatasync fails
 *               with EIO (the first of each fails), so a write ping that syncs
 *               fails and succeeds by turns
 *   SIGRTMIN+2  no more errors
 *
 * A disk that is slow (a noisy neighbour, a degraded volume), data path only:
 *
 *   SIGRTMIN+3  slow: every read, write and fsync/fdatasync waits HANGFS_DELAY_US
 *               microseconds (from the environment; 2000 when unset) before it
 *               goes on; queued with a value over 0 (sigqueue(3), procps'
 *               kill -q N), that many microseconds from then on: a disk of
 *               one fixed latency, then of another; with HANGFS_SLOW_ONE_IN=N
 *               (from the environment), only one request in N waits (the 1st,
 *               the N+1th...): a slow tail
 *   SIGRTMIN+4  fast again
 *
 * A disk that loses writes (a cache that drops them, a broken replica), data
 * path only:
 *
 *   SIGRTMIN+5  every write succeeds and stores nothing: the byte count comes
 *               back as if written, the backing file is not touched; fsync and
 *               fdatasync succeed
 *   SIGRTMIN+6  writes are stored again
 *
 * Each change is acknowledged on stderr once it is in effect, so a test can wait
 * for it instead of sleeping:
 *   "hangfs: eio writes" / "hangfs: eio flapping" / "hangfs: eio off"
 *   "hangfs: frozen" / "hangfs: thawed"
 *   "hangfs: slow (N us)" / "hangfs: fast"
 *   "hangfs: dropping writes" / "hangfs: keeping writes"
 *   "hangfs: read blocked (offset O, size N)"   a request started waiting
 *   "hangfs: read released"                     ... and went on after a thaw
 *   "hangfs: read interrupted"                  ... or was abandoned, see below
 *
 * A blocked request that the kernel interrupts (FUSE_INTERRUPT: its caller got
 * a signal, e.g. was killed) fails with EINTR, as a killable wait in a driver
 * would. Without that, a process killed while one of its threads waits here
 * stays a zombie until the thaw: the kernel waits uninterruptibly for an answer
 * to a request the filesystem already took (fs/fuse/dev.c request_wait_answer).
 * HANGFS_UNINTERRUPTIBLE=1 in the environment asks for exactly that: interrupts
 * are ignored, like a driver that waits uninterruptibly, so a test can have a
 * killed process that cannot finish exiting and keeps its descriptors.
 *
 * Files are always opened with direct_io, so every read and write reaches us
 * (no page cache in front of the freeze), whether or not the caller asked for
 * O_DIRECT. The backing files are opened without O_DIRECT: the buffers libfuse
 * hands us are not aligned, and the backing store's caching is not under test.
 */
#define FUSE_USE_VERSION 314

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define RECHECK_NS 50000000L /* how often a blocked request looks for an interrupt */

static int backing_fd = -1; /* the backing directory; every path is relative to it */

static pthread_mutex_t freeze_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t freeze_cv; /* CLOCK_MONOTONIC; broadcast on thaw */
static bool frozen;		 /* guarded by freeze_mu */
static bool uninterruptible;	 /* HANGFS_UNINTERRUPTIBLE=1: ignore FUSE_INTERRUPT */
static bool freeze_metadata;	 /* HANGFS_FREEZE_METADATA=1: metadata blocks too */

enum eio_mode { EIO_OFF, EIO_WRITES, EIO_FLAPPING };
static _Atomic int eio_mode;		       /* enum eio_mode, set by the control thread */
static _Atomic unsigned eio_writes, eio_syncs; /* requests seen since the mode was set */

#define DELAY_US_DEFAULT 2000
/* How slow "slow" is: HANGFS_DELAY_US, or the last queued SIGRTMIN+3's value. */
static _Atomic long delay_us = DELAY_US_DEFAULT;
static long slow_one_in = 1;		/* HANGFS_SLOW_ONE_IN: which requests are */
static _Atomic unsigned long slow_seen; /* data requests while slow */
static _Atomic bool slow;		/* set by the control thread */
static _Atomic bool drop_writes;	/* set by the control thread: writes store nothing */

/* ---------------------------------------------------------------- freezing */

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	flockfile(stderr);
	fputs("hangfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	fflush(stderr);
}

/*
 * Called by the data-path operations before they touch the backing file: returns
 * at once when not frozen, 0 after a thaw, -EINTR when the kernel interrupted the
 * request while it waited.
 */
static int freeze_gate(const char *op, off_t off, size_t size)
{
	bool waited = false;
	int r = 0;

	pthread_mutex_lock(&freeze_mu);
	while (frozen) {
		struct timespec ts;

		if (!waited) {
			say("%s blocked (offset %lld, size %zu)", op, (long long)off, size);
			waited = true;
		}
		if (!uninterruptible && fuse_interrupted()) {
			r = -EINTR;
			break;
		}
		/* The thaw wakes us at once; the timeout is only for interrupts, which
		 * libfuse's high-level API flags but does not signal. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += RECHECK_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&freeze_cv, &freeze_mu, &ts);
	}
	pthread_mutex_unlock(&freeze_mu);
	if (waited)
		say("%s %s", op, r ? "interrupted" : "released");
	return r;
}

/*
 * The slow disk: after the freeze gate, so a frozen request is not also delayed
 * by the time it waited. A plain sleep: a delay of milliseconds needs no
 * interrupt handling.
 */
static void slow_gate(void)
{
	struct timespec ts;
	long us = atomic_load(&delay_us);

	if (!atomic_load(&slow) || atomic_fetch_add(&slow_seen, 1) % (unsigned long)slow_one_in)
		return;
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = us % 1000000 * 1000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* True if this write (@sync false) or fsync (@sync true) is to fail with EIO. */
static bool eio_fails(bool sync)
{
	int mode = atomic_load(&eio_mode);
	unsigned n;

	if (mode == EIO_OFF)
		return false;
	if (mode == EIO_WRITES)
		return !sync;
	n = atomic_fetch_add(sync ? &eio_syncs : &eio_writes, 1);
	return n % 2 == 0;
}

/* SIGUSR1/SIGUSR2 and SIGRTMIN..SIGRTMIN+6 are blocked in every thread; this one
 * takes them. */
static void *control_main(void *arg)
{
	static const char *const eio_names[] = {"off", "writes", "flapping"};
	sigset_t *set = arg;

	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si);

		if (sig < 0)
			continue;
		if (sig >= SIGRTMIN && sig <= SIGRTMIN + 2) {
			int mode = sig == SIGRTMIN	 ? EIO_WRITES
				   : sig == SIGRTMIN + 1 ? EIO_FLAPPING
							 : EIO_OFF;

			atomic_store(&eio_writes, 0);
			atomic_store(&eio_syncs, 0);
			atomic_store(&eio_mode, mode);
			say("eio %s", eio_names[mode]);
			continue;
		}
		if (sig == SIGRTMIN + 3 || sig == SIGRTMIN + 4) {
			/* The delay first: no request sleeps the old one after "slow". */
			if (sig == SIGRTMIN + 3 && si.si_code == SI_QUEUE &&
			    si.si_value.sival_int > 0)
				atomic_store(&delay_us, (long)si.si_value.sival_int);
			atomic_store(&slow, sig == SIGRTMIN + 3);
			if (sig == SIGRTMIN + 3)
				say("slow (%ld us)", atomic_load(&delay_us));
			else
				say("fast");
			continue;
		}
		if (sig == SIGRTMIN + 5 || sig == SIGRTMIN + 6) {
			atomic_store(&drop_writes, sig == SIGRTMIN + 5);
			say("%s writes", sig == SIGRTMIN + 5 ? "dropping" : "keeping");
			continue;
		}
		pthread_mutex_lock(&freeze_mu);
		frozen = sig == SIGUSR1;
		pthread_cond_broadcast(&freeze_cv);
		pthread_mutex_unlock(&freeze_mu);
		say("%s", sig == SIGUSR1 ? "frozen" : "thawed");
	}
	return NULL;
}

/* ---------------------------------------------------------------- pass-through */

/* "/a/b" -> "a/b", "/" -> "." (relative to backing_fd). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static void *hang_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* Inode numbers from the backing store: the daemon compares st_ino of its
	 * open file with the name's. No attribute or entry caching: every stat
	 * asks us, so renames and unlinks show at once. */
	cfg->use_ino = 1;
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->hard_remove = 1; /* no .fuse_hidden files for unlinked open files */
	cfg->direct_io = 1;
	return NULL;
}

/* The gate for a metadata request: open unless HANGFS_FREEZE_METADATA=1. */
static int metadata_gate(const char *op)
{
	return freeze_metadata ? freeze_gate(op, 0, 0) : 0;
}

static int hang_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int r = metadata_gate("getattr");

	if (r)
		return r;
	r = fi ? fstat((int)fi->fh, st) : fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
	return r < 0 ? -errno : 0;
}

static int hang_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int hang_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dirent *de;
	DIR *d;
	int fd;

	(void)off;
	(void)fi;
	(void)flags;
	fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type)};

		if (fill(buf, de->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int hang_mkdir(const char *path, mode_t mode)
{
	return mkdirat(backing_fd, rel(path), mode) < 0 ? -errno : 0;
}

static int hang_unlink(const char *path)
{
	return unlinkat(backing_fd, rel(path), 0) < 0 ? -errno : 0;
}

static int hang_rmdir(const char *path)
{
	return unlinkat(backing_fd, rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int hang_symlink(const char *target, const char *path)
{
	return symlinkat(target, backing_fd, rel(path)) < 0 ? -errno : 0;
}

/* RENAME_NOREPLACE and RENAME_EXCHANGE go through as they are. */
static int hang_rename(const char *from, const char *to, unsigned int flags)
{
	return renameat2(backing_fd, rel(from), backing_fd, rel(to), flags) < 0 ? -errno : 0;
}

static int hang_link(const char *from, const char *to)
{
	return linkat(backing_fd, rel(from), backing_fd, rel(to), 0) < 0 ? -errno : 0;
}

static int hang_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(backing_fd, rel(path), mode, 0);

	return r < 0 ? -errno : 0;
}

static int hang_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int r = fi ? fchown((int)fi->fh, uid, gid)
		   : fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);

	return r < 0 ? -errno : 0;
}

static int hang_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, r;

	if (fi)
		return ftruncate((int)fi->fh, size) < 0 ? -errno : 0;
	fd = openat(backing_fd, rel(path), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = ftruncate(fd, size) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int hang_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	int r = fi ? futimens((int)fi->fh, tv)
		   : utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);

	return r < 0 ? -errno : 0;
}

/* The caller's open flags minus what must not reach the backing file. */
static int backing_flags(int flags)
{
	return (flags & ~(O_DIRECT | O_NOCTTY)) | O_CLOEXEC;
}

static int hang_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = metadata_gate("create");

	if (fd)
		return fd;
	fd = openat(backing_fd, rel(path), backing_flags(fi->flags) | O_CREAT, mode);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int hang_open(const char *path, struct fuse_file_info *fi)
{
	int fd = metadata_gate("open");

	if (fd)
		return fd;
	fd = openat(backing_fd, rel(path), backing_flags(fi->flags));
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int hang_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;
	int r;

	(void)path;
	r = freeze_gate("read", off, size);
	if (r < 0)
		return r;
	slow_gate();
	n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int hang_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	ssize_t n;
	int r;

	(void)path;
	r = freeze_gate("write", off, size);
	if (r < 0)
		return r;
	slow_gate();
	if (eio_fails(false))
		return -EIO;
	if (atomic_load(&drop_writes)) /* lost, and nobody is told */
		return (int)size;
	n = pwrite((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int hang_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int r;

	(void)path;
	r = freeze_gate(datasync ? "fdatasync" : "fsync", 0, 0);
	if (r < 0)
		return r;
	slow_gate();
	if (eio_fails(true))
		return -EIO;
	r = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
	return r < 0 ? -errno : 0;
}

static int hang_statfs(const char *path, struct statvfs *sv)
{
	int r = metadata_gate("statfs");

	(void)path;
	if (r)
		return r;
	return fstatvfs(backing_fd, sv) < 0 ? -errno : 0;
}

/* close(2) of one of the caller's descriptors: nothing is buffered here. */
static int hang_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

static int hang_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static const struct fuse_operations hang_ops = {
	.init = hang_init,
	.getattr = hang_getattr,
	.readlink = hang_readlink,
	.readdir = hang_readdir,
	.mkdir = hang_mkdir,
	.unlink = hang_unlink,
	.rmdir = hang_rmdir,
	.symlink = hang_symlink,
	.rename = hang_rename,
	.link = hang_link,
	.chmod = hang_chmod,
	.chown = hang_chown,
	.truncate = hang_truncate,
	.utimens = hang_utimens,
	.create = hang_create,
	.open = hang_open,
	.read = hang_read,
	.write = hang_write,
	.fsync = hang_fsync,
	.statfs = hang_statfs,
	.flush = hang_flush,
	.release = hang_release,
};

int main(int argc, char **argv)
{
	static sigset_t control;
	pthread_condattr_t ca;
	pthread_t thread;
	char **fargv;
	int fargc = 0, r;

	if (argc < 3) {
		fprintf(stderr, "usage: %s BACKING_DIR MOUNTPOINT [FUSE options]\n", argv[0]);
		return 64;
	}
	backing_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (backing_fd < 0) {
		fprintf(stderr, "hangfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	uninterruptible = getenv("HANGFS_UNINTERRUPTIBLE") &&
			  strcmp(getenv("HANGFS_UNINTERRUPTIBLE"), "1") == 0;
	if (uninterruptible)
		say("ignoring interrupts");
	freeze_metadata = getenv("HANGFS_FREEZE_METADATA") &&
			  strcmp(getenv("HANGFS_FREEZE_METADATA"), "1") == 0;
	if (freeze_metadata)
		say("freezing metadata too");
	if (getenv("HANGFS_DELAY_US")) {
		char *end;

		long us;

		errno = 0;
		us = strtol(getenv("HANGFS_DELAY_US"), &end, 10);
		if (errno || end == getenv("HANGFS_DELAY_US") || *end || us < 0 || us > 60000000L) {
			fprintf(stderr, "hangfs: HANGFS_DELAY_US: not 0..60000000 microseconds\n");
			return 64;
		}
		atomic_store(&delay_us, us);
	}
	if (getenv("HANGFS_SLOW_ONE_IN")) {
		char *end;

		errno = 0;
		slow_one_in = strtol(getenv("HANGFS_SLOW_ONE_IN"), &end, 10);
		if (errno || end == getenv("HANGFS_SLOW_ONE_IN") || *end || slow_one_in < 1 ||
		    slow_one_in > 1000000L) {
			fprintf(stderr, "hangfs: HANGFS_SLOW_ONE_IN: not 1..1000000\n");
			return 64;
		}
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&freeze_cv, &ca);
	pthread_condattr_destroy(&ca);

	/* Before any thread exists, so that libfuse's workers inherit the mask. */
	sigemptyset(&control);
	sigaddset(&control, SIGUSR1);
	sigaddset(&control, SIGUSR2);
	for (int i = 0; i <= 6; i++)
		sigaddset(&control, SIGRTMIN + i);
	r = pthread_sigmask(SIG_BLOCK, &control, NULL);
	if (r == 0)
		r = pthread_create(&thread, NULL, control_main, &control);
	if (r != 0) {
		fprintf(stderr, "hangfs: cannot start the control thread: %s\n", strerror(r));
		return 1;
	}

	/* argv[0] MOUNTPOINT -f -o ... [caller's options] */
	fargv = calloc((size_t)argc + 4, sizeof(*fargv));
	if (!fargv)
		return 1;
	fargv[fargc++] = argv[0];
	fargv[fargc++] = argv[2];
	fargv[fargc++] = "-f";
	fargv[fargc++] = "-ofsname=hangfs,subtype=hangfs";
	for (int i = 3; i < argc; i++)
		fargv[fargc++] = argv[i];
	r = fuse_main(fargc, fargv, &hang_ops, NULL);
	free(fargv);
	return r;
}

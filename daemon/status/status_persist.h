/* SPDX-License-Identifier: MIT */
/*
 * status_persist — the state file: what the status keeps that must outlive the
 * process (issue 29: a restart does not end an incident), its format and its
 * way back in.
 *
 * What is saved: each probe op's ring (status.h: the minute and 10-minute
 * records with their slow and held bits, so that a baseline restored after a restart
 * mid-incident is still the one from before the incident) under the hash of
 * what the probe measures (cfg_probe_fingerprint()), and each target's
 * judgement (state, since when, code) with what the target was (its path and
 * the identity its lane pinned). Nothing here reads or writes a file, logs or
 * reads a clock: daemon/targets/statefile.c moves the bytes, daemon/statefile.c
 * decides and logs.
 *
 * The format, version 2 (1 had no held bits), integers little-endian:
 *
 *   0   "IOPULSE-STATE-FILE\n\0"    STATUS_STATE_MAGIC and a NUL: `head -1` says
 *                                   what it is
 *   20  u32 version
 *   24  u32 length of the whole file
 *   28  u32 CRC-32 (zlib's) of the whole file, these 4 bytes counted as 0
 *   32  f64 written, Unix time; u16 targets; u16 series
 *       each target: name (u8 length, bytes), path (u16 length, bytes),
 *         identity (u8 known, u8 kind, u64 dev, i64 fs_type), judgement (u8
 *         state, f64 since, code (u8 length, bytes))
 *       each series: probe and target (u8 length, bytes), u8 op, u32
 *         fingerprint, the ring (u16 min_head, min_n, blk_head, blk_n;
 *         STATUS_MINUTES then STATUS_BLOCKS records of u32 count and
 *         STATUS_QUANTILES u16 codes; then the slow bits, 8 and 18 bytes,
 *         and the minutes' held bits, 8 bytes),
 *         u8 shape of its last slow minute (enum status_shape), the tally
 *         of its last minutes (u8 minutes held, then as many of: u32 I/Os,
 *         u32 over the slow-I/O threshold, u32 stalls, u16 code of the
 *         longest, u8 median slow))
 *
 * The header (the first 32 bytes) is the same in every version; any change
 * after it, or to a struct saved, is a new version. A file is taken whole or
 * not at all: every field is checked (lengths, ranges, the bits past the
 * rings' ends, names unique, nothing after the last series).
 */
#ifndef IOPULSE_STATUS_PERSIST_H
#define IOPULSE_STATUS_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "daemon/status/status.h"

#define STATUS_STATE_FILE	".iopulse-state"	  /* in the state directory */
#define STATUS_STATE_TMP_PREFIX STATUS_STATE_FILE ".tmp." /* and 16 hex digits: being written */
#define STATUS_STATE_MAGIC	"IOPULSE-STATE-FILE\n"	  /* the file starts so */
#define STATUS_STATE_VERSION	2u
#define STATUS_STATE_HEADER	32   /* bytes of the header, the same in every version */
#define STATUS_STATE_PATH_MAX	1024 /* a target's path, as struct status_target has it */
#define STATUS_STATE_MAX_SERIES (CFG_MAX_PROBES * IO_OP_COUNT)
/* The largest file version 2 can be (names at their longest): a file over it
 * is not ours. */
#define STATUS_STATE_NAME_BYTES (1 + CFG_NAME_MAX - 1) /* a name: its length, its bytes */
#define STATUS_STATE_TARGET_BYTES                                                                  \
	(STATUS_STATE_NAME_BYTES + 2 + STATUS_STATE_PATH_MAX - 1 + 18 + 1 + 8 + 1 + 15)
#define STATUS_STATE_SERIES_BYTES                                                                  \
	(2 * STATUS_STATE_NAME_BYTES + 1 + 4 + 8 +                                                 \
	 (STATUS_MINUTES + STATUS_BLOCKS) * (4 + 2 * STATUS_QUANTILES) +                           \
	 2 * ((STATUS_MINUTES + 7) / 8) + (STATUS_BLOCKS + 7) / 8 + 1 + 1 +                        \
	 STATUS_JUDGE_MINUTES * 15)
#define STATUS_STATE_MAX_BYTES                                                                     \
	(STATUS_STATE_HEADER + 12 + CFG_MAX_TARGETS * STATUS_STATE_TARGET_BYTES +                  \
	 STATUS_STATE_MAX_SERIES * STATUS_STATE_SERIES_BYTES)

/* A file written longer ago than this is refused: nothing of its rings would
 * be left (24 hours of 10-minute records). */
#define STATUS_STATE_MAX_AGE_S (86400.0)
/* One written this far ahead of the clock is refused (a clock stepped back by
 * less, NTP's ordinary correction, is not a file from the future). */
#define STATUS_STATE_FUTURE_S (300.0)
/* A judgement saved longer ago than this is not restored: the target may have
 * changed state many times meanwhile, and its since would claim otherwise. Its
 * baselines are. */
#define STATUS_JUDGEMENT_MAX_AGE_S (900.0)
/* How long after the start a target restored slow is still slow while it is
 * up and none of its probe ops has a baseline yet (status_judge_in's
 * restored): a probe op whose ring came back has one at its first tick. */
#define STATUS_RESTORE_HOLD_S (120.0)

/* A target's saved state. */
struct status_saved_target {
	char name[CFG_NAME_MAX];
	char path[STATUS_STATE_PATH_MAX];
	struct status_identity id;
	struct status_judgement j;
};

/* A probe op's saved ring. */
struct status_saved_series {
	char probe[CFG_NAME_MAX];
	char target[CFG_NAME_MAX];
	uint8_t op;	      /* enum io_op */
	uint32_t fingerprint; /* cfg_probe_fingerprint() of the probe that measured it */
	struct status_ring ring;
	uint8_t shape;		   /* enum status_shape of its last slow minute */
	struct status_tally tally; /* its last minutes, for the tail and the stalls */
};

/* A state file's contents. */
struct status_saved {
	double written_s; /* Unix time */
	unsigned n_targets, n_series;
	struct status_saved_target *targets;
	struct status_saved_series *series;
};

/* Frees the arrays of @s (not @s); NULL arrays are fine. */
void status_saved_free(struct status_saved *s);

/* Why a file was refused (status_state_decode()). */
enum status_state_refusal {
	STATUS_STATE_E_FOREIGN,	  /* not a state file: no magic */
	STATUS_STATE_E_TRUNCATED, /* ours, cut short */
	STATUS_STATE_E_CORRUPT,	  /* ours, its checksum or its fields wrong */
	STATUS_STATE_E_VERSION,	  /* ours, another version */
	STATUS_STATE_E_TOO_OLD,	  /* written over STATUS_STATE_MAX_AGE_S ago */
	STATUS_STATE_E_FUTURE,	  /* written after now (beyond STATUS_STATE_FUTURE_S) */
};

/* @s as the file's bytes, appended to @out (which the caller frees): 0, -EINVAL
 * for more targets or series than the format holds, or -ENOMEM. */
int status_state_encode(const struct status_saved *s, struct buf *out);

/*
 * The @len bytes @data as a state file read at Unix time @now_s: 0 with *@out
 * filled (status_saved_free() it), -ENOMEM, or -EBADMSG with *@why and a
 * sentence for the log in @msg ("truncated: 1200 of 5000 bytes").
 */
int status_state_decode(const void *data, size_t len, double now_s, struct status_saved *out,
			enum status_state_refusal *why, char *msg, size_t msg_len);

/* Whether a state saved for a target of identity @saved may be restored to one
 * of identity @now: both known, the same kind, device and (but for a device)
 * filesystem type. */
bool status_identity_same(const struct status_identity *saved, const struct status_identity *now);

/* Pushes the empty records of @seconds with no I/O into @r (a minute record per
 * whole minute, a block per whole 10 minutes, at most the ring's size): a ring
 * restored after a gap has the gap in it. */
void status_ring_age(struct status_ring *r, double seconds);

/* ---- into and out of a running status (status_restore.c) ---- */

/*
 * Before the first tick: the ring of @s, saved at Unix time @saved_s, waits for
 * its series (same probe, target and op) to appear; the first tick that makes
 * it takes the ring, aged by the time since @saved_s, when its probe's
 * fingerprint is still @s's (else drops it). 0 or -ENOMEM.
 */
int status_restore_series(struct status *st, const struct status_saved_series *s, double saved_s);

/*
 * Before the first request: the judgement of target @t (saved with its path and
 * identity, which the caller found the same), restored at Unix time @now_s,
 * is the target's last judgement until it is judged other than starting or
 * slow (status_restore_done()), STATUS_RESTORE_HOLD_S at most.
 * 0 or -ENOMEM.
 */
int status_restore_judgement(struct status *st, const struct status_saved_target *t, double now_s);

/* The judgement restored for @target that still holds, in *@out; false when
 * none does (one restored over STATUS_RESTORE_HOLD_S ago is dropped). */
bool status_restored_judgement(struct status *st, const char *target, struct status_judgement *out);

/* Target @target was judged other than starting or slow with the judgement
 * restored for it (status_judge_in's restored): it is done with. */
void status_restore_done(struct status *st, const char *target);

/*
 * What the state file keeps now, into @out (status_saved_free() it), written at
 * @now_s: every series' ring and fingerprint; every target its lane has had
 * open (its path and identity then), with the last request's judgement of it,
 * or the one restored, or none (starting); and what was restored and nothing
 * has taken yet. 0 or -ENOMEM. Under the mutex, no I/O.
 */
int status_save_collect(struct status *st, double now_s, struct status_saved *out);

/* @fn(@arg, the tick's time) is called for the first tick, then for the first
 * a minute or more (of ticks) after the last call, by status_tell_minute()
 * (the tick's thread, outside the mutex: it must not block); NULL: none. */
void status_on_minute(struct status *st, void (*fn)(void *arg, uint64_t tick_ns), void *arg);
/* The tick's thread, once the targets are judged on the ticks' figures (so
 * that a target turning slow at a minute mark is in the save that minute
 * starts): the minute due, if one is, told. */
void status_tell_minute(struct status *st);

#endif

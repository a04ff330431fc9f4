/* SPDX-License-Identifier: MIT */
/*
 * lane_reload — what of a lane outlives a reload (lane.h): lanes of their own
 * allocation, retired when a reload leaves them in the kernel and freed by
 * their own thread when their I/O returns; what one hands over to the
 * target's next lane; and the target's claim, the right to do I/O on it,
 * which passes from one to the other.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "engines/engine.h"
#include "daemon/log.h"
#include "daemon/sched/lane_int.h"
#include "lib/path.h"

/* ---------------------------------------------------------------- the claim */

/*
 * The right to do I/O on one place (a directory, file or device path): a lane
 * takes it before its first I/O and keeps it until it is destroyed. There is
 * one per place, process-wide, for as long as a lane (or a handover) of that
 * place exists: every lane of a target, and of any target on the same place,
 * shares it, whatever the reloads in between did (the target removed and
 * added again, moved away and back, its path spelled another way). So a lane
 * waits while an older one of its place is still in the kernel, however that
 * one was let go of. A place is a path as path_lexical() spells it: two
 * spellings of one directory through a symbolic link are two places (telling
 * them apart would ask a filesystem that may hang; sched_check_distinct_targets()
 * refuses them when it can stat them).
 */
struct lane_claim {
	pthread_mutex_t mu;
	pthread_cond_t cv;	   /* holder let go, or a waiter's lane stops */
	const struct lane *holder; /* (mu) the lane that may do I/O on the place; NULL: none */
	uint64_t since_ns;	 /* (mu) a retired holder's I/O in flight began then; 0: unknown */
	unsigned refs;		 /* (claims_mu) lanes and handovers that have it */
	struct lane_claim *next; /* (claims_mu) in claims */
	char place[];		 /* its path, path_lexical() */
};

static pthread_mutex_t claims_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lane_claim *claims; /* (claims_mu) every claim a lane or handover holds */

/* A new claim of @place, not listed yet; NULL out of memory. */
static struct lane_claim *claim_new(const char *place)
{
	struct lane_claim *c = calloc(1, sizeof(*c) + strlen(place) + 1);

	if (!c)
		return NULL;
	if (pthread_mutex_init(&c->mu, NULL)) {
		free(c);
		return NULL;
	}
	if (pthread_cond_init(&c->cv, NULL)) {
		pthread_mutex_destroy(&c->mu);
		free(c);
		return NULL;
	}
	strcpy(c->place, place);
	return c;
}

struct lane_claim *lane_claim_of(const struct cfg_target *t)
{
	char place[PATH_MAX];
	struct lane_claim *c;

	/* A path longer than PATH_MAX is cut alike each time: still one place. */
	(void)path_lexical(t->path, place, sizeof(place));
	pthread_mutex_lock(&claims_mu);
	for (c = claims; c && strcmp(c->place, place) != 0; c = c->next)
		;
	if (!c && (c = claim_new(place))) {
		c->next = claims;
		claims = c;
	}
	if (c)
		c->refs++;
	pthread_mutex_unlock(&claims_mu);
	return c;
}

static struct lane_claim *claim_ref(struct lane_claim *c)
{
	pthread_mutex_lock(&claims_mu);
	c->refs++;
	pthread_mutex_unlock(&claims_mu);
	return c;
}

static void claim_unref(struct lane_claim *c)
{
	bool last;

	if (!c)
		return;
	pthread_mutex_lock(&claims_mu);
	last = --c->refs == 0;
	for (struct lane_claim **pp = &claims; last && *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&claims_mu);
	if (!last)
		return;
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int lane_claim(struct lane *l)
{
	struct lane_claim *c = l->claim;
	bool waited = false;

	if (l->claimed)
		return 0;
	pthread_mutex_lock(&c->mu);
	while (c->holder && !atomic_load(&l->stopping)) {
		/* The target is still the old lane's, in the kernel: its I/O is the
		 * one in flight, for whoever looks (stuck, once past the timeout). */
		if (!waited)
			atomic_store(&l->inflight_ns, c->since_ns ? c->since_ns : eng_now_ns());
		waited = true;
		pthread_cond_wait(&c->cv, &c->mu);
	}
	if (!c->holder) {
		c->holder = l;
		l->claimed = true;
	}
	pthread_mutex_unlock(&c->mu);
	if (waited)
		atomic_store(&l->inflight_ns, 0);
	return l->claimed ? 0 : -ECANCELED;
}

void lane_claim_wake(struct lane *l)
{
	struct lane_claim *c = l->claim;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

void lane_claim_release(struct lane *l)
{
	struct lane_claim *c = l->claim;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	if (c->holder == l) {
		c->holder = NULL;
		c->since_ns = 0;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	claim_unref(c);
	l->claim = NULL;
}

/* ---------------------------------------------------------------- lanes */

/* Lanes let go of in the kernel and not yet gone (lane_let_go()). */
static atomic_uint lanes_retired;

unsigned lane_retired_count(void)
{
	return atomic_load(&lanes_retired);
}

void lane_gone(struct lane *l)
{
	lane_free(l);
	atomic_fetch_sub(&lanes_retired, 1);
}

struct lane *lane_new(const struct config *cfg, unsigned ti, struct metrics *m, int *err)
{
	struct lane *l = malloc(sizeof(*l));
	int r;

	if (!l) {
		*err = -ENOMEM;
		return NULL;
	}
	r = lane_init(l, cfg, ti, m);
	if (r < 0) {
		lane_free(l);
		*err = r;
		return NULL;
	}
	return l;
}

void lane_free(struct lane *l)
{
	if (!l)
		return;
	lane_destroy(l);
	free(l);
}

void lane_retire(struct lane *l)
{
	struct lane_claim *c = l->claim;
	uint64_t since = 0;

	/* Once no publication is in progress, and none can start. */
	pthread_mutex_lock(&l->pub_mu);
	pthread_mutex_lock(&l->mu);
	atomic_store(&l->retired, true);
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_unlock(&l->pub_mu);

	lane_inflight(l, &since);
	pthread_mutex_lock(&c->mu);
	if (c->holder == l)
		c->since_ns = since;
	pthread_mutex_unlock(&c->mu);
}

/* Under its gate and mutex: a retired lane's thread may still be running (its
 * day's count changes under the gate, lane_account()). */
void lane_hand_over(struct lane *l, struct lane_handover *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_lock(&l->pub_mu);
	pthread_mutex_lock(&l->mu);
	h->config = cfg_ref(l->config);
	h->cfg = l->cfg;
	h->claim = claim_ref(l->claim);
	h->timeout_claimed = atomic_load(&l->timeout_claimed);
	h->stuck_logged = atomic_load(&l->stuck_logged);
	h->up = atomic_load(&l->up);
	h->budget_day = l->budget_day;
	h->written_today = l->written_today;
	h->budget_spent = l->budget_spent;
	h->busy_ns = atomic_load(&l->busy_ns);
	memcpy(h->duty, l->duty, sizeof(h->duty));
	h->start_wall_s = l->start_wall_s;
	h->judgement = l->judgement;
	memcpy(h->down_reason, l->down_reason, sizeof(h->down_reason));
	memcpy(h->down_code, l->down_code, sizeof(h->down_code));
	h->down_wall_s = l->down_wall_s;
	h->up_wall_s = l->up_wall_s;
	h->desc = l->series.desc;
	pthread_mutex_unlock(&l->mu);
	pthread_mutex_unlock(&l->pub_mu);
}

bool lane_let_go(struct lane *l, struct lane_handover *h)
{
	if (h)
		lane_hand_over(l, h);
	pthread_mutex_lock(&l->mu);
	if (l->started && !l->exited) {
		l->let_go = true;
		atomic_fetch_add(&lanes_retired, 1);
		pthread_detach(l->thread);
		pthread_mutex_unlock(&l->mu);
		return true;
	}
	pthread_mutex_unlock(&l->mu);
	if (l->started && !l->joined)
		pthread_join(l->thread, NULL);
	lane_free(l);
	return false;
}

bool lane_follow(struct lane *l, const struct lane_handover *h)
{
	if (l->claim != h->claim)
		return false;
	atomic_store(&l->timeout_claimed, h->timeout_claimed);
	atomic_store(&l->stuck_logged, h->stuck_logged);
	return true;
}

void lane_handover_release(struct lane_handover *h)
{
	claim_unref(h->claim);
	h->claim = NULL;
	cfg_free(h->config);
	h->config = NULL;
	h->cfg = NULL;
}

void lane_take_over(struct lane *l, const struct lane_handover *h)
{
	atomic_store(&l->up, h->up);
	/* The same day's count: a reload is no reason to write more than the budget
	 * (nor to log that it is spent again). */
	l->budget_day = h->budget_day;
	l->written_today = h->written_today;
	l->budget_spent = h->budget_spent;
	/* The duty cycle's window goes on from the same busy time. */
	atomic_store(&l->busy_ns, h->busy_ns);
	memcpy(l->duty, h->duty, sizeof(l->duty));
	/* The same state since the same time: a reload is no new state. */
	l->start_wall_s = h->start_wall_s;
	l->judgement = h->judgement;
	memcpy(l->down_reason, h->down_reason, sizeof(l->down_reason));
	memcpy(l->down_code, h->down_code, sizeof(l->down_code));
	l->down_wall_s = h->down_wall_s;
	l->up_wall_s = h->up_wall_s;
	if (probe_metrics_target_info(&l->series, &h->desc) < 0)
		log_warning("Target %s: out of memory for iopulse_target_info, ignoring",
			    l->cfg->name);
}

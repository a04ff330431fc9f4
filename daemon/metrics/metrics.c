/* SPDX-License-Identifier: MIT */
/*
 * metrics — registry of families and series; its consistent snapshots are in
 * snapshot.c, what both share in metrics_int.h.
 *
 * One pthread mutex in the registry guards everything: the family list, each
 * family's series list, and every value (including histogram series). Writers
 * hold it for a few increments (or one histogram merge); metrics_snapshot()
 * holds it for a deep copy and sorts after releasing it. A native snapshot
 * holds it no longer than that: it copies each histogram (one flat array merge)
 * and derives the native view — allocations, a walk over every bucket, span
 * building — from the copies once the mutex is released.
 *
 * Render cache: every series has a generation, bumped by each update under the
 * mutex, and a shared, reference-counted part (label values and the cache slots)
 * that snapshots point to instead of copying: a snapshot of a series whose slot
 * holds bytes for its current generation takes a reference to those bytes and
 * copies nothing else. Snapshots never strdup() label values; the shared part
 * outlives a dropped series (or a freed registry) until the last snapshot
 * holding it is freed. Slots are read and replaced under the mutex; the bytes
 * themselves are immutable and reference-counted, so a snapshot reads them
 * without the mutex. Reference counts are plain integers under the mutex (no
 * atomic operation per series): a cached snapshot is taken and freed with the
 * mutex held for a pass over its series, so it must be freed before the
 * registry. Plain snapshots (metrics_snapshot_ex()) copy the label values and
 * hold no reference: they outlive the registry.
 *
 * Each family keeps its series sorted by label values (inserted in place), so a
 * snapshot needs no sort of its series.
 *
 * Lookups are linear scans over plain arrays. We expect tens of families and at
 * most a few hundred series (probes x targets x ops); below ~2000 series a scan is
 * cheaper to reason about than a hash table and fast enough for series that are
 * created once and then reused through their pointer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/utf8.h"
#include "daemon/metrics/metrics.h"
#include "daemon/metrics/metrics_int.h"

/* ---- helpers ---- */

static bool name_valid(const char *s, bool colon)
{
	const char *p;

	if (!s || !*s)
		return false;
	for (p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (p != s && c >= '0' && c <= '9');

		if (!ok)
			return false;
	}
	return true;
}

/* With the mutex held (the shared part's count), or in metrics_free(). */
static void series_free(struct metric_series *s)
{
	if (!s)
		return;
	shared_unref(s->shared);
	hist_free(s->hist);
	free(s);
}

static void family_free(struct metric_family *f)
{
	unsigned i;

	if (!f)
		return;
	for (i = 0; i < f->n_series; i++)
		series_free(f->series[i]);
	free(f->series);
	for (i = 0; i < METRICS_MAX_LABELS; i++)
		free(f->labels[i]);
	free(f->name);
	free(f->help);
	free(f);
}

/* ---- registry ---- */

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m);
		return NULL;
	}
	m->native_schema = METRICS_NATIVE_SCHEMA;
	m->native_zero_threshold = METRICS_NATIVE_ZERO_THRESHOLD;
	return m;
}

void metrics_set_native(struct metrics *m, int schema, double zero_threshold_s)
{
	unsigned i, j;

	if (!m)
		return;
	if (schema < HIST_NATIVE_MIN)
		schema = HIST_NATIVE_MIN;
	if (schema > HIST_NATIVE_SCHEMA)
		schema = HIST_NATIVE_SCHEMA;
	/* "!(> 0)" also catches NaN. */
	if (!(zero_threshold_s > 0))
		zero_threshold_s = METRICS_NATIVE_ZERO_THRESHOLD;
	pthread_mutex_lock(&m->lock);
	m->native_schema = schema;
	m->native_zero_threshold = zero_threshold_s;
	/* Renderings with the native view are stale: make every series new. */
	for (i = 0; i < m->n_families; i++)
		for (j = 0; j < m->families[i]->n_series; j++)
			m->families[i]->series[j]->gen++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_free(struct metrics *m)
{
	unsigned i;

	if (!m)
		return;
	for (i = 0; i < m->n_families; i++)
		family_free(m->families[i]);
	free(m->families);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static bool family_matches(const struct metric_family *f, enum metric_type type,
			   const char *const *labels, unsigned n_labels, const uint64_t *bounds_ns,
			   unsigned n_bounds)
{
	unsigned i;

	if (f->type != type || f->n_labels != n_labels)
		return false;
	for (i = 0; i < n_labels; i++)
		if (strcmp(f->labels[i], labels[i]) != 0)
			return false;
	if (type == METRIC_HISTOGRAM &&
	    (f->n_bounds != n_bounds ||
	     (n_bounds && memcmp(f->bounds_ns, bounds_ns, n_bounds * sizeof(*bounds_ns)) != 0)))
		return false;
	return true;
}

static bool labels_valid(enum metric_type type, const char *const *labels, unsigned *n)
{
	unsigned i, j;

	for (i = 0; labels && labels[i]; i++) {
		if (i >= METRICS_MAX_LABELS || !name_valid(labels[i], false) ||
		    strncmp(labels[i], "__", 2) == 0)
			return false;
		if (type == METRIC_HISTOGRAM && strcmp(labels[i], "le") == 0)
			return false;
		for (j = 0; j < i; j++)
			if (strcmp(labels[i], labels[j]) == 0)
				return false;
	}
	*n = i;
	return true;
}

/* Where the family @name is in m->families, or would go (kept sorted by name so
 * that snapshots need no sort). Under the lock. */
static unsigned family_find(const struct metrics *m, const char *name)
{
	unsigned lo = 0, hi = m->n_families;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (strcmp(m->families[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct metric_family *metrics_family(struct metrics *m, const char *name, enum metric_type type,
				     const char *help, const char *const *labels,
				     const uint64_t *bounds_ns, unsigned n_bounds)
{
	struct metric_family *f = NULL;
	unsigned n_labels, i, at;
	struct hist *probe;

	if (!m || !name_valid(name, true) || !labels_valid(type, labels, &n_labels))
		return NULL;
	if (type != METRIC_COUNTER && type != METRIC_GAUGE && type != METRIC_HISTOGRAM)
		return NULL;
	if (type != METRIC_HISTOGRAM)
		n_bounds = 0;
	/* Let hist_new() judge the bounds, once, here rather than per series. */
	if (type == METRIC_HISTOGRAM) {
		probe = hist_new(bounds_ns, n_bounds);
		if (!probe)
			return NULL;
		hist_free(probe);
	}

	pthread_mutex_lock(&m->lock);
	at = family_find(m, name);
	if (at < m->n_families && strcmp(m->families[at]->name, name) == 0) {
		f = m->families[at];
		if (!family_matches(f, type, labels, n_labels, bounds_ns, n_bounds))
			f = NULL;
		goto out;
	}

	if (mem_grow(&m->families, &m->cap_families, m->n_families + 1, sizeof(*m->families)) < 0)
		goto out;
	/* The bounds only as long as they are (issue 15, memory): a registry has
	 * ~30 families, most of them no histogram. */
	f = calloc(1, sizeof(*f) + n_bounds * (sizeof(*f->bounds_ns) + sizeof(*f->bounds_s)));
	if (!f)
		goto out;
	f->bounds_s = (double *)(f->bounds_ns + n_bounds);
	f->reg = m;
	f->type = type;
	f->name = strdup(name);
	f->help = utf8_scrub_dup(help ? help : ""); /* as label values, below */
	if (!f->name || !f->help)
		goto fail;
	f->n_labels = n_labels;
	for (i = 0; i < n_labels; i++) {
		f->labels[i] = strdup(labels[i]);
		if (!f->labels[i])
			goto fail;
	}
	f->n_bounds = n_bounds;
	if (n_bounds)
		memcpy(f->bounds_ns, bounds_ns, n_bounds * sizeof(*bounds_ns));
	for (i = 0; i < n_bounds; i++)
		f->bounds_s[i] = (double)bounds_ns[i] / 1e9;
	memmove(&m->families[at + 1], &m->families[at],
		(m->n_families - at) * sizeof(*m->families));
	m->families[at] = f;
	m->n_families++;
	goto out;
fail:
	family_free(f);
	f = NULL;
out:
	pthread_mutex_unlock(&m->lock);
	return f;
}

int metrics_declare(struct metrics *m, const struct metric_def *defs, unsigned n,
		    const uint64_t *bounds_ns, unsigned n_bounds, struct metric_family **f)
{
	for (unsigned i = 0; i < n; i++) {
		f[i] = metrics_family(m, defs[i].name, defs[i].type, defs[i].help, defs[i].labels,
				      bounds_ns, n_bounds);
		if (!f[i])
			return -ENOMEM;
	}
	return 0;
}

/* ---- series ---- */

/* The snapshot order of series: label values, compared one by one. */
static int values_cmp(const char *const *a, const char *const *b, unsigned n)
{
	unsigned i;
	int c;

	for (i = 0; i < n; i++) {
		c = strcmp(a[i], b[i]);
		if (c)
			return c;
	}
	return 0;
}

/* Then by the extra labels: their number, then names and values in pairs. */
static int series_cmp(const struct metric_family *f, const struct metrics_shared *sh,
		      const char *const *values, const char *const *extra, unsigned n_extra)
{
	int c = values_cmp((const char *const *)sh->values, values, f->n_labels);

	if (c || sh->n_extra != n_extra)
		return c ? c : sh->n_extra < n_extra ? -1 : 1;
	return values_cmp((const char *const *)sh->extra, extra, 2 * n_extra);
}

/* Extra labels: valid names, none reserved, none the family's or given twice. */
static bool extra_valid(const struct metric_family *f, const char *const *extra, unsigned n_extra)
{
	if (n_extra > METRICS_MAX_EXTRA_LABELS || (n_extra && !extra))
		return false;
	for (unsigned i = 0; i < n_extra; i++) {
		const char *name = extra[2 * i];

		if (!name_valid(name, false) || !strncmp(name, "__", 2) || !extra[2 * i + 1] ||
		    (f->type == METRIC_HISTOGRAM && !strcmp(name, "le")))
			return false;
		for (unsigned j = 0; j < f->n_labels; j++)
			if (!strcmp(name, f->labels[j]))
				return false;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(name, extra[2 * j]))
				return false;
	}
	return true;
}

struct metric_series *metrics_series(struct metric_family *f, const char *const *values)
{
	return metrics_series_extra(f, values, NULL, 0);
}

/*
 * Label values as every page must carry them: valid UTF-8. A path reaches a
 * label through ${VAR} with any bytes, a device name through sysfs, and
 * Prometheus drops the whole scrape over one value that is not UTF-8, in every
 * format. Replaced here, where the text, OpenMetrics and protobuf pages all
 * take their label values from, by /status.json's rule (lib/utf8.h): the pages
 * cannot disagree, and values that differ only in bytes that are not UTF-8
 * name one series (never two series with one label set). @in[0..n) into
 * @out[0..n): as they are when valid (no allocation: a lookup of existing
 * series is the usual call), else a copy made valid, also put in @own[i] for
 * the caller to free. 0 or -ENOMEM.
 */
static int values_utf8(const char *const *in, unsigned n, const char **out, char **own)
{
	for (unsigned i = 0; i < n; i++) {
		out[i] = in[i];
		if (utf8_valid(in[i]))
			continue;
		own[i] = utf8_scrub_dup(in[i]);
		if (!own[i])
			return -ENOMEM;
		out[i] = own[i];
	}
	return 0;
}

/* metrics_series_extra() for label values that are valid UTF-8. */
static struct metric_series *series_get(struct metric_family *f, const char *const *values,
					const char *const *extra, unsigned n_extra)
{
	struct metrics *m = f->reg;
	struct metric_series *s = NULL;
	unsigned i, pos;

	pthread_mutex_lock(&m->lock);
	/* Sorted: stop at the first series that sorts after @values. */
	for (i = 0; i < f->n_series; i++) {
		int c = series_cmp(f, f->series[i]->shared, values, extra, n_extra);

		if (c == 0) {
			s = f->series[i];
			goto out;
		}
		if (c > 0)
			break;
	}
	pos = i;

	if (mem_grow(&f->series, &f->cap_series, f->n_series + 1, sizeof(*f->series)) < 0)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out;
	s->family = f;
	s->gen = 1;
	s->shared = calloc(1, sizeof(*s->shared));
	if (!s->shared)
		goto fail;
	s->shared->refs = 1;
	for (i = 0; i < f->n_labels; i++) {
		s->shared->values[i] = strdup(values[i]);
		if (!s->shared->values[i])
			goto fail;
	}
	for (i = 0; i < 2 * n_extra; i++) {
		s->shared->n_extra = i / 2 + 1; /* so that a partial copy is freed */
		s->shared->extra[i] = strdup(extra[i]);
		if (!s->shared->extra[i])
			goto fail;
	}
	if (f->type == METRIC_HISTOGRAM) {
		s->hist = hist_new(f->bounds_ns, f->n_bounds);
		if (!s->hist)
			goto fail;
	}
	memmove(&f->series[pos + 1], &f->series[pos], (f->n_series - pos) * sizeof(*f->series));
	f->series[pos] = s;
	f->n_series++;
	goto out;
fail:
	series_free(s);
	s = NULL;
out:
	pthread_mutex_unlock(&m->lock);
	return s;
}

struct metric_series *metrics_series_extra(struct metric_family *f, const char *const *values,
					   const char *const *extra, unsigned n_extra)
{
	const char *v[METRICS_MAX_LABELS], *e[2 * METRICS_MAX_EXTRA_LABELS];
	char *own[METRICS_MAX_LABELS + 2 * METRICS_MAX_EXTRA_LABELS] = {NULL};
	struct metric_series *s = NULL;
	unsigned i;

	if (!f || (f->n_labels && !values) || !extra_valid(f, extra, n_extra))
		return NULL;
	for (i = 0; i < f->n_labels; i++)
		if (!values[i])
			return NULL;
	/* The extra labels' names are valid names, ASCII: passed as they are. */
	if (values_utf8(values, f->n_labels, v, own) == 0 &&
	    values_utf8(extra, 2 * n_extra, e, own + METRICS_MAX_LABELS) == 0)
		s = series_get(f, v, e, n_extra);
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		free(own[i]);
	return s;
}

void metrics_series_drop(struct metric_series *s)
{
	struct metric_family *f;
	struct metrics *m;
	unsigned i;

	if (!s)
		return;
	f = s->family;
	m = f->reg;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < f->n_series; i++) {
		if (f->series[i] == s) {
			memmove(&f->series[i], &f->series[i + 1],
				(f->n_series - i - 1) * sizeof(*f->series));
			f->n_series--;
			break;
		}
	}
	shared_unref(s->shared); /* snapshots may still hold it */
	s->shared = NULL;
	pthread_mutex_unlock(&m->lock);
	series_free(s);
}

/* ---- values ---- */

void metrics_lock(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
}

void metrics_unlock(struct metrics *m)
{
	pthread_mutex_unlock(&m->lock);
}

void metrics_add_locked(struct metric_series *s, double v)
{
	/* Counters only go up; "!(v >= 0)" also refuses NaN. */
	if (!s || s->family->type == METRIC_HISTOGRAM ||
	    (s->family->type == METRIC_COUNTER && !(v >= 0)))
		return;
	s->value += v;
	s->gen++;
}

void metrics_set_locked(struct metric_series *s, double v)
{
	if (!s || s->family->type == METRIC_HISTOGRAM)
		return;
	s->value = v;
	s->gen++;
}

void metrics_observe_ns_locked(struct metric_series *s, uint64_t ns)
{
	if (s && s->hist) {
		hist_record(s->hist, ns);
		s->gen++;
	}
}

int metrics_merge_hist_locked(struct metric_series *s, const struct hist *h)
{
	if (!s || !s->hist || !h)
		return -EINVAL;
	s->gen++; /* a failed merge changes nothing; a spurious bump only costs a render */
	return hist_merge(s->hist, h);
}

void metrics_add(struct metric_series *s, double v)
{
	if (!s)
		return;
	metrics_lock(s->family->reg);
	metrics_add_locked(s, v);
	metrics_unlock(s->family->reg);
}

void metrics_set(struct metric_series *s, double v)
{
	if (!s)
		return;
	metrics_lock(s->family->reg);
	metrics_set_locked(s, v);
	metrics_unlock(s->family->reg);
}

void metrics_observe_ns(struct metric_series *s, uint64_t ns)
{
	if (!s)
		return;
	metrics_lock(s->family->reg);
	metrics_observe_ns_locked(s, ns);
	metrics_unlock(s->family->reg);
}

int metrics_merge_hist(struct metric_series *s, const struct hist *h)
{
	int r;

	if (!s)
		return -EINVAL;
	metrics_lock(s->family->reg);
	r = metrics_merge_hist_locked(s, h);
	metrics_unlock(s->family->reg);
	return r;
}

double metrics_value(struct metric_series *s)
{
	double v;

	if (!s)
		return 0;
	metrics_lock(s->family->reg);
	v = s->value;
	metrics_unlock(s->family->reg);
	return v;
}

int metrics_read_hist(struct metric_series *s, void (*fn)(const struct hist *h, void *arg),
		      void *arg)
{
	if (!s || !s->hist)
		return -EINVAL;
	metrics_lock(s->family->reg);
	fn(s->hist, arg);
	metrics_unlock(s->family->reg);
	return 0;
}

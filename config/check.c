/* SPDX-License-Identifier: MIT */
/*
 * check — what the rows of the schema cannot check alone: a key written on the
 * wrong kind of target or probe, a target's kind, the keys of a ping, a burst or
 * a verify probe together, and each probe against its target once every item
 * is read.
 */
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"

/* ---- targets ----------------------------------------------------------------- */

/* A key written on a target of a kind it is not valid on. */
int cfg_target_misplaced(struct parser *p, const struct item *it, const struct key *k,
			 const yaml_node_t *knode)
{
	const struct cfg_target *t = it->base;

	return fail_at(p, knode, "'%s' is only valid on %s targets: target '%s' is a %s%s", k->name,
		       cfg_target_kind_name(W_TARGET_KIND_OF(k->where)), t->name,
		       cfg_target_kind_name(t->kind), k->elsewhere);
}

/*
 * Exactly one of directory, file and device: the target's kind, and so the keys
 * valid on it. The kind may come last, so keys that only fit another kind are
 * reported here, after the walk, in table order.
 */
int cfg_check_target_kind(struct parser *p, const yaml_node_t *m, struct item *it)
{
	const struct cfg_target *t = it->base;
	const struct key *first = NULL;

	for (const struct key *k = schema; k < SCHEMA_END; k++) {
		const yaml_node_t *kn = it->key[k - schema];

		if (!cfg_in_section(it, k) || k->type != &type_target_path || !kn)
			continue;
		if (first)
			return fail_at(p, cfg_later_key(kn, it->key[first - schema]),
				       "target '%s' has both '%s' and '%s', use one", t->name,
				       first->name, k->name);
		first = k;
	}
	if (!first)
		return fail_at(p, m, "target '%s' needs 'directory', 'file' or 'device'", t->name);
	it->valid = W_TARGET_KIND(t->kind);
	for (const struct key *k = schema; k < SCHEMA_END; k++)
		if (cfg_in_section(it, k) && it->key[k - schema] && !(k->where & it->valid))
			return it->sec->misplaced(p, it, k, it->key[k - schema]);
	return 0;
}

/* ---- probes ------------------------------------------------------------------ */

/* A key of the other kind of probe: what this kind does instead. */
int cfg_probe_misplaced(struct parser *p, const struct item *it, const struct key *k,
			const yaml_node_t *knode)
{
	const struct cfg_kind *kind = it->kind >= 0 ? cfg_kind(it->kind) : NULL;

	if (kind && kind->foreign_why && !(k->where & W_PROBE_KIND(it->kind)))
		return fail_at(p, knode, "'%s' is not a %s probe key: %s", k->name,
			       cfg_probe_kind_name(it->kind), kind->foreign_why);
	return fail_at(p, knode, "'%s' is a %s key; %s", k->name,
		       cfg_probe_kind_name(W_PROBE_KIND_OF(k->where)), k->elsewhere);
}

/* "the largest " before 'block_size' in a message when it is a range. */
static const char *largest_if_range(const struct cfg_probe *pr)
{
	return pr->block_size_max != pr->block_size ? "the largest " : "";
}

/* The value written last among @keys of a probe, for an error that several keys
 * cause together; 'type' when none is written (a burst always has one). */
static const yaml_node_t *last_value(const struct item *it, const char *const *keys, size_t n)
{
	const yaml_node_t *last = NULL;

	for (size_t i = 0; i < n; i++) {
		const yaml_node_t *v = cfg_item_value(it, keys[i]);

		if (v && (!last || cfg_later_key(last, v) != last))
			last = v;
	}
	return last ? last : cfg_item_value(it, "type");
}

/* A burst's I/O buffers (resident while it runs) within CFG_MAX_BURST_BUFFER. */
static int check_burst_buffers(struct parser *p, const struct item *it)
{
	static const char *const keys[] = {"jobs", "iodepth", "block_size"};
	const struct cfg_probe *pr = it->base;
	uint64_t total = cfg_burst_buffer_bytes(pr);
	uint64_t buf = total / pr->jobs / pr->iodepth;
	char bs[32], sum[32], max[32], rounded[96] = "";

	if (total <= CFG_MAX_BURST_BUFFER)
		return 0;
	cfg_format_size(buf, bs, sizeof(bs));
	cfg_format_size(total, sum, sizeof(sum));
	cfg_format_size(CFG_MAX_BURST_BUFFER, max, sizeof(max));
	if (buf != pr->block_size_max) {
		char want[32], align[32];

		cfg_format_size(pr->block_size_max, want, sizeof(want));
		cfg_format_size(CFG_BURST_BUF_ALIGN, align, sizeof(align));
		snprintf(rounded, sizeof(rounded), ", %s rounded up to %s", want, align);
	}
	return fail_at(p, last_value(it, keys, sizeof(keys) / sizeof(keys[0])),
		       "probe '%s': the I/O buffers of 'jobs' x 'iodepth' x %s'block_size' "
		       "(%u x %u x %s%s = %s) must be at most %s",
		       pr->name, largest_if_range(pr), pr->jobs, pr->iodepth, bs, rounded, sum,
		       max);
}

/* A burst of 'ios' at 'rate_iops' lasts ios / rate_iops: within the longest
 * 'duration' (a burst holds its target, pings wait) and, after its ramp, within
 * 'every'. Without a rate the length depends on the device: the burst stops
 * itself after that long (see burst.c). */
static int check_burst_ios_length(struct parser *p, const struct item *it)
{
	static const char *const keys[] = {"ios", "rate_iops"};
	const struct cfg_probe *pr = it->base;
	const yaml_node_t *every_v = cfg_item_value(it, "every");
	/* ios <= 10^9, so ios x 10^9 < 2^64 */
	uint64_t len = (pr->ios * 1000000000ULL + pr->rate_iops - 1) / pr->rate_iops;
	char every[32], ramp[32], l[32], max[32];

	cfg_format_duration(len, l, sizeof(l));
	cfg_format_duration(CFG_MAX_DURATION_NS, max, sizeof(max));
	if (len > CFG_MAX_DURATION_NS)
		return fail_at(
			p, last_value(it, keys, 2),
			"probe '%s': 'ios' at 'rate_iops' (%llu at %llu per second) take %s, "
			"longer than a burst may run (%s)",
			pr->name, (unsigned long long)pr->ios, (unsigned long long)pr->rate_iops, l,
			max);
	if (pr->interval_ns > pr->ramp_ns + len)
		return 0;
	cfg_format_duration(pr->interval_ns, every, sizeof(every));
	cfg_format_duration(pr->ramp_ns, ramp, sizeof(ramp));
	return fail_at(p, every_v ? every_v : last_value(it, keys, 2),
		       "probe '%s': 'every' (%s) must be longer than 'ramp' + 'ios' / "
		       "'rate_iops' (%s + %s), or the burst would overlap itself",
		       pr->name, every, ramp, l);
}

/* Checks between the keys of a burst, once all are read; fills in derived defaults. */
int cfg_check_burst(struct parser *p, const struct item *it)
{
	struct cfg_probe *pr = it->base;
	const yaml_node_t *every = cfg_item_value(it, "every"), *ramp = cfg_item_value(it, "ramp");
	char a[32], b[32], c[32];
	int r;

	if (cfg_item_key(it, "duration") && cfg_item_key(it, "ios"))
		return fail_at(p,
			       cfg_later_key(cfg_item_key(it, "duration"), cfg_item_key(it, "ios")),
			       "probe '%s' has both 'duration' and 'ios', use one", pr->name);
	if (cfg_item_value(it, "rwmix_read") && pr->rw != CFG_RW_RANDRW)
		return fail_at(p, cfg_item_value(it, "rwmix_read"),
			       "probe '%s': 'rwmix_read' needs 'rw: randrw'", pr->name);
	if (cfg_item_value(it, "ios"))
		pr->duration_ns = 0;
	/* The effective fraction of reads, whatever the pattern. */
	if (pr->rw == CFG_RW_RANDREAD || pr->rw == CFG_RW_READ)
		pr->rwmix_read = 1.0;
	else if (pr->rw == CFG_RW_RANDWRITE || pr->rw == CFG_RW_WRITE)
		pr->rwmix_read = 0.0;

	r = check_burst_buffers(p, it);
	if (r < 0)
		return r;
	cfg_format_duration(pr->interval_ns, a, sizeof(a));
	cfg_format_duration(pr->ramp_ns, b, sizeof(b));
	if (pr->duration_ns) {
		cfg_format_duration(pr->duration_ns, c, sizeof(c));
		if (pr->ramp_ns >= pr->duration_ns)
			return fail_at(
				p, ramp,
				"probe '%s': 'ramp' (%s) must be shorter than 'duration' (%s)",
				pr->name, b, c);
		if (pr->interval_ns <= pr->ramp_ns + pr->duration_ns)
			/* 'every' defaulted: only a long 'duration' gets here. */
			return fail_at(p, every ? every : cfg_item_value(it, "duration"),
				       "probe '%s': 'every' (%s) must be longer than 'ramp' + "
				       "'duration' (%s + %s), or the burst would overlap itself",
				       pr->name, a, b, c);
	} else if (pr->rate_iops) {
		return check_burst_ios_length(p, it);
	} else if (pr->interval_ns <= pr->ramp_ns) {
		return fail_at(p, every ? every : ramp,
			       "probe '%s': 'every' (%s) must be longer than 'ramp' (%s), or the "
			       "burst would overlap itself",
			       pr->name, a, b);
	}
	return 0;
}

/* Checks between the keys of a ping; fills in what it is as a burst. */
int cfg_check_ping(struct parser *p, const struct item *it)
{
	struct cfg_probe *pr = it->base;

	if (pr->sync == CFG_SYNC_FDATASYNC && pr->op != IO_WRITE)
		return fail_at(p, cfg_item_value(it, "sync"),
			       "probe '%s': 'sync: fdatasync' needs 'op: write'", pr->name);
	/* A ping as a burst would describe it: one random I/O at a time. */
	pr->rw = pr->op == IO_WRITE ? CFG_RW_RANDWRITE : CFG_RW_RANDREAD;
	pr->rwmix_read = pr->op == IO_WRITE ? 0.0 : 1.0;
	pr->iodepth = 1;
	pr->jobs = 1;
	pr->duration_ns = 0;
	return 0;
}

/* Checks between the keys of a verify probe; fills in what it is as a ping. */
int cfg_check_verify(struct parser *p, const struct item *it)
{
	struct cfg_probe *pr = it->base;

	if (pr->verify_per_run > pr->verify_blocks)
		return fail_at(p, cfg_item_value(it, "blocks_per_run"),
			       "probe '%s': 'blocks_per_run' (%u) must be at most 'blocks' (%u)",
			       pr->name, pr->verify_per_run, pr->verify_blocks);
	/* Plain pread/pwrite, one block at a time: the sync engine's way. */
	snprintf(pr->engine, sizeof(pr->engine), "sync");
	pr->op = IO_WRITE;
	pr->sync = CFG_SYNC_FDATASYNC;
	pr->rw = CFG_RW_RANDRW;
	pr->rwmix_read = 0.5;
	pr->iodepth = 1;
	pr->jobs = 1;
	return 0;
}

/* Checks of a probe that need the whole probe, and of its name against the others. */
int cfg_check_probe(struct parser *p, const yaml_node_t *m, const struct item *it, unsigned idx)
{
	const struct cfg_probe *pr = it->base;
	int r = cfg_kind(pr->kind)->check(p, it);

	if (r < 0)
		return r;
	if (pr->working_set && pr->working_set < pr->block_size_max) {
		char a[32], b[32];

		cfg_format_size(pr->working_set, a, sizeof(a));
		cfg_format_size(pr->block_size_max, b, sizeof(b));
		return fail_at(
			p, cfg_item_value(it, "working_set"),
			"probe '%s': 'working_set' (%s) must be at least %s'block_size' (%s)",
			pr->name, a, largest_if_range(pr), b);
	}
	for (unsigned i = 0; i < idx; i++)
		if (!strcmp(p->c->probes[i].name, pr->name))
			return fail_at(p, m, "duplicate probe name '%s' (first defined at line %u)",
				       pr->name, p->c->probes[i].pos.line);
	return 0;
}

/* ---- probes and their targets ------------------------------------------------ */

/*
 * A working set the probe can use, on a directory target (whose size is known
 * here; a file's or a device's is known only when it is opened, and the probe
 * says then what does not fit): at least the largest block, and for a
 * sequential burst, where each job walks its own part (a whole number of
 * blocks), a part per job of at least the largest block.
 */
static int check_working_set(struct parser *p, const struct cfg_probe *pr,
			     const struct probe_refs *ref, const struct cfg_target *t)
{
	uint64_t ws = pr->working_set ? pr->working_set : t->size, part;
	char a[32], b[32], c[32];

	cfg_format_size(pr->block_size_max, b, sizeof(b));
	if (ws < pr->block_size_max) { /* 'working_set' was checked: the whole target */
		cfg_format_size(t->size, a, sizeof(a));
		return fail_at(p, ref->bs,
			       "probe '%s': %s'block_size' (%s) is larger than target '%s' (%s)",
			       pr->name, largest_if_range(pr), b, t->name, a);
	}
	/* Every kind's check filled in its rw: a ping's and a verify probe's are random. */
	if (pr->rw != CFG_RW_READ && pr->rw != CFG_RW_WRITE)
		return 0;
	/* A part is a whole number of blocks, and the largest is a multiple of the
	 * smallest: it holds one when ws / jobs does. */
	part = ws / pr->jobs;
	if (part >= pr->block_size_max)
		return 0;
	cfg_format_size(ws, a, sizeof(a));
	cfg_format_size(part, c, sizeof(c));
	/* A sequential burst wrote its 'rw': ref->writes is not NULL. */
	return fail_at(p, ref->ws ? ref->ws : ref->writes,
		       "probe '%s': with 'rw: %s' each of the %u 'jobs' walks its own part of "
		       "the working set (%s), and a part (%s) is smaller than %s'block_size' (%s)",
		       pr->name, cfg_rw_name(pr->rw), pr->jobs, a, c, largest_if_range(pr), b);
}

/*
 * A verify probe writes blocks of its own into a file of its own, which only a
 * directory target has (a device's blocks are its users' data), and checks
 * them with O_DIRECT reads: through the page cache it would read back its own
 * writes from memory and never see what the storage lost.
 */
int cfg_check_verify_target(struct parser *p, const struct cfg_probe *pr,
			    const struct probe_refs *ref, const struct cfg_target *t)
{
	if (t->kind != CFG_TARGET_DIRECTORY)
		return fail_at(p, ref->target,
			       "probe '%s' is a verify probe on %s target '%s': verify probes "
			       "write blocks of their own, only in a 'directory' target",
			       pr->name, cfg_target_kind_name(t->kind), t->name);
	if (!t->direct)
		return fail_at(p, ref->target,
			       "probe '%s' is a verify probe on target '%s', which has 'direct: "
			       "false': verify probes read with O_DIRECT, or the page cache "
			       "would answer instead of the storage",
			       pr->name, t->name);
	return 0;
}

/* Cross-references, once every target and probe is read. */
int cfg_resolve_probes(struct parser *p)
{
	struct config *c = p->c;

	for (unsigned i = 0; i < c->n_probes; i++) {
		struct cfg_probe *pr = &c->probes[i];
		const struct probe_refs *ref = &p->refs[i];
		const char *want = cfg_node_str(ref->target);
		const struct cfg_target *t;
		const struct cfg_kind *kind;
		int ti = cfg_target_index(c, want);

		if (ti < 0) {
			for (unsigned j = 0; j < c->n_targets; j++)
				if (cfg_is_close(want, c->targets[j].name))
					return fail_at(p, ref->target,
						       "probe '%s' references undefined target "
						       "'%s', did you mean '%s'?",
						       pr->name, want, c->targets[j].name);
			return fail_at(p, ref->target,
				       "probe '%s' references undefined target '%s'", pr->name,
				       want);
		}
		pr->target = (unsigned)ti;
		t = &c->targets[ti];
		kind = cfg_kind(pr->kind);
		if (kind->check_target) {
			int r = kind->check_target(p, pr, ref, t);

			if (r < 0)
				return r;
			continue;
		}
		/* A writing probe set its 'op' or 'rw': ref->writes is not NULL. */
		if (cfg_probe_writes(pr) && t->kind == CFG_TARGET_FILE)
			return fail_at(p, ref->writes,
				       "probe '%s' writes to file target '%s': iopulse never "
				       "writes to a file it did not create, use a 'directory' "
				       "target for write probes",
				       pr->name, t->name);
		if (cfg_probe_writes(pr) && t->kind == CFG_TARGET_DEVICE && !t->allow_device_writes)
			return fail_at(p, ref->writes,
				       "probe '%s' writes to device target '%s': this destroys the "
				       "data on %s; set 'allow_device_writes: true' on the target "
				       "if you mean it",
				       pr->name, t->name, t->path);
		if (t->kind == CFG_TARGET_DIRECTORY && pr->working_set > t->size) {
			char a[32], b[32];

			cfg_format_size(pr->working_set, a, sizeof(a));
			cfg_format_size(t->size, b, sizeof(b));
			return fail_at(p, ref->ws,
				       "probe '%s': 'working_set' (%s) is larger than the size of "
				       "target '%s' (%s)",
				       pr->name, a, t->name, b);
		}
		if (t->kind == CFG_TARGET_DIRECTORY) {
			int r = check_working_set(p, pr, ref, t);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

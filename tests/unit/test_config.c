/* SPDX-License-Identifier: MIT */
/*
 * config: every malformed input gives one exact "file:line:col: message"; every
 * valid input gives the documented values; cfg_print() output reloads unchanged.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "config/config.h"
#include "lib/ioprio.h"

#define MIB (1ULL << 20)
#define S   1000000000ULL

/* A valid target and probe to build cases around: 3 and 4 lines. */
#define T "targets:\n  - name: disk\n    directory: /srv/x\n"
#define P "probes:\n  - name: p1\n    type: ping\n    target: disk\n"
/* A burst on that target (4 lines), a device target (3 lines) and a ping on it (4 lines). */
#define B  "probes:\n  - name: b1\n    type: burst\n    target: disk\n"
#define TD "targets:\n  - name: dev\n    device: /dev/vdb\n"
#define PD "probes:\n  - name: p1\n    type: ping\n    target: dev\n"
/* A verify probe on the directory target (4 lines). */
#define V "probes:\n  - name: v1\n    type: verify\n    target: disk\n"

struct bad_case {
	const char *name;
	const char *yaml;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	/* YAML itself */
	{"syntax_tab", "targets:\n\t- name: a\n",
	 "t.yaml:2:1: YAML syntax error: found character that cannot start any token (while "
	 "scanning for the next token)"},
	{"syntax_unclosed_quote", "listen: \"127.0.0.1\n",
	 "t.yaml:2:1: YAML syntax error: found unexpected end of stream (while scanning a quoted "
	 "scalar)"},
	{"syntax_bad_indent", T "  name: x\n" P,
	 "t.yaml:4:3: YAML syntax error: did not find expected '-' indicator (while parsing a "
	 "block collection)"},
	{"empty_document", "",
	 "t.yaml:1:1: configuration is empty, expected a mapping with 'targets' and 'probes'"},
	{"only_comments", "# nothing\n\n# here\n",
	 "t.yaml:1:1: configuration is empty, expected a mapping with 'targets' and 'probes'"},
	{"two_documents", T P "---\n" T P,
	 "t.yaml:9:1: only one YAML document is allowed in a configuration"},
	{"root_is_list", "- a\n- b\n",
	 "t.yaml:1:1: configuration must be a mapping with 'targets' and 'probes', got a list"},
	{"root_is_scalar", "hello\n",
	 "t.yaml:1:1: configuration must be a mapping with 'targets' and 'probes', got a string"},

	/* top level */
	{"unknown_top_key_suggest", "tragets: []\n",
	 "t.yaml:1:1: unknown key 'tragets' at top level, did you mean 'targets'?"},
	{"unknown_top_key_list", T P "metrics: yes\n",
	 "t.yaml:8:1: unknown key 'metrics' at top level (valid keys: listen, buckets, "
	 "native_histogram_schema, native_histogram_zero_threshold, splay, state_directory, "
	 "targets, probes)"},
	/* state_directory */
	{"state_directory_list", "state_directory: [a]\n" T P,
	 "t.yaml:1:18: 'state_directory' must be a path, got a list"},
	/* native histograms */
	{"native_schema_too_fine", "native_histogram_schema: 8\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must be between -4 and 7, got 8"},
	{"native_schema_too_coarse", "native_histogram_schema: -5\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must be between -4 and 7, got -5"},
	{"native_schema_fraction", "native_histogram_schema: 2.5\n" T P,
	 "t.yaml:1:26: invalid number '2.5' for 'native_histogram_schema': expected a whole "
	 "number, as in 7"},
	{"native_schema_word", "native_histogram_schema: fine\n" T P,
	 "t.yaml:1:26: invalid number 'fine' for 'native_histogram_schema': expected a whole "
	 "number, as in 7"},
	{"native_schema_huge", "native_histogram_schema: 99999999999999999999\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must be between -4 and 7, got "
	 "99999999999999999999"},
	{"native_schema_list", "native_histogram_schema: [3]\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must be a whole number, got a list"},
	{"native_zero_threshold_no_unit", "native_histogram_zero_threshold: 5\n" T P,
	 "t.yaml:1:34: invalid duration '5' for 'native_histogram_zero_threshold': missing unit "
	 "(ns, us, ms, s, m, h, d)"},
	{"native_zero_threshold_too_large", "native_histogram_zero_threshold: 2s\n" T P,
	 "t.yaml:1:34: 'native_histogram_zero_threshold' must be between 0s and 1s, got 2s"},
	{"duplicate_top_key", T P "targets: []\n",
	 "t.yaml:8:1: duplicate key 'targets' at top level (first defined at line 1)"},
	{"non_string_key", "? [a, b]\n: 1\n",
	 "t.yaml:1:3: keys at top level must be strings, got a list"},
	{"missing_targets", P, "t.yaml:1:1: configuration is missing required key 'targets'"},
	{"missing_probes", T, "t.yaml:1:1: configuration is missing required key 'probes'"},
	{"targets_not_list", "targets: disk\n" P,
	 "t.yaml:1:10: 'targets' must be a list, got a string"},
	{"targets_empty", "targets: []\n" P, "t.yaml:1:10: 'targets' must not be empty"},
	{"targets_null", "targets:\n" P, "t.yaml:1:9: 'targets' must not be empty"},
	{"probes_mapping", T "probes:\n  name: p1\n",
	 "t.yaml:5:3: 'probes' must be a list, got a mapping"},

	/* listen */
	{"listen_hostname", "listen: localhost:10035\n" T P,
	 "t.yaml:1:9: invalid address 'localhost:10035' for 'listen': host must be a numeric "
	 "IPv4 or IPv6 address, or empty for any, got 'localhost'"},
	{"listen_port_range", "listen: 127.0.0.1:65536\n" T P,
	 "t.yaml:1:9: invalid address '127.0.0.1:65536' for 'listen': port must be a number "
	 "from 0 to 65535"},
	{"listen_no_port", "listen: 127.0.0.1\n" T P,
	 "t.yaml:1:9: invalid address '127.0.0.1' for 'listen': expected HOST:PORT, "
	 "[IPV6]:PORT or :PORT"},
	{"listen_v6_brackets", "listen: ::1:10035\n" T P,
	 "t.yaml:1:9: invalid address '::1:10035' for 'listen': put an IPv6 address in "
	 "brackets, as in [::1]:10035"},
	{"listen_v6_bad", "listen: \"[1.2.3.4]:80\"\n" T P,
	 "t.yaml:1:9: invalid address '[1.2.3.4]:80' for 'listen': host must be a numeric IPv4 "
	 "or IPv6 address, or empty for any, got '1.2.3.4'"},
	{"listen_long_host",
	 "listen: 1234567890123456789012345678901234567890123456789012345678901234567890:1\n" T P,
	 "t.yaml:1:9: invalid address "
	 "'1234567890123456789012345678901234567890123456789012345678901234567890:1' for "
	 "'listen': host must be a numeric IPv4 or IPv6 address, or empty for any, got "
	 "'123456789012345678901234567890123456789012345678901234567890123'"},
	{"listen_list", "listen: [a]\n" T P, "t.yaml:1:9: 'listen' must be a string, got a list"},

	/* buckets */
	{"buckets_not_ascending", "buckets: [1ms, 5ms, 2ms]\n" T P,
	 "t.yaml:1:21: 'buckets' must be strictly ascending, got 2ms after 5ms"},
	{"buckets_equal", "buckets: [1ms, 1000us]\n" T P,
	 "t.yaml:1:16: 'buckets' must be strictly ascending, got 1ms after 1ms"},
	{"buckets_no_unit", "buckets:\n  - 1ms\n  - 5\n" T P,
	 "t.yaml:3:5: invalid duration '5' for 'buckets': missing unit (ns, us, ms, s, m, h, d)"},
	{"buckets_zero", "buckets: [0s, 1s]\n" T P,
	 "t.yaml:1:11: 'buckets' values must be greater than 0s"},
	{"buckets_empty", "buckets: []\n" T P, "t.yaml:1:10: 'buckets' must not be empty"},
	{"buckets_scalar", "buckets: 1ms\n" T P,
	 "t.yaml:1:10: 'buckets' must be a list of durations, got a string"},

	/* targets */
	{"target_not_mapping", "targets:\n  - disk\n" P,
	 "t.yaml:2:5: each item of 'targets' must be a mapping, got a string"},
	{"target_missing_name", "targets:\n  - directory: /srv/x\n" P,
	 "t.yaml:2:5: target is missing required key 'name'"},
	{"target_bad_name", "targets:\n  - name: my disk\n    directory: /srv/x\n" P,
	 "t.yaml:2:11: invalid target name 'my disk': use 1 to 63 characters from A-Z a-z 0-9 _ "
	 ". -"},
	{"target_name_too_long",
	 "targets:\n  - name: "
	 "a123456789b123456789c123456789d123456789e123456789f123456789abcd\n"
	 "    directory: /srv/x\n" P,
	 "t.yaml:2:11: invalid target name "
	 "'a123456789b123456789c123456789d123456789e123456789f123456789abcd': use 1 to 63 "
	 "characters from A-Z a-z 0-9 _ . -"},
	{"target_name_null", "targets:\n  - name:\n    directory: /srv/x\n" P,
	 "t.yaml:2:10: missing value for 'name'"},
	{"target_unknown_key", "targets:\n  - name: disk\n    dir: /srv/x\n" P,
	 "t.yaml:3:5: unknown key 'dir' in target (valid keys: name, directory, file, device, "
	 "size, layout_rate, keep_free, require_mount, direct, allow_memory_backed, "
	 "allow_device_writes, max_duty_cycle, max_write_per_day, expected_latency, slow_factor, "
	 "slow_floor, baseline_warmup, tail_factor, tail_share, stall, slow_minutes, ok_minutes, "
	 "labels)"},
	/* labels: a mapping of bounded, valid label names and values */
	{"labels_list", T "    labels: [a, b]\n" P,
	 "t.yaml:4:13: 'labels' must be a mapping of label names to strings, got a list"},
	{"labels_scalar", T "    labels: zone\n" P,
	 "t.yaml:4:13: 'labels' must be a mapping of label names to strings, got a string"},
	{"labels_null", T "    labels:\n" P,
	 "t.yaml:4:12: 'labels' must be a mapping of label names to strings, got nothing"},
	{"labels_too_many",
	 T "    labels: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}\n" P,
	 "t.yaml:4:13: 'labels' has 9 entries, at most 8 are allowed"},
	{"labels_name_digit", T "    labels:\n      1zone: a\n" P,
	 "t.yaml:5:7: invalid label name '1zone' in 'labels': use 1 to 63 characters from A-Z "
	 "a-z 0-9 _, not starting with a digit"},
	{"labels_name_dash", T "    labels:\n      zone-a: a\n" P,
	 "t.yaml:5:7: invalid label name 'zone-a' in 'labels': use 1 to 63 characters from A-Z "
	 "a-z 0-9 _, not starting with a digit"},
	{"labels_name_empty", T "    labels:\n      '': a\n" P,
	 "t.yaml:5:7: invalid label name '' in 'labels': use 1 to 63 characters from A-Z a-z "
	 "0-9 _, not starting with a digit"},
	{"labels_name_long",
	 T "    labels:\n      "
	   "a123456789b123456789c123456789d123456789e123456789f123456789abcd: "
	   "x\n" P,
	 "t.yaml:5:7: invalid label name "
	 "'a123456789b123456789c123456789d123456789e123456789f123456789abcd' in 'labels': use 1 "
	 "to 63 characters from A-Z a-z 0-9 _, not starting with a digit"},
	{"labels_name_list", T "    labels:\n      ? [a]\n      : b\n" P,
	 "t.yaml:5:9: 'labels' must map label names to strings, got a list as a name"},
	{"labels_name_underscores", T "    labels:\n      __zone: a\n" P,
	 "t.yaml:5:7: label name '__zone' in 'labels' must not start with '__' (reserved by "
	 "Prometheus)"},
	{"labels_name_reserved", T "    labels:\n      zone: a\n      instance: b\n" P,
	 "t.yaml:6:7: label name 'instance' in 'labels' is reserved (target, kind, path, fstype, "
	 "device, model and source are iopulse_target_info's own, job and instance Prometheus')"},
	{"labels_name_fstype", T "    labels: {fstype: xfs}\n" P,
	 "t.yaml:4:14: label name 'fstype' in 'labels' is reserved (target, kind, path, fstype, "
	 "device, model and source are iopulse_target_info's own, job and instance Prometheus')"},
	{"labels_name_duplicate", T "    labels:\n      zone: a\n      zone: b\n" P,
	 "t.yaml:6:7: duplicate label 'zone' in 'labels'"},
	{"labels_value_empty", T "    labels:\n      zone: ''\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' must not be empty"},
	{"labels_value_null", T "    labels:\n      zone:\n" P,
	 "t.yaml:5:7: label 'zone' in 'labels' must not be empty"},
	{"labels_value_list", T "    labels:\n      zone: [a]\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' must be a string, got a list"},
	{"labels_value_long",
	 T "    labels:\n      zone: "
	   "a123456789b123456789c123456789d123456789e123456789f123456789abcd"
	   "a123456789b123456789c123456789d123456789e123456789f123456789abcde"
	   "\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' is 129 bytes long, at most 128 are allowed"},
	{"labels_value_control", T "    labels:\n      zone: \"eu\\ta\"\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' must not contain control characters"},
	{"labels_value_nul", T "    labels:\n      zone: \"eu\\0a\"\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' must not contain control characters"},
	{"labels_value_c1", T "    labels:\n      zone: \"eu\\x85a\"\n" P,
	 "t.yaml:5:13: label 'zone' in 'labels' must not contain control characters"},
	{"labels_in_probe", T P "    labels: {a: b}\n",
	 "t.yaml:8:5: unknown key 'labels' in probe (valid keys: name, type, target, op, sync, "
	 "interval, block_size, working_set, timeout, warmup_after, engine, io_priority)"},
	{"target_unknown_key_suggest", "targets:\n  - name: disk\n    directroy: /srv/x\n" P,
	 "t.yaml:3:5: unknown key 'directroy' in target, did you mean 'directory'?"},
	{"target_both_kinds", "targets:\n  - name: disk\n    directory: /srv/x\n    file: /f\n" P,
	 "t.yaml:4:5: target 'disk' has both 'directory' and 'file', use one"},
	{"target_no_kind", "targets:\n  - name: disk\n    size: 1GiB\n" P,
	 "t.yaml:2:5: target 'disk' needs 'directory', 'file' or 'device'"},
	{"target_empty_path", "targets:\n  - name: disk\n    directory: \"\"\n" P,
	 "t.yaml:3:16: 'directory' must not be empty"},
	{"target_size_on_file", "targets:\n  - name: db\n    file: /db\n    size: 1GiB\n" P,
	 "t.yaml:4:5: 'size' is only valid on directory targets: target 'db' is a file and is "
	 "measured at its own size"},
	{"target_size_small", T "    size: 4k\n" P,
	 "t.yaml:4:11: 'size' must be between 1MiB and 1TiB, got 4KiB"},
	{"target_size_big", T "    size: 2TiB\n" P,
	 "t.yaml:4:11: 'size' must be between 1MiB and 1TiB, got 2TiB"},
	{"target_size_ambiguous", T "    size: 64MB\n" P,
	 "t.yaml:4:11: invalid size '64MB' for 'size': 'MB' is ambiguous, write 'MiB' (binary, "
	 "1024-based) or a number of bytes"},
	{"target_size_garbage", T "    size: lots\n" P,
	 "t.yaml:4:11: invalid size 'lots' for 'size': expected bytes or a number with a unit "
	 "(k, m, g, t, KiB, MiB, GiB, TiB)"},
	{"target_size_overflow", T "    size: 99999999999999999999\n" P,
	 "t.yaml:4:11: invalid size '99999999999999999999' for 'size': too large"},
	/* the slow state: a factor over 1, a floor, whole minutes of warm-up */
	{"slow_factor_one", T "    slow_factor: 1\n" P,
	 "t.yaml:4:18: 'slow_factor' must be over 1 and at most 1000, got 1"},
	{"slow_factor_below_one", T "    slow_factor: 0.5\n" P,
	 "t.yaml:4:18: 'slow_factor' must be over 1 and at most 1000, got 0.5"},
	{"slow_factor_huge", T "    slow_factor: 1000.5\n" P,
	 "t.yaml:4:18: 'slow_factor' must be over 1 and at most 1000, got 1000.5"},
	{"slow_factor_negative", T "    slow_factor: -4\n" P,
	 "t.yaml:4:18: invalid number '-4' for 'slow_factor': expected a plain number, as in 4 "
	 "or 2.5"},
	{"slow_factor_times", T "    slow_factor: 4x\n" P,
	 "t.yaml:4:18: invalid number '4x' for 'slow_factor': expected a plain number, as in 4 "
	 "or 2.5"},
	{"slow_factor_percent", T "    slow_factor: 400%\n" P,
	 "t.yaml:4:18: invalid number '400%' for 'slow_factor': expected a plain number, as in "
	 "4 or 2.5"},
	{"slow_factor_exponent", T "    slow_factor: 1e2\n" P,
	 "t.yaml:4:18: invalid number '1e2' for 'slow_factor': expected a plain number, as in 4 "
	 "or 2.5"},
	{"slow_factor_nan", T "    slow_factor: .nan\n" P,
	 "t.yaml:4:18: invalid number '.nan' for 'slow_factor': expected a plain number, as in "
	 "4 or 2.5"},
	{"slow_factor_digits", T "    slow_factor: 1.0000000000000000001\n" P,
	 "t.yaml:4:18: invalid number '1.0000000000000000001' for 'slow_factor': too many "
	 "digits"},
	{"slow_factor_list", T "    slow_factor: [4]\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got a list"},
	{"slow_floor_no_unit", T "    slow_floor: 1\n" P,
	 "t.yaml:4:17: invalid duration '1' for 'slow_floor': missing unit (ns, us, ms, s, m, h, "
	 "d)"},
	{"slow_floor_long", T "    slow_floor: 2m\n" P,
	 "t.yaml:4:17: 'slow_floor' must be between 0s and 1m, got 2m"},
	{"slow_floor_word", T "    slow_floor: automatic\n" P,
	 "t.yaml:4:17: invalid duration 'automatic' for 'slow_floor': expected a number and a "
	 "unit, "
	 "as in 500ms, 10s or 1m30s (units: ns, us, ms, s, m, h, d)"},
	{"tail_factor_one", T "    tail_factor: 1\n" P,
	 "t.yaml:4:18: 'tail_factor' must be over 1 and at most 1000, got 1"},
	{"tail_share_over", T "    tail_share: 101%\n" P,
	 "t.yaml:4:17: invalid percentage '101%' for 'tail_share': must be between 0% and 100%"},
	{"stall_long", T "    stall: 11m\n" P,
	 "t.yaml:4:12: 'stall' must be between 0s and 10m, got 11m"},
	{"slow_minutes_zero", T "    slow_minutes: 0\n" P,
	 "t.yaml:4:19: 'slow_minutes' must be between 1 and 30, got 0"},
	{"ok_minutes_many", T "    ok_minutes: 31\n" P,
	 "t.yaml:4:17: 'ok_minutes' must be between 1 and 30, got 31"},
	{"baseline_warmup_seconds", T "    baseline_warmup: 90s\n" P,
	 "t.yaml:4:22: 'baseline_warmup' must be whole minutes, as in 10m or 1h30m, got 1m30s"},
	{"baseline_warmup_short", T "    baseline_warmup: 30s\n" P,
	 "t.yaml:4:22: 'baseline_warmup' must be between 1m and 24h, got 30s"},
	{"baseline_warmup_zero", T "    baseline_warmup: 0s\n" P,
	 "t.yaml:4:22: 'baseline_warmup' must be between 1m and 24h, got 0s"},
	{"baseline_warmup_long", T "    baseline_warmup: 1d1m\n" P,
	 "t.yaml:4:22: 'baseline_warmup' must be between 1m and 24h, got 24h1m"},
	{"slow_factor_in_probe", T P "    slow_factor: 4\n",
	 "t.yaml:8:5: unknown key 'slow_factor' in probe (valid keys: name, type, target, op, "
	 "sync, interval, block_size, working_set, timeout, warmup_after, engine, io_priority)"},
	{"target_direct_maybe", T "    direct: maybe\n" P,
	 "t.yaml:4:13: 'direct' must be true or false, got 'maybe'"},
	{"target_direct_yes", T "    direct: yes\n" P,
	 "t.yaml:4:13: 'direct' must be true or false, got 'yes'"},
	{"target_direct_quoted", T "    allow_memory_backed: \"true\"\n" P,
	 "t.yaml:4:26: 'allow_memory_backed' must be true or false, got the string 'true' "
	 "(quoted): write it without quotes"},
	{"target_duplicate_key", T "    directory: /srv/y\n" P,
	 "t.yaml:4:5: duplicate key 'directory' in target (first defined at line 3)"},
	{"target_duplicate_name", T "  - name: disk\n    directory: /srv/y\n" P,
	 "t.yaml:4:5: duplicate target name 'disk' (first defined at line 2)"},
	{"target_env_unset", "targets:\n  - name: disk\n    directory: ${IOPULSE_TEST_UNSET}/x\n" P,
	 "t.yaml:3:16: environment variable 'IOPULSE_TEST_UNSET' used in 'directory' is not set "
	 "(write ${IOPULSE_TEST_UNSET:-fallback} to give a default)"},
	{"target_env_unterminated", "targets:\n  - name: disk\n    file: ${HOME/x\n" P,
	 "t.yaml:3:11: unterminated '${' in 'file'"},
	{"target_env_bad_name", "targets:\n  - name: disk\n    directory: ${1X}/x\n" P,
	 "t.yaml:3:16: invalid variable reference '${1X}' in 'directory': use ${NAME} or "
	 "${NAME:-fallback}"},
	{"target_env_bad_operator", "targets:\n  - name: disk\n    directory: ${HOME:=/x}\n" P,
	 "t.yaml:3:16: invalid variable reference '${HOME:=/x}' in 'directory': use ${NAME} or "
	 "${NAME:-fallback}"},

	/* probes */
	{"probe_not_mapping", T "probes:\n  - [p1]\n",
	 "t.yaml:5:5: each item of 'probes' must be a mapping, got a list"},
	{"probe_missing_name", T "probes:\n  - type: ping\n    target: disk\n",
	 "t.yaml:5:5: probe is missing required key 'name'"},
	{"probe_missing_type", T "probes:\n  - name: p1\n    target: disk\n",
	 "t.yaml:5:5: probe 'p1' is missing required key 'type'"},
	{"probe_missing_target", T "probes:\n  - name: p1\n    type: ping\n",
	 "t.yaml:5:5: probe 'p1' is missing required key 'target'"},
	{"probe_unknown_key", T P "    intervall: 1s\n",
	 "t.yaml:8:5: unknown key 'intervall' in probe, did you mean 'interval'?"},
	{"probe_unknown_key_transposed", T P "    blcok_size: 4k\n",
	 "t.yaml:8:5: unknown key 'blcok_size' in probe, did you mean 'block_size'?"},
	{"probe_unknown_key_far", T P "    qd: 4\n",
	 "t.yaml:8:5: unknown key 'qd' in probe (valid keys: name, type, target, op, sync, "
	 "interval, block_size, working_set, timeout, warmup_after, engine, io_priority)"},
	{"probe_duplicate_key", T P "    op: read\n    op: write\n",
	 "t.yaml:9:5: duplicate key 'op' in probe (first defined at line 8)"},
	{"probe_bad_name", T "probes:\n  - name: p/1\n    type: ping\n    target: disk\n",
	 "t.yaml:5:11: invalid probe name 'p/1': use 1 to 63 characters from A-Z a-z 0-9 _ . -"},
	{"probe_duplicate_name", T P "  - name: p1\n    type: ping\n    target: disk\n",
	 "t.yaml:8:5: duplicate probe name 'p1' (first defined at line 5)"},
	{"probe_type_bad", T "probes:\n  - name: p1\n    type: fio\n    target: disk\n",
	 "t.yaml:6:11: invalid value 'fio' for 'type': expected ping, burst or verify"},
	/* verify probes */
	{"verify_on_file", "targets:\n  - name: disk\n    file: /srv/x/f\n" V,
	 "t.yaml:7:13: probe 'v1' is a verify probe on file target 'disk': verify probes write "
	 "blocks of their own, only in a 'directory' target"},
	{"verify_on_device", TD "probes:\n  - name: v1\n    type: verify\n    target: dev\n",
	 "t.yaml:7:13: probe 'v1' is a verify probe on device target 'dev': verify probes write "
	 "blocks of their own, only in a 'directory' target"},
	{"verify_on_writable_device",
	 TD "    allow_device_writes: true\nprobes:\n  - name: v1\n    type: verify\n    target: "
	    "dev\n",
	 "t.yaml:8:13: probe 'v1' is a verify probe on device target 'dev': verify probes write "
	 "blocks of their own, only in a 'directory' target"},
	{"verify_not_direct", T "    direct: false\n" V,
	 "t.yaml:8:13: probe 'v1' is a verify probe on target 'disk', which has 'direct: false': "
	 "verify probes read with O_DIRECT, or the page cache would answer instead of the "
	 "storage"},
	{"verify_per_run_over_blocks", T V "    blocks: 8\n    blocks_per_run: 9\n",
	 "t.yaml:9:21: probe 'v1': 'blocks_per_run' (9) must be at most 'blocks' (8)"},
	{"verify_one_block", T V "    blocks: 1\n",
	 "t.yaml:8:13: 'blocks' must be between 2 and 65536, got 1"},
	{"verify_block_range", T V "    block_size: 4KiB-8KiB\n",
	 "t.yaml:8:17: 'block_size' of a verify probe must be one size, got '4KiB-8KiB': ranges "
	 "are for burst probes"},
	{"verify_engine", T V "    engine: io_uring\n",
	 "t.yaml:8:5: 'engine' is not a verify probe key: a verify probe reads and writes blocks "
	 "of its own in a file of its own, one at a time"},
	{"verify_every", T V "    every: 1m\n",
	 "t.yaml:8:5: 'every' is not a verify probe key: a verify probe reads and writes blocks "
	 "of its own in a file of its own, one at a time"},
	{"blocks_on_ping", T P "    blocks: 8\n",
	 "t.yaml:8:5: 'blocks' is a verify key; only verify probes keep blocks of their own"},
	{"probe_op_bad", T P "    op: randread\n",
	 "t.yaml:8:9: invalid value 'randread' for 'op': expected read or write"},
	{"probe_sync_bad", T P "    op: write\n    sync: fsync\n",
	 "t.yaml:9:11: invalid value 'fsync' for 'sync': expected none or fdatasync"},
	{"probe_sync_on_read", T P "    sync: fdatasync\n",
	 "t.yaml:8:11: probe 'p1': 'sync: fdatasync' needs 'op: write'"},
	{"probe_interval_no_unit", T P "    interval: 10\n",
	 "t.yaml:8:15: invalid duration '10' for 'interval': missing unit (ns, us, ms, s, m, h, "
	 "d)"},
	{"probe_interval_fraction_no_unit", T P "    interval: 1.5\n",
	 "t.yaml:8:15: invalid duration '1.5' for 'interval': missing unit (ns, us, ms, s, m, h, "
	 "d)"},
	{"probe_interval_garbage", T P "    interval: 1 sec\n",
	 "t.yaml:8:15: invalid duration '1 sec' for 'interval': expected a number and a unit, as "
	 "in 500ms, 10s or 1m30s (units: ns, us, ms, s, m, h, d)"},
	{"probe_interval_zero", T P "    interval: 0s\n",
	 "t.yaml:8:15: 'interval' must be between 1ms and 24h, got 0s"},
	{"probe_interval_long", T P "    interval: 2d\n",
	 "t.yaml:8:15: 'interval' must be between 1ms and 24h, got 48h"},
	{"probe_interval_overflow", T P "    interval: 999999999999h\n",
	 "t.yaml:8:15: invalid duration '999999999999h' for 'interval': too large"},
	{"probe_interval_list", T P "    interval: [1s]\n",
	 "t.yaml:8:15: 'interval' must be a duration, got a list"},
	{"probe_interval_null", T P "    interval: ~\n",
	 "t.yaml:8:15: missing value for 'interval'"},
	{"probe_timeout_long", T P "    timeout: 1h\n",
	 "t.yaml:8:14: 'timeout' must be between 1ms and 10m, got 1h"},
	{"probe_block_size_small", T P "    block_size: 256\n",
	 "t.yaml:8:17: 'block_size' must be between 512 and 16MiB, got 256"},
	{"probe_block_size_big", T P "    block_size: 32m\n",
	 "t.yaml:8:17: 'block_size' must be between 512 and 16MiB, got 32MiB"},
	{"probe_block_size_unaligned", T P "    block_size: 1000\n",
	 "t.yaml:8:17: 'block_size' must be a multiple of 512 (direct I/O), got 1000"},
	{"probe_working_set_small", T P "    block_size: 64k\n    working_set: 8k\n",
	 "t.yaml:9:18: probe 'p1': 'working_set' (8KiB) must be at least 'block_size' (64KiB)"},
	{"probe_working_set_big", T P "    working_set: 128MiB\n",
	 "t.yaml:8:18: probe 'p1': 'working_set' (128MiB) is larger than the size of target "
	 "'disk' (64MiB)"},
	{"probe_working_set_huge", T P "    working_set: 2t\n",
	 "t.yaml:8:18: 'working_set' must be at most 1TiB, got 2TiB"},
	{"probe_engine", T P "    engine: spdk\n",
	 "t.yaml:8:13: invalid value 'spdk' for 'engine': expected auto, io_uring, libaio, sync "
	 "or null"},
	/* 'engine: null' is the null engine; the other empty values are still missing. */
	{"probe_engine_tilde", T P "    engine: ~\n", "t.yaml:8:13: missing value for 'engine'"},
	{"probe_engine_empty", T B "    engine:\n", "t.yaml:8:12: missing value for 'engine'"},
	{"probe_undefined_target_suggest",
	 T "probes:\n  - name: p1\n    type: ping\n    target: dsik\n",
	 "t.yaml:7:13: probe 'p1' references undefined target 'dsik', did you mean 'disk'?"},
	{"probe_undefined_target", T "probes:\n  - name: p1\n    type: ping\n    target: nvme0\n",
	 "t.yaml:7:13: probe 'p1' references undefined target 'nvme0'"},
	{"probe_target_null", T "probes:\n  - name: p1\n    type: ping\n    target:\n",
	 "t.yaml:7:12: missing value for 'target'"},
	{"probe_write_file_target",
	 "targets:\n  - name: db\n    file: /db\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: db\n    op: write\n",
	 "t.yaml:8:9: probe 'p1' writes to file target 'db': iopulse never writes to a file it "
	 "did not create, use a 'directory' target for write probes"},
	/* Probes may come first: the reference is resolved after everything is read. */
	{"probes_before_targets_undefined",
	 "probes:\n  - name: p1\n    type: ping\n    target: disc\n" T,
	 "t.yaml:4:13: probe 'p1' references undefined target 'disc', did you mean 'disk'?"},
	/* First error wins: the bad interval comes before the bad op. */
	{"first_error_wins", T P "    interval: 5\n    op: wirte\n",
	 "t.yaml:8:15: invalid duration '5' for 'interval': missing unit (ns, us, ms, s, m, h, "
	 "d)"},

	/* device targets */
	{"device_not_under_dev", "targets:\n  - name: dev\n    device: /tmp/disk.img\n" PD,
	 "t.yaml:3:13: 'device' must be a block device under /dev/, as in /dev/sdb or "
	 "/dev/disk/by-id/..., got '/tmp/disk.img'"},
	{"device_relative", "targets:\n  - name: dev\n    device: vdb\n" PD,
	 "t.yaml:3:13: 'device' must be a block device under /dev/, as in /dev/sdb or "
	 "/dev/disk/by-id/..., got 'vdb'"},
	{"device_dotdot", "targets:\n  - name: dev\n    device: /dev/../etc/passwd\n" PD,
	 "t.yaml:3:13: 'device' must be a block device under /dev/, as in /dev/sdb or "
	 "/dev/disk/by-id/..., got '/dev/../etc/passwd'"},
	{"device_env_not_under_dev",
	 "targets:\n  - name: dev\n    device: ${IOPULSE_TEST_UNSET:-/srv}/vdb\n" PD,
	 "t.yaml:3:13: 'device' must be a block device under /dev/, as in /dev/sdb or "
	 "/dev/disk/by-id/..., got '/srv/vdb'"},
	{"device_and_file", TD "    file: /f\n" PD,
	 "t.yaml:4:5: target 'dev' has both 'file' and 'device', use one"},
	{"directory_and_device", T "    device: /dev/vdb\n" P,
	 "t.yaml:4:5: target 'disk' has both 'directory' and 'device', use one"},
	{"size_on_device", TD "    size: 1GiB\n" PD,
	 "t.yaml:4:5: 'size' is only valid on directory targets: target 'dev' is a device and is "
	 "measured at its own size"},
	{"allow_device_writes_on_directory", T "    allow_device_writes: true\n" P,
	 "t.yaml:4:5: 'allow_device_writes' is only valid on device targets: target 'disk' is a "
	 "directory"},
	{"allow_device_writes_false_on_file",
	 "targets:\n  - name: db\n    file: /db\n    allow_device_writes: false\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: db\n",
	 "t.yaml:4:5: 'allow_device_writes' is only valid on device targets: target 'db' is a "
	 "file"},
	{"allow_device_writes_yes", TD "    allow_device_writes: yes\n" PD,
	 "t.yaml:4:26: 'allow_device_writes' must be true or false, got 'yes'"},

	/* layout_rate */
	{"layout_rate_garbage", T "    layout_rate: fast\n" P,
	 "t.yaml:4:18: invalid rate 'fast' for 'layout_rate': expected a size per second, as in "
	 "32MiB/s, or 0 for no limit"},
	{"layout_rate_per_minute", T "    layout_rate: 32MiB/m\n" P,
	 "t.yaml:4:18: invalid rate '32MiB/m' for 'layout_rate': expected a size per second, as "
	 "in 32MiB/s, or 0 for no limit"},
	{"layout_rate_ambiguous", T "    layout_rate: 32MB/s\n" P,
	 "t.yaml:4:18: invalid rate '32MB/s' for 'layout_rate': 'MB' is ambiguous, write "
	 "'MiB/s' (binary, 1024-based) or a number of bytes per second"},
	{"layout_rate_too_fast", T "    layout_rate: 2TiB/s\n" P,
	 "t.yaml:4:18: 'layout_rate' must be at most 1TiB/s, got 2TiB/s"},
	{"layout_rate_overflow", T "    layout_rate: 99999999999999999999/s\n" P,
	 "t.yaml:4:18: invalid rate '99999999999999999999/s' for 'layout_rate': too large"},
	{"layout_rate_on_file",
	 "targets:\n  - name: db\n    file: /db\n    layout_rate: 1MiB/s\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: db\n",
	 "t.yaml:4:5: 'layout_rate' is only valid on directory targets: target 'db' is a file, "
	 "which iopulse never lays out"},
	{"layout_rate_on_device", TD "    layout_rate: 0\n" PD,
	 "t.yaml:4:5: 'layout_rate' is only valid on directory targets: target 'dev' is a device, "
	 "which iopulse never lays out"},

	/* layout_rate: slower than 1MiB/s only delays the first measurement */
	{"layout_rate_one_byte", T "    layout_rate: 1\n" P,
	 "t.yaml:4:18: 'layout_rate' must be at least 1MiB/s, or 0 for no limit, got 1/s"},
	{"layout_rate_just_below_min", T "    layout_rate: 1023KiB/s\n" P,
	 "t.yaml:4:18: 'layout_rate' must be at least 1MiB/s, or 0 for no limit, got 1023KiB/s"},
	{"layout_rate_lowercase_iec", T "    layout_rate: 32mib/s\n" P,
	 "t.yaml:4:18: invalid rate '32mib/s' for 'layout_rate': write '32MiB/s' (binary units "
	 "are KiB, MiB, GiB and TiB, or k, m, g and t)"},

	/* IEC units have one spelling */
	{"size_lowercase_iec", T "    size: 64mib\n" P,
	 "t.yaml:4:11: invalid size '64mib' for 'size': write '64MiB' (binary units are KiB, MiB, "
	 "GiB and TiB, or k, m, g and t)"},
	{"size_uppercase_iec", T "    size: 1GIB\n" P,
	 "t.yaml:4:11: invalid size '1GIB' for 'size': write '1GiB' (binary units are KiB, MiB, "
	 "GiB and TiB, or k, m, g and t)"},
	{"block_size_lowercase_iec", T P "    block_size: 4kib\n",
	 "t.yaml:8:17: invalid size '4kib' for 'block_size': write '4KiB' (binary units are KiB, "
	 "MiB, GiB and TiB, or k, m, g and t)"},
	{"block_size_range_miscased_iec", T B "    block_size: 2kiB-16KiB\n",
	 "t.yaml:8:17: invalid size '2kiB' for 'block_size' range '2kiB-16KiB': write '2KiB' "
	 "(binary units are KiB, MiB, GiB and TiB, or k, m, g and t)"},
	{"working_set_miscased_iec", T P "    working_set: 1Mib\n",
	 "t.yaml:8:18: invalid size '1Mib' for 'working_set': write '1MiB' (binary units are KiB, "
	 "MiB, GiB and TiB, or k, m, g and t)"},

	/* durations: each unit once, largest first */
	{"interval_repeated_unit", T P "    interval: 1s1s\n",
	 "t.yaml:8:15: invalid duration '1s1s' for 'interval': write each unit once, largest "
	 "first, as in 1h30m or 1s500ms"},
	{"every_units_ascending", T B "    every: 30s1m\n",
	 "t.yaml:8:12: invalid duration '30s1m' for 'every': write each unit once, largest first, "
	 "as in 1h30m or 1s500ms"},
	{"buckets_repeated_unit", "buckets: [1ms500us500us]\n" T P,
	 "t.yaml:1:11: invalid duration '1ms500us500us' for 'buckets': write each unit once, "
	 "largest first, as in 1h30m or 1s500ms"},

	/* environment expansion */
	{"target_env_empty_name", "targets:\n  - name: disk\n    directory: /srv/${}/x\n" P,
	 "t.yaml:3:16: empty variable name '${}' in 'directory': use ${NAME} or "
	 "${NAME:-fallback}, or $$ for a literal '$'"},
	{"require_mount_env_empty_name", T "    require_mount: ${}\n" P,
	 "t.yaml:4:20: empty variable name '${}' in 'require_mount': use ${NAME} or "
	 "${NAME:-fallback}, or $$ for a literal '$'"},

	/* NUL bytes: a C string would end there, silently */
	{"nul_directory", "targets:\n  - name: disk\n    directory: \"/tmp/a\\0b\"\n" P,
	 "t.yaml:3:16: 'directory' must not contain a NUL byte (\\0)"},
	{"nul_file_hex", "targets:\n  - name: db\n    file: \"/db\\x00.bak\"\n" P,
	 "t.yaml:3:11: 'file' must not contain a NUL byte (\\0)"},
	{"nul_device_unicode", "targets:\n  - name: dev\n    device: \"/dev/vdb\\u0000\"\n" PD,
	 "t.yaml:3:13: 'device' must not contain a NUL byte (\\0)"},
	{"nul_target_name", "targets:\n  - name: \"disk\\0x\"\n    directory: /srv/x\n" P,
	 "t.yaml:2:11: 'name' must not contain a NUL byte (\\0)"},
	{"nul_probe_target", T "probes:\n  - name: p1\n    type: ping\n    target: \"disk\\0x\"\n",
	 "t.yaml:7:13: 'target' must not contain a NUL byte (\\0)"},
	{"nul_type", T "probes:\n  - name: p1\n    type: \"ping\\0\"\n    target: disk\n",
	 "t.yaml:6:11: 'type' must not contain a NUL byte (\\0)"},
	{"nul_engine_null", T P "    engine: \"null\\0x\"\n",
	 "t.yaml:8:13: 'engine' must not contain a NUL byte (\\0)"},
	{"nul_engine", T P "    engine: \"sync\\0\"\n",
	 "t.yaml:8:13: 'engine' must not contain a NUL byte (\\0)"},
	{"io_priority_class", T P "    io_priority: high\n",
	 "t.yaml:8:18: 'io_priority' must be none, idle, best-effort:N or realtime:N (N 0 to 7), "
	 "got 'high'"},
	{"io_priority_no_level", T P "    io_priority: best-effort\n",
	 "t.yaml:8:18: 'io_priority' must be none, idle, best-effort:N or realtime:N (N 0 to 7), "
	 "got 'best-effort'"},
	{"io_priority_idle_level", T P "    io_priority: idle:3\n",
	 "t.yaml:8:18: 'io_priority' must be none, idle, best-effort:N or realtime:N (N 0 to 7), "
	 "got 'idle:3'"},
	{"io_priority_be_8", T P "    io_priority: best-effort:8\n",
	 "t.yaml:8:18: 'io_priority': the level of 'best-effort:8' must be 0 (highest) to 7"},
	{"io_priority_rt_10", T P "    io_priority: realtime:10\n",
	 "t.yaml:8:18: 'io_priority': the level of 'realtime:10' must be 0 (highest) to 7"},
	{"io_priority_negative", T P "    io_priority: best-effort:-1\n",
	 "t.yaml:8:18: 'io_priority' must be none, idle, best-effort:N or realtime:N (N 0 to 7), "
	 "got 'best-effort:-1'"},
	{"io_priority_list", T P "    io_priority: [idle]\n",
	 "t.yaml:8:18: 'io_priority' must be none, idle, best-effort:N or realtime:N, got a list"},
	{"nul_op", T P "    op: \"write\\0\"\n",
	 "t.yaml:8:9: 'op' must not contain a NUL byte (\\0)"},
	{"nul_listen", "listen: \"127.0.0.1:1\\0\"\n" T P,
	 "t.yaml:1:9: 'listen' must not contain a NUL byte (\\0)"},
	{"nul_size", T "    size: \"64MiB\\0junk\"\n" P,
	 "t.yaml:4:11: 'size' must not contain a NUL byte (\\0)"},
	{"nul_layout_rate", T "    layout_rate: \"0\\0\"\n" P,
	 "t.yaml:4:18: 'layout_rate' must not contain a NUL byte (\\0)"},
	{"nul_interval", T P "    interval: \"1s\\0\"\n",
	 "t.yaml:8:15: 'interval' must not contain a NUL byte (\\0)"},
	{"nul_bucket", "buckets: [1ms, \"2ms\\0\"]\n" T P,
	 "t.yaml:1:16: 'buckets' must not contain a NUL byte (\\0)"},
	{"nul_rw", T B "    rw: \"randread\\0\"\n",
	 "t.yaml:8:9: 'rw' must not contain a NUL byte (\\0)"},
	{"nul_block_size_range", T B "    block_size: \"2k\\0-16k\"\n",
	 "t.yaml:8:17: 'block_size' must not contain a NUL byte (\\0)"},
	{"nul_native_schema", "native_histogram_schema: \"3\\0\"\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must not contain a NUL byte (\\0)"},
	{"nul_direct", T "    direct: \"true\\0\"\n" P,
	 "t.yaml:4:13: 'direct' must not contain a NUL byte (\\0)"},
	{"nul_keep_free", T "    keep_free: \"5%\\0\"\n" P,
	 "t.yaml:4:16: 'keep_free' must not contain a NUL byte (\\0)"},
	{"nul_require_mount", T "    require_mount: \"/mnt\\0/x\"\n" P,
	 "t.yaml:4:20: 'require_mount' must not contain a NUL byte (\\0)"},
	{"nul_key", "targets:\n  - name: disk\n    \"directory\\0x\": /srv/x\n" P,
	 "t.yaml:3:5: keys in target must not contain a NUL byte (\\0)"},
	{"nul_top_key", "\"listen\\0\": x\n" T P,
	 "t.yaml:1:1: keys at top level must not contain a NUL byte (\\0)"},

	/* require_mount */
	{"require_mount_relative", T "    require_mount: mnt/data\n" P,
	 "t.yaml:4:20: 'require_mount' must be true, false, auto or the absolute path of a mount "
	 "point, got 'mnt/data'"},
	{"require_mount_yes", T "    require_mount: yes\n" P,
	 "t.yaml:4:20: 'require_mount' must be true, false, auto or the absolute path of a mount "
	 "point, got 'yes'"},
	{"require_mount_empty_string", T "    require_mount: \"\"\n" P,
	 "t.yaml:4:20: 'require_mount' must be true, false, auto or the absolute path of a mount "
	 "point, got ''"},
	{"require_mount_env_relative", T "    require_mount: ${IOPULSE_TEST_UNSET:-mnt}\n" P,
	 "t.yaml:4:20: 'require_mount' must be true, false, auto or the absolute path of a mount "
	 "point, got 'mnt'"},
	{"require_mount_env_unset", T "    require_mount: ${IOPULSE_TEST_UNSET}/mnt\n" P,
	 "t.yaml:4:20: environment variable 'IOPULSE_TEST_UNSET' used in 'require_mount' is not "
	 "set (write ${IOPULSE_TEST_UNSET:-fallback} to give a default)"},
	{"require_mount_quoted_true", T "    require_mount: \"true\"\n" P,
	 "t.yaml:4:20: 'require_mount' must be true or false, got the string 'true' (quoted): "
	 "write it without quotes"},
	{"require_mount_list", T "    require_mount: [/mnt]\n" P,
	 "t.yaml:4:20: 'require_mount' must be true, false, auto or a path, got a list"},
	{"require_mount_null", T "    require_mount:\n" P,
	 "t.yaml:4:19: missing value for 'require_mount'"},
	{"require_mount_on_file",
	 "targets:\n  - name: db\n    file: /db\n    require_mount: /srv\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: db\n",
	 "t.yaml:4:5: 'require_mount' is only valid on directory targets: target 'db' is a file, "
	 "and iopulse creates nothing beside it"},
	{"require_mount_false_on_device", TD "    require_mount: false\n" PD,
	 "t.yaml:4:5: 'require_mount' is only valid on directory targets: target 'dev' is a "
	 "device, and iopulse creates nothing beside it"},

	/* keep_free */
	{"keep_free_over_90", T "    keep_free: 95%\n" P,
	 "t.yaml:4:16: invalid percentage '95%' for 'keep_free': must be between 0% and 90%"},
	{"keep_free_just_over_90", T "    keep_free: 90.001%\n" P,
	 "t.yaml:4:16: invalid percentage '90.001%' for 'keep_free': must be between 0% and 90%"},
	{"keep_free_over_100", T "    keep_free: 150%\n" P,
	 "t.yaml:4:16: invalid percentage '150%' for 'keep_free': must be between 0% and 90%"},
	{"keep_free_bad_percent", T "    keep_free: 5 %\n" P,
	 "t.yaml:4:16: invalid percentage '5 %' for 'keep_free': expected a number and %, as in "
	 "5% or 12.5%"},
	{"keep_free_garbage", T "    keep_free: plenty\n" P,
	 "t.yaml:4:16: invalid value 'plenty' for 'keep_free': expected a size, as in 2GiB, or a "
	 "percentage of the filesystem, as in 5%"},
	{"keep_free_fraction", T "    keep_free: 0.05\n" P,
	 "t.yaml:4:16: invalid value '0.05' for 'keep_free': expected a size, as in 2GiB, or a "
	 "percentage of the filesystem, as in 5%"},
	{"keep_free_ambiguous", T "    keep_free: 2GB\n" P,
	 "t.yaml:4:16: invalid size '2GB' for 'keep_free': 'GB' is ambiguous, write 'GiB' "
	 "(binary, 1024-based) or a number of bytes"},
	{"keep_free_miscased", T "    keep_free: 2gib\n" P,
	 "t.yaml:4:16: invalid size '2gib' for 'keep_free': write '2GiB' (binary units are KiB, "
	 "MiB, GiB and TiB, or k, m, g and t)"},
	{"keep_free_overflow", T "    keep_free: 99999999999999999999\n" P,
	 "t.yaml:4:16: invalid size '99999999999999999999' for 'keep_free': too large"},
	{"keep_free_list", T "    keep_free: [5%]\n" P,
	 "t.yaml:4:16: 'keep_free' must be a size or a percentage, got a list"},
	{"keep_free_on_file",
	 "targets:\n  - name: db\n    file: /db\n    keep_free: 1GiB\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: db\n",
	 "t.yaml:4:5: 'keep_free' is only valid on directory targets: target 'db' is a file, "
	 "which iopulse never lays out"},
	{"keep_free_zero_on_device", TD "    keep_free: 0\n" PD,
	 "t.yaml:4:5: 'keep_free' is only valid on directory targets: target 'dev' is a device, "
	 "which iopulse never lays out"},

	/* keys of the other kind of probe */
	{"ping_rw", T P "    rw: randread\n",
	 "t.yaml:8:5: 'rw' is a burst key; ping probes use 'op'"},
	{"ping_every", T P "    every: 1m\n",
	 "t.yaml:8:5: 'every' is a burst key; ping probes use 'interval'"},
	{"ping_iodepth_before_type",
	 T "probes:\n  - name: p1\n    iodepth: 4\n    type: ping\n    target: disk\n",
	 "t.yaml:6:5: 'iodepth' is a burst key; ping probes have one I/O in flight"},
	{"ping_duration", T P "    duration: 10s\n",
	 "t.yaml:8:5: 'duration' is a burst key; ping probes do one I/O every 'interval'"},
	{"burst_op", T B "    op: write\n",
	 "t.yaml:8:5: 'op' is a ping key; burst probes use 'rw'"},
	{"burst_interval", T B "    interval: 1s\n",
	 "t.yaml:8:5: 'interval' is a ping key; burst probes use 'every'"},
	{"burst_sync", T B "    sync: fdatasync\n",
	 "t.yaml:8:5: 'sync' is a ping key; burst probes do not fdatasync"},
	{"burst_warmup_after", T B "    warmup_after: 1m\n",
	 "t.yaml:8:5: 'warmup_after' is a ping key; burst probes use 'ramp'"},
	{"warmup_after_too_long", T P "    warmup_after: 25h\n",
	 "t.yaml:8:19: 'warmup_after' must be between 0s and 24h, got 25h"},
	/* Suggestions and lists come from the keys of the probe's kind. */
	{"burst_unknown_key_suggest", T B "    iodepht: 4\n",
	 "t.yaml:8:5: unknown key 'iodepht' in probe, did you mean 'iodepth'?"},
	{"burst_unknown_key_list", T B "    qd: 4\n",
	 "t.yaml:8:5: unknown key 'qd' in probe (valid keys: name, type, target, block_size, "
	 "working_set, timeout, engine, io_priority, rw, rwmix_read, iodepth, jobs, duration, ios, "
	 "rate_iops, "
	 "ramp, every, busy_backoff, busy_utilization, busy_queue_depth)"},
	{"ping_unknown_key_near_burst_key", T P "    iodepht: 4\n",
	 "t.yaml:8:5: unknown key 'iodepht' in probe (valid keys: name, type, target, op, sync, "
	 "interval, block_size, working_set, timeout, warmup_after, engine, io_priority)"},
	{"untyped_unknown_key_list", T "probes:\n  - name: p1\n    qd: 4\n",
	 "t.yaml:6:5: unknown key 'qd' in probe (valid keys: name, type, target, op, sync, "
	 "interval, block_size, working_set, timeout, warmup_after, engine, io_priority, rw, "
	 "rwmix_read, "
	 "iodepth, jobs, "
	 "duration, ios, rate_iops, ramp, every, busy_backoff, busy_utilization, "
	 "busy_queue_depth, blocks, blocks_per_run)"},
	{"ping_busy_backoff", T P "    busy_backoff: false\n",
	 "t.yaml:8:5: 'busy_backoff' is a burst key; pings are never held back for a busy disk"},
	{"burst_busy_utilization_over_100", T B "    busy_utilization: 150%\n",
	 "t.yaml:8:23: invalid percentage '150%' for 'busy_utilization': must be between 0% and "
	 "100%"},
	{"burst_busy_queue_depth_zero", T B "    busy_queue_depth: 0\n",
	 "t.yaml:8:23: 'busy_queue_depth' must be between 1 and 100000, got 0"},
	/* A bad 'type' is reported where it is, after the errors before it. */
	{"bad_type_after_burst_key",
	 T "probes:\n  - name: p1\n    iodepth: 4\n    type: fio\n    target: disk\n",
	 "t.yaml:7:11: invalid value 'fio' for 'type': expected ping, burst or verify"},

	/* burst values */
	{"burst_rw_bad", T B "    rw: randomread\n",
	 "t.yaml:8:9: invalid value 'randomread' for 'rw': expected randread, randwrite, randrw, "
	 "read or write"},
	{"burst_rwmix_no_percent", T B "    rw: randrw\n    rwmix_read: 70\n",
	 "t.yaml:9:17: invalid percentage '70' for 'rwmix_read': expected a number and %, as in "
	 "70% or 12.5%"},
	{"burst_rwmix_over_100", T B "    rw: randrw\n    rwmix_read: 150%\n",
	 "t.yaml:9:17: invalid percentage '150%' for 'rwmix_read': must be between 0% and 100%"},
	{"burst_rwmix_without_randrw", T B "    rwmix_read: 70%\n",
	 "t.yaml:8:17: probe 'b1': 'rwmix_read' needs 'rw: randrw'"},
	{"burst_rwmix_with_randwrite", T B "    rwmix_read: 70%\n    rw: randwrite\n",
	 "t.yaml:8:17: probe 'b1': 'rwmix_read' needs 'rw: randrw'"},
	{"burst_iodepth_zero", T B "    iodepth: 0\n",
	 "t.yaml:8:14: 'iodepth' must be between 1 and 256, got 0"},
	{"burst_iodepth_big", T B "    iodepth: 257\n",
	 "t.yaml:8:14: 'iodepth' must be between 1 and 256, got 257"},
	{"burst_iodepth_unit", T B "    iodepth: 32k\n",
	 "t.yaml:8:14: invalid number '32k' for 'iodepth': write a plain number, without a unit"},
	{"burst_iodepth_negative", T B "    iodepth: -1\n",
	 "t.yaml:8:14: invalid number '-1' for 'iodepth': write a whole number without a sign, "
	 "as in 32"},
	{"burst_iodepth_list", T B "    iodepth: [1]\n",
	 "t.yaml:8:14: 'iodepth' must be a whole number, got a list"},
	{"burst_jobs_fraction", T B "    jobs: 1.5\n",
	 "t.yaml:8:11: invalid number '1.5' for 'jobs': must be a whole number, not a fraction"},
	{"burst_jobs_big", T B "    jobs: 65\n",
	 "t.yaml:8:11: 'jobs' must be between 1 and 64, got 65"},
	{"burst_ios_zero", T B "    ios: 0\n",
	 "t.yaml:8:10: 'ios' must be between 1 and 1000000000, got 0"},
	{"burst_ios_plus", T B "    ios: +5\n",
	 "t.yaml:8:10: invalid number '+5' for 'ios': write a whole number without a sign, as in "
	 "32"},
	{"burst_ios_exponent", T B "    ios: 1e6\n",
	 "t.yaml:8:10: invalid number '1e6' for 'ios': expected a whole number, as in 32"},
	{"burst_ios_overflow", T B "    ios: 99999999999999999999\n",
	 "t.yaml:8:10: invalid number '99999999999999999999' for 'ios': too large"},
	{"burst_ios_null", T B "    ios:\n", "t.yaml:8:9: missing value for 'ios'"},
	{"burst_rate_iops_big", T B "    rate_iops: 20000000\n",
	 "t.yaml:8:16: 'rate_iops' must be between 0 and 10000000, got 20000000"},
	{"burst_rate_iops_unit", T B "    rate_iops: 5k\n",
	 "t.yaml:8:16: invalid number '5k' for 'rate_iops': write a plain number, without a unit"},
	{"burst_duration_and_ios", T B "    duration: 10s\n    ios: 1000\n",
	 "t.yaml:9:5: probe 'b1' has both 'duration' and 'ios', use one"},
	{"burst_ios_and_duration", T B "    ios: 1000\n    duration: 10s\n",
	 "t.yaml:9:5: probe 'b1' has both 'duration' and 'ios', use one"},
	{"burst_duration_short", T B "    duration: 50ms\n",
	 "t.yaml:8:15: 'duration' must be between 100ms and 10m, got 50ms"},
	{"burst_duration_no_unit", T B "    duration: 10\n",
	 "t.yaml:8:15: invalid duration '10' for 'duration': missing unit (ns, us, ms, s, m, h, "
	 "d)"},
	{"burst_ramp_equals_duration", T B "    duration: 10s\n    ramp: 10s\n",
	 "t.yaml:9:11: probe 'b1': 'ramp' (10s) must be shorter than 'duration' (10s)"},
	{"burst_ramp_beyond_default_duration", T B "    ramp: 1m\n",
	 "t.yaml:8:11: probe 'b1': 'ramp' (1m) must be shorter than 'duration' (10s)"},
	{"burst_ramp_long", T B "    ios: 10\n    ramp: 11m\n",
	 "t.yaml:9:11: 'ramp' must be between 0s and 10m, got 11m"},
	{"burst_every_short", T B "    every: 500ms\n",
	 "t.yaml:8:12: 'every' must be between 1s and 24h, got 500ms"},
	{"burst_every_overlap", T B "    duration: 30s\n    ramp: 5s\n    every: 35s\n",
	 "t.yaml:10:12: probe 'b1': 'every' (35s) must be longer than 'ramp' + 'duration' (5s + "
	 "30s), or the burst would overlap itself"},
	{"burst_every_ramp_ios", T B "    ios: 1000\n    ramp: 2m\n    every: 1m\n",
	 "t.yaml:10:12: probe 'b1': 'every' (1m) must be longer than 'ramp' (2m), or the burst "
	 "would overlap itself"},
	/* 'ios' at 'rate_iops' last ios / rate_iops: as bounded as 'duration'. */
	{"burst_ios_rate_too_long", T B "    ios: 1000000000\n    rate_iops: 1\n",
	 "t.yaml:9:16: probe 'b1': 'ios' at 'rate_iops' (1000000000 at 1 per second) take "
	 "277777h46m40s, longer than a burst may run (10m)"},
	{"burst_ios_rate_over_every", T B "    ios: 6000\n    rate_iops: 100\n    every: 1m\n",
	 "t.yaml:10:12: probe 'b1': 'every' (1m) must be longer than 'ramp' + 'ios' / "
	 "'rate_iops' (0s + 1m), or the burst would overlap itself"},

	/* buffer memory: jobs x iodepth x the largest block, each rounded up to 4KiB */
	{"burst_buffers_too_big", T B "    jobs: 64\n    iodepth: 256\n    block_size: 16m\n",
	 "t.yaml:10:17: probe 'b1': the I/O buffers of 'jobs' x 'iodepth' x 'block_size' (64 x "
	 "256 x 16MiB = 256GiB) must be at most 256MiB"},
	{"burst_buffers_range", T B "    block_size: 4k-16m\n    iodepth: 32\n",
	 "t.yaml:9:14: probe 'b1': the I/O buffers of 'jobs' x 'iodepth' x the largest "
	 "'block_size' (1 x 32 x 16MiB = 512MiB) must be at most 256MiB"},
	{"burst_buffers_rounded", T B "    block_size: 25088\n    jobs: 64\n    iodepth: 160\n",
	 "t.yaml:10:14: probe 'b1': the I/O buffers of 'jobs' x 'iodepth' x 'block_size' (64 x "
	 "160 x 28KiB, 25088 rounded up to 4KiB = 280MiB) must be at most 256MiB"},

	/* what the working set must hold, when the target's size is known */
	{"burst_sequential_part_below_block",
	 T B "    rw: read\n    jobs: 2\n    block_size: 4k-1m\n    working_set: 1MiB\n",
	 "t.yaml:11:18: probe 'b1': with 'rw: read' each of the 2 'jobs' walks its own part of "
	 "the working set (1MiB), and a part (512KiB) is smaller than the largest 'block_size' "
	 "(1MiB)"},
	{"burst_sequential_part_of_target",
	 "targets:\n  - name: disk\n    directory: /srv/x\n    size: 1MiB\n"
	 "probes:\n  - name: b1\n    type: burst\n    target: disk\n"
	 "    jobs: 4\n    block_size: 512k\n    rw: write\n",
	 "t.yaml:11:9: probe 'b1': with 'rw: write' each of the 4 'jobs' walks its own part of "
	 "the working set (1MiB), and a part (256KiB) is smaller than 'block_size' (512KiB)"},
	{"ping_block_beyond_target",
	 "targets:\n  - name: disk\n    directory: /srv/x\n    size: 1MiB\n"
	 "probes:\n  - name: p1\n    type: ping\n    target: disk\n    block_size: 4m\n",
	 "t.yaml:9:17: probe 'p1': 'block_size' (4MiB) is larger than target 'disk' (1MiB)"},

	/* block_size ranges */
	{"ping_block_size_range", T P "    block_size: 4k-16k\n",
	 "t.yaml:8:17: 'block_size' of a ping probe must be one size, got '4k-16k': ranges are "
	 "for burst probes"},
	{"burst_range_reversed", T B "    block_size: 16k-2k\n",
	 "t.yaml:8:17: invalid range '16k-2k' for 'block_size': write the smaller size first, as "
	 "in 2KiB-16KiB"},
	{"burst_range_not_multiple", T B "    block_size: 2k-3k\n",
	 "t.yaml:8:17: invalid range '2k-3k' for 'block_size': the largest size (3KiB) must be a "
	 "multiple of the smallest (2KiB)"},
	{"burst_range_bad_side", T B "    block_size: 2k-16x\n",
	 "t.yaml:8:17: invalid size '16x' for 'block_size' range '2k-16x': expected bytes or a "
	 "number with a unit (k, m, g, t, KiB, MiB, GiB, TiB)"},
	{"burst_range_open", T B "    block_size: 2k-\n",
	 "t.yaml:8:17: invalid size '' for 'block_size' range '2k-': expected bytes or a number "
	 "with a unit (k, m, g, t, KiB, MiB, GiB, TiB)"},
	{"burst_range_ambiguous", T B "    block_size: 4KB-16KiB\n",
	 "t.yaml:8:17: invalid size '4KB' for 'block_size' range '4KB-16KiB': 'KB' is ambiguous, "
	 "write 'KiB' (binary, 1024-based) or a number of bytes"},
	{"burst_range_unaligned", T B "    block_size: 1000-4000\n",
	 "t.yaml:8:17: 'block_size' must be a multiple of 512 (direct I/O), got 1000"},
	{"burst_range_too_big", T B "    block_size: 4k-32m\n",
	 "t.yaml:8:17: 'block_size' must be between 512 and 16MiB, got 32MiB"},
	{"burst_working_set_below_range", T B "    block_size: 4k-64k\n    working_set: 32k\n",
	 "t.yaml:9:18: probe 'b1': 'working_set' (32KiB) must be at least the largest "
	 "'block_size' (64KiB)"},

	/* writes */
	{"burst_write_file_target",
	 "targets:\n  - name: db\n    file: /db\n"
	 "probes:\n  - name: b1\n    type: burst\n    target: db\n    rw: randrw\n",
	 "t.yaml:8:9: probe 'b1' writes to file target 'db': iopulse never writes to a file it "
	 "did not create, use a 'directory' target for write probes"},
	{"ping_write_device", TD PD "    op: write\n",
	 "t.yaml:8:9: probe 'p1' writes to device target 'dev': this destroys the data on "
	 "/dev/vdb; set 'allow_device_writes: true' on the target if you mean it"},
	{"burst_write_device",
	 TD "probes:\n  - name: b1\n    type: burst\n    target: dev\n"
	    "    rw: write\n",
	 "t.yaml:8:9: probe 'b1' writes to device target 'dev': this destroys the data on "
	 "/dev/vdb; set 'allow_device_writes: true' on the target if you mean it"},
	{"burst_write_device_not_allowed",
	 TD "    allow_device_writes: false\n"
	    "probes:\n  - name: b1\n    type: burst\n    target: dev\n    rw: randwrite\n",
	 "t.yaml:9:9: probe 'b1' writes to device target 'dev': this destroys the data on "
	 "/dev/vdb; set 'allow_device_writes: true' on the target if you mean it"},
};

/* A quoted value where a number (size, duration, ...) is expected: YAML makes
 * it a string, which the schema refuses, each number-like type alike. */
#define QUOTED "(quoted): write it without quotes"
static const struct bad_case quoted_cases[] = {
	{"quoted_count", T B "    iodepth: \"32\"\n",
	 "t.yaml:8:14: 'iodepth' must be a whole number, got the string '32' " QUOTED},
	{"quoted_int", "native_histogram_schema: '3'\n" T P,
	 "t.yaml:1:26: 'native_histogram_schema' must be a whole number, got the string "
	 "'3' " QUOTED},
	{"quoted_factor", T "    slow_factor: '4'\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got the string '4' " QUOTED},
	{"quoted_size", T "    size: \"64MiB\"\n" P,
	 "t.yaml:4:11: 'size' must be a size, got the string '64MiB' " QUOTED},
	{"quoted_rate", T "    layout_rate: \"32MiB/s\"\n" P,
	 "t.yaml:4:18: 'layout_rate' must be a size per second, got the string '32MiB/s' " QUOTED},
	{"quoted_duration", T P "    interval: '10s'\n",
	 "t.yaml:8:15: 'interval' must be a duration, got the string '10s' " QUOTED},
	{"quoted_minutes", T "    baseline_warmup: '10m'\n" P,
	 "t.yaml:4:22: 'baseline_warmup' must be a duration, got the string '10m' " QUOTED},
	{"quoted_percent", T "    max_duty_cycle: '2%'\n" P,
	 "t.yaml:4:21: 'max_duty_cycle' must be a percentage, got the string '2%' " QUOTED},
	{"quoted_keep_free", T "    keep_free: '5%'\n" P,
	 "t.yaml:4:16: 'keep_free' must be a size or a percentage, got the string '5%' " QUOTED},
	{"quoted_block_size", T P "    block_size: '4k'\n",
	 "t.yaml:8:17: 'block_size' must be a size, got the string '4k' " QUOTED},
	{"quoted_block_range", T B "    block_size: \"2k-16k\"\n",
	 "t.yaml:8:17: 'block_size' must be a size, got the string '2k-16k' " QUOTED},
	{"quoted_bucket", "buckets: [1ms, '5ms']\n" T P,
	 "t.yaml:1:16: 'buckets' must be a duration, got the string '5ms' " QUOTED},
	{"quoted_bool", T "    direct: 'false'\n" P,
	 "t.yaml:4:13: 'direct' must be true or false, got the string 'false' " QUOTED},
	{"quoted_str_tag_and_quotes", T "    slow_factor: !!str \"4\"\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got the string '4' " QUOTED},
	/* What YAML's tags say: !!str (or the non-specific '!') makes it a string. */
	{"tagged_str", T "    slow_factor: !!str 4\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got the string '4' (tagged as a string): "
	 "write it without the tag"},
	{"tagged_str_anchor", T "    slow_factor: &f !!str 4\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got the string '4' (tagged as a string): "
	 "write it without the tag"},
	{"tagged_nonspecific", T "    slow_factor: ! 4\n" P,
	 "t.yaml:4:18: 'slow_factor' must be a number, got the string '4' (tagged as a string): "
	 "write it without the tag"},
};

static void test_bad_case(void **state)
{
	const struct bad_case *bc = *state;
	struct config *c = (struct config *)&c; /* must be reset to NULL */
	struct cfg_error err;
	int r;

	r = cfg_load_string("t.yaml", bc->yaml, strlen(bc->yaml), &c, &err);
	if (r != -EINVAL || strcmp(err.msg, bc->msg) != 0)
		fail_msg("case %s:\n  got  (%d) %s\n  want      %s", bc->name, r, err.msg, bc->msg);
	assert_null(c);
}

/* ---- helpers ---- */

static struct config *load_ok(const char *yaml)
{
	struct config *c = NULL;
	struct cfg_error err;
	int r;

	r = cfg_load_string("t.yaml", yaml, strlen(yaml), &c, &err);
	if (r != 0)
		fail_msg("load failed (%d): %s", r, err.msg);
	assert_non_null(c);
	return c;
}

/* load_ok() of a printf-formatted configuration. */
static __attribute__((format(printf, 1, 2))) struct config *load_okf(const char *fmt, ...)
{
	char yaml[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(yaml, sizeof(yaml), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(yaml));
	return load_ok(yaml);
}

static void assert_config_equal(const struct config *a, const struct config *b)
{
	assert_string_equal(a->listen_host, b->listen_host);
	assert_int_equal(a->listen_port, b->listen_port);
	assert_int_equal(a->n_buckets, b->n_buckets);
	for (unsigned i = 0; i < a->n_buckets; i++)
		assert_int_equal(a->buckets_ns[i], b->buckets_ns[i]);
	assert_int_equal(a->native_schema, b->native_schema);
	assert_int_equal(a->native_zero_threshold_ns, b->native_zero_threshold_ns);
	assert_int_equal(a->n_targets, b->n_targets);
	for (unsigned i = 0; i < a->n_targets; i++) {
		const struct cfg_target *x = &a->targets[i], *y = &b->targets[i];

		assert_string_equal(x->name, y->name);
		assert_int_equal(x->kind, y->kind);
		assert_string_equal(x->path, y->path);
		assert_int_equal(x->size, y->size);
		assert_int_equal(x->direct, y->direct);
		assert_int_equal(x->allow_memory_backed, y->allow_memory_backed);
		assert_int_equal(x->allow_device_writes, y->allow_device_writes);
		assert_int_equal(x->layout_rate, y->layout_rate);
		assert_int_equal(x->require_mount, y->require_mount);
		if (x->mount_path || y->mount_path) {
			assert_non_null(x->mount_path);
			assert_non_null(y->mount_path);
			assert_string_equal(x->mount_path, y->mount_path);
		}
		assert_int_equal(x->keep_free_bytes, y->keep_free_bytes);
		assert_true(x->keep_free_fraction == y->keep_free_fraction);
		/* (cfg_target_same() leaves these out: they judge, not measure) */
		assert_true(x->slow_factor == y->slow_factor);
		assert_int_equal(x->slow_floor_ns, y->slow_floor_ns);
		assert_int_equal(x->baseline_warmup_ns, y->baseline_warmup_ns);
		assert_int_equal(x->n_labels, y->n_labels);
		for (unsigned j = 0; j < x->n_labels; j++) {
			assert_string_equal(x->labels[j].name, y->labels[j].name);
			assert_string_equal(x->labels[j].value, y->labels[j].value);
		}
		assert_true(cfg_target_same(x, y));
	}
	assert_int_equal(a->n_probes, b->n_probes);
	for (unsigned i = 0; i < a->n_probes; i++) {
		const struct cfg_probe *x = &a->probes[i], *y = &b->probes[i];

		assert_string_equal(x->name, y->name);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->target, y->target);
		assert_int_equal(x->op, y->op);
		assert_int_equal(x->sync, y->sync);
		assert_int_equal(x->interval_ns, y->interval_ns);
		assert_int_equal(x->block_size, y->block_size);
		assert_int_equal(x->working_set, y->working_set);
		assert_int_equal(x->timeout_ns, y->timeout_ns);
		assert_string_equal(x->engine, y->engine);
		assert_int_equal(x->block_size_max, y->block_size_max);
		assert_int_equal(x->rw, y->rw);
		assert_true(x->rwmix_read == y->rwmix_read);
		assert_int_equal(x->iodepth, y->iodepth);
		assert_int_equal(x->jobs, y->jobs);
		assert_int_equal(x->duration_ns, y->duration_ns);
		assert_int_equal(x->ios, y->ios);
		assert_int_equal(x->rate_iops, y->rate_iops);
		assert_int_equal(x->ramp_ns, y->ramp_ns);
		assert_true(cfg_probe_same(a, x, b, y));
	}
}

static char *print_to_string(const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	cfg_print(c, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* cfg_print() output loads back to an equal config. */
static void assert_print_reloads(const struct config *c)
{
	char *text = print_to_string(c);
	struct config *again = NULL;
	struct cfg_error err;
	int r;

	r = cfg_load_string("printed.yaml", text, strlen(text), &again, &err);
	if (r != 0)
		fail_msg("printed config does not load: %s\n%s", err.msg, text);
	assert_config_equal(c, again);
	cfg_free(again);
	free(text);
}

/* ---- valid configurations ---- */

static void test_defaults_filled(void **state)
{
	struct config *c;
	const struct cfg_probe *p;
	const struct cfg_target *t;
	static const uint64_t buckets[] = {
		10000,	   25000,      50000,	   100000,     250000,	    500000,    1000000,
		2500000,   5000000,    10000000,   25000000,   50000000,    100000000, 250000000,
		500000000, 1000000000, 2500000000, 5000000000, 10000000000,
	};

	(void)state;
	c = load_ok(T P);
	assert_string_equal(c->source, "t.yaml");
	assert_string_equal(c->listen_host, "127.0.0.1");
	assert_int_equal(c->listen_port, 10035);
	assert_int_equal(c->n_buckets, sizeof(buckets) / sizeof(buckets[0]));
	assert_memory_equal(c->buckets_ns, buckets, sizeof(buckets));
	assert_int_equal(c->native_schema, CFG_DEFAULT_NATIVE_SCHEMA);
	assert_int_equal(c->native_schema, 3);
	assert_int_equal(c->native_zero_threshold_ns, 0);
	assert_int_equal(c->n_targets, 1);
	t = &c->targets[0];
	assert_string_equal(t->name, "disk");
	assert_int_equal(t->kind, CFG_TARGET_DIRECTORY);
	assert_string_equal(t->path, "/srv/x");
	assert_int_equal(t->size, CFG_DEFAULT_TARGET_SIZE);
	assert_true(t->direct);
	assert_false(t->allow_memory_backed);
	assert_false(t->allow_device_writes);
	assert_int_equal(t->layout_rate, CFG_DEFAULT_LAYOUT_RATE);
	assert_int_equal(t->require_mount, CFG_MOUNT_AUTO);
	assert_null(t->mount_path);
	assert_int_equal(t->keep_free_bytes, 0);
	assert_true(t->keep_free_fraction == 0.05);
	assert_true(t->keep_free_fraction == CFG_DEFAULT_KEEP_FREE_FRACTION);
	assert_true(t->max_duty_cycle == CFG_DEFAULT_MAX_DUTY_CYCLE);
	assert_int_equal(t->max_write_per_day, CFG_DEFAULT_MAX_WRITE_PER_DAY);
	assert_int_equal(t->expected_latency_ns, CFG_DEFAULT_EXPECTED_LATENCY);
	assert_true(t->slow_factor == CFG_DEFAULT_SLOW_FACTOR);
	assert_true(t->slow_factor == 4.0);
	assert_int_equal(t->slow_floor_ns, CFG_DEFAULT_SLOW_FLOOR_NS);
	assert_int_equal(t->slow_floor_ns, CFG_SLOW_FLOOR_AUTO);
	assert_true(t->tail_factor == CFG_DEFAULT_TAIL_FACTOR && t->tail_factor == 4.0);
	assert_true(t->tail_share == CFG_DEFAULT_TAIL_SHARE && t->tail_share == 0.02);
	assert_int_equal(t->stall_ns, CFG_DEFAULT_STALL_NS);
	assert_int_equal(t->stall_ns, 1000 * 1000 * 1000);
	assert_int_equal(t->slow_minutes, CFG_DEFAULT_SLOW_MINUTES);
	assert_int_equal(t->slow_minutes, 2);
	assert_int_equal(t->ok_minutes, CFG_DEFAULT_OK_MINUTES);
	assert_int_equal(t->ok_minutes, 3);
	assert_int_equal(t->baseline_warmup_ns, CFG_DEFAULT_BASELINE_WARMUP_NS);
	assert_int_equal(t->baseline_warmup_ns, 600 * S);
	assert_int_equal(t->pos.line, 2);
	assert_int_equal(t->pos.col, 5);
	assert_int_equal(c->n_probes, 1);
	p = &c->probes[0];
	assert_string_equal(p->name, "p1");
	assert_int_equal(p->kind, CFG_PROBE_PING);
	assert_int_equal(p->target, 0);
	assert_int_equal(p->op, IO_READ);
	assert_int_equal(p->sync, CFG_SYNC_NONE);
	assert_int_equal(p->interval_ns, CFG_DEFAULT_INTERVAL_NS);
	assert_int_equal(p->block_size, CFG_DEFAULT_BLOCK_SIZE);
	assert_int_equal(p->working_set, 0);
	assert_int_equal(p->timeout_ns, CFG_DEFAULT_TIMEOUT_NS);
	assert_string_equal(p->engine, "auto");
	assert_int_equal(p->block_size_max, CFG_DEFAULT_BLOCK_SIZE);
	/* A ping's burst fields describe it as a burst would: one random I/O at a time. */
	assert_int_equal(p->rw, CFG_RW_RANDREAD);
	assert_true(p->rwmix_read == 1.0);
	assert_int_equal(p->iodepth, 1);
	assert_int_equal(p->jobs, 1);
	assert_int_equal(p->duration_ns, 0);
	assert_int_equal(p->ios, 0);
	assert_int_equal(p->rate_iops, 0);
	assert_int_equal(p->ramp_ns, 0);
	assert_false(cfg_probe_writes(p));
	assert_int_equal(p->pos.line, 5);
	assert_int_equal(p->pos.col, 5);
	cfg_free(c);
}

static void test_every_key(void **state)
{
	struct config *c;
	const struct cfg_probe *p;

	(void)state;
	c = load_ok("listen: \"[::1]:0\"\n"
		    "buckets: [1ms, 1.5ms, 1s]\n"
		    "native_histogram_schema: -2\n"
		    "native_histogram_zero_threshold: 1us\n"
		    "targets:\n"
		    "  - name: a\n    directory: /a\n    size: 1073741824\n"
		    "    direct: false\n    allow_memory_backed: true\n"
		    "  - name: b.2_x-y\n    file: '/b file'\n"
		    "probes:\n"
		    "  - name: w\n    type: ping\n    target: a\n    op: write\n"
		    "    sync: fdatasync\n    interval: 1m30s\n    block_size: 8KiB\n"
		    "    working_set: 1GiB\n    timeout: 2.5s\n    engine: sync\n"
		    "    warmup_after: 5m\n"
		    "  - name: r\n    type: ping\n    target: b.2_x-y\n    working_set: 512GiB\n");
	assert_string_equal(c->listen_host, "::1");
	assert_int_equal(c->listen_port, 0);
	assert_int_equal(c->n_buckets, 3);
	assert_int_equal(c->buckets_ns[1], 1500000);
	assert_int_equal(c->native_schema, -2);
	assert_int_equal(c->native_zero_threshold_ns, 1000);
	assert_int_equal(c->targets[0].size, 1ULL << 30);
	assert_false(c->targets[0].direct);
	assert_true(c->targets[0].allow_memory_backed);
	assert_int_equal(c->targets[1].kind, CFG_TARGET_FILE);
	assert_string_equal(c->targets[1].path, "/b file");
	assert_int_equal(c->targets[1].size, 0);
	p = &c->probes[0];
	assert_int_equal(p->op, IO_WRITE);
	assert_int_equal(p->sync, CFG_SYNC_FDATASYNC);
	assert_int_equal(p->interval_ns, 90 * S);
	assert_int_equal(p->block_size, 8192);
	assert_int_equal(p->working_set, 1ULL << 30);
	assert_int_equal(p->timeout_ns, 2500000000ULL);
	assert_int_equal(p->warmup_idle_ns, 300 * S);
	p = &c->probes[1];
	assert_int_equal(p->warmup_idle_ns, 0); /* off unless asked for */
	assert_int_equal(p->target, 1);
	assert_int_equal(p->working_set, 512ULL << 30); /* a file's size is not checked here */
	assert_print_reloads(c);
	cfg_free(c);
}

/* A verify probe's defaults, and what it is as a ping. */
static void test_verify_defaults(void **state)
{
	struct config *c;
	const struct cfg_probe *p;

	(void)state;
	c = load_ok(T V "  - name: v2\n    type: verify\n    target: disk\n    interval: 10s\n"
			"    block_size: 8KiB\n    blocks: 16\n    blocks_per_run: 16\n");
	p = &c->probes[0];
	assert_int_equal(p->kind, CFG_PROBE_VERIFY);
	assert_int_equal(p->interval_ns, 60 * S);
	assert_int_equal(p->block_size, 4096);
	assert_int_equal(p->verify_blocks, 64);
	assert_int_equal(p->verify_per_run, 4);
	assert_int_equal(p->timeout_ns, CFG_DEFAULT_TIMEOUT_NS);
	assert_string_equal(p->engine, "sync");
	assert_true(cfg_probe_writes(p));
	p = &c->probes[1];
	assert_int_equal(p->interval_ns, 10 * S);
	assert_int_equal(p->block_size, 8192);
	assert_int_equal(p->verify_blocks, 16);
	assert_int_equal(p->verify_per_run, 16);
	assert_print_reloads(c);
	cfg_free(c);
}

static void test_burst_defaults(void **state)
{
	struct config *c;
	const struct cfg_probe *p;

	(void)state;
	c = load_ok(T B "  - name: mix\n    type: burst\n    target: disk\n    rw: randrw\n"
			"  - name: byios\n    type: burst\n    target: disk\n    ios: 5000\n");
	p = &c->probes[0];
	assert_int_equal(p->kind, CFG_PROBE_BURST);
	assert_int_equal(p->target, 0);
	assert_int_equal(p->rw, CFG_RW_RANDREAD);
	assert_true(p->rwmix_read == 1.0); /* the effective fraction of reads */
	assert_int_equal(p->block_size, CFG_DEFAULT_BLOCK_SIZE);
	assert_int_equal(p->block_size_max, CFG_DEFAULT_BLOCK_SIZE);
	assert_int_equal(p->working_set, 0);
	assert_int_equal(p->iodepth, CFG_DEFAULT_IODEPTH);
	assert_int_equal(p->jobs, 1);
	assert_int_equal(p->duration_ns, CFG_DEFAULT_DURATION_NS);
	assert_int_equal(p->ios, 0);
	assert_int_equal(p->rate_iops, 0);
	assert_int_equal(p->ramp_ns, 0);
	assert_int_equal(p->interval_ns, CFG_DEFAULT_EVERY_NS);
	assert_int_equal(p->timeout_ns, CFG_DEFAULT_TIMEOUT_NS);
	assert_string_equal(p->engine, "auto");
	assert_int_equal(p->op, IO_READ);
	assert_int_equal(p->sync, CFG_SYNC_NONE);
	assert_false(cfg_probe_writes(p));
	assert_true(p->busy_backoff);
	assert_true(p->busy_utilization == CFG_DEFAULT_BUSY_UTILIZATION);
	assert_int_equal(p->busy_depth, CFG_DEFAULT_BUSY_QUEUE_DEPTH);
	p = &c->probes[1];
	assert_int_equal(p->rw, CFG_RW_RANDRW);
	assert_true(p->rwmix_read == CFG_DEFAULT_RWMIX_READ);
	assert_true(cfg_probe_writes(p));
	p = &c->probes[2];
	assert_int_equal(p->ios, 5000);
	assert_int_equal(p->duration_ns, 0);
	assert_int_equal(p->interval_ns, CFG_DEFAULT_EVERY_NS);
	assert_print_reloads(c);
	cfg_free(c);
	/* Long forms are read whole, never cut short. */
	c = load_ok(T B
		    "    block_size: "
		    "00000000000000000000000000000000000000000000000000000000000000000000002k-"
		    "000000000000000000000000000000000000000000000000000000000000000000000016k\n");
	assert_int_equal(c->probes[0].block_size, 2048);
	assert_int_equal(c->probes[0].block_size_max, 16384);
	cfg_free(c);
}

static void test_burst_every_key(void **state)
{
	struct config *c;
	const struct cfg_probe *p;

	(void)state;
	c = load_ok("targets:\n"
		    "  - name: big\n    directory: /srv/big\n    size: 2GiB\n"
		    "    layout_rate: 8MiB/s\n"
		    "  - name: dev\n    device: /dev/disk/by-id/nvme-x\n"
		    "    allow_device_writes: true\n    direct: false\n"
		    "probes:\n"
		    /* 'type' last: the kind is known before the keys that depend on it */
		    "  - name: mix\n    target: big\n    rw: randrw\n    rwmix_read: 70%\n"
		    "    block_size: 2k-16k\n    working_set: 1GiB\n    iodepth: 64\n"
		    "    jobs: 4\n    duration: 30s\n    rate_iops: 5000\n    ramp: 5s\n"
		    "    every: 1m\n    timeout: 1s\n    engine: io_uring\n    type: burst\n"
		    "  - name: seq\n    type: burst\n    target: dev\n    rw: write\n"
		    "    block_size: 1m-1m\n    ios: 100000\n    ramp: 2s\n    every: 3s\n"
		    "    iodepth: 1\n    jobs: 64\n    engine: libaio\n    rate_iops: 0\n"
		    "  - name: rd\n    type: burst\n    target: dev\n    rw: read\n"
		    "    iodepth: 256\n    ios: 1000000000\n    rate_iops: 10000000\n"
		    "    every: 24h\n    engine: sync\n"
		    "  - name: edge\n    type: burst\n    target: big\n    rw: randrw\n"
		    "    rwmix_read: 12.5%\n    block_size: 512-16MiB\n    duration: 10m\n"
		    "    ramp: 9m59s\n    every: 19m59s1ms\n    engine: \"null\"\n"
		    "    iodepth: 16\n" /* 16 x 16MiB: the most buffers a burst may take */
		    "  - name: wping\n    type: ping\n    target: dev\n    op: write\n");
	assert_int_equal(c->targets[0].layout_rate, 8 * MIB);
	assert_int_equal(c->targets[1].kind, CFG_TARGET_DEVICE);
	assert_string_equal(c->targets[1].path, "/dev/disk/by-id/nvme-x");
	assert_true(c->targets[1].allow_device_writes);
	assert_int_equal(c->targets[1].size, 0);
	assert_int_equal(c->targets[1].layout_rate, 0);
	p = &c->probes[0];
	assert_int_equal(p->kind, CFG_PROBE_BURST);
	assert_int_equal(p->rw, CFG_RW_RANDRW);
	assert_true(p->rwmix_read == 0.7);
	assert_int_equal(p->block_size, 2048);
	assert_int_equal(p->block_size_max, 16384);
	assert_int_equal(p->working_set, 1ULL << 30);
	assert_int_equal(p->iodepth, 64);
	assert_int_equal(p->jobs, 4);
	assert_int_equal(p->duration_ns, 30 * S);
	assert_int_equal(p->ios, 0);
	assert_int_equal(p->rate_iops, 5000);
	assert_int_equal(p->ramp_ns, 5 * S);
	assert_int_equal(p->interval_ns, 60 * S);
	assert_int_equal(p->timeout_ns, 1 * S);
	assert_string_equal(p->engine, "io_uring");
	p = &c->probes[1];
	assert_int_equal(p->target, 1);
	assert_int_equal(p->rw, CFG_RW_WRITE);
	assert_true(p->rwmix_read == 0.0);
	assert_int_equal(p->block_size, MIB);
	assert_int_equal(p->block_size_max, MIB);
	assert_int_equal(p->ios, 100000);
	assert_int_equal(p->duration_ns, 0);
	assert_int_equal(p->ramp_ns, 2 * S);
	assert_int_equal(p->interval_ns, 3 * S);
	assert_int_equal(p->iodepth, 1);
	assert_int_equal(p->jobs, CFG_MAX_JOBS);
	assert_string_equal(p->engine, "libaio");
	assert_true(cfg_probe_writes(p));
	p = &c->probes[2];
	assert_int_equal(p->rw, CFG_RW_READ);
	assert_int_equal(p->iodepth, CFG_MAX_IODEPTH);
	assert_int_equal(p->ios, CFG_MAX_IOS);
	assert_int_equal(p->rate_iops, CFG_MAX_RATE_IOPS);
	assert_int_equal(p->interval_ns, CFG_MAX_EVERY_NS);
	assert_false(cfg_probe_writes(p));
	p = &c->probes[3];
	assert_true(p->rwmix_read == 0.125);
	assert_int_equal(p->block_size, CFG_MIN_BLOCK_SIZE);
	assert_int_equal(p->block_size_max, CFG_MAX_BLOCK_SIZE);
	assert_int_equal(p->duration_ns, CFG_MAX_DURATION_NS);
	assert_string_equal(p->engine, "null");
	assert_int_equal(cfg_burst_buffer_bytes(p), CFG_MAX_BURST_BUFFER);
	p = &c->probes[4];
	assert_int_equal(p->rw, CFG_RW_RANDWRITE);
	assert_true(p->rwmix_read == 0.0);
	assert_true(cfg_probe_writes(p));
	assert_print_reloads(c);
	cfg_free(c);
}

/* What `iopulse check` prints for bursts and devices: only the keys of each kind. */
/* Every schema Prometheus knows, down to -4, and the two forms of a zero threshold. */
static void test_native_histogram_keys(void **state)
{
	static const struct {
		const char *yaml;
		int schema;
		uint64_t zero_threshold_ns;
	} cases[] = {
		{"native_histogram_schema: -4\n", -4, 0},
		{"native_histogram_schema: -1\n", -1, 0},
		{"native_histogram_schema: 0\n", 0, 0},
		{"native_histogram_schema: +1\n", 1, 0},
		{"native_histogram_schema: 7\n", 7, 0},
		{"native_histogram_zero_threshold: 0s\n", CFG_DEFAULT_NATIVE_SCHEMA, 0},
		{"native_histogram_zero_threshold: 1s\n", CFG_DEFAULT_NATIVE_SCHEMA, S},
		{"native_histogram_zero_threshold: 250ns\n", CFG_DEFAULT_NATIVE_SCHEMA, 250},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = load_okf("%s" T P, cases[i].yaml);

		assert_int_equal(c->native_schema, cases[i].schema);
		assert_int_equal(c->native_zero_threshold_ns, cases[i].zero_threshold_ns);
		assert_print_reloads(c);
		cfg_free(c);
	}
}

static void test_print_burst(void **state)
{
	static const char want[] = "# effective configuration from t.yaml\n"
				   "listen: \"127.0.0.1:10035\"\n"
				   "buckets: [1ms]\n"
				   "native_histogram_schema: 3\n"
				   "native_histogram_zero_threshold: 0s\n"
				   "splay: true\n"
				   "state_directory: \"\"\n"
				   "targets:\n"
				   "  - name: disk\n"
				   "    directory: /srv/x\n"
				   "    size: 64MiB\n"
				   "    layout_rate: 0\n"
				   "    keep_free: 5%\n"
				   "    require_mount: auto\n"
				   "    direct: true\n"
				   "    allow_memory_backed: false\n"
				   "    max_duty_cycle: 1%\n"
				   "    max_write_per_day: 1GiB\n"
				   "    expected_latency: 2ms\n"
				   "    slow_factor: 4\n"
				   "    slow_floor: auto\n"
				   "    baseline_warmup: 10m\n"
				   "    tail_factor: 4\n"
				   "    tail_share: 2%\n"
				   "    stall: 1s\n"
				   "    slow_minutes: 2\n"
				   "    ok_minutes: 3\n"
				   "  - name: dev\n"
				   "    device: /dev/vdb\n"
				   "    direct: true\n"
				   "    allow_memory_backed: false\n"
				   "    allow_device_writes: false\n"
				   "    max_duty_cycle: 1%\n"
				   "    max_write_per_day: 1GiB\n"
				   "    expected_latency: 2ms\n"
				   "    slow_factor: 4\n"
				   "    slow_floor: auto\n"
				   "    baseline_warmup: 10m\n"
				   "    tail_factor: 4\n"
				   "    tail_share: 2%\n"
				   "    stall: 1s\n"
				   "    slow_minutes: 2\n"
				   "    ok_minutes: 3\n"
				   "probes:\n"
				   "  - name: mix\n"
				   "    type: burst\n"
				   "    target: disk\n"
				   "    rw: randrw\n"
				   "    rwmix_read: 70%\n"
				   "    block_size: 2KiB-16KiB\n"
				   "    iodepth: 32\n"
				   "    jobs: 1\n"
				   "    duration: 1m30s\n"
				   "    rate_iops: 0\n"
				   "    ramp: 500ms\n"
				   "    every: 30m\n"
				   "    working_set: 0\n"
				   "    timeout: 10s\n"
				   "    engine: auto\n"
				   "    io_priority: none\n"
				   "    busy_backoff: true\n"
				   "    busy_utilization: 50%\n"
				   "    busy_queue_depth: 4\n"
				   "  - name: rd\n"
				   "    type: burst\n"
				   "    target: dev\n"
				   "    rw: randread\n"
				   "    block_size: 4KiB\n"
				   "    iodepth: 32\n"
				   "    jobs: 2\n"
				   "    ios: 1000\n"
				   "    rate_iops: 100\n"
				   "    ramp: 0s\n"
				   "    every: 1h\n"
				   "    working_set: 0\n"
				   "    timeout: 10s\n"
				   "    engine: auto\n"
				   "    io_priority: none\n"
				   "    busy_backoff: true\n"
				   "    busy_utilization: 50%\n"
				   "    busy_queue_depth: 4\n"
				   "  - name: p\n"
				   "    type: ping\n"
				   "    target: dev\n"
				   "    op: read\n"
				   "    sync: none\n"
				   "    interval: 1s\n"
				   "    block_size: 4KiB\n"
				   "    working_set: 0\n"
				   "    timeout: 10s\n"
				   "    warmup_after: 0s\n"
				   "    engine: auto\n"
				   "    io_priority: none\n";
	struct config *c;
	char *text;

	(void)state;
	c = load_ok("buckets: [1ms]\n" T "    layout_rate: 0\n"
		    "  - name: dev\n    device: /dev/vdb\n"
		    "probes:\n"
		    "  - name: mix\n    type: burst\n    target: disk\n    rw: randrw\n"
		    "    rwmix_read: 70.0%\n    block_size: 2048-16KiB\n    duration: 90s\n"
		    "    ramp: 0.5s\n"
		    "  - name: rd\n    type: burst\n    target: dev\n    jobs: 2\n    ios: 1000\n"
		    "    rate_iops: 100\n    every: 60m\n"
		    "  - name: p\n    type: ping\n    target: dev\n");
	text = print_to_string(c);
	assert_string_equal(text, want);
	assert_print_reloads(c);
	free(text);
	cfg_free(c);
}

static void test_layout_rate_forms(void **state)
{
	static const struct {
		const char *yaml;
		uint64_t rate;
		const char *printed;
	} cases[] = {
		{"32MiB/s", 32 * MIB, "32MiB/s"},
		{"32MiB", 32 * MIB, "32MiB/s"},
		{"0", 0, "0"},
		{"0/s", 0, "0"},
		{"1048576/s", CFG_MIN_LAYOUT_RATE, "1MiB/s"},
		{"1025KiB/s", 1025 * 1024, "1025KiB/s"},
		{"1g/s", 1ULL << 30, "1GiB/s"},
		{"1TiB/s", CFG_MAX_LAYOUT_RATE, "1TiB/s"},
		/* Long forms are read whole, never cut short. */
		{"00000000000000000000000000000000000000000000000000000000000000000000001MiB/s",
		 MIB, "1MiB/s"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = load_okf(T "    layout_rate: %s\n" P, cases[i].yaml);
		char line[64], *text;

		assert_int_equal(c->targets[0].layout_rate, cases[i].rate);
		text = print_to_string(c);
		snprintf(line, sizeof(line), "\n    layout_rate: %s\n", cases[i].printed);
		if (!strstr(text, line))
			fail_msg("'%s' printed as:\n%s", cases[i].yaml, text);
		free(text);
		assert_print_reloads(c);
		cfg_free(c);
	}
}

/* Every form of 'require_mount' and 'keep_free', and what they are on other targets. */
static void test_mount_and_keep_free(void **state)
{
	static const struct {
		const char *yaml; /* the target's extra keys */
		enum cfg_require_mount mount;
		const char *mount_path;
		uint64_t keep_bytes;
		double keep_fraction;
		const char *printed; /* the two lines cfg_print() writes */
	} cases[] = {
		{"", CFG_MOUNT_AUTO, NULL, 0, 0.05, "keep_free: 5%\n    require_mount: auto\n"},
		{"require_mount: auto\n", CFG_MOUNT_AUTO, NULL, 0, 0.05,
		 "keep_free: 5%\n    require_mount: auto\n"},
		{"require_mount: 'auto'\n", CFG_MOUNT_AUTO, NULL, 0, 0.05,
		 "keep_free: 5%\n    require_mount: auto\n"},
		{"require_mount: true\n", CFG_MOUNT_SELF, NULL, 0, 0.05,
		 "keep_free: 5%\n    require_mount: true\n"},
		{"require_mount: false\n", CFG_MOUNT_NO, NULL, 0, 0.05,
		 "keep_free: 5%\n    require_mount: false\n"},
		{"require_mount: /srv\n", CFG_MOUNT_PATH, "/srv", 0, 0.05,
		 "keep_free: 5%\n    require_mount: /srv\n"},
		{"require_mount: /\n", CFG_MOUNT_PATH, "/", 0, 0.05,
		 "keep_free: 5%\n    require_mount: /\n"},
		{"require_mount: ${IOPULSE_TEST_MNT}\n", CFG_MOUNT_PATH, "/mnt/data", 0, 0.05,
		 "keep_free: 5%\n    require_mount: /mnt/data\n"},
		{"require_mount: ${IOPULSE_TEST_UNSET:-/mnt/x}/$$y\n", CFG_MOUNT_PATH, "/mnt/x/$y",
		 0, 0.05, "keep_free: 5%\n    require_mount: \"/mnt/x/$$y\"\n"},
		{"require_mount: '/mnt/a b'\n", CFG_MOUNT_PATH, "/mnt/a b", 0, 0.05,
		 "keep_free: 5%\n    require_mount: \"/mnt/a b\"\n"},
		{"keep_free: 0\n", CFG_MOUNT_AUTO, NULL, 0, 0, "keep_free: 0\n"},
		{"keep_free: 0%\n", CFG_MOUNT_AUTO, NULL, 0, 0, "keep_free: 0\n"},
		{"keep_free: 90%\n", CFG_MOUNT_AUTO, NULL, 0, 0.9, "keep_free: 90%\n"},
		{"keep_free: 12.5%\n", CFG_MOUNT_AUTO, NULL, 0, 0.125, "keep_free: 12.5%\n"},
		{"keep_free: 2GiB\n", CFG_MOUNT_AUTO, NULL, 2ULL << 30, 0, "keep_free: 2GiB\n"},
		{"keep_free: 4097\n", CFG_MOUNT_AUTO, NULL, 4097, 0, "keep_free: 4097\n"},
		{"keep_free: 1t\n    require_mount: /srv/x\n", CFG_MOUNT_PATH, "/srv/x", 1ULL << 40,
		 0, "keep_free: 1TiB\n    require_mount: /srv/x\n"},
	};
	struct config *c;

	(void)state;
	setenv("IOPULSE_TEST_MNT", "/mnt/data", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct cfg_target *t;
		char *text;

		c = load_okf(T "%s%s" P, *cases[i].yaml ? "    " : "", cases[i].yaml);
		t = &c->targets[0];
		assert_int_equal(t->require_mount, cases[i].mount);
		if (cases[i].mount_path)
			assert_string_equal(t->mount_path, cases[i].mount_path);
		else
			assert_null(t->mount_path);
		assert_int_equal(t->keep_free_bytes, cases[i].keep_bytes);
		assert_true(t->keep_free_fraction == cases[i].keep_fraction);
		text = print_to_string(c);
		if (!strstr(text, cases[i].printed))
			fail_msg("'%s' printed as:\n%s", cases[i].yaml, text);
		free(text);
		assert_print_reloads(c);
		cfg_free(c);
	}
	unsetenv("IOPULSE_TEST_MNT");

	/* File and device targets create nothing: no check, no reserve, nothing printed. */
	c = load_ok("targets:\n  - name: db\n    file: /db\n  - name: dev\n    device: /dev/vdb\n"
		    "probes:\n  - name: p\n    type: ping\n    target: db\n");
	for (unsigned i = 0; i < 2; i++) {
		const struct cfg_target *t = &c->targets[i];
		char *text = print_to_string(c);

		assert_int_equal(t->require_mount, CFG_MOUNT_NO);
		assert_null(t->mount_path);
		assert_int_equal(t->keep_free_bytes, 0);
		assert_true(t->keep_free_fraction == 0);
		assert_null(strstr(text, "require_mount"));
		assert_null(strstr(text, "keep_free"));
		free(text);
	}
	assert_print_reloads(c);
	cfg_free(c);
}

/* 'labels': kept in the order written, printed by 'iopulse check' only when set
 * (quoted where YAML needs it), and read back the same. */
static void test_labels(void **state)
{
	struct config *c;
	const struct cfg_target *t;
	char *text;

	(void)state;
	c = load_ok(T "    labels:\n      zone: eu-west-1a\n      volume_type: \"gp3 \\\"x\\\"\"\n"
		      "      'null': \"true\"\n      rack: \"\u00e9t\u00e9 1\"\n" P);
	t = &c->targets[0];
	assert_int_equal(t->n_labels, 4);
	assert_string_equal(t->labels[0].name, "zone");
	assert_string_equal(t->labels[0].value, "eu-west-1a");
	assert_string_equal(t->labels[1].name, "volume_type");
	assert_string_equal(t->labels[1].value, "gp3 \"x\"");
	assert_string_equal(t->labels[2].name, "null");
	assert_string_equal(t->labels[2].value, "true");
	assert_string_equal(t->labels[3].value, "\u00e9t\u00e9 1");
	text = print_to_string(c);
	if (!strstr(text, "    labels:\n      zone: eu-west-1a\n      volume_type: \"gp3 "
			  "\\\"x\\\"\"\n      \"null\": true\n      rack: \"\u00e9t\u00e9 1\"\n"))
		fail_msg("labels printed as:\n%s", text);
	free(text);
	assert_print_reloads(c);
	cfg_free(c);

	/* Eight on every kind of target; none printed when none are set. */
	c = load_ok("targets:\n  - name: f\n    file: /db\n    labels: {a: 1, b: 2, c: 3, d: 4, "
		    "e: 5, f: 6, g: 7, h: 8}\n  - name: d\n    device: /dev/vdb\n    labels: "
		    "{a: 1}\n  - name: disk\n    directory: /srv/x\n" P);
	assert_int_equal(c->targets[0].n_labels, 8);
	assert_string_equal(c->targets[0].labels[7].value, "8");
	assert_int_equal(c->targets[1].n_labels, 1);
	assert_int_equal(c->targets[2].n_labels, 0);
	text = print_to_string(c);
	assert_non_null(strstr(text, "    device: /dev/vdb\n"));
	assert_null(strstr(strstr(text, "name: disk"), "labels"));
	free(text);
	assert_print_reloads(c);
	cfg_free(c);
}

/* A reload restarts a target's lane when any key of it changes. */
static void test_target_same(void **state)
{
	static const char *const variants[] = {
		"",
		"    size: 128MiB\n",
		"    layout_rate: 0\n",
		"    keep_free: 0\n",
		"    keep_free: 6%\n",
		"    keep_free: 1GiB\n",
		"    keep_free: 2GiB\n",
		"    require_mount: true\n",
		"    require_mount: false\n",
		"    require_mount: /srv\n",
		"    require_mount: /srv/x\n",
		"    direct: false\n",
		"    allow_memory_backed: true\n",
		"    labels: {zone: a}\n",
		"    labels: {zone: b}\n",
		"    labels: {zone2: a}\n",
		"    labels: {zone: a, rack: r1}\n",
		"    labels: {rack: r1, zone: a}\n",
	};
	/* How its figures are judged: applied by a reload that keeps the target,
	 * its state and its probes' baselines. */
	static const char *const judged[] = {
		"    slow_factor: 2\n",
		"    slow_floor: 0s\n",
		"    baseline_warmup: 1h\n",
		"    slow_factor: 8\n    slow_floor: 5ms\n    baseline_warmup: 1m\n",
		"    tail_factor: 8\n",
		"    tail_share: 5%\n",
		"    stall: 3s\n",
		"    slow_minutes: 5\n",
		"    ok_minutes: 10\n",
		"    slow_floor: auto\n    tail_share: 0%\n    stall: 0s\n",
	};
	enum { N = sizeof(variants) / sizeof(variants[0]) };
	enum { NJ = sizeof(judged) / sizeof(judged[0]) };
	struct config *c[N], *jc[NJ];

	(void)state;
	for (size_t i = 0; i < N; i++)
		c[i] = load_okf(T "%s" P, variants[i]);
	for (size_t i = 0; i < N; i++) {
		for (size_t j = 0; j < N; j++) {
			if (cfg_target_same(&c[i]->targets[0], &c[j]->targets[0]) != (i == j))
				fail_msg("'%s' and '%s': same is %d", variants[i], variants[j],
					 i != j);
		}
	}
	for (size_t i = 0; i < NJ; i++) {
		jc[i] = load_okf(T "%s" P, judged[i]);
		if (!cfg_target_same(&c[0]->targets[0], &jc[i]->targets[0]) ||
		    !cfg_probe_same(c[0], &c[0]->probes[0], jc[i], &jc[i]->probes[0]))
			fail_msg("'%s' makes the target another one", judged[i]);
		/* ...and is in force all the same */
		assert_false(jc[i]->targets[0].slow_factor == c[0]->targets[0].slow_factor &&
			     jc[i]->targets[0].slow_floor_ns == c[0]->targets[0].slow_floor_ns &&
			     jc[i]->targets[0].baseline_warmup_ns ==
				     c[0]->targets[0].baseline_warmup_ns &&
			     jc[i]->targets[0].tail_factor == c[0]->targets[0].tail_factor &&
			     jc[i]->targets[0].tail_share == c[0]->targets[0].tail_share &&
			     jc[i]->targets[0].stall_ns == c[0]->targets[0].stall_ns &&
			     jc[i]->targets[0].slow_minutes == c[0]->targets[0].slow_minutes &&
			     jc[i]->targets[0].ok_minutes == c[0]->targets[0].ok_minutes);
		cfg_free(jc[i]);
	}
	for (size_t i = 0; i < N; i++)
		cfg_free(c[i]);
}

/* 'state_directory': empty unless written or STATE_DIRECTORY is set, expanded as
 * a target's path, printed so that it reads back the same. */
static void test_state_directory(void **state)
{
	struct config *c;
	char *text;

	(void)state;
	unsetenv("STATE_DIRECTORY");
	c = load_ok(T P);
	assert_string_equal(c->state_directory, "");
	cfg_free(c);
	setenv("STATE_DIRECTORY", "/var/lib/iopulse", 1);
	c = load_ok(T P);
	assert_string_equal(c->state_directory, "/var/lib/iopulse");
	cfg_free(c);
	unsetenv("STATE_DIRECTORY");
	c = load_ok("state_directory: ${STATE_DIRECTORY:-./iopulse-data}/$$x\n" T P);
	assert_string_equal(c->state_directory, "./iopulse-data/$x");
	text = print_to_string(c);
	cfg_free(c);
	c = load_ok(text);
	assert_string_equal(c->state_directory, "./iopulse-data/$x");
	free(text);
	cfg_free(c);
}

/* cfg_probe_fingerprint(): the same for the same probe and target, another when
 * what is measured changes (a key of the probe, or of its target), the same when
 * only how it is judged does. */
static void test_probe_fingerprint(void **state)
{
	static const char *const other[] = {
		T "    size: 128MiB\n" P,
		T "    direct: false\n" P,
		"targets:\n  - name: disk\n    directory: /srv/y\n" P,
		T P "    block_size: 8KiB\n",
		T P "    op: write\n",
		T P "    interval: 2s\n",
		T P "    engine: sync\n",
	};
	struct config *a = load_ok(T P), *b = load_ok(T P), *c;
	uint32_t fa = cfg_probe_fingerprint(a, &a->probes[0]);

	(void)state;
	assert_int_not_equal(fa, 0);
	assert_int_equal(fa, cfg_probe_fingerprint(b, &b->probes[0]));
	cfg_free(b);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		c = load_ok(other[i]);
		if (cfg_probe_fingerprint(c, &c->probes[0]) == fa)
			fail_msg("the same fingerprint for:\n%s", other[i]);
		cfg_free(c);
	}
	c = load_ok(T "    slow_factor: 10\n    slow_floor: 5ms\n    baseline_warmup: 1m\n" P);
	assert_int_equal(fa, cfg_probe_fingerprint(c, &c->probes[0]));
	cfg_free(c);
	cfg_free(a);
}

/* The slow state's keys: the values as written, printed back the same. */
static void test_slow_keys(void **state)
{
	static const struct {
		const char *yaml;
		double factor;
		uint64_t floor_ns, warmup_ns;
		const char *printed;
	} cases[] = {
		{"", 4.0, CFG_SLOW_FLOOR_AUTO, 600 * S,
		 "    slow_factor: 4\n    slow_floor: auto\n    baseline_warmup: 10m\n"
		 "    tail_factor: 4\n    tail_share: 2%\n    stall: 1s\n    slow_minutes: 2\n"
		 "    ok_minutes: 3\n"},
		{"    slow_factor: 2.5\n    slow_floor: 0s\n    baseline_warmup: 1m\n", 2.5, 0,
		 60 * S, "    slow_factor: 2.5\n    slow_floor: 0s\n    baseline_warmup: 1m\n"},
		{"    slow_factor: 1.01\n    slow_floor: 250us\n    baseline_warmup: 1h30m\n", 1.01,
		 250000, 5400 * S,
		 "    slow_factor: 1.01\n    slow_floor: 250us\n    baseline_warmup: 1h30m\n"},
		{"    slow_factor: 1000\n    slow_floor: 1m\n    baseline_warmup: 24h\n", 1000.0,
		 60 * S, 86400 * S,
		 "    slow_factor: 1000\n    slow_floor: 1m\n    baseline_warmup: 24h\n"},
		{"    slow_factor: 010.50\n    baseline_warmup: 120m\n", 10.5, CFG_SLOW_FLOOR_AUTO,
		 7200 * S,
		 "    slow_factor: 10.5\n    slow_floor: auto\n    baseline_warmup: 2h\n"},
		{"    slow_floor: auto\n    tail_share: 0%\n    stall: 0s\n    slow_minutes: 30\n",
		 4.0, CFG_SLOW_FLOOR_AUTO, 600 * S,
		 "    slow_floor: auto\n    baseline_warmup: 10m\n    tail_factor: 4\n"
		 "    tail_share: 0%\n    stall: 0s\n    slow_minutes: 30\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = load_okf(TD "%s" PD, cases[i].yaml);
		const struct cfg_target *t = &c->targets[0];
		char *text = print_to_string(c);

		if (t->slow_factor != cases[i].factor)
			fail_msg("'%s': slow_factor %.17g", cases[i].yaml, t->slow_factor);
		assert_int_equal(t->slow_floor_ns, cases[i].floor_ns);
		assert_int_equal(t->baseline_warmup_ns, cases[i].warmup_ns);
		if (!strstr(text, cases[i].printed))
			fail_msg("'%s' prints as:\n%s", cases[i].yaml, text);
		free(text);
		assert_print_reloads(c);
		cfg_free(c);
	}
}

static void test_device_target(void **state)
{
	struct config *c;
	const struct cfg_target *t;

	(void)state;
	setenv("IOPULSE_TEST_DEV", "/dev/vdc", 1);
	c = load_ok("targets:\n  - name: a\n    device: /dev/vdb\n"
		    "  - name: b\n    device: ${IOPULSE_TEST_DEV}\n"
		    "  - name: c\n    device: ${IOPULSE_TEST_UNSET:-/dev/mapper/vg-lv}\n"
		    "    allow_device_writes: true\n    allow_memory_backed: true\n"
		    "probes:\n  - name: p\n    type: ping\n    target: c\n    op: write\n"
		    "  - name: q\n    type: ping\n    target: a\n    working_set: 1TiB\n");
	t = &c->targets[0];
	assert_int_equal(t->kind, CFG_TARGET_DEVICE);
	assert_string_equal(t->path, "/dev/vdb");
	assert_false(t->allow_device_writes);
	assert_true(t->direct);
	assert_int_equal(t->size, 0);
	assert_int_equal(t->layout_rate, 0);
	assert_string_equal(c->targets[1].path, "/dev/vdc");
	t = &c->targets[2];
	assert_string_equal(t->path, "/dev/mapper/vg-lv");
	assert_true(t->allow_device_writes);
	assert_true(t->allow_memory_backed);
	assert_int_equal(c->probes[0].target, 2);
	assert_int_equal(c->probes[1].working_set, 1ULL << 40); /* a device's size: run time */
	assert_print_reloads(c);
	cfg_free(c);
	unsetenv("IOPULSE_TEST_DEV");
}

static void test_engines(void **state)
{
	static const char *const engines[] = {"auto", "io_uring", "libaio", "sync", "null"};

	(void)state;
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		/* "engine: null" too: the null engine */
		struct config *c = load_okf(T P "    engine: %s\n  - name: b1\n    type: burst\n"
						"    target: disk\n    engine: %s\n",
					    engines[i], engines[i]);

		assert_string_equal(c->probes[0].engine, engines[i]);
		assert_string_equal(c->probes[1].engine, engines[i]);
		assert_print_reloads(c);
		cfg_free(c);
	}
}

/* Each class as written, its kernel value (ioprio_set(2): class << 13 | level), and back. */
static void test_io_priorities(void **state)
{
	static const struct {
		const char *yaml;
		int value;
	} cases[] = {
		{"none", 0},
		{"idle", 3 << 13},
		{"best-effort:0", 2 << 13},
		{"best-effort:7", (2 << 13) | 7},
		{"realtime:0", 1 << 13},
		{"realtime:7", (1 << 13) | 7},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c =
			load_okf(T P "    io_priority: %s\n  - name: b1\n    type: burst\n"
				     "    target: disk\n    io_priority: %s\n",
				 cases[i].yaml, cases[i].yaml);
		char buf[IOPRIO_TEXT_MAX];

		assert_int_equal(c->probes[0].io_priority, cases[i].value);
		assert_int_equal(c->probes[1].io_priority, cases[i].value);
		assert_string_equal(ioprio_format(cases[i].value, buf, sizeof(buf)), cases[i].yaml);
		assert_print_reloads(c);
		cfg_free(c);
	}
	/* Not written: none, the kernel's default. */
	struct config *c = load_okf(T P);
	assert_int_equal(c->probes[0].io_priority, 0);
	cfg_free(c);
}

static void test_listen_forms(void **state)
{
	static const struct {
		const char *yaml;
		const char *host;
		unsigned port;
	} cases[] = {
		{"listen: 0.0.0.0:9100\n", "0.0.0.0", 9100},
		{"listen: :10035\n", "", 10035},
		{"listen: \":0\"\n", "", 0},
		{"listen: \"[::]:80\"\n", "::", 80},
		{"listen: \"[fe80::1]:65535\"\n", "fe80::1", 65535},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = load_okf("%s" T P, cases[i].yaml);

		assert_string_equal(c->listen_host, cases[i].host);
		assert_int_equal(c->listen_port, cases[i].port);
		assert_print_reloads(c);
		cfg_free(c);
	}
}

/* --listen on the command line parses exactly like the 'listen' key. */
static void test_parse_listen(void **state)
{
	char host[64], tiny[4];
	uint16_t port = 1;

	(void)state;
	assert_int_equal(cfg_parse_listen("127.0.0.1:10035", host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 10035);
	assert_int_equal(cfg_parse_listen("[::1]:0", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 0);
	assert_int_equal(cfg_parse_listen(":9100", host, sizeof(host), &port), 0);
	assert_string_equal(host, "");
	assert_int_equal(port, 9100);
	assert_int_equal(cfg_parse_listen("localhost:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("::1:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("[::1]80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("[]:80", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("1.2.3.4:", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("1.2.3.4:-1", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("1.2.3.4:65536", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("1.2.3.4", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("", host, sizeof(host), &port), -EINVAL);
	assert_int_equal(cfg_parse_listen("1.2.3.4:80", tiny, sizeof(tiny), &port), -ENAMETOOLONG);
	assert_int_equal(cfg_parse_listen(NULL, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(port, 9100); /* untouched on failure */
}

static void test_env_expansion(void **state)
{
	struct config *c;

	(void)state;
	setenv("IOPULSE_TEST_DIR", "/srv/data", 1);
	setenv("IOPULSE_TEST_EMPTY", "", 1);
	unsetenv("IOPULSE_TEST_UNSET");
	c = load_ok("targets:\n"
		    "  - name: a\n    directory: ${IOPULSE_TEST_DIR}/iopulse\n"
		    "  - name: b\n    directory: ${IOPULSE_TEST_UNSET:-/fallback/b}\n"
		    "  - name: c\n    directory: ${IOPULSE_TEST_EMPTY:-/fallback/c}\n"
		    "  - name: d\n    directory: ${IOPULSE_TEST_DIR:-/unused}/d\n"
		    "  - name: e\n    file: /cost$5/$$HOME/a$\n"
		    "  - name: f\n    directory: ${IOPULSE_TEST_UNSET:-}/rel\n"
		    "probes:\n  - name: p\n    type: ping\n    target: a\n");
	assert_string_equal(c->targets[0].path, "/srv/data/iopulse");
	assert_string_equal(c->targets[1].path, "/fallback/b");
	assert_string_equal(c->targets[2].path, "/fallback/c");
	assert_string_equal(c->targets[3].path, "/srv/data/d");
	assert_string_equal(c->targets[4].path, "/cost$5/$HOME/a$");
	assert_string_equal(c->targets[5].path, "/rel");
	/* Printed paths are escaped: reloading must not expand them again. */
	setenv("IOPULSE_TEST_DIR", "${IOPULSE_TEST_UNSET}", 1);
	cfg_free(c);
	c = load_ok("targets:\n  - name: a\n    directory: /x/${IOPULSE_TEST_DIR}\n"
		    "probes:\n  - name: p\n    type: ping\n    target: a\n");
	assert_string_equal(c->targets[0].path, "/x/${IOPULSE_TEST_UNSET}");
	assert_print_reloads(c);
	cfg_free(c);
	unsetenv("IOPULSE_TEST_DIR");
	unsetenv("IOPULSE_TEST_EMPTY");
}

/* Printed strings load back, whatever they hold: libyaml refuses U+FFFE and
 * U+FFFF as they are, so they are printed escaped. */
static void test_print_escapes(void **state)
{
	struct config *c;

	(void)state;
	c = load_ok(
		"targets:\n  - name: a\n    directory: \"/a\\uffff\\ufffe\\u2028\\x85\\ufeffb\"\n"
		"probes:\n  - name: p\n    type: ping\n    target: a\n");
	assert_string_equal(c->targets[0].path,
			    "/a\xef\xbf\xbf\xef\xbf\xbe\xe2\x80\xa8\xc2\x85\xef\xbb\xbf"
			    "b");
	assert_print_reloads(c);
	cfg_free(c);
}

static void test_scalars_are_strings(void **state)
{
	struct config *c;

	(void)state;
	/* Names that YAML would type as numbers or booleans are still names. */
	c = load_ok(
		"targets:\n  - name: 123\n    directory: /x\n  - name: 'null'\n"
		"    directory: /y\n  - name: \"true\"\n    directory: '-'\n"
		"probes:\n  - name: 1.5\n    type: ping\n    target: 123\n"
		"  - name: '-'\n    type: \"ping\"\n    target: 'null'\n    block_size: 4096\n");
	assert_string_equal(c->targets[0].name, "123");
	assert_string_equal(c->targets[1].name, "null");
	assert_string_equal(c->targets[2].path, "-");
	assert_string_equal(c->probes[0].name, "1.5");
	assert_int_equal(c->probes[1].target, 1);
	assert_print_reloads(c);
	cfg_free(c);
}

/* The types of the schema read as numbers (iopulse.yaml(5)'s words): quoted,
 * a value of any of them is refused (cfg_get_plain()); every other type is text. */
static const char *const number_like_types[] = {
	"size",
	"size per second",
	"duration",
	"number",
	"percentage",
	"whole number",
	"boolean",
	"whole number, may be negative",
	"size or percentage",
	"size or range MIN-MAX",
	NULL,
};

static bool number_like(const char *type)
{
	for (unsigned i = 0; number_like_types[i]; i++)
		if (!strcmp(type, number_like_types[i]))
			return true;
	return false;
}

/* @key: @value in the section @section of a configuration that is valid
 * around it (a device target for the keys only a device takes), into @yaml;
 * whether it loads. */
static int load_in_section(const char *section, const char *key, const char *value, char *yaml,
			   size_t len, struct cfg_error *err)
{
	static const struct {
		const char *section, *before, *after;
	} places[] = {
		{"TOP LEVEL", "", T P},	    {"TARGETS", T, P},
		{"TARGETS", TD, PD},	    {"PING PROBES", T P, ""},
		{"BURST PROBES", T B, ""},  {"BURST PROBES", T B "    rw: randrw\n", ""},
		{"VERIFY PROBES", T V, ""},
	};
	struct config *c = NULL;
	int r = -ENOENT;

	for (unsigned i = 0; i < sizeof(places) / sizeof(places[0]) && r != 0; i++) {
		if (strcmp(places[i].section, section))
			continue;
		snprintf(yaml, len, "%s%s%s: %s\n%s", places[i].before,
			 strcmp(section, "TOP LEVEL") ? "    " : "", key, value, places[i].after);
		r = cfg_load_string("t.yaml", yaml, strlen(yaml), &c, err);
		cfg_free(c);
		c = NULL;
	}
	return r;
}

/* Each key of a number-like type, its default written plain, loads; quoted,
 * it is refused naming the key and saying how to write it. */
static void test_quoted_numbers_refused(void **state)
{
	char yaml[1024], quoted[128], want[160];
	struct cfg_key_doc d;
	struct cfg_error err;
	unsigned tried = 0;

	(void)state;
	for (unsigned i = 0; cfg_key_doc(i, &d) == 0; i++) {
		if (!number_like(d.type) || !d.def)
			continue;
		if (load_in_section(d.section, d.name, d.def, yaml, sizeof(yaml), &err) != 0)
			fail_msg("%s (%s): its default '%s' written plain does not load: %s",
				 d.name, d.section, d.def, err.msg);
		snprintf(quoted, sizeof(quoted), "\"%s\"", d.def);
		if (load_in_section(d.section, d.name, quoted, yaml, sizeof(yaml), &err) != -EINVAL)
			fail_msg("%s (%s): %s quoted loads", d.name, d.section, d.def);
		snprintf(want, sizeof(want), "'%s' must be ", d.name);
		if (!strstr(err.msg, want) || !strstr(err.msg, "(quoted): write it without quotes"))
			fail_msg("%s (%s) quoted: %s", d.name, d.section, err.msg);
		tried++;
	}
	assert_true(tried >= 30);
}

/* YAML's own tags decide: !!int, !!float and !!bool make even a quoted value a
 * number or a boolean; other tags change nothing; an alias reads as its node. */
static void test_tagged_numbers(void **state)
{
	struct config *c;

	(void)state;
	c = load_ok("targets:\n  - name: disk\n    directory: /srv/x\n"
		    "    slow_factor: &f !!float \"2.5\"\n    direct: !!bool \"true\"\n"
		    "  - name: two\n    directory: /srv/y\n    slow_factor: *f\n"
		    "probes:\n  - name: b1\n    type: burst\n    target: disk\n"
		    "    iodepth: !!int \"8\"\n    jobs: !!int 2\n");
	assert_true(c->targets[0].slow_factor == 2.5);
	assert_true(c->targets[1].slow_factor == 2.5);
	assert_true(c->targets[0].direct);
	assert_int_equal(c->probes[0].iodepth, 8);
	assert_int_equal(c->probes[0].jobs, 2);
	cfg_free(c);
}

/*
 * A long value is shortened in the message, never the message: whatever its
 * length, the message names the key and ends with the reason, whole. @yaml
 * has "%s" where bytes @fill go, in a value of @n bytes of which @extra are
 * around them; @want is in the message, @tail ends it.
 */
static struct cfg_error long_value_err; /* the last message check_long_value() read */

static void check_long_value(const char *name, const char *yaml, char fill, size_t n, size_t extra,
			     const char *want, const char *tail)
{
	char *v = malloc(n + 1), *text = malloc(strlen(yaml) + n + 1), count[64];
	struct config *c = NULL;
	struct cfg_error err;
	size_t len, tl = strlen(tail);
	int r;

	assert_non_null(v);
	assert_non_null(text);
	memset(v, fill, n - extra);
	v[n - extra] = '\0';
	sprintf(text, yaml, v);
	r = cfg_load_string(name, text, strlen(text), &c, &err);
	assert_int_equal(r, -EINVAL);
	len = strlen(err.msg);
	snprintf(count, sizeof(count), "\u2026' (%zu bytes)", n);
	if (len >= sizeof(err.msg) - 1 || !strstr(err.msg, want) || !strstr(err.msg, count) ||
	    len < tl || strcmp(err.msg + len - tl, tail))
		fail_msg("%zu bytes: want '%s' and '%s' in it, ending '%s'; got (%zu bytes)\n%s", n,
			 want, count, tail, len, err.msg);
	long_value_err = err;
	free(v);
	free(text);
}

static void test_long_values_elided(void **state)
{
	static const size_t lengths[] = {500, 5000, 100000};
	char name[4096], text[4096 + 256];
	struct config *c = NULL;
	struct cfg_error err;
	size_t at = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		size_t n = lengths[i];

		check_long_value("t.yaml", T "    slow_factor: %s\n" P, '1', n, 0,
				 "t.yaml:4:18: invalid number '1111",
				 "for 'slow_factor': too many digits");
		check_long_value("t.yaml", T P "    interval: %s\n", 'x', n, 0, "for 'interval'",
				 "(units: ns, us, ms, s, m, h, d)");
		check_long_value("t.yaml", T "    size: 4%s\n" P, 'x', n, 1, "for 'size'",
				 "expected bytes or a number with a unit (k, m, g, t, KiB, MiB, "
				 "GiB, TiB)");
		check_long_value("t.yaml", T B "    block_size: 4k-%s\n", '9', n, 3,
				 "for 'block_size' range '4k-999", ": too large");
		check_long_value("t.yaml", T "    keep_free: %s%%\n" P, '9', n, 1, "'keep_free'",
				 "must be between 0% and 90%");
		check_long_value("t.yaml", T "    require_mount: ${A-%s}\n" P, 'b', n, 5,
				 "invalid variable reference '${A-bbb",
				 "in 'require_mount': use ${NAME} or ${NAME:-fallback}");
		check_long_value("t.yaml",
				 T "probes:\n  - name: p1\n    type: ping\n    target: %s\n", 't',
				 n, 0, "probe 'p1' references undefined target 'ttt", "");
	}
	/* A path as long as one may be (PATH_MAX - 1 bytes). */
	check_long_value("t.yaml", "targets:\n  - name: dev\n    device: /x%s\n" PD, 'y', 4095, 2,
			 "t.yaml:3:13: 'device' must be a block device under /dev/", "");
	/* A key as long as YAML takes one (a simple key: 1024 characters). */
	check_long_value("t.yaml", T "    %s: 1\n" P, 'k', 1000, 0, "unknown key 'kkk",
			 "in target (valid keys: name, directory, file, device, size, "
			 "layout_rate, keep_free, require_mount, direct, allow_memory_backed, "
			 "allow_device_writes, max_duty_cycle, max_write_per_day, "
			 "expected_latency, slow_factor, slow_floor, baseline_warmup, tail_factor, "
			 "tail_share, stall, slow_minutes, ok_minutes, labels)");
	/* A long file name keeps its end, the message all of its own. */
	at = (size_t)snprintf(name, sizeof(name), "/srv");
	while (at < 3000)
		at += (size_t)snprintf(name + at, sizeof(name) - at, "/directory");
	snprintf(name + at, sizeof(name) - at, "/t.yaml");
	check_long_value(name, T "    slow_factor: %s\n" P, '2', 5000, 0,
			 "/directory/t.yaml:4:18: invalid number '2222",
			 "for 'slow_factor': too many digits");
	assert_memory_equal(long_value_err.msg, "\u2026", strlen("\u2026"));
	/* A value the message has room for is quoted whole. */
	memset(name, 'y', 150);
	name[150] = '\0';
	snprintf(text, sizeof(text), T "    device: /x%s\n" P, name);
	assert_int_equal(cfg_load_string("t.yaml", text, strlen(text), &c, &err), -EINVAL);
	snprintf(text, sizeof(text), "got '/x%s'", name);
	if (!strstr(err.msg, text) || strstr(err.msg, "\u2026"))
		fail_msg("a 152-byte device path is not quoted whole: %s", err.msg);
}

static void test_limits(void **state)
{
	size_t cap = 64 * 1024;
	char *yaml = malloc(cap);
	struct config *c = NULL;
	struct cfg_error err;
	size_t n;

	(void)state;
	assert_non_null(yaml);
	/* 64 targets and 256 probes are fine; one more of either is not. */
	for (unsigned extra = 0; extra < 3; extra++) {
		unsigned nt = CFG_MAX_TARGETS + (extra == 1), np = CFG_MAX_PROBES + (extra == 2);

		n = (size_t)snprintf(yaml, cap, "targets:\n");
		for (unsigned i = 0; i < nt; i++)
			n += (size_t)snprintf(yaml + n, cap - n, "  - {name: t%u, directory: /t}\n",
					      i);
		n += (size_t)snprintf(yaml + n, cap - n, "probes:\n");
		for (unsigned i = 0; i < np; i++)
			n += (size_t)snprintf(yaml + n, cap - n,
					      "  - {name: p%u, type: ping, target: t%u}\n", i,
					      i % CFG_MAX_TARGETS);
		assert_true(n < cap);
		if (extra == 0) {
			assert_int_equal(cfg_load_string("t.yaml", yaml, n, &c, &err), 0);
			assert_int_equal(c->n_targets, CFG_MAX_TARGETS);
			assert_int_equal(c->n_probes, CFG_MAX_PROBES);
			assert_int_equal(c->probes[65].target, 1);
			cfg_free(c);
		} else {
			assert_int_equal(cfg_load_string("t.yaml", yaml, n, &c, &err), -EINVAL);
			assert_string_equal(err.msg, extra == 1 ? "t.yaml:2:3: 'targets' has 65 "
								  "items, at most 64 are allowed"
								: "t.yaml:67:3: 'probes' has 257 "
								  "items, at most 256 are allowed");
		}
	}
	free(yaml);
}

static void test_embedded_default(void **state)
{
	struct config *c = NULL;
	struct cfg_error err;
	const struct cfg_probe *p;

	(void)state;
	unsetenv("STATE_DIRECTORY");
	assert_int_equal(cfg_load_default(&c, &err), 0);
	assert_string_equal(c->source, "<embedded default>");
	assert_string_equal(c->listen_host, "127.0.0.1");
	assert_int_equal(c->listen_port, 10035);
	assert_int_equal(c->n_buckets, 19);
	assert_int_equal(c->n_targets, 1);
	assert_string_equal(c->targets[0].name, "state");
	assert_int_equal(c->targets[0].kind, CFG_TARGET_DIRECTORY);
	assert_string_equal(c->targets[0].path, "./iopulse-data");
	assert_int_equal(c->targets[0].size, 64 * MIB);
	assert_true(c->targets[0].direct);
	assert_false(c->targets[0].allow_memory_backed);
	assert_int_equal(c->n_probes, 2);
	p = &c->probes[0];
	assert_string_equal(p->name, "read-ping");
	assert_int_equal(p->kind, CFG_PROBE_PING);
	assert_int_equal(p->target, 0);
	assert_int_equal(p->op, IO_READ);
	assert_int_equal(p->sync, CFG_SYNC_NONE);
	assert_int_equal(p->block_size, 4096);
	assert_int_equal(p->interval_ns, 1 * S);
	p = &c->probes[1];
	assert_string_equal(p->name, "write-ping");
	assert_int_equal(p->target, 0);
	assert_int_equal(p->op, IO_WRITE);
	assert_int_equal(p->sync, CFG_SYNC_FDATASYNC);
	assert_int_equal(p->block_size, 4096);
	assert_int_equal(p->interval_ns, 10 * S);
	cfg_free(c);

	setenv("STATE_DIRECTORY", "/var/lib/iopulse", 1);
	assert_int_equal(cfg_load_default(&c, &err), 0);
	assert_string_equal(c->targets[0].path, "/var/lib/iopulse");
	cfg_free(c);
	unsetenv("STATE_DIRECTORY");
}

/* The whole printed default, byte for byte: this is what `iopulse check` shows. */
static void test_print_default(void **state)
{
	static const char want[] =
		"# effective configuration from <embedded default>\n"
		"listen: \"127.0.0.1:10035\"\n"
		"buckets: [10us, 25us, 50us, 100us, 250us, 500us, 1ms, 2ms500us, 5ms, 10ms, 25ms, "
		"50ms, 100ms, 250ms, 500ms, 1s, 2s500ms, 5s, 10s]\n"
		"native_histogram_schema: 3\n"
		"native_histogram_zero_threshold: 0s\n"
		"splay: true\n"
		"state_directory: ./iopulse-data\n"
		"targets:\n"
		"  - name: state\n"
		"    directory: ./iopulse-data\n"
		"    size: 64MiB\n"
		"    layout_rate: 32MiB/s\n"
		"    keep_free: 5%\n"
		"    require_mount: auto\n"
		"    direct: true\n"
		"    allow_memory_backed: false\n"
		"    max_duty_cycle: 1%\n"
		"    max_write_per_day: 1GiB\n"
		"    expected_latency: 2ms\n"
		"    slow_factor: 4\n"
		"    slow_floor: auto\n"
		"    baseline_warmup: 10m\n"
		"    tail_factor: 4\n"
		"    tail_share: 2%\n"
		"    stall: 1s\n"
		"    slow_minutes: 2\n"
		"    ok_minutes: 3\n"
		"probes:\n"
		"  - name: read-ping\n"
		"    type: ping\n"
		"    target: state\n"
		"    op: read\n"
		"    sync: none\n"
		"    interval: 1s\n"
		"    block_size: 4KiB\n"
		"    working_set: 0\n"
		"    timeout: 10s\n"
		"    warmup_after: 0s\n"
		"    engine: auto\n"
		"    io_priority: none\n"
		"  - name: write-ping\n"
		"    type: ping\n"
		"    target: state\n"
		"    op: write\n"
		"    sync: fdatasync\n"
		"    interval: 10s\n"
		"    block_size: 4KiB\n"
		"    working_set: 0\n"
		"    timeout: 10s\n"
		"    warmup_after: 0s\n"
		"    engine: auto\n"
		"    io_priority: none\n";
	struct config *c = NULL;
	struct cfg_error err;
	char *text;

	(void)state;
	unsetenv("STATE_DIRECTORY");
	assert_int_equal(cfg_load_default(&c, &err), 0);
	text = print_to_string(c);
	assert_string_equal(text, want);
	assert_print_reloads(c);
	free(text);
	cfg_free(c);
}

static void test_examples_load(void **state)
{
	const char *dir = TEST_SOURCE_DIR "/config/examples";
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[4096];
		struct config *c = NULL;
		struct cfg_error err;

		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (cfg_load_file(path, &c, &err) != 0)
			fail_msg("%s", err.msg);
		assert_string_equal(c->source, path);
		assert_print_reloads(c);
		cfg_free(c);
		n++;
	}
	closedir(d);
	assert_true(n >= 3);
}

/* The files the integration test feeds to `iopulse check` must all fail. */
static void test_bad_files_fail(void **state)
{
	const char *dir = TEST_SOURCE_DIR "/tests/configs/bad";
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	(void)state;
	assert_non_null(d);
	unsetenv("IOPULSE_SURELY_UNSET_VARIABLE");
	while ((de = readdir(d))) {
		char path[4096];
		struct config *c = NULL;
		struct cfg_error err;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (cfg_load_file(path, &c, &err) != -EINVAL)
			fail_msg("%s loaded", path);
		assert_null(c);
		assert_int_equal(strncmp(err.msg, path, strlen(path)), 0);
		n++;
	}
	closedir(d);
	assert_true(n >= 6);
}

static void test_load_file_errors(void **state)
{
	struct config *c = NULL;
	struct cfg_error err;

	(void)state;
	assert_int_equal(cfg_load_file("/nonexistent/iopulse.yaml", &c, &err), -ENOENT);
	assert_null(c);
	assert_string_equal(err.msg,
			    "/nonexistent/iopulse.yaml: cannot read: No such file or directory");
	assert_int_equal(cfg_load_file(TEST_SOURCE_DIR "/config", &c, &err), -EISDIR);
	assert_string_equal(err.msg, TEST_SOURCE_DIR
			    "/config: cannot read: it is a directory, not a regular file");
	assert_null(c);
}

/* Writes @n bytes of @c to @path. */
static void write_fill(const char *path, char c, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(fputc(c, f), EOF);
	assert_int_equal(fclose(f), 0);
}

/*
 * Only a regular file is read: a FIFO without a writer used to block open() (and
 * with it a reload) until one came; a device may never reach end of file. The
 * alarm fails the test rather than hanging it where open() still blocks.
 */
static void test_load_file_not_regular(void **state)
{
	char dir[4096], path[4200], want[4400];
	struct config *c = NULL;
	struct cfg_error err;

	(void)state;
	tu_new_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fifo.yaml", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	assert_int_equal(cfg_load_file(path, &c, &err), -EINVAL);
	alarm(0);
	snprintf(want, sizeof(want), "%s: cannot read: it is a FIFO, not a regular file", path);
	assert_string_equal(err.msg, want);
	assert_null(c);
	unlink(path);

	assert_int_equal(cfg_load_file("/dev/null", &c, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "/dev/null: cannot read: it is a character device, not a regular file");
	assert_null(c);

	/* 1 MiB is read (a comment: empty), a byte more is refused unread. */
	snprintf(path, sizeof(path), "%s/big.yaml", dir);
	write_fill(path, '#', 1U << 20);
	assert_int_equal(cfg_load_file(path, &c, &err), -EINVAL);
	snprintf(want, sizeof(want),
		 "%s:1:1: configuration is empty, expected a mapping with 'targets' and 'probes'",
		 path);
	assert_string_equal(err.msg, want);
	write_fill(path, '#', (1U << 20) + 1);
	assert_int_equal(cfg_load_file(path, &c, &err), -EFBIG);
	snprintf(want, sizeof(want),
		 "%s: cannot read: larger than 1 MiB, the limit for a configuration file", path);
	assert_string_equal(err.msg, want);
	assert_null(c);
	unlink(path);
	rmdir(dir);
}

/* "[" @n times then "]" @n times, after @prefix; NUL-terminated, caller frees. */
static char *nested_lists(const char *prefix, size_t n, size_t *len)
{
	size_t lp = strlen(prefix);
	char *s = malloc(lp + 2 * n + 2);

	assert_non_null(s);
	memcpy(s, prefix, lp);
	memset(s + lp, '[', n);
	memset(s + lp + n, ']', n);
	s[lp + 2 * n] = '\n';
	s[lp + 2 * n + 1] = '\0';
	*len = lp + 2 * n + 1;
	return s;
}

/*
 * Lists and mappings nest at most CFG_MAX_DEPTH deep. libyaml itself has no
 * limit and takes time quadratic in the depth: 100,000 levels took it seconds
 * to a minute (a reload stalled every probe meanwhile). Refused at the first
 * level too deep, at once, whatever style.
 */
static void test_depth_limit(void **state)
{
	struct config *c = NULL;
	struct cfg_error err;
	size_t len;
	char *y;
	double t0;

	(void)state;
	/* The root mapping and 63 lists: 64 levels, down to the schema's error. */
	y = nested_lists("targets: ", CFG_MAX_DEPTH - 1, &len);
	assert_int_equal(cfg_load_string("t.yaml", y, len, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:1:11: each item of 'targets' must be a mapping, got a "
				     "list");
	free(y);
	/* One more: refused where the 65th level starts. */
	y = nested_lists("targets: ", CFG_MAX_DEPTH, &len);
	assert_int_equal(cfg_load_string("t.yaml", y, len, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:1:73: lists and mappings nested more than 64 deep, "
				     "the limit for a configuration file");
	assert_null(c);
	free(y);

	t0 = tu_now_s();
	y = nested_lists("targets: ", 100000, &len);
	assert_int_equal(cfg_load_string("t.yaml", y, len, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:1:73: lists and mappings nested more than 64 deep, "
				     "the limit for a configuration file");
	free(y);
	/* Block style: "- - - ... x", a list in a list on one line. */
	y = malloc(200002);
	assert_non_null(y);
	for (size_t i = 0; i < 100000; i++)
		memcpy(y + 2 * i, "- ", 2);
	memcpy(y + 200000, "x", 2);
	assert_int_equal(cfg_load_string("t.yaml", y, 200001, &c, &err), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:1:129: lists and mappings nested more than 64 deep, "
				     "the limit for a configuration file");
	free(y);
	/* Not a speed test: refused at once takes milliseconds, libyaml's quadratic
	 * scan of these 100,000 levels about a minute. 20 s tells them apart on any
	 * machine that can run the suite. */
	assert_true(tu_now_s() - t0 < 20.0);
}

static void test_misc(void **state)
{
	struct config *c;

	(void)state;
	cfg_free(NULL);
	c = load_ok(T "  - name: other\n    file: /f\n" P);
	assert_int_equal(cfg_target_index(c, "disk"), 0);
	assert_int_equal(cfg_target_index(c, "other"), 1);
	assert_int_equal(cfg_target_index(c, "nope"), -1);
	assert_int_equal(cfg_target_index(c, NULL), -1);
	assert_int_equal(cfg_target_index(NULL, "disk"), -1);
	cfg_free(c);
	assert_string_equal(io_op_name(IO_READ), "read");
	assert_string_equal(io_op_name(IO_WRITE), "write");
	assert_string_equal(cfg_target_kind_name(CFG_TARGET_DIRECTORY), "directory");
	assert_string_equal(cfg_target_kind_name(CFG_TARGET_FILE), "file");
	assert_string_equal(cfg_probe_kind_name(CFG_PROBE_PING), "ping");
	assert_string_equal(cfg_target_kind_name(CFG_TARGET_DEVICE), "device");
	assert_string_equal(cfg_probe_kind_name(CFG_PROBE_BURST), "burst");
	assert_string_equal(cfg_rw_name(CFG_RW_RANDREAD), "randread");
	assert_string_equal(cfg_rw_name(CFG_RW_RANDWRITE), "randwrite");
	assert_string_equal(cfg_rw_name(CFG_RW_RANDRW), "randrw");
	assert_string_equal(cfg_rw_name(CFG_RW_READ), "read");
	assert_string_equal(cfg_rw_name(CFG_RW_WRITE), "write");
	assert_string_equal(cfg_require_mount_name(CFG_MOUNT_AUTO), "auto");
	assert_string_equal(cfg_require_mount_name(CFG_MOUNT_SELF), "true");
	assert_string_equal(cfg_require_mount_name(CFG_MOUNT_NO), "false");
	assert_string_equal(cfg_require_mount_name(CFG_MOUNT_PATH), "path");
	assert_false(cfg_probe_writes(NULL));
	assert_false(cfg_probe_writes(&(struct cfg_probe){.kind = CFG_PROBE_PING}));
	assert_true(cfg_probe_writes(&(struct cfg_probe){.kind = CFG_PROBE_PING, .op = IO_WRITE}));
	/* A burst's 'op' means nothing: only 'rw' decides. */
	assert_false(cfg_probe_writes(
		&(struct cfg_probe){.kind = CFG_PROBE_BURST, .op = IO_WRITE, .rw = CFG_RW_READ}));
	assert_false(cfg_probe_writes(
		&(struct cfg_probe){.kind = CFG_PROBE_BURST, .rw = CFG_RW_RANDREAD}));
	assert_true(cfg_probe_writes(
		&(struct cfg_probe){.kind = CFG_PROBE_BURST, .rw = CFG_RW_RANDWRITE}));
	assert_true(cfg_probe_writes(
		&(struct cfg_probe){.kind = CFG_PROBE_BURST, .rw = CFG_RW_RANDRW}));
	assert_true(
		cfg_probe_writes(&(struct cfg_probe){.kind = CFG_PROBE_BURST, .rw = CFG_RW_WRITE}));
	assert_true(cfg_probe_writes(&(struct cfg_probe){.kind = CFG_PROBE_VERIFY}));
	assert_string_equal(cfg_probe_kind_name(CFG_PROBE_VERIFY), "verify");
}

/* ---- the schema ---- */

/* Every key of a probe, changed alone, makes it another probe for a reload. */
static void test_probe_same(void **state)
{
	static const char *const variants[] = {
		"  - name: p1\n    type: ping\n    target: disk\n",
		"  - name: p2\n    type: ping\n    target: disk\n",
		"  - name: p1\n    type: ping\n    target: disk2\n",
		"  - name: p1\n    type: ping\n    target: disk\n    op: write\n",
		"  - name: p1\n    type: ping\n    target: disk\n    op: write\n    sync: "
		"fdatasync\n",
		"  - name: p1\n    type: ping\n    target: disk\n    interval: 2s\n",
		"  - name: p1\n    type: ping\n    target: disk\n    block_size: 8KiB\n",
		"  - name: p1\n    type: ping\n    target: disk\n    working_set: 1MiB\n",
		"  - name: p1\n    type: ping\n    target: disk\n    timeout: 5s\n",
		"  - name: p1\n    type: ping\n    target: disk\n    warmup_after: 5m\n",
		"  - name: p1\n    type: ping\n    target: disk\n    engine: sync\n",
		"  - name: p1\n    type: ping\n    target: disk\n    io_priority: idle\n",
		"  - name: p1\n    type: burst\n    target: disk\n",
		"  - name: p1\n    type: burst\n    target: disk\n    rw: randrw\n",
		"  - name: p1\n    type: burst\n    target: disk\n    rw: randrw\n    rwmix_read: "
		"70%\n",
		"  - name: p1\n    type: burst\n    target: disk\n    block_size: 4KiB-8KiB\n",
		"  - name: p1\n    type: burst\n    target: disk\n    iodepth: 4\n",
		"  - name: p1\n    type: burst\n    target: disk\n    jobs: 2\n",
		"  - name: p1\n    type: burst\n    target: disk\n    duration: 5s\n",
		"  - name: p1\n    type: burst\n    target: disk\n    ios: 1000\n",
		"  - name: p1\n    type: burst\n    target: disk\n    rate_iops: 1000\n",
		"  - name: p1\n    type: burst\n    target: disk\n    ramp: 1s\n",
		"  - name: p1\n    type: burst\n    target: disk\n    every: 15m\n",
		"  - name: p1\n    type: burst\n    target: disk\n    timeout: 5s\n",
		"  - name: p1\n    type: burst\n    target: disk\n    busy_backoff: false\n",
		"  - name: p1\n    type: burst\n    target: disk\n    busy_utilization: 80%\n",
		"  - name: p1\n    type: burst\n    target: disk\n    busy_queue_depth: 8\n",
		"  - name: p1\n    type: verify\n    target: disk\n",
		"  - name: p1\n    type: verify\n    target: disk\n    interval: 2m\n",
		"  - name: p1\n    type: verify\n    target: disk\n    block_size: 8KiB\n",
		"  - name: p1\n    type: verify\n    target: disk\n    blocks: 16\n",
		"  - name: p1\n    type: verify\n    target: disk\n    blocks_per_run: 2\n",
		"  - name: p1\n    type: verify\n    target: disk\n    timeout: 5s\n",
	};
	enum { N = sizeof(variants) / sizeof(variants[0]) };
	struct cfg_key_doc d;
	struct config *c[N];

	(void)state;
	/* A key added to the schema needs a variant here. */
	for (unsigned i = 0; cfg_key_doc(i, &d) == 0; i++) {
		char want[80];
		bool found = false;

		if (strstr(d.section, "PROBES") == NULL)
			continue;
		snprintf(want, sizeof(want), " %s: ", d.name);
		for (size_t v = 0; v < N && !found; v++)
			found = strstr(variants[v], want) != NULL;
		if (!found)
			fail_msg("no variant changes probe key '%s'", d.name);
	}
	for (size_t i = 0; i < N; i++)
		c[i] = load_okf("targets:\n  - name: disk\n    directory: /srv/x\n"
				"  - name: disk2\n    directory: /srv/y\nprobes:\n%s",
				variants[i]);
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			if (cfg_probe_same(c[i], &c[i]->probes[0], c[j], &c[j]->probes[0]) !=
			    (i == j))
				fail_msg("'%s' and '%s': same is %d", variants[i], variants[j],
					 i != j);
	for (size_t i = 0; i < N; i++)
		cfg_free(c[i]);
}

/* A key written as its documented default loads as if it was left out. */
static void test_schema_defaults(void **state)
{
	struct cfg_key_doc d;

	(void)state;
	for (unsigned i = 0; cfg_key_doc(i, &d) == 0; i++) {
		char line[256], *plain_text, *with_text;
		const char *tgt = T, *prb = P, *top = "", *in_tgt = "", *in_prb = "";
		struct config *plain, *with;

		if (!d.def)
			continue;
		if (!strcmp(d.section, "TARGETS") && !strcmp(d.name, "allow_device_writes")) {
			tgt = TD;
			prb = PD;
		} else if (!strcmp(d.section, "BURST PROBES")) {
			prb = !strcmp(d.name, "rwmix_read") ? B "    rw: randrw\n" : B;
		} else if (!strcmp(d.section, "VERIFY PROBES")) {
			prb = V;
		}
		snprintf(line, sizeof(line), "%s%s: %s\n",
			 strcmp(d.section, "TOP LEVEL") ? "    " : "", d.name, d.def);
		if (!strcmp(d.section, "TOP LEVEL"))
			top = line;
		else if (!strcmp(d.section, "TARGETS"))
			in_tgt = line;
		else
			in_prb = line;
		plain = load_okf("%s%s", tgt, prb);
		with = load_okf("%s%s%s%s%s", top, tgt, in_tgt, prb, in_prb);
		plain_text = print_to_string(plain);
		with_text = print_to_string(with);
		if (strcmp(plain_text, with_text))
			fail_msg("'%s: %s' (%s) is not the default:\n%s\n%s", d.name, d.def,
				 d.section, plain_text, with_text);
		free(plain_text);
		free(with_text);
		cfg_free(plain);
		cfg_free(with);
	}
}

/* ---- the manual's key entries ---- */

#define MAN_PATH TEST_SOURCE_DIR "/man/iopulse.yaml.5"

struct man_entry {
	char section[32];
	char key[64];
	char text[2048]; /* the entry as it reads, up to the next one */
};

/* Appends @s to @out with the escapes the key entries use resolved. */
static void man_unescape(const char *s, size_t n, char *out, size_t len)
{
	static const char *const esc[][2] = {
		{"\\-", "-"}, {"\\(em", "\u2014"}, {"\\(mu", "x"}, {"\\(<=", "<="}, {"\\e", "\\"},
		{"\\fP", ""}, {"\\fI", ""},	   {"\\fB", ""},   {"\\fR", ""},
	};
	size_t w = strlen(out);

	for (size_t i = 0; i < n && w + 4 < len;) {
		size_t e;

		for (e = 0; e < sizeof(esc) / sizeof(esc[0]); e++)
			if (!strncmp(s + i, esc[e][0], strlen(esc[e][0])))
				break;
		if (e < sizeof(esc) / sizeof(esc[0])) {
			w += (size_t)snprintf(out + w, len - w, "%s", esc[e][1]);
			i += strlen(esc[e][0]);
		} else {
			out[w++] = s[i++];
			out[w] = '\0';
		}
	}
}

/* Appends the words of a source line as it reads: font macros' arguments (the
 * alternating ones, .BR and such, without spaces between), other macros dropped. */
static void man_append(const char *line, char *out, size_t len)
{
	const char *q = line;
	bool alternating;

	if (*out)
		strncat(out, " ", len - strlen(out) - 1);
	if (line[0] != '.') {
		man_unescape(line, strlen(line), out, len);
		return;
	}
	if (strcspn(line, " ") > 3 || !strchr("BIR", line[1]))
		return;
	alternating = line[2] != ' ';
	q += strcspn(q, " ");
	for (bool first = true; *(q += strspn(q, " ")); first = false) {
		size_t n = *q == '"' ? strcspn(q + 1, "\"") : strcspn(q, " ");

		if (!first && !alternating)
			strncat(out, " ", len - strlen(out) - 1);
		man_unescape(q + (*q == '"'), n, out, len);
		q += n + (*q == '"' ? 2 : 0);
	}
}

/* The key entries (".TP" then ".B key") of the four key sections, outside .RS. */
static size_t man_entries(struct man_entry *e, size_t max)
{
	static const char *const sections[] = {"TOP LEVEL", "TARGETS", "PING PROBES",
					       "BURST PROBES", "VERIFY PROBES"};
	char line[1024], section[32] = "";
	FILE *f = fopen(MAN_PATH, "r");
	struct man_entry *cur = NULL;
	bool tp = false;
	int depth = 0;
	size_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		bool keys = false;

		line[strcspn(line, "\n")] = '\0';
		for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
			keys = keys || !strcmp(section, sections[i]);
		if (!strncmp(line, ".SH ", 4) || !strcmp(line, ".PP") || !strcmp(line, ".RS") ||
		    !strcmp(line, ".TP"))
			cur = NULL;
		if (!strncmp(line, ".SH ", 4))
			snprintf(section, sizeof(section), "%s", line + 4 + (line[4] == '"'));
		section[strcspn(section, "\"")] = '\0';
		depth += !strcmp(line, ".RS") - !strcmp(line, ".RE");
		if (!strcmp(line, ".TP")) {
			tp = depth == 0;
			continue;
		}
		if (tp && keys && !strncmp(line, ".B ", 3)) {
			assert_true(n < max);
			cur = &e[n++];
			snprintf(cur->section, sizeof(cur->section), "%s", section);
			snprintf(cur->key, sizeof(cur->key), "%.63s", line + 3);
			cur->text[0] = '\0';
		} else if (cur) {
			man_append(line, cur->text, sizeof(cur->text));
		}
		tp = false;
	}
	fclose(f);
	return n;
}

/* Field @i (0-based) of @text split at ';', without the spaces around it. */
static void man_field(const char *text, unsigned i, char *out, size_t len)
{
	size_t n;

	for (; i && *text; i--)
		text += strcspn(text, ";") + (text[strcspn(text, ";")] == ';');
	text += strspn(text, " ");
	n = strcspn(text, ";");
	while (n && text[n - 1] == ' ')
		n--;
	snprintf(out, len, "%.*s", (int)n, text);
}

/*
 * iopulse.yaml(5) documents every key of the schema and no other, each entry
 * starting "type; default;" as the row has them: a row without an entry, an
 * entry without a row, or another type or default fails.
 */
static void test_man_matches_schema(void **state)
{
	static struct man_entry e[128];
	size_t n = man_entries(e, sizeof(e) / sizeof(e[0]));
	struct cfg_key_doc d;
	unsigned rows = 0;

	(void)state;
	assert_true(n > 0);
	for (unsigned i = 0; cfg_key_doc(i, &d) == 0; i++, rows++) {
		const char *want = d.required ? "required" : d.def ? d.def : "\u2014";
		const struct man_entry *m = NULL;
		char type[256], def[256];
		size_t wl = strlen(want);

		for (size_t j = 0; j < n; j++)
			if (!strcmp(e[j].section, d.section) && !strcmp(e[j].key, d.name))
				m = &e[j];
		if (!m)
			fail_msg("key '%s' (%s) has no entry in " MAN_PATH, d.name, d.section);
		man_field(m->text, 0, type, sizeof(type));
		man_field(m->text, 1, def, sizeof(def));
		if (strcmp(type, d.type))
			fail_msg("key '%s' (%s): the manual says type '%s', the schema '%s'",
				 d.name, d.section, type, d.type);
		if (strncmp(def, want, wl) || (def[wl] && def[wl] != ' ' && def[wl] != '.'))
			fail_msg("key '%s' (%s): the manual says default '%s', the schema '%s'",
				 d.name, d.section, def, want);
	}
	for (size_t j = 0; j < n; j++) {
		bool found = false;

		for (unsigned i = 0; cfg_key_doc(i, &d) == 0 && !found; i++)
			found = !strcmp(e[j].section, d.section) && !strcmp(e[j].key, d.name);
		if (!found)
			fail_msg("entry '%s' (%s) of " MAN_PATH " is no key of the schema",
				 e[j].key, e[j].section);
	}
	assert_int_equal(n, rows);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_defaults_filled),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_burst_defaults),
		cmocka_unit_test(test_verify_defaults),
		cmocka_unit_test(test_burst_every_key),
		cmocka_unit_test(test_native_histogram_keys),
		cmocka_unit_test(test_print_burst),
		cmocka_unit_test(test_layout_rate_forms),
		cmocka_unit_test(test_mount_and_keep_free),
		cmocka_unit_test(test_target_same),
		cmocka_unit_test(test_slow_keys),
		cmocka_unit_test(test_state_directory),
		cmocka_unit_test(test_probe_fingerprint),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_device_target),
		cmocka_unit_test(test_engines),
		cmocka_unit_test(test_io_priorities),
		cmocka_unit_test(test_listen_forms),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_env_expansion),
		cmocka_unit_test(test_print_escapes),
		cmocka_unit_test(test_scalars_are_strings),
		cmocka_unit_test(test_quoted_numbers_refused),
		cmocka_unit_test(test_tagged_numbers),
		cmocka_unit_test(test_long_values_elided),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_embedded_default),
		cmocka_unit_test(test_print_default),
		cmocka_unit_test(test_examples_load),
		cmocka_unit_test(test_bad_files_fail),
		cmocka_unit_test(test_load_file_errors),
		cmocka_unit_test(test_load_file_not_regular),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_probe_same),
		cmocka_unit_test(test_schema_defaults),
		cmocka_unit_test(test_man_matches_schema),
	};
	enum { N_BAD = sizeof(bad_cases) / sizeof(bad_cases[0]) };
	enum { N_QUOTED = sizeof(quoted_cases) / sizeof(quoted_cases[0]) };
	enum { N_FIXED = sizeof(fixed) / sizeof(fixed[0]) };
	struct CMUnitTest tests[N_BAD + N_QUOTED + N_FIXED];

	unsetenv("IOPULSE_TEST_UNSET");
	for (size_t i = 0; i < N_BAD; i++)
		tests[i] = (struct CMUnitTest){
			.name = bad_cases[i].name,
			.test_func = test_bad_case,
			.initial_state = (void *)&bad_cases[i],
		};
	for (size_t i = 0; i < N_QUOTED; i++)
		tests[N_BAD + i] = (struct CMUnitTest){
			.name = quoted_cases[i].name,
			.test_func = test_bad_case,
			.initial_state = (void *)&quoted_cases[i],
		};
	for (size_t i = 0; i < N_FIXED; i++)
		tests[N_BAD + N_QUOTED + i] = fixed[i];
	return cmocka_run_group_tests_name("config", tests, tu_scratch_setup, tu_scratch_teardown);
}

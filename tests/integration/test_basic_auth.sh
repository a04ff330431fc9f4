#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Basic auth against attackers (iopulse issue 22), over plain HTTP on 127.0.0.1
# (bcrypt alone; TLS is test_web_config.sh's):
#
#   - iopulse check warns that passwords cross the network in clear for
#     basic_auth_users without tls_server_config when 'listen:' is not a
#     loopback address (0.0.0.0); not for 127.0.0.1 or [::1], not with TLS;
#     run does not warn on 127.0.0.1.
#   - Fairness: while 4 addresses (127.0.0.2-5, 2 connections each) flood wrong
#     passwords, scrapers from 127.0.0.1 whose credentials are not cached yet
#     (as after every restart) get 200 on their first try, never 429: the
#     checks of addresses that failed wait behind theirs. The time each took
#     is printed (the goal is well under 2 s; nothing here asserts a time).
#   - Fairness between networks: after a restart (nothing cached, nobody a
#     suspect), while 300 addresses of three /24s (127.1.0-2.1-100, one
#     connection each, as many addresses as one holder gets on this host or in
#     a home IPv6 /56) flood wrong passwords, scrapers from 127.0.0.1 get 200 on
#     their first try, never 429: each /24 holds its share of the queue however
#     many addresses it has, and those that failed wait behind the others.
#   - A NUL in the password ("alice:secret\0anything") or the user name gets
#     401, before and after the right password is cached.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl openssl htpasswd python3 base64
require_disk "$WORK"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/data" 8MiB
WEB="$WORK/web"
mkdir "$WEB"
cd "$WEB"

# user NAME: "NAME: 'HASH'" for password "pass" (cost 10, as htpasswd's advice).
user() {
	local h
	h=$(htpasswd -nbBC 10 "$1" pass)
	printf "  %s: '%s'\n" "$1" "${h#"$1":}"
}
{
	echo "basic_auth_users:"
	for u in alice dave s1 s2 s3 s4 s5; do
		user "$u"
	done
} >plain.yml

# ---- the warning of check --------------------------------------------------------

# check_cfg NAME LISTEN WEBFILE: iopulse check of the schedule with 'listen:
# LISTEN' and WEBFILE; must exit 0, stderr in NAME.err.
check_cfg() {
	{
		echo "listen: $2"
		cat "$CFG"
	} >"$1.yaml"
	"$IOPULSE" check --config "$1.yaml" --web.config.file "$3" >/dev/null 2>"$1.err" ||
		fail "iopulse check ($1) exits $?: $(cat "$1.err")"
}
CLEAR="basic_auth_users without tls_server_config: passwords cross the network in clear"
check_cfg any 0.0.0.0:10035 "$WEB/plain.yml"
grep -qF "warning: $WEB/plain.yml: $CLEAR to 0.0.0.0:10035, which is not a loopback address" \
	any.err || fail "check does not warn of basic auth over HTTP on 0.0.0.0: '$(cat any.err)'"
check_cfg lo 127.0.0.1:10035 "$WEB/plain.yml"
grep -qF "$CLEAR" lo.err && fail "check warns of basic auth over HTTP on 127.0.0.1: $(cat lo.err)"
check_cfg lo6 '"[::1]:10035"' "$WEB/plain.yml"
grep -qF "$CLEAR" lo6.err && fail "check warns of basic auth over HTTP on [::1]: $(cat lo6.err)"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
	-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 -days 2 -out server.crt 2>/dev/null
{
	printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n'
	cat plain.yml
} >tls.yml
check_cfg tls 0.0.0.0:10035 "$WEB/tls.yml"
grep -qF "$CLEAR" tls.err && fail "check warns of passwords in clear with TLS: $(cat tls.err)"

# ---- fairness under a flood of wrong passwords -----------------------------------

start_daemon "$CFG" --web.config.file "$WEB/plain.yml"
grep -qF "$CLEAR" "$DAEMON_LOG" && fail "run warns of basic auth over HTTP on 127.0.0.1"
URL="http://127.0.0.1:$DAEMON_PORT"

# code ARGS...: the status of curl ARGS (000: no reply).
code() {
	curl -sS -o /dev/null --max-time 60 -w '%{http_code}' "$@" 2>/dev/null || true
}

# first_scrapes FLOOD: users s1-s5 scrape once each, not cached yet (as after
# every restart), during FLOOD (its description); each must get 200 at its
# first try. Sets TIMES to the time each took.
first_scrapes() {
	local u out
	TIMES=()
	for u in s1 s2 s3 s4 s5; do
		out=$(curl -sS -o /dev/null --max-time 60 -w '%{http_code} %{time_total}' \
			-u "$u:pass" "$URL/metrics" 2>/dev/null || true)
		[[ ${out%% *} == 200 ]] ||
			fail "$u, not cached yet, during $1: '$out' (want 200 at the first try)"
		TIMES+=("${out#* }")
	done
}

FLOODERS=127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5
python3 "$SOURCE_DIR/tests/integration/auth_flood.py" "$DAEMON_PORT" dave:wrong "$FLOODERS" 2 \
	flood.state 240 40000 &
FLOOD_PID=$!
CLEANUP_HOOKS+=("kill $FLOOD_PID 2>/dev/null || true")

# Every flooder failed a check (it is a suspect now), and the flood goes on.
flooders_failed() {
	[[ -s flood.state ]] && (($(grep -c ' 401 ' flood.state) == 4))
}
wait_until 60 "each flooding address to be told 401" flooders_failed

first_scrapes "a flood of wrong passwords from 4 addresses"
kill -0 "$FLOOD_PID" 2>/dev/null || fail "the flood ended before the scrapers were done"
kill "$FLOOD_PID"
wait "$FLOOD_PID" || true
note "first scrapes of 5 users during the flood took (s): ${TIMES[*]}"
note "flood (address, code, count): $(tr '\n' ';' <flood.state)"

# ---- a NUL in the credentials ------------------------------------------------------

# nul_code CREDENTIALS: the status for the Authorization of CREDENTIALS, its
# backslash escapes (\0) made bytes.
nul_code() {
	code -H "Authorization: Basic $(printf '%b' "$1" | base64 -w0)" "$URL/metrics"
}
[[ $(nul_code 'alice:pass\0anything') == 401 ]] ||
	fail "'alice:pass\\0anything' (not cached) is not 401"
[[ $(nul_code 'alice\0anything:pass') == 401 ]] || fail "'alice\\0anything:pass' is not 401"
[[ $(code -u alice:pass "$URL/metrics") == 200 ]] || fail "alice's password is not 200"
[[ $(nul_code 'alice:pass\0anything') == 401 ]] ||
	fail "'alice:pass\\0anything' (alice:pass cached) is not 401"
[[ $(nul_code 'alice:pass') == 200 ]] || fail "alice's password, encoded by hand, is not 200"
require_alive
stop_daemon

# ---- fairness under a flood from many addresses of a few networks ------------------

start_daemon "$CFG" --web.config.file "$WEB/plain.yml"
URL="http://127.0.0.1:$DAEMON_PORT"
ROTATING=
for net in 0 1 2; do
	for host in $(seq 1 100); do
		ROTATING+="127.1.$net.$host,"
	done
done
python3 "$SOURCE_DIR/tests/integration/auth_flood.py" "$DAEMON_PORT" dave:wrong "${ROTATING%,}" 1 \
	rotating.state 300 400000 &
FLOOD_PID=$!
CLEANUP_HOOKS+=("kill $FLOOD_PID 2>/dev/null || true")

# flood_total CODE: how many replies of status CODE the flood got, all addresses.
flood_total() {
	awk -v c="$1" '{ for (i = 2; i < NF; i += 2) if ($i == c) n += $(i + 1) } END { print n + 0 }' \
		rotating.state
}
# The queue turned over (a queue's worth of failed checks) and the flood finds it
# full (it is told 429): the state in which a scraper must still get in.
flood_saturates() {
	[[ -s rotating.state ]] && (($(flood_total 401) >= 32 && $(flood_total 429) >= 32))
}
wait_until 60 "300 flooding addresses to be told 401 32 times and 429 32 times" flood_saturates

first_scrapes "a flood of wrong passwords from 300 addresses of 3 /24s"
kill -0 "$FLOOD_PID" 2>/dev/null || fail "the rotating flood ended before the scrapers were done"
kill "$FLOOD_PID"
wait "$FLOOD_PID" || true
note "first scrapes of 5 users during the flood from 300 addresses took (s): ${TIMES[*]}"
note "that flood got: $(flood_total 401) x 401, $(flood_total 429) x 429, $(flood_total 000) x no reply"
require_alive
stop_daemon

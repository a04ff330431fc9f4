#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Basic auth against attackers (iopulse issue 22), over plain HTTP on 127.0.0.1
# (TLS is test_web_config.sh's):
#
#   - iopulse check warns that passwords cross the network in clear for
#     basic_auth_users without tls_server_config when 'listen:' is not a
#     loopback address (0.0.0.0); not for 127.0.0.1 or [::1], not with TLS;
#     run does not warn on 127.0.0.1.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd openssl htpasswd
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
require_alive
stop_daemon

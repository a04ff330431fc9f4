#!/bin/bash
# SPDX-License-Identifier: MIT
#
# --web.config.file (iopulse issue 13): /metrics over TLS with basic auth, in
# exporter-toolkit's format, on 127.0.0.1 only. Certificates are made here with
# openssl (a test CA, a server certificate for 127.0.0.1, one for another name,
# an expired one, client certificates), bcrypt hashes with htpasswd.
#
#   - iopulse check validates the web config: exit 0 for a good one, 78 with
#     file:line:column for an unknown key, a bad client_auth_type, a key without
#     its certificate, a cipher_suites list that is not the product of its key
#     exchanges and ciphers, an unknown or an insecure cipher suite. It reads the
#     files as run does: 78 for a missing certificate (as run) and a key that is
#     not the certificate's; exit 0 with a warning for an expired certificate.
#   - TLS + basic auth (relative cert/key paths, resolved against the web
#     config's directory): curl with the test CA and the right password gets
#     /metrics; a wrong password, an unknown user, no credentials get 401 with
#     WWW-Authenticate: Basic realm="iopulse"; the right password, then a wrong
#     one for the same user: 401 (CVE-2022-46146); plaintext HTTP to the TLS
#     port fails and the daemon keeps serving; 12 wrong passwords at once get
#     401 or 429 (some 429: one check per address at a time) while a cached
#     scraper is served; during a flood from 127.0.0.2 (told 429 with Retry-After: 1), a
#     user not cached yet gets in from 127.0.0.1 within 10 tries.
#   - Prometheus 2.42 scrapes it (scheme https, basic_auth, tls_config.ca_file):
#     up == 1 and iopulse_build_info arrives.
#   - SIGHUP with a renewed certificate: the client sees the new serial; with a
#     broken key: the old certificate is still served and the log says why;
#     meanwhile a curl loop with the right credentials never fails.
#   - The client's verdict: an expired certificate and one for another name are
#     refused by curl.
#   - Socket activation: TLS and basic auth on the socket passed.
#   - Each client_auth_type against no client certificate, a self-signed one, one
#     the client CA signed for client authentication and one it signed for
#     servers only: served or refused as Go would.
#   - cipher_suites: over TLS 1.2 curl gets a page with a listed suite, none with
#     one left out; TLS 1.3 is not restricted (as in Go).
#   - Versions, with gnutls-cli (curl's OpenSSL may refuse old versions itself):
#     by default TLS 1.0 and 1.1 are refused, TLS 1.3 alone is served; with
#     min_version: TLS11, TLS 1.1 is served and TLS 1.0 still refused.

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require_cmd curl openssl htpasswd prometheus gnutls-cli
require_disk "$WORK"

CFG="$WORK/iopulse.yaml"
ping_config "$CFG" "$WORK/data" 8MiB
WEB="$WORK/web"
mkdir "$WEB"
cd "$WEB"

# ---- certificates and hashes -------------------------------------------------

# key NAME: a P-256 key NAME.key.
key() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
}
# sign NAME CN DAYS SAN [EKU]: NAME.crt for NAME.key, signed by the test CA, with
# the extended key usage EKU if given.
sign() {
	openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "$4" >"$1.ext"
	[[ -z ${5:-} ]] || printf 'extendedKeyUsage=%s\n' "$5" >>"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$3" \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
key ca
openssl req -x509 -new -key ca.key -subj /CN=iopulse-test-ca -days 2 -out ca.crt 2>/dev/null
key server
sign server localhost 2 IP:127.0.0.1,DNS:localhost
key other
sign other other.example 2 DNS:other.example
cp server.key expired.key
sign expired localhost -1 IP:127.0.0.1
key client
sign client client 2 DNS:client clientAuth
key serveronly
sign serveronly serveronly 2 DNS:serveronly serverAuth
key stranger
openssl req -x509 -new -key stranger.key -subj /CN=stranger -days 2 -out stranger.crt 2>/dev/null
HASH=$(htpasswd -nbBC 10 alice secret)
HASH=${HASH#alice:}
CAROL=$(htpasswd -nbBC 10 carol pass)
CAROL=${CAROL#carol:}
DAVE=$(htpasswd -nbBC 12 dave pass) # dearer: the flood below holds a worker longer
DAVE=${DAVE#dave:}

cat >web.yml <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  alice: '$HASH'
  carol: '$CAROL'
  dave: '$DAVE'
EOF

# ---- iopulse check -------------------------------------------------------------

"$IOPULSE" check --config "$CFG" --web.config.file "$WEB/web.yml" >/dev/null ||
	fail "iopulse check refuses a good web config"

# bad_web NAME WANT_MESSAGE: write NAME.yml from stdin; iopulse check must exit 78
# with WANT_MESSAGE on stderr.
bad_web() {
	local rc=0
	cat >"$1.yml"
	"$IOPULSE" check --config "$CFG" --web.config.file "$WEB/$1.yml" >/dev/null 2>"$1.err" ||
		rc=$?
	((rc == 78)) || fail "iopulse check with $1.yml: exit $rc, want 78: $(cat "$1.err")"
	grep -qF -- "$2" "$1.err" || fail "iopulse check with $1.yml said '$(cat "$1.err")', want '$2'"
}
bad_web unknown "$WEB/unknown.yml:3:3: unknown key 'certfile' in tls_server_config" <<EOF
tls_server_config:
  key_file: server.key
  certfile: server.crt
EOF
bad_web auth_type "$WEB/auth_type.yml:4:21: unknown client_auth_type 'Always'" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: Always
EOF
bad_web no_cert "$WEB/no_cert.yml:2:3: tls_server_config: missing cert_file" <<EOF
tls_server_config:
  key_file: server.key
EOF

bad_web suites_product "$WEB/suites_product.yml:5:5: cipher_suites: GnuTLS cannot select \
exactly this list: it takes key exchanges and ciphers separately, so this list would also allow \
TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384;" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  cipher_suites:
    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
EOF
bad_web suites_unknown \
	"$WEB/suites_unknown.yml:4:19: unknown cipher suite 'ECDHE-ECDSA-AES128-GCM-SHA256'" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  cipher_suites: [ECDHE-ECDSA-AES128-GCM-SHA256]
EOF
bad_web suites_insecure "$WEB/suites_insecure.yml:4:19: cipher suite \
'TLS_ECDHE_RSA_WITH_RC4_128_SHA' is refused: Go lists it among its insecure" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  cipher_suites: [TLS_ECDHE_RSA_WITH_RC4_128_SHA]
EOF

# The files themselves, read as run reads them.
bad_web missing_cert "missing_cert.yml: cert_file: $WEB/missing.crt: cannot read" <<EOF
tls_server_config:
  cert_file: missing.crt
  key_file: server.key
EOF
rc=0
"$IOPULSE" run --config "$CFG" --listen 127.0.0.1:0 --web.config.file "$WEB/missing_cert.yml" \
	>run.err 2>&1 || rc=$?
((rc == 78)) || fail "iopulse run with a missing cert_file: exit $rc, want 78 as check: $(cat run.err)"
bad_web wrong_key "wrong_key.yml: key_file $WEB/other.key is not the key of cert_file \
$WEB/server.crt" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: other.key
EOF
cat >expired.yml <<EOF
tls_server_config:
  cert_file: expired.crt
  key_file: expired.key
EOF
"$IOPULSE" check --config "$CFG" --web.config.file "$WEB/expired.yml" >/dev/null 2>expired.err ||
	fail "iopulse check refuses an expired certificate (run serves it): $(cat expired.err)"
grep -qF "warning: $WEB/expired.yml: cert_file $WEB/expired.crt expired on " expired.err ||
	fail "iopulse check does not warn of the expired certificate: '$(cat expired.err)'"

# ---- TLS and basic auth ----------------------------------------------------------

start_daemon "$CFG" --web.config.file "$WEB/web.yml"
URL="https://127.0.0.1:$DAEMON_PORT"

# code ARGS...: the status of curl ARGS (000: no reply).
code() {
	curl -sS -o /dev/null --max-time 10 -w '%{http_code}' "$@" 2>/dev/null || true
}

curl -fsS --max-time 10 --cacert ca.crt -u alice:secret "$URL/metrics" >page.prom ||
	fail "curl with the test CA and alice's password cannot get /metrics"
grep -q '^iopulse_build_info{' page.prom || fail "no iopulse_build_info in the page"
[[ $(code --cacert ca.crt -u alice:wrong "$URL/metrics") == 401 ]] ||
	fail "alice's password, then a wrong one: not 401 (CVE-2022-46146)"
[[ $(code --cacert ca.crt -u bob:secret "$URL/metrics") == 401 ]] || fail "an unknown user: not 401"
curl -sS -D headers -o /dev/null --max-time 10 --cacert ca.crt "$URL/metrics" || true
grep -q '^HTTP/1.1 401' headers || fail "no credentials: not 401: $(head -1 headers)"
grep -qi '^WWW-Authenticate: Basic realm="iopulse"' headers ||
	fail "no 'WWW-Authenticate: Basic realm=\"iopulse\"' on a 401"
[[ $(code --cacert ca.crt -u alice:secret "$URL/healthz") == 200 ]] || fail "/healthz with alice: not 200"
[[ $(code "http://127.0.0.1:$DAEMON_PORT/metrics") != 200 ]] || fail "plaintext HTTP to the TLS port got a page"
[[ $(code --cacert ca.crt -u alice:secret "$URL/metrics") == 200 ]] ||
	fail "after a plaintext request, the daemon no longer serves"

# A flood of wrong passwords: one address has one check at a time, its other
# requests are told 429 at once, and a cached scraper is served throughout.
# Twelve: under the connections one address may hold (HTTP_PER_ADDRESS_LIMIT).
FLOOD=()
for i in $(seq 12); do
	code --cacert ca.crt -u "alice:wrong$i" "$URL/metrics" >"flood.$i" &
	FLOOD+=($!)
done
[[ $(code --cacert ca.crt -u alice:secret "$URL/metrics") == 200 ]] ||
	fail "a cached scraper was not served during a flood of wrong passwords"
wait "${FLOOD[@]}"
codes=$(for f in flood.*; do cat "$f"; echo; done | sort | uniq -c | tr -s '\n ' ' ')
grep -qx 429 flood.* || fail "12 wrong passwords at once, none told 429: $codes"
grep -qvx -e 401 -e 429 flood.* && fail "wrong passwords got other than 401 or 429: $codes"
note "flood of wrong passwords: $codes"

# A flood of wrong passwords from 127.0.0.2 holds at most one worker (429 with
# Retry-After: 1 beyond that), so carol, not cached yet, gets in from 127.0.0.1
# within a few tries; with both workers first-come, the flood would hold both.
flood_loop() {
	while [[ ! -e flood.stop ]]; do
		code --interface 127.0.0.2 --cacert ca.crt -u dave:wrong "$URL/metrics" >/dev/null
	done
}
FLOOD=()
for i in $(seq 6); do
	flood_loop &
	FLOOD+=($!)
done
for i in $(seq 10); do
	curl -sS -D flood.headers -o /dev/null --max-time 10 --interface 127.0.0.2 --cacert ca.crt \
		-u dave:wrong "$URL/metrics" || true
	grep -q '^HTTP/1.1 429' flood.headers && break
done
carol=""
for i in $(seq 10); do
	carol+=" $(code --cacert ca.crt -u carol:pass "$URL/metrics")"
	[[ $carol == *200 ]] && break
done
touch flood.stop
wait "${FLOOD[@]}"
[[ $carol == *200 ]] || fail "carol, during a flood from another address, got:$carol"
grep -q '^HTTP/1.1 429' flood.headers || fail "a flooder was not told 429: $(head -1 flood.headers)"
grep -qix 'Retry-After: 1.' flood.headers || fail "no 'Retry-After: 1' on a 429: $(cat flood.headers)"

# ---- Prometheus over TLS with basic auth --------------------------------------------

PROM_JOB_EXTRA="    scheme: https
    basic_auth:
      username: alice
      password: secret
    tls_config:
      ca_file: $WEB/ca.crt"
start_prometheus
# query EXPR: the number of series EXPR selects.
query() {
	curl -fsS --max-time 5 --data-urlencode "query=$1" "$PROM_URL/api/v1/query" |
		/usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["result"]))'
}
prom_has() {
	[[ $(query "$1") -gt 0 ]]
}
wait_until 60 "Prometheus to scrape iopulse over TLS (up == 1)" prom_has 'up{job="iopulse"} == 1'
wait_until 60 "iopulse_build_info in Prometheus" prom_has 'iopulse_build_info'
stop_prometheus

# ---- SIGHUP: a renewed certificate, then a broken key --------------------------------

# serial: the serial of the certificate the server presents.
serial() {
	openssl s_client -connect "127.0.0.1:$DAEMON_PORT" -CAfile ca.crt </dev/null 2>/dev/null |
		openssl x509 -noout -serial
}
# A scraper that must never fail meanwhile: its failures go to loop.failed.
: >loop.failed
(
	while [[ ! -e loop.stop ]]; do
		curl -fsS -o /dev/null --max-time 10 --cacert ca.crt -u alice:secret "$URL/metrics" ||
			echo "scrape failed: $?" >>loop.failed
	done
) &
LOOP=$!
on_exit kill "$LOOP"
old=$(serial)
[[ -n $old ]] || fail "openssl s_client sees no certificate"
sign server localhost 2 IP:127.0.0.1,DNS:localhost # the same key, a new serial
new=$(openssl x509 -in server.crt -noout -serial)
[[ $new != "$old" ]] || fail "the renewed certificate has the old serial"
kill -HUP "$DAEMON_PID"
serial_is() {
	[[ $(serial) == "$1" ]]
}
wait_until 60 "the renewed certificate ($new) to be served" serial_is "$new"
cp server.key server.key.good
echo "not a key" >server.key
kill -HUP "$DAEMON_PID"
wait_until 60 "the log to say why the broken key was refused" \
	grep -q 'TLS certificate reload failed, still serving the previous certificate: key_file' \
	"$DAEMON_LOG"
[[ $(serial) == "$new" ]] || fail "after a broken key, the certificate served changed"
cp server.key.good server.key
touch loop.stop
wait "$LOOP" || true
[[ ! -s loop.failed ]] || fail "scrapes failed during the reloads: $(sort loop.failed | uniq -c)"
[[ $(code --cacert ca.crt -u alice:secret "$URL/metrics") == 200 ]] ||
	fail "no longer serving after the reloads"

# ---- the client's verdict: expired, another name ---------------------------------

cp server.crt server.crt.good
for bad in expired other; do
	cp "$bad.crt" server.crt
	cp "$bad.key" server.key
	n=$(grep -c 'Reloaded the TLS certificate' "$DAEMON_LOG")
	kill -HUP "$DAEMON_PID"
	reloaded() {
		(($(grep -c 'Reloaded the TLS certificate' "$DAEMON_LOG") > n))
	}
	wait_until 60 "the $bad certificate to be loaded" reloaded
	rc=0
	curl -fsS -o /dev/null --max-time 10 --cacert ca.crt -u alice:secret "$URL/metrics" \
		2>curl.err || rc=$?
	((rc == 60)) || fail "curl against the $bad certificate: exit $rc, want 60: $(cat curl.err)"
done
cp server.crt.good server.crt
cp server.key.good server.key
stop_daemon

# ---- socket activation: TLS on the socket systemd passes ------------------------------

PORT_FILE="$WEB/activated.port"
REAL=$IOPULSE
printf '#!/bin/sh\nexec /usr/bin/python3 %q %q 1 tcp %q "$@"\n' \
	"$SOURCE_DIR/tests/integration/listen_fds.py" "$PORT_FILE" "$REAL" >activated.sh
chmod +x activated.sh
IOPULSE="$WEB/activated.sh"
start_daemon "$CFG" --web.config.file "$WEB/web.yml"
IOPULSE=$REAL
read -r port <"$PORT_FILE"
((port == DAEMON_PORT)) || fail "serving on $DAEMON_PORT, not the passed socket's $port"
[[ $(code --cacert ca.crt -u alice:secret "https://127.0.0.1:$port/metrics") == 200 ]] ||
	fail "no TLS on the socket passed by socket activation"
stop_daemon

# ---- client certificates ---------------------------------------------------------------

# Each client_auth_type against: no certificate, a self-signed stranger, one the
# client CA signed for client authentication, and one it signed for servers only.
# WANT: a string of 4 (y: served, n: refused) in that order.
mtls() {
	local got="" c
	cat >mtls.yml <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: $1
  client_ca_file: ca.crt
EOF
	start_daemon "$CFG" --web.config.file "$WEB/mtls.yml"
	URL="https://127.0.0.1:$DAEMON_PORT"
	for c in "" stranger client serveronly; do
		if [[ $(code --cacert ca.crt ${c:+--cert $c.crt --key $c.key} "$URL/healthz") == 200 ]]; then
			got+=y
		else
			got+=n
		fi
	done
	stop_daemon
	[[ $got == "$2" ]] ||
		fail "$1 served (none, stranger, client, serverAuth only): $got, want $2"
}
mtls RequestClientCert yyyy
mtls RequireAnyClientCert nyyy
mtls VerifyClientCertIfGiven ynyn
mtls RequireAndVerifyClientCert nnyn

# ---- cipher_suites: TLS 1.2 only --------------------------------------------------------

cat >suites.yml <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  cipher_suites:
    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
EOF
start_daemon "$CFG" --web.config.file "$WEB/suites.yml"
URL="https://127.0.0.1:$DAEMON_PORT"
# tls12 SUITE: the status of /healthz over TLS 1.2 with OpenSSL's SUITE only.
tls12() {
	code --cacert ca.crt --tls-max 1.2 --ciphers "$1" "$URL/healthz"
}
[[ $(tls12 ECDHE-ECDSA-AES128-GCM-SHA256) == 200 ]] || fail "TLS 1.2 with a listed suite: no page"
[[ $(tls12 ECDHE-ECDSA-AES256-GCM-SHA384) != 200 ]] || fail "TLS 1.2 with a suite not listed: a page"
[[ $(code --cacert ca.crt --tlsv1.3 --tls13-ciphers TLS_AES_256_GCM_SHA384 "$URL/healthz") == 200 ]] ||
	fail "TLS 1.3 with TLS_AES_256_GCM_SHA384: no page (cipher_suites must not restrict TLS 1.3)"
stop_daemon

# ---- versions: TLS 1.0 and 1.1 only when min_version says so -----------------------------

# handshake VERSION: whether gnutls-cli completes a handshake offering only TLS VERSION.
handshake() {
	timeout 10 gnutls-cli --x509cafile ca.crt --priority "NORMAL:-VERS-ALL:+VERS-TLS$1" \
		-p "$DAEMON_PORT" 127.0.0.1 </dev/null >"handshake.$1.out" 2>&1
	grep -q '^- Handshake was completed' "handshake.$1.out"
}
start_daemon "$CFG" --web.config.file "$WEB/web.yml"
handshake 1.0 && fail "TLS 1.0 served by default"
handshake 1.1 && fail "TLS 1.1 served by default"
handshake 1.3 || fail "a TLS 1.3-only client refused by default: $(tail -3 handshake.1.3.out)"
stop_daemon
sed 's/^  key_file: .*/&\n  min_version: TLS11/' web.yml >tls11.yml
grep -q '^  min_version: TLS11$' tls11.yml || fail "tls11.yml has no min_version"
start_daemon "$CFG" --web.config.file "$WEB/tls11.yml"
handshake 1.1 || fail "TLS 1.1 refused with min_version: TLS11: $(tail -3 handshake.1.1.out)"
handshake 1.0 && fail "TLS 1.0 served with min_version: TLS11"
stop_daemon
note "ok"

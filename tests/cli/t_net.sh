#!/bin/sh
# The network stores' HTTP, without a storage server: TLS is verified by default (a server with
# a self-signed certificate, openssl s_server, is refused, once, with a message naming the scheme,
# the host and the operation), an endpoint nobody listens on is retried as asked and said
# unreachable, and STATETOOL_HTTP_LOG writes method, host, path and status, never a query
# string or a header.
. "$(dirname "$0")/lib.sh"
export HOME=$T AWS_ACCESS_KEY_ID=AKTEST AWS_SECRET_ACCESS_KEY=sk-not-to-print
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL \
	AWS_ENDPOINT_URL_S3 http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export no_proxy=127.0.0.1,localhost

# ---- TLS: a self-signed certificate is refused ----
if command -v openssl >/dev/null 2>&1; then
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 1 \
		-subj /CN=127.0.0.1 >/dev/null 2>&1
	openssl s_server -accept 127.0.0.1:0 -cert "$T/cert.pem" -key "$T/key.pem" -www \
		>"$T/tls.out" 2>&1 &
	tls=$!
	port=""
	for _i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		port=$(sed -n 's/^ACCEPT 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/tls.out")
		[ -n "$port" ] && break
		sleep 0.2
	done
	rm -f "$T/http.log"
	run "a self-signed certificate" env STATETOOL_HTTP_LOG="$T/http.log" "$STATETOOL" stacks \
		--backend "s3://b?endpoint=https://127.0.0.1:$port&use_path_style=true"
	check_rc 1
	check_err "statetool: error: s3: TLS with 127.0.0.1:$port failed (GetObject 'b/.pulumi/meta.yaml'): SSL certificate problem: self-signed certificate; endpoint https://127.0.0.1:$port from the URL's endpoint parameter"
	run "not retried" cat "$T/http.log"
	check_out "GET 127.0.0.1:$port /b/.pulumi/meta.yaml 0"
	kill "$tls" 2>/dev/null
	wait "$tls" 2>/dev/null
else
	skip_or_fail openssl "the TLS case: openssl is missing"
fi

# ---- nobody listening: retried as asked, then said unreachable ----
rm -f "$T/http.log"
run "unreachable" env STATETOOL_HTTP_RETRIES=2 STATETOOL_HTTP_BACKOFF_MS=1 STATETOOL_HTTP_LOG="$T/http.log" \
	"$STATETOOL" stacks --backend "s3://b/p?endpoint=http://127.0.0.1:1&use_path_style=true"
check_rc 1
check_err_has "statetool: error: s3: cannot reach 127.0.0.1:1 (GetObject 'b/p/.pulumi/meta.yaml'): "
check_err_has "(3 attempts); endpoint http://127.0.0.1:1 from the URL's endpoint parameter"
check_err_lacks "sk-not-to-print"
# a stray AWS_ENDPOINT_URL_S3 (a local emulator's) is named as the endpoint's source
run "unreachable, from AWS_ENDPOINT_URL_S3" env STATETOOL_HTTP_RETRIES=0 AWS_ENDPOINT_URL_S3=http://127.0.0.1:1 \
	"$STATETOOL" stacks --backend "s3://b/p?use_path_style=true"
check_rc 1
check_err_has "statetool: error: s3: cannot reach 127.0.0.1:1 (GetObject 'b/p/.pulumi/meta.yaml'): "
check_err_has "; endpoint http://127.0.0.1:1 from AWS_ENDPOINT_URL_S3"
run "each attempt logged, no query string" cat "$T/http.log"
check_out "GET 127.0.0.1:1 /b/p/.pulumi/meta.yaml 0
GET 127.0.0.1:1 /b/p/.pulumi/meta.yaml 0
GET 127.0.0.1:1 /b/p/.pulumi/meta.yaml 0"

finish

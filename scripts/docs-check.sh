#!/usr/bin/env bash
# Checks the API reference at /docs/ in a real browser: builds the binary, starts
# `chargenet serve --demo` on a free port, loads /docs in headless Chromium, and asserts
# from the rendered DOM that every operation of openapi/openapi.yaml is shown (by
# Swagger UI's element id operations-TAG-OPERATIONID, holding the method and the path),
# that Swagger UI shows no error box, and that the browser logged no CSP violation or
# uncaught error. Also checks the vendored Swagger UI files against SHA256SUMS.
#
# Installs Debian's chromium when it is missing (needs root; about 45 s). Chromium runs
# with the flags this machine needs: no sandbox (root), no GPU, no background networking.
#
#   scripts/docs-check.sh
#   KEEP_WORK=1 scripts/docs-check.sh   # keep the DOM, the browser log and the server log
set -euo pipefail

# shellcheck source=scripts/lib-serve.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-serve.sh"
lib_init docs-check
trap lib_cleanup EXIT
trap 'exit 130' INT TERM
start=$SECONDS

"$ROOT/scripts/docs-vendor.sh" --verify

CHROMIUM=${CHROMIUM:-}
if [[ -z $CHROMIUM ]]; then
	CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
fi
if [[ -z $CHROMIUM ]]; then
	[[ $(id -u) == 0 ]] || die "chromium is not installed and installing it needs root: apt-get install -y chromium"
	say "installing chromium (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	timeout 300 apt-get update -qq >"$WORK/apt.log" 2>&1 || {
		tail -n 20 "$WORK/apt.log" >&2
		die "apt-get update failed"
	}
	timeout 600 apt-get install -y -qq --no-install-recommends chromium >>"$WORK/apt.log" 2>&1 || {
		tail -n 20 "$WORK/apt.log" >&2
		die "apt-get install chromium failed"
	}
	CHROMIUM=$(command -v chromium) || die "chromium still not on PATH after apt-get install"
fi
say "browser: $("$CHROMIUM" --version 2>/dev/null | head -n 1)"

say "operations in openapi/openapi.yaml:"
(cd "$ROOT" && go run scripts/docs-ops.go openapi/openapi.yaml) | sed 's/^/    /'

lib_build
lib_start_server

# Fetch-level checks first: a broken route is reported plainly, not as an empty page.
code=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$SERVER_URL/docs")
[[ $code == "301 $SERVER_URL/docs/" ]] || die "GET /docs answered '$code', want a 301 to /docs/"
for f in docs/ docs/assets/swagger-ui-bundle.js docs/assets/swagger-ui.css docs/assets/init.js openapi.yaml; do
	curl -fsS -o /dev/null --max-time 10 "$SERVER_URL/$f" || die "GET /$f failed"
done
say "GET /docs redirects to /docs/; the page, its assets and /openapi.yaml are served"

# render URL BUDGET_MS: dump the DOM after BUDGET_MS of virtual time.
render() {
	local profile
	profile=$(mktemp -d "$WORK/profile.XXXXXX")
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--disable-dev-shm-usage --user-data-dir="$profile" \
		--enable-logging=stderr --v=0 \
		--virtual-time-budget="$2" --dump-dom "$1" >"$WORK/dom.html" 2>"$WORK/chromium.log"
}

ok=0
for budget in 15000 30000; do
	say "rendering $SERVER_URL/docs in headless Chromium (virtual time budget $budget ms)"
	rc=0
	render "$SERVER_URL/docs" "$budget" || rc=$?
	if ((rc != 0)); then
		tail -n 20 "$WORK/chromium.log" >&2
		die "chromium exited with status $rc"
	fi
	if (cd "$ROOT" && go run scripts/docs-ops.go openapi/openapi.yaml "$WORK/dom.html") >"$WORK/dom-check.txt"; then
		ok=1
		break
	fi
	say "not every operation is rendered yet; retrying with a longer budget"
done
cat "$WORK/dom-check.txt"

# What the page printed to its console: CSP violations and uncaught errors fail the check.
grep -F 'CONSOLE' "$WORK/chromium.log" | sed 's/^\[[^]]*\] */    console: /' >"$WORK/console.txt" || true
if [[ -s $WORK/console.txt ]]; then
	say "browser console:"
	cat "$WORK/console.txt"
fi
if grep -Eiq 'Content.Security.Policy|Refused to|Uncaught|Failed to load|ERR_' "$WORK/console.txt"; then
	ok=0
	say "FAIL: the page logged CSP violations or errors (above)"
fi
# Every request the page made must have gone to the service (the CSP allows nothing else;
# this checks the page actually fetched the contract and the assets).
for p in /docs/assets/swagger-ui-bundle.js /docs/assets/init.js /openapi.yaml; do
	grep -q "\"path\":\"$p\",\"status\":200" "$WORK/server.log" || {
		ok=0
		say "FAIL: the page did not fetch $p"
	}
done

((ok == 1)) || die "the API reference at /docs failed the checks above (KEEP_WORK=1 keeps the DOM, the browser and server logs)"
say "PASS: /docs renders every operation of openapi/openapi.yaml in $((SECONDS - start)) s"

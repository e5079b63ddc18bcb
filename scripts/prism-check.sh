#!/usr/bin/env bash
# Independent contract check: Stoplight Prism (tools/package.json pins @stoplight/prism-cli
# 5.16.0), a validator that shares no code with ours, sits as a proxy in front of
# `chargenet serve --demo` and judges every exchange of a scenario against
# openapi/openapi.yaml: every operation, success and error answers, full pagination walks
# of /v1/locations and /v2/evses (scripts/prism-scenario.mjs). Any violation fails.
#
#   scripts/prism-check.sh             # needs go, node 20+, npm, curl
#   scripts/prism-check.sh --selftest  # same scenario over a deliberately wrong copy of the
#                                      # contract: passes only if Prism's violations fail it
#
# What Prism 5.16 does as `prism proxy SPEC UPSTREAM --errors`, observed here, and how the
# scenario is built around it:
# - It validates the request first. An invalid request (limit=0, limit=abc, a body breaking
#   ConnectorPatch, uid=0, ...) is NOT forwarded: Prism answers 422 UNPROCESSABLE_ENTITY
#   itself ("no HTTP validation response was found in the spec" - it looks for a 422).
#   So requests that are invalid on purpose go through a second proxy started with
#   `--validate-request=false`: it forwards them and still validates the service's answer.
#   Valid requests go through the strict proxy, which also proves they are valid.
# - It checks the security scheme even with --validate-request=false: a request without
#   "Authorization: Bearer ..." (no header, an empty token, the Basic scheme) gets 401
#   UNAUTHORIZED from Prism itself (the contract has no 401; the service answers 403).
#   The genuine 403 is validated with an unknown Bearer key, on every operation; the
#   no-key 403 is checked against the service directly.
# - A response that breaks the contract is answered 500 with a problem+json body of type
#   https://stoplight.io/prism/errors#VIOLATIONS, and every violation (errors and
#   warnings) is listed as JSON in the `sl-violations` response header. The scenario
#   checks for each exchange the status it expects AND the absence of `sl-violations`,
#   and that the answer came from the service (not a Prism problem+json).
# - It parses and re-serialises JSON request bodies before forwarding (a 1 MiB body of
#   blanks arrives small: 413 cannot happen behind it), and it never answers when the body
#   is not JSON (the upstream's 400 is logged, the client hangs). Both cases go to the
#   service directly, with a timeout on every request.
# - Paths outside the contract get 404 NO_PATH_MATCHED_ERROR from Prism: checked directly.
set -euo pipefail

# shellcheck source=scripts/lib-serve.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-serve.sh"
lib_init prism-check
trap lib_cleanup EXIT
trap 'exit 130' INT TERM
start=$SECONDS

selftest=0
case ${1:-} in
--selftest) selftest=1 ;;
"") ;;
*) die "usage: scripts/prism-check.sh [--selftest]" ;;
esac

SPEC=$ROOT/openapi/openapi.yaml
if ((selftest)); then
	# A contract the service does not follow: Location gains a required field.
	SPEC=$WORK/wrong.yaml
	sed 's/required: \[id, name, address, city, country, coordinates, timeZone, evseUids, lastUpdated\]/required: [id, name, address, city, country, coordinates, timeZone, evseUids, lastUpdated, operatorName]/' \
		"$ROOT/openapi/openapi.yaml" >"$SPEC"
	! cmp -s "$SPEC" "$ROOT/openapi/openapi.yaml" || die "selftest: the edit of the contract did not apply"
fi

PRISM=$ROOT/tools/node_modules/.bin/prism
pinned=$(node -p 'require(process.argv[1]).devDependencies["@stoplight/prism-cli"]' "$ROOT/tools/package.json")
if [[ -x $PRISM && $("$PRISM" --version 2>/dev/null) == "$pinned" ]]; then
	say "prism $pinned already installed in tools/ (make tools-npm)"
else
	say "npm ci in tools/ (pinned @stoplight/prism-cli $pinned)"
	(cd "$ROOT/tools" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) ||
		die "npm ci failed in tools/"
fi
version=$("$PRISM" --version) || die "tools/node_modules/.bin/prism does not run"
[[ $version == "$pinned" ]] || die "prism is $version, tools/package.json pins $pinned"
say "prism $version"

lib_build
lib_start_server
# A key of the ingest scope, for the charge box status notifications.
INGEST_KEY=$("$BIN" apikey create --name prism-ingest --scope ingest --database "sqlite:$WORK/chargenet.db" 2>/dev/null) ||
	die "could not create an ingest key"
# A key of the keys scope, for the key administration.
ADMIN_KEY=$("$BIN" apikey create --name prism-admin --scope keys --database "sqlite:$WORK/chargenet.db" 2>/dev/null) ||
	die "could not create a keys key"

# start_prism NAME [FLAGS...]: start a proxy on a free port; sets PRISM_URL. (Not in a
# $(...) subshell: lib_track must record the pid in this shell for the cleanup.)
start_prism() {
	local name=$1 attempt port pid deadline
	shift
	for attempt in 1 2 3; do
		port=$(lib_free_port)
		"$PRISM" proxy "$SPEC" "$SERVER_URL" --errors --host 127.0.0.1 --port "$port" "$@" \
			>"$WORK/prism-$name.log" 2>&1 &
		pid=$!
		lib_track "$pid"
		deadline=$((SECONDS + 60))
		while ((SECONDS < deadline)) && kill -0 "$pid" 2>/dev/null; do
			if grep -q "Prism is listening" "$WORK/prism-$name.log"; then
				PRISM_URL=http://127.0.0.1:$port
				say "prism proxy ($name) at $PRISM_URL (pid $pid)"
				return 0
			fi
			sleep 0.2
		done
		lib_stop "$pid"
		if ! grep -q EADDRINUSE "$WORK/prism-$name.log"; then
			tail -n 30 "$WORK/prism-$name.log" >&2
			die "prism proxy ($name) did not start within 60 s"
		fi
	done
	die "prism proxy ($name): no free port"
}
start_prism strict
STRICT=$PRISM_URL
start_prism lenient --validate-request=false
LENIENT=$PRISM_URL

say "driving the scenario through Prism"
rc=0
STRICT=$STRICT LENIENT=$LENIENT DIRECT=$SERVER_URL API_KEY=$API_KEY INGEST_KEY=$INGEST_KEY ADMIN_KEY=$ADMIN_KEY \
	timeout 300 node "$ROOT/scripts/prism-scenario.mjs" >"$WORK/scenario.txt" 2>&1 || rc=$?

if ((selftest)); then
	grep -E 'FAIL|prism:' "$WORK/scenario.txt" | head -n 8 || true
	if ((rc == 1)) && grep -q 'sl-violations' "$WORK/scenario.txt" && grep -q "operatorName" "$WORK/scenario.txt"; then
		say "PASS: selftest: the wrong contract's violations (sl-violations, operatorName) fail the check, in $((SECONDS - start)) s"
		exit 0
	fi
	die "selftest: the scenario over a wrong contract did not fail with Prism's violations (exit $rc)"
fi

cat "$WORK/scenario.txt"
if ((rc != 0)); then
	for f in "$WORK"/prism-*.log; do
		if grep -qiE 'violation|error' "$f"; then
			say "$(basename "$f"), violations and errors (last 20):"
			grep -iE 'violation|error' "$f" | tail -n 20 || true
		fi
	done
	die "Prism found the service off its contract, or the scenario failed (exit $rc), after $((SECONDS - start)) s"
fi
say "PASS: every exchange of the scenario matches openapi/openapi.yaml according to Prism, in $((SECONDS - start)) s"

# shellcheck shell=bash
# Helpers shared by scripts/ts-partner.sh, scripts/docs-check.sh and scripts/prism-check.sh:
# build the binary, start `chargenet serve --demo` on a free loopback port over a
# throw-away SQLite database, wait for it, stop it. Source it; it defines functions only.
#
#   lib_init NAME            make $WORK (a temp dir removed by lib_cleanup) and log as NAME
#   lib_build                go build ./cmd/chargenet into $WORK/chargenet ($BIN)
#   lib_start_server         start it; sets $SERVER_URL, $SERVER_PID, $API_KEY
#   lib_free_port            print a free TCP port on 127.0.0.1
#   lib_wait_http URL SECS   wait until URL answers 2xx
#   lib_stop PID             SIGTERM, then SIGKILL after 10 s
#   lib_cleanup              stop what was started, remove $WORK (call it from an EXIT trap)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIB_NAME=script
LIB_PIDS=()
WORK=
BIN=
SERVER_URL=
SERVER_PID=
API_KEY=${API_KEY:-partner-dev-key-$$-0123456789abcdef}

say() { printf '%s: %s\n' "$LIB_NAME" "$*"; }
die() {
	printf '%s: FAIL: %s\n' "$LIB_NAME" "$*" >&2
	exit 1
}

lib_init() {
	LIB_NAME=$1
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/chargenet-$1.XXXXXX")
	for tool in go curl node; do
		command -v "$tool" >/dev/null || die "$tool is required but not on PATH"
	done
}

lib_cleanup() {
	local pid
	for pid in "${LIB_PIDS[@]}"; do
		lib_stop "$pid"
	done
	LIB_PIDS=()
	if [[ -n $WORK && -d $WORK ]]; then
		if [[ ${KEEP_WORK:-} == 1 ]]; then
			say "kept $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
}

# lib_track PID: stop PID in lib_cleanup.
lib_track() { LIB_PIDS+=("$1"); }

lib_stop() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "process $pid did not stop in 10 s: killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

lib_free_port() {
	node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

lib_build() {
	local start=$SECONDS
	BIN=$WORK/chargenet
	(cd "$ROOT" && go build -o "$BIN" ./cmd/chargenet) || die "go build ./cmd/chargenet failed"
	say "built $BIN in $((SECONDS - start)) s"
}

# lib_wait_http URL SECS [PID]: wait until URL answers 2xx; fail early if PID exits.
lib_wait_http() {
	local url=$1 pid=${3:-} deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then
			return 0
		fi
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			return 2
		fi
		sleep 0.2
	done
	return 1
}

# lib_start_server: start the built binary with the demo inventory on a
# free port over a new SQLite database in $WORK, with $API_KEY accepted. Retries with
# another port if the chosen one was taken in between.
lib_start_server() {
	local attempt port rc
	for attempt in 1 2 3; do
		port=$(lib_free_port)
		rm -f "$WORK"/chargenet.db*
		CHARGENET_API_KEYS=$API_KEY "$BIN" serve --demo --addr "127.0.0.1:$port" \
			--database "sqlite:$WORK/chargenet.db" >"$WORK/server.log" 2>&1 &
		SERVER_PID=$!
		lib_track "$SERVER_PID"
		SERVER_URL=http://127.0.0.1:$port
		rc=0
		lib_wait_http "$SERVER_URL/healthz" 30 "$SERVER_PID" || rc=$?
		if ((rc == 0)); then
			say "chargenet serve --demo is up at $SERVER_URL (pid $SERVER_PID, log $WORK/server.log)"
			return 0
		fi
		lib_stop "$SERVER_PID"
		if ((rc == 1)); then
			tail -n 20 "$WORK/server.log" >&2
			die "chargenet did not answer /healthz within 30 s"
		fi
		if ! grep -q "address already in use" "$WORK/server.log"; then
			tail -n 20 "$WORK/server.log" >&2
			die "chargenet serve exited at start (attempt $attempt)"
		fi
		say "port $port was taken, retrying"
	done
	die "could not start chargenet serve on a free port"
}

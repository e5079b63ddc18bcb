#!/usr/bin/env bash
# make bench-ocpi: the OCPI figures of make bench alone, on SQLite, in one run: an OCPI
# page of 100 Locations (from the start, and with EVSEs) against the REST locations
# page, the page at DEEP reached through Link against the first page, the REST page and
# the OCPI page with EVSEs again while a writer sends WRITE_RATE writes/s (PATCHes and
# status notifications) to the same server, and the push lag at LAG_RATE changes/s.
# Prints the results tables (markdown) on standard output; bench/results.md keeps make
# bench's, which has the same rows on PostgreSQL too.
#
#   ROUNDS=3 DURATION=5s CONNS=32 DEEP=100000 WRITE_RATE=1000 LAG_RATE=1000 LAG_DURATION=10s bench/ocpi.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
DEEP=${DEEP:-100000}
WRITE_RATE=${WRITE_RATE:-1000}
LAG_RATE=${LAG_RATE:-1000}
LAG_DURATION=${LAG_DURATION:-10s}
need_wrk
build

DB=$OUT/bench-ocpi.db
rm -f "$DB" "$DB"-*
say "database: demo inventory plus $DEEP generated locations"
serve "$DB" "$(free_port)" --demo
kill "$SERVE_PID" && wait "$SERVE_PID" || true
"$OUT/bin/tool" gen "$DEEP" 42 >"$OUT/locations.json"
"$OUT/bin/chargenet" import --database "sqlite:$DB" "$OUT/locations.json" >&2
rm -f "$OUT/locations.json"
# The writer's status notifications go in with a key of scope ingest.
declare -A INGEST
INGEST[sqlite]=$("$OUT/bin/chargenet" apikey create --database "sqlite:$DB" --name bench-ingest --scope ingest 2>/dev/null) ||
	die "creating an ingest key failed"

# The server answers OCPI as NL CNE and reads the bench's eMSP on loopback during its
# registration (--webhook-allow-insecure).
OCPI_FLAGS=(--ocpi-country-code NL --ocpi-party-id CNE --webhook-allow-insecure)
PORT=$(free_port)
SERVE_LOG=$OUT/serve-ocpi.log serve "$DB" "$PORT" "${OCPI_FLAGS[@]}"
BASE=http://127.0.0.1:$PORT
PID=$SERVE_PID

register() { # NAME: token A of a new partner
	local out
	out=$("$OUT/bin/chargenet" ocpi register --database "sqlite:$DB" --name "$1" "${OCPI_FLAGS[@]}" 2>/dev/null) ||
		die "chargenet ocpi register failed"
	tail -1 <<<"$out"
}
TOKEN=$("$OUT/bin/tool" ocpi-register "$BASE/ocpi/versions" "$(register bench)") || die "the OCPI registration failed"
export OCPI_TOKEN
OCPI_TOKEN=$(printf '%s' "$TOKEN" | base64 -w0)
LINK=$("$OUT/bin/tool" ocpi-link "$BASE/ocpi/2.2.1/locations" "$TOKEN" "$((DEEP - 100))" 100) ||
	die "reading the Link at $DEEP failed"
DEEP_PATH=${LINK#"$BASE"}
[[ $DEEP_PATH == *"offset=$DEEP&"* && $DEEP_PATH == *position=* ]] || die "the Link at $DEEP is not what was expected: $DEEP_PATH"
# The demo locations changed last, all in one second: from their last_updated on, the
# last page of 100 holds the 20 with their EVSEs and 80 without (see ocpi_evses_path).
DEMO_FROM=$(curl -fsS -H "Authorization: Token $OCPI_TOKEN" "$BASE/ocpi/2.2.1/locations/LOC-0001" |
	grep -o '"last_updated":"[^"]*"' | tail -1 | cut -d'"' -f4) || die "reading LOC-0001 over OCPI failed"
EVSES_PATH=$(ocpi_evses_path "$BASE" "$OCPI_TOKEN" "$DEMO_FROM")
ocpi_evses_check "$BASE" "$OCPI_TOKEN" "$EVSES_PATH"

RAW=$OUT/raw-ocpi.tsv
WRITES=$OUT/writes-ocpi.tsv
: >"$RAW"
: >"$WRITES"
endpoints=(
	"locations|/v1/locations?limit=25|get.lua"
	"ocpi_page|/ocpi/2.2.1/locations?limit=100|get-ocpi.lua"
	"ocpi_evses|$EVSES_PATH|get-ocpi.lua"
	"ocpi_deep|$DEEP_PATH|get-ocpi.lua"
)
# Measured again under writes (target full_w, beside the same reads alone as full_w_ro):
# each commit drops the OCPI pages and counts the read cache keeps, so that the OCPI page
# is assembled again, its changed Locations read and encoded, as while charge boxes report.
under_writes=" locations ocpi_evses "
say "wrk: $ROUNDS rounds x $DURATION per request, $CONNS connections, 2 threads; under $WRITE_RATE writes/s:$under_writes"
for ((r = 1; r <= ROUNDS; r++)); do
	for e in "${endpoints[@]}"; do
		IFS='|' read -r name path script <<<"$e"
		CPU_PIDS=$PID wrk_run "$name" full "$r" "$BASE$path" "$script" "$CONNS" "$DURATION"
	done
	for e in "${endpoints[@]}"; do
		IFS='|' read -r name path script <<<"$e"
		[[ $under_writes == *" $name "* ]] || continue
		wrk_mixed "$name" full_w "$r" "$BASE" "$path" "$script" sqlite
	done
done
if awk -F'\t' '$7 > 0 {exit 1}' "$RAW"; then :; else
	die "the service answered non-2xx under load (see $RAW and $OUT/serve-ocpi.log)"
fi
ocpi_evses_check "$BASE" "$OCPI_TOKEN" "$EVSES_PATH"

say "OCPI push lag: $LAG_RATE changes/s for $LAG_DURATION, $ROUNDS rounds"
for ((r = 1; r <= ROUNDS; r++)); do
	out=$("$OUT/bin/tool" ocpi-lag "$BASE" "$BENCH_KEY" "$BASE/ocpi/versions" "$(register "lag-$r")" "$LAG_RATE" "$LAG_DURATION" 60s) ||
		die "tool ocpi-lag failed"
	"$OUT/bin/chargenet" ocpi unregister --database "sqlite:$DB" --name "lag-$r" >/dev/null 2>&1 ||
		die "chargenet ocpi unregister failed"
	IFS=$'\t' read -r n rate bad p50 p99 worst lost <<<"$out"
	printf '  ocpi_lag round %s: %s changes, %s/s, lag p50 %s ms, p99 %s ms, max %s ms, refused %s, lost %s\n' \
		"$r" "$n" "$rate" "$p50" "$p99" "$worst" "$bad" "$lost" >&2
	wrk_record ocpi_lag full "$r" "$(printf '%s\t%s\t%s\t%s' "$rate" "$p50" "$p99" "$((bad + lost))")"
done
"$OUT/bin/tool" ocpi-report "$RAW" "$CONNS" "$DURATION" "$ROUNDS" "$DEEP" "$WRITES" "$WRITE_RATE"

#!/usr/bin/env bash
# make bench: the full stack against its ceiling and against Prism's mock, with wrk on
# loopback, in one run; the same requests on PostgreSQL (a throw-away cluster, one
# replica and two), pgbench on that cluster as the database's own ceiling, and reads
# measured beside a steady write stream (the mixed workload). Writes bench/results.md
# and prints the same tables.
#
#   ROUNDS=3 MIXED_ROUNDS=5 DURATION=5s CONNS=32 WRITE_RATE=1000 bench/run.sh
#
# MIXED_ROUNDS (at least ROUNDS) is the number of rounds of the mixed workload: the rounds
# past ROUNDS run only its pairs of reads alone and under writes. bench/ocpp.sh (charge
# boxes over OCPP) runs last and adds its section to bench/results.md.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS=${ROUNDS:-3}
MIXED_ROUNDS=${MIXED_ROUNDS:-5}
((MIXED_ROUNDS >= ROUNDS)) || MIXED_ROUNDS=$ROUNDS
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
DEEP=${DEEP:-100000}
WRITE_RATE=${WRITE_RATE:-1000}
LAG_RATE=${LAG_RATE:-1000}
LAG_DURATION=${LAG_DURATION:-10s}
need_wrk
build
[[ -x $ROOT/tools/node_modules/.bin/prism ]] || (cd "$ROOT" && make -s tools-npm) || die "installing Prism failed"

DB=$OUT/bench.db
rm -f "$DB" "$DB"-*
say "database: demo inventory plus $DEEP generated locations"
serve "$DB" "$(free_port)" --demo
kill "$SERVE_PID" && wait "$SERVE_PID" || true
"$OUT/bin/tool" gen "$DEEP" 42 >"$OUT/locations.json"
"$OUT/bin/chargenet" import --database "sqlite:$DB" "$OUT/locations.json" >&2

say "PostgreSQL: a throw-away cluster with the same inventory"
PGENV=$("$ROOT/scripts/pg-test-cluster.sh" start) || die "starting a PostgreSQL cluster failed"
eval "$PGENV"
ON_EXIT+=("\"$ROOT/scripts/pg-test-cluster.sh\" stop '$CHARGENET_PG_DIR'")
PGURL=$CHARGENET_TEST_POSTGRES
PGBIN=$CHARGENET_PG_BIN
PG_DIR=$CHARGENET_PG_DIR
PGPORT=${PGURL##*:}
PGPORT=${PGPORT%%/*}
SERVE_LOG=$OUT/serve-pg-demo.log serve_url "$PGURL" "$(free_port)" --demo
kill "$SERVE_PID" && wait "$SERVE_PID" || true
"$OUT/bin/chargenet" import --database "$PGURL" "$OUT/locations.json" >&2
rm -f "$OUT/locations.json"
ingest_key() { "$OUT/bin/chargenet" apikey create --database "$1" --name bench-ingest --scope ingest 2>/dev/null; }
declare -A INGEST
INGEST[sqlite]=$(ingest_key "sqlite:$DB") || die "creating an ingest key failed"
INGEST[pg]=$(ingest_key "$PGURL") || die "creating an ingest key failed"

UPORT=$(free_port)
# The servers of the OCPI rows answer OCPI as NL CNE, and read the bench's eMSP on
# loopback during its registration (--webhook-allow-insecure).
OCPI_FLAGS=(--ocpi-country-code NL --ocpi-party-id CNE --webhook-allow-insecure)
SERVE_LOG=$OUT/serve-uncached.log serve "$DB" "$UPORT" --read-cache-mb 0 --webhook-dispatch=false "${OCPI_FLAGS[@]}"
UNCACHED=http://127.0.0.1:$UPORT
UNCACHED_PID=$SERVE_PID
MPORT=$(free_port)
MADMIN=127.0.0.1:$(free_port)
SERVE_LOG=$OUT/serve-metrics.log serve "$DB" "$MPORT" --admin-addr "$MADMIN"
METRICS=http://127.0.0.1:$MPORT
METRICS_PID=$SERVE_PID
# Scraped every second while it serves, as Prometheus would.
(while sleep 1; do curl -fsS -o /dev/null "http://$MADMIN/metrics" || exit 1; done) &
PIDS+=($!)
PORT=$(free_port)
serve "$DB" "$PORT" "${OCPI_FLAGS[@]}"
FULL=http://127.0.0.1:$PORT
FULL_PID=$SERVE_PID
PGA_PORT=$(free_port)
SERVE_LOG=$OUT/serve-pg-a.log serve_url "$PGURL" "$PGA_PORT" "${OCPI_FLAGS[@]}"
PGA=http://127.0.0.1:$PGA_PORT
PGA_PID=$SERVE_PID
PGB_PORT=$(free_port)
SERVE_LOG=$OUT/serve-pg-b.log serve_url "$PGURL" "$PGB_PORT"
PGB=http://127.0.0.1:$PGB_PORT
PGB_PID=$SERVE_PID
DEEP_CURSOR=$("$OUT/bin/tool" cursor "$SECRET" locations "$("$OUT/bin/tool" id $((DEEP - 25)))")

# ocpi_token BASE DATABASE NAME: a partner registered through the OCPI handshake (token A
# from `chargenet ocpi register`, then the bench's eMSP POSTs its credentials); prints
# the credentials token it got, in Base64 as the Authorization header carries it.
ocpi_token() {
	local a c
	a=$("$OUT/bin/chargenet" ocpi register --database "$2" --name "$3" --ocpi-country-code NL --ocpi-party-id CNE 2>/dev/null) ||
		die "chargenet ocpi register failed"
	c=$("$OUT/bin/tool" ocpi-register "$1/ocpi/versions" "$a") || die "the OCPI registration failed"
	printf '%s' "$c" | base64 -w0
}
declare -A OCPI
OCPI[sqlite]=$(ocpi_token "$FULL" "sqlite:$DB" bench-sqlite)
OCPI[pg]=$(ocpi_token "$PGA" "$PGURL" bench-pg)
# ocpi_path BASE STORE OFFSET: the path of the OCPI page at OFFSET as its Link names it
# (with a position), read from the page before it.
ocpi_path() {
	local link
	link=$("$OUT/bin/tool" ocpi-link "$1/ocpi/2.2.1/locations" "$(base64 -d <<<"${OCPI[$2]}")" "$(($3 - 100))" 100) ||
		die "reading the Link at $3 failed"
	echo "${link#"$1"}"
}
OCPI_DEEP=$(ocpi_path "$FULL" sqlite "$DEEP")
OCPI_DEEP_PG=$(ocpi_path "$PGA" pg "$DEEP")
[[ $OCPI_DEEP == *"offset=$DEEP&"* && $OCPI_DEEP == *position=* ]] || die "the Link at $DEEP is not what was expected: $OCPI_DEEP"
# The demo locations, with their EVSEs, changed last, all in one second (on PostgreSQL,
# seeded later, in a later one): from their last_updated on, the last page of 100 holds
# all 20 with EVSEs and 80 without, before writes and under them (see ocpi_evses_path).
DEMO_FROM=$(curl -fsS -H "Authorization: Token ${OCPI[sqlite]}" "$FULL/ocpi/2.2.1/locations/LOC-0001" |
	grep -o '"last_updated":"[^"]*"' | tail -1 | cut -d'"' -f4) || die "reading LOC-0001 over OCPI failed"
OCPI_EVSES=$(ocpi_evses_path "$FULL" "${OCPI[sqlite]}" "$DEMO_FROM")
OCPI_EVSES_PG=$(ocpi_evses_path "$PGA" "${OCPI[pg]}" "$DEMO_FROM")
ocpi_evses_check "$FULL" "${OCPI[sqlite]}" "$OCPI_EVSES"
ocpi_evses_check "$PGA" "${OCPI[pg]}" "$OCPI_EVSES_PG"

CAP=$OUT/captured
mkdir -p "$CAP"
get() { curl -fsS -H "Authorization: Bearer $BENCH_KEY" "$1" -o "$2" || die "GET $1 failed"; }
get "$FULL/emsp/v1/webhooks/event_types" "$CAP/event_types.json"
get "$FULL/v1/locations?limit=25" "$CAP/locations.json"
get "$FULL/v1/locations?limit=25&cursor=$DEEP_CURSOR" "$CAP/locations_deep.json"
get "$FULL/v2/evses/1002" "$CAP/evse.json"
first_deep=$("$OUT/bin/tool" id $((DEEP - 24)))
grep -q "\"id\":\"$first_deep\"" "$CAP/locations_deep.json" || die "the deep page does not start with $first_deep"

CPORT=$(free_port)
"$OUT/bin/ceiling" "127.0.0.1:$CPORT" "$CAP" &
PIDS+=($!)
CEIL=http://127.0.0.1:$CPORT
wait_http "$CEIL/v2/evses/1" 20

PPORT=$(free_port)
"$ROOT/tools/node_modules/.bin/prism" mock --port "$PPORT" --host 127.0.0.1 "$ROOT/openapi/openapi.yaml" >"$OUT/prism.log" 2>&1 &
PIDS+=($!)
PRISM=http://127.0.0.1:$PPORT
for ((i = 0; i < 300; i++)); do
	curl -fsS -o /dev/null -H "Authorization: Bearer $BENCH_KEY" "$PRISM/v2/evses/1002" 2>/dev/null && break
	sleep 0.1
done

"$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres pgbench >&2 || die "createdb pgbench failed"
"$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -i -s 1 -q pgbench >/dev/null 2>&1 || die "pgbench -i failed"

RAW=$OUT/raw.tsv
WRITES=$OUT/writes.tsv
: >"$RAW"
: >"$WRITES"

# pgbench_run MODE ROUND: pgbench -S or -N on the cluster, appended to $RAW as
# pgbench_S or pgbench_N, target pgbench, with its tps and average latency.
pgbench_run() {
	local out tps lat
	out=$("$PGBIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres "-$1" -c "$CONNS" -j 2 -T "${DURATION%s}" -M prepared pgbench 2>&1) ||
		die "pgbench -$1 failed: $out"
	tps=$(awk '/^tps = / {print $3; exit}' <<<"$out")
	lat=$(awk '/^latency average = / {print $4}' <<<"$out")
	wrk_record "pgbench_$1" pgbench "$2" "$(printf '%s\t%s\t0\t0' "$tps" "$lat")"
}

# wrk_pair NAME TARGET ROUND URL_A URL_B PATH SCRIPT: the load split across two replicas,
# half the connections each, at the same time; req/s summed, latencies of the slower.
wrk_pair() {
	local a b fa fb
	a=$(mktemp) b=$(mktemp)
	wrk -t1 -c"$((CONNS / 2))" -d"$DURATION" --latency -s "$ROOT/bench/wrk/$7" "$4$6" >"$a" 2>&1 &
	local pa=$!
	wrk -t1 -c"$((CONNS / 2))" -d"$DURATION" --latency -s "$ROOT/bench/wrk/$7" "$5$6" >"$b" 2>&1 || die "wrk failed: $(cat "$b")"
	wait "$pa" || die "wrk failed: $(cat "$a")"
	fa=$(wrk_figures <"$a") fb=$(wrk_figures <"$b")
	rm -f "$a" "$b"
	wrk_record "$1" "$2" "$3" "$(awk -F'\t' -v a="$fa" -v b="$fb" 'BEGIN {
		split(a, x, "\t"); split(b, y, "\t")
		printf "%.2f\t%.3f\t%.3f\t%d", x[1] + y[1], (x[2] > y[2] ? x[2] : y[2]), (x[3] > y[3] ? x[3] : y[3]), x[4] + y[4] }')"
}

# Each endpoint: name, path, wrk script, targets. Targets: ceiling, full (SQLite, read
# cache on), uncached (SQLite, cache off), prism, pg (one PostgreSQL replica), pg2 (two
# replicas, the load split across both), full_w and pg_w (the reads beside the writer),
# full_r (the reads beside the writer sending GETs: what the requests' arrival costs).
# The OCPI rows' wrk script reads the partner's token from OCPI_TOKEN, set per store.
endpoints=(
	"event_types|/emsp/v1/webhooks/event_types|get.lua|ceiling full prism"
	"locations|/v1/locations?limit=25|get.lua|ceiling full uncached prism pg pg2 full_w full_r uncached_w pg_w"
	"locations_deep|/v1/locations?limit=25&cursor=$DEEP_CURSOR|get.lua|ceiling full uncached prism pg"
	"evse|/v2/evses/1002|get.lua|ceiling full uncached prism pg pg2 full_w full_r uncached_w pg_w"
	"evse_spread|/v2/evses/1002|get-spread.lua|full uncached pg"
	"patch|/v2/evses/1002/connectors/1|patch.lua|ceiling full pg"
	"patch_spread|/v2/evses/1002/connectors/1|patch-spread.lua|full pg pg2"
	"status|/internal/v1/chargeboxes/501/status-notifications|status.lua|full pg"
	"ocpi_page|/ocpi/2.2.1/locations?limit=100|get-ocpi.lua|full uncached pg"
	"ocpi_evses|$OCPI_EVSES|get-ocpi.lua|full uncached pg full_w pg_w"
	"ocpi_deep|$OCPI_DEEP|get-ocpi.lua|full uncached pg"
)
say "wrk: $ROUNDS rounds x $DURATION per endpoint and target ($MIXED_ROUNDS of the mixed workload), $CONNS connections, 2 threads"
for ((r = 1; r <= MIXED_ROUNDS; r++)); do
	for e in "${endpoints[@]}"; do
		IFS='|' read -r name path script targets <<<"$e"
		for t in $targets; do
			((r > ROUNDS)) && [[ $t != *_w && $t != *_r ]] && continue
			case $t in
			ceiling) wrk_run "$name" ceiling "$r" "$CEIL$path" "$script" "$CONNS" "$DURATION" ;;
			full | uncached | pg)
				if [[ $name == ocpi_* ]]; then
					store=sqlite
					[[ $t == pg ]] && store=pg
					p=$path
					[[ $name == ocpi_deep && $t == pg ]] && p=$OCPI_DEEP_PG
					[[ $name == ocpi_evses && $t == pg ]] && p=$OCPI_EVSES_PG
					base=$FULL pids=$FULL_PID
					[[ $t == uncached ]] && base=$UNCACHED pids=$UNCACHED_PID
					[[ $t == pg ]] && base=$PGA pids=$PGA_PID
					OCPI_TOKEN=${OCPI[$store]} CPU_PIDS=$pids CPU_PG=$([[ $t == pg ]] && echo 1 || true) \
						wrk_run "$name" "$t" "$r" "$base$p" "$script" "$CONNS" "$DURATION"
					continue
				fi
				;;&
			full)
				# Metrics off (full) and on, back to back, in alternating order, on the
				# endpoints of the metrics comparison.
				if [[ " event_types locations locations_deep evse patch " == *" $name "* ]] && ((r % 2 == 0)); then
					wrk_run "$name" metrics "$r" "$METRICS$path" "$script" "$CONNS" "$DURATION"
				fi
				BENCH_INGEST_KEY=${INGEST[sqlite]} CPU_PIDS=$FULL_PID wrk_run "$name" full "$r" "$FULL$path" "$script" "$CONNS" "$DURATION"
				if [[ " event_types locations locations_deep evse patch " == *" $name "* ]] && ((r % 2)); then
					wrk_run "$name" metrics "$r" "$METRICS$path" "$script" "$CONNS" "$DURATION"
				fi
				;;
			uncached) CPU_PIDS=$UNCACHED_PID wrk_run "$name" uncached "$r" "$UNCACHED$path" "$script" "$CONNS" "$DURATION" ;;
			prism)
				mock=$path
				[[ $name == locations_deep ]] && mock="/v1/locations?limit=25&cursor=x"
				wrk_run "$name" prism "$r" "$PRISM$mock" "$script" "$CONNS" "$DURATION"
				;;
			pg)
				BENCH_INGEST_KEY=${INGEST[pg]} CPU_PIDS=$PGA_PID CPU_PG=1 wrk_run "$name" pg "$r" "$PGA$path" "$script" "$CONNS" "$DURATION" ;;
			pg2) BENCH_INGEST_KEY=${INGEST[pg]} wrk_pair "$name" pg2 "$r" "$PGA" "$PGB" "$path" "$script" ;;
			full_w) OCPI_TOKEN=${OCPI[sqlite]} wrk_mixed "$name" full_w "$r" "$FULL" "$path" "$script" sqlite ;;
			full_r) wrk_mixed "$name" full_r "$r" "$FULL" "$path" "$script" sqlite reads ;;
			uncached_w) wrk_mixed "$name" uncached_w "$r" "$UNCACHED" "$path" "$script" sqlite ;;
			pg_w)
				p=$path
				[[ $name == ocpi_evses ]] && p=$OCPI_EVSES_PG
				OCPI_TOKEN=${OCPI[pg]} wrk_mixed "$name" pg_w "$r" "$PGA" "$p" "$script" pg
				;;
			esac
		done
	done
	if ((r <= ROUNDS)); then
		pgbench_run S "$r"
		pgbench_run N "$r"
	fi
done
# The writes moved only the 20 demo locations with EVSEs: the OCPI page with EVSEs held
# them throughout.
ocpi_evses_check "$FULL" "${OCPI[sqlite]}" "$OCPI_EVSES"
ocpi_evses_check "$PGA" "${OCPI[pg]}" "$OCPI_EVSES_PG"
# OCPI push lag: a partner with a Locations receiver (the bench's eMSP) registers, LAG_RATE
# changes a second are made for LAG_DURATION, and each change's lag is the time from its
# PATCH's answer to the first push that shows it to the receiver; the partner is
# unregistered afterwards, so that nothing is pushed to it once it is gone. Recorded as
# endpoint ocpi_lag: changes/s achieved, lag p50 and p99 in ms, changes lost or refused.
say "OCPI push lag: $LAG_RATE changes/s for $LAG_DURATION, $ROUNDS rounds on each store"
for ((r = 1; r <= ROUNDS; r++)); do
	for store in sqlite pg; do
		base=$FULL db="sqlite:$DB"
		[[ $store == pg ]] && base=$PGA db=$PGURL
		a=$("$OUT/bin/chargenet" ocpi register --database "$db" --name "lag-$store-$r" --ocpi-country-code NL --ocpi-party-id CNE 2>/dev/null) ||
			die "chargenet ocpi register failed"
		out=$("$OUT/bin/tool" ocpi-lag "$base" "$BENCH_KEY" "$base/ocpi/versions" "$a" "$LAG_RATE" "$LAG_DURATION" 60s) ||
			die "tool ocpi-lag failed"
		"$OUT/bin/chargenet" ocpi unregister --database "$db" --name "lag-$store-$r" >/dev/null 2>&1 ||
			die "chargenet ocpi unregister failed"
		IFS=$'\t' read -r n rate bad p50 p99 worst lost <<<"$out"
		printf '  ocpi_lag %-6s round %s: %s changes, %s/s, lag p50 %s ms, p99 %s ms, max %s ms, refused %s, lost %s\n' \
			"$store" "$r" "$n" "$rate" "$p50" "$p99" "$worst" "$bad" "$lost" >&2
		target=full
		[[ $store == pg ]] && target=pg
		wrk_record ocpi_lag "$target" "$r" "$(printf '%s\t%s\t%s\t%s' "$rate" "$p50" "$p99" "$((bad + lost))")"
	done
done
RSS=0
for p in "$FULL_PID" "$UNCACHED_PID" "$METRICS_PID" "$PGA_PID" "$PGB_PID"; do
	x=$(peak_rss "$p")
	((x > RSS)) && RSS=$x
done
METRICS_TEXT=$(curl -fsS "http://$MADMIN/metrics") || die "the admin listener did not answer /metrics"
grep -q '^chargenet_http_requests_total{code="200",operation="getEvse"} [1-9]' <<<"$METRICS_TEXT" ||
	die "the server with metrics on did not count its requests"
if awk -F'\t' '$2 != "ceiling" && $2 != "prism" && $2 != "pgbench" && $7 > 0 {exit 1}' "$RAW"; then :; else
	die "the service answered non-2xx under load (see $RAW and $OUT/serve*.log)"
fi
"$OUT/bin/tool" report "$RAW" "$RSS" "$CONNS" "$DURATION" "$ROUNDS" "$DEEP" "$WRITES" "$WRITE_RATE" | tee "$ROOT/bench/results.md"
# The servers above go before the OCPP part measures one alone on the machine.
cleanup
PIDS=()
ON_EXIT=()
"$ROOT/bench/ocpp.sh"

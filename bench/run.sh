#!/usr/bin/env bash
# make bench: the full stack against its ceiling and against Prism's mock, with wrk on
# loopback, in one run. Writes bench/results.md and prints the same table.
#
#   ROUNDS=3 DURATION=5s CONNS=32 bench/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
DEEP=${DEEP:-100000}
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
rm -f "$OUT/locations.json"

UPORT=$(free_port)
SERVE_LOG=$OUT/serve-uncached.log serve "$DB" "$UPORT" --read-cache-mb 0 --webhook-dispatch=false
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
serve "$DB" "$PORT"
FULL=http://127.0.0.1:$PORT
DEEP_CURSOR=$("$OUT/bin/tool" cursor "$SECRET" locations "$("$OUT/bin/tool" id $((DEEP - 25)))")

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

RAW=$OUT/raw.tsv
: >"$RAW"
endpoints=(
	"event_types|/emsp/v1/webhooks/event_types|get.lua|prism"
	"locations|/v1/locations?limit=25|get.lua|prism"
	"locations_deep|/v1/locations?limit=25&cursor=$DEEP_CURSOR|get.lua|prism"
	"evse|/v2/evses/1002|get.lua|prism"
	"patch|/v2/evses/1002/connectors/1|patch.lua|"
)
say "wrk: $ROUNDS rounds x $DURATION per endpoint and target, $CONNS connections, 2 threads"
for ((r = 1; r <= ROUNDS; r++)); do
	for e in "${endpoints[@]}"; do
		IFS='|' read -r name path script prism <<<"$e"
		wrk_run "$name" ceiling "$r" "$CEIL$path" "$script" "$CONNS" "$DURATION"
		# Metrics off (full) and on, back to back, in alternating order.
		if ((r % 2)); then
			wrk_run "$name" full "$r" "$FULL$path" "$script" "$CONNS" "$DURATION"
			wrk_run "$name" metrics "$r" "$METRICS$path" "$script" "$CONNS" "$DURATION"
		else
			wrk_run "$name" metrics "$r" "$METRICS$path" "$script" "$CONNS" "$DURATION"
			wrk_run "$name" full "$r" "$FULL$path" "$script" "$CONNS" "$DURATION"
		fi
		if [[ -n $prism && $name != event_types ]]; then
			wrk_run "$name" uncached "$r" "$UNCACHED$path" "$script" "$CONNS" "$DURATION"
		fi
		if [[ -n $prism ]]; then
			mock=$path
			[[ $name == locations_deep ]] && mock="/v1/locations?limit=25&cursor=x"
			wrk_run "$name" prism "$r" "$PRISM$mock" "$script" "$CONNS" "$DURATION"
		fi
	done
done
RSS=$(peak_rss "$SERVE_PID")
URSS=$(peak_rss "$UNCACHED_PID")
((URSS > RSS)) && RSS=$URSS
MRSS=$(peak_rss "$METRICS_PID")
((MRSS > RSS)) && RSS=$MRSS
METRICS_TEXT=$(curl -fsS "http://$MADMIN/metrics") || die "the admin listener did not answer /metrics"
grep -q '^chargenet_http_requests_total{code="200",operation="getEvse"} [1-9]' <<<"$METRICS_TEXT" ||
	die "the server with metrics on did not count its requests"
if awk -F'\t' '($2 == "full" || $2 == "uncached" || $2 == "metrics") && $7 > 0 {exit 1}' "$RAW"; then :; else
	die "the full stack answered non-2xx under load (see $RAW and $OUT/serve.log)"
fi
"$OUT/bin/tool" report "$RAW" "$RSS" "$CONNS" "$DURATION" "$ROUNDS" "$DEEP" | tee "$ROOT/bench/results.md"

#!/usr/bin/env bash
# Checks the API reference at /docs/ in a real browser: builds the binary, starts
# `chargenet serve --demo` on a free port, loads /docs in headless Chromium, and asserts
# from the rendered DOM that every operation of openapi/openapi.yaml is shown (by
# Swagger UI's element id operations-TAG-OPERATIONID, holding the method and the path),
# that Swagger UI shows no error box, and that the browser logged no CSP violation or
# uncaught error. Also checks the vendored Swagger UI files against SHA256SUMS.
#
# Then it presses "Try it out" and "Execute" on getLocation in the browser (driven over
# the DevTools protocol), once with the page loaded from the server's own address and
# once through a reverse proxy under the path prefix /charging: the Servers menu must
# offer only that address, and the request must go to it and be answered 200 by the
# service, whatever the contract's servers list says (http://127.0.0.1:8080).
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
say "PASS: /docs renders every operation of openapi/openapi.yaml"

# "Try it out" in the browser. Node 20 needs a flag for its WebSocket client (the
# DevTools protocol); later versions have it on by default.
cat >"$WORK/docs-tryit.mjs" <<'EOF'
// Presses "Try it out" and "Execute" on getLocation in headless Chromium, driven over the
// DevTools protocol, for the page served directly and through a reverse proxy under
// /charging; prints what Swagger UI shows and exits 1 if the request did not go to the
// address the page was loaded from or was not answered 200 by the service.
import { spawn } from "node:child_process";
import http from "node:http";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";

const [chromium, serverUrl, apiKey, workDir] = process.argv.slice(2);
const children = [];
const finish = (code) => {
  for (const c of children) c.kill("SIGTERM");
  process.exit(code);
};
setTimeout(() => {
  console.log("    FAIL: timed out after 180 s");
  finish(1);
}, 180_000).unref();

// A reverse proxy that serves the service under /charging, as a deployment might.
const upstream = new URL(serverUrl);
const proxy = http.createServer((req, res) => {
  if (!req.url.startsWith("/charging/")) {
    res.writeHead(404).end();
    return;
  }
  const up = http.request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url.slice("/charging".length), headers: { ...req.headers, host: upstream.host } },
    (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    },
  );
  up.on("error", () => res.writeHead(502).end());
  req.pipe(up);
});
await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
proxy.unref();
const proxyBase = `http://127.0.0.1:${proxy.address().port}/charging`;

async function tryIt(apiBase) {
  const profile = mkdtempSync(join(workDir, "tryit-profile-"));
  const browser = spawn(chromium, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", `--user-data-dir=${profile}`, "--remote-debugging-port=0", "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(browser);
  const wsUrl = await new Promise((resolve, reject) => {
    let err = "";
    browser.stderr.on("data", (d) => {
      err += d;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    browser.on("exit", (code) => reject(new Error(`chromium exited (${code}): ${err.slice(-500)}`)));
  });
  const targets = await (await fetch(`http://127.0.0.1:${new URL(wsUrl).port}/json/list`)).json();
  const ws = new WebSocket(targets.find((t) => t.type === "page").webSocketDebuggerUrl);
  await new Promise((r) => ws.addEventListener("open", r, { once: true }));
  let nextId = 0;
  const pending = new Map();
  const logged = [];
  ws.addEventListener("message", (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.id !== undefined && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    } else if (msg.method === "Runtime.exceptionThrown" || msg.method === "Log.entryAdded") {
      logged.push(JSON.stringify(msg.params).slice(0, 300));
    }
  });
  const send = (method, params = {}) =>
    new Promise((resolve) => {
      const id = ++nextId;
      pending.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("Runtime.enable");
  await send("Log.enable");
  await send("Page.enable");
  await send("Page.navigate", { url: `${apiBase}/docs/` });
  const script = `(async () => {
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const waitFor = async (what, fn) => {
      const end = Date.now() + 30000;
      for (;;) {
        const v = fn();
        if (v) return v;
        if (Date.now() > end) throw new Error("timed out waiting for " + what);
        await sleep(100);
      }
    };
    const op = await waitFor("getLocation", () => document.querySelector("#operations-Locations-getLocation"));
    const servers = [...document.querySelectorAll(".servers select option")].map((o) => o.value);
    window.ui.authActions.authorize({ bearerAuth: { name: "bearerAuth", schema: { type: "http", scheme: "bearer" }, value: ${JSON.stringify(apiKey)} } });
    op.querySelector("button.opblock-summary-control").click();
    (await waitFor("Try it out", () => op.querySelector(".try-out__btn"))).click();
    const input = await waitFor("the id input", () => op.querySelector("tr[data-param-name='id'] input"));
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(input, "LOC-0001");
    input.dispatchEvent(new Event("input", { bubbles: true }));
    (await waitFor("Execute", () => op.querySelector("button.execute"))).click();
    const status = await waitFor("the response", () => op.querySelector(".live-responses-table .response .response-col_status"));
    const text = (sel) => op.querySelector(sel)?.textContent ?? "";
    return JSON.stringify({ servers, status: status.textContent.trim(), requestUrl: text(".request-url pre"),
      curl: text(".curl-command .curl"), body: text(".live-responses-table .response-col_description pre") });
  })()`;
  const res = await send("Runtime.evaluate", { expression: script, awaitPromise: true, returnByValue: true });
  ws.close();
  browser.kill("SIGTERM");
  if (res.result?.exceptionDetails) {
    return { error: res.result.exceptionDetails.exception?.description ?? res.result.exceptionDetails.text, logged };
  }
  return { ...JSON.parse(res.result.result.value), logged };
}

let failed = 0;
for (const apiBase of [serverUrl, proxyBase]) {
  const got = await tryIt(apiBase);
  const want = `${apiBase}/v1/locations/LOC-0001`;
  const problems = [];
  if (got.error) problems.push(got.error);
  else {
    if (JSON.stringify(got.servers) !== JSON.stringify([apiBase])) problems.push(`Servers menu offers ${JSON.stringify(got.servers)}, want only ${apiBase}`);
    if (got.requestUrl !== want) problems.push(`request URL ${got.requestUrl}, want ${want}`);
    if (!got.curl.includes(`'${want}'`)) problems.push(`curl command does not address ${want}: ${got.curl}`);
    if (got.status !== "200") problems.push(`answered ${got.status}, want 200`);
    if (!got.body.includes('"id": "LOC-0001"')) problems.push(`the answer is not location LOC-0001: ${got.body.slice(0, 200)}`);
  }
  if (got.logged?.length) problems.push(`the page logged: ${got.logged.join(" | ")}`);
  if (problems.length) {
    failed++;
    console.log(`    FAIL  page at ${apiBase}/docs/: ${problems.join("; ")}`);
  } else {
    console.log(`    ok    page at ${apiBase}/docs/: Servers menu [${got.servers}], Try it out GET ${got.requestUrl} -> ${got.status}`);
  }
}
finish(failed ? 1 : 0);
EOF
node_flags=()
node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' || node_flags=(--experimental-websocket)
say "Try it out in headless Chromium: directly and behind a proxy under /charging"
timeout 240 node "${node_flags[@]}" "$WORK/docs-tryit.mjs" "$CHROMIUM" "$SERVER_URL" "$API_KEY" "$WORK" ||
	die "\"Try it out\" on /docs did not address the service that served the page (above)"
grep -q '"path":"/v1/locations/LOC-0001","status":200' "$WORK/server.log" ||
	die "the server log shows no GET /v1/locations/LOC-0001 answered 200 from \"Try it out\""
say "PASS: /docs renders every operation, and \"Try it out\" addresses the service that served the page, in $((SECONDS - start)) s"

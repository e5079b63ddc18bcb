// The scenario scripts/prism-check.sh drives through Prism's validation proxy (see the
// comment at the top of that script for why there are two proxies and a few direct calls).
// Plain Node 20, no dependencies.
//
// Environment: STRICT (proxy validating requests and responses), LENIENT (proxy validating
// responses only), DIRECT (the service itself), API_KEY (scope partner), INGEST_KEY
// (ingest), ADMIN_KEY (keys), TIMEOUT_MS (default 10000).
//
// Every exchange checks: the expected status, no `sl-violations` header (Prism lists every
// request or response violation there; with --errors an Error-level one also turns the
// answer into a 500 VIOLATIONS problem), that the answer came from the service and not
// from Prism itself, X-Request-Id, the X-RateLimit-* headers on every answer of a contract
// operation to an accepted key, and for errors the documented Error body (code, param,
// message, requestId equal to X-Request-Id).
//
// Coverage: the operations are read from openapi/openapi.yaml; each must be seen through
// Prism with at least one success and one error answer.

import { readFileSync } from "node:fs";

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`prism-scenario: ${name} is required`);
    process.exit(2);
  }
  return v.replace(/\/+$/, "");
};
const STRICT = env("STRICT");
const LENIENT = env("LENIENT");
const DIRECT = env("DIRECT");
const KEY = env("API_KEY");
const INGEST = env("INGEST_KEY");
const ADMIN = env("ADMIN_KEY");
const TIMEOUT = Number(process.env.TIMEOUT_MS || 10000);

let passed = 0;
const failures = [];
const seenOps = new Set();

function fail(what, detail) {
  failures.push(`${what}: ${detail}`);
  console.log(`  FAIL  ${what}: ${detail}`);
}

/** summarize shortens the sl-violations header: how many, and the first distinct messages. */
function summarize(header) {
  const raw = header.replace(/^Too many violations!\s*/, "");
  let list;
  try {
    list = JSON.parse(raw);
  } catch {
    // Prism cuts a long list ("Too many violations! [..."): take the messages it kept.
    list = [...raw.matchAll(/"severity":"(\w+)","code":"([^"]*)","message":"((?:[^"\\]|\\.)*)"/g)].map((m) => ({ severity: m[1], code: m[2], message: m[3] }));
  }
  if (!Array.isArray(list) || list.length === 0) return header.slice(0, 500);
  const messages = [...new Set(list.map((v) => `${v.severity} ${v.code}: ${v.message}`))];
  const more = messages.length > 3 ? ` (and ${messages.length - 3} more)` : "";
  return `${list.length}${raw === header ? "" : "+"} violation(s): ${messages.slice(0, 3).join(" | ")}${more}`;
}

/**
 * call sends one request and checks the exchange. opts: via (STRICT|LENIENT|DIRECT), op
 * (operationId, for the coverage report), method, path, body (object, or string sent
 * as is), headers, auth (false: no Authorization; a string: that header value), status
 * (expected), code and param (expected Error body), prism (true: the answer is expected
 * from Prism itself, not from the service), rateLimit (false: the service answers before
 * it authenticates the key, so no X-RateLimit-* headers). Returns {status, headers, body}.
 */
async function call(what, opts) {
  const { via = STRICT, method = "GET", path, body, status, code, param, op } = opts;
  const headers = { ...(opts.headers || {}) };
  if (opts.auth === undefined) headers.Authorization = `Bearer ${KEY}`;
  else if (opts.auth !== false) headers.Authorization = opts.auth;
  let payload;
  if (body !== undefined) {
    payload = typeof body === "string" ? body : JSON.stringify(body);
    headers["Content-Type"] ??= "application/json";
  }
  const label = `${what} [${via === STRICT ? "strict" : via === LENIENT ? "lenient" : "direct"}]`;
  let res;
  let text;
  try {
    res = await fetch(via + path, { method, headers, body: payload, signal: AbortSignal.timeout(TIMEOUT) });
    text = await res.text();
  } catch (e) {
    fail(label, `${method} ${path}: ${e.message}`);
    return { status: 0, headers: new Headers(), body: undefined };
  }
  let json;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = text;
  }
  const problems = [];
  const violations = res.headers.get("sl-violations");
  if (violations) problems.push(`Prism reports violations (sl-violations): ${summarize(violations)}`);
  const prismType = json && typeof json === "object" && typeof json.type === "string" && json.type.startsWith("https://stoplight.io/prism/errors#") ? json.type : "";
  if (opts.prism) {
    if (!prismType) problems.push(`expected Prism itself to answer, got a service answer: ${text.slice(0, 200)}`);
  } else if (prismType) {
    problems.push(`Prism answered ${res.status} ${prismType} instead of the service${violations ? "" : `: ${JSON.stringify(json.validation ?? json.detail).slice(0, 500)}`}`);
  }
  if (res.status !== status && !prismType) problems.push(`status ${res.status}, want ${status}: ${text.slice(0, 300)}`);
  if (!opts.prism && !prismType) {
    const rid = res.headers.get("x-request-id");
    if (!rid) problems.push("no X-Request-Id header");
    if (op && status !== 403 && status !== 401 && opts.rateLimit !== false) {
      for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
        if (!/^[0-9]+$/.test(res.headers.get(h) ?? "")) problems.push(`${h} is ${JSON.stringify(res.headers.get(h))}, want a non-negative integer`);
      }
    }
    if (status >= 400 && !prismType) {
      if (!json || typeof json !== "object") problems.push(`error body is not JSON: ${text.slice(0, 200)}`);
      else {
        if (code !== undefined && json.code !== code) problems.push(`code ${JSON.stringify(json.code)}, want ${code}`);
        if (param !== undefined && json.param !== param) problems.push(`param ${JSON.stringify(json.param)}, want ${param}`);
        if (typeof json.message !== "string" || json.message === "") problems.push("no message");
        if (json.requestId !== rid) problems.push(`requestId ${json.requestId} differs from X-Request-Id ${rid}`);
      }
    }
  }
  if (problems.length > 0) {
    fail(label, `${method} ${path}: ${problems.join("; ")}`);
  } else {
    passed++;
    if (op && via !== DIRECT) seenOps.add(`${op} ${status}`);
    const detail = status >= 400 && json && typeof json === "object" ? ` ${json.code ?? json.title}` : "";
    console.log(`  ok    ${label}: ${method} ${path} -> ${res.status}${detail}`);
  }
  return { status: res.status, headers: res.headers, body: json };
}

/** walk follows next_cursor through the strict proxy and returns the pages. */
async function walk(op, path, limit, idOf, expected) {
  const pages = [];
  let cursor;
  for (let n = 0; n < 200; n++) {
    const q = new URLSearchParams();
    if (limit !== undefined) q.set("limit", String(limit));
    if (cursor !== undefined) q.set("cursor", cursor);
    const qs = q.toString();
    const r = await call(`${op} page ${n + 1}`, { op, path: qs ? `${path}?${qs}` : path, status: 200 });
    if (r.status !== 200 || !r.body?.pagination) return pages;
    pages.push(r.body);
    if (r.body.pagination.next_cursor === null) break;
    cursor = r.body.pagination.next_cursor;
  }
  const ids = pages.flatMap((p) => p.data.map(idOf));
  const unique = new Set(ids);
  const what = `${op} walk (limit ${limit ?? "default"})`;
  if (ids.length !== expected || unique.size !== expected) fail(what, `${ids.length} items, ${unique.size} distinct, want ${expected}`);
  else {
    passed++;
    console.log(`  ok    ${what}: ${pages.length} pages, ${ids.length} distinct items`);
  }
  // One step back: previous_cursor of the last page gives the page before it.
  if (pages.length >= 2) {
    const last = pages[pages.length - 1];
    const q = new URLSearchParams({ cursor: last.pagination.previous_cursor });
    if (limit !== undefined) q.set("limit", String(limit));
    const r = await call(`${op} previous_cursor`, { op, path: `${path}?${q}`, status: 200 });
    const want = pages[pages.length - 2].data.map(idOf);
    const got = r.body?.data?.map(idOf);
    if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${op} previous_cursor`, `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    else passed++;
  }
  return pages;
}

/** lifecycle covers the operations that create, change and remove locations, EVSEs and connectors. */
async function lifecycle() {
  const L = LENIENT;
  const id = "LOC-PRISM-1";
  const lp = `/v1/locations/${id}`;
  const input = {
    name: "Prism Depot", address: "Hafenstraße 1", city: "Hamburg", postalCode: "20457", country: "DEU",
    coordinates: { latitude: 53.5413, longitude: 9.9842 }, timeZone: "Europe/Berlin",
  };
  console.log("locations: create, replace, refuse (strict and lenient proxies)");
  const put = await call("PUT a new location", { op: "putLocation", method: "PUT", path: lp, body: input, status: 201 });
  if (put.headers.get("location") !== lp) fail("PUT Location header", `${put.headers.get("location")}, want ${lp}`);
  await call("PUT the same location again", { op: "putLocation", method: "PUT", path: lp, body: { ...input, id }, status: 200 });
  await call("PUT a changed location", { op: "putLocation", method: "PUT", path: lp, body: { ...input, name: "Prism Depot Nord" }, status: 200 });
  await call("PUT with another id in the body", { op: "putLocation", method: "PUT", path: lp, body: { ...input, id: "LOC-OTHER" }, status: 400, code: "invalid_body", param: "id" });
  await call("PUT an unknown time zone", { op: "putLocation", method: "PUT", path: lp, body: { ...input, timeZone: "Mars/Olympus_Mons" }, status: 400, code: "invalid_body", param: "timeZone" });
  await call("PUT without a name", { via: L, op: "putLocation", method: "PUT", path: lp, body: { ...input, name: undefined }, status: 400, code: "invalid_body", param: "name" });
  await call("PUT latitude 91", { via: L, op: "putLocation", method: "PUT", path: lp, body: { ...input, coordinates: { latitude: 91, longitude: 0 } }, status: 400, code: "invalid_body" });

  console.log("EVSEs: create with Idempotency-Key, replay, refuse");
  const connector = { standard: "IEC_62196_T2", format: "SOCKET", powerType: "AC_3_PHASE", maxElectricPower: 22, maxAmperage: 32, maxVoltage: 400 };
  const evseBody = { evseId: "DE*PRS*E0001*1", chargeboxId: 8001, locationId: id, connectors: [{ id: 1, ...connector, tariffIds: ["AC-STANDARD"] }] };
  const key = "prism-create-evse-0001";
  const created = await call("POST /v2/evses", { op: "createEvse", method: "POST", path: "/v2/evses", headers: { "Idempotency-Key": key }, body: evseBody, status: 201 });
  const uid = created.body?.uid ?? 999998;
  const e = `/v2/evses/${uid}`;
  if (created.headers.get("location") !== e) fail("POST /v2/evses Location header", `${created.headers.get("location")}, want ${e}`);
  const etag1 = created.headers.get("etag") ?? '"0"';
  if (!/^"[^"]*"$/.test(etag1)) fail("POST /v2/evses ETag", etag1);
  if (created.body?.status !== "PLANNED") fail("POST /v2/evses status", `${created.body?.status}, want PLANNED`);
  const replay = await call("POST /v2/evses replayed", { op: "createEvse", method: "POST", path: "/v2/evses", headers: { "Idempotency-Key": key }, body: evseBody, status: 201 });
  if (replay.headers.get("idempotent-replayed") !== "true") fail("replay", `Idempotent-Replayed ${replay.headers.get("idempotent-replayed")}, want true`);
  if (JSON.stringify(replay.body) !== JSON.stringify(created.body)) fail("replay", "the replayed EVSE differs from the first answer");
  await call("POST /v2/evses with a used key and another body", { op: "createEvse", method: "POST", path: "/v2/evses", headers: { "Idempotency-Key": key },
    body: { ...evseBody, chargeboxId: 8002 }, status: 422, code: "idempotency_key_reused", param: "Idempotency-Key" });
  await call("POST /v2/evses with a taken evseId", { op: "createEvse", method: "POST", path: "/v2/evses", body: evseBody, status: 409, code: "conflict", param: "evseId" });
  await call("POST /v2/evses at an unknown location", { op: "createEvse", method: "POST", path: "/v2/evses",
    body: { ...evseBody, evseId: "DE*PRS*E0002*1", locationId: "LOC-NOPE" }, status: 400, code: "invalid_body", param: "locationId" });
  await call("POST /v2/evses with a DC standard on AC", { op: "createEvse", method: "POST", path: "/v2/evses",
    body: { ...evseBody, evseId: "DE*PRS*E0003*1", connectors: [{ id: 1, ...connector, standard: "CHADEMO" }] }, status: 400, code: "invalid_connector" });
  await call("POST /v2/evses REMOVED first", { op: "createEvse", method: "POST", path: "/v2/evses",
    body: { ...evseBody, evseId: "DE*PRS*E0004*1", status: "REMOVED" }, status: 400, code: "invalid_body", param: "status" });
  await call("POST /v2/evses without evseId", { via: L, op: "createEvse", method: "POST", path: "/v2/evses",
    body: { ...evseBody, evseId: undefined }, status: 400, code: "invalid_body", param: "evseId" });
  await call("POST /v2/evses with a 256-character key", { via: L, op: "createEvse", method: "POST", path: "/v2/evses", headers: { "Idempotency-Key": "k".repeat(256) },
    body: { ...evseBody, evseId: "DE*PRS*E0005*1" }, status: 400, param: "Idempotency-Key" });

  console.log("connectors: add and delete");
  const dc = { standard: "IEC_62196_T2_COMBO", format: "CABLE", powerType: "DC", maxElectricPower: 150, maxAmperage: 375, maxVoltage: 920 };
  const added = await call("POST a connector", { op: "createConnector", method: "POST", path: `${e}/connectors`,
    headers: { "Idempotency-Key": "prism-connector-0001", "If-Match": etag1 }, body: dc, status: 201 });
  if (JSON.stringify(added.body?.connectors?.map((c) => c.id)) !== "[1,2]") fail("POST a connector", `connector ids ${JSON.stringify(added.body?.connectors?.map((c) => c.id))}, want [1,2]`);
  const etag2 = added.headers.get("etag") ?? '"0"';
  await call("POST a connector replayed", { op: "createConnector", method: "POST", path: `${e}/connectors`,
    headers: { "Idempotency-Key": "prism-connector-0001", "If-Match": etag1 }, body: dc, status: 201 });
  await call("POST a connector with a stale If-Match", { op: "createConnector", method: "POST", path: `${e}/connectors`,
    headers: { "If-Match": etag1 }, body: dc, status: 412, code: "precondition_failed", param: "If-Match" });
  await call("POST a connector breaking a rule", { op: "createConnector", method: "POST", path: `${e}/connectors`,
    body: { ...dc, powerType: "AC_3_PHASE" }, status: 400, code: "invalid_connector" });
  await call("POST a connector to an unknown EVSE", { op: "createConnector", method: "POST", path: "/v2/evses/999999/connectors", body: dc, status: 404, code: "not_found" });
  await call("POST a connector with maxVoltage 99999", { via: L, op: "createConnector", method: "POST", path: `${e}/connectors`,
    body: { ...dc, maxVoltage: 99999 }, status: 400, code: "invalid_body", param: "maxVoltage" });
  const del = await call("DELETE connector 2", { op: "deleteConnector", method: "DELETE", path: `${e}/connectors/2`, headers: { "If-Match": etag2 }, status: 200 });
  if (typeof del.body?.connectors?.find((c) => c.id === 2)?.deletedAt !== "string") fail("DELETE connector 2", "no deletedAt");
  await call("DELETE connector 2 again", { op: "deleteConnector", method: "DELETE", path: `${e}/connectors/2`, status: 200 });
  await call("DELETE connector 1 with a stale If-Match", { op: "deleteConnector", method: "DELETE", path: `${e}/connectors/1`, headers: { "If-Match": etag2 }, status: 412, code: "precondition_failed" });
  await call("DELETE an unknown connector", { op: "deleteConnector", method: "DELETE", path: `${e}/connectors/9`, status: 404, code: "not_found" });
  await call("DELETE connector 0", { via: L, op: "deleteConnector", method: "DELETE", path: `${e}/connectors/0`, status: 400, code: "invalid_parameter", param: "connectorId" });

  console.log("EVSE status: commission, refuse, remove");
  const etag3 = del.headers.get("etag") ?? '"0"';
  const live = await call("PATCH status AVAILABLE", { op: "updateEvse", method: "PATCH", path: e, headers: { "If-Match": etag3 }, body: { status: "AVAILABLE" }, status: 200 });
  if (live.body?.status !== "AVAILABLE") fail("PATCH status AVAILABLE", `status ${live.body?.status}`);
  await call("PATCH with a stale If-Match", { op: "updateEvse", method: "PATCH", path: e, headers: { "If-Match": etag3 }, body: { status: "INOPERATIVE" }, status: 412, code: "precondition_failed", param: "If-Match" });
  await call("PATCH AVAILABLE -> PLANNED", { op: "updateEvse", method: "PATCH", path: e, body: { status: "PLANNED" }, status: 409, code: "invalid_transition", param: "status" });
  await call("PATCH chargeboxId", { op: "updateEvse", method: "PATCH", path: e, body: { chargeboxId: 8003 }, status: 200 });
  await call("PATCH to an unknown location", { op: "updateEvse", method: "PATCH", path: e, body: { locationId: "LOC-NOPE" }, status: 400, code: "invalid_body", param: "locationId" });
  await call("PATCH an unknown EVSE", { op: "updateEvse", method: "PATCH", path: "/v2/evses/999999", body: { status: "INOPERATIVE" }, status: 404, code: "not_found" });
  await call("PATCH an empty object", { via: L, op: "updateEvse", method: "PATCH", path: e, body: {}, status: 400, code: "invalid_body" });
  await call("PATCH status null", { via: L, op: "updateEvse", method: "PATCH", path: e, body: { status: null }, status: 400, code: "invalid_body", param: "status" });
  await call("PATCH an unknown status", { via: L, op: "updateEvse", method: "PATCH", path: e, body: { status: "EXPLODED" }, status: 400, code: "invalid_body", param: "status" });
  await call("DELETE the location in use", { op: "deleteLocation", method: "DELETE", path: lp, status: 409, code: "location_in_use" });
  await call("DELETE the EVSE with a stale If-Match", { op: "removeEvse", method: "DELETE", path: e, headers: { "If-Match": etag1 }, status: 412, code: "precondition_failed" });
  const removed = await call("DELETE the EVSE", { op: "removeEvse", method: "DELETE", path: e, status: 200 });
  if (removed.body?.status !== "REMOVED") fail("DELETE the EVSE", `status ${removed.body?.status}`);
  await call("DELETE the EVSE again", { op: "removeEvse", method: "DELETE", path: e, status: 200 });
  await call("DELETE an unknown EVSE", { op: "removeEvse", method: "DELETE", path: "/v2/evses/999999", status: 404, code: "not_found" });
  await call("DELETE EVSE uid 0", { via: L, op: "removeEvse", method: "DELETE", path: "/v2/evses/0", status: 400, code: "invalid_parameter", param: "uid" });
  await call("PATCH a removed EVSE", { op: "updateEvse", method: "PATCH", path: e, body: { status: "AVAILABLE" }, status: 409, code: "evse_removed" });
  await call("POST a connector to a removed EVSE", { op: "createConnector", method: "POST", path: `${e}/connectors`, body: dc, status: 409, code: "evse_removed" });
  await call("DELETE a connector of a removed EVSE", { op: "deleteConnector", method: "DELETE", path: `${e}/connectors/1`, status: 409, code: "evse_removed" });

  console.log("locations: delete");
  const gone = await call("DELETE the location", { op: "deleteLocation", method: "DELETE", path: lp, status: 200 });
  if (typeof gone.body?.deletedAt !== "string") fail("DELETE the location", "no deletedAt");
  await call("DELETE the location again", { op: "deleteLocation", method: "DELETE", path: lp, status: 200 });
  await call("read the deleted location", { op: "getLocation", path: lp, status: 200 });
  await call("PUT a deleted location", { op: "putLocation", method: "PUT", path: lp, body: input, status: 409, code: "location_deleted" });
  await call("POST /v2/evses at a deleted location", { op: "createEvse", method: "POST", path: "/v2/evses",
    body: { ...evseBody, evseId: "DE*PRS*E0006*1" }, status: 409, code: "location_deleted" });
  await call("DELETE an unknown location", { op: "deleteLocation", method: "DELETE", path: "/v1/locations/LOC-NOPE", status: 404, code: "not_found" });
  await call("DELETE a location id too long", { via: L, op: "deleteLocation", method: "DELETE", path: `/v1/locations/${"L".repeat(37)}`, status: 400, code: "invalid_parameter", param: "id" });

  console.log("webhooks: Idempotency-Key");
  const hook = { url: "https://partner.example.com/hooks/idem", event_types: [{ type: "evse.created" }] };
  const w1 = await call("create webhook with a key", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", headers: { "Idempotency-Key": "prism-webhook-0001" }, body: hook, status: 201 });
  const w2 = await call("create webhook replayed", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", headers: { "Idempotency-Key": "prism-webhook-0001" }, body: hook, status: 201 });
  if (w2.headers.get("idempotent-replayed") !== "true" || w2.body?.id !== w1.body?.id) fail("create webhook replayed", `id ${w2.body?.id} (first ${w1.body?.id}), Idempotent-Replayed ${w2.headers.get("idempotent-replayed")}`);
  await call("create webhook with a used key", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", headers: { "Idempotency-Key": "prism-webhook-0001" },
    body: { ...hook, description: "another" }, status: 422, code: "idempotency_key_reused", param: "Idempotency-Key" });
  if (w1.body?.id) await call("delete the webhook", { op: "deleteWebhook", method: "DELETE", path: `/emsp/v1/webhooks/${w1.body.id}`, status: 204 });
}


/** sync covers the change lists, the event log, and the webhook test and replay. */
async function sync() {
  const L = LENIENT;
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const q = (params) => new URLSearchParams(params).toString();
  console.log("change lists: updated_since, resume_cursor, refusals");
  for (const [op, path] of [["listEvses", "/v2/evses"], ["listLocations", "/v1/locations"]]) {
    const first = await call(`${path} changes since`, { op, path: `${path}?${q({ updated_since: since, limit: 3 })}`, status: 200 });
    const pg = first.body?.pagination ?? {};
    if (typeof pg.resume_cursor !== "string" || pg.previous_cursor !== null) fail(`${path} changes since`, `pagination ${JSON.stringify(pg)}: want resume_cursor and no previous_cursor`);
    else passed++;
    if (pg.next_cursor) {
      await call(`${path} changes, next page`, { op, path: `${path}?${q({ updated_since: since, limit: 3, cursor: pg.next_cursor })}`, status: 200 });
      await call(`${path} change cursor with another updated_since`, { op, path: `${path}?${q({ updated_since: new Date().toISOString(), cursor: pg.next_cursor })}`,
        status: 400, code: "invalid_cursor", param: "cursor" });
      await call(`${path} change cursor without updated_since`, { op, path: `${path}?${q({ cursor: pg.next_cursor })}`, status: 400, code: "invalid_cursor", param: "cursor" });
    } else fail(`${path} changes since`, "no next_cursor to reuse (the scenario's changes should fill more than one page)");
    await call(`${path} updated_since not a time`, { via: L, op, path: `${path}?updated_since=yesterday`, status: 400, code: "invalid_parameter", param: "updated_since" });
  }

  console.log("the event log");
  const log = await call("list events", { op: "listEvents", path: `/emsp/v1/events?${q({ since, limit: 5 })}`, status: 200 });
  const first = log.body?.data?.[0];
  if (!first) fail("list events", "the log is empty after the scenario's changes");
  if (log.body?.pagination?.next_cursor) {
    await call("events, next page", { op: "listEvents", path: `/emsp/v1/events?${q({ since, limit: 5, cursor: log.body.pagination.next_cursor })}`, status: 200 });
    await call("event cursor with another type", { op: "listEvents", path: `/emsp/v1/events?${q({ since, type: "evse.created", cursor: log.body.pagination.next_cursor })}`,
      status: 400, code: "invalid_cursor", param: "cursor" });
  }
  await call("events of two types in 1.0", { op: "listEvents", path: "/emsp/v1/events?type=evse.status.changed&type=evse.removed&api_version=1.0", status: 200 });
  await call("events of type webhook.ping", { op: "listEvents", path: "/emsp/v1/events?type=webhook.ping", status: 400, code: "invalid_parameter", param: "type" });
  await call("events of an unknown type", { op: "listEvents", path: "/emsp/v1/events?type=evse.exploded", status: 400, code: "invalid_parameter", param: "type" });
  await call("events in a version no type has", { op: "listEvents", path: "/emsp/v1/events?api_version=9.9", status: 400, code: "invalid_parameter", param: "api_version" });
  await call("events since not a time", { via: L, op: "listEvents", path: "/emsp/v1/events?since=monday", status: 400, code: "invalid_parameter", param: "since" });
  if (first) {
    await call("read an event", { op: "getEvent", path: `/emsp/v1/events/${first.id}`, status: 200 });
    await call("read an event in 1.0", { op: "getEvent", path: `/emsp/v1/events/${first.id}?api_version=1.0`, status: 200 });
  }
  await call("read an unknown event", { op: "getEvent", path: "/emsp/v1/events/evt_00000000000000000000000000", status: 404, code: "not_found" });
  await call("read a malformed event id", { via: L, op: "getEvent", path: "/emsp/v1/events/nope", status: 400, code: "invalid_parameter", param: "eventId" });

  console.log("webhooks: test and replay");
  const created = await call("create webhook for test and replay", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", status: 201,
    body: { url: "https://partner.example.com/hooks/tools", event_types: [{ type: "evse.status.changed", api_version: "1.0" }, { type: "evse.removed" }] } });
  const w = `/emsp/v1/webhooks/${created.body?.id ?? "wh_00000000000000000000000000"}`;
  const ping = await call("test webhook", { op: "testWebhook", method: "POST", path: `${w}/test`, status: 202 });
  if (!/^evt_/.test(ping.body?.id ?? "")) fail("test webhook", `id ${ping.body?.id}`);
  await call("read the ping in the log", { op: "getEvent", path: `/emsp/v1/events/${ping.body?.id ?? "evt_00000000000000000000000000"}`, status: 404, code: "not_found" });
  await call("test an unknown webhook", { op: "testWebhook", method: "POST", path: "/emsp/v1/webhooks/wh_00000000000000000000000000/test", status: 404, code: "not_found", param: "webhookId" });
  const replay = await call("replay", { op: "replayWebhook", method: "POST", path: `${w}/replay`, body: { since }, status: 202 });
  if (!(replay.body?.queued >= 1)) fail("replay", `queued ${replay.body?.queued}, want the scenario's status changes`);
  await call("replay of one type in a window", { op: "replayWebhook", method: "POST", path: `${w}/replay`, status: 202,
    body: { since, until: new Date(Date.now() + 60_000).toISOString(), types: ["evse.removed"] } });
  await call("replay with until before since", { op: "replayWebhook", method: "POST", path: `${w}/replay`, status: 400, code: "invalid_body", param: "until",
    body: { since, until: since } });
  await call("replay of a type not subscribed", { op: "replayWebhook", method: "POST", path: `${w}/replay`, status: 400, code: "invalid_body", param: "types[0]",
    body: { since, types: ["location.created"] } });
  await call("replay without since", { via: L, op: "replayWebhook", method: "POST", path: `${w}/replay`, status: 400, code: "invalid_body", param: "since", body: {} });
  await call("replay to an unknown webhook", { op: "replayWebhook", method: "POST", path: "/emsp/v1/webhooks/wh_00000000000000000000000000/replay", body: { since },
    status: 404, code: "not_found", param: "webhookId" });
  await call("pause the webhook", { op: "updateWebhook", method: "PATCH", path: w, body: { enabled: false }, status: 200 });
  await call("test a disabled webhook", { op: "testWebhook", method: "POST", path: `${w}/test`, status: 409, code: "webhook_disabled" });
  await call("replay to a disabled webhook", { op: "replayWebhook", method: "POST", path: `${w}/replay`, body: { since }, status: 409, code: "webhook_disabled" });
  await call("delete the webhook", { op: "deleteWebhook", method: "DELETE", path: w, status: 204 });
}

async function main() {
  console.log("pagination walks (strict proxy)");
  const locPages = await walk("listLocations", "/v1/locations", undefined, (l) => l.id, 120);
  await walk("listLocations", "/v1/locations", 100, (l) => l.id, 120);
  await walk("listLocations", "/v1/locations", 7, (l) => l.id, 120);
  const evsePages = await walk("listEvses", "/v2/evses", 7, (e) => e.uid, 40);
  await walk("listEvses", "/v2/evses", undefined, (e) => e.uid, 40);

  console.log("reads (strict proxy)");
  await call("location", { op: "getLocation", path: "/v1/locations/LOC-0001", status: 200 });
  await call("unknown location", { op: "getLocation", path: "/v1/locations/LOC-NOPE", status: 404, code: "not_found", param: "id" });
  const evse = await call("EVSE", { op: "getEvse", path: "/v2/evses/1002", status: 200 });
  if (!/^"[^"]*"$/.test(evse.headers.get("etag") ?? "")) fail("EVSE ETag", `GET /v2/evses/1002 ETag ${evse.headers.get("etag")}`);
  await call("EVSE with deleted connector", { op: "getEvse", path: "/v2/evses/1004", status: 200 });
  await call("unknown EVSE", { op: "getEvse", path: "/v2/evses/999999", status: 404, code: "not_found", param: "uid" });
  await call("event types", { op: "listEventTypes", path: "/emsp/v1/webhooks/event_types", status: 200 });

  console.log("updates (strict proxy)");
  const etag = evse.headers.get("etag") ?? '"0"';
  const p = "/v2/evses/1002/connectors/1";
  const up = await call("PATCH with If-Match", { op: "updateConnector", method: "PATCH", path: p, headers: { "If-Match": etag }, body: { maxElectricPower: 55.5 }, status: 200 });
  if (up.body?.connectors?.find((c) => c.id === 1)?.maxElectricPower !== 55.5) fail("PATCH answer", JSON.stringify(up.body).slice(0, 300));
  await call("PATCH without If-Match", { op: "updateConnector", method: "PATCH", path: p, body: { maxAmperage: 120, maxVoltage: 480 }, status: 200 });
  await call("PATCH with If-Match *", { op: "updateConnector", method: "PATCH", path: p, headers: { "If-Match": "*" }, body: { format: "CABLE" }, status: 200 });
  await call("PATCH with a stale If-Match", { op: "updateConnector", method: "PATCH", path: p, headers: { "If-Match": etag }, body: { maxElectricPower: 60 }, status: 412, code: "precondition_failed", param: "If-Match" });
  await call("PATCH a deleted connector (1004/4)", { op: "updateConnector", method: "PATCH", path: "/v2/evses/1004/connectors/4", body: { maxVoltage: 500 }, status: 409, code: "connector_deleted", param: "connectorId" });
  await call("PATCH an unknown EVSE", { op: "updateConnector", method: "PATCH", path: "/v2/evses/999999/connectors/1", body: { maxVoltage: 500 }, status: 404, code: "not_found" });
  await call("PATCH an unknown connector", { op: "updateConnector", method: "PATCH", path: "/v2/evses/1002/connectors/99", body: { maxVoltage: 500 }, status: 404, code: "not_found" });
  // Valid by the schema, against a connector rule: only the service can refuse it.
  await call("PATCH an AC standard onto a DC connector", { op: "updateConnector", method: "PATCH", path: p, body: { standard: "IEC_62196_T2" }, status: 400, code: "invalid_connector", param: "standard" });

  console.log("webhooks and status ingestion (strict proxy)");
  const created = await call("create webhook", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", status: 201,
    body: { url: "https://partner.example.com/hooks", event_types: [{ type: "evse.connector.updated" }, { type: "evse.status.changed" }] } });
  const wid = created.body?.id ?? "wh_00000000000000000000000000";
  const w = `/emsp/v1/webhooks/${wid}`;
  await call("list webhooks", { op: "listWebhooks", path: "/emsp/v1/webhooks?limit=10", status: 200 });
  await call("read webhook", { op: "getWebhook", path: w, status: 200 });
  await call("pause webhook", { op: "updateWebhook", method: "PATCH", path: w, body: { enabled: false }, status: 200 });
  await call("rotate secret", { op: "rotateWebhookSecret", method: "POST", path: `${w}/secret/rotate`, status: 200 });
  await call("unknown event type", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", status: 400, code: "invalid_body", param: "event_types[0].type",
    body: { url: "https://partner.example.com/hooks", event_types: [{ type: "evse.exploded" }] } });
  await call("loopback URL", { op: "createWebhook", method: "POST", path: "/emsp/v1/webhooks", status: 400, code: "invalid_body", param: "url",
    body: { url: "https://127.0.0.1/hooks", event_types: [{ type: "evse.status.changed" }] } });
  await call("status notification", { op: "ingestStatusNotification", method: "POST", path: "/internal/v1/chargeboxes/501/status-notifications", auth: `Bearer ${INGEST}`,
    body: { connectorId: 1, status: "Faulted", errorCode: "GroundFailure", timestamp: new Date().toISOString() }, status: 200 });
  await call("status notification with a partner key", { op: "ingestStatusNotification", method: "POST", path: "/internal/v1/chargeboxes/501/status-notifications",
    body: { connectorId: 1, status: "Available", errorCode: "NoError" }, status: 403, code: "insufficient_scope", param: "Authorization" });
  await call("status notification for an unknown charge box", { op: "ingestStatusNotification", method: "POST", path: "/internal/v1/chargeboxes/9999/status-notifications", auth: `Bearer ${INGEST}`,
    body: { connectorId: 1, status: "Available", errorCode: "NoError" }, status: 404, code: "not_found", param: "chargeboxId" });
  await call("deliveries", { op: "listWebhookDeliveries", path: `${w}/deliveries`, status: 200 });
  await call("delete webhook", { op: "deleteWebhook", method: "DELETE", path: w, status: 204 });
  await call("deleted webhook", { op: "getWebhook", path: w, status: 404, code: "not_found", param: "webhookId" });

  await lifecycle();
  await sync();

  console.log("charge boxes and key administration");
  await call("charge boxes", { op: "listChargeboxes", path: "/v2/chargeboxes", status: 200 });
  await call("charge box", { op: "getChargebox", path: "/v2/chargeboxes/501", status: 200 });
  await call("unknown charge box", { op: "getChargebox", path: "/v2/chargeboxes/999999", status: 404, code: "not_found", param: "chargeboxId" });
  await call("charge boxes with an ingest key", { op: "listChargeboxes", path: "/v2/chargeboxes", auth: `Bearer ${INGEST}`,
    status: 403, code: "insufficient_scope", param: "Authorization" });
  const admin = `Bearer ${ADMIN}`;
  await call("keys", { op: "listKeys", path: "/admin/v1/keys", auth: admin, status: 200 });
  await call("keys with a partner key", { op: "listKeys", path: "/admin/v1/keys", status: 403, code: "insufficient_scope", param: "Authorization" });
  await call("create key", { op: "createKey", method: "POST", path: "/admin/v1/keys", auth: admin,
    body: { name: "prism-reader", scopes: ["inventory:read"] }, status: 201 });
  await call("create a key whose name is taken", { op: "createKey", method: "POST", path: "/admin/v1/keys", auth: admin,
    body: { name: "prism-reader" }, status: 409, code: "conflict", param: "name" });
  await call("rotate key", { op: "rotateKey", method: "POST", path: "/admin/v1/keys/prism-reader/rotate", auth: admin,
    body: { overlapSeconds: 60 }, status: 200 });
  await call("rotate an unknown key", { op: "rotateKey", method: "POST", path: "/admin/v1/keys/no-such-key/rotate", auth: admin,
    body: {}, status: 404, code: "not_found", param: "name" });
  await call("revoke key", { op: "revokeKey", method: "DELETE", path: "/admin/v1/keys/prism-reader", auth: admin, status: 204 });
  await call("revoke an unknown key", { op: "revokeKey", method: "DELETE", path: "/admin/v1/keys/no-such-key", auth: admin,
    status: 404, code: "not_found", param: "name" });

  console.log("cursors the service must refuse (strict proxy: well-formed, so Prism forwards them)");
  await call("forged cursor", { op: "listLocations", path: "/v1/locations?cursor=eyJrIjoiTE9DLTAwMDEifQ.c2lnbmF0dXJl", status: 400, code: "invalid_cursor", param: "cursor" });
  await call("malformed cursor", { op: "listLocations", path: "/v1/locations?cursor=abc", status: 400, code: "invalid_cursor", param: "cursor" });
  const locCursor = locPages[0]?.pagination?.next_cursor;
  const evseCursor = evsePages[0]?.pagination?.next_cursor;
  if (locCursor && evseCursor) {
    await call("location cursor on /v2/evses", { op: "listEvses", path: `/v2/evses?cursor=${encodeURIComponent(locCursor)}`, status: 400, code: "invalid_cursor", param: "cursor" });
    await call("EVSE cursor on /v1/locations", { op: "listLocations", path: `/v1/locations?cursor=${encodeURIComponent(evseCursor)}`, status: 400, code: "invalid_cursor", param: "cursor" });
    const tampered = locCursor.slice(0, -2) + (locCursor.endsWith("AA") ? "BB" : "AA");
    await call("altered cursor", { op: "listLocations", path: `/v1/locations?cursor=${encodeURIComponent(tampered)}`, status: 400, code: "invalid_cursor", param: "cursor" });
  } else fail("cursors", "the walks gave no next_cursor to reuse");

  console.log("403 with an unknown key, on every operation (strict proxy)");
  const bad = "Bearer not-a-valid-key-0123456789";
  for (const [op, method, path, body] of [
    ["listEvses", "GET", "/v2/evses"],
    ["getEvse", "GET", "/v2/evses/1001"],
    ["updateConnector", "PATCH", "/v2/evses/1001/connectors/1", { maxVoltage: 400 }],
    ["listLocations", "GET", "/v1/locations"],
    ["getLocation", "GET", "/v1/locations/LOC-0001"],
    ["listEventTypes", "GET", "/emsp/v1/webhooks/event_types"],
    ["listWebhooks", "GET", "/emsp/v1/webhooks"],
    ["createWebhook", "POST", "/emsp/v1/webhooks", { url: "https://partner.example.com/hooks", event_types: [{ type: "evse.created" }] }],
    ["getWebhook", "GET", "/emsp/v1/webhooks/wh_00000000000000000000000000"],
    ["updateWebhook", "PATCH", "/emsp/v1/webhooks/wh_00000000000000000000000000", { enabled: false }],
    ["deleteWebhook", "DELETE", "/emsp/v1/webhooks/wh_00000000000000000000000000"],
    ["rotateWebhookSecret", "POST", "/emsp/v1/webhooks/wh_00000000000000000000000000/secret/rotate"],
    ["listWebhookDeliveries", "GET", "/emsp/v1/webhooks/wh_00000000000000000000000000/deliveries"],
    ["putLocation", "PUT", "/v1/locations/LOC-0001", { name: "x", address: "x", city: "x", country: "DEU", coordinates: { latitude: 0, longitude: 0 }, timeZone: "UTC" }],
    ["deleteLocation", "DELETE", "/v1/locations/LOC-0001"],
    ["createEvse", "POST", "/v2/evses", { evseId: "DE*PRS*E0009*1", chargeboxId: 1, locationId: "LOC-0001",
      connectors: [{ id: 1, standard: "IEC_62196_T2", format: "SOCKET", powerType: "AC_3_PHASE", maxElectricPower: 22, maxAmperage: 32, maxVoltage: 400 }] }],
    ["updateEvse", "PATCH", "/v2/evses/1001", { status: "INOPERATIVE" }],
    ["removeEvse", "DELETE", "/v2/evses/1001"],
    ["createConnector", "POST", "/v2/evses/1001/connectors", { standard: "IEC_62196_T2", format: "SOCKET", powerType: "AC_3_PHASE", maxElectricPower: 22, maxAmperage: 32, maxVoltage: 400 }],
    ["deleteConnector", "DELETE", "/v2/evses/1001/connectors/1"],
    ["listEvents", "GET", "/emsp/v1/events"],
    ["getEvent", "GET", "/emsp/v1/events/evt_00000000000000000000000000"],
    ["testWebhook", "POST", "/emsp/v1/webhooks/wh_00000000000000000000000000/test"],
    ["replayWebhook", "POST", "/emsp/v1/webhooks/wh_00000000000000000000000000/replay", { since: "2026-11-22T00:00:00Z" }],
  ]) {
    await call(`unknown key`, { op, method, path, body, auth: bad, status: 403, code: "unauthorized", param: "Authorization" });
  }

  console.log("requests invalid on purpose (lenient proxy: Prism forwards them and validates the answer)");
  const L = LENIENT;
  for (const [q, what] of [["limit=0", "limit 0"], ["limit=101", "limit 101"], ["limit=abc", "limit not an integer"], ["limit=2.5", "limit not an integer"]]) {
    await call(what, { via: L, op: "listLocations", path: `/v1/locations?${q}`, status: 400, code: "invalid_parameter", param: "limit" });
    await call(what, { via: L, op: "listEvses", path: `/v2/evses?${q}`, status: 400, code: "invalid_parameter", param: "limit" });
  }
  await call("empty cursor", { via: L, op: "listLocations", path: "/v1/locations?cursor=", status: 400, param: "cursor" });
  await call("empty limit", { via: L, op: "listLocations", path: "/v1/locations?limit=", status: 400, code: "invalid_parameter", param: "limit" });
  await call("cursor with characters outside the pattern", { via: L, op: "listEvses", path: "/v2/evses?cursor=a%2Fb%3D", status: 400, param: "cursor" });
  await call("uid 0", { via: L, op: "getEvse", path: "/v2/evses/0", status: 400, code: "invalid_parameter", param: "uid" });
  await call("uid not an integer", { via: L, op: "getEvse", path: "/v2/evses/abc", status: 400, code: "invalid_parameter", param: "uid" });
  await call("location id too long", { via: L, op: "getLocation", path: `/v1/locations/${"L".repeat(37)}`, status: 400, code: "invalid_parameter", param: "id" });
  await call("connectorId 0", { via: L, op: "updateConnector", method: "PATCH", path: "/v2/evses/1002/connectors/0", body: { maxVoltage: 400 }, status: 400, code: "invalid_parameter", param: "connectorId" });
  for (const [body, what, prm] of [
    [{ maxVoltage: 99999 }, "maxVoltage 99999", "maxVoltage"],
    [{ maxElectricPower: 0 }, "maxElectricPower 0", "maxElectricPower"],
    [{ maxVoltage: null }, "null value", "maxVoltage"],
    [{ maxVoltage: "400" }, "string for a number", "maxVoltage"],
    [{ standard: "SCHUKO" }, "unknown standard", "standard"],
    [{ colour: "red" }, "unknown field", undefined],
    [{}, "empty object", undefined],
  ]) {
    await call(`PATCH ${what}`, { via: L, op: "updateConnector", method: "PATCH", path: p, body, status: 400, code: "invalid_body", param: prm });
  }
  await call("PATCH text/plain", { via: L, op: "updateConnector", method: "PATCH", path: p, body: "maxVoltage=400", headers: { "Content-Type": "text/plain" }, status: 415, code: "unsupported_media_type" });

  console.log("what Prism answers itself, and the service's own answer to it (direct)");
  // Prism checks the security scheme even with --validate-request=false: a request without
  // a Bearer token is answered 401 by Prism, never forwarded.
  await call("no key", { via: STRICT, path: "/v1/locations", auth: false, status: 401, prism: true });
  await call("no key", { via: DIRECT, path: "/v1/locations", auth: false, status: 403, code: "unauthorized", param: "Authorization" });
  await call("Basic scheme", { via: DIRECT, path: "/v2/evses/1001", auth: `Basic ${Buffer.from("a:b").toString("base64")}`, status: 403, code: "unauthorized", param: "Authorization" });
  // Prism re-serialises JSON bodies before forwarding (so 413 cannot happen behind it) and
  // never answers when the body is not JSON: both go to the service directly.
  await call("body not JSON", { via: DIRECT, method: "PATCH", path: p, body: '{"maxVoltage":', status: 400, code: "invalid_body" });
  await call("body over 1 MiB", { via: DIRECT, method: "PATCH", path: p, body: `{"maxVoltage": 400${" ".repeat(1 << 20)}}`, status: 413, code: "payload_too_large" });
  await call("unknown path", { via: DIRECT, path: "/v3/evses", status: 404, code: "not_found" });
  await call("method not allowed", { via: DIRECT, method: "PUT", path: "/v2/evses/1001", status: 405, code: "method_not_allowed" });

  // Coverage: every operation of the contract was seen through Prism with a success and
  // an error answer.
  const spec = readFileSync(new URL("../openapi/openapi.yaml", import.meta.url), "utf8");
  const ops = [...spec.matchAll(/^\s+operationId:\s*(\w+)\s*$/gm)].map((m) => m[1]);
  if (ops.length < 20) fail("coverage", `only ${ops.length} operationIds found in openapi/openapi.yaml`);
  const statuses = [...seenOps].sort();
  for (const op of ops) {
    const got = statuses.filter((s) => s.startsWith(`${op} `)).map((s) => s.split(" ")[1]);
    const ok = got.some((s) => s < "400");
    const err = got.some((s) => s >= "400");
    if (!ok || !err) fail("coverage", `${op} validated through Prism with ${got.join(", ") || "nothing"}: want a success and an error answer`);
    else {
      passed++;
      console.log(`  covered ${op}: ${got.join(", ")}`);
    }
  }
  console.log(`coverage: ${ops.length} operations of the contract`);

  console.log(`prism: ${passed} passed, ${failures.length} failed`);
  if (failures.length > 0) {
    console.log("failed:");
    for (const f of failures) console.log(`  - ${f}`);
    process.exitCode = 1;
  }
}

await main();

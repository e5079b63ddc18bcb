// A partner's client of the Charging Network Integration API, written the way a partner
// would: types generated from the published contract (openapi/openapi.yaml) by
// openapi-typescript, calls made with openapi-fetch. It runs a scenario against a live
// service and exits non-zero, listing every failed check, if the service does not behave
// as the contract says. scripts/ts-partner.sh runs it against `chargenet serve --demo`.
//
// Environment:
//   CHARGENET_URL              base URL of the service (required), e.g. http://127.0.0.1:8080
//   CHARGENET_API_KEY          a partner API key (required)
//   CHARGENET_LOCATIONS        number of locations expected (default 120, the demo inventory)
//   CHARGENET_EVSES            number of EVSEs expected (default 40, the demo inventory)
//   CHARGENET_TIMEOUT_MS       timeout of each request (default 10000)

import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.d.ts";

type Location = components["schemas"]["Location"];
type EVSE = components["schemas"]["EVSE"];
type Connector = components["schemas"]["Connector"];
type ApiError = components["schemas"]["Error"];
type Pagination = components["schemas"]["Pagination"];
type WebhookWithSecret = components["schemas"]["WebhookWithSecret"];
type Webhook = components["schemas"]["Webhook"];
type LocationInput = components["schemas"]["LocationInput"];
type EVSECreate = components["schemas"]["EVSECreate"];
type ConnectorCreate = components["schemas"]["ConnectorCreate"];
type LoggedEvent = components["schemas"]["LoggedEvent"];

// ---------------------------------------------------------------------------------------
// Checks: every check prints one line; a failed one is remembered and fails the run.

const failures: string[] = [];
let passed = 0;

function check(ok: boolean, what: string, detail?: unknown): boolean {
  if (ok) {
    passed++;
    console.log(`  ok    ${what}`);
  } else {
    const d = detail === undefined ? "" : `: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`;
    failures.push(`${what}${d}`);
    console.log(`  FAIL  ${what}${d}`);
  }
  return ok;
}

/** canonical is JSON with the keys of every object sorted: member order means nothing in JSON. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_key, value: unknown) =>
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

function equal<T>(got: T, want: T, what: string): boolean {
  return check(canonical(got) === canonical(want), what, `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** Fatal stops the scenario: later steps depend on what failed. */
class Fatal extends Error {}

function must<T>(value: T | undefined, what: string, detail?: unknown): T {
  if (value === undefined) {
    check(false, what, detail);
    throw new Fatal(what);
  }
  check(true, what);
  return value;
}

function env(name: string, fallback?: string): string {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === "") {
    console.error(`partner: environment variable ${name} is required`);
    process.exit(2);
  }
  return v;
}

function intEnv(name: string, fallback: number): number {
  const raw = env(name, String(fallback));
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`partner: ${name}=${raw} is not a non-negative integer`);
    process.exit(2);
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// Clients.

const baseUrl = env("CHARGENET_URL").replace(/\/+$/, "");
const apiKey = env("CHARGENET_API_KEY");
const expectedLocations = intEnv("CHARGENET_LOCATIONS", 120);
const expectedEvses = intEnv("CHARGENET_EVSES", 40);
const timeoutMs = intEnv("CHARGENET_TIMEOUT_MS", 10_000);

let requests = 0;

/** Every response, success or not, must carry X-Request-Id (contract: Errors). */
const requestIdCheck: Middleware = {
  onResponse({ request, response }) {
    requests++;
    if (!response.headers.get("X-Request-Id")) {
      check(false, `${request.method} ${new URL(request.url).pathname} carries X-Request-Id`, `status ${response.status}`);
    }
  },
};

function newClient(authorization?: string) {
  const client = createClient<paths>({
    baseUrl,
    headers: authorization === undefined ? {} : { Authorization: authorization },
    fetch: (request: Request) => fetch(request, { signal: AbortSignal.timeout(timeoutMs) }),
  });
  client.use(requestIdCheck);
  return client;
}

const api = newClient(`Bearer ${apiKey}`);
const anonymous = newClient();

/** Checks an error answer against the documented Error schema and X-Request-Id. */
function checkError(
  what: string,
  response: Response,
  body: ApiError | undefined,
  status: number,
  code: string,
  param?: string,
): void {
  equal(response.status, status, `${what}: status`);
  if (!check(body !== undefined && typeof body === "object", `${what}: JSON Error body`, body)) return;
  const e = body as ApiError;
  equal(e.code, code, `${what}: code`);
  if (param !== undefined) equal(e.param, param, `${what}: param`);
  check(typeof e.message === "string" && e.message.length > 0, `${what}: message is a non-empty string`, e.message);
  const rid = response.headers.get("X-Request-Id");
  check(typeof e.requestId === "string" && e.requestId !== "" && e.requestId === rid, `${what}: requestId equals X-Request-Id`, {
    requestId: e.requestId,
    header: rid,
  });
  const extra = Object.keys(e).filter((k) => !["code", "message", "param", "requestId"].includes(k));
  equal(extra, [], `${what}: no undocumented Error fields`);
}

function checkPagination(what: string, p: Pagination, first: boolean): void {
  equal(p.has_more, p.next_cursor !== null, `${what}: has_more is true exactly when next_cursor is set`);
  if (first) equal(p.previous_cursor, null, `${what}: first page has no previous_cursor`);
  else check(typeof p.previous_cursor === "string" && p.previous_cursor !== "", `${what}: previous_cursor is set`, p.previous_cursor);
}

// ---------------------------------------------------------------------------------------
// Response headers: X-Request-Id and the X-RateLimit-* headers are declared on every
// response of the contract. openapi-fetch hands back the Fetch Response; the types of the
// declared headers come from the generated schema, and the compile-time checks below fail
// `tsc` if an operation this program uses stops declaring them.

type Responses<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: infer R } ? R : never;
type DeclaredHeaders<P extends keyof paths, M extends keyof paths[P], S extends keyof Responses<P, M>> =
  Responses<P, M>[S] extends { headers: infer H } ? H : never;

/** The headers every answer to an accepted API key carries, typed as the contract declares them. */
interface Meta {
  requestId: components["headers"]["XRequestId"];
  limit: components["headers"]["XRateLimitLimit"];
  remaining: components["headers"]["XRateLimitRemaining"];
  reset: components["headers"]["XRateLimitReset"];
}
type MetaHeaders = {
  "X-Request-Id": Meta["requestId"];
  "X-RateLimit-Limit": Meta["limit"];
  "X-RateLimit-Remaining": Meta["remaining"];
  "X-RateLimit-Reset": Meta["reset"];
};
/** true when the operation's response declares the Meta headers with their types. */
type DeclaresMeta<H> = H extends MetaHeaders ? true : false;
export const declared: Record<string, true> = {
  putLocation201: true satisfies DeclaresMeta<DeclaredHeaders<"/v1/locations/{id}", "put", 201>>,
  putLocation200: true satisfies DeclaresMeta<DeclaredHeaders<"/v1/locations/{id}", "put", 200>>,
  deleteLocation200: true satisfies DeclaresMeta<DeclaredHeaders<"/v1/locations/{id}", "delete", 200>>,
  createEvse201: true satisfies DeclaresMeta<DeclaredHeaders<"/v2/evses", "post", 201>>,
  updateEvse200: true satisfies DeclaresMeta<DeclaredHeaders<"/v2/evses/{uid}", "patch", 200>>,
  removeEvse200: true satisfies DeclaresMeta<DeclaredHeaders<"/v2/evses/{uid}", "delete", 200>>,
  createConnector201: true satisfies DeclaresMeta<DeclaredHeaders<"/v2/evses/{uid}/connectors", "post", 201>>,
  deleteConnector200: true satisfies DeclaresMeta<DeclaredHeaders<"/v2/evses/{uid}/connectors/{connectorId}", "delete", 200>>,
};
/** The ETag, Location and Idempotent-Replayed headers of createEvse's 201, as declared. */
type CreatedHeaders = Pick<DeclaredHeaders<"/v2/evses", "post", 201>, "ETag" | "Location" | "Idempotent-Replayed">;

/** Reads and checks the Meta headers of an answer: present, and integers where declared. */
function meta(what: string, response: Response): Meta | undefined {
  const h = response.headers;
  const int = (name: keyof MetaHeaders): number | undefined => {
    const raw = h.get(name);
    const n = raw === null ? NaN : Number(raw);
    return check(raw !== null && Number.isInteger(n) && n >= 0, `${what}: ${name} is a non-negative integer`, raw) ? n : undefined;
  };
  const requestId = h.get("X-Request-Id");
  check(requestId !== null && requestId !== "", `${what}: X-Request-Id`, requestId);
  const limit = int("X-RateLimit-Limit");
  const remaining = int("X-RateLimit-Remaining");
  const reset = int("X-RateLimit-Reset");
  if (requestId === null || limit === undefined || remaining === undefined || reset === undefined) return undefined;
  check(remaining < limit, `${what}: X-RateLimit-Remaining (${remaining}) is below X-RateLimit-Limit (${limit})`);
  return { requestId, limit, remaining, reset };
}

/** Reads the declared headers of a creation answer. */
function created(response: Response): Partial<CreatedHeaders> {
  const out: Partial<CreatedHeaders> = {};
  const etag = response.headers.get("ETag");
  if (etag !== null) out.ETag = etag;
  const location = response.headers.get("Location");
  if (location !== null) out.Location = location;
  if (response.headers.get("Idempotent-Replayed") === "true") out["Idempotent-Replayed"] = "true";
  return out;
}

// ---------------------------------------------------------------------------------------
// Steps.

interface Page<T> {
  cursor: string | undefined;
  items: T[];
  pagination: Pagination;
}

async function walkLocations(limit: number): Promise<Page<Location>[]> {
  console.log(`GET /v1/locations: every page, limit ${limit}, following next_cursor`);
  const pages: Page<Location>[] = [];
  let cursor: string | undefined;
  const maxPages = Math.ceil(expectedLocations / limit) + 5;
  for (;;) {
    const { data, error, response } = await api.GET("/v1/locations", {
      params: { query: cursor === undefined ? { limit } : { limit, cursor } },
    });
    const page = must(data, `page ${pages.length + 1}: 200 with a LocationPage`, error ?? response.status);
    check(page.data.length <= limit, `page ${pages.length + 1}: at most ${limit} items`, page.data.length);
    checkPagination(`page ${pages.length + 1}`, page.pagination, pages.length === 0);
    pages.push({ cursor, items: page.data, pagination: page.pagination });
    if (page.pagination.next_cursor === null) break;
    cursor = page.pagination.next_cursor;
    if (pages.length > maxPages) {
      check(false, `the walk ends within ${maxPages} pages`);
      throw new Fatal("endless walk");
    }
  }
  const ids = pages.flatMap((p) => p.items.map((l) => l.id));
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  const dupes = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  equal(dupes, [], "every location id appears at most once");
  equal(ids.length, expectedLocations, `the walk returns ${expectedLocations} locations`);
  equal(seen.size, expectedLocations, `the walk returns ${expectedLocations} distinct ids`);
  const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  equal(ids, sorted, "locations come in ascending id order");
  check(pages.length >= 2, "the walk spans several pages", pages.length);
  const last = pages[pages.length - 1];
  if (last) equal(last.pagination.has_more, false, "last page: has_more is false");
  return pages;
}

async function walkBack(pages: Page<Location>[], limit: number): Promise<void> {
  console.log("GET /v1/locations: back from the last page, following previous_cursor");
  let current = pages[pages.length - 1];
  for (let i = pages.length - 2; i >= 0 && current; i--) {
    const prev = current.pagination.previous_cursor;
    if (prev === null) {
      check(false, `page ${i + 2} has a previous_cursor`);
      return;
    }
    const { data, error, response } = await api.GET("/v1/locations", {
      params: { query: { limit, cursor: prev } },
    });
    const page = must(data, `previous of page ${i + 2}: 200`, error ?? response.status);
    const want = pages[i];
    if (!want) return;
    equal(
      page.data.map((l) => l.id),
      want.items.map((l) => l.id),
      `previous of page ${i + 2} is page ${i + 1}`,
    );
    checkPagination(`previous of page ${i + 2}`, page.pagination, i === 0);
    current = { cursor: prev, items: page.data, pagination: page.pagination };
  }
}

async function walkEvses(): Promise<EVSE[]> {
  console.log("GET /v2/evses: every page, limit 7");
  const all: EVSE[] = [];
  let cursor: string | undefined;
  for (let n = 1; n < 100; n++) {
    const r = await api.GET("/v2/evses", {
      params: { query: cursor === undefined ? { limit: 7 } : { limit: 7, cursor } },
    });
    const data = r.data;
    if (data === undefined) {
      check(false, `EVSE page ${n}: 200`, { status: r.response.status, error: r.error });
      return all;
    }
    all.push(...data.data);
    if (data.pagination.next_cursor === null) break;
    cursor = data.pagination.next_cursor;
  }
  const uids = all.map((e) => e.uid);
  equal(new Set(uids).size, uids.length, "every EVSE uid appears once");
  equal(uids.length, expectedEvses, `the walk returns ${expectedEvses} EVSEs`);
  equal(uids, [...uids].sort((a, b) => a - b), "EVSEs come in ascending uid order");
  return all;
}

function connectorOf(evse: EVSE, id: number): Connector | undefined {
  return evse.connectors.find((c) => c.id === id);
}

async function patchAndReadBack(uid: number, connectorId: number): Promise<void> {
  console.log(`PATCH /v2/evses/${uid}/connectors/${connectorId}, then GET /v2/evses/${uid}`);
  const before = await api.GET("/v2/evses/{uid}", { params: { path: { uid } } });
  const evse = must(before.data, `GET /v2/evses/${uid}: 200`, before.error ?? before.response.status);
  const etag = must(before.response.headers.get("ETag") ?? undefined, `GET /v2/evses/${uid}: ETag header`);
  const old = must(connectorOf(evse, connectorId), `EVSE ${uid} has connector ${connectorId}`);
  const power = old.maxElectricPower >= 4000 ? old.maxElectricPower - 1 : old.maxElectricPower + 1;

  const patched = await api.PATCH("/v2/evses/{uid}/connectors/{connectorId}", {
    params: { path: { uid, connectorId }, header: { "If-Match": etag } },
    body: { maxElectricPower: power },
  });
  const after = must(patched.data, `PATCH maxElectricPower ${old.maxElectricPower} -> ${power}: 200`, patched.error ?? patched.response.status);
  const newTag = patched.response.headers.get("ETag");
  check(newTag !== null && newTag !== etag, "PATCH answers a new ETag", { before: etag, after: newTag });
  equal(connectorOf(after, connectorId)?.maxElectricPower, power, "PATCH answer carries the new maxElectricPower");

  const read = await api.GET("/v2/evses/{uid}", { params: { path: { uid } } });
  const again = must(read.data, `GET /v2/evses/${uid} after PATCH: 200`, read.error ?? read.response.status);
  const got = connectorOf(again, connectorId);
  equal(got?.maxElectricPower, power, "read back: maxElectricPower changed");
  equal({ ...got, maxElectricPower: old.maxElectricPower }, old, "read back: the other connector fields are unchanged");
  equal(read.response.headers.get("ETag"), newTag, "read back: ETag equals the PATCH answer's ETag");
  check(/^"[^"]*"$/.test(read.response.headers.get("ETag") ?? ""), "read back: ETag is a strong entity tag", read.response.headers.get("ETag"));

  // A stale If-Match is refused with 412 and changes nothing.
  const stale = await api.PATCH("/v2/evses/{uid}/connectors/{connectorId}", {
    params: { path: { uid, connectorId }, header: { "If-Match": etag } },
    body: { maxElectricPower: power + 0.5 },
  });
  checkError("PATCH with the stale If-Match", stale.response, stale.error, 412, "precondition_failed", "If-Match");

  // A value out of range is refused with the documented 400 and changes nothing.
  console.log(`PATCH /v2/evses/${uid}/connectors/${connectorId} {"maxVoltage": 99999}`);
  const bad = await api.PATCH("/v2/evses/{uid}/connectors/{connectorId}", {
    params: { path: { uid, connectorId } },
    body: { maxVoltage: 99999 },
  });
  checkError("PATCH maxVoltage 99999", bad.response, bad.error, 400, "invalid_body", "maxVoltage");
  const unchanged = await api.GET("/v2/evses/{uid}", { params: { path: { uid } } });
  equal(unchanged.response.headers.get("ETag"), newTag, "rejected PATCHes change nothing (same ETag)");
  equal(unchanged.data ? connectorOf(unchanged.data, connectorId) : undefined, got, "rejected PATCHes change nothing (same connector)");
}

async function errors(): Promise<void> {
  console.log("errors: 403 without a key, 404 for unknown resources");
  const noKey = await anonymous.GET("/v1/locations");
  checkError("GET /v1/locations without a key", noKey.response, noKey.error, 403, "unauthorized", "Authorization");
  const noKeyEvse = await anonymous.GET("/v2/evses/{uid}", { params: { path: { uid: 1001 } } });
  checkError("GET /v2/evses/1001 without a key", noKeyEvse.response, noKeyEvse.error, 403, "unauthorized", "Authorization");
  const wrongKey = newClient("Bearer not-a-valid-key-0123456789");
  const wrong = await wrongKey.GET("/emsp/v1/webhooks/event_types");
  checkError("GET /emsp/v1/webhooks/event_types with an unknown key", wrong.response, wrong.error, 403, "unauthorized", "Authorization");

  const missing = await api.GET("/v2/evses/{uid}", { params: { path: { uid: 999999 } } });
  checkError("GET /v2/evses/999999", missing.response, missing.error, 404, "not_found", "uid");
  const missingLoc = await api.GET("/v1/locations/{id}", { params: { path: { id: "LOC-NOPE" } } });
  checkError("GET /v1/locations/LOC-NOPE", missingLoc.response, missingLoc.error, 404, "not_found");
  const missingConn = await api.PATCH("/v2/evses/{uid}/connectors/{connectorId}", {
    params: { path: { uid: 999999, connectorId: 1 } },
    body: { maxAmperage: 32 },
  });
  checkError("PATCH /v2/evses/999999/connectors/1", missingConn.response, missingConn.error, 404, "not_found");
}

async function readOne(first: Location | undefined): Promise<void> {
  console.log("GET /v1/locations/{id} and GET /emsp/v1/webhooks/event_types");
  if (first) {
    const one = await api.GET("/v1/locations/{id}", { params: { path: { id: first.id } } });
    equal(one.data, first, `GET /v1/locations/${first.id} equals the listed location`);
  }
  const types = await api.GET("/emsp/v1/webhooks/event_types");
  const list = must(types.data, "GET /emsp/v1/webhooks/event_types: 200", types.error ?? types.response.status);
  check(list.event_types.length > 0, "the event type catalogue is not empty", list.event_types.length);
  for (const t of list.event_types) {
    equal(t.latest, t.api_versions[t.api_versions.length - 1], `event type ${t.type}: latest is the last api_version`);
  }
}

async function webhooks(): Promise<void> {
  console.log("webhook subscriptions: create, read, list, change, rotate, deliveries, delete");
  const created = await api.POST("/emsp/v1/webhooks", {
    body: {
      url: "https://partner.example.com/hooks/chargenet",
      description: "partner proof",
      event_types: [{ type: "evse.connector.updated" }, { type: "evse.status.changed", api_version: "1.0" }],
    },
  });
  const hook: WebhookWithSecret = must(created.data, "POST /emsp/v1/webhooks: 201", created.error ?? created.response.status);
  equal(created.response.status, 201, "created answers 201");
  check(/^whsec_[A-Za-z0-9+/]{43}=$/.test(hook.secret), "the secret is whsec_ + base64 of 32 bytes", hook.secret);
  equal(created.response.headers.get("Location"), `/emsp/v1/webhooks/${hook.id}`, "Location names the new subscription");
  equal(hook.event_types.map((e) => `${e.type}@${e.api_version}`), ["evse.connector.updated@1.1", "evse.status.changed@1.0"],
    "versions are resolved (latest when absent)");
  const path = { params: { path: { webhookId: hook.id } } };

  const read = await api.GET("/emsp/v1/webhooks/{webhookId}", path);
  const got: Webhook = must(read.data, "GET /emsp/v1/webhooks/{webhookId}: 200", read.error ?? read.response.status);
  check(!("secret" in got), "the secret is not shown again");

  const list = await api.GET("/emsp/v1/webhooks", { params: { query: { limit: 100 } } });
  const page = must(list.data, "GET /emsp/v1/webhooks: 200", list.error ?? list.response.status);
  check(page.data.some((w) => w.id === hook.id), "the list holds the new subscription");

  const ping = await api.POST("/emsp/v1/webhooks/{webhookId}/test", path);
  equal(ping.response.status, 202, "POST .../test answers 202");
  check(/^evt_[0-9A-Za-z]{26}$/.test(ping.data?.id ?? ""), "the test answers the ping's event id", ping.data);
  const replay = await api.POST("/emsp/v1/webhooks/{webhookId}/replay", { ...path, body: { since: new Date(Date.now() - 3_600_000).toISOString() } });
  equal(replay.response.status, 202, "POST .../replay answers 202");
  check(Number.isInteger(replay.data?.queued) && (replay.data?.queued ?? -1) >= 0, "the replay answers how many it queued", replay.data);
  const unsubscribed = await api.POST("/emsp/v1/webhooks/{webhookId}/replay", { ...path, body: { since: new Date().toISOString(), types: ["location.deleted"] } });
  checkError("replay of a type not subscribed", unsubscribed.response, unsubscribed.error, 400, "invalid_body", "types[0]");

  const paused = await api.PATCH("/emsp/v1/webhooks/{webhookId}", { ...path, body: { enabled: false } });
  equal(must(paused.data, "PATCH /emsp/v1/webhooks/{webhookId}: 200", paused.error).enabled, false, "enabled: false pauses it");
  const disabledPing = await api.POST("/emsp/v1/webhooks/{webhookId}/test", path);
  checkError("test of a disabled webhook", disabledPing.response, disabledPing.error, 409, "webhook_disabled");

  const bad = await api.POST("/emsp/v1/webhooks", {
    body: { url: "http://10.0.0.1/hooks", event_types: [{ type: "evse.connector.updated" }] },
  });
  equal(bad.response.status, 400, "a private http URL is refused");
  equal(bad.error?.param, "url", "the refusal names url");

  const rotated = await api.POST("/emsp/v1/webhooks/{webhookId}/secret/rotate", path);
  const r = must(rotated.data, "POST .../secret/rotate: 200", rotated.error ?? rotated.response.status);
  check(r.secret !== hook.secret, "rotation gives a new secret");

  const deliveries = await api.GET("/emsp/v1/webhooks/{webhookId}/deliveries", path);
  const d = must(deliveries.data, "GET .../deliveries: 200", deliveries.error ?? deliveries.response.status);
  check(Array.isArray(d.data), "deliveries is a page");

  const del = await api.DELETE("/emsp/v1/webhooks/{webhookId}", path);
  equal(del.response.status, 204, "DELETE answers 204");
  const after = await api.GET("/emsp/v1/webhooks/{webhookId}", path);
  equal(after.response.status, 404, "a deleted subscription is gone");
}

/** A new location, an EVSE at it with a connector added and deleted, then both removed. */
async function lifecycle(): Promise<void> {
  const stamp = Date.now().toString(36).toUpperCase();
  const id = `LOC-TS-${stamp}`;
  console.log(`lifecycle: PUT /v1/locations/${id}, POST /v2/evses, connectors, PATCH, DELETE`);
  const locPath = { params: { path: { id } } };
  const input: LocationInput = {
    name: "Partner Depot",
    address: "Hafenstraße 1",
    city: "Hamburg",
    postalCode: "20457",
    country: "DEU",
    coordinates: { latitude: 53.5413, longitude: 9.9842 },
    timeZone: "Europe/Berlin",
  };

  // PUT creates (201 + Location), the same PUT again changes nothing (200).
  const put = await api.PUT("/v1/locations/{id}", { ...locPath, body: input });
  const loc = must(put.data, `PUT /v1/locations/${id}: success`, put.error ?? put.response.status);
  equal(put.response.status, 201, "PUT of a new id answers 201");
  equal(put.response.headers.get("Location"), `/v1/locations/${id}`, "201 Location names the new location");
  equal({ ...loc, lastUpdated: "" }, { ...input, id, evseUids: [], lastUpdated: "", version: 1 }, "the location holds the fields sent, no EVSEs, at version 1");
  const first = meta("PUT /v1/locations", put.response);
  const again = await api.PUT("/v1/locations/{id}", { ...locPath, body: input });
  equal(again.response.status, 200, "the same PUT again answers 200");
  equal(again.data?.lastUpdated, loc.lastUpdated, "an unchanged PUT leaves lastUpdated");
  const second = meta("PUT /v1/locations again", again.response);
  if (first && second) {
    check(second.requestId !== first.requestId, "each answer has its own X-Request-Id", [first.requestId, second.requestId]);
    equal(second.limit, first.limit, "X-RateLimit-Limit is the same on both answers");
    check(second.remaining < first.remaining || second.reset > first.reset, "X-RateLimit-Remaining counts down within a window", [first, second]);
  }

  // POST /v2/evses with an Idempotency-Key: 201, ETag, Location; a replay creates nothing.
  const key = crypto.randomUUID();
  const connector: ConnectorCreate = {
    standard: "IEC_62196_T2",
    format: "SOCKET",
    powerType: "AC_3_PHASE",
    maxElectricPower: 22,
    maxAmperage: 32,
    maxVoltage: 400,
    tariffIds: ["AC-STANDARD"],
  };
  const evseBody: EVSECreate = {
    evseId: `DE*TSP*E${stamp}*1`,
    chargeboxId: 7001,
    locationId: id,
    connectors: [{ id: 1, ...connector }],
  };
  const post = await api.POST("/v2/evses", { params: { header: { "Idempotency-Key": key } }, body: evseBody });
  const evse = must(post.data, "POST /v2/evses: 201", post.error ?? post.response.status);
  equal(post.response.status, 201, "POST /v2/evses answers 201");
  const h = created(post.response);
  equal(h.Location, `/v2/evses/${evse.uid}`, "201 Location names the new EVSE");
  check(/^"[^"]*"$/.test(h.ETag ?? ""), "201 carries a strong ETag", h.ETag);
  equal(h["Idempotent-Replayed"], undefined, "a first answer is not marked replayed");
  equal(evse.status, "PLANNED", "a new EVSE is PLANNED");
  equal([evse.evseId, evse.chargeboxId, evse.locationId], [evseBody.evseId, 7001, id], "the EVSE holds the fields sent");
  const want: Connector = { id: 1, ...connector, tariffIds: connector.tariffIds ?? [] };
  equal(evse.connectors, [want], "the EVSE holds the connector sent");
  meta("POST /v2/evses", post.response);

  const replay = await api.POST("/v2/evses", { params: { header: { "Idempotency-Key": key } }, body: evseBody });
  equal(replay.response.status, 201, "a replay with the same key answers 201 again");
  equal(created(replay.response)["Idempotent-Replayed"], "true", "the replay says Idempotent-Replayed: true");
  equal(replay.data, evse, "the replay answers the same EVSE");
  equal(created(replay.response).ETag, h.ETag, "the replay answers the same ETag");
  meta("POST /v2/evses replayed", replay.response);
  const inLoc = await api.GET("/v1/locations/{id}", locPath);
  equal(inLoc.data?.evseUids, [evse.uid], "the location holds one EVSE: the replay created nothing");

  const reused = await api.POST("/v2/evses", {
    params: { header: { "Idempotency-Key": key } },
    body: { ...evseBody, chargeboxId: 7002 },
  });
  checkError("POST /v2/evses with a used key and another body", reused.response, reused.error, 422, "idempotency_key_reused", "Idempotency-Key");

  // Add a connector (id 2) conditionally, then delete it.
  const uidPath = { uid: evse.uid };
  const dc: ConnectorCreate = {
    standard: "IEC_62196_T2_COMBO",
    format: "CABLE",
    powerType: "DC",
    maxElectricPower: 150,
    maxAmperage: 375,
    maxVoltage: 920,
  };
  const etag1 = h.ETag ?? "*";
  const addConn = await api.POST("/v2/evses/{uid}/connectors", {
    params: { path: uidPath, header: { "Idempotency-Key": crypto.randomUUID(), "If-Match": etag1 } },
    body: dc,
  });
  const withDc = must(addConn.data, "POST /v2/evses/{uid}/connectors: 201", addConn.error ?? addConn.response.status);
  equal(addConn.response.status, 201, "adding a connector answers 201");
  equal(withDc.connectors.map((c) => c.id), [1, 2], "the new connector gets id 2");
  equal(connectorOf(withDc, 2), { id: 2, ...dc, tariffIds: [] }, "the new connector holds the fields sent");
  const etag2 = addConn.response.headers.get("ETag");
  check(etag2 !== null && etag2 !== etag1, "adding a connector answers a new ETag", [etag1, etag2]);
  meta("POST /v2/evses/{uid}/connectors", addConn.response);
  const staleAdd = await api.POST("/v2/evses/{uid}/connectors", {
    params: { path: uidPath, header: { "Idempotency-Key": crypto.randomUUID(), "If-Match": etag1 } },
    body: dc,
  });
  checkError("POST /v2/evses/{uid}/connectors with a stale If-Match", staleAdd.response, staleAdd.error, 412, "precondition_failed", "If-Match");

  const delConn = await api.DELETE("/v2/evses/{uid}/connectors/{connectorId}", {
    params: { path: { ...uidPath, connectorId: 2 }, header: { "If-Match": etag2 ?? "*" } },
  });
  const without = must(delConn.data, "DELETE /v2/evses/{uid}/connectors/2: 200", delConn.error ?? delConn.response.status);
  check(typeof connectorOf(without, 2)?.deletedAt === "string", "the deleted connector has deletedAt", connectorOf(without, 2));
  equal(connectorOf(without, 1)?.deletedAt, undefined, "connector 1 is untouched");
  meta("DELETE /v2/evses/{uid}/connectors/2", delConn.response);
  const noConn = await api.DELETE("/v2/evses/{uid}/connectors/{connectorId}", { params: { path: { ...uidPath, connectorId: 9 } } });
  checkError("DELETE /v2/evses/{uid}/connectors/9", noConn.response, noConn.error, 404, "not_found");

  // Commission it (PLANNED -> AVAILABLE); back to PLANNED is refused.
  const etag3 = delConn.response.headers.get("ETag") ?? "*";
  const commission = await api.PATCH("/v2/evses/{uid}", {
    params: { path: uidPath, header: { "If-Match": etag3 } },
    body: { status: "AVAILABLE" },
  });
  const live = must(commission.data, "PATCH /v2/evses/{uid} status AVAILABLE: 200", commission.error ?? commission.response.status);
  equal(live.status, "AVAILABLE", "the EVSE is AVAILABLE");
  meta("PATCH /v2/evses/{uid}", commission.response);
  const back = await api.PATCH("/v2/evses/{uid}", { params: { path: uidPath }, body: { status: "PLANNED" } });
  checkError("PATCH /v2/evses/{uid} AVAILABLE -> PLANNED", back.response, back.error, 409, "invalid_transition", "status");

  // The location cannot go while it holds an EVSE that is not removed.
  const inUse = await api.DELETE("/v1/locations/{id}", locPath);
  checkError(`DELETE /v1/locations/${id} with a live EVSE`, inUse.response, inUse.error, 409, "location_in_use");

  // Remove the EVSE, then delete the location.
  const removed = await api.DELETE("/v2/evses/{uid}", { params: { path: uidPath } });
  const gone = must(removed.data, "DELETE /v2/evses/{uid}: 200", removed.error ?? removed.response.status);
  equal(gone.status, "REMOVED", "the EVSE is REMOVED");
  meta("DELETE /v2/evses/{uid}", removed.response);
  const late = await api.PATCH("/v2/evses/{uid}", { params: { path: uidPath }, body: { status: "AVAILABLE" } });
  checkError("PATCH a REMOVED EVSE", late.response, late.error, 409, "evse_removed");

  const delLoc = await api.DELETE("/v1/locations/{id}", locPath);
  const deleted = must(delLoc.data, `DELETE /v1/locations/${id}: 200`, delLoc.error ?? delLoc.response.status);
  check(typeof deleted.deletedAt === "string", "the deleted location has deletedAt", deleted.deletedAt);
  meta("DELETE /v1/locations", delLoc.response);
  const read = await api.GET("/v1/locations/{id}", locPath);
  equal(read.data, deleted, "a deleted location stays readable");
  const reuse = await api.PUT("/v1/locations/{id}", { ...locPath, body: input });
  checkError("PUT on a deleted location", reuse.response, reuse.error, 409, "location_deleted");
}


// ---------------------------------------------------------------------------------------
// Staying in sync: a full read, then the change lists from their resume cursors, then a
// catch-up from the event log. Each copy must equal a fresh full read of the service.

/** Copy is a partner's copy of the network. */
interface Copy {
  evses: Map<number, EVSE>;
  locations: Map<string, Location>;
}

async function fullRead(): Promise<Copy> {
  const copy: Copy = { evses: new Map(), locations: new Map() };
  let cursor: string | undefined;
  for (let n = 0; n < 1000; n++) {
    const r = await api.GET("/v2/evses", { params: { query: cursor === undefined ? { limit: 100 } : { limit: 100, cursor } } });
    const page = must(r.data, "full read: GET /v2/evses 200", r.error ?? r.response.status);
    for (const e of page.data) copy.evses.set(e.uid, e);
    if (page.pagination.next_cursor === null) break;
    cursor = page.pagination.next_cursor;
  }
  let locationCursor: string | undefined;
  for (let n = 0; n < 1000; n++) {
    const query = locationCursor === undefined ? { limit: 100 } : { limit: 100, cursor: locationCursor };
    const r = await api.GET("/v1/locations", { params: { query } });
    const page = must(r.data, "full read: GET /v1/locations 200", r.error ?? r.response.status);
    for (const l of page.data) copy.locations.set(l.id, l);
    if (page.pagination.next_cursor === null) break;
    locationCursor = page.pagination.next_cursor;
  }
  return copy;
}

/** differences lists the keys whose items differ between two maps (missing, extra, or not equal). */
function differences<K, V>(got: Map<K, V>, want: Map<K, V>): string[] {
  const out: string[] = [];
  for (const [k, v] of want) {
    if (!got.has(k)) out.push(`${String(k)} missing`);
    else if (canonical(got.get(k)) !== canonical(v)) out.push(`${String(k)} differs: ${JSON.stringify(got.get(k))} != ${JSON.stringify(v)}`);
  }
  for (const k of got.keys()) if (!want.has(k)) out.push(`${String(k)} extra`);
  return out;
}

function sameCopy(got: Copy, want: Copy, what: string): void {
  const e = differences(got.evses, want.evses);
  check(e.length === 0 && got.evses.size > 0, `${what}: every EVSE equals the server's (${want.evses.size})`, e.slice(0, 5));
  const l = differences(got.locations, want.locations);
  check(l.length === 0 && got.locations.size > 0, `${what}: every location equals the server's (${want.locations.size})`, l.slice(0, 5));
}

/** Checks the pagination of a change list or event log page: forward only, resume_cursor on every page. */
function checkChangePage(what: string, p: Pagination): string {
  check(p.previous_cursor === null, `${what}: previous_cursor is null (forward only)`, p.previous_cursor);
  check((p.next_cursor === null) === !p.has_more, `${what}: next_cursor is null exactly when has_more is false`, p);
  return must(p.resume_cursor ?? undefined, `${what}: resume_cursor is set`, p);
}

/** Reads a change list from cursor (or its start) to its current end; returns the items and the last resume_cursor. */
async function changes<T>(
  what: string,
  read: (cursor: string | undefined) => Promise<{ data?: { data: T[]; pagination: Pagination }; error?: unknown; response: Response }>,
  cursor: string | undefined,
): Promise<{ items: T[]; resume: string }> {
  const items: T[] = [];
  for (let n = 1; n < 1000; n++) {
    const r = await read(cursor);
    const page = must(r.data, `${what} page ${n}: 200`, r.error ?? r.response.status);
    items.push(...page.data);
    const resume = checkChangePage(`${what} page ${n}`, page.pagination);
    if (!page.pagination.has_more) return { items, resume };
    cursor = page.pagination.next_cursor ?? undefined;
  }
  throw new Fatal(`${what}: the walk did not end`);
}

async function syncLoop(): Promise<void> {
  console.log("sync: a full read, changes since (resume_cursor), a catch-up from the event log");
  // A time before the full read: every change the full read may have missed is at or after it.
  const since = new Date(Date.now() - 2000).toISOString();
  const base = await fullRead();
  const byChanges: Copy = { evses: new Map(base.evses), locations: new Map(base.locations) };
  const byEvents: Copy = { evses: new Map(base.evses), locations: new Map(base.locations) };

  const evsesSince = (cursor: string | undefined) =>
    api.GET("/v2/evses", { params: { query: { updated_since: since, limit: 5, ...(cursor === undefined ? {} : { cursor }) } } });
  const locationsSince = (cursor: string | undefined) =>
    api.GET("/v1/locations", { params: { query: { updated_since: since, limit: 5, ...(cursor === undefined ? {} : { cursor }) } } });
  const eventsSince = (cursor: string | undefined) =>
    api.GET("/emsp/v1/events", { params: { query: { since, limit: 5, ...(cursor === undefined ? {} : { cursor }) } } });

  // The first reads from updated_since; what they return is applied (it may repeat the full read).
  // A deleted location leaves the copy, as it leaves the service's list (a REMOVED EVSE stays
  // in both, with its status).
  const apply = (copy: Copy, evses: EVSE[], locations: Location[]) => {
    for (const e of evses) copy.evses.set(e.uid, e);
    for (const l of locations) {
      if (typeof l.deletedAt === "string") copy.locations.delete(l.id);
      else copy.locations.set(l.id, l);
    }
  };
  let e0 = await changes("GET /v2/evses?updated_since", evsesSince, undefined);
  let l0 = await changes("GET /v1/locations?updated_since", locationsSince, undefined);
  let ev0 = await changes("GET /emsp/v1/events?since", eventsSince, undefined);
  apply(byChanges, e0.items, l0.items);

  // Changes made while the partner is not looking.
  const stamp = Date.now().toString(36).toUpperCase();
  const id = `LOC-SYNC-${stamp}`;
  const input: LocationInput = {
    name: "Sync Depot", address: "Kai 9", city: "Hamburg", postalCode: "20457", country: "DEU",
    coordinates: { latitude: 53.54, longitude: 9.98 }, timeZone: "Europe/Berlin",
  };
  must((await api.PUT("/v1/locations/{id}", { params: { path: { id } }, body: input })).data, `PUT /v1/locations/${id}`);
  const body: EVSECreate = {
    evseId: `DE*CNT*E${stamp}*1`, chargeboxId: 9300, locationId: id,
    connectors: [{ id: 1, standard: "IEC_62196_T2", format: "SOCKET", powerType: "AC_3_PHASE", maxElectricPower: 22, maxAmperage: 32, maxVoltage: 400, tariffIds: [] }],
  };
  const created = must((await api.POST("/v2/evses", { body })).data, "POST /v2/evses");
  const uid = created.uid;
  must((await api.PATCH("/v2/evses/{uid}/connectors/{connectorId}", { params: { path: { uid: 1002, connectorId: 1 } }, body: { maxElectricPower: 111 } })).data,
    "PATCH /v2/evses/1002/connectors/1");
  must((await api.PATCH("/v2/evses/{uid}", { params: { path: { uid } }, body: { status: "AVAILABLE" } })).data, `PATCH /v2/evses/${uid} (commission)`);
  // A demo EVSE moves to a new location and another charge box: evse.updated names its old
  // location only in previousLocationId, and that location's evseUids change too.
  const to = `LOC-MOVE-${stamp}`;
  must((await api.PUT("/v1/locations/{id}", { params: { path: { id: to } }, body: { ...input, name: "Sync Move" } })).data, `PUT /v1/locations/${to}`);
  const mover = must([...base.evses.values()].reverse().find((e) => e.status !== "REMOVED" && e.uid !== 1002), "a demo EVSE to move");
  const moved = must((await api.PATCH("/v2/evses/{uid}", { params: { path: { uid: mover.uid } }, body: { locationId: to, chargeboxId: 9301 } })).data,
    `PATCH /v2/evses/${mover.uid} (move)`);
  equal([moved.locationId, moved.chargeboxId], [to, 9301], "the moved EVSE is at its new location and charge box");
  must((await api.DELETE("/v2/evses/{uid}", { params: { path: { uid } } })).data, `DELETE /v2/evses/${uid}`);
  must((await api.DELETE("/v1/locations/{id}", { params: { path: { id } } })).data, `DELETE /v1/locations/${id}`);

  // Poll from the resume cursors.
  e0 = await changes("poll /v2/evses", evsesSince, e0.resume);
  l0 = await changes("poll /v1/locations", locationsSince, l0.resume);
  check(e0.items.some((e) => e.uid === uid && e.status === "REMOVED"), "the change list brings the removed EVSE", e0.items.map((e) => e.uid));
  check(l0.items.some((l) => l.id === id && typeof l.deletedAt === "string"), "the change list brings the deleted location", l0.items.map((l) => l.id));
  apply(byChanges, e0.items, l0.items);

  const again = await changes("poll /v2/evses again", evsesSince, e0.resume);
  equal(again.items.length, 0, "nothing changed since the last poll");
  const wrong = await api.GET("/v2/evses", { params: { query: { updated_since: new Date(Date.now() - 60_000).toISOString(), cursor: e0.resume } } });
  checkError("a resume_cursor with another updated_since", wrong.response, wrong.error, 400, "invalid_cursor");

  // The event log: which items changed; the partner reads them again.
  const ev = await changes("poll /emsp/v1/events", eventsSince, ev0.resume);
  const types = new Set(ev.items.map((e: LoggedEvent) => e.type));
  for (const t of ["location.created", "evse.created", "evse.connector.updated", "evse.status.changed", "evse.updated", "evse.removed", "location.deleted"]) {
    check(types.has(t), `the event log holds a ${t} event`, [...types]);
  }
  check(!types.has("webhook.ping"), "the event log holds no webhook.ping");
  const move = ev.items.find((e: LoggedEvent) => e.type === "evse.updated" && (e.data as Record<string, unknown>).uid === mover.uid);
  equal((move?.data as Record<string, unknown> | undefined)?.previousLocationId, mover.locationId, "evse.updated of the move names the location left");
  const touchedEvses = new Set<number>();
  const touchedLocations = new Set<string>();
  for (const e of [...ev0.items, ...ev.items]) {
    const d = e.data as Record<string, unknown>;
    if (e.type.startsWith("location.")) touchedLocations.add(String(d.id));
    if (e.type.startsWith("evse.")) {
      touchedEvses.add(Number(d.uid));
      if (typeof d.locationId === "string") touchedLocations.add(d.locationId); // its lastUpdated and evseUids move too
      // evse.updated of a move: the location the EVSE left changed too.
      if (e.type === "evse.updated" && typeof d.previousLocationId === "string") touchedLocations.add(d.previousLocationId);
    }
  }
  for (const u of touchedEvses) {
    const r = await api.GET("/v2/evses/{uid}", { params: { path: { uid: u } } });
    byEvents.evses.set(u, must(r.data, `GET /v2/evses/${u} after its event`, r.error));
  }
  for (const l of touchedLocations) {
    const r = await api.GET("/v1/locations/{id}", { params: { path: { id: l } } });
    apply(byEvents, [], [must(r.data, `GET /v1/locations/${l} after its event`, r.error)]);
  }
  const one = await api.GET("/emsp/v1/events/{eventId}", { params: { path: { eventId: ev.items[0]?.id ?? "evt_00000000000000000000000000" } } });
  equal(one.data?.id, ev.items[0]?.id, "GET /emsp/v1/events/{eventId} answers the event the log listed");
  const badType = await api.GET("/emsp/v1/events", { params: { query: { type: ["webhook.ping"] } } });
  checkError("type=webhook.ping", badType.response, badType.error, 400, "invalid_parameter");

  const server = await fullRead();
  sameCopy(byChanges, server, "the copy kept by change lists");
  sameCopy(byEvents, server, "the copy kept by the event log");
}

async function main(): Promise<void> {
  console.log(`partner scenario against ${baseUrl}`);
  try {
    const health = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    must(health.ok ? true : undefined, "the service is up (/healthz)", health.status);
    const limit = 17; // 120 locations: seven full pages and a short last one
    const pages = await walkLocations(limit);
    await walkBack(pages, limit);
    await walkEvses();
    await readOne(pages[0]?.items[0]);
    await patchAndReadBack(1002, 1);
    await errors();
    await webhooks();
    await lifecycle();
    await syncLoop();
  } catch (e) {
    if (!(e instanceof Fatal)) {
      failures.push(`unexpected exception: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
  }
  console.log(`\n${requests} requests made`);
  console.log(`partner: ${passed} passed, ${failures.length} failed`);
  if (failures.length > 0) {
    console.log("failed checks:");
    for (const f of failures) console.log(`  - ${f}`);
    process.exitCode = 1;
  }
}

await main();

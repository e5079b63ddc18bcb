// A charge box written on the npm package ocpp-rpc (2.2.1), with strictMode on: every
// call it sends, every answer it receives and every call it is sent is validated
// against the official OCPP JSON schemas the package carries. It drives a running
// `chargenet serve --ocpp-addr` through one session and exits 0 when everything held,
// 1 otherwise, printing what it did as JSON lines.
//
//   node scripts/ocpp-rpc-box.mjs WS_ENDPOINT IDENTITY PASSWORD PROTOCOL API_URL API_KEY
//
// WS_ENDPOINT is ws://HOST:PORT/ocpp; PROTOCOL is ocpp1.6 or ocpp2.0.1. The session:
// BootNotification, Heartbeat, a StatusNotification (Faulted) of the box's first
// connector, checked through the REST API (API_URL, API_KEY), Authorize, the start and
// the end of a transaction, MeterValues, DataTransfer; then the operator sets the box's
// second EVSE INOPERATIVE through the REST API and the box answers the
// ChangeAvailability it is sent, which the API then shows as Accepted.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../tools/node_modules/', import.meta.url));
const { RPCClient } = require('ocpp-rpc');

const [endpoint, identity, password, protocol, apiURL, apiKey] = process.argv.slice(2);
if (!apiKey || !['ocpp1.6', 'ocpp2.0.1'].includes(protocol)) {
  console.error('usage: ocpp-rpc-box.mjs WS_ENDPOINT IDENTITY PASSWORD ocpp1.6|ocpp2.0.1 API_URL API_KEY');
  process.exit(2);
}

const failures = [];
const log = (step, detail) => console.log(JSON.stringify({ protocol, step, ...detail }));
const fail = (step, why) => {
  failures.push(`${step}: ${why}`);
  log(step, { failed: why });
};
const check = (step, cond, why) => {
  if (!cond) fail(step, why);
};

async function api(method, path, body) {
  const res = await fetch(apiURL + path, {
    method,
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function until(what, timeoutMs, cond) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > deadline) {
      fail(what, `not within ${timeoutMs} ms`);
      return false;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const cli = new RPCClient({ endpoint, identity, password, protocols: [protocol], strictMode: true, reconnect: false });
cli.on('strictValidationFailure', (e) => fail('strict validation', `${e.outbound ? 'sent' : 'received'} ${e.isCall ? 'call' : 'response'} ${e.method}: ${e.error?.message}`));
cli.on('badMessage', (e) => fail('bad message', `${e.error?.message} in ${String(e.buffer).slice(0, 200)}`));

const asked = [];
cli.handle('ChangeAvailability', ({ params }) => {
  asked.push(params);
  log('ChangeAvailability received', { params });
  return { status: 'Accepted' };
});
cli.handle(({ method }) => {
  fail('unexpected call', method);
  throw new Error(`not handled: ${method}`);
});

const now = () => new Date().toISOString();
const v16 = protocol === 'ocpp1.6';

try {
  await cli.connect();
  log('connected', { identity });

  const boot = v16
    ? await cli.call('BootNotification', { chargePointVendor: 'ocpp-rpc', chargePointModel: 'strict box', firmwareVersion: '2.2.1' })
    : await cli.call('BootNotification', { reason: 'PowerUp', chargingStation: { vendorName: 'ocpp-rpc', model: 'strict box', firmwareVersion: '2.2.1' } });
  log('BootNotification', { answer: boot });
  check('BootNotification', boot.status === 'Accepted' && boot.interval > 0, `answer ${JSON.stringify(boot)}`);

  const hb = await cli.call('Heartbeat', {});
  check('Heartbeat', !Number.isNaN(Date.parse(hb.currentTime)), `answer ${JSON.stringify(hb)}`);

  const box = await api('GET', `/v2/chargeboxes/${identity}`);
  check('GET chargebox', box.status === 200 && box.body.connected === true && box.body.protocol === protocol &&
    box.body.boot?.vendor === 'ocpp-rpc', `${box.status} ${JSON.stringify(box.body)}`);
  const [first, second] = box.body.evseUids ?? [];

  if (v16) {
    await cli.call('StatusNotification', { connectorId: 1, errorCode: 'GroundFailure', status: 'Faulted', timestamp: now() });
  } else {
    await cli.call('StatusNotification', { timestamp: now(), connectorStatus: 'Faulted', evseId: 1, connectorId: 1 });
  }
  const evse = await api('GET', `/v2/evses/${first}`);
  check('StatusNotification', evse.body.status === 'OUTOFORDER', `EVSE ${first} is ${evse.body.status} once the CALLRESULT came`);
  log('StatusNotification', { evse: first, status: evse.body.status });

  if (v16) {
    const auth = await cli.call('Authorize', { idTag: 'TAG-0001' });
    check('Authorize', auth.idTagInfo?.status === 'Accepted', JSON.stringify(auth));
    const start = await cli.call('StartTransaction', { connectorId: 1, idTag: 'TAG-0001', meterStart: 0, timestamp: now() });
    check('StartTransaction', Number.isInteger(start.transactionId) && start.idTagInfo?.status === 'Accepted', JSON.stringify(start));
    await cli.call('MeterValues', { connectorId: 1, transactionId: start.transactionId,
      meterValue: [{ timestamp: now(), sampledValue: [{ value: '1200', measurand: 'Energy.Active.Import.Register', unit: 'Wh' }] }] });
    const stop = await cli.call('StopTransaction', { transactionId: start.transactionId, idTag: 'TAG-0001', meterStop: 1200, timestamp: now() });
    check('StopTransaction', stop.idTagInfo?.status === 'Accepted', JSON.stringify(stop));
  } else {
    const token = { idToken: 'TAG-0001', type: 'ISO14443' };
    const auth = await cli.call('Authorize', { idToken: token });
    check('Authorize', auth.idTokenInfo?.status === 'Accepted', JSON.stringify(auth));
    const started = await cli.call('TransactionEvent', { eventType: 'Started', timestamp: now(), triggerReason: 'Authorized', seqNo: 0,
      transactionInfo: { transactionId: 'T-0001' }, idToken: token, evse: { id: 1, connectorId: 1 } });
    check('TransactionEvent', started.idTokenInfo?.status === 'Accepted', JSON.stringify(started));
    await cli.call('MeterValues', { evseId: 1, meterValue: [{ timestamp: now(), sampledValue: [{ value: 1200 }] }] });
    await cli.call('TransactionEvent', { eventType: 'Ended', timestamp: now(), triggerReason: 'StopAuthorized', seqNo: 1,
      transactionInfo: { transactionId: 'T-0001', stoppedReason: 'Local' } });
  }
  const dt = await cli.call('DataTransfer', { vendorId: 'com.example.unknown', data: 'x' });
  check('DataTransfer', dt.status === 'UnknownVendorId', JSON.stringify(dt));

  const patch = await api('PATCH', `/v2/evses/${second}`, { status: 'INOPERATIVE' });
  check('PATCH INOPERATIVE', patch.status === 200, `${patch.status} ${JSON.stringify(patch.body)}`);
  if (await until('ChangeAvailability', 15000, () => asked.length > 0)) {
    const p = asked[0];
    check('ChangeAvailability', v16 ? p.type === 'Inoperative' : p.operationalStatus === 'Inoperative' && p.evse?.id === 2, JSON.stringify(p));
    await until('availability Accepted in the API', 10000, async () => {
      const b = await api('GET', `/v2/chargeboxes/${identity}`);
      return (b.body.availability ?? []).some((a) => a.evseUid === second && a.answer === 'Accepted');
    });
  }
  await cli.close({ code: 1000 });
  log('closed', {});
} catch (e) {
  fail('session', e.stack ?? String(e));
  await cli.close({ force: true }).catch(() => {});
}

if (failures.length > 0) {
  console.error(`ocpp-rpc-box (${protocol}): ${failures.length} failure(s):\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
log('PASS', {});

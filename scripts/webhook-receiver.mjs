// A webhook receiver on 127.0.0.1 that verifies every delivery with the npm
// `standardwebhooks` package (an implementation independent of the server's) and
// records what it received, one JSON line per request, in the file given as the first
// argument. It prints its port on stdout once listening.
//
// Each receiving path has a behaviour, chosen by its first segment:
//   /ok/...        answers 204
//   /flaky/...     answers 503 to the first two requests of each webhook-id, then 204
//   /gone/...      answers 410 Gone
//   /hang/...      holds the first request of each webhook-id open without answering
//                  (until the sender gives up or dies), then answers 204
// Secrets are registered per path with PUT /_secret/<path> (body: the secret), before
// deliveries arrive. A delivery whose signature does not verify is answered 401 and
// recorded with verified=false.
import { createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const require = createRequire(new URL('../tools/node_modules/', import.meta.url));
const { Webhook } = require('standardwebhooks');

const logFile = process.argv[2];
if (!logFile) {
  console.error('usage: webhook-receiver.mjs LOGFILE');
  process.exit(2);
}

const secrets = new Map(); // path -> secret
const seen = new Map(); // behaviour + webhook-id -> requests so far

function now() {
  return performance.timeOrigin + performance.now(); // milliseconds since the epoch, sub-ms
}

function record(entry) {
  appendFileSync(logFile, JSON.stringify(entry) + '\n');
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const receivedAt = now();
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url.split('?')[0];
    if (req.method === 'PUT' && path.startsWith('/_secret/')) {
      secrets.set(path.slice('/_secret'.length), body);
      res.writeHead(204).end();
      return;
    }
    const secret = secrets.get(path);
    const entry = {
      path,
      id: req.headers['webhook-id'] ?? '',
      timestamp: req.headers['webhook-timestamp'] ?? '',
      receivedAt,
      verified: false,
      error: '',
      type: '',
      eventTime: '',
      status: 0,
    };
    try {
      if (!secret) throw new Error(`no secret registered for ${path}`);
      const payload = new Webhook(secret).verify(body, req.headers);
      entry.verified = true;
      entry.type = payload.type;
      entry.eventTime = payload.timestamp;
      entry.data = payload.data;
    } catch (e) {
      entry.error = String(e && e.message ? e.message : e);
      entry.status = 401;
      record(entry);
      res.writeHead(401).end();
      return;
    }
    const behaviour = path.split('/')[1];
    const key = behaviour + ' ' + entry.id;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    switch (behaviour) {
      case 'flaky':
        entry.status = n <= 2 ? 503 : 204;
        break;
      case 'gone':
        entry.status = 410;
        break;
      case 'hang':
        if (n === 1) {
          entry.status = -1; // held open, never answered
          record(entry);
          return;
        }
        entry.status = 204;
        break;
      default:
        entry.status = 204;
    }
    record(entry);
    res.writeHead(entry.status).end();
  });
});

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  console.log(String(server.address().port));
});
process.on('SIGTERM', () => process.exit(0));

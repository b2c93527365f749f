// RatchetClient against a real `ratchet serve` (the binary from RATCHET_BIN,
// default ../../target/debug/ratchet from this file): `node --test clients/typescript/`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { RatchetClient, ServerError, isLoopback } from './ratchet.mjs';

const BIN = process.env.RATCHET_BIN || fileURLToPath(new URL('../../target/debug/ratchet', import.meta.url));
// Generous: a debug binary on a loaded two-core machine.
const READY_MS = 60_000;
const C1 = 'c1'.repeat(20);
const C2 = 'c2'.repeat(20);

/** @type {string} */ let dir;
/** @type {string} */ let store;
/** @type {import('node:child_process').ChildProcess} */ let server;
/** @type {string} */ let base;
/** @type {Record<string, { token: string, id: string }>} */ const tokens = {};
let serverLog = '';

/** @param {string[]} args */
function ratchet(...args) {
  return execFileSync(BIN, ['--store', store, '--json', ...args], { encoding: 'utf8', timeout: READY_MS });
}

/** @param {string} name @param {string[]} can */
function mint(name, can) {
  const doc = JSON.parse(ratchet('token', 'mint', ...can.flatMap((c) => ['--can', c]), '--session', `js-${name}`));
  tokens[name] = { token: doc.token, id: doc.id };
}

/** @param {string} name */
const client = (name) => new RatchetClient(base, tokens[name].token);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ratchet-js-'));
  store = join(dir, 's');
  ratchet('init');
  mint('record', ['record']);
  mint('reader', ['read']);
  mint('admin', ['admin', 'decide', 'read']);
  mint('all', ['record', 'decide', 'read', 'admin']);
  mint('doomed', ['read']); // revoked by the route check's DELETE
  server = spawn(BIN, ['--store', store, '--json', 'serve', '--tcp', '127.0.0.1:0', '--socket', join(dir, 's.sock')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The server logs every request on stderr: drained, its tail kept.
  server.stderr?.setEncoding('utf8').on('data', (d) => {
    serverLog = (serverLog + d).slice(-4000);
  });
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (server.stdout) });
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ratchet serve not ready in ${READY_MS} ms:\n${serverLog}`)), READY_MS);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line));
    });
    server.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ratchet serve exited (${code}) before it was ready:\n${serverLog}`));
    });
  });
  base = `http://${ready.tcp[0]}`;
});

after(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** @param {RatchetClient} c */
async function kinds(c) {
  return (await c.status()).overview.kinds;
}

/** @param {Promise<unknown>} p @param {number} status @param {string} kind */
async function refused(p, status, kind) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof ServerError, String(e));
    assert.equal(e.status, status, e.message);
    assert.equal(e.kind, kind);
    return true;
  });
}

test('health and the OpenAPI document need no token', async () => {
  const c = new RatchetClient(base);
  assert.equal((await c.health()).ok, true);
  assert.ok('/v1/decide' in (await c.openapi()).paths);
});

test('a recorded score is in the status', async () => {
  const rec = client('record');
  const answer = await rec.recordScore(C1, 't1', 'accuracy', 0.75, { scorerVersion: 'v1' });
  assert.equal(answer.receipts.length, 1);
  assert.equal(answer.ingest.scores, 1);
  const status = await client('reader').status();
  const commit = status.overview.commits.find((/** @type {any} */ x) => x.commit === C1);
  assert.ok(commit && commit.scores >= 1, JSON.stringify(status.overview));
  assert.ok(status.overview.scorers.some((/** @type {any} */ s) => s.scorer === 'accuracy'));
  const notes = (await kinds(client('reader'))).note ?? 0;
  const appended = await rec.appendEvents([{ kind: 'note', payload: { from: 'node' }, commit: C2 }]);
  assert.equal(appended.already_recorded, false);
  assert.equal((await kinds(client('reader'))).note, notes + 1);
});

test('a report is ingested', async () => {
  const junit =
    '<testsuite name="unit" tests="2" failures="1"><testcase name="a"/>' +
    '<testcase name="b"><failure message="x"/></testcase></testsuite>';
  const answer = await client('record').ingest('junit', junit, { commit: C2 });
  assert.equal(answer.ingest.test_runs, 1);
  await refused(client('record').ingest('junit', junit), 400, 'bad_request'); // no commit
});

test('a retried request id counts once', async () => {
  const rec = client('record');
  const notes = (await kinds(client('reader'))).note ?? 0;
  const line = JSON.stringify({ kind: 'note', payload: { retry: true } }) + '\n';
  const first = await rec._appendLines(line, 'js-req-1');
  assert.equal(first.already_recorded, false);
  const again = await rec._appendLines(line, 'js-req-1');
  assert.equal(again.already_recorded, true);
  assert.deepEqual(again.receipts, []);
  assert.equal((await kinds(client('reader'))).note, notes + 1);
});

test('a record token cannot decide', async () => {
  await refused(client('record').decide('default', C1, C2), 403, 'forbidden');
  await refused(client('record').status(), 403, 'forbidden');
});

test('a bad token is 401', async () => {
  const [, id] = tokens.record.token.split('_');
  for (const token of [`rtk_${id}_${'0'.repeat(64)}`, 'rtk_ffffffffffffffff_00', 'nonsense']) {
    await refused(new RatchetClient(base, token).appendEvents([{ kind: 'note', payload: {} }]), 401, 'unauthorized');
  }
  await refused(new RatchetClient(base).status(), 401, 'unauthorized');
});

test('a reserved kind is refused and nothing is stored', async () => {
  const reader = client('reader');
  const size = (await reader.status()).overview.size;
  await refused(
    client('record').appendEvents([{ kind: 'note', payload: {} }, { kind: 'decision', payload: {} }]),
    400,
    'bad_request',
  );
  assert.equal((await reader.status()).overview.size, size);
});

test('a revoked token is refused at once', async () => {
  const admin = client('admin');
  const minted = await admin.mintToken(['record'], 'js-temp');
  const c = new RatchetClient(base, minted.token);
  assert.equal((await c.appendEvents([{ kind: 'note', payload: {} }])).receipts.length, 1);
  await admin.revokeToken(minted.id);
  await refused(c.appendEvents([{ kind: 'note', payload: {} }]), 403, 'forbidden');
});

test('a token minted to expire in 12h lives 12 hours, as the CLI would mint it', async () => {
  const admin = client('admin');
  const before = Date.now();
  const minted = await admin.mintToken(['read'], 'js-12h', { expires: '12h' });
  const after = Date.now();
  const token = (await admin.json('GET', '/v1/tokens')).tokens.find((t) => t.id === minted.id);
  const twelveHours = 12 * 3600 * 1000;
  assert.ok(before + twelveHours <= token.expires_at_ms && token.expires_at_ms <= after + twelveHours, JSON.stringify(token));
  await refused(admin.mintToken(['read'], 'js-12x', { expires: '12x' }), 400, 'bad_request');
});

test('a token is never sent in clear text to another machine', async () => {
  for (const [url, local] of [
    ['http://127.0.0.1:8787', true],
    ['http://127.9.8.7:1', true],
    ['http://[::1]:8787', true],
    ['http://localhost:8787', true],
    ['http://10.0.0.1:8787', false],
    ['http://example.com:8787', false],
    ['http://localhost.example.com', false],
    ['http://[::2]:8787', false],
  ]) {
    assert.equal(isLoopback(new URL(url).hostname), local, url);
  }
  assert.throws(() => new RatchetClient('http://10.255.255.1:9', 'rtk_x_y'), /refusing to send the token in clear text/);
  // Without a token (health, openapi) nothing secret is sent: allowed.
  new RatchetClient('http://10.255.255.1:9');
  const c = new RatchetClient(base, tokens.record.token);
  c.baseUrl = 'http://10.255.255.1:9';
  await assert.rejects(c.appendEvents([{ kind: 'note', payload: {} }]), /refusing to send the token/);
});

test('a write past a minted quota is 429 over_quota and stores nothing', async () => {
  const admin = client('admin');
  const minted = await admin.mintToken(['record'], 'js-quota', { maxEvents: 2, cell: 'js-cell' });
  const c = new RatchetClient(base, minted.token);
  await c.appendEvents([{ kind: 'note', payload: { q: 1 } }, { kind: 'note', payload: { q: 2 } }]);
  const size = (await client('reader').status()).overview.size;
  await refused(c.appendEvents([{ kind: 'note', payload: { q: 3 } }]), 429, 'over_quota');
  assert.equal((await client('reader').status()).overview.size, size);
});

test('an unknown route is 404', async () => {
  await refused(client('all').call('GET', '/v1/nothing-here'), 404, 'not_found');
});

test('every route of the OpenAPI document is served', async () => {
  const c = client('all');
  const doc = await c.openapi();
  /** @type {Record<string, string>} */
  const params = { format: 'jsonl', id: tokens.doomed.id };
  /** @type {Record<string, string>} */
  const bodies = {
    'application/x-ndjson': JSON.stringify({ kind: 'note', payload: { route: 'check' } }) + '\n',
    'application/octet-stream': JSON.stringify({ task: 'rc', scorer: 'accuracy', value: 1, commit: C1 }) + '\n',
    'application/json': '{}',
  };
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(/** @type {Record<string, any>} */ (ops)).map(([method, op]) => ({ path, method, op })),
  );
  assert.ok(routes.length >= 12, `${routes.length} routes`);
  for (const { path, method, op } of routes) {
    const concrete = path.replace(/\{(\w+)\}/g, (_, name) => {
      assert.ok(name in params, `a value for {${name}}`);
      return params[name];
    });
    const media = op.requestBody ? Object.keys(op.requestBody.content)[0] : undefined;
    const { status, text } = await c.send(method.toUpperCase(), concrete, {
      body: media ? bodies[media] : undefined,
      contentType: media,
    });
    const what = `${method.toUpperCase()} ${path} answered ${status}: ${text.slice(0, 300)}`;
    assert.notEqual(status, 404, what);
    assert.notEqual(status, 405, what);
    assert.ok(status < 500, what);
    if (op.responses?.['200']?.content?.['application/json'] || status >= 400) {
      assert.doesNotThrow(() => JSON.parse(text), what);
    }
  }
});

/**
 * A loopback proxy that passes each request to the server but, for the
 * first `drop` connections, hangs up when the answer comes instead of
 * passing it on: the request was served, the client never hears of it.
 * @param {number} drop
 */
async function droppingProxy(drop) {
  const { hostname, port } = new URL(base);
  /** @type {Set<net.Socket>} */
  const open = new Set();
  const proxy = {
    connections: 0,
    url: '',
    close: () => {
      for (const s of open) s.destroy();
      return new Promise((resolve) => srv.close(() => resolve(undefined)));
    },
  };
  const srv = net.createServer((down) => {
    const n = ++proxy.connections;
    const up = net.connect(Number(port), hostname);
    for (const s of [down, up]) {
      open.add(s);
      s.once('close', () => open.delete(s));
    }
    down.on('error', () => up.destroy());
    up.on('error', () => down.destroy());
    down.pipe(up);
    if (n > drop) up.pipe(down);
    else up.once('data', () => (down.destroy(), up.destroy()));
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  proxy.url = `http://127.0.0.1:${/** @type {net.AddressInfo} */ (srv.address()).port}`;
  return proxy;
}

test('a lost answer is retried under the same request id', async () => {
  const proxy = await droppingProxy(1);
  try {
    const notes = (await kinds(client('reader'))).note ?? 0;
    const c = new RatchetClient(proxy.url, tokens.record.token, { attempts: 3, backoffMs: 10 });
    const answer = await c.appendEvents([{ kind: 'note', payload: { lost: 'answer' } }]);
    assert.equal(proxy.connections, 2);
    assert.equal(answer.already_recorded, true, 'the first attempt was stored');
    assert.equal((await kinds(client('reader'))).note, notes + 1);
  } finally {
    await proxy.close();
  }
});

test('a decision whose answer was lost is not sent again', async () => {
  const proxy = await droppingProxy(1);
  try {
    const c = new RatchetClient(proxy.url, tokens.admin.token, { attempts: 3, backoffMs: 10 });
    await assert.rejects(c.decide('default', C1, C2), TypeError);
    assert.equal(proxy.connections, 1);
  } finally {
    await proxy.close();
  }
});

test('an answer is never retried', async () => {
  const proxy = await droppingProxy(0);
  try {
    const c = new RatchetClient(proxy.url, tokens.record.token, { attempts: 3, backoffMs: 10 });
    await refused(c.appendEvents([{ kind: 'decision', payload: {} }]), 400, 'bad_request');
    assert.equal(proxy.connections, 1);
  } finally {
    await proxy.close();
  }
});

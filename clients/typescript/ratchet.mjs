// A client of `ratchet serve` over loopback TCP: plain `fetch`, no
// dependencies. JavaScript with JSDoc types (TypeScript checks it with
// `allowJs`/`checkJs`, or emits declarations with `tsc --allowJs
// --declaration --emitDeclarationOnly`): the Node this project's machine
// image ships (20) cannot run `.ts` files itself.
//
// Retries: a request that could not reach the server, or whose answer was
// lost (connection refused or reset, the server hanging up, a timeout), is
// sent again, up to `attempts` times with exponential backoff. Writes the
// server makes idempotent (events, ingestion) carry a request id chosen here,
// the same on every attempt, so a retry is stored once; a write it cannot
// deduplicate (a recorded decision, a minted token) is sent again only when
// the connection was refused. An answer, whatever its status, is never
// retried: a non-2xx one throws a ServerError.

import { randomUUID } from 'node:crypto';

/** @typedef {{ seq: number, id: string, hash: string }} Receipt */
/** @typedef {{ store_id: string, receipts: Receipt[], already_recorded: boolean }} Appended */
/** @typedef {{ store_id: string, receipts: Receipt[], ingest: Record<string, any> }} Ingested */
/**
 * @typedef {{ kind: string, payload: unknown, commit?: string }} EventLine
 * An event to append: never a reserved kind (decision, score, ...).
 */
/**
 * @typedef {object} ScoreOptions
 * @property {string} [scorerVersion]
 * @property {'higher' | 'lower'} [direction]
 * @property {boolean} [holdout]
 * @property {number} [cost]
 * @property {number} [latencyMs]
 */
/**
 * @typedef {object} IngestOptions
 * @property {string} [commit] a full commit id
 * @property {string} [suite]
 * @property {'higher' | 'lower'} [direction]
 * @property {string} [label]
 * @property {string} [name] the report's file name (its extension tells Inspect's .eval from .json)
 */
/**
 * @typedef {object} ClientOptions
 * @property {number} [timeoutMs] how long one attempt may take (default 60 000)
 * @property {number} [attempts] how often a request whose connection failed is sent (default 5)
 * @property {number} [backoffMs] the wait before the second attempt, doubled for each later one (default 100)
 */

/** The server answered with a non-2xx status. */
export class ServerError extends Error {
  /**
   * @param {number} status the HTTP status
   * @param {string} kind bad_request, unauthorized, forbidden, not_found, timeout, too_large,
   *   rate_limited, storage_full, internal (`unknown` when the answer was not an error document)
   * @param {string} message the server's words
   */
  constructor(status, kind, message) {
    super(message);
    this.name = 'ServerError';
    /** @type {number} */
    this.status = status;
    /** @type {string} */
    this.kind = kind;
  }
}

// Failures of connecting: nothing was sent, any request may go again.
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT']);
// The answer was lost after the request (perhaps) arrived: only an
// idempotent request goes again.
const LOST = new Set([
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * What a failed fetch was: 'not-connected', 'lost' or null (not a failure
 * of the connection).
 * @param {unknown} e
 * @returns {'not-connected' | 'lost' | null}
 */
function failure(e) {
  if (!(e instanceof Error)) return null;
  if (e.name === 'TimeoutError') return 'lost'; // our own per-attempt timeout
  /** @type {any} */
  const cause = /** @type {any} */ (e).cause;
  const code = cause && typeof cause === 'object' ? cause.code : undefined;
  if (NOT_CONNECTED.has(code)) return 'not-connected';
  if (LOST.has(code)) return 'lost';
  return null;
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** @param {Iterable<object>} records */
const jsonLines = (records) => Array.from(records, (r) => JSON.stringify(r) + '\n').join('');

/** A new request id. */
const requestId = () => randomUUID().replaceAll('-', '');

/** @param {Record<string, string | undefined>} query */
function queryString(query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, v);
  return q.toString();
}

/**
 * Whether `hostname` (as `URL.hostname` gives it) names this machine:
 * 127.0.0.0/8, ::1 or localhost. Any other name may resolve anywhere.
 * @param {string} hostname
 */
export function isLoopback(hostname) {
  const h = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (h === 'localhost') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  return h === '::1' || h === '0:0:0:0:0:0:0:1';
}

export class RatchetClient {
  /**
   * @param {string} baseUrl `http://127.0.0.1:PORT`
   * @param {string} [token] the bearer string `rtk_<id>_<secret>` (without one only health and openapi work)
   * @param {ClientOptions} [options]
   */
  constructor(baseUrl, token, options = {}) {
    /** @type {string} */
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    /** @type {string | undefined} */
    this.token = token?.trim();
    /** @type {number} */
    this.timeoutMs = options.timeoutMs ?? 60_000;
    /** @type {number} */
    this.attempts = Math.max(1, options.attempts ?? 5);
    /** @type {number} */
    this.backoffMs = options.backoffMs ?? 100;
    this.refuseCleartext();
  }

  /** Throws if the token would go in clear text to another machine. */
  refuseCleartext() {
    if (!this.token) return;
    const url = new URL(this.baseUrl);
    if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
      throw new Error(
        `refusing to send the token in clear text to ${this.baseUrl}: plain HTTP carries a bearer token ` +
          'only to a loopback address (127.0.0.0/8, ::1, localhost); reach a remote server through a tunnel ' +
          "or TLS proxy that ends on this machine's loopback",
      );
    }
  }

  /**
   * One request, retried as the module's comment says.
   * @param {string} method
   * @param {string} path
   * @param {{ body?: string | Uint8Array, contentType?: string, idempotent?: boolean, auth?: boolean }} [how]
   * @returns {Promise<{ status: number, contentType: string, text: string }>}
   */
  async send(method, path, how = {}) {
    const { body, contentType = 'application/json', idempotent = true, auth = true } = how;
    /** @type {Record<string, string>} */
    // One connection per request (as the Rust and Python clients): a pooled
    // connection the server closed while idle would fail a request that
    // cannot be retried.
    const headers = { accept: 'application/json', connection: 'close' };
    if (auth && this.token) {
      this.refuseCleartext();
      headers.authorization = `Bearer ${this.token}`;
    }
    if (body !== undefined) headers['content-type'] = contentType;
    let last;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await sleep(Math.min(this.backoffMs * 2 ** (attempt - 1), 5_000));
      try {
        const res = await fetch(this.baseUrl + path, {
          method,
          headers,
          body,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        const text = await res.text();
        return { status: res.status, contentType: res.headers.get('content-type') ?? '', text };
      } catch (e) {
        const why = failure(e);
        if (why === null || (why === 'lost' && !idempotent)) throw e;
        last = e;
      }
    }
    throw last;
  }

  /**
   * The answer's text when 2xx; a ServerError otherwise.
   * @param {string} method
   * @param {string} path
   * @param {{ body?: string | Uint8Array, contentType?: string, idempotent?: boolean, auth?: boolean }} [how]
   * @returns {Promise<string>}
   */
  async call(method, path, how) {
    const { status, text } = await this.send(method, path, how);
    if (status < 200 || status >= 300) {
      let kind = 'unknown';
      let message = text.trim();
      try {
        const doc = JSON.parse(text);
        if (doc && doc.error && typeof doc.error.kind === 'string') {
          kind = doc.error.kind;
          message = String(doc.error.message);
        }
      } catch {
        // not JSON: the text is the message
      }
      throw new ServerError(status, kind, message);
    }
    return text;
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {{ body?: string | Uint8Array, contentType?: string, idempotent?: boolean, auth?: boolean }} [how]
   * @returns {Promise<any>}
   */
  async json(method, path, how) {
    return JSON.parse(await this.call(method, path, how));
  }

  /**
   * Events as JSON Lines, stored once per `id` however often sent.
   * @param {string} lines
   * @param {string} id
   * @returns {Promise<Appended>}
   */
  async _appendLines(lines, id) {
    return this.json('POST', `/v1/events?${queryString({ request_id: id })}`, {
      body: lines,
      contentType: 'application/x-ndjson',
    });
  }

  /**
   * A report, ingested once per `id` however often sent.
   * @param {string} format
   * @param {string | Uint8Array} body
   * @param {Record<string, string | undefined>} query
   * @param {string} id
   * @returns {Promise<Ingested>}
   */
  async _ingest(format, body, query, id) {
    const q = queryString({ ...query, request_id: id });
    return this.json('POST', `/v1/ingest/${encodeURIComponent(format)}?${q}`, {
      body,
      contentType: 'application/octet-stream',
    });
  }

  /** @returns {Promise<{ ok: boolean, store_id: string }>} liveness (no token) */
  health() {
    return this.json('GET', '/v1/health', { auth: false });
  }

  /** @returns {Promise<any>} the API as an OpenAPI 3.1 document (no token) */
  openapi() {
    return this.json('GET', '/v1/openapi.json', { auth: false });
  }

  /**
   * Appends events under the token's session in one transaction, once.
   * @param {Iterable<EventLine>} events
   * @returns {Promise<Appended>}
   */
  appendEvents(events) {
    return this._appendLines(jsonLines(events), requestId());
  }

  /**
   * Records one score of `commit` (a full id), once.
   * @param {string} commit
   * @param {string} task
   * @param {string} scorer
   * @param {number} value
   * @param {ScoreOptions} [options]
   * @returns {Promise<Ingested>}
   */
  recordScore(commit, task, scorer, value, options = {}) {
    /** @type {Record<string, unknown>} */
    const line = { task, scorer, value, commit, holdout: options.holdout ?? false };
    if (options.scorerVersion !== undefined) line.scorer_version = options.scorerVersion;
    if (options.cost !== undefined) line.cost = options.cost;
    if (options.latencyMs !== undefined) line.latency_ms = options.latencyMs;
    if (options.direction !== undefined) line.direction = options.direction;
    return this._ingest('jsonl', jsonLines([line]), {}, requestId());
  }

  /**
   * Uploads one report in any `ratchet ingest` format (junit, jsonl, bmf,
   * hyperfine, google-benchmark, pytest-benchmark, go-bench, inspect,
   * lm-eval, promptfoo), ingested in one transaction, once.
   * @param {string} format
   * @param {string | Uint8Array} body the report file's bytes
   * @param {IngestOptions} [options]
   * @returns {Promise<Ingested>}
   */
  ingest(format, body, options = {}) {
    const { commit, suite, direction, label, name } = options;
    return this._ingest(format, body, { commit, suite, direction, label, name }, requestId());
  }

  /**
   * Decides class `cls` for `candidate` against `baseline` (full ids) under
   * the class's pinned policy; recorded by the server unless `dryRun`.
   * @param {string} cls
   * @param {string} baseline
   * @param {string} candidate
   * @param {{ dryRun?: boolean }} [options]
   * @returns {Promise<Record<string, any> & { status: 'promote' | 'reject' | 'continue' | 'missing_evidence' | 'unverified_trace' | 'truncated' }>}
   */
  decide(cls, baseline, candidate, options = {}) {
    const dryRun = options.dryRun ?? false;
    return this.json('POST', '/v1/decide', {
      body: JSON.stringify({ class: cls, baseline, candidate, dry_run: dryRun }),
      // A recorded verdict has no request id: sent again only if it never left.
      idempotent: dryRun,
    });
  }

  /** @returns {Promise<Record<string, any>>} the store's status (as `ratchet status --json`) */
  status() {
    return this.json('GET', '/v1/status');
  }

  /**
   * @param {number} [last]
   * @returns {Promise<{ store_id: string, events: { seq: number, ts_ms: number, verdict: any }[] }>}
   */
  decisions(last = 20) {
    return this.json('GET', `/v1/decisions?last=${Math.trunc(last)}`);
  }

  /** @returns {Promise<string>} the Markdown summary a pull request shows */
  summaryMarkdown() {
    return this.call('GET', '/v1/summary.md');
  }

  /**
   * @param {string[]} can record, decide, read, admin
   * @param {string} session
   * @param {{ cell?: string, expires?: string, expiresAtMs?: number, maxEvents?: number, maxBytes?: number, eventsPerHour?: number, bytesPerHour?: number }} [options]
   *   `expires`: a lifetime as the CLI's `token mint --expires` takes it (`'12h'`, `'7d'`), read
   *   against the server's clock (or `expiresAtMs`, a time); quotas default to the server's; a
   *   write past one is a ServerError 429 `over_quota`
   * @returns {Promise<{ token: string, id: string, receipts: Receipt[], store_id: string }>}
   */
  mintToken(can, session, options = {}) {
    /** @type {Record<string, unknown>} */
    const spec = { can, session };
    if (options.cell !== undefined) spec.cell = options.cell;
    if (options.expires !== undefined) spec.expires = options.expires;
    if (options.expiresAtMs !== undefined) spec.expires_at_ms = options.expiresAtMs;
    /** @type {Record<string, number>} */
    const quota = {};
    if (options.maxEvents !== undefined) quota.max_events = options.maxEvents;
    if (options.maxBytes !== undefined) quota.max_bytes = options.maxBytes;
    if (options.eventsPerHour !== undefined) quota.events_per_hour = options.eventsPerHour;
    if (options.bytesPerHour !== undefined) quota.bytes_per_hour = options.bytesPerHour;
    if (Object.keys(quota).length > 0) spec.quota = quota;
    return this.json('POST', '/v1/tokens', { body: JSON.stringify(spec), idempotent: false });
  }

  /**
   * @param {string} id
   * @returns {Promise<{ store_id: string, receipts: Receipt[], revoked: string }>}
   */
  revokeToken(id) {
    return this.json('DELETE', `/v1/tokens/${encodeURIComponent(id)}`);
  }
}

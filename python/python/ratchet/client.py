"""A client of ``ratchet serve``: the store stays with the server, this side
holds a capability token.

Pure Python, standard library only (``http.client``): this module imports
nothing of the native extension, so the file also works on its own (copied,
or loaded by path) where the extension is not built.

>>> from ratchet import Client
>>> c = Client(".ratchet.sock", token_file="rec.tok")          # doctest: +SKIP
>>> c.record_score("a" * 40, "t1", "accuracy", 0.75)           # doctest: +SKIP
>>> Client("http://127.0.0.1:8787", token_file="adm.tok").decide(
...     "default", baseline, candidate)                         # doctest: +SKIP

Retries: a request that could not reach the server, or whose answer was
lost (connection refused or reset, a timeout, the server hanging up), is
sent again, up to ``attempts`` times with exponential backoff. Writes that
the server makes idempotent (events and ingestion) carry a request id the
client chooses, the same on every attempt, so a retry is stored once. A
write the server cannot deduplicate (a recorded decision, a minted token)
is retried only when the connection failed before anything was sent. An
answer, whatever its status, is never retried: a non-2xx one raises
:class:`ServerError`.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union
from urllib.parse import quote, urlencode

__all__ = ["Client", "ServerError"]

_PathLike = Union[str, "os.PathLike[str]"]

# Failures of the connection (not answers of the server): retried.
# `http.client.RemoteDisconnected` is a ConnectionResetError; `socket.timeout`
# is TimeoutError from Python 3.10 on (an OSError, not a ConnectionError).
_LOST = (ConnectionError, socket.timeout, http.client.RemoteDisconnected, http.client.IncompleteRead)
# Failures of connecting, when nothing was sent: retried for every request
# (a socket file missing while the server restarts included).
_NOT_CONNECTED = (ConnectionError, socket.timeout, FileNotFoundError)


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: 127.0.0.0/8, ::1 or
    ``localhost``. Any other name may resolve anywhere, so it is not."""
    h = host.strip("[]").rstrip(".")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


class ServerError(Exception):
    """The server answered with a non-2xx status.

    ``status`` is the HTTP status, ``kind`` the machine-readable kind of the
    server's error document (``bad_request``, ``unauthorized``,
    ``forbidden``, ``not_found``, ``timeout``, ``too_large``,
    ``rate_limited``, ``storage_full``, ``internal``; ``unknown`` when the
    answer was not one), ``message`` its words.
    """

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(f"the server answered {status} ({kind}): {message}")
        self.status = status
        self.kind = kind
        self.message = message


def _early_answer(conn: http.client.HTTPConnection, method: str) -> Optional[tuple[int, str, bytes]]:
    """The answer a server sent before it read the whole request, if one is
    there to read on the connection."""
    if conn.sock is None:
        return None
    try:
        answer = http.client.HTTPResponse(conn.sock, method=method)
        answer.begin()
        return answer.status, answer.getheader("Content-Type", "") or "", answer.read()
    except (OSError, http.client.HTTPException):
        return None


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection over a Unix socket."""

    def __init__(self, path: str, timeout: Optional[float] = None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _request_id() -> str:
    return uuid.uuid4().hex


def _json_lines(records: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(dict(r), separators=(",", ":"), allow_nan=False).encode() + b"\n" for r in records
    )


class Client:
    """A client of the ``ratchet serve`` at ``server``: a Unix socket path,
    or ``http://127.0.0.1:PORT`` (``host:port`` without a slash is TCP too,
    as for the CLI's ``--server``).

    ``token`` is the bearer string (``rtk_<id>_<secret>``), or
    ``token_file`` the file ``ratchet token mint --out`` wrote; without
    either only :meth:`health` and :meth:`openapi` work. ``timeout``: the
    seconds one attempt may take; ``attempts``: how often a request whose
    connection failed is sent (see the module's docstring).
    """

    #: Seconds before the second attempt; doubled for each later one.
    backoff = 0.1
    #: The longest wait between two attempts, in seconds.
    max_backoff = 5.0

    def __init__(
        self,
        server: _PathLike,
        token: Optional[str] = None,
        token_file: Optional[_PathLike] = None,
        timeout: float = 60.0,
        attempts: int = 5,
    ) -> None:
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read()
        self.token = token.strip() if token is not None else None
        self.timeout = timeout
        self.attempts = max(1, int(attempts))
        text = os.fspath(server)
        self._unix: Optional[str] = None
        self._tcp: Optional[tuple[str, int]] = None
        if text.startswith("http://"):
            hostport = text[len("http://") :].rstrip("/")
        elif ":" in text and "/" not in text:
            hostport = text
        elif text.startswith("https://"):
            raise ValueError("the server speaks plain HTTP (https:// is a proxy's)")
        else:
            hostport = None
            self._unix = text
        if hostport is not None:
            host, sep, port = hostport.rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"{text!r}: http://HOST:PORT or a Unix socket path")
            self._tcp = (host.strip("[]"), int(port))
            if self.token is not None and not is_loopback(self._tcp[0]):
                raise ValueError(
                    f"refusing to send the token in clear text to {text!r}: plain HTTP carries "
                    "a bearer token only to a loopback address (127.0.0.0/8, ::1, localhost) "
                    "or over a Unix socket; reach a remote server through a tunnel or TLS proxy "
                    "that ends on this machine's loopback"
                )
        self.server = text

    def __repr__(self) -> str:
        return f"Client({self.server!r})"

    # The transport.

    def _connection(self) -> http.client.HTTPConnection:
        if self._unix is not None:
            return UnixHTTPConnection(self._unix, timeout=self.timeout)
        assert self._tcp is not None
        return http.client.HTTPConnection(self._tcp[0], self._tcp[1], timeout=self.timeout)

    def _send(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        content_type: str = "application/json",
        *,
        idempotent: bool,
        auth: bool = True,
    ) -> tuple[int, str, bytes]:
        """One request, retried as the module's docstring says: the status,
        the content type and the body of the answer."""
        headers = {"Connection": "close", "Accept": "application/json"}
        if auth and self.token is not None:
            if self._tcp is not None and not is_loopback(self._tcp[0]):
                raise ValueError(
                    f"refusing to send the token in clear text to {self.server!r}: "
                    "only to a loopback address or over a Unix socket"
                )
            headers["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            headers["Content-Type"] = content_type
        last: Optional[BaseException] = None
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), self.max_backoff))
            conn = self._connection()
            try:
                try:
                    conn.connect()
                except _NOT_CONNECTED as e:
                    last = e
                    continue
                try:
                    try:
                        conn.request(method, path, body=body, headers=headers)
                    except (BrokenPipeError, ConnectionResetError):
                        # The server answered from the headers alone (a
                        # refused token, a rate limit) and closed while the
                        # body was still going out: its answer is the answer.
                        early = _early_answer(conn, method)
                        if early is None:
                            raise
                        return early
                    answer = conn.getresponse()
                    data = answer.read()
                except _LOST as e:
                    if not idempotent:
                        raise
                    last = e
                    continue
                return answer.status, answer.getheader("Content-Type", ""), data
            finally:
                conn.close()
        assert last is not None
        raise last

    def _call(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        content_type: str = "application/json",
        *,
        idempotent: bool = True,
        auth: bool = True,
    ) -> bytes:
        status, _, data = self._send(
            method, path, body, content_type, idempotent=idempotent, auth=auth
        )
        if not 200 <= status < 300:
            raise _error(status, data)
        return data

    def _json(self, method: str, path: str, body: Optional[bytes] = None, **kw: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self._call(method, path, body, **kw))
        return doc

    def _record(
        self, path: str, query: Mapping[str, Optional[str]], body: bytes, request_id: str, content_type: str
    ) -> dict[str, Any]:
        """A write the server stores once per ``request_id``."""
        q = {k: v for k, v in query.items() if v is not None}
        q["request_id"] = request_id
        return self._json(
            "POST", f"{path}?{urlencode(q, quote_via=quote)}", body, content_type=content_type
        )

    def _append(self, events: Iterable[Mapping[str, Any]], request_id: str) -> dict[str, Any]:
        return self._record("/v1/events", {}, _json_lines(events), request_id, "application/x-ndjson")

    def _ingest(
        self, format: str, body: bytes, query: Mapping[str, Optional[str]], request_id: str
    ) -> dict[str, Any]:
        return self._record(
            f"/v1/ingest/{quote(format, safe='')}", query, body, request_id, "application/octet-stream"
        )

    # Without a token.

    def health(self) -> dict[str, Any]:
        """``{"ok": true, "store_id": ...}``."""
        return self._json("GET", "/v1/health", auth=False)

    def openapi(self) -> dict[str, Any]:
        """The server's API as an OpenAPI 3.1 document."""
        return self._json("GET", "/v1/openapi.json", auth=False)

    # record

    def append(self, events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Appends events (dicts of ``kind``, ``payload`` and optionally
        ``commit``, a full id) under the token's session, in one
        transaction, once however often the request is retried. Reserved
        kinds (decision, score, ...) are refused. The server's answer:
        store_id, receipts (seq, id, hash) and already_recorded."""
        return self._append(list(events), _request_id())

    def record_score(
        self,
        commit: str,
        task: str,
        scorer: str,
        value: float,
        *,
        scorer_version: Optional[str] = None,
        cost: Optional[float] = None,
        latency_ms: Optional[float] = None,
        holdout: bool = False,
        direction: Optional[str] = None,
    ) -> dict[str, Any]:
        """Records the score ``value`` of ``commit`` (a full id) on ``task``
        under ``scorer``, as ``Store.record_score`` does (the session is the
        token's). ``direction``: ``"higher"`` or ``"lower"``. The server's
        answer: store_id, receipts (the score's seq is
        ``["receipts"][0]["seq"]``) and the ingestion report."""
        line: dict[str, Any] = {
            "task": task,
            "scorer": scorer,
            "value": value,
            "commit": commit,
            "holdout": holdout,
        }
        for k, v in (
            ("scorer_version", scorer_version),
            ("cost", cost),
            ("latency_ms", latency_ms),
            ("direction", direction),
        ):
            if v is not None:
                line[k] = v
        return self._ingest("jsonl", _json_lines([line]), {}, _request_id())

    def ingest(
        self,
        format: str,
        path_or_bytes: Union[_PathLike, bytes],
        *,
        commit: Optional[str] = None,
        suite: Optional[str] = None,
        direction: Optional[str] = None,
        label: Optional[str] = None,
        name: Optional[str] = None,
    ) -> dict[str, Any]:
        """Uploads one report (a file's path, or its bytes) in any ``ratchet
        ingest`` format (junit, jsonl, bmf, hyperfine, google-benchmark,
        pytest-benchmark, go-bench, inspect, lm-eval, promptfoo); the server
        ingests it in one transaction, once. ``commit`` is a full id;
        ``name`` the file's name (its extension tells Inspect's ``.eval``
        from ``.json``; default: the path's). The server's answer: store_id,
        receipts and the ingestion report under ``ingest``."""
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            body = bytes(path_or_bytes)
        else:
            if os.path.isdir(path_or_bytes):
                raise IsADirectoryError(
                    f"{os.fspath(path_or_bytes)}: a directory; upload its files one by one"
                )
            with open(path_or_bytes, "rb") as f:
                body = f.read()
            if name is None:
                name = os.path.basename(os.fspath(path_or_bytes))
        query = {"commit": commit, "suite": suite, "direction": direction, "label": label, "name": name}
        return self._ingest(format, body, query, _request_id())

    # decide

    def decide(self, cls: str, baseline: str, candidate: str, dry_run: bool = False) -> dict[str, Any]:
        """Decides class ``cls`` for ``candidate`` against ``baseline`` (full
        ids) under the class's pinned policy; the server records the verdict
        (unless ``dry_run``). The verdict as a dict, with ``status``
        (promote, reject, continue, missing_evidence, unverified_trace,
        truncated), ``words`` (the CLI's: ``cannot decide (evidence
        missing)``), ``exit_code`` (``ratchet gate``'s) and the
        ``decision`` receipt."""
        body = json.dumps(
            {"class": cls, "baseline": baseline, "candidate": candidate, "dry_run": dry_run}
        ).encode()
        # A recorded verdict has no request id: its request is sent again
        # only if it never left (a dry run always may be).
        return self._json("POST", "/v1/decide", body, idempotent=dry_run)

    # read

    def status(self) -> dict[str, Any]:
        """The store's status, as ``ratchet status --json``."""
        return self._json("GET", "/v1/status")

    def decisions(self, last: int = 20) -> dict[str, Any]:
        """The newest ``last`` recorded verdicts, oldest first: store_id and
        events (each seq, ts_ms and verdict)."""
        return self._json("GET", f"/v1/decisions?last={int(last)}")

    def summary_markdown(self, cls: Optional[str] = None, candidate: Optional[str] = None) -> str:
        """The Markdown summary a pull request shows: of class ``cls`` and
        candidate ``candidate`` (a full id) only, when given, so that a
        later decision about another commit does not replace it."""
        query = urlencode({k: v for k, v in (("class", cls), ("candidate", candidate)) if v is not None})
        return self._call("GET", "/v1/summary.md" + (f"?{query}" if query else "")).decode("utf-8")

    def report_html(self) -> str:
        """The HTML report."""
        return self._call("GET", "/v1/report.html").decode("utf-8")

    # admin

    def tokens(self) -> dict[str, Any]:
        """Every token minted for the store (never secrets): store_id and tokens."""
        return self._json("GET", "/v1/tokens")

    def mint_token(
        self,
        can: Union[str, Sequence[str]],
        session: str,
        cell: Optional[str] = None,
        expires: Optional[str] = None,
        max_events: Optional[int] = None,
        max_bytes: Optional[int] = None,
        events_per_hour: Optional[int] = None,
        bytes_per_hour: Optional[int] = None,
    ) -> dict[str, Any]:
        """Mints a token of scopes ``can`` (record, decide, read, admin)
        recording under ``session``: token (the bearer string, shown only
        here), id, receipts, store_id. ``expires`` is its lifetime as the
        CLI's ``token mint --expires`` takes it (``"90s"``, ``"30m"``,
        ``"12h"``, ``"7d"``; default: until revoked), read by the server
        against its own clock. The quotas (events and bytes, in all and per
        hour) default to the server's; a write past one is refused with
        :class:`ServerError` 429 ``over_quota``."""
        scopes = [can] if isinstance(can, str) else list(can)
        spec: dict[str, Any] = {"can": scopes, "session": session}
        if cell is not None:
            spec["cell"] = cell
        if expires is not None:
            spec["expires"] = str(expires)
        quota = {
            k: int(v)
            for k, v in (
                ("max_events", max_events),
                ("max_bytes", max_bytes),
                ("events_per_hour", events_per_hour),
                ("bytes_per_hour", bytes_per_hour),
            )
            if v is not None
        }
        if quota:
            spec["quota"] = quota
        return self._json("POST", "/v1/tokens", json.dumps(spec).encode(), idempotent=False)

    def revoke_token(self, id: str) -> dict[str, Any]:
        """Revokes the token ``id``: refused from the next request on."""
        return self._json("DELETE", f"/v1/tokens/{quote(id, safe='')}")


def _error(status: int, data: bytes) -> ServerError:
    try:
        doc = json.loads(data)
        err = doc["error"]
        return ServerError(status, str(err["kind"]), str(err["message"]))
    except (ValueError, KeyError, TypeError):
        text = data.decode("utf-8", "replace").strip()
        return ServerError(status, "unknown", text or http.client.responses.get(status, ""))

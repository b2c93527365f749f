"""ratchet.Client against a real `ratchet serve`: over its Unix socket and
loopback TCP, token scopes, errors, request ids, retries, revocation."""

import importlib.util
import json
import os
import pathlib
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from conftest import ratchet_binary

try:
    from ratchet.client import Client, ServerError

    PACKAGE = True
except ImportError:
    # The native extension is not built here: the client is pure Python, so
    # its file is loaded on its own (what `import ratchet` would give).
    _file = pathlib.Path(__file__).resolve().parents[1] / "python" / "ratchet" / "client.py"
    _spec = importlib.util.spec_from_file_location("ratchet_client_standalone", _file)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)
    Client, ServerError = _module.Client, _module.ServerError  # type: ignore[misc]
    PACKAGE = False

C1 = "c1" * 20
C2 = "c2" * 20
# Generous: a debug binary on a loaded two-core machine.
READY_TIMEOUT = 60.0


class Server(NamedTuple):
    socket: str
    tcp: str
    store: pathlib.Path
    record: pathlib.Path  # record only
    reader: pathlib.Path  # read only
    admin: pathlib.Path  # admin, decide, read


def _run(*args: str) -> str:
    done = subprocess.run(
        [str(ratchet_binary()), *args], capture_output=True, text=True, timeout=READY_TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A store with three tokens, served on a Unix socket and a loopback port."""
    base = tmp_path_factory.mktemp("serve")
    store = base / "s"
    _run("--store", str(store), "init")
    tokens = {}
    for name, scopes in (("record", ["record"]), ("reader", ["read"]), ("admin", ["admin", "decide", "read"])):
        file = base / f"{name}.tok"
        can = [a for s in scopes for a in ("--can", s)]
        _run("--store", str(store), "token", "mint", *can, "--session", f"py-{name}", "--out", str(file))
        tokens[name] = file
    # A Unix socket path must be short (108 bytes): its own directory.
    sock_dir = tempfile.mkdtemp(prefix="rtk-")
    sock = os.path.join(sock_dir, "s.sock")
    stderr = open(base / "serve.log", "wb")
    proc = subprocess.Popen(
        [str(ratchet_binary()), "--store", str(store), "--json", "serve", "--tcp", "127.0.0.1:0", "--socket", sock],
        stdout=subprocess.PIPE,
        stderr=stderr,
    )
    lines: "queue.Queue[bytes]" = queue.Queue()
    assert proc.stdout is not None
    out = proc.stdout
    reader = threading.Thread(target=lambda: lines.put(out.readline()), daemon=True)
    reader.start()
    try:
        try:
            line = lines.get(timeout=READY_TIMEOUT)
        except queue.Empty:
            line = b""
        if not line:
            raise RuntimeError(
                f"ratchet serve was not ready in {READY_TIMEOUT} s (exit {proc.poll()}): "
                + (base / "serve.log").read_text(errors="replace")[-2000:]
            )
        ready = json.loads(line)
        assert ready["socket"] == sock
        yield Server(sock, f"http://{ready['tcp'][0]}", store, tokens["record"], tokens["reader"], tokens["admin"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        out.close()
        stderr.close()
        try:
            os.remove(sock)
        except FileNotFoundError:
            pass  # the server removes it when it ends
        os.rmdir(sock_dir)


def _kinds(c: Any) -> dict[str, int]:
    kinds: dict[str, int] = c.status()["overview"]["kinds"]
    return kinds


def _size(c: Any) -> int:
    size: int = c.status()["overview"]["size"]
    return size


def _commits(c: Any) -> dict[str, int]:
    return {x["commit"]: x["scores"] for x in c.status()["overview"]["commits"]}


def test_the_package_exports_the_client() -> None:
    if not PACKAGE:
        pytest.skip("the native extension is not built here")
    import ratchet

    assert ratchet.Client is Client and ratchet.ServerError is ServerError
    assert {"Client", "ServerError"} <= set(ratchet.__all__)


def test_health_and_openapi_need_no_token(server: Server) -> None:
    for where in (server.socket, server.tcp):
        c = Client(where)
        assert c.health()["ok"] is True
        assert "/v1/events" in c.openapi()["paths"]


def test_record_over_the_unix_socket_and_over_tcp(server: Server) -> None:
    reader = Client(server.tcp, token_file=server.reader)
    for where, commit in ((server.socket, C1), (server.tcp, C2)):
        c = Client(where, token_file=server.record)
        before = _commits(reader).get(commit, 0)
        answer = c.record_score(commit, "t1", "accuracy", 0.75, scorer_version="v1")
        assert len(answer["receipts"]) == 1 and answer["ingest"]["scores"] == 1
        # Two equal scores are two observations (each request its own id).
        c.record_score(commit, "t1", "accuracy", 0.75, scorer_version="v1")
        assert _commits(reader)[commit] == before + 2
        notes = _kinds(reader).get("note", 0)
        answer = c.append([{"kind": "note", "payload": {"over": where}, "commit": commit}])
        assert answer["already_recorded"] is False and len(answer["receipts"]) == 1
        assert _kinds(reader)["note"] == notes + 1


def test_ingest_a_report_file_and_bytes(server: Server, tmp_path: pathlib.Path) -> None:
    c = Client(server.socket, token_file=server.record)
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuite name="unit" tests="2" failures="1"><testcase name="a"/>'
        '<testcase name="b"><failure message="x"/></testcase></testsuite>'
    )
    assert c.ingest("junit", junit, commit=C1)["ingest"]["test_runs"] == 1
    lines = b'{"task": "t9", "scorer": "latency_ms", "value": 12.5, "commit": "' + C2.encode() + b'"}\n'
    assert c.ingest("jsonl", lines, direction="lower")["ingest"]["scores"] == 1
    with pytest.raises(ServerError) as e:
        c.ingest("junit", junit)  # JUnit needs a commit
    assert e.value.status == 400 and e.value.kind == "bad_request"


def test_a_record_token_cannot_decide_nor_read(server: Server) -> None:
    c = Client(server.socket, token_file=server.record)
    with pytest.raises(ServerError) as e:
        c.decide("default", C1, C2)
    assert (e.value.status, e.value.kind) == (403, "forbidden")
    with pytest.raises(ServerError) as e:
        c.status()
    assert (e.value.status, e.value.kind) == (403, "forbidden")
    with pytest.raises(ServerError) as e:
        Client(server.socket, token_file=server.reader).append([{"kind": "note", "payload": {}}])
    assert e.value.status == 403


def test_a_wrong_token_is_401(server: Server) -> None:
    good = server.record.read_text().strip()
    _, token_id, _ = good.split("_")
    for token in (f"rtk_{token_id}_{'0' * 64}", "rtk_ffffffffffffffff_00", "not-a-token"):
        with pytest.raises(ServerError) as e:
            Client(server.tcp, token=token).append([{"kind": "note", "payload": {}}])
        assert (e.value.status, e.value.kind) == (401, "unauthorized"), token
    with pytest.raises(ServerError) as e:
        Client(server.tcp).status()  # no token at all
    assert e.value.status == 401


def test_an_answer_given_before_the_body_was_in_is_read(server: Server) -> None:
    # 8 MiB the server never reads: it refuses the token from the headers
    # and closes while the client is still sending. (The Unix socket: over
    # TCP the kernel may answer unread bytes with a reset that takes the
    # answer with it, which only a lingering close on the server avoids.)
    big = b" " * (8 << 20)
    with pytest.raises(ServerError) as e:
        Client(server.socket, token="rtk_ffffffffffffffff_00").ingest("jsonl", big)
    assert (e.value.status, e.value.kind) == (401, "unauthorized")


def test_a_reserved_kind_is_refused_and_nothing_stored(server: Server) -> None:
    c = Client(server.socket, token_file=server.record)
    reader = Client(server.socket, token_file=server.reader)
    before = _size(reader)
    batch = [{"kind": "note", "payload": {"n": 1}}, {"kind": "decision", "payload": {"forged": True}}]
    with pytest.raises(ServerError) as e:
        c.append(batch)
    assert (e.value.status, e.value.kind) == (400, "bad_request")
    assert "reserved" in e.value.message
    assert _size(reader) == before, "the batch is all or nothing"


def test_a_retried_append_with_the_same_request_id_counts_once(server: Server) -> None:
    c = Client(server.socket, token_file=server.record)
    reader = Client(server.tcp, token_file=server.reader)
    notes = _kinds(reader).get("note", 0)
    events = [{"kind": "note", "payload": {"retry": 1}}, {"kind": "note", "payload": {"retry": 2}}]
    first = c._append(events, "req-0001")
    assert first["already_recorded"] is False and len(first["receipts"]) == 2
    size = _size(reader)
    again = Client(server.tcp, token_file=server.record)._append(events, "req-0001")
    assert again["already_recorded"] is True and again["receipts"] == []
    assert _size(reader) == size and _kinds(reader)["note"] == notes + 2
    # Another request id is another batch.
    assert c._append(events, "req-0002")["already_recorded"] is False
    assert _kinds(reader)["note"] == notes + 4


def test_a_retried_ingest_with_the_same_request_id_counts_once(server: Server) -> None:
    c = Client(server.socket, token_file=server.record)
    reader = Client(server.socket, token_file=server.reader)
    line = b'{"task": "tr", "scorer": "accuracy", "value": 0.5, "commit": "' + C1.encode() + b'"}\n'
    before = _commits(reader)[C1] if C1 in _commits(reader) else 0
    assert c._ingest("jsonl", line, {}, "ing-0001")["ingest"]["scores"] == 1
    again = c._ingest("jsonl", line, {}, "ing-0001")
    assert again["receipts"] == [] and again["ingest"]["already_ingested_at"] is not None
    assert _commits(reader)[C1] == before + 1


class DroppingProxy:
    """A loopback proxy that passes each request to the server but, for the
    first `drop` connections, hangs up instead of passing the answer back:
    the request was served, the client never hears of it."""

    def __init__(self, upstream: str, drop: int) -> None:
        host, _, port = upstream[len("http://") :].rpartition(":")
        self.upstream = (host, int(port))
        self.drop = drop
        self.connections = 0
        self.errors: list[BaseException] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                with conn:
                    conn.settimeout(READY_TIMEOUT)
                    self.connections += 1
                    request = _read_request(conn)
                    with socket.create_connection(self.upstream, timeout=READY_TIMEOUT) as up:
                        up.sendall(request)
                        answer = _read_to_end(up)
                    if self.connections > self.drop:
                        conn.sendall(answer)
            except Exception as e:  # noqa: BLE001 — reported by the test
                self.errors.append(e)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=READY_TIMEOUT)
        self.listener.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _read_to_end(conn: socket.socket) -> bytes:
    # The client asks for `Connection: close`: the server ends the stream.
    parts: list[bytes] = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


@pytest.fixture
def proxy(server: Server) -> Iterator[DroppingProxy]:
    p = DroppingProxy(server.tcp, drop=1)
    yield p
    p.close()
    assert not p.errors, p.errors


def test_a_lost_answer_is_retried_under_the_same_request_id(server: Server, proxy: DroppingProxy) -> None:
    reader = Client(server.socket, token_file=server.reader)
    notes = _kinds(reader).get("note", 0)
    c = Client(proxy.url, token_file=server.record, attempts=3)
    c.backoff = 0.01
    answer = c.append([{"kind": "note", "payload": {"lost": "answer"}}])
    assert proxy.connections == 2
    # The first attempt was stored; the retry found its request id.
    assert answer["already_recorded"] is True
    assert _kinds(reader)["note"] == notes + 1


def test_an_answer_is_never_retried(server: Server, proxy: DroppingProxy) -> None:
    proxy.drop = 0
    c = Client(proxy.url, token_file=server.record, attempts=3)
    with pytest.raises(ServerError) as e:
        c.append([{"kind": "decision", "payload": {}}])
    assert e.value.status == 400 and proxy.connections == 1


def test_a_recorded_decision_is_not_sent_twice(server: Server, proxy: DroppingProxy) -> None:
    c = Client(proxy.url, token_file=server.admin, attempts=3)
    with pytest.raises(ConnectionError):
        c.decide("default", C1, C2)
    assert proxy.connections == 1


def test_no_server_is_a_connection_error_after_the_attempts(tmp_path: pathlib.Path) -> None:
    c = Client(str(tmp_path / "none.sock"), token="rtk_x_y", attempts=2)
    c.backoff = 0.01
    with pytest.raises(FileNotFoundError):
        c.status()


def test_decide_needs_a_pinned_policy(server: Server) -> None:
    c = Client(server.tcp, token_file=server.admin)
    with pytest.raises(ServerError) as e:
        c.decide("default", C1, C2, dry_run=True)
    assert e.value.status == 400 and e.value.kind == "bad_request"
    with pytest.raises(ServerError) as e:
        c.decide("default", "main", C2)
    assert e.value.status == 400 and "baseline" in e.value.message


def test_reads(server: Server) -> None:
    c = Client(server.socket, token_file=server.admin)
    assert c.decisions(last=5)["events"] == []
    assert isinstance(c.summary_markdown(), str)
    assert c.status()["store_id"] == c.health()["store_id"]
    sessions = {t["session"] for t in c.tokens()["tokens"]}
    assert {"py-record", "py-reader", "py-admin"} <= sessions


def test_the_summary_is_of_the_class_and_candidate_asked_for(server: Server) -> None:
    c = Client(server.tcp, token_file=server.admin)
    text = c.summary_markdown(cls="prompt", candidate=C2)
    assert "no decision recorded in this store for class ` prompt ` candidate ` " + C2[:8] in text, text
    with pytest.raises(ServerError) as e:
        c.summary_markdown(candidate="main")
    assert (e.value.status, e.value.kind) == (400, "bad_request") and "candidate" in e.value.message


def test_a_revoked_token_is_refused_at_once(server: Server) -> None:
    admin = Client(server.socket, token_file=server.admin)
    minted = admin.mint_token(["record"], "py-temp", cell="ci-7")
    assert minted["token"].startswith(f"rtk_{minted['id']}_")
    c = Client(server.tcp, token=minted["token"])
    assert len(c.append([{"kind": "note", "payload": {"before": "revoke"}}])["receipts"]) == 1
    admin.revoke_token(minted["id"])
    with pytest.raises(ServerError) as e:
        c.append([{"kind": "note", "payload": {"after": "revoke"}}])
    assert (e.value.status, e.value.kind) == (403, "forbidden")
    assert "revoked" in e.value.message
    with pytest.raises(ServerError) as e:
        admin.revoke_token("0000000000000000")
    assert e.value.status == 404


def test_a_token_minted_to_expire_in_12h_lives_12_hours_as_the_cli_would_mint_it(
    server: Server,
) -> None:
    import time

    admin = Client(server.socket, token_file=server.admin)
    before = int(time.time() * 1000)
    minted = admin.mint_token("read", "py-12h", expires="12h")
    after = int(time.time() * 1000)
    (token,) = [t for t in admin.tokens()["tokens"] if t["id"] == minted["id"]]
    twelve_hours = 12 * 3600 * 1000
    # Read against the server's clock, between the two readings of ours.
    assert before + twelve_hours <= token["expires_at_ms"] <= after + twelve_hours, token
    assert Client(server.tcp, token=minted["token"]).status()["store_id"]
    with pytest.raises(ServerError) as e:
        admin.mint_token("read", "py-12x", expires="12x")
    assert (e.value.status, e.value.kind) == (400, "bad_request")
    assert "the unit is ms, s, m, h or d" in e.value.message


def test_a_token_and_a_token_file_are_one_or_the_other(server: Server) -> None:
    with pytest.raises(ValueError):
        Client(server.socket, token="rtk_a_b", token_file=server.record)
    with pytest.raises(ValueError):
        Client("https://127.0.0.1:1")


def test_a_token_is_never_sent_in_clear_text_to_another_machine(server: Server) -> None:
    is_loopback = sys.modules[Client.__module__].is_loopback
    for host, local in [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("::2", False),
    ]:
        assert is_loopback(host) == local, host
    with pytest.raises(ValueError, match="refusing to send the token in clear text"):
        Client("http://10.255.255.1:9", token="rtk_x_y")
    with pytest.raises(ValueError, match="refusing to send the token"):
        Client("example.com:8787", token_file=server.record)
    # Without a token nothing secret is sent: allowed (health, openapi).
    Client("http://10.255.255.1:9")


def test_a_write_past_a_minted_quota_is_429_over_quota_and_stores_nothing(server: Server) -> None:
    admin = Client(server.socket, token_file=server.admin)
    minted = admin.mint_token("record", "py-quota", cell="py-cell", max_events=2)
    c = Client(server.socket, token=minted["token"])
    c.append([{"kind": "note", "payload": {"q": 1}}, {"kind": "note", "payload": {"q": 2}}])
    reader = Client(server.socket, token_file=server.reader)
    size = _size(reader)
    with pytest.raises(ServerError) as e:
        c.append([{"kind": "note", "payload": {"q": 3}}])
    assert (e.value.status, e.value.kind) == (429, "over_quota")
    assert "max_events" in e.value.message
    assert _size(reader) == size

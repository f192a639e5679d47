"""`mindtui mcp` against a curious or broken agent: raw lines on the real stdio transport.

Each test starts `python -m mindtui mcp --db ...` as a child process and writes bytes to its
stdin, the way a client with a bug would, then reads its stdout line by line (a reader thread
and a queue: waiting on the next line, never sleeping). Every line the server writes must be a
JSON-RPC message, a bad line must get an error answer (the SDK's own transport dropped it and
the client waited for ever), and the server must keep serving, end on stdin's end, on SIGINT
and SIGTERM, and never echo more than a bounded message.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading

import pytest
from tui_support import build_fixed_db

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.errors import InputError
from mindtui.mcp.transport import MAX_IN_FLIGHT, MAX_MESSAGE_BYTES, id_in_head
from mindtui.service import SearchOptions, Service

from conftest import REPO
from test_mcp import call, ok, serving

TIMEOUT_S = 60  # a line the server owes; far more than any answer here takes
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def fixed_db(sample_vault, db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_MODELS__EMBEDDING_PATH", str(tmp_path / "absent.gguf"))
    build_fixed_db(sample_vault.root, db_path)
    return db_path


class RawServer:
    """The server as a child process, spoken to in raw lines."""

    def __init__(self, db, *extra: str, reading: bool = True) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "mindtui", "mcp", "--db", str(db), *extra],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=dict(os.environ), cwd=str(REPO))
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        if reading:
            self.start_reading()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    def start_reading(self) -> None:
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict | None:
        """The next message the server writes (None: its stdout ended); each line is JSON."""
        line = self.lines.get(timeout=TIMEOUT_S)
        return None if line is None else json.loads(line)

    def ask(self, message) -> dict:
        self.send(message)
        return self.receive()

    def start(self) -> "RawServer":
        assert self.ask(INIT)["result"]["serverInfo"]["name"] == "mindtui"
        self.send(INITIALIZED)
        return self

    def tool(self, request_id, name: str, arguments) -> dict:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}

    def close(self) -> tuple[int, str]:
        """Close stdin; the exit code once the server has ended, and its stderr."""
        self.process.stdin.close()
        code = self.process.wait(TIMEOUT_S)
        return code, b"".join(self.stderr).decode("utf-8", "replace")


def search_works(server: RawServer, request_id) -> bool:
    answer = server.ask(server.tool(request_id, "search", {"query": "SQLite", "limit": 1}))
    return answer["id"] == request_id and not answer["result"]["isError"] and bool(answer["result"]["content"])


GARBAGE = [  # (line, the error code, the id it is answered with)
    (b"not json", -32700, None),
    (b"[1, 2]", -32600, None),  # a batch: not in this protocol
    (b"42", -32600, None),
    (b'{"id": 5, "method": "ping"}', -32600, 5),  # no "jsonrpc"
    (b'{"jsonrpc": "1.0", "id": 6, "method": "ping"}', -32600, 6),
    (b'{"jsonrpc": "2.0", "id": 7}', -32600, 7),  # neither request nor response
    (b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": "x"}', -32600, 8),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),  # the SDK took it for a notification
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    (b'\xff\xfe{"jsonrpc": "2.0", "id": 9, "method": "ping"}', -32700, None),  # not UTF-8, then not JSON
    (b'{"jsonrpc": "2.0", "id": 10, "method": "ping", "params": {"q": "a\x00b"}}', -32700, None),  # a raw NUL
    (b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"n": NaN}}', -32700, None),
    (b'{"jsonrpc": "2.0", "id": 12, "method": "ping", "params": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
     -32700, None),
    (b'{"jsonrpc": "2.0", "id": 13, "method": "ping", "params": {"x": ' + b"[" * 100 + b"]" * 100 + b"}}",
     -32600, 13),
]


def test_every_bad_line_gets_an_error_answer_and_the_server_keeps_serving(fixed_db):
    server = RawServer(fixed_db).start()
    for line, code, request_id in GARBAGE:
        answer = server.ask(line)
        assert answer["error"]["code"] == code and answer["id"] == request_id, (line[:80], answer)
        assert answer["error"]["message"] and len(answer["error"]["message"]) < 300
        assert search_works(server, f"after {request_id}")
    server.send(b"   ")  # a blank line is no message: nothing comes back for it, the next answer is the ping's
    assert server.ask({"jsonrpc": "2.0", "id": "ping", "method": "ping"})["id"] == "ping"
    # lone surrogates are valid JSON: the request is served, with U+FFFD in their place
    answer = server.ask(b'{"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": "context_pack", '
                        b'"arguments": {"query": "SQLite \\ud800 \\udfff"}}}')
    assert answer["id"] == 20 and not answer["result"]["isError"], answer
    assert answer["result"]["structuredContent"]["seed"] == {"query": "SQLite \ufffd \ufffd"}
    code, stderr = server.close()
    assert code == 0 and "Traceback" not in stderr
    assert stderr.count("mindtui mcp: refused a line") == len(GARBAGE)


def test_a_huge_line_is_refused_without_reading_it_into_memory(fixed_db):
    server = RawServer(fixed_db).start()

    def peak_kb() -> int:
        status = open(f"/proc/{server.process.pid}/status").read()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))

    before = peak_kb()
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"a" * 50_000_000 + b'"}}'
    answer = server.ask(huge)
    assert answer["id"] == 1 and answer["error"]["code"] == -32600  # its id read from the start it kept
    assert f"at most {MAX_MESSAGE_BYTES}" in answer["error"]["message"]
    assert peak_kb() - before < 60_000  # the SDK's transport read it whole: ~490 MB more
    assert search_works(server, 2)  # the next line is read from its start
    assert server.close()[0] == 0


@pytest.mark.parametrize(("head", "found"), [
    (b'{"jsonrpc": "2.0", "id": 908, "method": "tools/call", "params": {"q": "aaa', 908),
    (b'{"method": "x", "id" : "abc-1", "params": {"q": "aaa', "abc-1"),
    (b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"id": 5, "q": "aaa', None),  # nested: not its id
    (b'{"jsonrpc": "2.0", "params": {"q": "\\"id\\": 7, aaa', None),  # inside a string
    (b'{"jsonrpc": "2.0", "id": 12', None),  # cut inside the value: maybe 123
    (b'{"jsonrpc": "2.0", "id": null, "x": "aaa', None),
    (b'{"id": true, "x": "aaa', None),
    (b'[{"id": 3}, "aaa', None),
])
def test_the_id_of_a_line_too_long_to_read_comes_from_its_start(head, found):
    assert id_in_head(head) == found


def test_the_requests_read_before_stdin_ends_are_answered(fixed_db):
    """`printf '...' | mindtui mcp`: stdin ends right after the requests."""
    server = RawServer(fixed_db)
    server.send(INIT)
    server.send(INITIALIZED)
    server.send(server.tool(1, "search", {"query": "SQLite", "limit": 1}))
    server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    server.process.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "meth')  # cut off mid-request
    code, stderr = server.close()
    answers = list(iter(server.receive, None))
    assert code == 0 and "Traceback" not in stderr
    assert {a["id"] for a in answers} == {"init", 1, 2, None}  # None: the cut line's parse error
    assert next(a for a in answers if a["id"] == 1)["result"]["structuredContent"]["results"]


def test_a_client_that_reads_no_answers_stops_the_server_reading(fixed_db):
    """The answers wait in the server until they are read: at MAX_IN_FLIGHT of them it reads no
    further request (it ran them all and held every answer: memory without bound)."""
    server = RawServer(fixed_db, reading=False)
    server.send(INIT)
    assert json.loads(server.process.stdout.readline())["id"] == "init"
    server.send(INITIALIZED)
    wire = server.process.stdin.fileno()
    os.set_blocking(wire, False)
    total, sent, pending = 200, 0, b""
    while sent < total:  # ~4 KB lines: the pipe holds 16; each answer (~100 KB) fills the other pipe
        pending = pending or b" " * 4000 + json.dumps(server.tool(sent, "context_pack", {
            "query": "SQLite Suche", "budget_tokens": 100_000, "limit": 20})).encode() + b"\n"
        try:
            pending = pending[os.write(wire, pending):]
        except BlockingIOError:
            if not select.select([], [wire], [], 3)[1]:
                break  # the server has stopped reading
            continue
        sent += 0 if pending else 1
    assert sent < total and sent <= MAX_IN_FLIGHT + 40, sent  # in flight, and what the pipes and buffers hold
    server.start_reading()  # the answers flow: the server reads on
    os.set_blocking(wire, True)
    if pending:
        server.process.stdin.write(pending)
        sent += 1
    code, stderr = server.close()
    answers = list(iter(server.receive, None))
    assert code == 0 and sorted(a["id"] for a in answers) == list(range(sent))
    odd = [a for a in answers if not a.get("result", {}).get("structuredContent", {}).get("notes")]
    assert not odd, (odd[:1], stderr[-2000:])  # (seen once in a loaded full run: what it was is kept)


def test_requests_in_flight_past_the_services_connections_wait_for_one(fixed_db, monkeypatch):
    """MAX_IN_FLIGHT calls ran at once on the service's 8 connections: the calls past 8 waited in
    its pool, which gives up after database.busy_timeout_ms (a loaded full run got an error
    result so). Made certain here with a pool that gives up after 1 ms."""
    monkeypatch.setenv("MINDTUI_DATABASE__BUSY_TIMEOUT_MS", "1")
    server = RawServer(fixed_db).start()
    for request_id in range(MAX_IN_FLIGHT):
        server.send(server.tool(request_id, "context_pack", {"query": "SQLite Suche", "budget_tokens": 100_000,
                                                              "limit": 20}))
    answers = [server.receive() for _ in range(MAX_IN_FLIGHT)]
    failed = [a["result"]["structuredContent"] for a in answers if a["result"]["isError"]]
    assert failed == [] and sorted(a["id"] for a in answers) == list(range(MAX_IN_FLIGHT))
    assert server.close()[0] == 0


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_a_signal_ends_the_server(fixed_db, signum, code):
    server = RawServer(fixed_db).start()
    assert search_works(server, 1)
    server.process.send_signal(signum)
    assert server.process.wait(TIMEOUT_S) == code  # the SDK's stdin read hung on SIGINT; SIGTERM killed it
    assert "Traceback" not in b"".join(server.stderr).decode()


async def test_whole_numbers_written_as_floats_are_taken(fixed_db):
    """JSON Schema counts 5.0 as an integer: the checks let it through, the tools failed on it."""
    async with serving(fixed_db) as client:
        assert len((await ok(client, "search", {"query": "SQLite", "limit": 2.0}))["results"]) == 2
        assert (await ok(client, "neighbors", {"note": "SQLite", "limit": 1.0}))["groups"]
        assert len((await ok(client, "get_note", {"note": "SQLite", "max_chars": 100.0}))["text"]) == 100
        assert (await ok(client, "knowledge_search", {"query": "SQLite", "limit": 2.0, "type": "decision"}))["items"]
        pack = await ok(client, "context_pack", {"query": "SQLite", "limit": 2.0, "budget_tokens": 600.0})
        assert pack["budget_tokens"] == 600 and isinstance(pack["budget_tokens"], int) and pack["notes"]
        is_error, data = await call(client, "search", {"query": "SQLite", "limit": 2.5})
        assert is_error and data["error"] == "bad_arguments"


def test_the_service_refuses_limits_that_are_not_whole_numbers(fixed_db):
    with Service(load_settings().with_overrides(db=str(fixed_db)), audience=Audience.AGENT) as agent:
        for limit in (5.0, "5", True, 0):
            with pytest.raises(InputError, match="limit must be a whole number"):
                agent.search("SQLite", SearchOptions(limit=limit, log=False))
        for arguments in ({"budget_tokens": 600.0}, {"limit": 2.0}):
            with pytest.raises(InputError, match="must be a whole number"):
                agent.context_pack(query="SQLite", **arguments)


async def test_an_error_quotes_a_long_value_cut_short(fixed_db):
    async with serving(fixed_db) as client:
        is_error, data = await call(client, "search", {"query": "x" * 1_000_000})
        assert is_error and data["error"] == "bad_arguments" and "is too long" in data["message"]
        assert "(1,000,000 characters)" in data["message"] and len(data["message"]) < 300  # its length, not its repr's
        is_error, data = await call(client, "search", {"query": "x", "y" * 100_000: 1})
        assert is_error and len(data["message"]) < 500
        is_error, data = await call(client, "z" * 1_000_000)
        assert is_error and data["error"] == "unknown_tool" and len(data["message"]) < 500


async def test_a_context_pack_for_a_query_that_finds_a_knowledge_item_about_a_topic(fixed_db):
    """A topic item has no note: taken as the pack's seed, it was 'no note '''."""
    settings = load_settings().with_overrides(db=str(fixed_db))
    with Service(settings, audience=Audience.OWNER) as owner:
        added = owner.knowledge_submit({"schema": "knowledge_proposal.v1", "type": "fact", "about": "topic:Fische",
                                        "title": "Der Quastenflosser lebt vor den Komoren, neben SQLite"})
        assert added.decision == "add", added
    async with serving(fixed_db) as client:
        assert (await ok(client, "knowledge_search", {"query": "Quastenflosser"}))["items"]
        assert (await ok(client, "context_pack", {"query": "Quastenflosser"}))["notes"] == []
        pack = await ok(client, "context_pack", {"query": "SQLite Quastenflosser", "limit": 20})
        ids = [note["id"] for note in pack["notes"]]
        assert ids and all(ids) and len(set(ids)) == len(ids)


async def test_a_proposal_naming_an_item_beyond_sqlites_integers_is_invalid(fixed_db):
    async with serving(fixed_db, "--allow-proposals") as client:
        for supersedes in (2**63, 2**70):
            data = await ok(client, "propose_knowledge", {"type": "fact", "title": "Neu", "supersedes": supersedes})
            assert data["decision"] == "invalid" and "supersedes" in data["reason"], data


async def test_an_agent_is_not_told_where_the_owners_model_lives(fixed_db, tmp_path):
    async with serving(fixed_db) as client:
        found = await ok(client, "search", {"query": "SQLite"})
    assert found["results"] and any("full-text" in notice for notice in found["notices"])
    assert not [notice for notice in found["notices"] if str(tmp_path) in notice or ".gguf" in notice]


def test_protocol_errors_say_what_is_wrong(fixed_db):
    server = RawServer(fixed_db)
    early = server.ask(server.tool(1, "search", {"query": "SQLite"}))
    assert early["error"]["code"] == -32602 and "send `initialize`" in early["error"]["message"]
    server.start()
    listed = server.ask(server.tool(2, "search", ["SQLite"]))
    assert listed["error"]["code"] == -32602 and "arguments" in listed["error"]["message"]
    named = server.ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}})
    assert named["error"]["code"] == -32602 and "name" in named["error"]["message"]
    assert search_works(server, 4)
    assert server.close()[0] == 0


def test_a_request_with_the_id_of_one_in_flight_is_refused(fixed_db):
    """The first answer (~100 KB, more than the pipe holds) waits unread, so the writer holds it
    and the next two requests stay in flight: a ping with the id of one of them is refused (its
    answer could not be told apart), and is served once that answer has come."""
    server = RawServer(fixed_db, reading=False)
    server.send(INIT)
    assert json.loads(server.process.stdout.readline())["id"] == "init"
    server.send(INITIALIZED)
    for request_id in (1, 2, 3):
        server.send(server.tool(request_id, "context_pack", {"query": "SQLite Suche", "budget_tokens": 100_000,
                                                             "limit": 20}))
    server.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    server.start_reading()
    answers = [server.receive() for _ in range(4)]
    assert sorted(a["id"] for a in answers if "result" in a) == [1, 2, 3]
    assert all(a["result"]["structuredContent"]["notes"] for a in answers if "result" in a)
    (refused,) = [a for a in answers if "error" in a]
    assert refused["id"] == 3 and refused["error"]["code"] == -32600 and "not yet answered" in refused["error"]["message"]
    assert server.ask({"jsonrpc": "2.0", "id": 3, "method": "ping"}) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    code, stderr = server.close()
    assert code == 0 and stderr.count("refused a line") == 1

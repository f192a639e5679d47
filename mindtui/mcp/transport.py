"""The stdio transport of `mindtui mcp`: one JSON-RPC message per line on stdin and stdout.

It replaces the SDK's `mcp.server.stdio.stdio_server`, which an agent could break (mcp 2.3):
- a line that is not a JSON-RPC message (not JSON, an array, a number, no `jsonrpc`, params
  that are not an object, an id that is null) was dropped without an answer, so the client
  waited for ever; a string with a lone surrogate (`"\\ud800"`, valid JSON) or a message nested
  100,000 deep was dropped the same way;
- a line was read whole however long it was (a 50 MB line took ~0.5 GB);
- stdin's end cancelled the requests already read: `printf '...' | mindtui mcp` got no answers;
- the read blocked in a worker thread nothing could interrupt: Ctrl-C left the server hanging
  until the client wrote again;
- it read on however many requests were unanswered: a client that sent and did not read had
  them all run and every answer held in memory.
Here every line gets an answer: a message, or a JSON-RPC error (parse error, invalid request,
message too large) with the request's id when it has one, and one line on stderr. A line is
read up to MAX_MESSAGE_BYTES (the rest is skipped unread into memory); lone surrogates become
U+FFFD, as the SDK does with bytes that are not UTF-8. At stdin's end the requests in flight are
answered first (at most DRAIN_TIMEOUT_S). With MAX_IN_FLIGHT requests unanswered a further
request waits and no line after it is read until one is answered (the client's writes then wait:
flow control); a notification before it (a cancel) still goes through. A request with the id of
one in flight is refused: two answers with one id cannot be told apart. While serving, fd 0
reads /dev/null and fd 1 writes to stderr (as the SDK's transport does), so nothing else in the
process can corrupt the stream.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections import Counter
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

# The largest request a tool takes is a proposal of ~25,000 characters (~150 KB with every
# character escaped); 4 MiB leaves room for any client's framing and bounds what one line costs.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64  # no request of this protocol nests deeper than ~6; deeper ones only cost stack
# A client that sends requests without reading the answers (a pipelined loop, a stuck reader)
# would have them all run and their answers held: ~3.5 MB more every second for 600 context packs.
# At this many unanswered requests the server reads no further line until one is answered.
MAX_IN_FLIGHT = 16
DRAIN_TIMEOUT_S = 60.0  # a tool call takes well under a second; a stuck one must not keep the process
READ_CHUNK = 64 * 1024
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Refused(Exception):
    """A line that is not a message the server can take: the JSON-RPC error's code, and the id to answer."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.request_id = code, request_id


def _not_a_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _request_id(data: Any) -> Any:
    """The id to answer with: the message's own when it is a valid one, else null."""
    if isinstance(data, dict):
        value = data.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
    return None


def _checked(data: Any, surrogates: bool) -> Any:
    """`data` nested at most MAX_DEPTH deep, its lone surrogates replaced (iterative: no stack)."""
    clean = (lambda text: _LONE_SURROGATE.sub("\ufffd", text)) if surrogates else (lambda text: text)
    root = [data]
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Refused(types.INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels",
                          _request_id(data))
        if isinstance(container, dict):
            if surrogates:
                renamed = {clean(key): value for key, value in container.items()}
                container.clear()
                container.update(renamed)
            keys = container.keys()
        else:
            keys = range(len(container))
        for key in keys:
            value = container[key]
            if isinstance(value, str):
                container[key] = clean(value)
            elif isinstance(value, (dict, list)):
                stack.append((value, depth + 1))
    return root[0]


def parse_line(line: bytes) -> SessionMessage | None:
    """One line as a message, None for a blank line; Refused for anything else."""
    text = line.decode("utf-8", errors="replace")  # as the SDK's transport: U+FFFD for bytes not UTF-8
    if not text.strip():
        return None
    try:
        data = json.loads(text, parse_constant=_not_a_constant)
    except RecursionError:
        raise Refused(types.PARSE_ERROR, f"Parse error: nested too deeply (at most {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise Refused(types.PARSE_ERROR, f"Parse error: not JSON ({exc})") from None
    if isinstance(data, list):
        raise Refused(types.INVALID_REQUEST, "Invalid Request: batches are not supported; send one JSON object "
                                             "per line")
    if not isinstance(data, dict):
        raise Refused(types.INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {type(data).__name__}")
    data = _checked(data, surrogates=bool(_SURROGATE_ESCAPE.search(text)))
    if "method" in data and "id" in data and _request_id(data) is None:
        # the SDK would take it for a notification and never answer it
        raise Refused(types.INVALID_REQUEST, "Invalid Request: a request's id is a string or an integer")
    try:
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except (ValidationError, RecursionError):
        raise Refused(types.INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message ("jsonrpc": "2.0", a '
                                             '"method" string, "params" an object if given, and for a request an '
                                             '"id" that is a string or an integer)', _request_id(data)) from None
    return SessionMessage(message)


HEAD_BYTES = 4096  # of a line too long to read: kept to find its id (clients write it near the start)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_ID_VALUE = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)\s*[,}]')


def id_in_head(head: bytes) -> Any:
    """The top-level "id" of a message of which only `head` was read, or None: only a complete
    string or integer value of a key of the outermost object counts (an "id" nested in params
    does not, so an answer never carries another request's id)."""
    text = head.decode("utf-8", errors="replace")
    depth, at = 0, 0
    if not text.lstrip().startswith("{"):
        return None
    while at < len(text):
        char = text[at]
        if char == '"':
            string = _JSON_STRING.match(text, at)
            if string is None:
                return None  # cut inside a string
            if depth == 1 and string.group() == '"id"':
                value = _JSON_ID_VALUE.match(text, string.end())
                if value is not None:
                    return _request_id({"id": json.loads(value.group(1))})
            at = string.end()
            continue
        depth += 1 if char in "{[" else -1 if char in "}]" else 0
        at += 1
    return None


class _LineReader:
    """Lines of at most `limit` bytes from a file descriptor, read by a daemon thread (a blocked
    read never keeps the process from ending). A longer line is skipped, not kept: its size and
    its first HEAD_BYTES instead (for its id)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.send, self.receive = anyio.create_memory_object_stream[bytes | tuple[int, bytes] | None](1)

    def start(self) -> None:
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._run, args=(token,), name="mindtui-mcp-stdin", daemon=True).start()

    def _run(self, token) -> None:
        try:
            self._read(lambda item: anyio.from_thread.run(self.send.send, item, token=token))
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the server has ended: nobody is listening any more

    def _read(self, put) -> None:
        buffer, skipped = bytearray(), 0  # skipped: bytes of an overlong line thrown away so far
        head = b""  # the first bytes of the overlong line being skipped
        while True:
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except OSError as exc:
                print(f"mindtui mcp: stdin failed ({exc}); ending", file=sys.stderr, flush=True)
                chunk = b""
            if not chunk:
                if skipped or len(buffer) > self.limit:
                    put((skipped + len(buffer), head if skipped else bytes(buffer[:HEAD_BYTES])))
                elif buffer:
                    put(bytes(buffer))  # a last line without its newline: answered as any other
                put(None)
                return
            start = len(buffer)  # only the new bytes can hold a newline
            buffer += chunk
            line_start = 0
            while (end := buffer.find(b"\n", max(start, line_start))) >= 0:
                size = skipped + end - line_start
                if skipped or size > self.limit:
                    put((size, head if skipped else bytes(buffer[line_start:line_start + HEAD_BYTES])))
                else:
                    put(bytes(buffer[line_start:end]))
                skipped, line_start = 0, end + 1
            del buffer[:line_start]
            if len(buffer) > self.limit:
                if not skipped:
                    head = bytes(buffer[:HEAD_BYTES])
                skipped += len(buffer)
                buffer.clear()


class _InFlight:
    """The requests read and not yet answered (nor cancelled by the client), by id."""

    def __init__(self) -> None:
        self.ids: Counter = Counter()
        self.total = 0
        self._changed = anyio.Event()

    def add(self, request_id) -> None:
        self.ids[request_id] += 1
        self.total += 1

    def done(self, request_id) -> None:
        if self.ids.get(request_id, 0) > 0:
            self.ids[request_id] -= 1
            self.total -= 1
            if not self.ids[request_id]:
                del self.ids[request_id]
            self._changed.set()
            self._changed = anyio.Event()

    async def at_most(self, count: int) -> None:
        """Until no more than `count` requests are in flight."""
        while self.total > count:
            await self._changed.wait()


def _error(request_id, code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))


def _claim_stdio() -> tuple[int, int, Callable[[], None]]:
    """Private copies of fd 0 and 1 for the wire; fd 0 then reads /dev/null, fd 1 writes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)

    def restore() -> None:
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)  # wire_in stays open: the reader thread may still be blocked on it

    return wire_in, wire_out, restore


@asynccontextmanager
async def stdio_transport(limit: int = MAX_MESSAGE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `Server.run` over this process's stdin and stdout."""
    wire_in, wire_out, restore = _claim_stdio()
    out = os.fdopen(wire_out, "wb", closefd=False)
    reader = _LineReader(wire_in, limit)
    to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_wire, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    errors_out = to_wire.clone()  # the refusals' own sender: the server closes to_wire when it ends
    in_flight = _InFlight()

    def write(message: SessionMessage) -> None:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        out.write(text.encode("utf-8", "replace") + b"\n")
        out.flush()

    refusals: set[int] = set()  # answers to refused lines (not to a request in flight, whatever their id)

    async def refuse(request_id, code: int, message: str) -> None:
        print(f"mindtui mcp: refused a line: {message}", file=sys.stderr, flush=True)
        answer = _error(request_id, code, message)
        refusals.add(id(answer))
        await errors_out.send(answer)

    reading = anyio.CancelScope()

    async def read_wire() -> None:
        with reading:
            async with to_server, errors_out:
                await _relay(reader, to_server, in_flight, refuse, limit)
                with anyio.move_on_after(DRAIN_TIMEOUT_S) as waited:
                    await in_flight.at_most(0)  # stdin's end: answer what was asked before it
                if waited.cancelled_caught:
                    print(f"mindtui mcp: stdin closed; {in_flight.total} request(s) still running "
                          f"after {DRAIN_TIMEOUT_S:.0f} s are dropped", file=sys.stderr, flush=True)

    async def write_wire() -> None:
        async with from_server:
            async for message in from_server:
                # Answered once its answer is on its way out (one more is then held: the one being
                # written), so the client that has read it may use its id again.
                if id(message) in refusals:
                    refusals.discard(id(message))
                elif isinstance(message.message, (types.JSONRPCResponse, types.JSONRPCError)):
                    in_flight.done(message.message.id)
                try:
                    await anyio.to_thread.run_sync(write, message)
                except OSError as exc:  # the client closed our stdout: nobody reads the answers any more
                    print(f"mindtui mcp: stdout failed ({exc}); ending", file=sys.stderr, flush=True)
                    tg.cancel_scope.cancel()
                    return

    try:
        async with anyio.create_task_group() as tg:
            reader.start()
            tg.start_soon(read_wire)
            tg.start_soon(write_wire)
            try:
                yield from_wire, to_wire
            finally:
                reading.cancel()  # the server ended (a signal, say) before stdin did: read no more
                to_wire.close()  # the writer ends once it has written what the server sent
    finally:
        restore()


async def _relay(reader: _LineReader, to_server, in_flight: _InFlight, refuse, limit: int) -> None:
    """Each line to the server as a message, or refused; until stdin's end. With MAX_IN_FLIGHT
    requests unanswered a further request waits, and no line after it is read (once the pipe is
    full, the client waits too); a notification is passed on at once, so a client that is told
    nothing can still cancel what it asked. A request whose id is that of one in flight is refused
    (its answer could not be told from the other's)."""
    while True:
        try:
            line = await reader.receive.receive()
        except anyio.EndOfStream:
            break
        if line is None:
            break
        if isinstance(line, tuple):
            size, head = line
            await refuse(id_in_head(head), types.INVALID_REQUEST, f"Invalid Request: a message of {size} bytes; "
                                                                  f"at most {limit} are read")
            continue
        try:
            message = parse_line(line)
        except Refused as exc:
            await refuse(exc.request_id, exc.code, str(exc))
            continue
        if message is None:
            continue
        match message.message:
            case types.JSONRPCRequest(id=request_id):
                await in_flight.at_most(MAX_IN_FLIGHT - 1)
                if in_flight.ids.get(request_id):
                    await refuse(request_id, types.INVALID_REQUEST,
                                 f"Invalid Request: id {json.dumps(request_id)[:80]} is that of a request not yet answered")
                    continue
                in_flight.add(request_id)
            case types.JSONRPCNotification(method="notifications/cancelled", params={"requestId": rid}):
                in_flight.done(rid)  # a cancelled request is never answered
        await to_server.send(message)

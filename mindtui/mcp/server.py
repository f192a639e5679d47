"""`mindtui mcp`: the Model Context Protocol over stdio (the official `mcp` SDK, low-level server).

One service for the audience `agent` serves every call: private notes and notes with
`ai_processing: none` never come out (the service's rule), a hidden note asked for by name is
"not found". The embedding model starts loading in the background at start; searches do not wait
for it (full-text answers with a notice meanwhile). Each call runs in a worker thread, so a slow
call never blocks the protocol. A failing call is an error result (`isError`) with a message
the agent can act on, and the server keeps serving. Read-only unless `--allow-proposals`.
The stdio transport is mindtui's own (mindtui.mcp.transport says why): a line that is no message
gets an error answer, never silence.
"""

from __future__ import annotations

import signal
import sys
import traceback

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mindtui import __version__
from mindtui.config import Settings
from mindtui.mcp.tools import TOOLS, ToolInputError, ToolSpec, cut
from mindtui.mcp.transport import stdio_transport
from mindtui.service import (
    PARALLEL_CALLS, AmbiguousNote, Audience, DatabaseError, InputError, MindtuiError, NotFound, NotAllowed,
    Service,
)
from mindtui.service.context import dumps

INSTRUCTIONS = ("mindtui answers from the owner's markdown vault (notes, their links and relations, curated "
                "knowledge). Start with `search` or `context_pack`; open a note with `get_note`, see what belongs "
                "with it with `neighbors`. Private notes are never shown; a note you cannot see is 'not found'.")


def offered_tools(allow_proposals: bool) -> dict[str, ToolSpec]:
    """The tools this server offers: the writing one only with --allow-proposals."""
    return {spec.name: spec for spec in TOOLS if allow_proposals or not spec.writes}


def error_result(kind: str, message: str) -> types.CallToolResult:
    payload = {"error": kind, "message": message}
    return types.CallToolResult(content=[types.TextContent(text=dumps(payload))], structured_content=payload,
                                is_error=True)


def client_name(ctx) -> str:
    """The MCP client's name from its handshake (`agent:<name>` is the proposals' source)."""
    params = ctx.session.client_params  # the handshake era
    name = params.client_info.name if params is not None and params.client_info is not None else None
    if not name and isinstance(ctx.meta, dict):  # the per-request era (2026-07-28): each request names its client
        info = ctx.meta.get(types.CLIENT_INFO_META_KEY)
        name = info.get("name") if isinstance(info, dict) else getattr(info, "name", None)
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in (name or "").strip())[:64]
    return cleaned or "unknown"


def call(service: Service, tools: dict[str, ToolSpec], name: str, arguments: dict | None,
         client: str) -> types.CallToolResult:
    """One tool call, in a worker thread: the result as compact JSON, or an error result."""
    spec = tools.get(name)
    if spec is None:
        hint = (" (the server runs read-only: start it with --allow-proposals)"
                if any(t.name == name and t.writes for t in TOOLS) else "")
        return error_result("unknown_tool", f"no tool {cut(repr(name), 60)}{hint}; tools: {', '.join(tools)}")
    try:
        result = spec.run(service, spec.check(arguments), client)
    except AmbiguousNote as exc:  # a name several visible notes have: the message lists their paths
        return error_result("ambiguous", str(exc))
    except NotFound as exc:  # a note, a knowledge item
        return error_result("not_found", str(exc))
    except (ToolInputError, InputError) as exc:
        return error_result("bad_arguments", str(exc))
    except NotAllowed as exc:
        return error_result("not_allowed", str(exc))
    except MindtuiError as exc:
        return error_result("failed", str(exc))
    except Exception:  # a bug: report it, keep serving
        print(f"mindtui mcp: {name} failed\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        return error_result("internal_error", f"{name} failed inside mindtui (see the server's log)")
    return types.CallToolResult(content=[types.TextContent(text=dumps(result))], structured_content=result)


def build_server(service: Service, allow_proposals: bool = False) -> Server:
    tools = offered_tools(allow_proposals)
    listing = [types.Tool(name=spec.name, description=spec.description, input_schema=spec.schema,
                          annotations=types.ToolAnnotations(read_only_hint=not spec.writes, open_world_hint=False))
               for spec in tools.values()]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    # The transport lets MAX_IN_FLIGHT requests run, the service has PARALLEL_CALLS connections:
    # the calls past those wait here, as long as it takes, instead of in the service's pool,
    # which gives up after database.busy_timeout_ms ("all 8 connections stayed busy": an agent
    # sending 16 context packs at once on a busy machine got errors for some).
    limiter: list[anyio.CapacityLimiter] = []  # made in the event loop, on the first call

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        client = client_name(ctx)
        if not limiter:
            limiter.append(anyio.CapacityLimiter(PARALLEL_CALLS))
        return await anyio.to_thread.run_sync(call, service, tools, params.name, params.arguments, client,
                                              limiter=limiter[0])

    server = Server("mindtui", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                    on_call_tool=call_tool)
    server.middleware.append(clear_protocol_errors)
    return server


async def clear_protocol_errors(ctx, call_next):
    """The SDK (mcp 2.3) answers a request sent before `initialize`, and params its models refuse
    (`arguments` a list, a tool `name` a number), with a bare "Invalid request parameters": an
    agent cannot tell what to change. Same code, a message that says it."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "params"
        message = f"Invalid request parameters for {ctx.method}: {where}: {problem['msg']}"
        raise MCPError(code=types.INVALID_PARAMS, message=message[:300]) from None
    except MCPError as exc:
        if (exc.error.code == types.INVALID_PARAMS and not exc.error.data and ctx.method != "initialize"
                and ctx.session.client_params is None):
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"{ctx.method} before the handshake: send `initialize` (then "
                                   "`notifications/initialized`) first") from None
        raise


def serve(settings: Settings, allow_proposals: bool = False) -> int:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    if not settings.db_path.exists():
        raise DatabaseError(f"{settings.db_path}: no database here (create it with `mindtui index VAULT --db ...`)")
    with Service(settings, audience=Audience.AGENT) as service:
        service.vault_root()  # opens (and checks) the database now rather than on the first call
        service.preload_models()
        server = build_server(service, allow_proposals)

        stopped_by: list[int] = []

        async def main() -> None:
            async with stdio_transport() as (read_stream, write_stream), anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, tg.cancel_scope, stopped_by)
                await server.run(read_stream, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()

        anyio.run(main)
    if stopped_by == [signal.SIGINT]:
        raise KeyboardInterrupt  # the CLI's "interrupted", exit 130
    return 0


async def _stop_on_signal(scope: anyio.CancelScope, stopped_by: list[int]) -> None:
    """Ctrl-C (exit 130) or SIGTERM (exit 0, how a client or systemd stops a server) end the
    server; a tool call running in its thread finishes first (the database stays consistent)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            stopped_by.append(signum)
            scope.cancel()
            return

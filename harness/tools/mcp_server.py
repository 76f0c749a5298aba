"""Asking a live MCP server for its tools: `tools/list` over stdio or streamable HTTP, with the official
`mcp` SDK (the `mcp` extra), imported only here and only when asked.

Owns starting the server (a command, its stderr kept aside and quoted when it fails), the deadline on
its startup and listing, following `nextCursor` pages, and turning every way a server can fail into
one `ListingError` line. The SDK's stdio transport stops the process on the way out, on success, error
or timeout alike. It only lists: it never calls a tool.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from typing import IO, Any, TextIO, cast

from harness.tools.mcp_catalogue import ListingError

DEFAULT_TIMEOUT_S = 20.0


def list_tools(command: Sequence[str] = (), url: str | None = None, *,
               timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[str, list[Mapping[str, Any]]]:
    """The name the server gives itself and its tools (as `tools/list` JSON): the stdio server `command`
    starts, or the server at `url`. Raises `ListingError` (the SDK is missing, the server does not start,
    answer or list in time)."""
    try:
        import anyio
        import mcp  # noqa: F401  (a clear message below when the extra is not installed)
    except ImportError:
        raise ListingError("the mcp SDK is not installed: pip install 'harness[mcp]'") from None
    where = url if url is not None else " ".join(command)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            listed: tuple[str, list[Mapping[str, Any]]] = anyio.run(_listed, list(command), url, timeout_s, errlog)
        except TimeoutError:
            raise ListingError(f"{where}: no tools/list answer within {timeout_s:g} s{_said(errlog)}") from None
        except ListingError:
            raise
        except Exception as exc:  # (whatever a foreign server does is its user's input, not our bug)
            raise ListingError(f"{where}: {_reason(exc)}{_said(errlog)}") from None
    return listed


async def _listed(command: list[str], url: str | None, timeout_s: float,
                  errlog: IO[str]) -> tuple[str, list[Mapping[str, Any]]]:
    import anyio
    from mcp import ClientSession

    if url is not None:
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(url)
    else:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        transport = stdio_client(StdioServerParameters(command=command[0], args=command[1:]),
                                 errlog=cast(TextIO, errlog))
    with anyio.fail_after(timeout_s):
        async with transport as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools: list[Mapping[str, Any]] = []
            cursor: str | None = None
            while True:
                params = None
                if cursor is not None:
                    from mcp.types import PaginatedRequestParams

                    params = PaginatedRequestParams(cursor=cursor)
                page = await session.list_tools(params=params)
                tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    return initialized.server_info.name, tools


def _reason(exc: BaseException) -> str:
    """The innermost first error of an exception group (a task group's), in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "no tools/list answer in time"
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot start the server ({text})"
    return f"the server did not list its tools ({type(exc).__name__}: {text[:200]})"


def _said(errlog: IO[str]) -> str:
    """The last line the server wrote on its stderr, to say why it failed."""
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    return f"; its stderr ends: {lines[-1][:200]}" if lines else ""

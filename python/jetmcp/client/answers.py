"""What a :class:`~jetmcp.client.session.Client` answers the server with the caller's
handlers: a server-to-client request (legacy revisions) and an MRTR input request
(2026-07-28), both through :meth:`Answers._handle_input` (elicitation, sampling, roots,
ping). A base class of ``Client``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.client.support import dump as _dump
from jetmcp.client.support import encode_error as _encode_error
from jetmcp.client.support import maybe_await as _maybe_await
from jetmcp.client.support import root as _root
from jetmcp.client.types import CreateMessageRequestParams, ElicitRequestParams
from jetmcp.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError

if TYPE_CHECKING:
    from jetmcp.client.session import ElicitationHandler, RootsSource, SamplingHandler
    from jetmcp.client.transports import Transport

log = logging.getLogger("jetmcp.client")


class Answers:
    """The client's answers to the server (a base class of
    :class:`~jetmcp.client.session.Client`, whose attributes these are)."""

    if TYPE_CHECKING:
        _transport: Transport
        elicitation_handler: ElicitationHandler | None
        sampling_handler: SamplingHandler | None
        roots: RootsSource | None

    async def _answer_server(self, entry: _wire.Entry) -> None:
        """Answer a server-to-client request (legacy revisions) with the handlers given."""
        raw_id = entry.raw_id
        assert raw_id is not None and entry.method is not None
        params = entry.params() if entry.has_params else {}
        try:
            result = await self._handle_input(
                entry.method, params if isinstance(params, dict) else {}
            )
            reply = _wire.encode_result(raw_id, result)
        except McpError as exc:
            reply = _encode_error(raw_id, exc)
        except Exception as exc:
            log.exception("the %s handler failed", entry.method)
            reply = _wire.encode_error(raw_id, INTERNAL_ERROR, f"{entry.method} failed: {exc}")
        await self._transport.send(reply)

    async def _handle_input(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """What the caller's handlers answer to ``method`` (a server request or an MRTR input
        request)."""
        if method == "elicitation/create":
            if self.elicitation_handler is None:
                raise McpError(METHOD_NOT_FOUND, "elicitation/create: no elicitation_handler")
            request = ElicitRequestParams.model_validate(params)
            return _dump(await _maybe_await(self.elicitation_handler(request)))
        if method == "sampling/createMessage":
            if self.sampling_handler is None:
                raise McpError(METHOD_NOT_FOUND, "sampling/createMessage: no sampling_handler")
            sample = CreateMessageRequestParams.model_validate(params)
            return _dump(await _maybe_await(self.sampling_handler(sample)))
        if method == "roots/list":
            if self.roots is None:
                raise McpError(METHOD_NOT_FOUND, "roots/list: no roots given")
            source = self.roots
            items = await _maybe_await(source()) if callable(source) else source
            return {"roots": [_root(item) for item in items]}
        if method == "ping":
            return {}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")


__all__ = ["Answers"]

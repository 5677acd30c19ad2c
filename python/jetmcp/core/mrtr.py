"""Multi round-trip requests (2026-07-28): the same handler code on both eras.

On a legacy session ``ctx.elicit``, ``ctx.sample`` and ``ctx.list_roots`` send the client a
request and wait for its answer. On 2026-07-28 the server sends no requests: a ``tools/call``,
``prompts/get`` or ``resources/read`` whose handler needs input ends the round with an
``InputRequiredResult``::

    {"resultType": "input_required",
     "inputRequests": {"<key>": {"method": "elicitation/create", "params": {...}}},
     "requestState": "<sealed>"}

The client retries (new id, same params) with ``inputResponses`` ``{"<key>": <result>}`` and
the ``requestState`` echoed; the handler runs again from the top, and each question it asks
is answered from the earlier rounds (carried in the sealed state, see
:mod:`jetmcp.core.request_state`) or from ``inputResponses``. The first unanswered question ends
the round again. Handlers must therefore ask their questions deterministically: the same
questions, in the same order, for the same arguments; work done before a question is done
again on every round (keep it cheap, or park its outcome in ``ctx.request_state``).

Keys: ``key="user_name"`` names a question; without one it is ``<kind>-<n>`` (``elicitation``,
``sampling`` or ``roots``, and the question's position in the run), stable as long as the
handler is deterministic. A key may be asked once per run.

Several questions in one round: ``await ctx.gather(ctx.elicit(...), ctx.sample(...))``
runs them all and ends the round with every unanswered one at once (on a legacy session it
is ``asyncio.gather``).

Inside a task (the ``io.modelcontextprotocol/tasks`` extension) questions do not end the
request: the task waits in ``input_required`` until ``tasks/update`` brings the answers
(see :mod:`jetmcp.server.tasks_ext`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from jetmcp.core.call import Call, Result, Sink
from jetmcp.core.request_state import StateSealer, params_digest
from jetmcp.errors import INVALID_PARAMS, McpError
from jetmcp.protocol.revisions import Revision

if TYPE_CHECKING:
    from jetmcp._wire import Plans
    from jetmcp.core.principal import Principal

#: The input methods, and the kind each one's default keys are named after.
KINDS: dict[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
#: The methods whose results may be an ``InputRequiredResult``.
ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

_MISSING: Any = object()


class InputRequired(BaseException):
    """Raised by a question nobody has answered yet: it ends the round.

    jetmcp catches it around ``tools/call``, ``prompts/get`` and ``resources/read`` handlers and
    answers with an ``InputRequiredResult``. Like ``asyncio.CancelledError`` it is control
    flow, not an error: a ``BaseException``, so handlers that catch ``Exception`` let it by.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests


def _close(question: Any) -> None:
    if isinstance(question, Coroutine):
        question.close()


class Inputs:
    """Where a request's questions to the client are answered (one per request run)."""

    __slots__ = ("_keys", "_seq", "state")

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self._keys: set[str] = set()
        self._seq = 0
        #: The handler's own state across rounds (``ctx.request_state``).
        self.state: dict[str, Any] = state if state is not None else {}

    def adopt(self, other: Inputs) -> None:
        """Go on numbering and checking keys where ``other`` (the same run) left off."""
        self._keys = other._keys
        self._seq = other._seq

    def next_key(self, key: str | None, method: str) -> str:
        self._seq += 1
        chosen = key if key is not None else f"{KINDS.get(method, 'input')}-{self._seq}"
        if not isinstance(chosen, str) or not chosen:
            raise ValueError(f"an input key must be a non-empty string, not {chosen!r}")
        if chosen in self._keys:
            raise ValueError(f"the input key {chosen!r} is asked twice in one request")
        self._keys.add(chosen)
        return chosen

    async def ask(self, key: str | None, method: str, params: dict[str, Any]) -> Any:
        """The client's result for ``method`` (an ``ElicitResult``, ``CreateMessageResult`` or
        ``ListRootsResult``)."""
        raise NotImplementedError

    async def gather(self, questions: Iterable[Awaitable[Any]]) -> list[Any]:
        return list(await asyncio.gather(*questions))

    async def start_task(self) -> None:
        """Go on as a task from here (see ``Context.start_task``); nothing to do by default."""
        return None


class InputRound(Inputs):
    """One round of a 2026-07-28 request: answers come from the sealed state of the earlier
    rounds and from ``inputResponses``; an unanswered question raises :class:`InputRequired`."""

    __slots__ = (
        "_digest",
        "_params_of",
        "carried",
        "escalate",
        "method",
        "params",
        "principal",
        "responses",
        "sealer",
        "used",
    )

    def __init__(
        self,
        method: str,
        params: dict[str, Any] | None,
        sealer: StateSealer,
        responses: dict[str, Any],
        carried: dict[str, Any],
        state: dict[str, Any],
        digest: str | None = None,
        principal: str | None = None,
        *,
        lazy: bool = False,
        params_of: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(state)
        self.method = method
        #: The request's params; with ``params_of`` (and ``lazy``), None until a sealed
        #: round needs them: ``params_of()`` reads them then.
        self.params: dict[str, Any] | None = params
        self._params_of = params_of
        #: The key of the principal that made the request (None without auth).
        self.principal = principal
        # What the sealed state is bound to: the params, and the principal when there is
        # one. ``lazy``: computed only when a round is sealed (the caller vouches that
        # nothing changes the params meanwhile).
        self._digest = digest
        if digest is None and not lazy:
            self._digest = params_digest(self.request_params(), principal)
        self.sealer = sealer
        self.responses = responses
        self.carried = carried
        #: Answers this run consumed: carried to the next round if there is one.
        self.used: dict[str, Any] = {}
        #: Set by the tasks extension for tools that become tasks part-way through.
        self.escalate: Callable[[], Awaitable[None]] | None = None

    async def ask(self, key: str | None, method: str, params: dict[str, Any]) -> Any:
        chosen = self.next_key(key, method)
        # Answers of earlier rounds (server-sealed) win over what this retry claims.
        answer = self.carried.get(chosen, _MISSING)
        if answer is _MISSING:
            answer = self.responses.get(chosen, _MISSING)
        if answer is _MISSING:
            raise InputRequired({chosen: {"method": method, "params": params}})
        if not isinstance(answer, dict):
            raise McpError(
                INVALID_PARAMS,
                f"Invalid params: inputResponses[{chosen!r}] must be an object",
                {"inputKey": chosen},
            )
        self.used[chosen] = answer
        return answer

    async def gather(self, questions: Iterable[Awaitable[Any]]) -> list[Any]:
        pending = list(questions)
        results: list[Any] = []
        missing: dict[str, dict[str, Any]] = {}
        for i, question in enumerate(pending):
            try:
                results.append(await question)
            except InputRequired as exc:
                missing.update(exc.requests)
                results.append(None)
            except BaseException:
                for rest in pending[i + 1 :]:
                    _close(rest)
                raise
        if missing:
            raise InputRequired(missing)
        return results

    async def start_task(self) -> None:
        if self.escalate is not None:
            await self.escalate()

    def request_params(self) -> dict[str, Any]:
        """The request's params (read now if they were left unread)."""
        if self.params is None:
            assert self._params_of is not None
            self.params = self._params_of()
        return self.params

    @property
    def digest(self) -> str:
        if self._digest is None:
            self._digest = params_digest(self.request_params(), self.principal)
        return self._digest

    def result(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The ``InputRequiredResult`` asking ``requests``, with the state sealed for the retry."""
        token = self.sealer.seal(self.method, self.digest, self.used, self.state)
        return {"resultType": "input_required", "inputRequests": requests, "requestState": token}


class RoundCall(Call):
    """A call whose handler may ask the client for input through :attr:`inputs`.

    The round of a first ``tools/call`` (:meth:`first`) is opened only when
    something asks for it: most tools never ask, and need none."""

    __slots__ = ("_inputs", "_params_of", "_rounds")

    def __init__(self, call: Call, inputs: Inputs) -> None:
        super().__init__(
            call.method,
            call.raw_id,
            call.revision,
            call.session,
            call.sink,
            call.meta,
            call.outgoing,
            call.auth,
            call.http_headers,
        )
        self._inputs: Inputs | None = inputs
        self._rounds: Rounds | None = None
        self._params_of: Callable[[], dict[str, Any]] | None = None

    @property
    def inputs(self) -> Inputs:
        """Where this call's questions are answered (its round, opened on first use)."""
        inputs = self._inputs
        if inputs is None:
            rounds = self._rounds
            params_of = self._params_of
            assert rounds is not None and params_of is not None
            inputs = self._inputs = rounds.fresh(self.auth, params_of)
        return inputs

    @inputs.setter
    def inputs(self, inputs: Inputs) -> None:
        self._inputs = inputs

    @classmethod
    def first(
        cls,
        rounds: Rounds,
        params_of: Callable[[], dict[str, Any]],
        raw_id: bytes | None,
        revision: Revision,
        sink: Sink,
        plans: Plans,
        auth: Principal | None,
        http_headers: Any = None,
    ) -> RoundCall:
        """The ``tools/call`` of a 2026-07-28 request the extension planned (``plans``, one
        entry, carrying neither ``inputResponses`` nor ``requestState``; its ``_meta`` read
        from them if asked for) made from its fields, with no :class:`Call` to copy (no
        session, no server-to-client requests). Its round ``rounds`` opens only if the
        handler asks for it (:meth:`Rounds.fresh`), from the params ``params_of`` reads
        (nothing may change them meanwhile)."""
        made = cls.__new__(cls)
        Call.__init__(
            made, "tools/call", raw_id, revision, None, sink, None, None, auth, http_headers
        )
        made._plans = plans
        made._inputs = None
        made._rounds = rounds
        made._params_of = params_of
        return made


class Rounds:
    """Opens rounds from request params and turns unanswered questions into results."""

    __slots__ = ("sealer",)

    def __init__(self, sealer: StateSealer) -> None:
        self.sealer = sealer

    def open(self, params: dict[str, Any], call: Call, lazy: bool = False) -> InputRound:
        """The round for this request; -32602 for malformed ``inputResponses`` and for a
        ``requestState`` that is tampered with, expired, or minted for another request.
        ``lazy``: nothing will change ``params`` while the handler runs (so what a sealed
        round is bound to may be worked out only if one is sealed)."""
        responses = params.get("inputResponses", _MISSING)
        if responses is _MISSING:
            responses = {}
        elif not isinstance(responses, dict):
            raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        token = params.get("requestState")
        carried: dict[str, Any] = {}
        state: dict[str, Any] = {}
        # Bound to the principal too: another principal cannot replay someone's round.
        principal = call.auth.key if call.auth is not None else None
        digest: str | None = None
        if token is not None:
            digest = params_digest(params, principal)
            carried, state = self.sealer.open(token, call.method, digest)
        return InputRound(
            call.method,
            params,
            self.sealer,
            responses,
            carried,
            state,
            digest,
            principal,
            lazy=lazy,
        )

    def call(self, params: dict[str, Any], call: Call, lazy: bool = False) -> RoundCall:
        return RoundCall(call, self.open(params, call, lazy))

    def fresh(self, auth: Principal | None, params_of: Callable[[], dict[str, Any]]) -> InputRound:
        """What :meth:`open` makes of params with neither ``inputResponses`` nor
        ``requestState``, the params themselves read by ``params_of`` only if a round is
        sealed."""
        principal = auth.key if auth is not None else None
        return InputRound(
            "tools/call",
            None,
            self.sealer,
            {},
            {},
            {},
            None,
            principal,
            lazy=True,
            params_of=params_of,
        )

    def settle(self, run: Callable[[], Result], call: RoundCall) -> Result:
        """Run a handler; an unanswered question becomes the ``InputRequiredResult``."""
        inputs = call.inputs
        assert isinstance(inputs, InputRound)
        try:
            result = run()
        except InputRequired as exc:
            return inputs.result(exc.requests)
        if isinstance(result, dict):
            return result
        return _settle(result, inputs)


async def _settle(pending: Awaitable[dict[str, Any]], inputs: InputRound) -> dict[str, Any]:
    try:
        return await pending
    except InputRequired as exc:
        return inputs.result(exc.requests)


__all__ = [
    "KINDS",
    "ROUND_METHODS",
    "InputRequired",
    "InputRound",
    "Inputs",
    "RoundCall",
    "Rounds",
]

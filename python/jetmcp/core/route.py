"""Where a ``tools/call`` goes: the one place that picks its route.

The dispatcher (:class:`~jetmcp.core.dispatch.Dispatcher`, which takes these methods as a
base class) hands every single message to :meth:`Router.answer` then :meth:`Router.resume`,
and every array to :meth:`Router.batch`; what they pick is run by the extension
(``rust/src/py_plan.rs``, ``py_route.rs``), by an era runner's method table
(:mod:`jetmcp.core.runners`) or by the dispatcher's waiting (``Dispatcher._wait``). The
runners pick nothing: they hold how each era checks, calls, shapes and encodes.

The routes, in the order they are tried (name: when taken; why it exists; what runs it).
docs/contributing.md ("Routes of a tools/call") holds the same table.

native
    Planning is on (no tracing), ``tools/call`` is the server's own handler, the tool is
    routed (fast paths on, no scopes, no ``authorize`` hook, parameters the extension reads)
    and it returns a value the extension writes. Why: no jetmcp Python runs between the
    frame and the reply bytes. Run by ``Routes.answer`` / ``Plans.run``
    (``rust/src/py_plan.rs``, ``py_route.rs``, ``py_result.rs``).
outcome
    As native, but the value is one Python shapes, or the tool raised. Why: the extension
    calls, Python shapes what it does not write itself. Run by ``Runner.outcome``
    (``Tool.shape``, ``Tool.failure``: :class:`~jetmcp.protocol.tool_result.ToolShaping`).
async
    As native, for an ``async`` tool: its coroutine, stepped once by the extension when the
    caller awaits in place (``Dispatcher.may_step``). Why: an ``async`` tool that returns
    without waiting costs no task. Run by ``Runner.outcome`` (a ``Pending``), then
    ``Dispatcher._wait`` / ``_finish``. The native engine runs the coroutine as a task of
    its own whose first step the extension takes in the socket callback
    (``jetmcp._wire.eager_task``: :meth:`Router.answer` with ``loop``); what that step does
    not end (a value Python shapes, an exception, a task still running) is finished in the
    dispatcher's eager task (:meth:`Router.settle`).
context-modern
    2026-07-28, a tool that takes a Context. Why: the extension makes the Context itself, and
    its call and input round are built only if the tool asks. Run by ``Plans.run_context``,
    then :meth:`Router.ran` / :meth:`Router.asked` (``Runner.ran``, ``Runner.asked``).
context-legacy
    2024-11-05 .. 2025-11-25, a tool that takes a Context. Why: the extension reads the
    arguments; Python makes the Call and Context. Run by ``Runner.planned_call``, then
    ``Plans.run`` with the Context.
python-at-once
    The route is ``python_call`` (arguments the extension does not pass itself) and the tool
    is ``startable`` with nothing of a Call needed (:func:`~jetmcp.core.runners.made_at_once`).
    Why: such a call still skips the handler's lookups. Run by ``Runner.start_planned``
    (``Tool.start``).
python-handler
    The route is ``python_call``, anything else (tasks, input rounds, a Context). Why: the
    handler's logic is needed, not its lookups. Run by ``Runner.call_planned``
    (``Server.call_found``).
general
    Anything not planned: planning off, a replaced ``tools/call`` handler, scopes or a hook, a
    call the extension does not plan or no longer plans (the tools changed). Why: the exact
    reply for everything, and the reference every other route is tested against. Run by
    ``Runner.entry`` -> ``Runner.request`` -> ``Server._handle_call_tool``.
batch-native
    An array whose every entry plans. Why: one extension call for the whole array. Run by
    ``Plans.run_all``.
batch-mixed
    An array with some entries planned. Why: planned entries still skip Python; the others
    take the general route, in request order. Run by ``Plans.run`` per planned entry, else
    ``Runner.entry``; entries that wait by ``Dispatcher._gather``.

The differential tests (``tests/test_native_parity.py``, ``test_route.py``,
``test_plans.py``, ``test_eager.py``, ``test_model_route.py``, ``test_run_context.py``,
``test_modern_*``) hold every fast route to the general one.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetmcp import _wire
from jetmcp.core.mrtr import InputRequired
from jetmcp.core.reply import INVALID, Reply
from jetmcp.core.runners import Pending, Relayed, made_at_once, params_of
from jetmcp.protocol import revisions

if TYPE_CHECKING:
    from jetmcp.core.exchange import Exchange, LazyExchange, Started
    from jetmcp.core.inflight import Running
    from jetmcp.core.runners import LegacyRunner, ModernRunner, Runner
    from jetmcp.protocol.modern import RoutingHeaders
    from jetmcp.protocol.revisions import Revision
    from jetmcp.server.app import Server

_MODERN_BY_VERSION = revisions.MODERN_BY_VERSION
_Plans = _wire.Plans
_encode_batch = _wire.encode_batch
#: What an ``async def`` function gives back (a relayed delivery, among what an entry gives).
_Coroutine = types.CoroutineType
#: The ``params`` a planned legacy call stands for where only their absent members are
#: asked about (the extension plans no call with members besides name, arguments, _meta).
_NO_PARAMS: dict[str, Any] = {}


class Router:
    """The route picking of :class:`~jetmcp.core.dispatch.Dispatcher` (its base class): see
    the module docstring. The attributes are the dispatcher's."""

    if TYPE_CHECKING:
        server: Server
        planning: bool
        fast: int
        fast_entries: list[int] | None
        modern: ModernRunner
        legacy: LegacyRunner
        _shapes: dict[str, tuple[int, _wire.Shape]]
        may_step_now: Callable[[], bool]

        def runner(self, revision: Revision) -> Runner: ...
        def _wait(self, pending: Pending, entry: _wire.Entry, ex: Exchange) -> Started: ...
        def _register(self, entry: _wire.Entry, ex: Exchange) -> Running | None: ...
        def can_step(self, inflight: Any) -> bool: ...
        async def _gather(self, slots: list[Any], ex: Exchange) -> bytes | None: ...

    # -- a single message -----------------------------------------------------------------

    def answer(
        self,
        frame: _wire.Frame,
        revision: Revision,
        headers: RoutingHeaders | None,
        step: bool,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Any:
        """The first half of a single message's route, which needs no :class:`Exchange`:
        the native route. Its finished reply (``bytes``), or what :meth:`resume` takes on
        from: None when the extension plans nothing (planning is off, ``tools/call`` is a
        handler of the server's own, the message is no call of a tool it plans), the
        :class:`~jetmcp._wire.Plans` of a tool that takes a Context or that Python calls
        (nothing ran), or the outcome of one it ran. ``step``: ``Dispatcher.may_step`` of
        the exchange to come. ``loop`` (the native engine's, in its socket callback, with
        no session): an ``async`` tool's coroutine runs as a task of its own on it whose
        first step runs now (``jetmcp._wire.eager_task``), when :meth:`can_step` allows;
        a value it returns then is written as a synchronous tool's is, and a task that goes
        on is the outcome's value (``running``), awaited by :meth:`settle`'s caller.

        The HTTP transport calls it before it makes an exchange (a usual POST is answered
        with no more than this); everything else calls ``Dispatcher.start``."""
        server = self.server
        if not self.planning or server.handlers.get("tools/call") is not server.builtin_call_tool:
            return None
        shape = self._shapes.get(revision.version)
        if shape is None or shape[0] != server.identity:
            shape = self._new_shape(revision)
        if loop is None:
            done = server.routes.answer(frame, shape[1], headers, step)
        else:
            done = server.routes.answer(frame, shape[1], headers, step, loop, self.may_step_now)
        if type(done) is bytes:
            self.fast += 1
        return done

    def resume(
        self, frame: _wire.Frame, ex: Exchange | LazyExchange, done: Any, step: bool
    ) -> Started:
        """The rest of a single message's route, given what :meth:`answer` gave for it
        (with the same ``step``). A :class:`LazyExchange` is made into its exchange only
        where something needs one: a planned call of a tool that takes a Context runs with
        it as it is."""
        if done is not None:
            if type(done) is bytes:
                return done
            if type(done) is _Plans:
                # The single call ``frame`` holds, which the extension planned but left to
                # run with a Context (the tool takes one) or to Python (``python_call``): its
                # reply, what is still to await, or None (nothing ran) to serve it the
                # general way. Picked here, not in a method of its own: a frame less.
                if ex.revision.modern:
                    served = self._planned_modern(done, frame, ex, step)
                else:
                    served = self._planned_legacy(done, frame, ex, step)
                if served is not None:
                    if type(served) is bytes:
                        return served
                    if isinstance(served, Pending):
                        return self._wait(served, frame.entries[0], ex.exchange())
                    return served
            else:
                self.fast += 1
                shaped = self.runner(ex.revision).outcome(done, ex.revision, True)
                if isinstance(shaped, bytes):
                    return shaped
                # An async tool's coroutine, started by the extension: awaited as below.
                return self._wait(shaped, frame.entries[0], ex.exchange())
        # The general route.
        ex = ex.exchange()
        runner = self.runner(ex.revision)
        entry = frame.entries[0]
        reply = runner.entry(entry, ex, False)
        if reply is None or isinstance(reply, bytes):
            if entry.kind == _wire.INVALID and reply is not None:
                return Reply(reply, INVALID)
            return reply
        if type(reply) is _Coroutine:
            return reply  # a relayed answer or cancellation: delivered before the 202
        return self._wait(reply, entry, ex)  # type: ignore[arg-type]

    def settle(
        self, done: _wire.Outcome, frame: _wire.Frame, revision: Revision
    ) -> bytes | Pending:
        """:meth:`resume` for what :meth:`answer` gave as an :class:`~jetmcp._wire.Outcome`
        of a request with no session, up to where an exchange would be needed: its reply
        (``bytes``, or a :class:`Reply`) when the call ended or the first step of its
        coroutine finished it, else the :class:`Pending` still to await (stepped when it
        suspended: ``Dispatcher._finish`` awaits the rest). The caller is the task that
        awaits the rest (a tool's first step runs inside it, as it does in
        ``Dispatcher._wait``); a tool without a Context reaches no exchange."""
        self.fast += 1
        if (
            not done.stepped
            and not done.failed
            and type(done.value) is _Coroutine
            and done.tool.timeout is None  # a timed tool is never stepped (its deadline)
            and self.can_step(None)
        ):
            stepped = done.step(self.shape(revision))
            if type(stepped) is bytes:
                return stepped
            done = stepped  # type: ignore[assignment]  # an Outcome when not bytes
        return self.runner(revision).outcome(done, revision, True)

    def _planned_legacy(
        self, plans: _wire.Plans, frame: _wire.Frame, ex: Exchange | LazyExchange, step: bool
    ) -> bytes | Pending | None:
        route = plans.route(0)
        if route is None:
            return None
        runner = self.legacy
        ex = ex.exchange()
        entry = frame.entries[0]
        tool = route.tool
        if route.python_call and tool.context_param is None and made_at_once(tool, ex.revision):
            # python-at-once: nothing of a Call is used, none is made.
            raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a request's
            return runner.start_planned(tool, plans.arguments(0), raw_id, ex.revision, None, step)
        call = runner.planned_call(entry, ex, plans)
        if route.python_call:
            # python-handler: planned without a task member in params (none is planned).
            return runner.call_planned(route.tool, plans.arguments(0), _NO_PARAMS, call)
        # context-legacy.
        context = runner.context_class(call, self.server)
        try:
            done = plans.run(0, context, step)
        except InputRequired as exc:
            return self.asked(runner, exc, context, ex.revision)
        return self.ran(runner, done, context, ex.revision)

    def _planned_modern(
        self, plans: _wire.Plans, frame: _wire.Frame, ex: Exchange | LazyExchange, step: bool
    ) -> bytes | Pending | None:
        # context-modern: the extension makes the Context and runs the tool. Its call (a
        # RoundCall and its input round: the extension plans no call that carries round
        # fields) is made only if the tool asks for it (most never do), and so is a
        # LazyExchange's exchange.
        ran = plans.run_context(ex, step)
        if ran is not None:
            if isinstance(ran, bytes):
                self.fast += 1
                return ran
            value, context, revision, raised = ran
            if raised:
                if isinstance(value, InputRequired):
                    return self.asked(self.modern, value, context, revision)
                raise value
            return self.ran(self.modern, value, context, revision)
        # One Python calls itself: what prepare and the tools/call handler would make for
        # this request (the extension checked _meta and the headers as prepare does).
        route = plans.route(0)
        if route is None or not route.python_call:
            return None
        revision = _MODERN_BY_VERSION.get(plans.version(0))
        if revision is None:
            return None
        runner = self.modern
        tool = route.tool
        entry = frame.entries[0]
        if tool.context_param is None and made_at_once(tool, revision):
            # python-at-once: nothing of a Call is used (nor its _meta built).
            raw_id: bytes = entry.raw_id  # type: ignore[assignment]  # a request's
            return runner.start_planned(tool, plans.arguments(0), raw_id, revision, None, step)
        # python-handler: its _meta is read from the plans only if the tool asks.
        ex = ex.exchange()
        call = runner.planned_call(entry, ex, plans, revision)
        params = params_of(entry)
        return runner.call_planned(tool, params["arguments"], params, call)

    def asked(self, runner: Runner, exc: InputRequired, context: Any, revision: Revision) -> bytes:
        """A context route's call that asked a question (in its first step, if stepped):
        answered from its call's round at a revision with input rounds; raised again at
        any other."""
        reply = runner.asked(exc, context, revision)
        self.fast += 1
        return reply

    def ran(
        self, runner: Runner, done: Any, context: Any, revision: Revision
    ) -> bytes | Pending | None:
        """What a context route's call came to (None: it did not run)."""
        if done is None:
            return None
        self.fast += 1
        return runner.ran(done, context, revision)

    # -- an array ---------------------------------------------------------------------------

    def batch(self, frame: _wire.Frame, ex: Exchange) -> Started:
        """Every entry of an array in request order: batch-native when every entry plans,
        else batch-mixed (planned entries by the extension, the others the general way)."""
        revision = ex.revision
        # The extension's plans for the calls of plain tools in the array, unless
        # ``tools/call`` was given another handler (inline, and the runner looked up only
        # past batch-native: two frames less for an array the extension answers whole).
        server = self.server
        plans = None
        if self.planning and server.handlers.get("tools/call") is server.builtin_call_tool:
            plans = server.routes.plan(frame, self.shape(revision), ex.headers)
        done: Any = None
        if plans is not None and plans.complete:
            done = plans.run_all()
            if type(done) is bytes:
                self.fast += len(plans)
                return done
        runner = self.runner(revision)
        slots: list[Any] = []
        relayed: list[Relayed] = []
        waiting = False
        if self.fast_entries is not None:
            self.fast_entries = []
        for i, entry in enumerate(frame.entries):
            if done is not None:
                out = done[i]
            elif plans is not None and plans.planned(i):
                out = plans.run(i)
            else:
                out = None
            if out is not None:
                self.fast += 1
                if self.fast_entries is not None:
                    self.fast_entries.append(i)
                if type(out) is not bytes:
                    out = runner.outcome(out, revision, False)
                    if not isinstance(out, bytes):
                        # An async tool's coroutine, started by the extension.
                        waiting = True
                        slots.append((out, entry, self._register(entry, ex)))
                        continue
                slots.append(out)
                continue
            reply = runner.entry(entry, ex, True)
            if reply is None:
                continue
            if isinstance(reply, bytes):
                slots.append(reply)
            elif type(reply) is _Coroutine:
                relayed.append(reply)
            else:
                waiting = True
                slots.append((reply, entry, self._register(entry, ex)))
        if relayed:
            return self._after_relayed(relayed, slots, waiting, ex)
        if waiting:
            return self._gather(slots, ex)
        return _encode_batch(slots) if slots else None

    async def _after_relayed(
        self, relayed: list[Relayed], slots: list[Any], waiting: bool, ex: Exchange
    ) -> bytes | None:
        """A batch that carried answers or cancellations for other workers: each delivered
        first; one that may not have landed adds its error (id null) to the batch's reply."""
        for failed in await asyncio.gather(*relayed):
            if failed is not None:
                slots.append(bytes(failed))
        if waiting:
            return await self._gather(slots, ex)
        return _encode_batch(slots) if slots else None

    # -- how the extension writes results ---------------------------------------------------

    def shape(self, revision: Revision) -> _wire.Shape:
        """How the extension writes results at ``revision``."""
        found = self._shapes.get(revision.version)
        if found is None or found[0] != self.server.identity:
            found = self._new_shape(revision)
        return found[1]

    def _new_shape(self, revision: Revision) -> tuple[int, _wire.Shape]:
        return self.runner(revision).new_shape(revision)


__all__ = ["Router"]

"""The revision table: the only place that knows what each MCP revision allows.

Everything else asks a :class:`Revision` (``rev.batching``, ``rev.titles`` ...) instead of
comparing version strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

#: The methods of the first revision (2024-11-05); each later one states what it adds or
#: drops. A method in none of these sets is a server's own (served where it is registered,
#: in the legacy era).
_BASE_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
_MODERN_METHODS = frozenset(
    {
        "server/discover",
        "completion/complete",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "subscriptions/listen",
        "tools/call",
        "tools/list",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    }
)


@dataclass(frozen=True, slots=True)
class Revision:
    """One MCP protocol revision and the features it has."""

    version: str
    #: JSON-RPC arrays are accepted (seed 000: 2024-11-05 and 2025-03-26 only).
    batching: bool
    #: The 2026-07-28 stateless era: no initialize, per-request ``_meta``.
    modern: bool
    #: ``completions`` server capability exists.
    completions_capability: bool
    #: Tool ``annotations`` and audio content exist.
    annotations: bool
    audio: bool
    #: Progress notifications may carry ``message``.
    progress_message: bool
    #: ``title`` on tools/resources/prompts, ``outputSchema``/``structuredContent``,
    #: ``resource_link`` content, ``elicitation/create``, ``MCP-Protocol-Version`` header.
    titles: bool
    structured_output: bool
    resource_links: bool
    elicitation: bool
    #: ``icons``, URL-mode elicitation (-32042), tasks, SSE priming/polling.
    icons: bool
    tasks: bool
    sse_priming: bool
    #: The code for "resource not found".
    resource_not_found_code: int
    #: ``completion/complete`` params carry ``context.arguments`` (2025-06-18 on).
    completion_context: bool = False
    #: URL-mode elicitation: ``mode: "url"`` requests, ``notifications/elicitation/complete``
    #: and the -32042 ``URLElicitationRequiredError`` (2025-11-25 on).
    url_elicitation: bool = False
    #: ``sampling/createMessage`` may carry ``tools``/``toolChoice`` (2025-11-25 on).
    sampling_tools: bool = False
    #: 2026-07-28 (the stateless era) has each of these; older revisions none:
    #: every result carries ``resultType`` and ``_meta["io.modelcontextprotocol/serverInfo"]``;
    result_type: bool = False
    #: discover/list/read results carry ``ttlMs`` and ``cacheScope``;
    cache_hints: bool = False
    #: server-to-client requests become ``InputRequiredResult`` rounds (MRTR);
    mrtr: bool = False
    #: HTTP requests carry ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` checked against the body;
    routing_headers: bool = False
    #: logs only when the request's ``_meta`` names a ``logLevel``;
    per_request_log_level: bool = False
    #: the client's capabilities and info come with each request (``_meta``), not from a
    #: session (there are none);
    per_request_capabilities: bool = False
    #: ``initialize`` opens a session (``Mcp-Session-Id`` over HTTP) that the server keeps:
    #: every legacy revision; 2026-07-28 has none (each request stands alone);
    sessions: bool = True
    #: over HTTP, a request that fails says so in the reply's status too (400, 404, ...),
    #: not only in its JSON-RPC error;
    error_status: bool = False
    #: arrays are the ``io.jetmcp/batch`` extension's (2026-07-28; ``batching`` is the
    #: revision's own JSON-RPC batches);
    batch_extension: bool = False
    #: elicitation capabilities name their modes (``{"form": {}}``; 2025-11-25 on);
    elicitation_modes: bool = False
    #: tasks are the ``io.modelcontextprotocol/tasks`` extension (``tasks/update``...).
    tasks_extension: bool = False
    #: ``_meta`` on tool, resource and prompt definitions (2025-06-18 on).
    definition_meta: bool = False
    #: ``websiteUrl`` in ``serverInfo`` (2025-11-25 on).
    website_url: bool = False
    #: ``instructions`` in the ``initialize`` result (2025-03-26 on).
    instructions: bool = False
    #: The methods a client may call at this revision (see ``_BASE_METHODS``).
    methods: frozenset[str] = field(default=_BASE_METHODS)

    def serves(self, method: str) -> bool:
        """Whether ``method`` may be called at this revision: one of its methods, or (before
        2026-07-28) a server's own method that no revision defines."""
        return method in self.methods or (not self.modern and method not in KNOWN_METHODS)


# Each revision states only what changed from the one before it.
R2024_11_05 = Revision(
    version="2024-11-05",
    batching=True,
    modern=False,
    completions_capability=False,
    annotations=False,
    audio=False,
    progress_message=False,
    titles=False,
    structured_output=False,
    resource_links=False,
    elicitation=False,
    icons=False,
    tasks=False,
    sse_priming=False,
    resource_not_found_code=-32002,
)
R2025_03_26 = replace(
    R2024_11_05,
    version="2025-03-26",
    completions_capability=True,
    annotations=True,
    audio=True,
    progress_message=True,
    instructions=True,
)
R2025_06_18 = replace(
    R2025_03_26,
    version="2025-06-18",
    batching=False,
    titles=True,
    structured_output=True,
    resource_links=True,
    elicitation=True,
    completion_context=True,
    definition_meta=True,
)
R2025_11_25 = replace(
    R2025_06_18,
    version="2025-11-25",
    icons=True,
    tasks=True,
    sse_priming=True,
    url_elicitation=True,
    sampling_tools=True,
    website_url=True,
    elicitation_modes=True,
    methods=_BASE_METHODS | _TASK_METHODS,
)
R2026_07_28 = replace(
    R2025_11_25,
    version="2026-07-28",
    modern=True,
    # Gone in the stateless era: tasks, SSE priming/polling and URL-mode elicitation.
    tasks=False,
    sse_priming=False,
    url_elicitation=False,
    resource_not_found_code=-32602,
    result_type=True,
    cache_hints=True,
    mrtr=True,
    routing_headers=True,
    per_request_log_level=True,
    per_request_capabilities=True,
    sessions=False,
    error_status=True,
    batch_extension=True,
    tasks_extension=True,
    methods=_MODERN_METHODS,
)
#: Every method some revision defines.
KNOWN_METHODS: frozenset[str] = _BASE_METHODS | _TASK_METHODS | _MODERN_METHODS
#: The stateless-era revisions (no initialize; every request says its revision in ``_meta``).
MODERN: tuple[Revision, ...] = (R2026_07_28,)

#: Every legacy revision served, oldest first. (The modern ones are routed separately: a
#: request opts in with its ``_meta`` and ``MCP-Protocol-Version``.)
REVISIONS: tuple[Revision, ...] = (R2024_11_05, R2025_03_26, R2025_06_18, R2025_11_25)
#: Revisions negotiated with ``initialize``.
LEGACY: tuple[Revision, ...] = tuple(r for r in REVISIONS if not r.modern)
BY_VERSION: dict[str, Revision] = {r.version: r for r in REVISIONS}
#: What ``initialize`` answers when the client asks for a version we do not serve.
LATEST_LEGACY: Revision = LEGACY[-1]
#: The spec's assumption for an HTTP request with neither session nor ``MCP-Protocol-Version``.
HTTP_DEFAULT: Revision = R2025_03_26


def lookup(version: str) -> Revision | None:
    """The legacy revision named ``version``, or None when it is not one we serve."""
    return BY_VERSION.get(version)


MODERN_BY_VERSION: dict[str, Revision] = {r.version: r for r in MODERN}


def lookup_modern(version: str) -> Revision | None:
    """The stateless-era revision named ``version``, or None."""
    return MODERN_BY_VERSION.get(version)


def negotiate(requested: object) -> Revision:
    """The revision ``initialize`` answers: the one asked for when served, else the newest."""
    if isinstance(requested, str):
        rev = BY_VERSION.get(requested)
        if rev is not None and not rev.modern:
            return rev
    return LATEST_LEGACY

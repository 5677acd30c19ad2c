"""The server API: ``Server`` and its decorators, ``Context``, and the content helpers."""

from jetmcp.protocol.content import Audio, EmbeddedResource, Image, ResourceLink
from jetmcp.server.app import Server
from jetmcp.server.completion import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)
from jetmcp.server.context import Context
from jetmcp.server.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    UrlElicitation,
    UrlElicitationRequired,
)
from jetmcp.server.sampling import Root, SamplingResult

__all__ = [
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "Audio",
    "CancelledElicitation",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "Context",
    "DeclinedElicitation",
    "EmbeddedResource",
    "Image",
    "PromptReference",
    "ResourceLink",
    "ResourceTemplateReference",
    "Root",
    "SamplingResult",
    "Server",
    "UrlElicitation",
    "UrlElicitationRequired",
]

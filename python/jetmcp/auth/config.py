"""Which verifier guards a server, from its settings (the ``--auth-*`` flags) and from what
the server itself was given (``Server(auth=..., token_verifier=...)``, or an official SDK
server's ``auth=``/``token_verifier=``). The flags win where both say something.

:func:`resource_server` says what the resource server checks; :mod:`jetmcp.run.serving`
puts the transport's bearer guard in front of the app with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jetmcp.core.principal import TokenVerifier

if TYPE_CHECKING:
    from jetmcp.server.app import Server
    from jetmcp.settings import Settings


@dataclass(slots=True)
class AuthConfig:
    """How a :class:`jetmcp.Server` checks bearer tokens (``Server(auth=AuthConfig(...))``);
    each field is the ``--auth-*`` flag of the same name, which overrides it.

    ``issuer`` with ``jwks_url`` (or alone: the JWKS is found through the issuer's
    metadata) verifies JWTs; ``introspection_url`` asks the authorization server about
    opaque tokens instead. ``audience`` is this resource's URL."""

    issuer: str = ""
    audience: str = ""
    jwks_url: str = ""
    introspection_url: str = ""
    required_scopes: list[str] = field(default_factory=list)
    authorization_servers: list[str] = field(default_factory=list)
    #: Refuse tokens whose verifier reports another ``resource`` (the SDK's
    #: ``validate_token_resource``; jetmcp's own verifiers check ``aud`` themselves).
    check_resource: bool = False


class AuthSetupError(ValueError):
    """The auth settings cannot work together (said when the server starts)."""


@dataclass(slots=True)
class ResourceServer:
    """What the OAuth resource server in front of a server checks: the verifier, the
    resource it is (``audience``), the authorization servers its metadata names, the scopes
    every request needs, the paths it guards, and the ``resource`` a verifier's answer must
    report (None: not checked)."""

    verifier: TokenVerifier
    resource: str
    authorization_servers: list[str]
    required_scopes: list[str]
    endpoint_paths: list[str]
    check_resource: str | None


def _server_auth(server: Server) -> AuthConfig:
    """The server's own auth config, read from a jetmcp AuthConfig or the SDK's
    ``AuthSettings`` (``issuer_url``, ``resource_server_url``, ``required_scopes``)."""
    given = getattr(server, "auth", None)
    if given is None:
        return AuthConfig()
    if isinstance(given, AuthConfig):
        return given
    issuer = getattr(given, "issuer_url", None)
    resource = getattr(given, "resource_server_url", None)
    scopes = getattr(given, "required_scopes", None)
    return AuthConfig(
        issuer=str(issuer) if issuer is not None else "",
        audience=str(resource) if resource is not None else "",
        required_scopes=list(scopes or []),
        check_resource=getattr(given, "validate_token_resource", None) is True,
    )


def _default_resource(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/") + settings.path
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        raise AuthSetupError(
            "with auth on, a server listening on every address must be told its public URL: "
            "--auth-audience URL (the MCP endpoint's URL) or --public-url"
        )
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.port}{settings.path}"


def resource_server(settings: Settings, server: Server) -> ResourceServer | None:
    """What guards ``server`` under ``settings``, or None when auth is off."""
    own = _server_auth(server)
    token_verifier: TokenVerifier | None = getattr(server, "token_verifier", None)
    issuer = settings.auth_issuer or own.issuer
    jwks_url = settings.auth_jwks_url or own.jwks_url
    introspection_url = settings.auth_introspection_url or own.introspection_url
    flagged = bool(
        settings.auth_jwks_url or settings.auth_introspection_url or settings.auth_issuer
    )
    if not (flagged or jwks_url or introspection_url or token_verifier is not None):
        if getattr(server, "auth", None) is not None:
            raise AuthSetupError(
                "Server(auth=...) needs a way to check tokens: a jwks_url, an "
                "introspection_url, an issuer whose metadata names its JWKS, or token_verifier="
            )
        return None
    audience = settings.auth_audience or own.audience or _default_resource(settings)
    verifier: Any
    if jwks_url and introspection_url:
        raise AuthSetupError("give --auth-jwks-url or --auth-introspection-url, not both")
    if introspection_url and (flagged or token_verifier is None):
        from jetmcp.auth.introspection import IntrospectionVerifier

        verifier = IntrospectionVerifier(
            url=introspection_url,
            audience=audience,
            issuer=issuer or None,
            leeway=settings.auth_leeway_seconds,
        )
    elif (jwks_url or issuer) and (flagged or token_verifier is None):
        if not issuer:
            raise AuthSetupError("--auth-jwks-url needs --auth-issuer (the iss tokens must carry)")
        from jetmcp.auth.jwt import JwtVerifier, require_pyjwt

        require_pyjwt("--auth-jwks-url/--auth-issuer")
        verifier = JwtVerifier(
            issuer=issuer,
            audience=audience,
            jwks_url=jwks_url or None,
            algorithms=settings.auth_algorithms,
            leeway=settings.auth_leeway_seconds,
            jwks_seconds=settings.auth_jwks_seconds,
            jwks_cooldown_seconds=settings.auth_jwks_cooldown_seconds,
        )
    else:
        verifier = token_verifier
    check_resource = audience if own.check_resource and verifier is token_verifier else None
    servers = (
        settings.authorization_servers or own.authorization_servers or ([issuer] if issuer else [])
    )
    if not servers:
        raise AuthSetupError(
            "with auth on, the protected resource metadata must name an authorization "
            "server: --authorization-server URL (or --auth-issuer)"
        )
    paths = [settings.path]
    if settings.sse_path and not settings.stateless:
        paths.append(settings.sse_path)
    return ResourceServer(
        verifier,
        audience,
        servers,
        settings.auth_required_scopes or own.required_scopes,
        paths,
        check_resource,
    )


__all__ = ["AuthConfig", "AuthSetupError", "ResourceServer", "resource_server"]

"""Authentication for jetmcp servers: an OAuth 2.1 resource server (MCP authorization,
2025-06-18 and later).

``jetmcp run --auth-issuer ISS --auth-jwks-url URL --auth-audience URL`` (or
``Server(auth=AuthConfig(...))``, or ``Server(token_verifier=...)`` with a verifier of your
own) makes every HTTP request carry a bearer token; handlers see who sent it as
``ctx.auth`` (a :class:`Principal`). See ``docs/security.md``.

Nothing here imports PyJWT until a JWT verifier is built (``pip install 'jetmcp[auth]'``).
"""

from jetmcp.auth.config import AuthConfig, AuthSetupError
from jetmcp.core.principal import (
    AuthUnavailable,
    InvalidToken,
    Principal,
    TokenVerifier,
    as_principal,
)

__all__ = [
    "AuthConfig",
    "AuthSetupError",
    "AuthUnavailable",
    "InvalidToken",
    "Principal",
    "TokenVerifier",
    "as_principal",
]

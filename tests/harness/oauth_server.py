"""A tiny OAuth 2.1 authorization server for the auth tests (and the auth benchmark): real
HTTP on 127.0.0.1, real keys, real signed tokens.

It serves its metadata (RFC 8414), its JWKS, dynamic client registration (RFC 7591), an
authorization endpoint that approves at once (a 302 back to the client with a code), a
token endpoint (authorization code with PKCE S256, refresh token, client credentials; the
``resource`` parameter becomes the token's ``aud``, RFC 8707) and token introspection
(RFC 7662) for the opaque tokens it hands out on request. Tests mint tokens directly too,
with any claim or header they need, and rotate the signing key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

#: Seconds the tokens of the token endpoint live.
TOKEN_SECONDS = 600


class SigningKey:
    """A private key and the public JWK the server publishes for it."""

    def __init__(self, kid: str, alg: str = "RS256") -> None:
        self.kid = kid
        self.alg = alg
        if alg.startswith("ES"):
            self.private: Any = ec.generate_private_key(ec.SECP256R1())
            public = jwt.algorithms.ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        else:
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            public = jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwk: dict[str, Any] = {**public, "kid": kid, "alg": alg, "use": "sig"}

    @property
    def public_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


class AuthorizationServer:
    """The server; ``with AuthorizationServer() as auth: ...`` runs it on a free port."""

    def __init__(self, *, introspection_client: tuple[str, str] = ("rs", "rs-secret")) -> None:
        self.keys: list[SigningKey] = [SigningKey("k1")]
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.refresh: dict[str, dict[str, Any]] = {}
        #: Opaque token -> its introspection answer.
        self.opaque: dict[str, dict[str, Any]] = {}
        self.introspection_client = introspection_client
        #: Requests served, by path.
        self.hits: Counter[str] = Counter()
        #: Every token request's form (the tests check the RFC 8707 ``resource``).
        self.token_requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.jwks_url = f"{self.issuer}/jwks"
        self.introspection_url = f"{self.issuer}/introspect"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> AuthorizationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- what tests call ----------------------------------------------------------------

    @property
    def key(self) -> SigningKey:
        """The key tokens are signed with now."""
        return self.keys[-1]

    def rotate(self, kid: str, *, keep_old: bool = True, alg: str = "RS256") -> SigningKey:
        """Sign with a new key from now on (published at once; the old one stays published
        unless ``keep_old`` is False)."""
        new = SigningKey(kid, alg)
        with self._lock:
            self.keys = [*self.keys, new] if keep_old else [new]
        return new

    def mint(
        self,
        audience: str | list[str] | None,
        *,
        subject: str | None = "alice",
        scope: str | None = "mcp",
        client_id: str | None = "test-client",
        lifetime: float = TOKEN_SECONDS,
        not_before: float | None = None,
        issuer: str | None = None,
        key: SigningKey | None = None,
        headers: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """A signed JWT access token; every claim can be bent for a test."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer if issuer is None else issuer,
            "iat": now,
            "exp": now + int(lifetime),
            "jti": secrets.token_hex(8),
        }
        if audience is not None:
            claims["aud"] = audience
        if subject is not None:
            claims["sub"] = subject
        if scope is not None:
            claims["scope"] = scope
        if client_id is not None:
            claims["client_id"] = client_id
        if not_before is not None:
            claims["nbf"] = int(not_before)
        claims.update(extra or {})
        signer = key or self.key
        head = {"kid": signer.kid, **(headers or {})}
        return jwt.encode(claims, signer.private, algorithm=signer.alg, headers=head)

    def mint_opaque(self, audience: str, *, active: bool = True, **claims: Any) -> str:
        """An opaque token the introspection endpoint knows."""
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        answer: dict[str, Any] = {
            "active": active,
            "iss": self.issuer,
            "aud": audience,
            "sub": "alice",
            "client_id": "test-client",
            "scope": "mcp",
            "exp": now + TOKEN_SECONDS,
            "iat": now,
            "token_type": "Bearer",
        }
        answer.update(claims)
        self.opaque[token] = answer if active else {"active": False}
        return token

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "jwks_uri": self.jwks_url,
            "introspection_endpoint": self.introspection_url,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "none",
            ],
            "scopes_supported": ["mcp", "admin", "files:read", "files:write"],
        }

    # -- HTTP ---------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(
                self, status: int, body: Any = None, headers: dict[str, str] | None = None
            ) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _form(self) -> dict[str, str]:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    value: dict[str, str] = json.loads(raw or "{}")
                    return value
                return {k: v[0] for k, v in parse_qs(raw).items()}

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                server.hits[url.path] += 1
                if url.path in (
                    "/.well-known/oauth-authorization-server",
                    "/.well-known/openid-configuration",
                ):
                    self._send(200, server.metadata())
                elif url.path == "/jwks":
                    with server._lock:
                        keys = [k.jwk for k in server.keys]
                    self._send(200, {"keys": keys})
                elif url.path == "/authorize":
                    self._send(
                        *server._authorize({k: v[0] for k, v in parse_qs(url.query).items()})
                    )
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                server.hits[url.path] += 1
                form = self._form()
                if url.path == "/register":
                    self._send(*server._register(form))
                elif url.path == "/token":
                    self._send(*server._token(form, self.headers.get("Authorization")))
                elif url.path == "/introspect":
                    self._send(*server._introspect(form, self.headers.get("Authorization")))
                else:
                    self._send(404, {"error": "not_found"})

        return Handler

    def _register(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        client_id = f"client-{secrets.token_hex(4)}"
        record = dict(form)
        record["client_id"] = client_id
        record["client_id_issued_at"] = int(time.time())
        if record.get("token_endpoint_auth_method", "client_secret_post") != "none":
            record["client_secret"] = secrets.token_urlsafe(16)
        self.clients[client_id] = record
        return 201, record

    def _authorize(self, query: dict[str, str]) -> tuple[int, None, dict[str, str]]:
        client = self.clients.get(query.get("client_id", ""))
        redirect = query.get("redirect_uri", "")
        if client is None or redirect not in client.get("redirect_uris", []):
            return 400, None, {}
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, None, {}
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "client_id": client["client_id"],
            "redirect_uri": redirect,
            "challenge": query["code_challenge"],
            "scope": query.get("scope", ""),
            "resource": query.get("resource"),
        }
        params = {"code": code}
        if "state" in query:
            params["state"] = query["state"]
        return 302, None, {"Location": f"{redirect}?{urlencode(params)}"}

    def _client(self, form: dict[str, str], authorization: str | None) -> str | None:
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.lower().startswith("basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = pair.partition(":")
        client = self.clients.get(client_id or "")
        if client is None:
            return None
        if "client_secret" in client and client["client_secret"] != secret:
            return None
        return client_id

    def _token(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        self.token_requests.append(dict(form))
        client_id = self._client(form, authorization)
        if client_id is None:
            return 401, {"error": "invalid_client"}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .decode()
                .rstrip("=")
            )
            if code is None or code["client_id"] != client_id or code["challenge"] != challenge:
                return 400, {"error": "invalid_grant"}
            scope, resource = code["scope"], form.get("resource") or code["resource"]
        elif grant == "refresh_token":
            held = self.refresh.pop(form.get("refresh_token", ""), None)
            if held is None or held["client_id"] != client_id:
                return 400, {"error": "invalid_grant"}
            scope, resource = held["scope"], form.get("resource") or held["resource"]
        elif grant == "client_credentials":
            scope, resource = form.get("scope", ""), form.get("resource")
        else:
            return 400, {"error": "unsupported_grant_type"}
        token = self.mint(
            resource, subject=f"user-of-{client_id}", scope=scope, client_id=client_id
        )
        refresh = secrets.token_urlsafe(16)
        self.refresh[refresh] = {"client_id": client_id, "scope": scope, "resource": resource}
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": TOKEN_SECONDS,
            "scope": scope,
            "refresh_token": refresh,
        }

    def _introspect(
        self, form: dict[str, str], authorization: str | None
    ) -> tuple[int, dict[str, Any]]:
        expected = (
            "Basic " + base64.b64encode(":".join(self.introspection_client).encode()).decode()
        )
        if authorization != expected:
            return 401, {"error": "invalid_client"}
        return 200, self.opaque.get(form.get("token", ""), {"active": False})


__all__ = ["AuthorizationServer", "SigningKey"]

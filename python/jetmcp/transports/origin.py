"""DNS-rebinding protection for the HTTP transports: the Host (or HTTP/2 ``:authority``) and
the Origin of every request are checked before anything else looks at it.

It fails closed: a Host that is missing, repeated, unreadable (bytes outside visible ASCII,
which the server cannot decode) or at odds with ``:authority`` is a 400; an Origin that is
repeated or unreadable, or a Host or Origin that names no allowed place, is a 403. Allowed
are loopback names, the address the server is bound to, and what the settings add (``*``
allows any).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

_LOCAL = frozenset({"localhost", "127.0.0.1", "::1"})


def hostname(netloc: str) -> str:
    """The host part of ``host[:port]`` (IPv6 literals keep no brackets), lower-cased."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


class OriginGuard:
    """Judges the Host and Origin of a request; verdicts on values are cached (bounded)."""

    __slots__ = ("_hosts", "_origins", "host_allowed", "origin_allowed")

    def __init__(
        self, allowed_hosts: list[str], allowed_origins: list[str], bound_host: str = ""
    ) -> None:
        self._origins = frozenset(allowed_origins)
        hosts = {hostname(h) for h in allowed_hosts} | set(allowed_hosts)
        if bound_host not in ("0.0.0.0", "::", ""):
            hosts.add(hostname(bound_host))
        self._hosts = frozenset(hosts)
        #: Whether a Host value may be served (pure, so cached per value).
        self.host_allowed = lru_cache(maxsize=1024)(self._host_allowed)
        self.origin_allowed = lru_cache(maxsize=1024)(self._origin_allowed)

    def _host_allowed(self, host: str) -> bool:
        extra = self._hosts
        return host in extra or "*" in extra or hostname(host) in _LOCAL or hostname(host) in extra

    def _origin_allowed(self, origin: str) -> bool:
        extra = self._origins
        if origin in extra or "*" in extra:
            return True
        try:
            netloc = urlsplit(origin).netloc
        except ValueError:
            return False
        return hostname(netloc) in _LOCAL

    def refusal(self, scope: Any) -> tuple[int, str] | None:
        """Why the request in ``scope`` (an RSGI scope) is refused, as (status, message),
        or None when it may be served."""
        headers = scope.headers
        hosts = headers.get_all("host")
        authority = scope.authority
        if len(hosts) == 1:
            host: str = hosts[0]
            if authority is not None and authority != host:
                return 400, "Host does not match the request's authority"
        elif hosts:
            return 400, "More than one Host header"
        elif "host" in headers:
            return 400, "The Host header cannot be read"
        elif authority is None:
            return 400, "Missing Host header"
        else:
            host = authority
        if not self.host_allowed(host):
            return 403, f"Host not allowed: {host}"
        if "origin" in headers:
            origins = headers.get_all("origin")
            if not origins:
                return 403, "The Origin header cannot be read"
            if len(origins) > 1:
                return 400, "More than one Origin header"
            if not self.origin_allowed(origins[0]):
                return 403, f"Origin not allowed: {origins[0]}"
        return None


__all__ = ["OriginGuard", "hostname"]

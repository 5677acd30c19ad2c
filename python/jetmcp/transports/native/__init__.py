"""jetmcp's own HTTP/1.1 engine: the extension's sans-IO framing
(:class:`jetmcp._wire.Http1Connection`) driven by uvloop, serving the same app Granian serves
(:mod:`jetmcp.transports.http`). See :mod:`.connection` and :mod:`.server`."""

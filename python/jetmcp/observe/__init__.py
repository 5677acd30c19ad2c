"""What an operator can watch: Prometheus metrics (:mod:`.metrics`), OpenTelemetry spans
(:mod:`.tracing`) and a JSON access log, all off by default and free when off: a server
without them is served by the plain HTTP app (:mod:`.app` subclasses it)."""

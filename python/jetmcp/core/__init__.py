"""The core path of a request: what a transport hands in (:mod:`.exchange`, the sink and
session of :mod:`.call`), the dispatcher (:mod:`.dispatch`: a frame in, a :mod:`.reply`
out), the era runners (:mod:`.runners`), input rounds (:mod:`.mrtr`, sealed by
:mod:`.request_state`), and waiting: caps (:mod:`.inflight`), deadlines (:mod:`.deadlines`).
It imports nothing of the server, the state stores or the transports: what it needs of a
server is handed in (``Server.context_class``) or declared here (:mod:`.principal`)."""

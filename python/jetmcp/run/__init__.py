"""The face: what a user starts. ``jetmcp run`` and ``jetmcp bench`` (:mod:`.cli`), finding
the server a target names (:mod:`.loader`), serving it (:mod:`.serving`: the apps with their
observers and auth, Granian's worker factory, and what ``Server.run*`` do), and the
one-shot self-check (:mod:`.selfcheck`). The top layer: it may import any other."""

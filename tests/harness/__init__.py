"""What the tests share: the one server-process fixture (``servers``), the one fake of
Granian's RSGI side (``rsgi``) and the one JSON-RPC message builder (``messages``).

Imported as ``harness.x``: pytest puts ``tests/`` on ``sys.path`` for the suite's
``conftest.py``, as it does for every folder of test files (which have no ``__init__.py``).
"""

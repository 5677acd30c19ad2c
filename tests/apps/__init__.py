"""Servers the black-box tests run with ``jetmcp run tests.apps.<module>:app``."""

"""``jetmcp run``'s flags from the environment: every ``--some-flag`` can be given as
``JETMCP_SOME_FLAG`` (upper case, dashes to underscores), as fastmcp reads ``FASTMCP_*`` and
uvicorn ``UVICORN_*``. A flag on the command line beats its variable.

:func:`apply` walks the parser's own options, so a flag added anywhere gets its variable
with nothing else to write: the variable's text goes through the flag's own ``type`` and
``choices`` (a bad value is refused naming the variable), and becomes the flag's default.
Flags that take no value (``--stateless``, ``--no-modern-batch``) take ``1``/``true``/
``yes``/``on`` or ``0``/``false``/``no``/``off``; a repeatable one (``append``) takes a
comma-separated list. ``--help`` shows each flag's default and its variable.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping

#: What every variable's name starts with.
PREFIX = "JETMCP_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class EnvError(ValueError):
    """A variable whose value its flag does not take (the message names both)."""


def variable(action: argparse.Action) -> str | None:
    """The variable of ``action``'s long option (None for positionals and ``--help``)."""
    longs = [o for o in action.option_strings if o.startswith("--")]
    if not longs or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return None
    return PREFIX + longs[0][2:].upper().replace("-", "_")


def _flags(parser: argparse.ArgumentParser) -> list[tuple[argparse.Action, str]]:
    found = []
    for action in parser._actions:
        name = variable(action)
        if name is not None:
            found.append((action, name))
    return found


def _is_switch(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))


def _describe(action: argparse.Action, name: str) -> None:
    """Append the default and the variable to the flag's help (``%`` escaped for argparse)."""
    if action.help == argparse.SUPPRESS:
        return
    if _is_switch(action):
        tail = f"env {name}=1"
    else:
        default = action.default
        if isinstance(default, list):
            shown = ",".join(str(v) for v in default) or "none"
        elif default is None or default == "":
            shown = "none"
        else:
            # A URL's credentials (a Redis URL from JETMCP_REDIS_URL) stay out of --help.
            shown = re.sub(r"//[^/@]*@", "//***@", str(default))
        tail = f"default: {shown}; env {name}"
    text = (action.help or "").rstrip()
    action.help = f"{text} ({tail})".replace("%", "%%") if text else f"({tail})".replace("%", "%%")
    # argparse formats help with ``%``: escaped above, so its own text stays as written
    # (the original help held no formatting directives).


def _convert(action: argparse.Action, name: str, raw: str) -> object:
    def one(text: str) -> object:
        value: object = text
        if action.type is not None and callable(action.type):
            try:
                value = action.type(text)
            except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
                raise EnvError(f"{name}={raw!r}: {exc}") from None
        if action.choices is not None and value not in action.choices:
            options = ", ".join(str(c) for c in action.choices)
            raise EnvError(f"{name}={raw!r}: must be one of {options}")
        return value

    if _is_switch(action):
        lowered = raw.strip().lower()
        if lowered not in _TRUE + _FALSE:
            raise EnvError(f"{name}={raw!r}: must be 1, true, yes, on, 0, false, no or off")
        on = lowered in _TRUE
        return on if isinstance(action, argparse._StoreTrueAction) else not on
    if isinstance(action, argparse._AppendAction):
        return [one(part.strip()) for part in raw.split(",") if part.strip()]
    return one(raw)


def apply(parser: argparse.ArgumentParser, environ: Mapping[str, str] | None = None) -> None:
    """Describe every flag of ``parser`` in its help, then make each variable that is set
    the default of its flag (EnvError for a value the flag would refuse)."""
    env = os.environ if environ is None else environ
    for action, name in _flags(parser):
        _describe(action, name)
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        action.default = _convert(action, name, raw)


__all__ = ["PREFIX", "EnvError", "apply", "variable"]

"""Error types. Every input problem is a `RotoridError` whose message a pilot understands:
which file, which channel, which time, and what to do about it. The CLI prints the message
without a traceback and exits with status 2.

A message is always one printable line: `RotoridError` escapes control characters and line
breaks in whatever it is given, and text taken from a file (names, strings, library
messages) goes through `quote` (or `clip`), which also truncates it, so a crafted log cannot print into
the user's terminal.
"""

from __future__ import annotations

#: Longest file-derived text `quote` keeps (characters, before escaping).
QUOTE_MAX = 60
#: Longest text `shown` echoes on one console line (an error line, a title, a "wrote" line).
ECHO_MAX = 2000


def one_line(text: str) -> str:
    """`text` with every non-printable character (line breaks, escapes, NUL, ...) written as a
    Python escape (`\\n`, `\\x1b`, `\\u2028`), so it prints as one line and does nothing else."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def clip(text: object, limit: int = QUOTE_MAX) -> str:
    """File-derived text for a message: escaped to one printable line (`one_line`) and cut to
    `limit` characters, with "…(N chars)" saying how long it was."""
    s = text.decode("utf-8", errors="replace") if isinstance(text, bytes | bytearray) else str(text)
    cut = f"…({len(s)} chars)" if len(s) > limit else ""
    return one_line(s[:limit]) + cut


def quote(text: object, limit: int = QUOTE_MAX) -> str:
    """`clip(text)` in single quotes: use it for every name or string read from a file, and
    for a library's message about one."""
    return f"'{clip(text, limit)}'"


def shown(text: object, limit: int = ECHO_MAX) -> str:
    """Text for a Rich console line: `clip`ped to one printable line of at most `limit`
    characters, with Rich markup escaped (a name holding `[/x]` or `[red]` prints as written).
    Every file- or user-derived string the CLI, batch or demo print goes through it."""
    from rich.markup import escape

    return escape(clip(text, limit))


def shown_lines(text: str, limit: int = ECHO_MAX) -> str:
    """`shown` for each line of a multi-line block (a summary table), the line breaks kept."""
    return "\n".join(shown(line, limit) for line in text.splitlines())


class RotoridError(Exception):
    """Base class of every error caused by input (files, windows, options, vehicles).

    The message is made one printable line (`one_line`) whatever it was built from."""

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(one_line(str(message)), *args)


class LogFormatError(RotoridError):
    """A log file is unreadable: wrong magic, unknown version, bad checksum, truncated, ..."""


class MissingChannelError(RotoridError):
    """A method needs a channel the flight does not have."""


class RateError(MissingChannelError):
    """A channel is present but logged too slowly for a method."""


class WindowError(RotoridError):
    """A requested time window lies (partly) outside the log."""


class VehicleError(RotoridError):
    """A vehicle description is invalid or lacks what a method needs."""


class ExcitationError(RotoridError):
    """The data cannot determine a quantity at all (e.g. constant commands for T_m)."""


class ExportError(RotoridError):
    """A parameter export target needs something that was not identified."""

"""Error types. Every input problem is a `RotoridError` whose message a pilot understands:
which file, which channel, which time, and what to do about it. The CLI prints the message
without a traceback and exits with status 2."""

from __future__ import annotations


class RotoridError(Exception):
    """Base class of every error caused by input (files, windows, options, vehicles)."""


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

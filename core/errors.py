"""Error types of pubsift.

Every error says *what* was wrong and *where*, so that a caller can report it and carry on
with the rest of its work (bad input gets a clear error and loses nothing).
"""

from __future__ import annotations

import re

#: How many characters of the offending line an error shows on each side of the caret; a
#: megabyte-long filter gives a short message, not a copy of itself.
EXCERPT_CONTEXT = 60
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that a message about a
    hostile input can always be printed and encoded as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (multi-line messages are joined)."""
    return " ".join(str(exc).split()) or type(exc).__name__


class PubsiftError(Exception):
    """Base class of all pubsift errors."""


class FilterSyntaxError(PubsiftError, ValueError):
    """A filter specification could not be parsed or is not representable.

    ``text`` is the specification (as text), ``position`` the 0-based character offset of
    the problem in it (or ``None`` when the problem is not tied to one place, e.g. in a JSON
    form, where ``path`` names the offending member instead).
    """

    def __init__(
        self,
        message: str,
        text: str | None = None,
        position: int | None = None,
        path: str | None = None,
    ) -> None:
        self.message = message
        self.text = text
        self.position = position
        self.path = path
        super().__init__(self._render())

    @property
    def line(self) -> int | None:
        if self.text is None or self.position is None:
            return None
        return self.text.count("\n", 0, self.position) + 1

    @property
    def column(self) -> int | None:
        if self.text is None or self.position is None:
            return None
        start = self.text.rfind("\n", 0, self.position) + 1
        return self.position - start + 1

    def _render(self) -> str:
        where = []
        if self.path:
            where.append(f"at {self.path}")
        if self.position is not None and self.text is not None:
            where.append(f"at line {self.line}, column {self.column}")
        head = self.message + (f" ({', '.join(where)})" if where else "")
        if self.position is not None and self.text is not None:
            line_start = self.text.rfind("\n", 0, self.position) + 1
            line_end = self.text.find("\n", self.position)
            line_end = len(self.text) if line_end < 0 else line_end
            start = max(line_start, self.position - EXCERPT_CONTEXT)
            end = min(line_end, self.position + EXCERPT_CONTEXT)
            before = "…" if start > line_start else ""
            after = "…" if end < line_end else ""
            excerpt = printable(self.text[start:end])
            head += (
                f"\n  {before}{excerpt}{after}\n  {' ' * (len(before) + self.position - start)}^"
            )
        return printable(head)


def filter_problem(exc: FilterSyntaxError, label: str) -> str:
    """A filter error on one line, as the command line and the Spark job's subscriptions
    report it: its label, what is wrong, and where (the column, with a short excerpt around
    it, or the JSON path)."""
    where = []
    if exc.path:
        where.append(f"at {exc.path}")
    if exc.text is not None and exc.position is not None:
        line_start = exc.text.rfind("\n", 0, exc.position) + 1
        excerpt = printable(exc.text[max(line_start, exc.position - 20) : exc.position + 20])
        where.append(f"at line {exc.line}, column {exc.column}, near {excerpt!r}")
    head = one_line(FilterSyntaxError(exc.message))
    return f"{label}: {head}" + (f" ({'; '.join(where)})" if where else "")


class EventError(PubsiftError, ValueError):
    """An event could not be parsed or is malformed; ``where`` names the place (file, line,
    attribute, XML line/column) when known."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(printable(message if not where else f"{message} (at {where})"))


class UnknownModelError(PubsiftError, LookupError):
    """No filter model is registered under the requested name."""

    def __init__(self, name: str, available: list[str] | None = None) -> None:
        self.name = name
        self.available = sorted(available or [])
        known = ", ".join(self.available) or "none"
        super().__init__(
            f"no filter model named {name!r} is installed (installed: {known}); "
            f"models register under the entry-point group 'pubsift.models'"
        )


class PluginError(PubsiftError, ImportError):
    """A registered filter-model plug-in is broken (cannot be imported or is not a model)."""

    def __init__(self, name: str, target: str, reason: str) -> None:
        # ImportError.__init__ resets ``name``, so set the attributes after it.
        super().__init__(f"filter model plug-in {name!r} ({target}) is broken: {reason}")
        self.name = name
        self.target = target
        self.reason = reason


class ConversionError(PubsiftError, ValueError):
    """A value cannot be converted between two contexts (e.g. kilograms to US dollars)."""

"""What reading a file gives: an :class:`Event` of a model, or a :class:`Quarantined`
record that says why a record could not be read (docs/adapters.md §4).

Every event and every quarantined record carries its **source** (the path as given, joined
with the relative path inside a directory, ``archive.zip!member`` inside an archive) and its
**position** (1-based: the data row of a CSV file, the line of a JSON-lines file, the index
of the split element or feed item in document order, 1 for a whole document). Source and
position identify a record uniquely and stably, so a re-run gives the same ids. Position 0
is the source as a whole, used when no record could be delimited at all (a file that cannot
be opened, a document that does not parse, a format that is not known).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import printable

#: Stable reason codes of quarantined records (docs/adapters.md explains each). A reader
#: contributed by a plug-in may use its own codes, spelled the same way.
REASONS: dict[str, str] = {
    "unreadable": "the file or member cannot be opened or read (missing, permission, I/O)",
    "unknown-format": "no reader knows the file's format (extension and content sniffed)",
    "encoding": "bytes that are not text in the declared or detected encoding",
    "compression": "a compressed stream that is corrupt or truncated (gzip, bzip2)",
    "too-large": "a record, line or document beyond the configured size limit",
    "xml-syntax": "XML that is not well-formed",
    "xml-entity": "an entity declaration or reference (XXE, entity bombs) refused",
    "xml-too-deep": "XML nested deeper than the configured limit",
    "xml-no-split": "the named split element is not in the document",
    "csv-syntax": "a CSV row the csv module cannot read (e.g. an unterminated quote)",
    "csv-field-count": "a CSV row with more or fewer fields than the header",
    "csv-header": "a CSV header that is missing, empty or repeats a column",
    "csv-type": "a CSV value that does not fit its declared column type",
    "json-syntax": "a JSON line that is not (strict) JSON",
    "not-an-object": "a JSON line that is valid JSON but not an object",
    "invalid-event": "a record the filter model refuses as an event (EventError)",
    "concept-enrichment": "a record the publisher side cannot turn into a semantic object",
    "archive-member": "an archive member that is not read: unsafe name (../, absolute), "
    "link, device, nested too deep, or a corrupt archive",
    "archive-bomb": "an archive beyond the member count, total size or compression ratio limits",
    "reader-error": "a reader broke its contract (raised something other than a "
    "PubsiftError); a bug in the reader, reported, not raised",
}

_CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")

#: characters of the offending record a quarantine record keeps
EXCERPT_LENGTH = 200


def excerpt(raw: Any, length: int = EXCERPT_LENGTH) -> str:
    """A short, printable excerpt of a bad record (bytes are decoded leniently)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        text = bytes(raw[: length * 4]).decode("utf-8", "backslashreplace")
    else:
        text = raw if isinstance(raw, str) else repr(raw)
    text = printable(text)
    return text if len(text) <= length else text[: length - 1] + "…"


@dataclass(frozen=True, slots=True)
class Event:
    """One event read from a file: ``event`` is the model's parsed event."""

    model: str
    source: str
    position: int
    event: Any

    @property
    def id(self) -> str:
        """``source#position``: unique and stable across runs."""
        return f"{self.source}#{self.position}"


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A record that could not be read or converted, kept with the reason."""

    source: str
    position: int
    reason: str
    message: str
    excerpt: str = ""
    model: str | None = None

    def __post_init__(self) -> None:
        if not _CODE.match(self.reason):
            raise ValueError(f"reason code {self.reason!r} is not lower-case words joined by '-'")

    @property
    def id(self) -> str:
        return f"{self.source}#{self.position}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "position": self.position,
            "reason": self.reason,
            "message": self.message,
            "excerpt": self.excerpt,
            "model": self.model,
        }

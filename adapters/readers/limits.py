"""Limits of the readers (docs/adapters.md §5: archive and zip bombs are refused like entity bombs;
never unbounded memory). Each is a setting of :class:`ReadLimits`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pubsift.core.errors import PubsiftError
from pubsift.models.xml import ParseLimits


class ReadLimitsError(PubsiftError, ValueError):
    """A ReadLimits setting that is not a positive number."""


@dataclass(frozen=True)
class ReadLimits:
    """``max_members``: members of one archive; ``max_total_bytes``: uncompressed bytes read
    from one archive or compressed file; ``max_ratio``: uncompressed / compressed size of a
    member or compressed file, checked once more than ``ratio_floor`` bytes came out;
    ``max_nesting``: archives inside archives (1: a zip in a zip is read, a zip in that
    is not); ``max_record_bytes``: one CSV row or JSON line; ``xml``: the xml model's parse
    limits (document size and depth); ``stream_above``: XML files larger than this are
    streamed with ``iterparse`` instead of parsed whole."""

    max_members: int = 100_000
    max_total_bytes: int = 8 << 30
    max_ratio: int = 200
    ratio_floor: int = 1 << 20
    max_nesting: int = 1
    max_record_bytes: int = 10 << 20
    stream_above: int = 32 << 20
    xml: ParseLimits = field(default_factory=ParseLimits)

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "xml":
                if not isinstance(v, ParseLimits):
                    raise ReadLimitsError(
                        f"ReadLimits.xml is a ParseLimits, not {type(v).__name__}"
                    )
            elif (
                not isinstance(v, int)
                or isinstance(v, bool)
                or v < 0
                or (v == 0 and f.name != "max_nesting")
            ):
                raise ReadLimitsError(f"ReadLimits.{f.name} must be a positive integer, not {v!r}")


DEFAULT_READ_LIMITS = ReadLimits()

"""A small reader for the adapters tests (docs/adapters.md §7): a ``.lines`` file holds one integer per
line; line n is the event ``{"n": value}`` at position n, or a Quarantined ``lines-syntax``
when it is not an integer. Its oracle is Python's own ``splitlines``, so archive and tree
tests can count what must come out without the real readers."""

from __future__ import annotations

from pubsift.adapters import Quarantined, Reader
from pubsift.adapters.readers.converting import converter
from pubsift.adapters.readers.outcomes import excerpt


class LinesReader(Reader):
    name = "lines"
    extensions = (".lines",)
    default_model = "records"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(b"#lines\n")

    def read(self, inp, model, limits):
        convert = converter(model, inp.source)
        with inp.open() as fh:
            for n, raw in enumerate(fh, 1):
                text = raw.strip()
                if text.lstrip(b"-").isdigit() and len(text) < 19:
                    yield convert({"n": int(text)}, inp.name, n)
                else:
                    yield Quarantined(
                        inp.name, n, "lines-syntax", "not an integer", excerpt(raw), model.name
                    )


LINES_READER = LinesReader()


def oracle(data: bytes) -> tuple[int, int]:
    """(events, quarantined) the reader must give for ``data``: by splitting lines."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    good = sum(1 for x in lines if x.strip().lstrip(b"-").isdigit() and len(x.strip()) < 19)
    return good, len(lines) - good

"""The Python examples of README.md and docs/*.md run as written (DESIGN.md §3: "Two commands", a clean first contact).

Conventions for the examples (what this test enforces):

* Every fenced block that opens with ```` ```python ```` runs. The blocks of one file run in
  order, in one fresh interpreter (``sys.executable``) whose working directory is an empty
  temporary folder, in one shared namespace: a later block may use the names of an earlier
  one (each block should still carry the imports a reader copying it needs). A block that
  raises fails the test, and the traceback points at the line of the Markdown file.
* A block that genuinely cannot run (it imports the reader's own package, needs Spark or a
  server) is preceded by ``<!-- not-run: reason -->`` on the line just before its fence;
  the reason is required. Prefer making the block runnable: write the files it reads in
  the block itself.
* A block that reads the shared data folder names it by the environment variable
  ``PUBSIFT_DATA`` (as ``pubsift run`` does), and says so to its reader on its first line,
  ``# needs the real data sets: PUBSIFT_DATA=DIR ...`` (README.md, "The real data sets",
  says where they come from). The quick test runs every other block; a
  slow-marked test runs whole files, those blocks included, with ``PUBSIFT_DATA`` set to
  ``../shared/data`` next to the checkout, and is skipped with the reason when that folder
  is absent.
* A block that talks to a broker at ``pubsift://127.0.0.1:7400`` (the default address) gets
  one: the test starts ``pubsift broker`` on a free port of 127.0.0.1 for the file's run and
  points the blocks' address at it.
* Shell, TOML and JSON blocks are not run; the files of the bundled sample they name
  (``examples/...``) exist, and none names the shared data folder (``../shared/data``):
  a shell example runs on the bundled sample.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = (ROOT / ".." / "shared" / "data").resolve()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
BROKER_URL = "pubsift://127.0.0.1:7400"
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    line: int  # the line of the Markdown file where the code starts
    code: str
    not_run: str | None  # the reason given by <!-- not-run: ... -->
    needs_data: bool

    @property
    def needs_broker(self) -> bool:
        return BROKER_URL in self.code


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        code = m.group(1)
        out.append(
            Block(
                line=text.count("\n", 0, m.start(1)) + 1,
                code=code,
                not_run=marker.group(1) if marker else None,
                needs_data="PUBSIFT_DATA" in code,
            )
        )
    return out


#: runs the blocks given as JSON [[file, line, code], ...] on stdin in one namespace; the
#: code is compiled under the Markdown file's name, padded to its line, so tracebacks point
#: into the Markdown file
DRIVER = """
import json, sys
namespace = {"__name__": "__main__"}
for name, line, code in json.load(sys.stdin):
    print(f"--- {name}:{line}", file=sys.stderr, flush=True)
    exec(compile("\\n" * (line - 1) + code, name, "exec"), namespace)
"""


NEEDS_DATA = "# needs the real data sets: PUBSIFT_DATA="
SHELL_FENCE = re.compile(r"^```(?:sh|console|bash|shell)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def test_a_block_that_needs_the_real_data_sets_says_so_first():
    marked = 0
    for p in DOCS:
        for b in blocks(p):
            if b.needs_data:
                first = b.code.lstrip("\n").splitlines()[0]
                assert first.startswith(NEEDS_DATA), f"{p.name}:{b.line}: {first}"
                marked += 1
    assert marked >= 1  # docs/concepts.md's real ontologies


def test_shell_examples_name_files_of_the_bundled_sample_only():
    seen = 0
    for p in DOCS:
        for m in SHELL_FENCE.finditer(p.read_text(encoding="utf-8")):
            line = p.read_text(encoding="utf-8").count("\n", 0, m.start(1)) + 1
            code = m.group(1)
            assert "shared/data" not in code, (
                f"{p.name}:{line}: a shell example reads the shared data"
            )
            for path in re.findall(r"(?<![\w/.])examples/[\w./-]*\w", code):
                seen += 1
                assert (ROOT / path).exists(), f"{p.name}:{line}: {path} does not exist"
    assert seen >= 3


def test_every_doc_has_its_examples_found():
    """The fence pattern finds the blocks (a typo in it would make the test vacuous)."""
    found = {p.name: len(blocks(p)) for p in DOCS}
    assert found["README.md"] >= 5 and found["xml.md"] >= 1 and found["concepts.md"] >= 3, found
    for p in DOCS:
        for b in blocks(p):
            assert b.not_run != "", f"{p.name}:{b.line}: not-run needs a reason"


def _run(doc: Path, tmp_path: Path, with_data: bool) -> None:
    """Runs the blocks of ``doc`` (those that read the shared data only ``with_data``)."""
    run = [b for b in blocks(doc) if b.not_run is None and (with_data or not b.needs_data)]
    env = {k: v for k, v in os.environ.items() if k not in ("PUBSIFT_DATA", "PYTHONPATH")}
    if with_data:
        env["PUBSIFT_DATA"] = str(DATA)
    shown = str(doc.relative_to(ROOT)) if doc.is_relative_to(ROOT) else doc.name
    codes = [b.code for b in run]
    broker = None
    try:
        if any(b.needs_broker for b in run):
            broker, url = _start_broker(tmp_path)
            codes = [c.replace(BROKER_URL, url) for c in codes]
        done = subprocess.run(
            [sys.executable, "-c", DRIVER],
            input=json.dumps([[shown, b.line, c] for b, c in zip(run, codes)]),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        if broker is not None:
            broker.terminate()
            try:
                broker.wait(10)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.wait(5)
    assert done.returncode == 0, f"an example of {shown} failed:\n{done.stderr[-6000:]}"


def _start_broker(folder: Path) -> tuple[subprocess.Popen, str]:
    """``pubsift broker`` on a free port of 127.0.0.1; returns it and its URL."""
    port_file = folder / "broker.port"
    cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--id", "docs"]
    cmd += ["--listen", "127.0.0.1:0", "--port-file", str(port_file)]
    log = open(folder / "broker.log", "wb")  # noqa: SIM115  closed with the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    log.close()
    end = time.monotonic() + 60
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            raise AssertionError(f"the broker did not start: {(folder / 'broker.log').read_text()}")
        time.sleep(0.05)
    return proc, f"pubsift://127.0.0.1:{port_file.read_text().strip()}"


def test_a_block_that_raises_fails_and_is_located(tmp_path: Path):
    """Blocks share names in order; a raising block fails the run, and its traceback names
    the Markdown file and line; not-run blocks are left out."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# t\n\n```python\nx = 1\n```\n\n<!-- not-run: needs a server -->\n"
        "```python\nraise SystemExit(3)\n```\n\n```python\nassert x == 1\nraise ValueError(x)\n```\n"
    )
    assert [b.not_run for b in blocks(doc)] == [None, "needs a server", None]
    (tmp_path / "work").mkdir()
    with pytest.raises(AssertionError) as failed:
        _run(doc, tmp_path / "work", with_data=False)
    assert 'File "doc.md", line 14' in str(failed.value)
    assert "ValueError: 1" in str(failed.value)


@pytest.mark.parametrize("doc", [p for p in DOCS if blocks(p)], ids=lambda p: p.name)
def test_python_examples_run(doc: Path, tmp_path: Path):
    """Every block that runs without the shared data (a few seconds per file)."""
    _run(doc, tmp_path, with_data=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    "doc", [p for p in DOCS if any(b.needs_data for b in blocks(p))], ids=lambda p: p.name
)
def test_python_examples_with_the_shared_data_run(doc: Path, tmp_path: Path):
    """Every block of the files that have blocks reading the shared data (parsing the real
    ontologies takes a minute), with ``PUBSIFT_DATA`` set."""
    if not DATA.is_dir():
        pytest.skip(f"the shared data folder {DATA} is absent")
    _run(doc, tmp_path, with_data=True)

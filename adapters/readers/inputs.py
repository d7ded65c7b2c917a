"""Inputs: the files a :class:`~pubsift.adapters.readers.source.Source` names, each with a name and
a way to open it as a decompressed binary stream (docs/adapters.md §1, §3:
the source of an event).

A source's path is expanded into inputs as follows.

- **A file**: one input named by the path as given. ``.gz``/``.bz2`` files are
  decompressed through the bomb guard; the name keeps its suffix (readers detect the format
  without it: :func:`pubsift.adapters.readers.registry.strip_compression`).
- **A directory**, read recursively in sorted order of the path components; an input's
  name is the directory as given joined with the relative path (``data/feeds`` +
  ``a/b.rss`` -> ``data/feeds/a/b.rss``). Hidden files and directories (a name starting
  with ``.``: ``.git``, ``.DS_Store``) are skipped. Symbolic links are not followed: a link
  whose target is a file or directory the walk reads anyway is skipped (the target is read
  under its own name, so nothing is read twice and no loop is possible); a link to a file
  inside the tree that the walk would not read (under a hidden name: the Kubernetes volume
  layout ``file -> ..data/file``) is read under the link's name, each such file once; a
  link out of the tree, a link to a hidden directory, a broken link and anything that is not
  a regular file (FIFO, socket, device) is quarantined ``unreadable``. A directory with no
  file to read (empty, only sub-directories, only hidden files) is quarantined
  ``unreadable`` (a typo is not silent). Files matching one of the source's ``exclude``
  patterns are neither read nor counted.
- **A glob pattern** (``*``, ``?``, ``[...]``, ``**`` across directories), used when no
  file has the path literally: the matches in sorted order, directories among them
  expanded as above, each file once; hidden names only when the pattern spells the dot. A
  pattern that matches nothing is quarantined ``unreadable``.
- **An archive** (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``/``.tbz2``): its
  members (:mod:`pubsift.adapters.readers.archives`), named ``archive.zip!member/path``; an archive
  inside an archive is expanded too, ``max_nesting`` levels deep
  (``outer.zip!inner.tar!file.csv``), deeper ones are quarantined ``archive-member``.

A path that does not exist, and a path that is not a regular file, a directory or a link
to one (a FIFO, a socket, a device: opening it could block forever), is quarantined
``unreadable`` at position 0, naming it. Every
decompressed byte is counted against the limits of :class:`~pubsift.adapters.readers.limits.ReadLimits`
(:mod:`pubsift.adapters.readers.bombguard`).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from pubsift.adapters.readers.archives import archive_kind, tar_members, zip_members
from pubsift.adapters.readers.bombguard import Budget, compression_of, decompressed, translated
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Quarantined
from pubsift.adapters.readers.registry import ReadError
from pubsift.adapters.readers.source import Source
from pubsift.core.errors import one_line


@dataclass(frozen=True)
class Input:
    """One file to read. ``name``: its source label (the path as given, joined with the
    relative path inside a directory, ``a.zip!member`` inside an archive); ``source``: the
    settings, with ``path`` = ``name``; ``open()``: a fresh binary stream of the
    decompressed bytes (may be called more than once, e.g. to stream an XML file twice;
    for an archive member, while the iterator of :func:`inputs` is at that input);
    ``size``: the decompressed size when known (an archive's declared size: a hint);
    ``file``: the file on disk holding exactly the bytes ``open()`` gives (a file that is
    neither compressed nor an archive), None otherwise: a reader may read it itself, e.g.
    unbuffered."""

    name: str
    source: Source
    open: Callable[[], BinaryIO]
    size: int | None = None
    file: str | None = None


def inputs(source: Source, limits: ReadLimits) -> Iterator[Input | Quarantined]:
    """The inputs of ``source``; a problem with the source itself is a Quarantined."""
    return _walk(source, limits, _file)


def files(source: Source, limits: ReadLimits) -> Iterator[Input | Quarantined]:
    """The files of ``source`` on disk, as :func:`inputs` finds them (directories, glob
    patterns, links, exclusions), each one Input with :attr:`Input.file` set, **not**
    decompressed or expanded: a compressed file or an archive is one input. The Spark job
    lists with it on the driver and expands each file where it is read
    (:func:`expand`, docs/spark.md)."""
    return _walk(source, limits, _whole)


def _whole(
    source: Source, path: str, limits: ReadLimits, size: int | None = None
) -> Iterator[Input | Quarantined]:
    # an opener: the reader closes what it opens
    yield Input(path, source.with_path(path), lambda: open(path, "rb"), size, path)  # noqa: SIM115


_Leaf = Callable[[Source, str, ReadLimits, "int | None"], Iterator["Input | Quarantined"]]


def _walk(source: Source, limits: ReadLimits, leaf: _Leaf) -> Iterator[Input | Quarantined]:
    path = source.path
    # one lstat (and a stat through a symbolic link) per path: it is done per file read
    try:
        st: os.stat_result | None = os.lstat(path)
    except (OSError, ValueError):
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                st = None  # a broken link: reported when the reader opens it
        if st is not None and stat.S_ISDIR(st.st_mode):
            yield from _tree(source, path, limits, leaf)
        elif st is not None and not stat.S_ISREG(st.st_mode):
            yield _special(path)
        elif not _excluded(source, os.path.basename(path)):
            yield from leaf(source, path, limits, None if st is None else st.st_size)
    elif glob.has_magic(path):
        yield from _pattern(source, path, limits, leaf)
    else:
        yield Quarantined(path, 0, "unreadable", "cannot read: no such file or directory")


def _special(path: str) -> Quarantined:
    """A FIFO, socket or device: never opened (a FIFO's open blocks until a writer comes)."""
    return Quarantined(
        path, 0, "unreadable", "not read: not a regular file (a FIFO, socket or device)"
    )


def _excluded(source: Source, relative: str) -> bool:
    """Whether ``relative`` (a path inside the directory or archive given, or a file's
    name) matches one of the source's ``exclude`` patterns: against the whole relative
    path or its last component (``*.md``, ``PROVENANCE*``, ``docs/*``)."""
    if not source.exclude:
        return False
    base = relative.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(relative, pat) or fnmatch.fnmatchcase(base, pat)
        for pat in source.exclude
    )


def _pattern(
    source: Source, pattern: str, limits: ReadLimits, leaf: _Leaf
) -> Iterator[Input | Quarantined]:
    matches = sorted(glob.glob(pattern, recursive=True))
    if not matches:
        yield Quarantined(pattern, 0, "unreadable", "the pattern matches no file")
        return
    expanded: set[str] = set()
    for match in matches:
        parent = os.path.dirname(os.path.normpath(match))
        while parent and parent not in expanded and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
        if parent in expanded:
            continue  # read with a directory the pattern matched
        if os.path.isdir(match):
            expanded.add(os.path.normpath(match))
            yield from _tree(source, match, limits, leaf)
        elif os.path.exists(match) and not os.path.isfile(match):
            yield _special(match)
        elif not _excluded(source, os.path.basename(match)):
            yield from leaf(source, match, limits, None)


def _tree(
    source: Source, root: str, limits: ReadLimits, leaf: _Leaf
) -> Iterator[Input | Quarantined]:
    """The files under ``root``, depth first, entries of each directory sorted by name."""
    real_root = os.path.realpath(root)
    inside = real_root.rstrip(os.sep) + os.sep
    found = False
    # (entries, relative path of the directory); files behind links read so far (real paths)
    stack: list[tuple[Iterator[os.DirEntry[str]], str]] = []
    linked: set[str] = set()

    def enter(path: str, relative: str) -> Quarantined | None:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            return Quarantined(
                path, 0, "unreadable", f"cannot read the directory: {exc.strerror or one_line(exc)}"
            )
        stack.append((iter(entries), relative))
        return None

    def walked(target: str) -> bool:
        """Whether the walk reads ``target`` (a real path inside the tree) by itself."""
        rel = os.path.relpath(target, real_root)
        return rel == os.curdir or (
            not any(part.startswith(".") for part in rel.split(os.sep))
            and not (os.path.isfile(target) and _excluded(source, rel.replace(os.sep, "/")))
        )

    problem = enter(root, "")
    if problem:
        yield problem
        return
    while stack:
        entries, folder = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        if entry.name.startswith("."):
            continue
        label = entry.path
        relative = folder + entry.name
        try:
            if not entry.is_dir(follow_symlinks=False) and _excluded(source, relative):
                found = True  # excluded: neither read nor counted, whatever it is
                continue
            if entry.is_symlink():
                target = os.path.realpath(label)
                if not os.path.exists(target):
                    why = "a broken symbolic link"
                elif not (target == real_root or target.startswith(inside)):
                    why = "a symbolic link out of the tree"
                elif walked(target):
                    continue  # read under its own name (and found there)
                elif os.path.isfile(target):
                    # the target is hidden (``file -> ..data/file``): read under this name
                    found = True
                    if target not in linked:
                        linked.add(target)
                        yield from leaf(source, label, limits, os.stat(target).st_size)
                    continue
                else:
                    why = "a symbolic link to a hidden directory or a special file"
                found = True
                yield Quarantined(label, 0, "unreadable", f"not read: {why} (to {target})")
            elif entry.is_dir(follow_symlinks=False):
                problem = enter(label, relative + "/")
                if problem:
                    found = True
                    yield problem
            elif entry.is_file(follow_symlinks=False):
                found = True
                yield from leaf(source, label, limits, entry.stat(follow_symlinks=False).st_size)
            else:
                found = True
                yield _special(label)
        except OSError as exc:
            found = True
            yield Quarantined(
                label, 0, "unreadable", f"cannot read: {exc.strerror or one_line(exc)}"
            )
    if not found:
        yield Quarantined(
            root, 0, "unreadable", "the directory holds no file to read (hidden files are skipped)"
        )


def _file(
    source: Source, path: str, limits: ReadLimits, size: int | None = None
) -> Iterator[Input | Quarantined]:
    if size is None:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None  # reported when the reader opens it
    return expand(source, path, lambda: open(path, "rb"), size, limits, file=path)


def expand(
    source: Source,
    label: str,
    opener: Callable[[], BinaryIO],
    size: int | None,
    limits: ReadLimits,
    depth: int = 0,
    budget: Budget | None = None,
    file: str | None = None,
) -> Iterator[Input | Quarantined]:
    """The inputs of one file named ``label`` (opened by ``opener``): itself, decompressed
    when compressed, or its members when it is an archive. ``depth``: archives around it;
    ``budget``: the byte budget of the top-level archive it is in (None: it is the top);
    ``file``: the path ``opener`` opens when it is a file on disk (:attr:`Input.file`)."""
    kind = archive_kind(label)
    if kind is None:
        suffix = compression_of(label)
        if suffix is not None:
            own = budget or Budget(label, limits)
            yield Input(
                label,
                source.with_path(label),
                lambda: decompressed(opener(), suffix, label, limits, own),
                None,
            )
        else:
            yield Input(label, source.with_path(label), opener, size, file)
        return
    if depth > limits.max_nesting:
        yield Quarantined(
            label,
            0,
            "archive-member",
            f"not read: an archive nested {depth} deep (limit max_nesting = {limits.max_nesting})",
        )
        return
    budget = budget or Budget(label, limits)
    started = False
    try:
        with opener() as raw:
            members = (
                zip_members(label, raw, limits, budget)
                if kind == "zip"
                else tar_members(label, raw, kind, limits, budget)
            )
            for m in members:
                started = True
                if not isinstance(m, Quarantined) and _excluded(source, m.label[len(label) + 1 :]):
                    continue
                if isinstance(m, Quarantined):
                    yield m
                else:
                    yield from expand(source, m.label, m.open, m.size, limits, depth + 1, budget)
    except Exception as exc:
        err = exc if isinstance(exc, ReadError) else translated(exc)
        if err is not None:
            reason, message = err.reason, err.message
        elif isinstance(exc, OSError):
            reason, message = "unreadable", f"cannot read: {exc.strerror or one_line(exc)}"
        else:
            reason, message = (
                "archive-member",
                (f"corrupt archive ({type(exc).__name__}: {one_line(exc)[:300]})"),
            )
        if started:
            message += "; the rest of the archive is not read"
        yield Quarantined(label, 0, reason, message)


def missing(path: str) -> str | None:
    """Why a path given on a command line names nothing (a path that does not exist, a
    pattern matching no file), or None. The commands refuse such a path as a usage error
    before reading anything (a typo should not become a quarantined record, nor start a
    cluster job); :func:`expand` itself quarantines it."""
    if glob.has_magic(path):
        if next(glob.iglob(path, recursive=True), None) is None:
            return f"the pattern {path} matches no file"
    elif not os.path.lexists(path):
        return f"{path} does not exist"
    return None

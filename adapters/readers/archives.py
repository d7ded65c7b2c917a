"""Members of zip and tar archives, streamed, never extracted to disk (docs/adapters.md §1;
§4: a tar member with ``../`` in its name ends in quarantine).

:func:`zip_members` and :func:`tar_members` turn an archive (an open binary stream) into
:class:`Member` entries, each with a label ``archive!member`` and a way to open its bytes
through the bomb guard (:mod:`pubsift.adapters.readers.bombguard`), or a
:class:`~pubsift.adapters.readers.outcomes.Quarantined` for a member that is not read:

- an unsafe name (``..``, an absolute path, a drive letter, a NUL byte, empty), a link, a
  device or FIFO, an encrypted zip member, a second member with the same name:
  ``archive-member``, never opened;
- more entries than ``max_members`` (directories included): one ``archive-bomb`` record for
  the archive at position 0, and the rest is not read;
- a zip member whose declared size or ratio is beyond the limits, or any member once the
  archive's total is used up: ``archive-bomb`` (the declared sizes are a first check only;
  the guard enforces the limits on the bytes actually produced).

Members come in archive order: zip members in the order of their data in the archive
(the offset of their local header, then the name: the order they were written), so that a
zip inside a zip is read front to back and never decompressed again for a backward seek;
tar members in the order of the tar stream (a compressed tar is streamed front to back,
never listed first). Directory entries are skipped: they hold no records.
A member's ``open()`` is valid while the archive is open, i.e. until the iterator moves on.
"""

from __future__ import annotations

import re
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from pubsift.adapters.readers.bombguard import DECOMPRESSORS, Budget, CountingFile, guarded
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Quarantined
from pubsift.adapters.readers.registry import ReadError
from pubsift.core.errors import one_line, printable

#: tar suffixes and the compression of the tar stream
TAR_SUFFIXES: dict[str, str | None] = {
    ".tar": None,
    ".tar.gz": ".gz",
    ".tgz": ".gz",
    ".tar.bz2": ".bz2",
    ".tbz2": ".bz2",
    ".tbz": ".bz2",
}

_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Member:
    """A member to read: ``label`` is ``archive!name``; ``open()`` a guarded stream."""

    label: str
    open: Callable[[], BinaryIO]
    size: int | None


def archive_kind(name: str) -> str | None:
    """``zip``, a key of :data:`TAR_SUFFIXES`, or None when the name is not an archive's."""
    low = name.lower()
    if low.endswith(".zip"):
        return "zip"
    if not low.endswith(tuple(TAR_SUFFIXES)):
        return None  # most names (done per file read)
    for suffix in sorted(TAR_SUFFIXES, key=len, reverse=True):
        if low.endswith(suffix):
            return suffix
    return None


def unsafe_name(name: str) -> str | None:
    """Why a member name is not read (None: it is safe). Backslashes count as separators,
    so ``..\\evil`` is refused as ``../evil`` is."""
    if not name:
        return "an empty member name"
    if "\x00" in name:
        return "a NUL byte in the member name"
    norm = name.replace("\\", "/")
    if norm.startswith("/"):
        return "an absolute member name"
    if _DRIVE.match(norm):
        return "a member name with a drive letter"
    if ".." in norm.split("/"):
        return "a member name with a '..' component"
    return None


def member_label(archive: str, name: str) -> str:
    """``archive!name``, the name printable (control characters escaped, bytes that are
    not UTF-8 shown as U+FFFD)."""
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", printable(name))
    return f"{archive}!{shown}"


class _Gate:
    """The checks every member passes before it is opened: member count, duplicates."""

    def __init__(self, label: str, limits: ReadLimits) -> None:
        self.label = label
        self.limits = limits
        self.entries = 0
        self.seen: set[str] = set()

    def too_many(self) -> bool:
        self.entries += 1
        return self.entries > self.limits.max_members

    def refuse(self, name: str, mlabel: str) -> str | None:
        why = unsafe_name(name)
        if why is None and mlabel in self.seen:
            why = "a second member with the same name (its records would have the same ids)"
        self.seen.add(mlabel)
        return why


def _refused(mlabel: str, why: str, reason: str = "archive-member") -> Quarantined:
    return Quarantined(mlabel, 0, reason, f"not read: {why}")


def zip_members(
    label: str, raw: Any, limits: ReadLimits, budget: Budget
) -> Iterator[Member | Quarantined]:
    """The members of the zip archive in ``raw`` (a seekable binary stream)."""
    counting = CountingFile(raw)
    try:
        zf = zipfile.ZipFile(counting)
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        yield Quarantined(
            label, 0, "archive-member", f"not a readable zip archive: {one_line(exc)}"
        )
        return
    with zf:
        infos = sorted(zf.infolist(), key=lambda i: (i.header_offset, i.orig_filename))
        gate = _Gate(label, limits)
        for info in infos:
            if gate.too_many():
                yield Quarantined(
                    label,
                    0,
                    "archive-bomb",
                    f"{len(infos)} entries, more than "
                    f"max_members = {limits.max_members}: the last "
                    f"{len(infos) - limits.max_members} (in archive order) are "
                    "not read",
                )
                return
            if info.is_dir():
                continue
            mlabel = member_label(label, info.orig_filename)
            why = gate.refuse(info.orig_filename, mlabel) or _zip_kind(info)
            if why:
                yield _refused(mlabel, why)
                continue
            why = _declared_bomb(info, limits, budget)
            if why:
                yield _refused(mlabel, why, "archive-bomb")
                continue
            yield Member(
                mlabel, _zip_opener(zf, info, mlabel, counting, limits, budget), info.file_size
            )


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    """Why a zip entry is not a plain file (a link, a device; encrypted), or None."""
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode:  # unix attributes
        kind = stat.S_IFMT(mode)
        if kind == stat.S_IFLNK:
            return "a symbolic link"
        if kind not in (0, stat.S_IFREG):
            return "not a regular file (a device, FIFO or socket)"
    if info.flag_bits & 0x1:
        return "an encrypted member"
    return None


def _declared_bomb(info: zipfile.ZipInfo, limits: ReadLimits, budget: Budget) -> str | None:
    if budget.exceeded:
        return budget.exceeded
    if info.file_size > limits.max_total_bytes:
        return (
            f"declares {info.file_size} bytes uncompressed, more than max_total_bytes "
            f"= {limits.max_total_bytes}"
        )
    if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * max(
        info.compress_size, 1
    ):
        return (
            f"declares a compression ratio above max_ratio = {limits.max_ratio} "
            f"({info.file_size} bytes out of {info.compress_size})"
        )
    return None


def _zip_opener(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    mlabel: str,
    counting: CountingFile,
    limits: ReadLimits,
    budget: Budget,
) -> Callable[[], BinaryIO]:
    def open_member() -> BinaryIO:
        start = counting.count
        try:
            inner = zf.open(info)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
            raise ReadError("archive-member", f"cannot open the member: {one_line(exc)}") from None
        return guarded(inner, mlabel, limits, budget, lambda: counting.count - start)

    return open_member


def tar_members(
    label: str, raw: Any, kind: str, limits: ReadLimits, budget: Budget
) -> Iterator[Member | Quarantined]:
    """The members of the tar archive in ``raw``; ``kind`` is a key of
    :data:`TAR_SUFFIXES` (the compression of the whole tar stream)."""
    compression = TAR_SUFFIXES[kind]
    counting = CountingFile(raw)
    inner = DECOMPRESSORS[compression](counting) if compression else counting
    stream = guarded(
        inner, label, limits, budget, (lambda: counting.count) if compression else None
    )
    try:
        # closed by the with below; opened apart so that a bad archive is quarantined
        tf = tarfile.open(fileobj=stream, mode="r:")  # noqa: SIM115
    except tarfile.TarError as exc:
        stream.close()
        yield Quarantined(
            label, 0, "archive-member", f"not a readable tar archive: {one_line(exc)}"
        )
        return
    with tf, stream:
        gate = _Gate(label, limits)
        while True:
            try:
                ti = tf.next()
            except tarfile.TarError as exc:
                yield Quarantined(
                    label,
                    0,
                    "archive-member",
                    f"corrupt tar archive after {gate.entries} entries: {one_line(exc)}",
                )
                return
            if ti is None:
                return
            if gate.too_many():
                yield Quarantined(
                    label,
                    0,
                    "archive-bomb",
                    f"more than max_members = {limits.max_members} entries: the rest is not read",
                )
                return
            if ti.isdir():
                continue
            mlabel = member_label(label, ti.name)
            why = gate.refuse(ti.name, mlabel) or _tar_kind(ti)
            if why:
                yield _refused(mlabel, why)
                continue
            if budget.exceeded:
                yield _refused(mlabel, budget.exceeded, "archive-bomb")
                continue
            yield Member(mlabel, _tar_opener(tf, ti, mlabel, limits), ti.size)


def _tar_kind(ti: tarfile.TarInfo) -> str | None:
    if ti.issym() or ti.islnk():
        return f"a link (to {printable(ti.linkname)!r})"
    if ti.ischr() or ti.isblk() or ti.isfifo():
        return "a device or FIFO"
    if not ti.isreg():
        return f"not a regular file (tar type {ti.type!r})"
    return None


def _tar_opener(
    tf: tarfile.TarFile, ti: tarfile.TarInfo, mlabel: str, limits: ReadLimits
) -> Callable[[], BinaryIO]:
    def open_member() -> BinaryIO:
        try:
            inner = tf.extractfile(ti)
        except tarfile.TarError as exc:
            raise ReadError("archive-member", f"cannot open the member: {one_line(exc)}") from None
        if inner is None:
            raise ReadError("archive-member", "not a regular file")
        # bytes are counted by the archive stream's guard; this one translates errors
        return guarded(inner, mlabel, limits, None, None)

    return open_member

"""Running hostile cases where a crash cannot take the test runner down (the hostile-input suite).

A batch of cases runs in a forked child process (the model, its strategies and the cases
are inherited, nothing is pickled) with its address space limited (``RLIMIT_AS``: what the
process already uses plus :attr:`Limits.memory`), and the parent watches it: each case is
announced on a pipe before it runs, so when the child overruns :attr:`Limits.case_timeout`
on one case (killed), dies of a signal (a C stack overflow, a segfault) or exits, the parent
names the case it was working on. Problems a case reports itself (a hook raising something
other than a ``PubsiftError``, a ``MemoryError`` under the limit, a wrong answer) come back
as messages. POSIX only (``os.fork``, ``resource``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """Bounds of one hostile case: wall-clock seconds, and bytes of address space the child
    may add to what the process already uses."""

    case_timeout: float = 10.0
    memory: int = 1 << 30


def _address_space() -> int | None:
    """Current virtual memory size of this process in bytes (Linux), else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _limit_memory(extra: int) -> None:
    import resource

    used = _address_space()
    if used is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = used + extra
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _child(cases: Sequence[T], work: Callable[[T], list[str]], limits: Limits, fd: int) -> None:
    def send(obj: Any) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(fd, data) :]

    _limit_memory(limits.memory)
    if faulthandler.is_enabled():  # a crash's traceback goes to the test's captured stderr
        with contextlib.suppress(AttributeError, OSError, ValueError):
            faulthandler.enable(file=sys.stderr, all_threads=False)
    for i, case in enumerate(cases):
        send({"start": i})
        for problem in work(case):
            send({"case": i, "problem": problem})
    send({"done": True})


def run_isolated(
    cases: Sequence[T],
    work: Callable[[T], list[str]],
    describe: Callable[[T], str],
    limits: Limits = Limits(),
) -> list[str]:
    """Run ``work(case)`` (which returns the problems it found, as messages) on every case
    in a forked child under ``limits``; returns all problems, each naming its case, plus one
    for a case that timed out or crashed the child (the rest of the batch is then skipped)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 0
        try:
            os.close(read_fd)
            _child(cases, work, limits, write_fd)
        except BaseException as exc:  # the child must never return into pytest
            with contextlib.suppress(BaseException):
                os.write(
                    write_fd,
                    (json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n").encode(),
                )
            status = 3
        finally:
            os._exit(status)
    os.close(write_fd)
    problems: list[str] = []
    current: int | None = None
    done = killed = False
    buffer = b""
    deadline = time.monotonic() + limits.case_timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                killed = True
                problems.append(
                    _about(
                        cases,
                        current,
                        describe,
                        f"did not finish within {limits.case_timeout:g} s "
                        "(a hang, or super-linear time); killed",
                    )
                )
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                msg = json.loads(line)
                if "start" in msg:
                    current = msg["start"]
                    deadline = time.monotonic() + limits.case_timeout
                elif "problem" in msg:
                    problems.append(_about(cases, msg["case"], describe, msg["problem"]))
                elif "error" in msg:
                    problems.append(
                        _about(
                            cases,
                            current,
                            describe,
                            f"the conformance harness failed: {msg['error']}",
                        )
                    )
                elif msg.get("done"):
                    done = True
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    if not done and not killed:
        if os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status)).name
            why = f"crashed the process with {sig} (a C stack overflow or memory error?)"
        else:
            why = f"ended the process (exit status {os.WEXITSTATUS(status)})"
        problems.append(_about(cases, current, describe, why))
    return problems


def _about(cases: Sequence[T], i: int | None, describe: Callable[[T], str], problem: str) -> str:
    if i is None:
        return f"before the first case: {problem}"
    return f"{problem}\n    input: {describe(cases[i])}"


def report(problems: list[str]) -> str:
    """The problems of a batch, each once, with how often it occurred."""
    counts: dict[str, int] = {}
    for p in problems:
        counts[p] = counts.get(p, 0) + 1
    lines = [p if n == 1 else f"{p}\n    ({n} times in this batch)" for p, n in counts.items()]
    return f"{len(problems)} contract violation(s) on hostile input:\n  " + "\n  ".join(lines)

"""Stopping a job: Ctrl-C and SIGTERM end it with one line, and no stack trace of Python or
Java.

* While the job runs, SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler) are the job's
  (:class:`Interrupts`). Arriving while the driver waits for Spark (a call through py4j),
  the signal does not interrupt that call (py4j would log the KeyboardInterrupt with its
  traceback and leave its connection unusable): Spark's jobs are cancelled instead, so the
  call returns, and the job ends as interrupted. Arriving anywhere else, it raises
  KeyboardInterrupt as usual.
* Ctrl-C reaches every process of the terminal's process group: the driver, and Spark's
  Python workers, which PySpark sets up to raise KeyboardInterrupt (a traceback each).
  The job's task functions ignore it (:func:`ignore_interrupts`): the driver decides, and
  the tasks it cancels are ended by Spark.
* Before the staging directory is removed the tasks are stopped (:func:`stop_tasks`):
  Spark's log is silenced, every job cancelled, and the driver waits for the tasks to
  end, so that none is left reading or writing a folder that no longer exists (each of
  which would log its failure with a Java stack trace).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Any

#: seconds :func:`stop_tasks` waits for the cancelled tasks to end
STOP_WAIT = 10.0

#: seconds between two cancellations of Spark's jobs after a signal (a job the driver
#: starts after the first is cancelled too)
CANCEL_EVERY = 0.2

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """``with Interrupts() as stop:`` SIGINT and SIGTERM stop the job (see the module);
    :meth:`started` after Spark started (PySpark installs its own SIGINT handler),
    :meth:`check` where the job may stop, :meth:`disarm` before cleaning up."""

    def __init__(self) -> None:
        self.signalled = threading.Event()
        self.done = threading.Event()
        self.spark: Any = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        self._install()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.disarm()
        if threading.current_thread() is threading.main_thread():
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)

    def started(self, spark: Any) -> None:
        """Spark is running as ``spark``: a signal cancels its jobs from now on."""
        self.spark = spark
        self._install()

    def check(self) -> None:
        """KeyboardInterrupt if a signal came."""
        if self.signalled.is_set():
            raise KeyboardInterrupt("interrupted")

    def disarm(self) -> bool:
        """Stop cancelling and ignore further signals; whether a signal came."""
        self.done.set()
        return self.signalled.is_set()

    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in SIGNALS:
            previous = signal.signal(signum, self._handle)
            if previous is not self._handle:
                self._previous[signum] = previous

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signalled.is_set() or self.done.is_set():
            return  # the first signal is being handled, or the job is cleaning up
        self.signalled.set()
        if self.spark is not None:
            threading.Thread(target=self._cancel, daemon=True, name="cancel").start()
        if not _in_py4j(frame):
            raise KeyboardInterrupt(signal.Signals(signum).name)

    def _cancel(self) -> None:
        with contextlib.suppress(BaseException):
            silence(self.spark.sparkContext)
        while True:
            with contextlib.suppress(BaseException):
                self.spark.sparkContext.cancelAllJobs()
            if self.done.wait(CANCEL_EVERY):
                return


def _in_py4j(frame: FrameType | None) -> bool:
    """Whether ``frame`` is inside py4j (a call to Spark's JVM)."""
    while frame is not None:
        if "/py4j/" in frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame = frame.f_back
    return False


def ignore_interrupts() -> None:
    """In a task (a Python worker's main thread): the terminal's Ctrl-C is the driver's to
    handle, not a KeyboardInterrupt with a traceback in each worker."""
    with contextlib.suppress(ValueError):  # not the worker's main thread: nothing to do
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def silence(sc: Any) -> None:
    """Turn Spark's log off, every logger of it: ``setLogLevel`` sets the root logger's
    level only, and a logger given a level of its own (``log4j2.properties``:
    ``org.apache.spark.util.Utils``, which logs "Aborting task" with a Java stack trace
    for a task whose folder went) kept logging."""
    sc.setLogLevel("OFF")
    jvm = sc._jvm
    if jvm is not None:  # the JVM's log4j2: every configured logger and the root
        off = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setAllLevels("", off)


def stop_tasks(spark: Any, wait: float = STOP_WAIT) -> None:
    """Silence Spark's log, cancel every job of ``spark`` and wait (at most ``wait``
    seconds) until no job is active. Never raises: the job is ending anyway."""
    try:
        sc = spark.sparkContext
        silence(sc)
        sc.cancelAllJobs()
        tracker = sc.statusTracker()
        end = time.monotonic() + wait
        while tracker.getActiveJobIds() and time.monotonic() < end:
            time.sleep(0.1)
    except BaseException:  # Spark Connect, a context already stopped, a second Ctrl-C
        pass

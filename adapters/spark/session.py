"""Starting Spark for the job (docs/spark.md, "Where it runs").

The default master is ``local[*]``: nothing to install but Java 17, checked before the
session starts (:func:`check_java`) so that a missing or old Java is one clear message, not
a Java stack trace. ``--master spark://HOST:PORT`` (also ``yarn``, ``k8s://...``) runs the
same job on a cluster; under ``spark-submit`` the master and settings spark-submit was given
are kept. The workers run the Python that runs the driver (``PYSPARK_PYTHON``), so they find
pubsift and every installed model (entry points included) through the same installation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pubsift.core.errors import PubsiftError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the oldest Java the installed Spark runs on
MIN_JAVA = 17

#: settings every session of the job gets (a job file's ``[spark.conf]`` may change them)
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # the job shows its own progress
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Arrow batches handed to the tasks stay small however large the files or documents
    "spark.sql.execution.arrow.maxBytesPerBatch": str(32 << 20),
    "spark.sql.sources.partitionOverwriteMode": "static",
    # subscriber ids and model names are names, never numbers or dates
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    # Spark's own log lines below WARN would bury the job's output
    "spark.log.level": "WARN",
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "spark.hadoop.fs.file.impl.disable.cache": "true",
}


#: Spark's log settings for the job (warnings and errors, one line each, on stderr)
LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


class SparkSetupError(PubsiftError, RuntimeError):
    """Spark cannot start: PySpark or Java missing, a master that cannot be reached."""


def require_pyspark() -> None:
    """SparkSetupError unless PySpark can be imported (the ``spark`` extra)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkSetupError(
            "the Spark job needs PySpark: pip install 'pubsift[spark]' (make run installs it)"
        ) from None


def check_java(java_home: str | None = None) -> str:
    """The version of the Java Spark will use; SparkSetupError if there is none or it is
    older than Java 17. Spark takes ``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    home = java_home if java_home is not None else os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    where = f"JAVA_HOME={home}" if home else "the PATH"
    if not java or not os.access(java, os.X_OK):
        raise SparkSetupError(
            f"Spark needs Java {MIN_JAVA} or later and there is no java "
            f"in {where}: install a JDK {MIN_JAVA}+ (e.g. apt install "
            f"openjdk-{MIN_JAVA}-jre-headless) or set JAVA_HOME"
        )
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SparkSetupError(f"cannot run {java} -version: {exc}") from None
    text = proc.stderr + proc.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        raise SparkSetupError(
            f"cannot tell the version of {java} (it printed "
            f"{text.strip()[:200]!r}); Spark needs Java {MIN_JAVA}+"
        )
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_392": Java 8
        major = int(m.group(2))
    if major < MIN_JAVA:
        raise SparkSetupError(
            f"Spark needs Java {MIN_JAVA} or later; {java} is Java {major} "
            f"({where}): install a JDK {MIN_JAVA}+ or point JAVA_HOME at one"
        )
    return m.group(0).split('"', 1)[1]


#: settings a Spark Connect client may set for its session (the server's own settings
#: decide the rest: file system, UI, logging)
CONNECT_SETTINGS = ("spark.sql.",)


def connect(url: str, app_name: str, conf: Mapping[str, Any] | None = None) -> SparkSession:
    """A Spark Connect session at ``url`` (``sc://HOST:PORT``; needs the ``connect``
    extra). The job ships everything a task needs in its functions' closures, so it runs
    unchanged; the server must see the files under the paths the client lists, and should
    run with ``spark.hadoop.fs.file.impl=org.apache.hadoop.fs.RawLocalFileSystem`` for file
    names with ``:``."""
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:
        raise SparkSetupError(
            f"Spark Connect needs its client libraries: pip install 'pubsift[connect]' ({exc})"
        ) from None
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in {**DEFAULT_CONF, **dict(conf or {})}.items():
        if key.startswith(CONNECT_SETTINGS):
            builder = builder.config(key, str(value))
    try:
        return builder.getOrCreate()
    except Exception as exc:
        raise SparkSetupError(
            f"cannot connect to Spark Connect at {url}: {_root_cause(exc)[:300]}"
        ) from None


#: the forms of a Spark master URL (checked before Spark starts)
MASTER = re.compile(
    r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|"
    r"(spark|k8s|mesos|sc)://\S+|yarn\Z"
)


def check_master(master: str) -> None:
    """SparkSetupError for a master that is none of Spark's forms (a typo would otherwise
    surface as a Java stack trace after the JVM started)."""
    if not MASTER.fullmatch(master):
        raise SparkSetupError(
            f"--master {master!r} is not a Spark master URL: local, "
            "local[N], local[*], spark://HOST:PORT, yarn, k8s://..., "
            "sc://HOST:PORT (Spark Connect)"
        )


#: seconds a standalone master gets to accept a connection before the job says there is none
MASTER_TIMEOUT = 3.0


def check_reachable(master: str, timeout: float = MASTER_TIMEOUT) -> None:
    """SparkSetupError ``no master at spark://HOST:PORT (why)`` unless one of the masters
    a ``spark://`` URL names (``spark://h1:7077,h2:7077`` for standby masters) answers as
    a Spark master (:func:`_answers_as_spark`) within ``timeout`` seconds; Spark itself
    would retry for a minute and end with "Cannot call methods on a stopped SparkContext"."""
    if not master.startswith("spark://"):
        return
    why = []
    for where in master[len("spark://") :].split(","):
        host, _, port = where.rpartition(":")
        if not host or not port.isdigit():
            raise SparkSetupError(f"--master {master!r}: expected spark://HOST:PORT[,HOST:PORT]")
        problem = _answers_as_spark(host.strip("[]"), int(port), timeout)
        if problem is None:
            return
        why.append(f"{where}: {problem}")
    raise SparkSetupError(f"no master at {master} ({'; '.join(why)})")


def _answers_as_spark(host: str, port: int, timeout: float) -> str | None:
    """None when ``host:port`` answers as Spark's RPC server, else why not. The probe is a
    request of Spark's transport protocol for a file the server does not have
    (``StreamRequest``: a frame of 8 bytes of length, type 6, the stream id): a master
    answers ``StreamFailure`` (type 8) and logs nothing above INFO; one that requires
    authentication closes the connection, as does a master too busy to answer in time
    (both taken as a master: Spark decides then). Anything else, such as an HTTP server's
    ``HTTP/1.1 400``, is not a Spark master."""
    import socket
    import struct

    stream = b"/files/pubsift-probe"
    frame = struct.pack(">qbi", 8 + 1 + 4 + len(stream), 6, len(stream)) + stream
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(frame)
            answer = sock.recv(64)
    except TimeoutError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    if not answer or (len(answer) > 8 and answer[8] in (7, 8)):
        return None
    text = answer.split(b"\r\n", 1)[0].decode("ascii", "replace")
    return f"something answers there, but not as a Spark master ({text[:60]!r})"


def _root_cause(exc: BaseException) -> str:
    """The message of the innermost Java cause of a py4j error (``All masters are
    unresponsive``), else the exception's first line."""
    java = getattr(exc, "java_exception", None)
    message = None
    try:
        while java is not None:
            message = java.getMessage() or message
            java = java.getCause()
    except Exception:
        pass
    text = message or str(exc).strip()
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def under_spark_submit() -> bool:
    """Whether this driver was started by ``spark-submit`` (which gives the master)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start(
    master: str | None = None, app_name: str = "pubsift", conf: Mapping[str, Any] | None = None
) -> SparkSession:
    """A SparkSession for the job: ``master`` (default ``local[*]``, or what spark-submit
    was given), :data:`DEFAULT_CONF` overridden by ``conf``. Checks PySpark and Java
    first. A master ``sc://HOST:PORT`` connects to a Spark Connect server instead
    (:func:`connect`)."""
    require_pyspark()
    if master is not None:
        check_master(master)
    if master is not None and master.startswith("sc://"):
        return connect(master, app_name, conf)
    check_java()
    if master is not None:
        check_reachable(master)
    # the workers must run this interpreter (it has pubsift and the models installed)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = {**DEFAULT_CONF, **dict(conf or {})}
    if "spark.driver.extraJavaOptions" not in settings and not under_spark_submit():
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG_CONFIG}"
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not under_spark_submit():
        builder = builder.master("local[*]")
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        raise SparkSetupError(
            f"Spark did not start (master {master or 'local[*]'}): {_root_cause(exc)[:300]}"
        ) from None
    return spark

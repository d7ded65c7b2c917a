"""``pubsift route`` as a user runs it, a real process with its output piped: progress
lines while Spark works, the summary on standard output (as under spark-submit); SIGTERM
and Ctrl-C (SIGINT to the whole process group, as a terminal sends it) end the run with
one line and no Python or Java stack trace, leaving nothing behind; a ``spark://`` master
that is not there is named in one line within seconds."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from . import kit


def _job(sample, tmp_path: Path) -> Path:
    return kit.write_job(tmp_path / "job.toml", sample.sources, sample.subs_file)


def _no_trace(text: str) -> None:
    assert "Traceback" not in text and "\tat " not in text and "Exception" not in text, text
    assert "py4j" not in text and "ERROR" not in text, text


@pytest.mark.spark
@pytest.mark.slow
def test_a_piped_run_shows_progress_and_prints_the_summary_on_stdout(sample, tmp_path):
    """Two of the sample's sources (a CSV file, the UBL documents), every subscriber."""
    from pubsift.adapters.readers.source import Source

    out = tmp_path / "out"
    sources = [
        Source(str(sample.root / "files" / "quotes.csv")),
        Source(str(sample.root / "ubl"), model="concepts"),
    ]
    job = kit.write_job(tmp_path / "job.toml", sources, sample.subs_file)
    done = subprocess.run(
        [*kit.pubsift_cmd(), "route", str(job), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env=kit.spark_env(PUBSIFT_PROGRESS_EVERY="0.2"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr.splitlines()
    # progress on stderr: a plain line per half second inside the stages, then each stage
    assert any(ln.startswith("… convert: ") and " tasks, " in ln for ln in err), err
    assert "✓ Spark started (local[*])" in done.stderr
    assert "\x1b[" not in done.stderr + done.stdout  # no terminal control when piped
    # the summary on stdout, and only there
    summary = kit.summary(out)
    assert f"deliveries: {summary['deliveries']}" in done.stdout
    assert "deliveries:" not in done.stderr and "wall time:" in done.stdout
    assert f"report: {out / 'report.html'}" in done.stdout
    assert (out / "report.html").stat().st_size > 10_000
    _no_trace(done.stdout)


def _interrupt(sample, tmp_path: Path, signum: int, group: bool) -> tuple[int, str, Path]:
    """Run the job, send ``signum`` once it converts (to its process group: ``group``),
    return its status, its standard error and its --out."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*kit.pubsift_cmd(), "route", str(_job(sample, tmp_path)), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kit.spark_env(PUBSIFT_PROGRESS_EVERY="0.2"),
        start_new_session=True,  # its own process group, as a terminal's job
    )
    lines: list[str] = []
    converting = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("… convert: ") and " tasks, " in line:
                converting.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert converting.wait(600), "".join(lines)
        if group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        status = proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    reader.join(30)
    return status, "".join(lines) + (proc.stdout.read() if proc.stdout else ""), out


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "group"), [(signal.SIGTERM, False), (signal.SIGINT, True)], ids=["term", "ctrl-c"]
)
def test_a_signal_ends_the_run_with_one_line_and_no_trace(sample, tmp_path, signum, group):
    status, text, out = _interrupt(sample, tmp_path, signum, group)
    assert status == 130, text
    after = text.split("✓ files listed", 1)[1].split("\n", 1)[1]  # what came after it
    said = [ln for ln in after.splitlines() if ln and not ln.startswith("… ")]
    assert said == ["pubsift route: interrupted; nothing was written to --out"], text
    _no_trace(after)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_a_standalone_master_that_is_not_there_is_named_in_one_line(sample, tmp_path):
    """Nothing listens on the port (refused), or something that is no Spark master does
    (an HTTP server's answer): one line, exit status 2, no Spark started."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    http = socket.socket()
    http.bind(("127.0.0.1", 0))
    http.listen()
    stop = threading.Event()

    def answer() -> None:
        http.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = http.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                conn.recv(100)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")

    server = threading.Thread(target=answer, daemon=True)
    server.start()
    job = _job(sample, tmp_path)
    try:
        for port, why in ((closed, "Connection refused"), (http.getsockname()[1], "HTTP/1.1 400")):
            master = f"spark://127.0.0.1:{port}"
            done = subprocess.run(
                [*kit.pubsift_cmd(), "route", str(job), "--master", master, "--out", "o"],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=tmp_path,
                env=kit.spark_env(),
            )
            assert done.returncode == 2, done.stderr
            (line,) = done.stderr.splitlines()
            assert line.startswith(f"pubsift route: no master at {master} (") and why in line
            assert not (tmp_path / "o").exists()
    finally:
        stop.set()
        server.join(5)
        http.close()


def test_the_probe_waits_no_longer_than_its_timeout_for_a_silent_server():
    """A server that accepts and says nothing (a busy master) is left to Spark to judge."""
    from pubsift.adapters.spark.session import _answers_as_spark

    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        assert _answers_as_spark("127.0.0.1", srv.getsockname()[1], 0.3) is None

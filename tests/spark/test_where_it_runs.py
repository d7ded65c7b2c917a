"""Where the job runs (docs/spark.md, "Where it runs"), each for real as a separate process:
under ``spark-submit --master local[2]``, on a Spark standalone cluster (a master and one
worker on 127.0.0.1 started from the installed pyspark with ``spark-class``), and with a
third-party model registered as an entry point (the conformance kit's toy interval model
and a reader of its own), which the workers find through the same installation. Each run's
deliveries are compared with the in-process run of the same files and subscribers, or with
the toy model's own ``matches``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from . import kit

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_HOME = Path(
    pytest.importorskip("pyspark", reason="the spark extra is not installed").__file__
).parent
LOCAL = {"SPARK_LOCAL_IP": "127.0.0.1"}


def expected_for(routed, sample, under: Path) -> kit.Pairs:
    """The in-process run's deliveries of the sources under ``under``."""
    out: kit.Pairs = {}
    for sid, pairs in kit.delivered_pairs(routed.out).items():
        mine = {p for p in pairs if p[0].startswith(str(under) + os.sep)}
        if mine:
            out[sid] = mine
    return out


def check_run(done: subprocess.CompletedProcess, out: Path) -> None:
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (out / "summary.json").is_file() and "Traceback" not in done.stdout + done.stderr


def test_the_job_runs_under_spark_submit(routed, sample, tmp_path):
    """``spark-submit ... adapters/spark/cli.py route JOB.toml``: every source of the sample
    (records, xml, concepts with a publisher side), spark-submit's master."""
    job = kit.write_job(tmp_path / "job.toml", sample.sources, sample.subs_file)
    out = tmp_path / "out"
    submit = SPARK_HOME / "bin" / "spark-submit"
    done = subprocess.run(
        [
            str(submit),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(kit.ROOT / "adapters" / "spark" / "cli.py"),
            "route",
            str(job),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=kit.spark_env(SPARK_HOME=str(SPARK_HOME), **LOCAL),
    )
    check_run(done, out)
    assert kit.delivered_pairs(out) == kit.delivered_pairs(routed.out)
    assert kit.summary(out)["sources"] == routed.summary["sources"]
    # spark-submit's PythonRunner merges the driver's stderr into its stdout
    assert "Spark started (spark-submit's master)" in done.stdout + done.stderr


# -- a standalone cluster ----------------------------------------------------------------------
def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _wait_for(log: Path, words: str, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if words in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(
        f"{words!r} not in {log} (exit {proc.poll()}):\n{log.read_text(errors='replace')[-3000:]}"
    )


@pytest.fixture
def cluster(tmp_path):
    """``spark://127.0.0.1:PORT``: a standalone master and one worker (2 cores, 1g),
    stopped (terminate, then kill) whatever the test does."""
    spark_class = SPARK_HOME / "bin" / "spark-class"
    env = kit.spark_env(SPARK_HOME=str(SPARK_HOME), SPARK_NO_DAEMONIZE="1", **LOCAL)
    port = kit.free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        for name, args in (
            (
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(kit.free_port()),
                ],
            ),
            (
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(kit.free_port()),
                    "--work-dir",
                    str(tmp_path / "work"),
                ],
            ),
        ):
            log = tmp_path / f"{name}.log"
            logs.append(log)
            with open(log, "wb") as fh:
                procs.append(
                    subprocess.Popen(
                        [str(spark_class), *args],
                        stdout=fh,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
            if name == "master":
                _wait_for(log, "I have been elected leader", procs[0], 120)
        _wait_for(logs[0], "Registering worker", procs[0], 120)
        yield url
    finally:
        for p in reversed(procs):
            _stop(p)


def test_the_job_runs_on_a_standalone_cluster(cluster, routed, sample, tmp_path):
    files = sample.root / "files"
    out = tmp_path / "out"
    done = subprocess.run(
        kit.pubsift_cmd()
        + [
            "route",
            str(files),
            "--subscriptions",
            str(sample.subs_file),
            "--out",
            str(out),
            "--master",
            cluster,
            "--conf",
            "spark.executor.memory=512m",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=kit.spark_env(SPARK_HOME=str(SPARK_HOME), **LOCAL),
    )
    check_run(done, out)
    assert f"Spark started ({cluster})" in done.stderr
    assert kit.delivered_pairs(out) == expected_for(routed, sample, files)


# -- a third-party model, found by entry points on the workers ---------------------------------
INTS_READER = '''
"""A reader of .ints files (one integer per line) for the toy interval model."""
from pubsift.adapters import Quarantined, Reader
from pubsift.adapters.readers.outcomes import excerpt
from pubsift.adapters.readers.converting import converter


class IntsReader(Reader):
    name = "ints"
    extensions = (".ints",)
    default_model = "toy-intervals"

    def read(self, inp, model, limits):
        convert = converter(model, inp.source)
        with inp.open() as fh:
            for n, raw in enumerate(fh, 1):
                text = raw.decode("ascii", "replace").strip()
                if text.lstrip("-").isdigit():
                    yield convert(text, inp.name, n)
                else:
                    yield Quarantined(inp.name, n, "ints-syntax", "not an integer",
                                      excerpt(raw), model.name)


INTS = IntsReader()
'''


def test_a_third_party_model_works_unchanged_in_the_job(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(kit.ROOT / "tests" / "conformance" / "toy_intervals.py", site)
    (site / "toy_ints_reader.py").write_text(INTS_READER)
    info = site / "toy_intervals-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-intervals\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[pubsift.models]\ntoy-intervals = toy_intervals:IntervalModel\n\n"
        "[pubsift.readers]\nints = toy_ints_reader:INTS\n"
    )
    data = tmp_path / "data"
    data.mkdir()
    values = [3, 77, -5, 10, 55, 1000, 8]
    lines = [str(v) for v in values]
    lines.insert(2, "seven")
    (data / "numbers.ints").write_text("\n".join(lines) + "\n")
    filters = {"low": (0, 10), "high": (50, 100), "none": (2000, 3000)}
    subs = kit.write_subscriptions(
        tmp_path / "subs.jsonl",
        [
            {"id": sid, "model": "toy-intervals", "filter": f"[{lo}, {hi}]"}
            for sid, (lo, hi) in filters.items()
        ],
    )
    out = tmp_path / "out"
    done = subprocess.run(
        kit.pubsift_cmd()
        + [
            "route",
            str(data),
            "--subscriptions",
            str(subs),
            "--out",
            str(out),
            "--master",
            "local[2]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=kit.spark_env(PYTHONPATH=str(site), **LOCAL),
    )
    check_run(done, out)
    src = str(data / "numbers.ints")
    positions = {v: n for n, v in enumerate(lines, 1) if v != "seven"}
    want = {
        sid: {(src, positions[str(v)]) for v in values if lo <= v <= hi}
        for sid, (lo, hi) in filters.items()
    }
    assert kit.delivered_pairs(out) == {k: v for k, v in want.items() if v}
    summary = kit.summary(out)
    assert summary["models"] == {"toy-intervals": len(values)}
    assert summary["reasons"] == {"ints-syntax": 1}
    assert summary["subscribers"]["none"] == 0
    rows = kit.read_rows(out / "deliveries", "parquet", "subscriber")
    assert rows and all(
        r["model"] == "toy-intervals" and json.loads(r["event"]) in values for r in rows
    )

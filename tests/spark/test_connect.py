"""The job on Spark Connect (docs/spark.md, "Where it runs": no SparkContext-only feature
such as ``sc.broadcast``, so the job also runs on Spark Connect).

A Spark Connect server is started from the installed pyspark (``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer``) on 127.0.0.1; ``pubsift route
--master sc://127.0.0.1:PORT`` runs in a separate process and must deliver exactly what
the same job delivers on ``local[2]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .kit import delivered_pairs, free_port, pubsift_cmd

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("grpc", reason="Spark Connect's client libraries (the connect extra)")

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: seconds the server may take to start (a cold JVM on a busy 2-core machine)
START_WITHIN = 180


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    home = os.path.dirname(pyspark.__file__)
    port = free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    env = dict(
        os.environ, SPARK_HOME=home, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"
    )
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                os.path.join(home, "bin", "spark-submit"),
                "--class",
                "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--master",
                "local[2]",
                "--conf",
                f"spark.connect.grpc.binding.port={port}",
                "--conf",
                "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf",
                "spark.hadoop.fs.file.impl=org.apache.hadoop.fs.RawLocalFileSystem",
                "--conf",
                "spark.ui.enabled=false",
                "spark-internal",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_WITHIN
        while b"Spark Connect server started" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    "the Spark Connect server did not start:\n"
                    + log.read_text(errors="replace")[-3000:]
                )
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    (data / "feeds").mkdir(parents=True)
    (data / "quotes.csv").write_text(
        "symbol,price,volume\nIBM,45.5,100\nIBM,50,200\nAAPL,150,50\nMSFT,abc,1\nKO,41,\n"
    )
    (data / "_hidden-by-hadoop.jsonl").write_text('{"symbol": "IBM", "price": 47}\n{not json\n')
    (data / "feeds" / "news.rss").write_text(
        "<rss version='2.0'><channel><title>t</title>"
        "<item><title>IBM up</title><category>tech</category></item>"
        "<item><title>rain</title><category>weather</category></item>"
        "</channel></rss>"
    )
    subs = tmp_path / "subs.jsonl"
    subs.write_text(
        "\n".join(
            json.dumps(s)
            for s in [
                {"id": "ibm", "model": "records", "filter": 'symbol = "IBM" and price > 46'},
                {
                    "id": "any-or",
                    "model": "records",
                    "filter": {"$or": [{"symbol": ["KO"]}, {"price": [{"numeric": [">=", 150]}]}]},
                },
                {"id": "tech", "model": "xml", "filter": "/rss/channel/item[category = 'tech']"},
            ]
        )
        + "\n"
    )
    return data, subs


def test_the_job_runs_unchanged_on_spark_connect(connect_server, tmp_path):
    data, subs = _inputs(tmp_path)
    outs = {}
    for name, master in (("connect", connect_server), ("local", "local[2]")):
        out = tmp_path / f"out-{name}"
        done = subprocess.run(
            pubsift_cmd()
            + [
                "route",
                str(data),
                "--subscriptions",
                str(subs),
                "--out",
                str(out),
                "--format",
                "jsonl",
                "--master",
                master,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert (out / "report.html").is_file() and "Traceback" not in done.stderr
        outs[name] = out
    connect, local = (delivered_pairs(outs[k], "jsonl") for k in ("connect", "local"))
    assert connect == local
    src = str(data)
    assert local == {
        "ibm": {(f"{src}/_hidden-by-hadoop.jsonl", 1), (f"{src}/quotes.csv", 2)},
        "any-or": {(f"{src}/quotes.csv", 3), (f"{src}/quotes.csv", 5)},
        "tech": {(f"{src}/feeds/news.rss", 1)},
    }
    summaries = [json.loads((outs[k] / "summary.json").read_text()) for k in outs]
    for s in summaries:
        assert s["read"] == s["events"] + s["quarantined"] == 9
        assert s["reasons"] == {"json-syntax": 1}
    assert summaries[0]["sources"] == summaries[1]["sources"]

"""``queries run --check`` on TSBS's own golden query file (seed 7, scale 10, 12 hours; 150 queries of 15
types): loaded with ``--fields double`` and ``--fields long``, every answer over PGWire and over HTTP equals
the NumPy reference."""

from __future__ import annotations


import pytest

from harness.commands.queries_run import QueriesRunOptions, run_queries
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from helpers import GOLDEN_DIR

# The golden data set loaded, then every golden query run: a minute and more.
pytestmark = pytest.mark.slow

GOLDEN = GOLDEN_DIR
QUERIES_FILE = GOLDEN / "queries_cpu-only_seed7_scale10_12h.jsonl.gz"
DATA_SET = dict(seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z", timestamp_end="2016-01-01T12:00:00Z")


@pytest.fixture(scope="module", params=["double", "long"])
def loaded(request, questdb_server, tmp_path_factory):
    questdb_server.client.drop_table("cpu")
    run_bench(BenchOptions(send=True, transport="http", fields=request.param, host=questdb_server.host,
                           http_port=questdb_server.http_port, ilp_port=questdb_server.ilp_port,
                           results=str(tmp_path_factory.mktemp("load") / "load.json"), reporting_period=0,
                           **DATA_SET), out=open("/dev/null", "w"))
    return questdb_server, request.param


@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_golden_queries_answer_as_the_reference(loaded, tmp_path, protocol, devnull):
    server, fields = loaded
    record = run_queries(QueriesRunOptions(file=str(QUERIES_FILE), fields=fields, protocol=protocol, workers=2,
                                           check=True, host=server.host, http_port=server.http_port,
                                           pg_port=server.pg_port, results=str(tmp_path / "q.json"),
                                           reporting_period=0, **DATA_SET), out=devnull)
    assert record.status == "ok"
    assert record.queries.check.checked == 150 and record.queries.check.mismatches == 0
    assert record.queries.statistics["all queries"].count == 150

"""What the test modules share (``from helpers import ...``); conftest.py holds the fixtures and hooks.

    GOLDEN_DIR              TSBS's own output (shared/tsbs-golden, beside the checkout)
    run_cli                 ``python -m harness ARGS`` in a subprocess, its output captured
    free_port               a port nothing listens on now (harness.servers.sink's)
    assert_one_line_error   a command failed with its exit code in one ``error: `` line, no traceback
    assert_one_error_line   the same of a stderr text alone
    PORT_OFFSET, shifted    HARNESS_TEST_PORT_OFFSET (plus the xdist worker's stride), and ports moved by it
    TEST_PORTS ...          the suite's fixed ports (the table below)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.servers.sink import free_port  # noqa: F401 (the tests import it from here)

# TSBS's own output with the flags that made it (its README): the ground truth, beside the project.
GOLDEN_DIR = Path(__file__).resolve().parents[2] / "shared" / "tsbs-golden"


def run_cli(*args: str, timeout: float = 120, text: bool = True, env: dict | None = None
            ) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` in a subprocess, its output captured (bytes with ``text=False``)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=text, timeout=timeout,
                          env=env)


def assert_one_error_line(stderr: str, *fragments: str, besides: tuple[str, ...] = ()) -> None:
    """``stderr`` is one line, ``error: ...``, with every fragment in it and no traceback; lines starting
    with one of ``besides`` (a run's own notes, e.g. ``seed: ``) are left out first."""
    assert "Traceback" not in stderr, stderr
    error = "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith(besides))
    assert error.startswith("error: ") and error.count("\n") == 1 and error.endswith("\n"), stderr
    for fragment in fragments:
        assert fragment in error, (fragment, stderr)


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, *fragments: str,
                          besides: tuple[str, ...] = ()) -> None:
    """The command exited ``code`` and said why in one ``error: `` line (assert_one_error_line)."""
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr)
    assert_one_error_line(result.stderr, *fragments, besides=besides)


# --- ports ---------------------------------------------------------------------------------------------
# Every fixed port the suite takes, away from the defaults (9000/9009/8812/9003) that a developer's own
# stack may hold. HARNESS_TEST_PORT_OFFSET=N adds N to each, so two test runs on one machine do not
# collide. Below Linux's ephemeral range (32768+) the suite's own client connections cannot hold a port at
# the moment a server (Docker's, above all) binds it. Under pytest-xdist (make test's parallel part) worker gwK adds K * WORKER_PORT_STRIDE: each worker has
# servers of its own, and 1,000 moves every range below past the others' (the 29xxx metrics ranges stay
# below the 30xxx Docker ones). With two workers, N up to 400 keeps them all below 32768.
WORKER_PORT_STRIDE = 1000
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1" ... under xdist; "" in a plain run
WORKER_INDEX = int(WORKER[2:]) if WORKER.startswith("gw") else 0
PORT_OFFSET = int(os.environ.get("HARNESS_TEST_PORT_OFFSET", "0")) + WORKER_INDEX * WORKER_PORT_STRIDE


def shifted(**ports: int) -> dict[str, int]:
    """``ports`` (name=port) each moved by PORT_OFFSET."""
    return {name: port + PORT_OFFSET for name, port in ports.items()}


# 19xxx, 18xxx: native servers. The session's QuestDB and sink; a killable QuestDB of a test's own.
TEST_PORTS = shifted(http_port=19000, ilp_port=19009, pg_port=18812, min_port=19003)
SINK_PORT = 19010 + PORT_OFFSET
KILLABLE_PORTS = shifted(http_port=19100, ilp_port=19109, pg_port=18912, min_port=19103)
# tests/test_native.py: `harness native up` servers, one whose port is held, a sink of the test's own.
NATIVE_CLI_PORTS = shifted(http=19200, ilp=19209, pg=18922, min=19203, sink=19210)
BUSY_CLI_PORTS = shifted(http=19300, ilp=19309, pg=18932, min=19303)
OWN_SINK_PORT = 19310 + PORT_OFFSET
# tests/test_tls.py: a QuestDB of its own and the TLS-terminating proxies in front of it ...
TLS_QUESTDB_PORTS = shifted(http_port=19400, ilp_port=19409, pg_port=18942, min_port=19403)
TLS_PROXY_PORTS = shifted(http=19410, metrics=19413, ilp=19419, pg=19412, pg_alpn=19414)
# ... and a QWP server of its own, with a proxy in front of its HTTP port (QWP's WebSocket).
TLS_QWP_PORTS = shifted(http_port=19420, ilp_port=19429, pg_port=18952, min_port=19423)
TLS_QWP_PROXY_PORT = 19430 + PORT_OFFSET
# tests/test_matrix.py: the cells of its matrices (cell i at +10*i).
MATRIX_BASE_PORT = 19500 + PORT_OFFSET
# The session's QWP server (the pinned QWP jar, .env's QUESTDB_QWP); a killable one of a test's own.
QWP_PORTS = shifted(http_port=19800, ilp_port=19809, pg_port=19814, min_port=19803)
QWP_KILLABLE_PORTS = shifted(http_port=19900, ilp_port=19909, pg_port=19914, min_port=19903)
# 29xxx, 28xxx: metrics. The client's metrics of a bench, queries and read run (tests/test_metrics.py,
# tests/test_prometheus_panels.py); that module's Prometheus and QuestDB; tests/grafana_check.py's Grafana.
CLIENT_METRICS_PORT = 29464 + PORT_OFFSET
QUERY_METRICS_PORT = 29465 + PORT_OFFSET
READ_METRICS_PORT = 29466 + PORT_OFFSET
OPEN_LOOP_METRICS_PORT = 29467 + PORT_OFFSET
PROMETHEUS_PORT = 29090 + PORT_OFFSET
PANELS_QUESTDB_PORTS = shifted(http_port=29000, ilp_port=29009, pg_port=28812, min_port=29003)
GRAFANA_PORT = 29300 + PORT_OFFSET
# 30xxx, 31xxx: what the Docker end-to-end stack publishes (compose.yaml's PUBLISH_*).
DOCKER_PUBLISHED_PORTS = shifted(PUBLISH_HTTP_PORT=31000, PUBLISH_ILP_PORT=31009, PUBLISH_PG_PORT=30812,
                                 PUBLISH_MIN_PORT=31003, PUBLISH_PROMETHEUS_PORT=31090,
                                 PUBLISH_GRAFANA_PORT=31300)

"""What we start listens on loopback only: native QuestDB (all four listeners), the socat sink and the
client's metrics endpoint. Their HTTP and PGWire run any SQL without authentication; 0.0.0.0 would offer
that to the network. Asked of the kernel (the processes' listening sockets), not of our own settings."""

from __future__ import annotations


import psutil
import pytest

from harness.telemetry.metrics import METRICS_HOST_ENV, RunMetrics
from helpers import free_port


def listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs the process ``pid`` listens on over TCP."""
    return {(conn.laddr.ip, conn.laddr.port) for conn in psutil.Process(pid).net_connections(kind="tcp")
            if conn.status == psutil.CONN_LISTEN}




def test_native_questdb_listens_on_loopback_only(questdb_server):
    server = questdb_server.server
    bound = listening(server.pid())
    assert bound == {("127.0.0.1", port) for port in server.ports.values()}, bound


def test_socat_sink_listens_on_loopback_only(socat_sink):
    bound = listening(socat_sink.sink.pid())
    assert bound == {("127.0.0.1", socat_sink.port)}, bound


@pytest.mark.slow
@pytest.mark.parametrize("env_host, expected", [(None, "127.0.0.1"), ("0.0.0.0", "0.0.0.0")])
def test_metrics_endpoint_binds_loopback_unless_told(monkeypatch, env_host, expected):
    # The Compose client sets HARNESS_METRICS_HOST=0.0.0.0 for Prometheus in another container.
    if env_host is None:
        monkeypatch.delenv(METRICS_HOST_ENV, raising=False)
    else:
        monkeypatch.setenv(METRICS_HOST_ENV, env_host)
    port = free_port()
    metrics = RunMetrics("loopback", {}, port=port)
    metrics.start()
    try:
        assert (expected, port) in listening(psutil.Process().pid)
        assert ("0.0.0.0" if expected == "127.0.0.1" else "127.0.0.1", port) not in listening(psutil.Process().pid)
    finally:
        metrics.close()


@pytest.mark.slow
def test_metrics_host_option_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv(METRICS_HOST_ENV, "0.0.0.0")
    port = free_port()
    metrics = RunMetrics("loopback", {}, port=port, host="127.0.0.1")
    metrics.start()
    try:
        assert listening(psutil.Process().pid) >= {("127.0.0.1", port)}
        assert ("0.0.0.0", port) not in listening(psutil.Process().pid)
    finally:
        metrics.close()

"""`make swarm-bench` and `make swarm-down` end to end on a real Docker engine, in a real one-node swarm, with
the offline stand-in images (the ones tests/test_docker_e2e.py builds; a rerun finds them cached).

Runs exactly what the issue's acceptance runs: `make swarm-bench CLIENTS=2 WORKERS=1 ROWS=200000 OFFLINE=1`
(no seed: the two replicas derive the run's from its name), with QuestDB asking for logins (AUTH=1, a
recognisable password, looked for in make's output and in every file the run wrote), then asks QuestDB inside
its task's container what it holds, and reads each replica's record; then `make swarm-down`, after which nothing of the stack is
left and the engine's swarm state and networks are what they were before. The engine must not be in a swarm
already: the target would use that swarm, and this test never touches one it did not make. The stack has a
name of its own (SWARM_STACK) and publishes no port, so a developer's Compose stack can stay up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from container_sql import questdb_sql_in
from prerequisites import require

# A one-node swarm made, a stack deployed and removed: minutes (docker: tests/conftest.py marks the module).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STACK = "tsbs-pandas-questdb-swarm-test"
ROWS = 200_000
MARKER = ROOT / ".cache" / "swarm-made"
QUESTDB_PASSWORD = "S3cret-auth-6612"  # recognisable: it must show nowhere
# SECRETS_DIR: one of the test's own (the fixture sets it), so a developer's .cache/ is left alone.
ENV = {**os.environ, "GRAFANA_ADMIN_PASSWORD": "Graf-S3cret-0817", "QUESTDB_PASSWORD": QUESTDB_PASSWORD}


def make(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args, f"SWARM_STACK={STACK}"], cwd=ROOT,
                          capture_output=True, text=True, env=ENV, timeout=timeout)


def docker(*args: str) -> str:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def swarm_state() -> str:
    return docker("info", "--format", "{{.Swarm.LocalNodeState}}").strip()


def networks() -> set[str]:
    return set(docker("network", "ls", "--format", "{{.Name}}").split())


def left_of_the_stack() -> dict[str, str]:
    """Whatever of the stack the engine still has (nothing, after swarm-down), by kind."""
    label = f"label=com.docker.stack.namespace={STACK}"
    left = {"containers": docker("ps", "--all", "--quiet", "--filter", label),
            "networks": docker("network", "ls", "--quiet", "--filter", label)}
    if swarm_state() == "active":
        left["services"] = docker("service", "ls", "--quiet", "--filter", label)
        left["stacks"] = "\n".join(name for name in docker("stack", "ls", "--format", "{{.Name}}").split()
                                   if name == STACK)
    return {kind: found.strip() for kind, found in left.items() if found.strip()}


@pytest.fixture(scope="module")
def swarm(tmp_path_factory):
    """swarm-bench, QuestDB's answers while the stack is up, then swarm-down and what it left; everything the
    run made is removed afterwards, even when a step failed."""
    require("docker", "compose")
    state, before = swarm_state(), networks()
    if state != "inactive":
        pytest.skip(f"this engine's swarm is {state}: the test makes its own one-node swarm and leaves alone any "
                    f"it did not make")
    path = ROOT / "results" / f"pytest-swarm-{uuid.uuid4().hex[:8]}.json"
    ENV["SECRETS_DIR"] = str(tmp_path_factory.mktemp("secrets"))
    seen: dict = {"path": path, "networks_before": before}
    try:
        seen["bench"] = make("swarm-bench", "CLIENTS=2", "WORKERS=1", f"ROWS={ROWS}", "OFFLINE=1", "AUTH=1",
                             "METRICS_LINGER=0", f"RESULTS=results/{path.name}", timeout=900)
        questdb = docker("ps", "--quiet", "--filter", f"label=com.docker.swarm.service.name={STACK}_questdb").split()
        if questdb:
            seen["count"] = questdb_sql_in(questdb[0], "select count() from cpu")["dataset"]
            seen["distinct"] = questdb_sql_in(
                questdb[0], "select count() from (select distinct hostname, timestamp from cpu)")["dataset"]
        seen["down"] = make("swarm-down")
        seen["left"], seen["state"], seen["networks"] = left_of_the_stack(), swarm_state(), networks()
        seen["marker"] = MARKER.exists()
        yield seen
    finally:
        if swarm_state() != state:  # a failed swarm-down: the swarm the run made must not outlive the test
            subprocess.run(["docker", "swarm", "leave", "--force"], capture_output=True, timeout=120)
        for network in ({"docker_gwbridge"} - before) & networks():
            subprocess.run(["docker", "network", "rm", network], capture_output=True, timeout=60)
        MARKER.unlink(missing_ok=True)
        volumes = docker("volume", "ls", "--quiet", "--filter", f"name={STACK}_").split()
        if volumes:
            subprocess.run(["docker", "volume", "rm", *volumes], capture_output=True, timeout=60)
        for made in (ROOT / "results").glob(f"{path.stem}*"):  # the record, its report, the clients' folder
            shutil.rmtree(made) if made.is_dir() else made.unlink(missing_ok=True)


def merged(swarm) -> dict:
    result = swarm["bench"]
    assert result.returncode == 0, f"make swarm-bench failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert f"Results: results/{swarm['path'].name}" in result.stdout
    return json.loads(swarm["path"].read_text())


def test_the_merged_record_is_the_whole_run(swarm):
    data = merged(swarm)
    assert data["status"] == "ok", data.get("error")
    assert data["parameters"]["clients"] == 2 and data["parameters"]["row_count"] == ROWS
    assert data["phases"]["send"]["rows"] == ROWS
    assert data["validation"]["expected_rows"] == ROWS == data["validation"]["visible_rows"]
    assert "Validated by client 0: 200000 of 200000 rows visible" in swarm["bench"].stdout


def test_questdb_holds_the_whole_data_set_once(swarm):
    merged(swarm)
    assert swarm["count"] == [[ROWS]] and swarm["distinct"] == [[ROWS]]


def test_each_replica_took_its_group_from_its_task_slot(swarm):
    """Replica k (its task slot, in its hostname) sent group k-1 of 2, half of the rows, under the run's id and
    the seed both derived from the run's name."""
    data = merged(swarm)
    folder = swarm["path"].with_suffix("")
    records = [json.loads((folder / f"client-{client}.json").read_text()) for client in range(2)]
    for client, record in enumerate(records):
        assert record["parameters"]["interleaved_generation_group_id"] == client
        assert record["parameters"]["interleaved_generation_groups"] == 2
        assert record["system"]["hostname"].endswith(f"-replica-{client + 1}"), record["system"]["hostname"]
        assert record["run_id"] == data["run_id"] and record["seed"] == data["seed"]
        assert (folder / f"client-{client}.log").read_text().strip()
    assert [client["rows"] for client in data["clients"]] == [ROWS // 2, ROWS // 2]


def test_no_secret_in_the_output_or_the_files(swarm):
    """The logins reached QuestDB (the run validated through /exec with them) without showing: not in make's
    output, the merged record, the stack files or the clients' records and logs."""
    merged(swarm)
    assert swarm["bench"].stdout.count("Validated") >= 1
    files = [made for top in (ROOT / "results").glob(f"{swarm['path'].stem}*")
             for made in ([top] if top.is_file() else top.rglob("*")) if made.is_file()]
    assert {"stack.json", "servers.json", "client-0.log"} <= {made.name for made in files}
    for made in files:
        assert b"S3cret" not in made.read_bytes(), made
    for output in (swarm["bench"].stdout + swarm["bench"].stderr, swarm["down"].stdout + swarm["down"].stderr):
        assert "S3cret" not in output
    assert swarm["count"] == [[ROWS]]  # asked inside QuestDB's container, logged in


def test_swarm_down_leaves_docker_as_it_was(swarm):
    down = swarm["down"]
    assert down.returncode == 0, down.stdout + down.stderr
    assert swarm["left"] == {}
    assert swarm["state"] == "inactive" and swarm["networks"] == swarm["networks_before"]
    assert not swarm["marker"]

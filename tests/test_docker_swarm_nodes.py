"""`make swarm-bench` on a real multi-node swarm: three Docker engines on this machine, each the engine of a node
of its own with its own address (tsbs-offline/swarm-node containers, Docker in Docker, built offline like the
other stand-ins), on a bridge network of the test's own; one manager and two workers joined with the real join
tokens. The manager is labelled tsbs.questdb, the workers tsbs.client.

The test drives the target as a user on another machine would: `DOCKER_HOST=tcp://<manager>:2375 make
swarm-bench CLIENTS=2 OFFLINE=1 SWARM_ENGINES="<the workers' engines>"`. The manager gets the stand-ins it
needs as a new host would (`docker save | docker -H load`, then `make offline-images` finds them current) and
builds the client image itself; the target loads that image into the workers (SWARM_ENGINES). Nothing is
shared on disk: the nodes have no bind mount, QuestDB's and Prometheus's configurations reach them as swarm
configs, and the records come back through QuestDB (harness.scaleout.delivery).

1. The acceptance run: QuestDB's task on the manager, one client task on each worker (seen through the Swarm
   API while the run lasts), exactly the data set's rows in QuestDB with no key twice, one merged record of
   both clients' groups, written by the run in results/ here.
2. A client node lost: the same run, row by row (`OP=iterrows`, 100,000 rows: seconds of sending), and the
   node of replica 2 killed once its client has started sending: the run ends within 60 s naming the lost
   client in one line, its merged record failed and holding client 0's figures; `make swarm-down` leaves no service, container or network of the
   stack.
3. Everything removed: the nodes (their engines, swarm state and data volumes with them) and the network; the
   host engine never joined a swarm.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from container_sql import questdb_sql_in
from prerequisites import require

from harness.versions import questdb_version

# Three engines started, the client image built on one, two stacks run (docker: tests/conftest.py marks it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TAG = uuid.uuid4().hex[:8]
NETWORK = f"tsbs-swarm-nodes-{TAG}"
NODES = [f"tsbs-node-{TAG}-{index}" for index in range(3)]  # the manager, then the two workers
STACK = "tsbs-swarm-nodes"
NODE_IMAGE = "tsbs-offline/swarm-node:bookworm"
# What the manager needs beside the client image it builds: the stand-ins the stack and that build use.
MANAGER_IMAGES = ["tsbs-offline/debian:bookworm", "tsbs-offline/python:3.11-bookworm", "tsbs-offline/socat:bookworm",
                  f"tsbs-offline/questdb:{questdb_version()}", "tsbs-offline/prometheus:bookworm"]
# The client image this host's engine holds (the one-node swarm's module built it, labelled with its inputs), if
# any, is handed to the manager as well: swarm-bench builds it there only if its inputs differ (the first build
# on the manager's empty engine takes minutes).
CLIENT_IMAGE = "tsbs-pandas-questdb-client:offline"
ROWS = 40_000
SCALE = 100
# The lost node's run: row by row (OP=iterrows), so that each client sends for seconds and the kill lands mid-send.
LOST_ROWS = 100_000
LOST_BOUND = 60  # seconds from a node's loss to the end of the run (docs/scale-out.md)
# A node runs with every capability this host has (not --privileged: a host that lacks one refuses it).
NODE_OPTIONS = ["--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
                "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined",
                "--cgroupns", "private"]


def docker(*args: str, engine: str | None = None, timeout: float = 120, check: bool = True) -> str:
    result = subprocess.run(["docker", *(["-H", engine] if engine else []), *args], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0 or not check, (args, result.stderr)
    return result.stdout


class Swarm:
    """The three nodes: their engines (tcp://<address>:2375), host names and what the runs saw."""

    def __init__(self):
        self.engines: dict[str, str] = {}
        self.volumes: list[str] = []
        self.removed = False

    @property
    def manager(self) -> str:
        return self.engines[NODES[0]]

    @property
    def workers(self) -> list[str]:
        return [self.engines[node] for node in NODES[1:]]

    def start(self) -> None:
        docker("network", "create", NETWORK)
        for node in NODES:
            docker("run", "--detach", *NODE_OPTIONS, "--name", node, "--hostname", node, "--network", NETWORK,
                   "--label", f"tsbs-test={TAG}", NODE_IMAGE)
            address = docker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                             node).strip()
            self.engines[node] = f"tcp://{address}:2375"
            self.volumes += docker("inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", node).split()
        for node, engine in self.engines.items():
            deadline = time.monotonic() + 60
            # `docker info` prints the client's half even when no engine answers: ask for the server's version.
            while docker("version", "--format", "{{.Server.Version}}", engine=engine, check=False,
                         timeout=10).strip() == "":
                assert time.monotonic() < deadline, f"the engine of node {node} did not answer within 60 s"
                time.sleep(1)
        address = self.manager.removeprefix("tcp://").removesuffix(":2375")
        docker("swarm", "init", "--advertise-addr", address, engine=self.manager)
        token = docker("swarm", "join-token", "--quiet", "worker", engine=self.manager).strip()
        for engine in self.workers:
            docker("swarm", "join", "--token", token, f"{address}:2377", engine=engine)
        docker("node", "update", "--label-add", "tsbs.questdb=true", NODES[0], engine=self.manager)
        for node in NODES[1:]:
            docker("node", "update", "--label-add", "tsbs.client=true", node, engine=self.manager)
        held = subprocess.run(["docker", "image", "inspect", CLIENT_IMAGE], capture_output=True).returncode == 0
        for image in MANAGER_IMAGES + [CLIENT_IMAGE] * held:  # as a user loads images into a host with no registry
            saved = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
            loaded = subprocess.run(["docker", "-H", self.manager, "load", "--quiet"], stdin=saved.stdout,
                                    capture_output=True, timeout=600)
            assert saved.wait() == 0 and loaded.returncode == 0, (image, loaded.stderr)

    def make(self, *args: str, env: dict, timeout: float = 1500) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", *args, f"SWARM_STACK={STACK}"], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout,
                              env={**env, "DOCKER_HOST": self.manager})

    def remove(self) -> None:
        """The nodes (their engines' swarm state, containers and data volumes with them) and the network."""
        if self.removed:
            return
        for node in NODES:
            subprocess.run(["docker", "rm", "--force", "--volumes", node], capture_output=True, timeout=120)
        subprocess.run(["docker", "network", "rm", NETWORK], capture_output=True, timeout=60)
        self.removed = True


class TaskWatch(threading.Thread):
    """The client service's tasks (slot -> node) as the manager's Swarm API lists them while a run lasts."""

    def __init__(self, engine: str):
        super().__init__(daemon=True)
        self.engine, self.seen, self.done = engine, {}, threading.Event()

    def run(self):
        while not self.done.wait(0.5):
            listed = subprocess.run(["docker", "-H", self.engine, "service", "ps", f"{STACK}_client", "--format",
                                     "{{.Name}} {{.Node}}"], capture_output=True, text=True, timeout=30).stdout
            for line in listed.splitlines():
                name, _, node = line.partition(" ")
                if node:
                    self.seen[int(name.rpartition(".")[2])] = node


class NodeKiller(threading.Thread):
    """Kills the node running replica 2 once that client has started sending (its log says so)."""

    def __init__(self, engine: str):
        super().__init__(daemon=True)
        self.engine, self.killed, self.node, self.done = engine, None, None, threading.Event()

    def run(self):
        while not self.done.wait(0.3) and self.killed is None:
            listed = subprocess.run(["docker", "-H", self.engine, "service", "ps", f"{STACK}_client", "--format",
                                     "{{.Name}} {{.Node}} {{.ID}}"], capture_output=True, text=True, timeout=30).stdout
            task = next((line.split() for line in listed.splitlines() if line.startswith(f"{STACK}_client.2 ")), None)
            if not task or len(task) < 3:
                continue
            log = subprocess.run(["docker", "-H", self.engine, "service", "logs", "--raw", task[2]],
                                 capture_output=True, text=True, timeout=30).stdout
            if "clients ready" in log:
                self.node = task[1]
                subprocess.run(["docker", "kill", self.node], capture_output=True, timeout=60)
                self.killed = time.monotonic()


@pytest.fixture(scope="module")
def swarm(tmp_path_factory):
    require("docker", "compose", "offline-images")
    host_state = docker("info", "--format", "{{.Swarm.LocalNodeState}}").strip()
    images = subprocess.run([str(ROOT / "scripts/docker-offline-images.sh"), "python", "questdb", "socat", "prometheus",
                             "swarm-node"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert images.returncode == 0, images.stdout + images.stderr
    nodes = Swarm()
    env = {**os.environ, "GRAFANA_ADMIN_PASSWORD": "Graf-S3cret-0817",
           "SECRETS_DIR": str(tmp_path_factory.mktemp("secrets"))}
    paths = [ROOT / "results" / f"pytest-swarm-nodes-{TAG}-{run}.json" for run in ("ok", "lost")]
    seen: dict = {"nodes": nodes, "env": env, "paths": paths, "host_state": host_state}
    try:
        nodes.start()
        yield seen
    finally:
        nodes.remove()
        for made in (ROOT / "results").glob(f"pytest-swarm-nodes-{TAG}-*"):
            shutil.rmtree(made) if made.is_dir() else made.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def run_ok(swarm):
    nodes = swarm["nodes"]
    watch = TaskWatch(nodes.manager)
    watch.start()
    started = time.monotonic()
    result = nodes.make("swarm-bench", "CLIENTS=2", "WORKERS=1", f"ROWS={ROWS}", f"SCALE={SCALE}", "OFFLINE=1",
                        "METRICS_LINGER=0", f"RESULTS=results/{swarm['paths'][0].name}",
                        f"SWARM_ENGINES={' '.join(nodes.workers)}", env=swarm["env"])
    watch.done.set()
    watch.join(timeout=30)
    seen = {"result": result, "seconds": time.monotonic() - started, "clients_on": watch.seen}
    questdb = docker("ps", "--quiet", "--filter", f"label=com.docker.swarm.service.name={STACK}_questdb",
                     engine=nodes.manager).split()
    if questdb:
        seen["count"] = questdb_sql_in(questdb[0], "select count() from cpu", nodes.manager)["dataset"]
        seen["distinct"] = questdb_sql_in(questdb[0], "select count() from (select distinct hostname, timestamp "
                                                      "from cpu)", nodes.manager)["dataset"]
    seen["questdb_on"] = docker("service", "ps", f"{STACK}_questdb", "--filter", "desired-state=running",
                                "--format", "{{.Node}}", engine=nodes.manager, check=False).split()
    return seen


def test_the_stack_runs_across_the_nodes_and_the_run_gathers_its_records(swarm, run_ok):
    result = run_ok["result"]
    assert result.returncode == 0, f"make swarm-bench failed:\n{result.stdout[-4000:]}\n{result.stderr[-3000:]}"
    # Placement, through the Swarm API: QuestDB on the labelled manager, one client on each worker.
    assert run_ok["questdb_on"] == [NODES[0]]
    assert sorted(run_ok["clients_on"].values()) == NODES[1:], run_ok["clients_on"]
    # The client image reached the workers through the target, not by hand.
    for worker in NODES[1:]:
        assert f"loading tsbs-pandas-questdb-client:offline into node {worker}" in result.stdout
    # Exactly the data set in QuestDB, no key twice: the clients reached it over the overlay network.
    assert run_ok["count"] == [[ROWS]] and run_ok["distinct"] == [[ROWS]]
    merged = json.loads(swarm["paths"][0].read_text())
    assert merged["status"] == "ok", merged.get("error")
    assert merged["parameters"]["clients"] == 2 and merged["phases"]["send"]["rows"] == ROWS
    assert merged["validation"]["visible_rows"] == ROWS == merged["validation"]["expected_rows"]
    hosts = {client["client"]: client["hostname"] for client in merged["clients"]}
    assert hosts == {client: f"{run_ok['clients_on'][client + 1]}-replica-{client + 1}" for client in range(2)}
    assert [client["rows"] for client in merged["clients"]] == [ROWS // 2, ROWS // 2]
    folder = swarm["paths"][0].with_suffix("")
    for client in range(2):  # gathered from QuestDB into results/ here, with each replica's log
        record = json.loads((folder / f"client-{client}.json").read_text())
        assert record["parameters"]["interleaved_generation_group_id"] == client
        assert (folder / f"client-{client}.log").read_text().strip()
    assert swarm["paths"][0].with_suffix(".html").stat().st_size > 0
    # Nothing was shared on disk: a node's only mount is its engine's data volume.
    for node in NODES:
        assert [mount["Type"] for mount in json.loads(docker("inspect", "--format", "{{json .Mounts}}", node))] \
            == ["volume"]
    send = merged["phases"]["send"]
    print(f"\nmulti-node swarm-bench CLIENTS=2 ROWS={ROWS}: make took {run_ok['seconds']:.0f} s; sent "
          f"{send['rows']} rows in {send['seconds']:.2f} s: {send['rows'] / send['seconds'] / 1e6:.3f} M rows/s")


@pytest.fixture(scope="module")
def run_lost(swarm, run_ok):
    nodes = swarm["nodes"]
    killer = NodeKiller(nodes.manager)
    killer.start()
    result = nodes.make("swarm-bench", "CLIENTS=2", "WORKERS=", f"ROWS={LOST_ROWS}", f"SCALE={SCALE}", "OFFLINE=1",
                        "OP=iterrows", "METRICS_LINGER=0", f"RESULTS=results/{swarm['paths'][1].name}",
                        f"SWARM_ENGINES={' '.join(nodes.workers)}", env=swarm["env"])
    ended = time.monotonic()
    killer.done.set()
    killer.join(timeout=30)
    down = nodes.make("swarm-down", env=swarm["env"], timeout=300)
    label = f"label=com.docker.stack.namespace={STACK}"
    left = {kind: docker(*command, "--quiet", "--filter", label, engine=nodes.manager).strip()
            for kind, command in (("services", ["service", "ls"]), ("containers", ["ps", "--all"]),
                                  ("networks", ["network", "ls"]))}
    return {"result": result, "killed": killer.killed, "node": killer.node, "ended": ended, "down": down,
            "left": {kind: found for kind, found in left.items() if found}}


def test_a_lost_client_node_ends_the_run_naming_it(swarm, run_lost):
    result, node = run_lost["result"], run_lost["node"]
    assert run_lost["killed"] is not None, f"replica 2 never started sending:\n{result.stdout[-3000:]}"
    # The target exits 1 (make says so, and exits 2 itself).
    assert result.returncode == 2 and "swarm-bench] Error 1" in result.stderr, result.stdout[-3000:] + result.stderr
    print(f"\nthe lost node's run ended {run_lost['ended'] - run_lost['killed']:.0f} s after the kill")
    assert run_lost["ended"] - run_lost["killed"] < LOST_BOUND
    # The manager's client image, built (or loaded) for the first run, was not built again.
    assert f"the client image {CLIENT_IMAGE} is up to date (built from these inputs)" in result.stdout
    output = result.stdout + result.stderr
    named = [line for line in output.splitlines() if re.search(r"client 1 \(replica 2, node \S+\): lost", line)]
    assert named == [f"  client 1 (replica 2, node {node}): lost, node {node} is down"], output[-3000:]
    merged = json.loads(swarm["paths"][1].read_text())
    assert merged["status"] == "failed" and merged["error"].startswith(f"client 1 lost: its node {node} is down")
    survivor, lost = merged["clients"]
    assert lost["client"] == 1 and lost["status"] == "lost" and lost["rows"] is None
    # Client 0 sent its whole group, then stopped waiting for client 1 once told it was lost.
    assert survivor["client"] == 0 and survivor["rows"] == LOST_ROWS // 2 and survivor["status"] == "failed"
    assert "client 1 of run" in survivor["error"] and node in survivor["error"]
    assert merged["phases"]["send"]["rows"] == LOST_ROWS // 2
    down = run_lost["down"]
    assert down.returncode == 0, down.stdout + down.stderr
    assert run_lost["left"] == {}


def test_nothing_of_the_test_remains(swarm, run_lost):
    """Last: the nodes and their network go, and with them every engine's swarm state and data; the host engine
    is in the swarm state it was in before (never a member of the test's swarm)."""
    swarm["nodes"].remove()
    assert docker("ps", "--all", "--quiet", "--filter", f"label=tsbs-test={TAG}").strip() == ""
    assert NETWORK not in docker("network", "ls", "--format", "{{.Name}}").split()
    assert not set(swarm["nodes"].volumes) & set(docker("volume", "ls", "--quiet").split())
    assert docker("info", "--format", "{{.Swarm.LocalNodeState}}").strip() == swarm["host_state"]

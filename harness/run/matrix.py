"""What a server matrix is made of: its cells (a QuestDB server, a release or a server jar such as the pinned QWP
server's, and ``server.conf`` overrides, ``Cell``), how the command line names them (``cells``: servers times configs,
with short names for the keys people vary), each cell's ``server.conf`` (the project's, less what the server does not
know, plus the overrides), its root and ports, and a cell's server (``CellServer``: started on a fresh root, its CPU
and peak memory read from its process, settled after a turn). The rounds themselves are the ``matrix`` command's
(``harness.commands.matrix``).
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import RunError, UsageError, named
from harness.questdb.http import QuestDBSql
from harness.servers.jar import CACHE_DIR
from harness.servers.process import port_in_use, process_cost
from harness.servers.questdb import SERVER_CONF, NativeQuestDB
from harness.servers.server_build import ServerBuild

# Short names of the keys a matrix most often varies; any other key is given whole.
CONFIG_ALIASES = {
    "wal": "cairo.wal.enabled.default",
    "shared-workers": "shared.worker.count",
    "ilp-io-workers": "line.tcp.io.worker.count",
    "ilp-writer-workers": "line.tcp.writer.worker.count",
}
# The config of a cell that overrides nothing: the project's conf/server.conf as it is.
AS_IS = "as-is"
MATRIX_ROOT = CACHE_DIR / "matrix"
DEFAULT_BASE_PORT = 24000
# Keys every cell's server.conf sets where the server knows them: ILP over UDP off (releases before 8.x
# listen for it on 0.0.0.0:9009 by default; the matrix's servers listen on 127.0.0.1 only).
MATRIX_CONF = {"line.udp.enabled": "false"}
# After a turn, a server is settled once its CPU over SETTLE_WINDOW_SECONDS is within SETTLE_CPU_SHARE of a core
# of its own rest level (its WAL apply and housekeeping done), for at most SETTLE_TIMEOUT_SECONDS: what it still
# does then would run into the next cell's turn. The rest level is measured once the server has started, over
# REST_WINDOW_SECONDS after REST_WAIT_SECONDS: some servers never rest at zero (9.3.4 with 12 workers on 2 cores
# spins at 7.5 % of a core).
SETTLE_WINDOW_SECONDS = 0.5
SETTLE_CPU_SHARE = 0.05
SETTLE_TIMEOUT_SECONDS = 30.0
REST_WAIT_SECONDS = 1.0
REST_WINDOW_SECONDS = 2.0
# Cell i listens on base + PORT_STEP * i + the offset of each listener.
PORT_STEP = 10
PORT_OFFSETS = {"http": 0, "ilp": 1, "pg": 2, "min": 3}


@dataclass(frozen=True)
class Cell:
    """A server (a release, ``qwp``, a jar's path) and the ``server.conf`` keys it overrides (``config``: as the
    command line named them)."""

    build: ServerBuild
    config: str
    overrides: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return f"{self.build.label} {self.config}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.=-]+", "_", f"{self.build.label}-{self.config}")


def parse_config(text: str) -> tuple[tuple[str, str], ...]:
    """``key=value,key=value`` (a key may be one of ``CONFIG_ALIASES``) as (full key, value) pairs; ``as-is``:
    none."""
    if text == AS_IS:
        return ()
    pairs: dict[str, str] = {}
    for item in text.split(","):
        key, equals, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not key or not value:
            raise UsageError(f"config {text!r}: each setting is key=value (e.g. wal=false or "
                             f"shared.worker.count=2), comma-separated; {AS_IS} overrides nothing")
        key = CONFIG_ALIASES.get(key, key)
        if key in pairs:
            raise UsageError(f"config {text!r} sets {key} twice")
        pairs[key] = value
    return tuple(pairs.items())


def cells(versions: str, configs: str) -> list[Cell]:
    """Every server of ``versions`` (space- or comma-separated: releases, ``qwp`` for the pinned QWP server, server
    jars' paths) with every config of ``configs`` (space-separated), servers first; the first is the baseline.
    Refuses, as UsageErrors: no server, a duplicate cell, a release Maven does not serve, a jar that is not there, a
    server no Java here runs, a key a server does not know."""
    names = [name for name in re.split(r"[\s,]+", versions.strip()) if name]
    if not names:
        raise UsageError("--versions: name at least one QuestDB release (e.g. 9.3.4), or qwp")
    config_names = configs.split() or [AS_IS]
    made: list[Cell] = []
    seen: dict[tuple, str] = {}
    for name in names:
        build = ServerBuild(name, given_as=named("versions"))
        for config in config_names:
            cell = Cell(build, config, parse_config(config))
            key = (build.label, tuple(sorted(cell.overrides)))
            if key in seen:
                raise UsageError(f"duplicate cell: {cell.name} is {seen[key]} again")
            seen[key] = cell.name
            made.append(cell)
    for build in dict.fromkeys(cell.build for cell in made):
        build.check_runnable()
        keys = dict.fromkeys(key for cell in made if cell.build == build for key, _ in cell.overrides)
        unknown = build.unknown_keys(keys)
        if unknown:
            raise UsageError(f"QuestDB {build.label} does not know the configuration key "
                             f"{', '.join(unknown)} (not in its PropertyKey or default server.conf)")
    return made


def base_conf() -> list[tuple[str, str]]:
    """The project's ``conf/server.conf`` as (key, value) pairs, in order."""
    pairs = []
    for line in SERVER_CONF.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            pairs.append((key.strip(), value.strip()))
    return pairs


def server_conf(cell: Cell) -> tuple[str, list[str]]:
    """The text of the cell's ``server.conf``, and the project's keys left out of it because the server does not
    know them (it would ignore them, or refuse to start)."""
    overrides = dict(cell.overrides)
    kept, left_out = {}, []
    for key, value in base_conf():
        if key in overrides:
            continue
        if key in cell.build.known_keys:
            kept[key] = value
        else:
            left_out.append(key)
    kept.update({key: value for key, value in MATRIX_CONF.items() if key in cell.build.known_keys
                 and key not in overrides})
    kept.update(overrides)
    lines = [f"# The matrix cell {cell.name}: the project's conf/server.conf with its overrides."]
    lines += [f"{key}={value}" for key, value in kept.items()]
    return "\n".join(lines) + "\n", left_out


def cell_ports(base_port: int, index: int) -> dict[str, int]:
    first = base_port + PORT_STEP * index
    return {name: first + offset for name, offset in PORT_OFFSETS.items()}


def check_ports(base_port: int, count: int) -> None:
    """Every cell's ports exist and are free now (UsageError naming the first that is not)."""
    last = base_port + PORT_STEP * (count - 1) + max(PORT_OFFSETS.values())
    if last > 65535:
        raise UsageError(f"--base-port {base_port}: {count} cells need ports up to {last}, past 65535")
    for index in range(count):
        for name, port in cell_ports(base_port, index).items():
            if port_in_use(port):
                raise UsageError(f"port {port} (cell {index + 1}'s {name}, from --base-port {base_port}) is in use: "
                                 f"choose another --base-port")


@dataclass
class CellServer:
    """A cell's QuestDB on its own root and ports: started on a fresh root before the rounds and kept running
    through them (at rest 7.0.1 takes no CPU; 9.3.4 on the project's conf about 7.5 % of a core), its CPU and peak
    memory read from its process."""

    cell: Cell
    ports: dict[str, int]
    roots: Path = MATRIX_ROOT
    root: Path = field(init=False)
    left_out: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.rest_share = 0.0  # of a core, measured by ``measure_rest``
        self.root = Path(self.roots) / self.cell.slug
        text, self.left_out = server_conf(self.cell)
        self.server = NativeQuestDB(self.root, self.ports["http"], self.ports["ilp"], self.ports["pg"],
                                    self.ports["min"], jar=self.cell.build.jar, server_conf=text)

    def start_fresh(self) -> None:
        """Start on an empty root: a server an earlier matrix left running there is stopped, its data removed."""
        self.remove()
        self.server.start()

    def stop(self) -> None:
        self.server.stop()

    def remove(self) -> None:
        """Stop the server and remove its root (its data and log)."""
        self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def cpu_seconds(self) -> float:
        """CPU seconds the running server has used since it started."""
        return process_cost(self._pid())[0]

    def peak_rss(self) -> int | None:
        """The server's peak resident memory since it started, in bytes."""
        return process_cost(self._pid())[1]

    def measure_rest(self) -> float:
        """The share of a core the started server takes at rest (``rest_share``)."""
        time.sleep(REST_WAIT_SECONDS)
        before = self.cpu_seconds()
        time.sleep(REST_WINDOW_SECONDS)
        self.rest_share = (self.cpu_seconds() - before) / REST_WINDOW_SECONDS
        return self.rest_share

    def settle(self) -> float:
        """Wait until the server is settled (its CPU within ``SETTLE_CPU_SHARE`` of a core of its rest level over a
        window); the seconds waited."""
        began = time.monotonic()
        before = self.cpu_seconds()
        while time.monotonic() - began < SETTLE_TIMEOUT_SECONDS:
            time.sleep(SETTLE_WINDOW_SECONDS)
            now = self.cpu_seconds()
            if now - before < (self.rest_share + SETTLE_CPU_SHARE) * SETTLE_WINDOW_SECONDS:
                break
            before = now
        return time.monotonic() - began

    def _pid(self) -> int:
        pid = self.server.pid()
        if pid is None:
            raise RunError(f"the server of cell {self.cell.name} is not running: {self.server.log_tail()}")
        return pid

    def sql(self) -> QuestDBSql:
        return QuestDBSql("127.0.0.1", self.ports["http"])

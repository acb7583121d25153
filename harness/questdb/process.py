"""QuestDB's process on this machine, found by the address it serves: the process listening on the port here
(``listening_process``), or QuestDB's JVM in a container (``serving_process``): a process of this PID namespace
whose own network namespace owns the address (Compose's ``pid: service:questdb``), or, seen from the host, the one
behind the ``docker-proxy`` that publishes the port. Its CPU is sampled, its JVM profiled, its root read for the
server-side import paths.
"""

from __future__ import annotations

import socket
from pathlib import Path

import psutil

_TCP_LISTEN = "0A"

# The hosts that name this machine: a server there is a process this one may find by its port.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def listening_process(port: int) -> psutil.Process | None:
    """The local process listening on TCP ``port`` (QuestDB's HTTP port), or None: remote, in a container
    whose processes this one cannot see, or not allowed to list sockets."""
    try:
        for connection in psutil.net_connections(kind="tcp"):
            if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port and connection.pid:
                return psutil.Process(connection.pid)
    except (psutil.Error, OSError):
        pass
    return None


def serving_process(host: str, port: int) -> tuple[psutil.Process | None, str | None]:
    """The process of this machine serving ``host:port`` (QuestDB's HTTP port) and None, or None and why there is
    none."""
    if host in LOCAL_HOSTS:
        process = listening_process(port)
        if process is None:
            return None, f"no process of this machine that this user may see listens on port {port}"
        return _behind_docker_proxy(process) or process, None
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
    except OSError:
        addresses = set()
    process = _in_another_network(addresses, port)
    if process is None:
        return None, f"QuestDB at {host} is not on this machine (no process this user may see serves it)"
    return process, None


def _behind_docker_proxy(process: psutil.Process) -> psutil.Process | None:
    """Where Docker publishes a container's port (its ``docker-proxy`` listens here), the JVM behind it, as the
    proxy's command line names it (``-container-ip A -container-port P``)."""
    try:
        if process.name() != "docker-proxy":
            return None
        words = process.cmdline()
        address, port = words[words.index("-container-ip") + 1], int(words[words.index("-container-port") + 1])
    except (psutil.Error, ValueError, IndexError):
        return None
    return _in_another_network({address}, port)


def _in_another_network(addresses: set[str], port: int) -> psutil.Process | None:
    """A JVM this process can see whose own network namespace holds one of ``addresses`` and listens on ``port`` (a
    container sharing this one's PID namespace, or any container seen from its host)."""
    if not addresses:
        return None
    for process in psutil.process_iter(["name"]):
        if "java" not in (process.info["name"] or ""):
            continue
        try:
            if _listens(process.pid, port) and addresses & _local_addresses(process.pid):
                return process
        except OSError:
            continue
    return None


def _listens(pid: int, port: int) -> bool:
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == _TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _local_addresses(pid: int) -> set[str]:
    """The IPv4 addresses of ``pid``'s network namespace (``fib_trie``'s host routes) and its IPv6 ones."""
    addresses, previous = set(), ""
    for line in Path(f"/proc/{pid}/net/fib_trie").read_text().splitlines():
        if "/32 host LOCAL" in line and previous.strip().startswith("|--"):
            addresses.add(previous.strip().removeprefix("|--").strip())
        previous = line
    try:
        for line in Path(f"/proc/{pid}/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            addresses.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(raw)))
    except FileNotFoundError:
        pass
    return addresses

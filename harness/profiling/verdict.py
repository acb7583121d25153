"""The verdict: which side is the bottleneck, by the USE method (utilisation and saturation of each side, and where
its samples went), with its numbers.

A side's *working* samples are its samples but the idle ones (and, on the client, the harness's own measuring
threads): the shares the verdict quotes are of those.

- The client is saturated when it keeps ``SATURATED`` of the CPUs it may use (its CPU set) busy; or about one CPU (the
  GIL lets one thread run Python at a time) while its working samples are mostly its own work, not waiting on
  QuestDB; or when ``GIL_BOUND`` of its working samples wait for the GIL.
- QuestDB is saturated when it keeps ``SATURATED`` of the CPUs the client leaves it busy (of its own CPU set where the
  two sets do not meet, as in Docker, or where it runs elsewhere), or when the client spends ``WAITING_ON_SERVER`` of
  its working samples in send/flush: waiting for QuestDB to take what it sends is QuestDB's queue being full.
- Into the sink the server does no work: the client is the bottleneck by construction, and the verdict says so.
- Where both are saturated, the side that used more CPU is named; where both share CPUs and together keep them busy,
  the verdict says so too.
- Where neither is saturated, the verdict says so: the time went in waiting (answers, commits, a schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

SATURATED = 0.9
GIL_BOUND = 0.25
WAITING_ON_SERVER = 0.5
GIL = "waiting for the GIL"
SEND = "send/flush"
# Not work: a side's idle samples, and the client's measuring threads.
NOT_WORKING = ("idle", "the harness's threads")
TOP_BUCKETS = 2


@dataclass
class Side:
    """One side's CPUs used over the profiled time (None: not known) and its bucket shares (None: not profiled)."""

    cpus: float | None
    shares: dict[str, float] | None = None

    def working(self) -> dict[str, float]:
        """The shares of the working samples (empty: none)."""
        shares = {name: share for name, share in (self.shares or {}).items() if name not in NOT_WORKING}
        total = sum(shares.values())
        return {name: share / total for name, share in shares.items()} if total else {}


@dataclass
class Verdict:
    bound: str  # "client", "server" or "neither"
    text: str


def verdict(client: Side, server: Side | None, cores: int, into_sink: bool, same_machine: bool,
            server_cores: int | None = None) -> Verdict:
    """``cores``: the CPUs the client may use; ``server_cores``: QuestDB's (None: as many); ``same_machine``: whether
    the two share those CPUs."""
    client_cpus = client.cpus or 0.0
    working = client.working()
    gil, waiting = working.get(GIL, 0.0), working.get(SEND, 0.0)
    client_full = (client_cpus >= SATURATED * cores or gil >= GIL_BOUND
                   or (client_cpus >= SATURATED and waiting < WAITING_ON_SERVER))
    client_text = f"the client used {client_cpus:.2f} of {cores} CPUs{_buckets(working, 'its working samples')}"
    if into_sink:
        return Verdict("client", f"client-bound (into the sink, which does no work): {client_text}")
    if server is None or server.cpus is None:
        if client_full:
            return Verdict("client", f"client-bound: {client_text}")
        if waiting >= WAITING_ON_SERVER:
            return Verdict("server", f"server-bound (the client waits on it; its CPU not measured): {client_text}")
        return Verdict("neither", f"not known (QuestDB's CPU not measured): {client_text}")
    server_cpus, server_cores = server.cpus, server_cores or cores
    room = max(server_cores - client_cpus, 0.0) if same_machine else server_cores
    machine_full = same_machine and client_cpus + server_cpus >= SATURATED * max(cores, server_cores)
    server_full = (server_cpus >= SATURATED * max(room, 1e-9) or machine_full or waiting >= WAITING_ON_SERVER)
    of = "" if server_cores == cores and same_machine else f" of {server_cores} CPUs"
    server_text = f"QuestDB used {server_cpus:.2f}{of}{_buckets(server.working(), 'its working samples')}"
    note = f" (the machine's {max(cores, server_cores)} CPUs saturated)" if machine_full else (
        " (both saturated)" if client_full and server_full else "")
    if client_full and (not server_full or client_cpus > server_cpus):
        return Verdict("client", f"client-bound{note}: {client_text}; {server_text}")
    if server_full:
        return Verdict("server", f"server-bound{note}: {server_text}; {client_text}")
    return Verdict("neither", f"neither saturated: {client_text}; {server_text}")


def _buckets(shares: dict[str, float], of: str) -> str:
    """", 71 % of its working samples in serialization, 20 % in send/flush, 12 % waiting for the GIL" (the largest
    buckets, the GIL's always where it has any)."""
    largest = sorted(((share, name) for name, share in shares.items() if share > 0), reverse=True)[:TOP_BUCKETS]
    named = [name for _, name in largest]
    if shares.get(GIL, 0.0) > 0 and GIL not in named:
        named.append(GIL)
    parts = [f"{shares[name] * 100:.0f} % {'' if name == GIL else 'in '}{name}" for name in named]
    return f"; of {of}, {', '.join(parts)}" if parts else ""

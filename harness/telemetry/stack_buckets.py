"""The named buckets of a profile's samples, each side's (the client's, QuestDB's): the one place that says which
frames are serialization, the GIL, WAL apply and the rest (docs/profiling.md lists them), and each bucket's colour
in a flame graph.

A stack goes to the first bucket, in the order written here, one of whose patterns (a regular expression, searched)
matches any of its frames; a stack no bucket claims is ``other``. The order is the precedence: a client's sample
waiting for the GIL inside a flush is the GIL's; a server's commit inside the WAL writer is the commit's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.telemetry.stacks import Stacks, frames

OTHER = "other"


@dataclass(frozen=True)
class Bucket:
    name: str
    patterns: tuple[str, ...]
    colour: str  # in a flame graph
    stack_patterns: tuple[str, ...] = ()  # searched in the whole stack, its frames joined by ";"

    def matches(self, frame: str) -> bool:
        return any(re.search(pattern, frame) for pattern in self.patterns)

    def matches_stack(self, stack: str) -> bool:
        """Whether a stack pattern matches ``stack`` (frames joined by ";", root first)."""
        return any(re.search(pattern, stack) for pattern in self.stack_patterns)

    def claims(self, names: list[str]) -> bool:
        return any(self.matches(frame) for frame in names) or self.matches_stack(";".join(names))


# py-spy's frames: "function (file)" for Python (``--nolineno``), "function (library)" or a Rust path for native ones,
# "thread (0x...)" and "process N:..." at the root (``--threads``).
CLIENT_BUCKETS = (
    # The harness's own measuring threads (the time series, progress, checkpoints, the table claim), waiting
    # nearly always: counted apart, never in the verdict's working samples.
    Bucket("the harness's threads", (r"^thread \(\d+\): (sampler|progress|checkpoint|table-claim|peak-rss|"
                                     r"freshness-probe)$",), "#eeeeee"),
    # libpython 3.11 inlines take_gil: a thread waiting for the GIL shows as a condition wait called straight from the
    # code that re-takes it (the client's Cython, Arrow's C++, a numba kernel), where a lock's wait comes through
    # PyThread_acquire_lock.
    Bucket("waiting for the GIL", (r"\btake_gil\b", r"\bPyGILState_Ensure\b"), "#e15759",
           stack_patterns=(r";(?!lock_PyThread_acquire_lock|PyThread_acquire_lock_timed)[^;]+;"
                           r"pthread_cond_(timed)?wait \(libc[^;]*(;0x[0-9a-f]+ \(libc[^;]*)*$",)),
    Bucket("send/flush", (r"^flush_sender \(harness/", r"::Sender::flush", r"\bSender\.flush\b", r"line_sender_flush",
                          r"::sender::(tcp|http)::", r"\bureq::", r"\bsendall\b", r"\bsocket\.send"), "#4e79a7"),
    # QWP's dataframe() encodes, sends and waits for the commit in one call (its Rust frames under it).
    Bucket("QWP dataframe()", (r"^load_frame \(harness/", r"\bQuestDB\.dataframe\b", r"\bPooledSender\.(row|flush)\b",
                               r"::qwp::", r"\bqwp_"), "#59a1a4"),
    Bucket("serialization", (r"^append_frame\w* \(harness/", r"dataframe\.pxi", r"_client__dataframe",
                             r"\bline_sender_buffer", r"::ingress::buffer::", r"\bBuffer\.dataframe\b"),
           "#f28e2b"),
    Bucket("dtype conversion", (r"harness/own_data/convert", r"\bastype\b", r"\bastype_array", r"\bto_datetime\b",
                                r"\bmaybe_convert"), "#edc948"),
    Bucket("TSBS generation", (r"harness/tsbs/",), "#59a14f"),
    Bucket("file reading", (r"harness/own_data/(files|reader|readers|formats)", r"\(pyarrow/", r"\barrow::",
                            r"\bread_csv\b", r"\bparquet\b", r"\b(inflate|zlib|isal|zstd)"), "#76b7b2"),
    Bucket("idle", (r"\bwait \(threading\.py\)", r"_wait_for_tstate_lock", r"\bQueue\.get\b", r"\bget \(queue\.py\)",
                    r"PyThread_acquire_lock", r"\bpthread_cond_\w*wait\b", r"\bsleep\b", r"\bselect\b",
                    r"\bepoll_wait\b", r"\bpoll\b", r"\bfutex", r"\bsem_\w*wait\b", r"\bnanosleep\b"), "#d4d4d4"),
)

# async-profiler's frames: "package/Class.method" for Java, C++ and kernel names for the rest, the thread
# ("[name tid=N]") at the root (``threads``).
SERVER_BUCKETS = (
    Bucket("GC", (r"^\[(GC Thread|G1 |VM Thread|ZGC|Shenandoah|Gang worker|GC )", r"\bG1CollectedHeap\b",
                  r"\bG1ParScan", r"\bGCTaskThread\b", r"::collect\b"), "#e15759"),
    Bucket("JIT compiler", (r"^\[C[12] CompilerThread", r"\bCompileBroker\b", r"\bC2Compiler\b"), "#bab0ac"),
    Bucket("idle", (r"Unsafe\.park\b", r"LockSupport\.park", r"Thread\.sleep", r"Thread\.yield", r"Os\.pause",
                    r"epoll_wait", r"sched_yield", r"futex_wait", r"Object\.wait\b"), "#d4d4d4"),
    Bucket("commits and fsync", (r"\bfsync\b", r"\bfdatasync\b", r"\bmsync\b", r"Files\.(fsync|msync|sync)",
                                 r"TableWriter\.commit", r"WalWriter\.commit"), "#b07aa1"),
    Bucket("WAL apply and O3 merge", (r"ApplyWal2TableJob", r"\bO3", r"TableWriter\.(processWal|apply|o3)",
                                      r"WalTxnDetails", r"cairo/wal/seq/", r"^\[wal-apply"), "#f28e2b"),
    Bucket("WAL writing", (r"WalWriter", r"io/questdb/cairo/wal/",), "#edc948"),
    Bucket("QWP decoding", (r"io/questdb/cutlass/qwp/",), "#59a1a4"),
    Bucket("ILP/HTTP parsing", (r"io/questdb/cutlass/line/", r"LineHttp", r"LineTcp", r"io/questdb/cutlass/http/"), "#4e79a7"),
    Bucket("SQL", (r"io/questdb/griffin/", r"io/questdb/cutlass/pgwire/", r"JsonQueryProcessor",
                   r"TextQueryProcessor"), "#59a14f"),
)

SIDES = {"client": CLIENT_BUCKETS, "server": SERVER_BUCKETS}


OTHER_COLOUR = "#e8d8b8"


def frame_bucket(frame: str, buckets: tuple[Bucket, ...], path: str = "") -> Bucket | None:
    """The first bucket, in their order, one of whose patterns matches this one frame, or whose stack patterns match
    ``path`` (the frames from the root to this one, joined by ";"), as a wait for the GIL is known by the frames it
    ends with: a flame graph colours the frame so."""
    return next((bucket for bucket in buckets
                 if bucket.matches(frame) or (path and bucket.matches_stack(path))), None)


def bucket_of(stack: str, buckets: tuple[Bucket, ...]) -> str:
    names = frames(stack)
    for bucket in buckets:
        if bucket.claims(names):
            return bucket.name
    return OTHER


def bucket_samples(stacks: Stacks, buckets: tuple[Bucket, ...]) -> dict[str, int]:
    """Samples per bucket, in the buckets' order, ``other`` last; every bucket named, empty ones too."""
    counts = dict.fromkeys([bucket.name for bucket in buckets] + [OTHER], 0)
    for stack, samples in stacks.items():
        counts[bucket_of(stack, buckets)] += samples
    return counts


def shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {name: (count / total if total else 0.0) for name, count in counts.items()}

"""A PGWire relay that counts what clients send (a benchmark aid, not a test): how many round trips and
statement prepares a query runner pays per query, read off the wire instead of assumed.

``PgwireTally(upstream_host, upstream_port)`` listens on 127.0.0.1 (an ephemeral port, ``port``), relays
every connection to the server both ways unchanged, and parses the client's side: after the untyped
start-up messages (SSL/GSS requests, the startup packet), each message is a type byte and a length. It
counts messages by type over all connections since the last ``reset``: ``P`` Parse (a statement prepared);
a round trip is a message after which the client waits for the server: ``S`` Sync (the end of an
extended-protocol exchange), ``H`` Flush (asyncpg prepares with Parse, Describe, Flush and waits for the
description before binding), ``Q`` a simple query, and a request for TLS or GSS encryption before the
startup packet (``tls-or-gss request``: the server answers it with one byte).
The relay adds latency, so a runner is counted in a pass of its own, never in a timed one.
"""

from __future__ import annotations

import asyncio
import collections
import struct
import threading

# The untyped requests a client may send before its startup packet (the server answers each with one byte).
_PRE_STARTUP_CODES = {80877103, 80877104}  # SSLRequest, GSSENCRequest
ENCRYPTION_REQUEST = "tls-or-gss request"  # its key in ``counts``


class PgwireTally:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self.counts: collections.Counter[str] = collections.Counter()
        self.connections = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="pgwire-tally", daemon=True)
        self.port = 0

    def __enter__(self) -> PgwireTally:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._relay, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        async def close() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.connections = 0

    def per_query(self, queries: int) -> dict[str, float]:
        """Round trips and prepares per query since the last reset (connection set-up included)."""
        with self._lock:
            round_trips = self.counts["S"] + self.counts["H"] + self.counts["Q"] + self.counts[ENCRYPTION_REQUEST]
            return {"round_trips_per_query": round_trips / queries, "prepares_per_query": self.counts["P"] / queries,
                    "connections": self.connections, "messages": dict(self.counts)}

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.connections += 1
        server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        try:
            await asyncio.gather(self._client_to_server(client_reader, server_writer),
                                 self._pipe(server_reader, client_writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_writer, server_writer):
                writer.close()

    async def _client_to_server(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = False
        while True:
            if not started:  # untyped: length (itself included), then a code and the rest
                head = await reader.readexactly(4)
                (length,) = struct.unpack("!i", head)
                body = await reader.readexactly(length - 4)
                started = struct.unpack("!i", body[:4])[0] not in _PRE_STARTUP_CODES
                if not started:
                    with self._lock:
                        self.counts[ENCRYPTION_REQUEST] += 1
                writer.write(head + body)
            else:
                head = await reader.readexactly(5)
                kind, length = head[:1].decode(), struct.unpack("!i", head[1:])[0]
                body = await reader.readexactly(length - 4)
                with self._lock:
                    self.counts[kind] += 1
                writer.write(head + body)
                if kind == "X":  # Terminate
                    await writer.drain()
                    return
            await writer.drain()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
        writer.close()

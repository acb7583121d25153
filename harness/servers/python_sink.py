"""The no-op sink where socat is missing: a child Python process (``python -m harness.servers.python_sink``)
that accepts TCP connections and reads and discards everything they send, as socat's sink does. Owns that
process: its loop (``serve``, this module run as a program) and its start and stop from the harness
(``PythonSink``). A process of its own, never a thread of the client's: the sink must not take the client's CPU or
GIL, or it would distort the very figure it stands for."""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError
from harness.servers.process import DEFAULT_BIND_HOST, ServerProcess, dies_with_this_process, port_in_use

MODULE = "harness.servers.python_sink"
READ_BYTES = 1 << 20


def serve(host: str, port: int) -> None:
    """Accept connections on host:port and discard what they send, until killed (one thread: the client's
    senders, not the sink, are what a run measures)."""
    server = socket.create_server((host, port), backlog=128)
    server.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    buffer = bytearray(READ_BYTES)
    while True:
        for key, _ in selector.select():
            if key.fileobj is server:
                try:
                    connection, _ = server.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                connection.setblocking(False)
                selector.register(connection, selectors.EVENT_READ)
                continue
            connection = key.fileobj
            try:
                received = connection.recv_into(buffer)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                received = 0
            if not received:  # closed (or reset): forget it
                selector.unregister(connection)
                connection.close()


@dataclass
class PythonSink(ServerProcess):
    """The Python sink process listening on ``host:port``, its pid in ``pid_file``."""

    port: int
    pid_file: Path
    host: str = "127.0.0.1"
    bind_host: str = DEFAULT_BIND_HOST
    dies_with_parent: bool = True

    def __post_init__(self) -> None:
        self.pid_file = Path(self.pid_file)
        self.process: subprocess.Popen | None = None

    @property
    def _command_marker(self) -> str:
        return f"-m {MODULE} "

    def start(self, timeout: float = 10.0) -> PythonSink:
        """Start the process and wait until it accepts connections."""
        if port_in_use(self.port):
            raise RunError(f"port {self.port} (sink) is already in use; stop what holds it or choose another sink port")
        # The child imports this package from where this process did, whatever its working directory.
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        self._spawn([sys.executable, "-m", MODULE, "--host", self.bind_host, "--port", str(self.port)],
                    "the Python sink", self.port, timeout,
                    preexec_fn=dies_with_this_process() if self.dies_with_parent else None,
                    env={**os.environ, "PYTHONPATH": path})
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop(timeout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=DEFAULT_BIND_HOST)
    parser.add_argument("--port", type=int, required=True)
    arguments = parser.parse_args(argv)
    try:
        serve(arguments.host, arguments.port)
    except OSError as exc:
        sys.exit(f"cannot listen on {arguments.host}:{arguments.port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

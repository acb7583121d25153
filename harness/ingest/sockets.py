"""TCP endpoints: how long connecting may take, and whether anything listens at an address."""

from __future__ import annotations

import socket

from harness.errors import RunError

CONNECT_TIMEOUT_SECONDS = 5.0


def check_listening(host: str, port: int, what: str) -> None:
    """Fail within seconds, naming host:port, when nothing accepts connections there."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise RunError(f"nothing listening at {host}:{port} ({what}): {reason}") from None

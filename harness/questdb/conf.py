"""The questdb client's configuration string (``tcp::addr=host:port;username=...;``, ``ws::addr=host:port;`` for
QWP): its grammar, each scheme's keys, and its secrets hidden. The one parser of it: senders read ``--conf`` with it
(``harness.ingest.wire``) and the server's credentials are found in it (``harness.questdb.credentials``).
"""

from __future__ import annotations

import re

from harness.errors import UsageError

# The schemes a client configuration string may start with, and the port each uses without one: ILP over TCP and
# HTTP, and QWP over WebSocket (on the HTTP port), each with TLS (``s``).
CONF_SCHEMES = {"tcp": 9009, "tcps": 9009, "http": 9000, "https": 9000, "ws": 9000, "wss": 9000}
QWP_SCHEMES = ("ws", "wss")
# The keys the questdb client documents for ILP over TCP/HTTP; it ignores any other key silently, so a
# typo (protocol_versoin=2) would quietly measure something else: we refuse it instead (QWP's refuses it itself).
ILP_KEYS = frozenset({
    "addr", "bind_interface", "username", "password", "token", "token_x", "token_y", "auth_timeout",
    "tls_verify", "tls_ca", "tls_roots", "tls_roots_password", "auto_flush", "auto_flush_rows",
    "auto_flush_bytes", "auto_flush_interval", "init_buf_size", "max_name_len", "max_buf_size",
    "request_min_throughput", "request_timeout", "retry_timeout", "protocol_version",
})
# Values never printed nor recorded: a results file or a log line must not leak credentials.
SECRET_CONF_KEYS = frozenset({"password", "token", "token_x", "token_y", "tls_roots_password"})


def parse_conf(conf: str) -> tuple[str, list[tuple[str, str]]]:
    """The scheme and the ``key=value`` pairs of a client configuration string (``;;`` is an escaped ``;``)."""
    scheme, separator, rest = conf.partition("::")
    if not separator or scheme not in CONF_SCHEMES:
        raise UsageError(f"--conf must look like 'tcp::addr=host:port;...' with a scheme of "
                         f"{', '.join(CONF_SCHEMES)}, got {redact_text(conf)!r}")
    pairs = []
    for item in rest.replace(";;", "\0").split(";"):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals:
            # The entry itself is not shown: it may be the tail of a secret holding an unescaped ';'.
            raise UsageError(f"--conf: entry {len(pairs) + 1} is not key=value (write a ';' inside a value as ';;')")
        pairs.append((key, value.replace("\0", ";")))
    if "addr" not in dict(pairs):
        raise UsageError("--conf needs addr=host:port")
    # QWP's configuration (``questdb.connect()``) refuses an unknown key itself.
    unknown = [key for key, _ in pairs if key not in ILP_KEYS] if scheme not in QWP_SCHEMES else []
    if unknown:
        raise UsageError(f"--conf: unknown key {unknown[0]!r} (the client would ignore it); known keys: "
                         f"{', '.join(sorted(ILP_KEYS))}")
    return scheme, pairs


def redact_conf(conf: str) -> str:
    """``conf`` with the values of secret keys replaced by ``***``."""
    scheme, pairs = parse_conf(conf)
    return scheme + "::" + "".join(
        f"{key}={'***' if key.lower() in SECRET_CONF_KEYS else value.replace(';', ';;')};" for key, value in pairs)


def redact_text(text: str) -> str:
    """For text that does not parse: every secret key's value hidden (whatever its case) up to the next
    unescaped ``;``."""
    pattern = re.compile(r"(?i)\b(" + "|".join(sorted(SECRET_CONF_KEYS, key=len, reverse=True)) + r")=((?:;;|[^;])*)")
    return pattern.sub(lambda match: f"{match.group(1)}=***", text)

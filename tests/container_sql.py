"""SQL asked of QuestDB inside its own container (`docker exec`), for the Docker end-to-end tests: what the
server holds, read back from it, whether Compose or a swarm runs it."""

from __future__ import annotations

import json
import subprocess
import urllib.parse


def questdb_sql_in(container: str, sql: str, engine: str | None = None) -> dict:
    """Ask QuestDB from inside its own container, in bash alone (the image need not have curl); ``engine``: the
    Docker engine that runs it, as `docker -H` takes it (None: the one the environment names).

    A QuestDB that asks for a login (AUTH=1: QDB_HTTP_USER and QDB_HTTP_PASSWORD in its environment) is given
    its own, read there: no secret passes this process's command line. QuestDB answers /exec chunked and keeps
    the connection open, so bash reads up to the last chunk.
    """
    script = (
        'login=""; [ -z "${QDB_HTTP_USER:-}" ] || login="Authorization: Basic $(printf "%s:%s" "$QDB_HTTP_USER" '
        '"$QDB_HTTP_PASSWORD" | base64 -w 0)\\r\\n"; '
        'exec 3<>/dev/tcp/127.0.0.1/9000 && printf "GET %s HTTP/1.1\\r\\nHost: localhost\\r\\n%b\\r\\n" "$1" "$login" >&3 '
        "&& while IFS= read -r -t 30 line <&3; do printf '%s\\n' \"$line\"; [[ $line =~ ^0+$'\\r'$ ]] && break; done")
    path = "/exec?query=" + urllib.parse.quote(sql)
    result = subprocess.run(["docker", *(["-H", engine] if engine else []), "exec", container, "bash", "-c", script,
                             "bash", path],
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    head, _, body = result.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    payload = b""
    while True:  # chunked transfer encoding: hex size, CRLF, data, CRLF ... a zero size ends it
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return json.loads(payload)
        payload, body = payload + body[:size], body[size + 2:]

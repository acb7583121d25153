"""QuestDB as the harness reaches it: SQL over HTTP ``/exec``, table schemas, the WAL, run claims, PGWire login,
credentials and TLS, and its process on this machine."""

"""The official client's errors, as both wires that call it (ILP's ``Sender``, QWP's ``QuestDB``) report them: a
``RunError`` of one line."""

from __future__ import annotations

import contextlib

from questdb import QuestDBError

from harness.errors import RunError, one_line


@contextlib.contextmanager
def client_errors():
    """The client's errors inside the block as ``RunError``s of one line."""
    try:
        yield
    except QuestDBError as exc:
        raise RunError(one_line(exc)) from None

"""Error types shared by the library: the CLI turns each into one line and an exit code; and whether a signal
(SIGINT, SIGTERM) has asked the run to end.

The command line's handler ends a run by raising ``KeyboardInterrupt`` wherever the main thread is. Raised inside
an extension's callback (a driver's protocol code under the event loop), that exception can be caught and lost,
and the run would go on: the long loops also ask ``interrupt_requested()`` between their steps.
"""

import re
import threading
from collections.abc import Callable


def one_line(exc: BaseException) -> str:
    """An exception's text on one line (a client's or a driver's error can span many), at most 300 characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


class HarnessError(Exception):
    """Base of every error the harness reports to a user."""


class UsageError(HarnessError):
    """Bad input from the user (option, file, schema choice): exit code 2."""


# A parameter named inside a message, by the library's name for it (``named("at_format")``): the library knows no
# command line, so the edge that took the value says it as that edge calls it (``spoken``): the command line by its
# flag (``--at-format``), the notebook by its keyword (``at_format=``).
_NAMED = re.compile("\u27e8([A-Za-z_][A-Za-z0-9_]*)\u27e9")


def named(parameter: str) -> str:
    """``parameter`` (the library's name) as a message names it, for the edge to say as its user calls it."""
    return f"\u27e8{parameter}\u27e9"


def spoken(text: str, name_of: Callable[[str], str]) -> str:
    """``text`` with every parameter ``named`` in it said as ``name_of`` says it."""
    return _NAMED.sub(lambda match: name_of(match[1]), text)


def flag_of(parameter: str) -> str:
    """A parameter's flag by the command line's rule (``at_format`` -> ``--at-format``): what an edge that knows no
    options class of its own says."""
    return "--" + parameter.replace("_", "-")


def keyword_of(parameter: str) -> str:
    """A parameter as the notebook API takes it: ``at_format=``."""
    return f"{parameter}="


class ParameterError(UsageError):
    """A bad value of one named parameter, as the library calls it (``timestamp_start``): the domain knows
    no command line, so the command that took the value names its flag instead (``harness.options.declare``)."""

    def __init__(self, parameter: str, problem: str):
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter
        self.problem = problem


class RunError(HarnessError):
    """A run that could not complete (server down or killed, validation failed): exit code 1."""


class ThresholdsFailed(RunError):
    """A run that completed, and missed thresholds it was given (``bench --threshold``): a line each, exit 1."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


_interrupt = threading.Event()


def request_interrupt() -> None:
    """A signal arrived: every loop that asks should end."""
    _interrupt.set()


def interrupt_requested() -> bool:
    return _interrupt.is_set()


def clear_interrupt() -> None:
    """For a process that goes on after an interrupted run (a test, a notebook)."""
    _interrupt.clear()

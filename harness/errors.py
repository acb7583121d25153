"""Error types shared by the library: the CLI turns each into one line and an exit code; and whether a signal
(SIGINT, SIGTERM) has asked the run to end.

The command line's handler ends a run by raising ``KeyboardInterrupt`` wherever the main thread is. Raised inside
an extension's callback (a driver's protocol code under the event loop), that exception can be caught and lost,
and the run would go on: the long loops also ask ``interrupt_requested()`` between their steps.
"""

import threading


class HarnessError(Exception):
    """Base of every error the harness reports to a user."""


class UsageError(HarnessError):
    """Bad input from the user (option, file, schema choice): exit code 2."""


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

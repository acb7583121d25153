"""Error types shared by the library: the CLI turns each into one line and an exit code."""


class HarnessError(Exception):
    """Base of every error the harness reports to a user."""


class UsageError(HarnessError):
    """Bad input from the user (option, file, schema choice): exit code 2."""


class RunError(HarnessError):
    """A run that could not complete (server down or killed, validation failed): exit code 1."""

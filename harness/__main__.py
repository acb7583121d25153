"""``python -m harness``: the command line. Guarded, so that a process spawned by ``multiprocessing`` (which imports
the parent's main module under another name) does not run it again."""

from harness.cli import entry_point

if __name__ == "__main__":
    entry_point()

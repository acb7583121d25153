"""A/B of two commands (a script, not a test): side a's and side b's command, each run whole, alternated over
rounds (``benchmarks/alternate.py``: a b, b a, a b ...); medians, b's ratios to a paired round by round with
their intervals and where b stands (ahead, level, behind: docs/methodology.md#benchmark-records), and one
benchmark record.

    .venv/bin/python benchmarks/ab.py --a 'CMD' --b 'CMD' [--a-name before --b-name after] [--rounds 6] \\
        [--warmup] [--figure 'NAME=REGEX' ...] [--less-is-better NAME ...] [--record PATH]
    .venv/bin/python benchmarks/ab.py --a-checkout DIR --b-checkout DIR --command 'CMD' [...]
    make ab A='CMD' B='CMD' [AB_ARGS='--rounds 11 --figure ...']

A command is a shell string (``/bin/sh -c``). With two checkouts (a git worktree of each commit, e.g. ``git
worktree add ../ab-base 39fa935``) the one ``--command`` runs in each checkout's folder, that folder first on
``PYTHONPATH``, so a Python command imports that checkout's ``harness`` and ``benchmarks``. Name the
interpreter by its full path (``"$PWD/.venv/bin/python"``): a worktree has no ``.venv`` of its own.

Each run's figures: ``seconds``, the whole command's wall time from its start to its exit, and
``client_cpu_seconds``, its user and system CPU as the kernel counted it (``wait4``: the shell's and that of
every child it waited for). No peak RSS: a forked child's high-water mark starts at its parent's, this
script's. ``--figure NAME=REGEX`` adds a figure the command prints: the first group of REGEX's first match in
its stdout, else in its stderr, read as a number (``--figure 'rate=([0-9.]+) rows/s'``); more of it is better
unless ``--less-is-better NAME``. The record goes to ``--record PATH`` (default ``results/<UTC time>-ab.json``);
``benchmarks/reprint.py`` prints its summary again. Bad input ends in one line and exit 2, a command that exits
non-zero (or cannot start) in one line and exit 1; a failed run writes no record.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.alternate import alternate, write_record
from harness.errors import HarnessError, RunError, UsageError
from harness.records.benchmark_record import CORE_FIGURES, BenchmarkRecord, Comparison, Measurement
from harness.records.intervals import standings

# Less of these is better; of a printed figure, more (unless --less-is-better).
LESS_IS_BETTER = ("seconds", "client_cpu_seconds")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own: usage and message over two lines
        raise UsageError(message)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(description="Two commands (or one command in two checkouts) alternated over rounds: medians, "
                                "paired ratios of b to a with their intervals and standing, one benchmark record.")
    parser.add_argument("--a", help="Side a's command (a shell string).")
    parser.add_argument("--b", help="Side b's command.")
    parser.add_argument("--a-checkout", type=Path, help="Side a's checkout: --command runs in it.")
    parser.add_argument("--b-checkout", type=Path, help="Side b's checkout.")
    parser.add_argument("--command", help="With --a-checkout and --b-checkout: the command run in each.")
    parser.add_argument("--a-name", default="a", help="Side a's label (default: a); a is the baseline.")
    parser.add_argument("--b-name", default="b", help="Side b's label (default: b).")
    parser.add_argument("--rounds", type=int, default=6, help="Counted rounds (default 6: the fewest whose paired "
                                                              "interval covers 95 %%).")
    parser.add_argument("--warmup", action="store_true", help="One uncounted round first.")
    parser.add_argument("--figure", action="append", default=[], metavar="NAME=REGEX",
                        help="A figure the commands print: REGEX's first group, a number (repeat).")
    parser.add_argument("--less-is-better", action="append", default=[], metavar="NAME",
                        help="A --figure of which less is better (repeat).")
    parser.add_argument("--record", type=Path,
                        help="The benchmark record's path (default: results/<UTC time>-ab.json).")
    options = parser.parse_args(argv)
    if options.rounds < 1:
        raise UsageError(f"--rounds {options.rounds}: at least 1")
    return options


def sides_of(options: argparse.Namespace) -> dict[str, tuple[str, Path | None]]:
    """Side name: (its command, the folder it runs in or None); UsageError for a command line that names no
    two sides."""
    checkouts = (options.a_checkout, options.b_checkout)
    if options.a is not None or options.b is not None:
        if any(checkouts) or options.command is not None:
            raise UsageError("give either --a and --b (two commands), or --a-checkout, --b-checkout and --command")
        if options.a is None or options.b is None:
            raise UsageError(f"--{'a' if options.a is None else 'b'}: no command for that side")
        commands = (options.a, options.b)
        checkouts = (None, None)
    elif any(checkouts):
        if not all(checkouts) or options.command is None:
            raise UsageError("two checkouts need --a-checkout, --b-checkout and --command")
        for checkout in checkouts:
            if not checkout.is_dir():
                raise UsageError(f"checkout {checkout} is not a directory")
        commands = (options.command, options.command)
    else:
        raise UsageError("no command: give --a and --b, or --a-checkout, --b-checkout and --command")
    if not all(command and command.strip() for command in commands):
        raise UsageError("a command is empty")
    if options.a_name == options.b_name or not options.a_name or not options.b_name:
        raise UsageError(f"the two sides need two names (--a-name {options.a_name!r}, --b-name {options.b_name!r})")
    return {options.a_name: (commands[0], checkouts[0]), options.b_name: (commands[1], checkouts[1])}


def figures_of(options: argparse.Namespace) -> dict[str, re.Pattern]:
    """The --figure patterns by name; UsageError for one that is malformed, has no group or reuses a name."""
    figures = {}
    for given in options.figure:
        name, equals, pattern = given.partition("=")
        if not equals or not name or not pattern:
            raise UsageError(f"--figure {given!r}: expected NAME=REGEX")
        if name in CORE_FIGURES or name in figures:
            raise UsageError(f"--figure {name}: a figure of that name is already measured")
        try:
            figures[name] = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"--figure {name}: not a regular expression ({exc})") from None
        if figures[name].groups < 1:
            raise UsageError(f"--figure {name}: the regular expression has no group to read the number from")
    unknown = [name for name in options.less_is_better if name not in figures]
    if unknown:
        raise UsageError(f"--less-is-better {unknown[0]}: no --figure of that name")
    return figures


def run_whole(command: str, checkout: Path | None) -> tuple[Measurement, str]:
    """Run ``command`` to its end: its wall seconds, the CPU the kernel counted for it (the shell's and its
    children's), and what it printed (stdout, then stderr)."""
    environment = None
    if checkout is not None:
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(checkout.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, shell=True, cwd=checkout, env=environment, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        printed = []
        for stream in (stdout, stderr):
            stream.seek(0)
            printed.append(stream.read().decode(errors="replace"))
    if process.returncode != 0:
        lines = [line.strip() for line in (printed[1] or printed[0]).splitlines() if line.strip()]
        last = lines[-1] if lines else "nothing printed"
        raise RunError(f"{command!r} exited with {process.returncode}: {last[:300]}")
    measurement = Measurement(seconds=seconds, client_cpu_seconds=usage.ru_utime + usage.ru_stime)
    return measurement, "\n".join(printed)


def read_figures(measurement: Measurement, printed: str, figures: dict[str, re.Pattern], side: str) -> None:
    """Each --figure's number from what the side's command printed, into the measurement's extra figures."""
    for name, pattern in figures.items():
        match = pattern.search(printed)
        if match is None:
            raise UsageError(f"--figure {name}: /{pattern.pattern}/ matches nothing {side}'s command printed")
        try:
            measurement.extra[name] = float(match.group(1))
        except (TypeError, ValueError):
            raise UsageError(f"--figure {name}: its first group matched {match.group(1)!r}, not a number") from None


def print_summary(comparison: Comparison, less_is_better: list[str]) -> None:
    """Per figure, each side's median and range and b's ratio to a (paired: the median of the rounds' own
    ratios, its interval, and where b stands by it); then the tally of b's standings."""
    a, b = comparison.variants
    print(f"\nmedians [range], {b} over {a} (paired [interval], where {b} stands):")
    tallied = []
    for name, figure in comparison.summary[b].items():
        base = comparison.summary[a].get(name)
        if base is None:
            continue
        higher = name not in LESS_IS_BETTER and name not in less_is_better
        ratio = "-" if figure.ratio is None else f"{figure.ratio:.2f}x"
        print(f"{name:20} {a} {base.median:.4g} [{base.min:.4g}-{base.max:.4g}]  {b} {figure.median:.4g} "
              f"[{figure.min:.4g}-{figure.max:.4g}]  {ratio} (paired {figure.paired_text(higher_is_better=higher)})")
        tallied.append((figure, higher))
    print(f"{b}: {standings(tallied)}")


def main(argv: list[str] | None = None) -> Path:
    options = parse(argv)
    sides = sides_of(options)
    figures = figures_of(options)
    record = BenchmarkRecord("ab", parameters=dict(
        sides={name: {"command": command, "checkout": str(checkout) if checkout else None}
               for name, (command, checkout) in sides.items()},
        rounds=options.rounds, warm_up=options.warmup,
        figures={name: pattern.pattern for name, pattern in figures.items()}, less_is_better=options.less_is_better))
    for name, (command, checkout) in sides.items():
        print(f"{name}: {command}" + (f"   (in {checkout})" if checkout else ""))

    def side(name: str):
        command, checkout = sides[name]

        def measure(round_number: int) -> Measurement:
            measurement, printed = run_whole(command, checkout)
            read_figures(measurement, printed, figures, name)
            shown = "".join(f"  {figure} {value:.4g}" for figure, value in measurement.extra.items())
            print(f"{f'round {round_number}' if round_number else 'warm-up'} {name:10} {measurement.seconds:8.3f} s  "
                  f"CPU {measurement.client_cpu_seconds:.3f} s{shown}", flush=True)
            return measurement
        return measure

    comparison = alternate({name: side(name) for name in sides}, options.rounds, name=" vs ".join(sides),
                           warm_up=options.warmup)
    record.comparisons.append(comparison)
    print_summary(comparison, options.less_is_better)
    return write_record(record, options.record)


def exit_in_one_line(main: Callable[[], object]) -> None:
    """Run a script's ``main``: an error of the harness's ends in its one line on stderr and exit 2 for bad input
    (``UsageError``), 1 for the rest (a failed command, a record that cannot be written); Ctrl-C 130."""
    try:
        main()
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:  # the system refused something no check foresaw (a checkout we may not enter)
        print(f"error: {exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    exit_in_one_line(main)

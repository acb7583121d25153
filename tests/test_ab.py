"""benchmarks/ab.py against real commands: the two sides alternate, a clearly slower command stands behind, a
figure the commands print is read, one command runs in each of two checkouts with that checkout's code, the
record is written, read back and printed again (benchmarks/reprint.py), and bad input ends in one line with
its exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import ab
from harness.records.store import load_benchmark_record

ROOT = Path(__file__).resolve().parents[1]


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.slow
def test_a_clearly_slower_command_stands_behind(tmp_path):
    record_path = tmp_path / "ab.json"
    result = script("ab.py", "--a", "sleep 0.05", "--b", "sleep 0.25", "--a-name", "short", "--b-name", "long",
                    "--record", str(record_path))
    assert result.returncode == 0, result.stderr
    assert f"Results: {record_path}" in result.stdout

    record = load_benchmark_record(record_path)
    assert record.benchmark == "ab" and record.parameters["rounds"] == 6
    assert record.parameters["sides"]["long"] == {"command": "sleep 0.25", "checkout": None}
    (comparison,) = record.comparisons
    assert comparison.baseline == "short" and comparison.variants == ["short", "long"]
    assert [one.order for one in comparison.rounds] == [["short", "long"], ["long", "short"]] * 3
    for one in comparison.rounds:
        assert one.measurements["short"].seconds >= 0.05 and one.measurements["long"].seconds >= 0.25
        assert one.measurements["long"].client_cpu_seconds is not None
    seconds = comparison.summary["long"]["seconds"]
    assert seconds.standing(higher_is_better=False) == "behind" and seconds.paired_low > 1
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("seconds ")]
    assert line.endswith(" behind)")


@pytest.mark.slow
def test_a_printed_figure_is_read_and_the_record_printed_again(tmp_path):
    record_path = tmp_path / "ab.json"
    result = script("ab.py", "--a", "echo 'sent: 10.5 rows/s'", "--b", "echo 'sent: 21 rows/s' >&2",
                    "--figure", "rate=sent: ([0-9.]+) rows/s", "--rounds", "2", "--warmup", "--record", str(record_path))
    assert result.returncode == 0, result.stderr

    (comparison,) = load_benchmark_record(record_path).comparisons
    assert [one.number for one in comparison.rounds] == [0, 1, 2]  # the warm-up recorded, not counted
    assert [one.measurements["b"].extra["rate"] for one in comparison.rounds] == [21.0] * 3
    rate = comparison.summary["b"]["rate"]
    assert rate.median == 21.0 and rate.ratio == 2.0 and rate.standing() == "ahead"
    assert "2.00x (paired 2.00x [2.00-2.00] ahead)" in result.stdout

    # benchmarks/reprint.py prints the same summary from the record.
    summary = result.stdout[result.stdout.index("\nmedians"):result.stdout.index("Results:")]
    reprinted = script("reprint.py", str(record_path))
    assert reprinted.returncode == 0, reprinted.stderr
    assert reprinted.stdout == f"== {record_path}\n{summary}"


def test_one_command_runs_in_each_checkout_with_its_own_code(tmp_path):
    for side, value in (("old", 1), ("new", 2)):
        (tmp_path / side / "sub").mkdir(parents=True)
        (tmp_path / side / "side.py").write_text(f"VALUE = {value}\n")
    # From a folder below the checkout: its code comes from PYTHONPATH, not from the working directory.
    command = f"""cd sub && {sys.executable} -c "import side; print('value', side.VALUE)\""""
    result = script("ab.py", "--a-checkout", str(tmp_path / "old"), "--b-checkout", str(tmp_path / "new"),
                    "--command", command, "--figure", r"value=value (\d+)", "--rounds", "1",
                    "--record", str(tmp_path / "ab.json"))
    assert result.returncode == 0, result.stderr
    (comparison,) = load_benchmark_record(tmp_path / "ab.json").comparisons
    assert {side: comparison.summary[side]["value"].median for side in ("a", "b")} == {"a": 1.0, "b": 2.0}


@pytest.mark.parametrize(("args", "code", "fragment"), [
    ([], 2, "no command"),
    (["--a", "true"], 2, "--b: no command"),
    (["--a", "true", "--b", "true", "--command", "true"], 2, "give either --a and --b"),
    (["--a-checkout", "{tmp}/missing", "--b-checkout", "{tmp}", "--command", "true"], 2, "is not a directory"),
    (["--a-checkout", "{tmp}", "--b-checkout", "{tmp}"], 2, "need --a-checkout, --b-checkout and --command"),
    (["--a", "true", "--b", "echo no >&2; exit 3"], 1, "exited with 3: no"),
    (["--a", "true", "--b", "true", "--figure", "rate=rate ([0-9.]+)"], 2, "matches nothing a's command printed"),
    (["--a", "echo rate x", "--b", "true", "--figure", "rate=rate (\\w+)"], 2, "not a number"),
    (["--a", "true", "--b", "true", "--figure", "rate=rate [0-9]+"], 2, "no group"),
    (["--a", "true", "--b", "true", "--figure", "rate=("], 2, "not a regular expression"),
    (["--a", "true", "--b", "true", "--figure", "seconds=(x)"], 2, "already measured"),
    (["--a", "true", "--b", "true", "--less-is-better", "rate"], 2, "no --figure of that name"),
    (["--a", "true", "--b", "true", "--a-name", "x", "--b-name", "x"], 2, "two names"),
    (["--a", "true", "--b", "true", "--rounds", "0"], 2, "--rounds 0"),
    (["--a", "true", "--b", "true", "--rounds", "six"], 2, "invalid int value"),
    (["--a", "true", "--b", "true", "--bogus"], 2, "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_leaves_no_record(tmp_path, capsys, args, code, fragment):
    """In this process, through the script's own exit (``exit_in_one_line``); the next test runs it whole."""
    record_path = tmp_path / "ab.json"
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args] + ["--record", str(record_path)]
    with pytest.raises(SystemExit) as exit_:
        ab.exit_in_one_line(lambda: ab.main(argv))
    stderr = capsys.readouterr().err
    assert exit_.value.code == code, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and fragment in stderr, stderr
    assert not record_path.exists()


@pytest.mark.parametrize(("args", "code"), [([], 2), (["--a", "true", "--b", "exit 3"], 1)])
def test_the_script_ends_in_one_line_without_a_traceback(args, code):
    result = script("ab.py", *args)
    assert result.returncode == code and result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), \
        result.stderr


def test_reprint_refuses_what_is_no_benchmark_record_in_one_line(tmp_path):
    (tmp_path / "run.json").write_text('{"schema_version": 3, "phases": {}}')
    result = script("reprint.py", str(tmp_path / "run.json"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "is not a benchmark record" in result.stderr

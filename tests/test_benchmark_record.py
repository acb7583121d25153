"""The benchmark record (harness.records.benchmark_record) and the alternation helper of benchmarks/ (benchmarks.alternate):
the order variants run in, the warm-up left out of the figures, medians, ratios and paired intervals on known
numbers, the JSON round trip (a version-1 record read with its intervals), the refusals, and the plain-text
table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.alternate import alternate, alternate_groups, round_order
from harness.records.benchmark_record import (
    BENCHMARK_SCHEMA, BENCHMARK_SCHEMA_VERSION, BenchmarkRecord, FigureSummary, Measurement,
)
from harness.records.intervals import median_interval, round_ratios, standings, summarize
from harness.records.store import is_benchmark_record, load_benchmark_record, write_benchmark_record
from harness.report.tables import benchmark_table
from harness.errors import UsageError


def scripted(calls: list[tuple[str, int]], name: str, seconds: dict[int, float], rows: int | None = None,
             **extra: dict[int, float]):
    """A variant that logs (name, round number) and measures the seconds (and extra figures) given for
    that round."""
    def measure(round_number: int) -> Measurement:
        calls.append((name, round_number))
        return Measurement(seconds=seconds[round_number], rows=rows,
                           extra={key: values[round_number] for key, values in extra.items()})
    return measure


def constant(seconds: float = 1.0):
    return lambda _: Measurement(seconds=seconds, rows=10)


def record_of(*comparisons, benchmark: str = "loader-parity") -> BenchmarkRecord:
    return BenchmarkRecord(benchmark, parameters={"rows": 6, "workers": [1, 2]}, comparisons=list(comparisons),
                           started_at="2026-11-24T10:00:00+00:00", system={"cpu_model": "test CPU", "cpu_count": 2})


def test_round_order_rotates_by_one_each_counted_round():
    assert [round_order(["a", "b", "c"], number) for number in (0, 1, 2, 3, 4)] == [
        ["a", "b", "c"], ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert [round_order(["a", "b"], number) for number in (1, 2, 3)] == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert round_order(["a", "b"], 2, rotate=False) == ["a", "b"]


def test_variants_alternate_round_by_round():
    calls: list[tuple[str, int]] = []
    seconds = {1: 1.0, 2: 1.0, 3: 1.0}
    comparison = alternate({name: scripted(calls, name, seconds) for name in ("go", "replay", "bench")}, 3)
    assert calls == [("go", 1), ("replay", 1), ("bench", 1),
                     ("replay", 2), ("bench", 2), ("go", 2),
                     ("bench", 3), ("go", 3), ("replay", 3)]
    assert [one.order for one in comparison.rounds] == [["go", "replay", "bench"], ["replay", "bench", "go"],
                                                        ["bench", "go", "replay"]]
    assert comparison.baseline == "go" and comparison.variants == ["go", "replay", "bench"]

    calls.clear()
    alternate({name: scripted(calls, name, seconds) for name in ("a", "b")}, 2, rotate=False)
    assert calls == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]


def test_groups_share_each_round():
    calls: list[tuple[str, int]] = []
    seconds = {0: 9.0, 1: 1.0, 2: 1.0}
    groups = {group: {f"{group}/{name}": scripted(calls, f"{group}/{name}", seconds) for name in ("go", "ours")}
              for group in ("lastpoint", "high-cpu-1")}
    comparisons = alternate_groups(groups, 2, warm_up=True, parameters={"lastpoint": {"query_type": "lastpoint"}})
    assert calls == [("lastpoint/go", 0), ("lastpoint/ours", 0), ("high-cpu-1/go", 0), ("high-cpu-1/ours", 0),
                     ("lastpoint/go", 1), ("lastpoint/ours", 1), ("high-cpu-1/go", 1), ("high-cpu-1/ours", 1),
                     ("lastpoint/ours", 2), ("lastpoint/go", 2), ("high-cpu-1/ours", 2), ("high-cpu-1/go", 2)]
    assert [one.name for one in comparisons] == ["lastpoint", "high-cpu-1"]
    assert comparisons[0].parameters == {"query_type": "lastpoint"} and comparisons[1].parameters == {}


def test_the_warm_up_round_is_recorded_but_not_counted():
    calls: list[tuple[str, int]] = []
    comparison = alternate({"off": scripted(calls, "off", {0: 100.0, 1: 1.0, 2: 3.0}, rows=6),
                            "on": scripted(calls, "on", {0: 100.0, 1: 2.0, 2: 2.0}, rows=6)}, 2, warm_up=True)
    assert calls[:2] == [("off", 0), ("on", 0)] and len(calls) == 6
    assert [one.number for one in comparison.rounds] == [0, 1, 2]
    assert comparison.rounds[0].is_warm_up and [one.number for one in comparison.counted_rounds()] == [1, 2]
    off = comparison.summary["off"]["seconds"]
    assert (off.median, off.min, off.max) == (2.0, 1.0, 3.0)


def test_medians_and_ratios_on_known_numbers():
    calls: list[tuple[str, int]] = []
    comparison = alternate({
        "go": scripted(calls, "go", {1: 1.0, 2: 3.0, 3: 2.0}, rows=6, queries_per_second={1: 10, 2: 30, 3: 20}),
        "ours": scripted(calls, "ours", {1: 2.0, 2: 6.0, 3: 5.0}, rows=6, queries_per_second={1: 5, 2: 15, 3: 8}),
    }, 3, baseline="go")
    go, ours = comparison.summary["go"], comparison.summary["ours"]
    assert go["seconds"].median == 2.0 and ours["seconds"].median == 5.0
    assert ours["seconds"].ratio == 2.5 and go["seconds"].ratio == 1.0
    # rows/s per round: go 6, 2, 3 and ours 3, 1, 1.2: the median of each round's rate, not rows / median seconds.
    assert go["rows_per_second"].median == 3.0 and ours["rows_per_second"].median == pytest.approx(1.2)
    assert ours["rows_per_second"].ratio == pytest.approx(0.4)
    assert (ours["rows_per_second"].min, ours["rows_per_second"].max) == (pytest.approx(1.0), 3.0)
    # Per-round seconds ratios 2, 2, 2.5: their median differs from the ratio of the medians.
    assert round_ratios(comparison, "ours", "seconds") == [2.0, 2.0, 2.5]
    assert ours["seconds"].paired_ratio == 2.0
    assert ours["queries_per_second"].median == 8 and ours["queries_per_second"].ratio == 0.4
    assert ours["rows"].median == 6 and "client_cpu_seconds" not in ours


def test_an_even_number_of_rounds_takes_the_mean_of_the_middle_two():
    seconds = iter([1.0, 4.0, 2.0, 10.0])
    comparison = alternate({"only": lambda _: Measurement(seconds=next(seconds))}, 4)
    assert comparison.summary["only"]["seconds"].median == 3.0


def test_a_zero_baseline_gives_no_ratio():
    comparison = alternate({"off": lambda _: Measurement(1.0, extra={"scrapes": 0}),
                            "on": lambda _: Measurement(1.0, extra={"scrapes": 4})}, 1)
    assert comparison.summary["on"]["scrapes"].ratio is None
    assert comparison.summary["on"]["scrapes"].paired_ratio is None


@pytest.mark.parametrize("count, ranks, coverage", [
    # The sign test's coverage 1 - 2 P(Binomial(n, 1/2) < k) of the k-th smallest to k-th largest value.
    (2, (1, 2), 0.5), (5, (1, 5), 1 - 2 / 32), (6, (1, 6), 1 - 2 / 64), (8, (1, 8), 1 - 2 / 256),
    (9, (2, 8), 1 - 2 * 10 / 512), (11, (2, 10), 1 - 2 * 12 / 2048), (12, (3, 10), 1 - 2 * 79 / 4096),
])
def test_median_interval_is_the_sign_tests_on_known_counts(count, ranks, coverage):
    values = [float(value) for value in range(count, 0, -1)]  # given in any order: sorted first
    low, high, achieved = median_interval(values)
    assert (low, high) == ranks and achieved == pytest.approx(coverage)
    assert achieved >= 0.95 or ranks == (1, count)  # fewer rounds than 0.95 needs: the whole range


def test_median_interval_needs_two_values():
    assert median_interval([]) is None and median_interval([1.2]) is None


def test_paired_intervals_in_the_summary_and_where_a_variant_stands():
    seconds = {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: 1.0}
    calls: list[tuple[str, int]] = []
    comparison = alternate({
        "go": scripted(calls, "go", seconds, rows=6),
        "faster": scripted(calls, "faster", {1: 0.5, 2: 0.9, 3: 0.8, 4: 0.7, 5: 0.6, 6: 0.95}, rows=6),
        "noisy": scripted(calls, "noisy", {1: 0.5, 2: 1.2, 3: 0.8, 4: 1.1, 5: 0.6, 6: 0.95}, rows=6),
    }, 6, baseline="go")
    faster, noisy = comparison.summary["faster"]["seconds"], comparison.summary["noisy"]["seconds"]
    assert (faster.paired_low, faster.paired_high) == (0.5, 0.95)
    assert faster.paired_confidence == pytest.approx(1 - 2 / 64)
    assert faster.standing(higher_is_better=False) == "ahead"  # fewer seconds in every round
    assert comparison.summary["faster"]["rows_per_second"].standing() == "ahead"
    assert faster.standing(higher_is_better=True) == "behind"
    assert noisy.standing(higher_is_better=False) == "level"  # two rounds of six slower: not told apart
    assert comparison.summary["go"]["seconds"].paired_low is None  # the baseline against itself: no interval
    assert comparison.summary["go"]["seconds"].standing() is None
    assert faster.paired_text(higher_is_better=False) == "0.75x [0.50-0.95] ahead"
    assert faster.paired_text(higher_is_better=False, invert=True) == "1.33x [1.05-2.00] ahead"
    assert comparison.summary["go"]["seconds"].paired_text() == "1.00x"  # no interval, no standing
    line = standings([(faster, False), (noisy, False), (comparison.summary["go"]["seconds"], False)])
    assert line == ("medians at least the baseline's in 3 of 3; paired intervals (coverage 96.9% or more): "
                    "1 ahead, 1 level, 0 behind")
    behind = FigureSummary(median=1.0, min=1.0, max=1.0, ratio=0.9, paired_ratio=0.9, paired_low=0.8,
                           paired_high=0.95, paired_confidence=0.96875)
    assert standings([(behind, True)]) == ("medians at least the baseline's in 0 of 1; paired intervals "
                                           "(coverage 96.9% or more): 0 ahead, 0 level, 1 behind")
    assert standings([(FigureSummary(1.0, 1.0, 1.0, ratio=1.0, paired_ratio=1.0), True)]) == (
        "medians at least the baseline's in 1 of 1; no paired intervals (fewer than 2 rounds)")


def test_bad_alternations_are_refused():
    with pytest.raises(ValueError, match="baseline 'sink'"):
        alternate({"a": constant()}, 1, baseline="sink")
    with pytest.raises(ValueError, match="rounds"):
        alternate({"a": constant()}, 0)
    with pytest.raises(ValueError, match="core figures"):
        Measurement(1.0, extra={"rows_per_second": 5.0})


def test_record_round_trips_through_json(tmp_path):
    calls: list[tuple[str, int]] = []
    comparison = alternate({"go": scripted(calls, "go", {0: 9.0, 1: 1.0, 2: 3.0}, rows=6),
                            "ours": scripted(calls, "ours", {0: 9.0, 1: 2.0, 2: 4.0}, rows=6, mib={0: 1, 1: 2, 2: 3})},
                           2, name="pinned sink W=1", warm_up=True, parameters={"pinned": True})
    comparison.rounds[1].measurements["go"].client_cpu_seconds = 0.5
    comparison.rounds[1].measurements["go"].peak_rss_bytes = 1 << 20
    comparison.rounds[1].measurements["ours"].run_record = "results/run.json"
    comparison.summary = summarize(comparison)
    written = record_of(comparison)
    written.extra["same_bytes"] = True
    path = write_benchmark_record(written, tmp_path / "deep" / "record.json")
    assert written.path == path
    values = json.loads(path.read_text())
    assert list(values)[:2] == ["schema", "schema_version"]
    assert (values["schema"], values["schema_version"]) == (BENCHMARK_SCHEMA, BENCHMARK_SCHEMA_VERSION)
    assert values["comparisons"][0]["rounds"][0]["number"] == 0
    assert "rows_per_second" not in values["comparisons"][0]["rounds"][1]["measurements"]["go"]  # derived, not stored
    loaded = load_benchmark_record(path)
    assert loaded == written and loaded.path == path
    assert summarize(loaded.comparisons[0]) == loaded.comparisons[0].summary
    assert is_benchmark_record(path)


def test_a_version_1_record_is_read_with_its_paired_intervals(tmp_path):
    """Version 1 stored no intervals: reading one computes them from the rounds it holds."""
    calls: list[tuple[str, int]] = []
    comparison = alternate({"go": scripted(calls, "go", {n: 1.0 for n in range(1, 7)}, rows=6),
                            "ours": scripted(calls, "ours", {n: 2.0 + n for n in range(1, 7)}, rows=6)}, 6)
    path = write_benchmark_record(record_of(comparison), tmp_path / "record.json")
    values = json.loads(path.read_text())
    values["schema_version"] = 1
    for figures in values["comparisons"][0]["summary"].values():
        for figure in figures.values():
            for key in ("paired_low", "paired_high", "paired_confidence"):
                del figure[key]
    path.write_text(json.dumps(values))
    seconds = load_benchmark_record(path).comparisons[0].summary["ours"]["seconds"]
    assert (seconds.paired_low, seconds.paired_high, seconds.standing(higher_is_better=False)) == (3.0, 8.0, "behind")


def test_a_newer_schema_version_is_refused_naming_it(tmp_path):
    path = write_benchmark_record(record_of(alternate({"a": constant()}, 1)), tmp_path / "record.json")
    values = json.loads(path.read_text())
    values["schema_version"] = BENCHMARK_SCHEMA_VERSION + 1
    path.write_text(json.dumps(values))
    with pytest.raises(UsageError) as refused:
        load_benchmark_record(path)
    message = str(refused.value)
    assert f"schema version {BENCHMARK_SCHEMA_VERSION + 1}" in message and "newer" in message
    assert str(path) in message and "\n" not in message


@pytest.mark.parametrize("content, reason", [
    (json.dumps({"kind": "bench", "schema_version": 2, "phases": {}}), "is not a benchmark record"),  # a run record
    # Everything a record holds but the schema's name: not taken for one.
    (json.dumps({"schema_version": 1, "benchmark": "x", "parameters": {}, "comparisons": []}),
     "is not a benchmark record"),
    (json.dumps([1, 2, 3]), "is not a benchmark record"),
    ("{not json", "cannot read benchmark record"),
    ("", "cannot read benchmark record"),
])
def test_a_file_that_is_not_a_benchmark_record_is_refused(tmp_path, content, reason):
    path = tmp_path / "other.json"
    path.write_text(content)
    with pytest.raises(UsageError) as refused:
        load_benchmark_record(path)
    assert reason in str(refused.value) and str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert not is_benchmark_record(path)


def test_a_missing_file_and_a_malformed_record_are_refused(tmp_path):
    with pytest.raises(UsageError, match="cannot read benchmark record"):
        load_benchmark_record(tmp_path / "missing.json")
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"schema": BENCHMARK_SCHEMA, "schema_version": BENCHMARK_SCHEMA_VERSION,
                                "benchmark": "x", "parameters": {}}))
    with pytest.raises(UsageError, match="not a well-formed benchmark record"):
        load_benchmark_record(path)


def test_benchmark_table_shows_each_variant_with_its_ratios(tmp_path):
    calls: list[tuple[str, int]] = []
    loads = alternate({"go": scripted(calls, "go", {1: 2.0}, rows=4_000_000),
                       "bench": scripted(calls, "bench", {1: 4.0}, rows=4_000_000)}, 1, name="pinned sink W=2")
    queries = alternate({"go": scripted(calls, "go", {1: 2.0}, queries_per_second={1: 100.0}),
                         "ours": scripted(calls, "ours", {1: 1.0}, queries_per_second={1: 125.0})}, 1,
                        name="lastpoint")
    first = record_of(loads)
    first.path = tmp_path / "loader-parity.json"
    table = benchmark_table([first, record_of(queries, benchmark="query-parity")])
    lines = table.splitlines()
    assert lines[0].split()[:5] == ["file", "date", "benchmark", "comparison", "variant"]
    assert len(lines) == 2 + 4
    go_line, bench_line = lines[2], lines[3]
    assert "loader-parity.json" in go_line and "pinned sink W=2" in go_line and "baseline" in go_line
    assert " bench " in bench_line and "rows/s 0.50x" in bench_line and "1.000" in bench_line  # 1M rows/s
    ours_line = lines[5]
    assert "query-parity" in ours_line and " ours " in ours_line and "s 0.50x" in ours_line
    assert "queries_per_second 125 (1.25x)" in ours_line


def test_reading_records_imports_no_heavy_library():
    code = ("import sys, harness.records.benchmark_record; "
            "print(sorted(m for m in ('pandas', 'numba', 'matplotlib', 'questdb') if m in sys.modules))")
    answer = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "[]"


# Records the parity scripts wrote on an Intel Xeon (2026-11-25; tests/fixtures/records/README.md).
RECORDS = Path(__file__).resolve().parent / "fixtures" / "records"


def test_parity_scripts_print_where_each_side_stands(capsys):
    """The three parity scripts' summaries, printed again (benchmarks/reprint.py) from records they wrote
    (version 1, before records held intervals): each pair's paired interval and standing, and the tally
    against the acceptance."""
    from benchmarks import reprint

    for name in ("query-parity-xeon-overall-rate", "replay-parity-11-rounds-xeon-a898097",
                 "serialize-parity-xeon-11-rounds"):
        reprint.print_summary(load_benchmark_record(RECORDS / f"{name}.json"))
    printed = capsys.readouterr().out
    assert "double-groupby-all W=1" in printed and "(paired 0.98x [0.94-0.98] behind)" in printed
    assert ("queries/s, medians at least the baseline's in 20 of 32; paired intervals (coverage 96.9% or more): "
            "3 ahead, 28 level, 1 behind") in printed
    assert "1.09x (1.07x [1.02-1.11] ahead)" in printed  # replay's whole command into the sink, Go's over ours
    assert ("replay, whole command: medians at least the baseline's in 1 of 2; paired intervals (coverage 98.8% or "
            "more): 1 ahead, 1 level, 0 behind") in printed
    assert ("ours-p1 rows_per_second: medians at least the baseline's in 1 of 2; paired intervals (coverage 98.8% "
            "or more): 0 ahead, 2 level, 0 behind") in printed

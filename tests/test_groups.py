"""TSBS's interleaved generation groups: each group byte for byte as tsbs_generate_data prints it (golden files
in tests/golden/groups/), the groups together exactly the whole data set, a group's frames and row counts those
of its lines, and bench validating a group's rows against a real QuestDB."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.ingest.ilp import write_ilp
from harness.tsbs import groups, use_cases
from harness.tsbs.devops import generator as devops
from harness.tsbs.use_cases import make_spec
from helpers import assert_one_line_error, run_cli

GROUP_GOLDEN_DIR = Path(__file__).resolve().parent / "golden" / "groups"


def group_golden_cases() -> list[tuple[str, list[str], str]]:
    readme = (GROUP_GOLDEN_DIR / "README.md").read_text()
    return [(name, shlex.split(flags), md5) for name, flags, md5 in
            re.findall(r"^\| (\S+\.ilp\.gz) \| `([^`]+)` \| \d+ \| ([0-9a-f]{32}) \|$", readme, re.M)]


def test_golden_readme_lists_every_use_case_with_and_without_a_row_limit():
    cases = group_golden_cases()
    assert len(cases) == 6
    for use_case in use_cases.NAMES:
        limits = [any(flag.startswith("--max-data-points") for flag in flags) for _, flags, _ in cases
                  if f"--use-case={use_case}" in flags]
        assert sorted(limits) == [False, True], use_case


@pytest.mark.slow
@pytest.mark.parametrize("name,flags,md5", group_golden_cases(), ids=lambda value: str(value)[:40])
def test_generate_reproduces_tsbs_groups_byte_for_byte(tmp_path, name, flags, md5):
    golden = gzip.open(GROUP_GOLDEN_DIR / name).read()
    assert hashlib.md5(golden).hexdigest() == md5
    out = tmp_path / "group.ilp"
    # TSBS's own flags as they are, and small chunks so that groups cross chunk boundaries.
    result = run_cli("generate", *flags, "--fields", "long", "--chunk-rows", "333", "--file", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == golden


def spec_of(use_case: str, **flags):
    # devops's nine lines a host and epoch: fewer epochs for about as many lines.
    end = "2016-01-01T00:05:00Z" if use_case == "devops" else "2016-01-01T00:15:00Z"
    values = dict(seed=11, scale=4, timestamp_end=end, log_interval="10s")
    values.update(flags)
    return make_spec(use_case=use_case, **values)


def text_of(spec, chunk_rows: int = 250) -> bytes:
    """``generate --fields long``'s bytes of ``spec``, through the path generate takes."""
    use_case = use_cases.get(spec.use_case)
    out = io.BytesIO()
    jobs = use_case.text_jobs(spec, chunk_rows, "long", first_chunk_rows=70)
    if jobs is not None:
        for job in jobs:
            for piece in job()[1]:
                out.write(bytes(piece))
    else:
        write_ilp(use_case.chunks(spec, chunk_rows, "long", "category", first_chunk_rows=70), out, workers=1,
                  go_floats=use_case.go_floats("long"))
    return out.getvalue()


def table_of(line: bytes) -> str:
    return line.split(b",", 1)[0].split(b" ", 1)[0].decode()


def line_counts(lines: list[bytes]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        counts[table_of(line)] = counts.get(table_of(line), 0) + 1
    return counts


CASES = [("cpu-only", {}), ("cpu-only", {"row_limit": 217}), ("devops", {}), ("devops", {"row_limit": 800}),
         ("iot", {}), ("iot", {"row_limit": 1500})]


@pytest.mark.parametrize("use_case,flags", CASES)
@pytest.mark.parametrize("count", [2, 5])
def test_the_groups_together_are_the_whole_data_set(use_case, flags, count):
    whole_spec = spec_of(use_case, **flags)
    whole = text_of(whole_spec).splitlines(keepends=True)
    entry = use_cases.get(use_case)
    whole_rows = entry.table_rows(whole_spec)
    assert line_counts(whole) == {table: rows for table, rows in whole_rows.items() if rows}
    for group in range(count):
        spec = spec_of(use_case, **flags, interleaved_generation_group_id=group,
                       interleaved_generation_groups=count)
        lines = text_of(spec).splitlines(keepends=True)
        # Each line of the whole file in exactly one group, in the whole file's order.
        assert lines == whole[group::count]
        # The library gives both counts: the group's and, from its spec, the whole data set's.
        assert entry.table_rows(spec) == {table: line_counts(lines).get(table, 0) for table in whole_rows}
        assert entry.table_rows(spec.whole) == whole_rows
        assert spec.row_count == whole_spec.row_count


@pytest.mark.parametrize("use_case,flags", CASES)
def test_a_groups_frames_are_the_whole_frames_at_its_lines(use_case, flags):
    whole_spec = spec_of(use_case, **flags)
    spec = spec_of(use_case, **flags, interleaved_generation_group_id=1, interleaved_generation_groups=3)
    entry = use_cases.get(use_case)
    tables = [table_of(line) for line in text_of(whole_spec).splitlines()]

    def frames(of, chunk_rows):
        parts: dict[str, list[pd.DataFrame]] = {}
        for chunk in entry.chunks(of, chunk_rows, "long", "category", first_chunk_rows=50):
            for table, frame in chunk.items():
                parts.setdefault(table, []).append(frame)
        return {table: pd.concat(frames, ignore_index=True) for table, frames in parts.items()}

    whole, grouped = frames(whole_spec, 10**6), frames(spec, 130)
    for table in whole:
        # The table's rows among the whole file's lines, and which of them are line 1, 4, 7, ...
        positions = [index for index, name in enumerate(tables) if name == table]
        ranks = [rank for rank, index in enumerate(positions) if index % 3 == 1]
        expected = whole[table].iloc[ranks].reset_index(drop=True)
        if not ranks:
            assert table not in grouped
            continue
        pd.testing.assert_frame_equal(grouped[table], expected)


def test_a_sorted_group_is_the_group_in_time_order():
    # --sort takes TSBS's group first, then orders its lines by time (a stable sort), per the data set.
    flags = dict(interleaved_generation_group_id=2, interleaved_generation_groups=3)
    group = text_of(spec_of("iot", **flags), 200).splitlines()
    ordered = text_of(spec_of("iot", time_ordered=True, **flags), 200).splitlines()
    assert ordered == sorted(group, key=lambda line: int(line.rsplit(b" ", 1)[1]))
    assert ordered != group


def test_counts_of_a_long_range_are_arithmetic():
    # A year of 1 s epochs: counted, not generated (the bench validates against them).
    spec = make_spec(use_case="devops", seed=1, scale=7, timestamp_end="2017-01-01T00:00:00Z", log_interval="1s",
                     row_limit=10**9 + 3, interleaved_generation_group_id=5, interleaved_generation_groups=8)
    counts = use_cases.get("devops").table_rows(spec)
    assert sum(counts.values()) == groups.lines_before(10**9 + 3, 5, 8)
    # The period's shortcut counts what counting every epoch counts.
    for table, rows in zip(counts, devops.table_rows_before(spec, spec.row_count)):
        index = list(counts).index(table)
        args = (rows, index * 7, 7, 63, 5, 8)
        assert counts[table] == groups.epoch_table_count(*args)
        small = (rows % 10**4, *args[1:])
        assert groups.epoch_table_count(*small) == sum(
            groups.in_group((line // 7) * 63 + index * 7 + line % 7, 5, 8) for line in range(small[0]))
    whole = use_cases.get("devops").table_rows(spec.whole)
    assert all(abs(counts[table] - whole[table] / 8) <= 1 for table in whole)


@pytest.mark.parametrize("command,group,count,message", [
    (["generate"], 3, 3, "--interleaved-generation-group-id: incorrect interleaved groups configuration: id 3 >= "
                         "total groups 3"),
    (["generate"], 0, 0, "--interleaved-generation-groups: incorrect interleaved groups configuration: total "
                         "groups = 0"),
    (["generate"], -1, 2, "--interleaved-generation-group-id: must be 0 or more, got -1"),
    (["generate"], 0, -2, "--interleaved-generation-groups: incorrect interleaved groups configuration: total "
                          "groups = -2"),
    (["bench", "--row-count", "10"], 5, 2, "--interleaved-generation-group-id: incorrect interleaved groups "
                                           "configuration: id 5 >= total groups 2"),
])
def test_bad_groups_are_one_line_and_exit_code_2(command, group, count, message):
    result = run_cli(*command, "--scale", "2", f"--interleaved-generation-group-id={group}",
                     f"--interleaved-generation-groups={count}")
    assert_one_line_error(result, 2, message)


def bench_options(tmp_path, server, use_case: str, group: int, count: int, **overrides) -> BenchOptions:
    values = dict(use_case=use_case, seed=5, scale=6, row_count=2000, fields="long", worker_chunk_row_count=300,
                  reporting_period=0, send=True, sample_interval=0, results_dir=str(tmp_path / "results"),
                  validation_query_timeout=60, host=server.host, ilp_port=server.ilp_port,
                  http_port=server.http_port, interleaved_generation_group_id=group,
                  interleaved_generation_groups=count)
    values.update(overrides)
    return BenchOptions(**values)


@pytest.mark.slow
@pytest.mark.parametrize("use_case", use_cases.NAMES)
def test_bench_sends_groups_that_fill_the_whole_data_set(tmp_path, questdb_server, use_case, devnull):
    entry = use_cases.get(use_case)
    for table in entry.tables():
        questdb_server.client.drop_table(table)
    count = 3
    for group in range(count):
        options = bench_options(tmp_path, questdb_server, use_case, group, count, keep_table=group > 0,
                                workers=2 if group == 1 else None)
        record = run_bench(options, out=devnull)
        assert record.status == "ok" and record.mode.endswith(f"-group{group}of3")
        assert record.parameters["interleaved_generation_group_id"] == group
        expected = entry.table_rows(options.dataset())
        assert record.phases["send"].rows == sum(expected.values())
        # Each run validates what the server holds: the groups sent so far.
        held = {table: questdb_server.client.count(table) for table in entry.tables()}
        assert record.validation.visible_rows == record.validation.expected_rows == sum(held.values())
        if len(held) > 1:
            assert {table: count.visible for table, count in record.validation.tables.items()} == held
    whole = entry.table_rows(options.dataset().whole)
    assert {table: questdb_server.client.count(table) for table in entry.tables()} == whole
    if use_case != "iot":  # iot's row count counts points drawn, of which TSBS prints some
        assert sum(whole.values()) == 2000
    if entry.unique_keys:
        for table in entry.tables():
            (distinct,) = questdb_server.client.query(
                f"select count() from (select distinct hostname, timestamp from '{table}')")[1][0]
            assert distinct == whole[table], table

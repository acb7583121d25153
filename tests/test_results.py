"""harness.records.run_record: phase figures, the original report format, system info, results files, comparisons."""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
from datetime import datetime
from importlib import metadata

import pytest
from helpers import assert_one_line_error, run_cli

from harness.errors import UsageError
from harness.telemetry.phase import PhaseRecord
from harness.records.system_info import _versions, system_info
from harness.report.tables import comparison_table
from harness.records.run_record import SCHEMA_VERSION, RunRecord, Validation
from harness.records.store import load_results, write_results
from harness.report.tables import MIB, format_phase


def record(mode="send-dataframe-double-1t", serialize=None, send=None, status="ok", **parameters) -> RunRecord:
    """A run record as the runner builds it, with phases from (rows, bytes, seconds[, client CPU seconds])."""
    phases = {}
    if serialize:
        phases["serialize"] = PhaseRecord(*serialize)
    if send:
        phases["send"] = PhaseRecord(*send)
    return RunRecord(
        kind="bench", mode=mode, started_at="2026-11-22T11:05:01+00:00",
        parameters={"target": "questdb", "op": "dataframe", "fields": "double", "transport": "tcp",
                    "protocol_version": "auto", "workers": None, **parameters},
        seed=1, system={"cpu_affinity": [0, 1]}, phases=phases,
        validation=Validation(1000, 1000, 0.25) if send else None, status=status,
    )


def test_phase_record_derives_rates():
    phase = PhaseRecord(rows=3_000_000, bytes=300 * MIB, seconds=1.5, client_cpu_seconds=0.75)
    assert phase.rows_per_second == 2_000_000 and phase.mib_per_second == 200 and phase.client_cpu_cores == 0.5
    assert PhaseRecord(rows=0, bytes=0, seconds=0).rows_per_second == 0
    assert PhaseRecord(rows=1, bytes=1, seconds=1).client_cpu_cores is None


def test_record_round_trips_through_json(tmp_path):
    written = record(serialize=(1000, MIB, 1.0), send=(1000, MIB, 2.0, 1.5))
    path = write_results(written, tmp_path / "run.json")
    values = json.loads(path.read_text())
    assert values["schema_version"] == SCHEMA_VERSION
    # Each number once: no rates stored beside the counts, no second copy of the counters.
    assert set(values["phases"]["send"]) == {"rows", "bytes", "seconds", "client_cpu_seconds", "flushes", "workers",
                                             "tables", "resent_chunks", "outage_seconds", "ended_at"}
    assert "metrics" not in values and "workers" not in values
    (loaded,) = load_results([path])
    assert loaded == written and loaded.path == path


def test_version_1_records_still_load(tmp_path):
    """A record written before schema versions (the layout of the 2026-11-22 reference runs)."""
    old = {"harness_version": "0.1.0", "run_id": "abc", "started_at": "2026-11-22T11:05:01+00:00",
           "mode": "send-dataframe-double-2w", "parameters": {"target": "questdb", "workers": 2}, "seed": 1,
           "system": {"cpu_affinity": [0]}, "server": {"questdb_version": "9.3.4"},
           "phases": {"send": {"rows": 10, "bytes": 100, "seconds": 1.0, "rows_per_second": 10.0,
                               "mib_per_second": 0.0, "client_cpu_seconds": 0.5}},
           "workers": {"send": [{"rows": 6, "bytes": 60}, {"rows": 4, "bytes": 40}]},
           "time_to_visible_seconds": 0.1, "validated_row_count": 10, "metrics": {}, "status": "ok", "error": None}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (loaded,) = load_results([tmp_path / "old.json"])
    assert loaded.schema_version == 1 and loaded.phases["send"].client_cpu_cores == 0.5
    assert [w.rows for w in loaded.phases["send"].workers] == [6, 4]
    assert loaded.validation == Validation(10, 10, 0.1)
    assert "send-dataframe-double-2w" in comparison_table([loaded])


def test_version_2_records_load_as_they_are(tmp_path):
    """A record of schema 2 (before read runs): the same layout, without ``read``."""
    values = record(send=(1000, MIB, 2.0, 1.5)).to_dict()
    del values["read"]
    values["schema_version"] = 2
    (tmp_path / "v2.json").write_text(json.dumps(values, default=str))
    (loaded,) = load_results([tmp_path / "v2.json"])
    assert loaded.schema_version == 2 and loaded.read is None and loaded.phases["send"].rows == 1000


def test_version_4_records_load_without_a_profile(tmp_path):
    """A record of schema 4 (before ``--profile``): the same layout, without ``profile``."""
    values = record(send=(1000, MIB, 2.0, 1.5)).to_dict()
    values.pop("profile", None)
    values["schema_version"] = 4
    (tmp_path / "v4.json").write_text(json.dumps(values, default=str))
    (loaded,) = load_results([tmp_path / "v4.json"])
    assert loaded.schema_version == 4 and loaded.profile is None and loaded.phases["send"].rows == 1000


def test_a_newer_schema_is_refused_naming_its_version(tmp_path):
    (tmp_path / "new.json").write_text(json.dumps({"schema_version": 99, "phases": {}}))
    with pytest.raises(UsageError, match="new.json is a results file of schema version 99"):
        load_results([tmp_path / "new.json"])


def test_format_phase_is_the_original_format():
    serialized = PhaseRecord(rows=10_000_000, bytes=int(4652.50 * MIB), seconds=8.567)
    assert format_phase("Serialized", serialized) == (
        "Serialized:\n"
        "  10000000 rows in 8.57s: 1.17 mil rows/sec.\n"
        "  ILP Buffer size: 4652.50 MiB: 543.07 MiB/sec."
    )
    sent = PhaseRecord(rows=1_000, bytes=MIB // 2, seconds=0.5)
    assert format_phase("Sent", sent) == (
        "Sent:\n"
        "  1000 rows in 0.50s: 0.00 mil rows/sec.\n"
        "  ILP Buffer size: 0.50 MiB: 1.00 MiB/sec."
    )


def test_system_info_describes_this_process_and_machine():
    info = system_info()
    versions = info["versions"]
    assert versions["python"] == platform.python_version()
    for key, package in (("pandas", "pandas"), ("pyarrow", "pyarrow"), ("numpy", "numpy"), ("numba", "numba"),
                         ("questdb_client", "questdb")):
        assert versions[key] == metadata.version(package)
    assert info["cpu_affinity"] == sorted(os.sched_getaffinity(0))
    assert info["cpu_count"] == os.cpu_count() and info["cpu_model"]
    assert info["hostname"] == socket.gethostname() and info["kernel"] == platform.release()
    assert info["memory_total_bytes"] > 0
    assert datetime.fromisoformat(info["date_utc"]).utcoffset().total_seconds() == 0
    json.dumps(info)  # it goes into a JSON file as it is


def test_versions_read_wheels_and_ask_importlib_metadata_for_the_rest(tmp_path, monkeypatch):
    # A wheel's directory (its name normalized), a package installed otherwise (egg-info: only
    # importlib.metadata reads it), one installed nowhere; the first found on sys.path wins, as for imports.
    (tmp_path / "first" / "Foo_Bar-1.2.3.dist-info").mkdir(parents=True)
    (tmp_path / "second" / "foo_bar-9.9.dist-info").mkdir(parents=True)
    (tmp_path / "second" / "baz.egg-info").mkdir()
    (tmp_path / "second" / "baz.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: baz\nVersion: 4.5\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "first"), str(tmp_path / "second")])
    assert _versions({"a": "foo.bar", "b": "baz", "c": "absent"}) == {"a": "1.2.3", "b": "4.5", "c": None}


def test_write_results_default_path_and_round_trip(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = write_results(record(send=(1000, MIB, 1.0)))
    second = write_results(record(mode="serialize-dataframe-double-1t", serialize=(1000, MIB, 1.0)))
    third = write_results(record(mode="serialize-dataframe-double-1t", serialize=(1000, MIB, 1.0)))
    assert first.parent == second.parent == tmp_path.joinpath("results").relative_to(tmp_path)
    assert re.fullmatch(r"\d{8}T\d{6}Z-send-dataframe-double-1t\.json", first.name), first.name
    assert re.fullmatch(r"\d{8}T\d{6}Z-serialize-dataframe-double-1t(-2)?\.json", third.name), third.name
    assert len({first, second, third}) == 3  # a run in the same second never overwrites another
    loaded = load_results([first, second])
    assert loaded[0].phases["send"].rows == 1000 and loaded[0].path == first
    assert "path" not in json.loads(first.read_text())


def test_write_results_to_an_explicit_path(tmp_path):
    path = write_results(record(), path=tmp_path / "deep" / "run.json")
    assert path == tmp_path / "deep" / "run.json" and json.loads(path.read_text())["status"] == "ok"


def test_load_results_refuses_what_is_not_a_results_file(tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"hello": 1}))
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(UsageError, match="other.json is not a harness results file"):
        load_results([tmp_path / "other.json"])
    with pytest.raises(UsageError, match="cannot read results file .*broken.json"):
        load_results([tmp_path / "broken.json"])
    with pytest.raises(UsageError, match="cannot read results file .*missing.json"):
        load_results([tmp_path / "missing.json"])


def test_comparison_table_rows_and_ratios(tmp_path):
    paths = [
        write_results(record(serialize=(1_000_000, 100 * MIB, 1.0), send=(1_000_000, 100 * MIB, 2.0, 1.5)),
                      path=tmp_path / "a.json"),
        write_results(record(mode="send-dataframe-long-2w", serialize=(1_000_000, 100 * MIB, 0.5),
                             send=(1_000_000, 100 * MIB, 0.5), fields="long", transport="http",
                             protocol_version="2", workers=2, target="sink"), path=tmp_path / "b.json"),
        write_results(record(mode="replay", status="failed"), path=tmp_path / "c.json"),
    ]
    lines = comparison_table(load_results(paths)).splitlines()
    assert len(lines) == 5 and set(lines[1]) <= {"-", " "}
    header = lines[0].split()
    assert header[:11] == ["file", "date", "mode", "target", "op", "fields", "transport", "proto", "workers", "cpus",
                           "rows"]
    first, second, failed = (line.split() for line in lines[2:])
    assert first[:11] == ["a.json", "2026-11-22T11:05:01", "send-dataframe-double-1t", "questdb", "dataframe", "double",
                          "tcp", "auto", "1", "2", "1000000"]
    assert first[11:] == ["1.00", "0.50", "0.75", "50.0", "0.25", "ok", "ser", "1.00x", "send", "1.00x"]
    assert second[3:10] == ["sink", "dataframe", "long", "http", "2", "2", "2"]
    assert second[11:] == ["2.00", "2.00", "-", "200.0", "0.25", "ok", "ser", "2.00x", "send", "4.00x"]
    assert failed[0] == "c.json" and failed[-2:] == ["failed", "-"] and failed.count("-") >= 5


def test_compare_command_prints_the_table(tmp_path):
    paths = [str(write_results(record(serialize=(1000, MIB, 1.0)), path=tmp_path / f"{name}.json"))
             for name in ("x", "y")]
    result = run_cli("compare", *paths)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == comparison_table(load_results(paths))
    assert_one_line_error(run_cli("compare", str(tmp_path / "nope.json")), 2, "nope.json")

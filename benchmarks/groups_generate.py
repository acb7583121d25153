"""What a TSBS interleaved generation group costs `generate`: the whole data set and one group of N written to
/dev/null, alternated, medians and ratios (a script, not a test).

    .venv/bin/python benchmarks/groups_generate.py --rounds 3 [--use-case cpu-only --scale 4000 --rows ...]
        [--groups 4 --groups 8] [--json PATH]

A group generates the whole data set, as TSBS does, and keeps every N-th line, so its time is the whole
simulation's plus printing or serializing only what it keeps (cpu-only's printer prints the group's rows alone;
iot keeps the group's records before printing; devops serializes the group's frames). Figures per variant: wall seconds, the rate in rows of the WHOLE data set per second (`whole rows/s`,
comparable across variants: how fast a client gets through the data set) and the group's own rows per second.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from benchmarks.alternate import alternate, write_record
from harness.commands.generate import GenerateOptions, run_generate
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.tsbs import use_cases


def main(rounds: int = typer.Option(3, min=1), use_case: str = "cpu-only", scale: int = typer.Option(4000, min=1),
         seed: int = 1, rows: int = typer.Option(20_000_000, min=1, help="Rows of the whole data set."),
         fields: str = "long", groups: list[int] = typer.Option([4, 16], "--groups", min=2),
         workers: int | None = typer.Option(None, min=1),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    record = BenchmarkRecord("groups-generate", parameters=dict(
        rounds=rounds, use_case=use_case, scale=scale, seed=seed, rows=rows, fields=fields, groups=groups,
        workers=workers))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {use_case} --fields {fields}, seed {seed}, scale "
          f"{scale}, {rows} rows of the whole data set, to /dev/null")

    def generate(count: int):
        def measure(round_number: int) -> Measurement:
            options = GenerateOptions(use_case=use_case, seed=seed, scale=scale, fields=fields,
                                      max_data_points=rows, timestamp_end="2100-01-01T00:00:00Z",
                                      file="/dev/null", workers=workers, interleaved_generation_group_id=0,
                                      interleaved_generation_groups=count)
            spec = options.spec(rows)
            kept = sum(use_cases.get(use_case).table_rows(spec).values())
            started, cpu_started = time.perf_counter(), time.process_time()
            run_generate(options)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            whole = spec.row_count
            print(f"round {round_number} {variant_name(count):<12} {seconds:7.2f}s  whole {whole / seconds / 1e6:6.2f} "
                  f"M rows/s  group {kept / seconds / 1e6:6.2f} M rows/s")
            return Measurement(seconds=seconds, rows=kept, client_cpu_seconds=cpu,
                               extra={"whole_rows_per_second": whole / seconds})
        return measure

    variants = {variant_name(count): generate(count) for count in [1, *groups]}
    comparison = alternate(variants, rounds, baseline=variant_name(1))
    record.comparisons.append(comparison)
    for name in variants:
        figure = comparison.summary[name].get("whole_rows_per_second")
        if figure:
            print(f"median {name}: {figure.median / 1e6:.2f} M whole rows/s, {figure.ratio:.2f} x the whole file's")
    write_record(record, json_path)


def variant_name(count: int) -> str:
    return "whole" if count == 1 else f"group 0 of {count}"


if __name__ == "__main__":
    typer.run(main)

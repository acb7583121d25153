"""How much of TSBS's iot data arrives out of order, and how far back: per table (what a time-ordered table
sees: lines behind the newest timestamp so far), per truck (lines before that truck's previous line), and
in TSBS's stream of points (lines printed after a later point). Reads the simulation's records, so the
figures are those of the bytes `generate --use-case iot` and `tsbs_generate_data` print.

    python benchmarks/iot_out_of_order.py --seed 123 --scale 10 --timestamp-end 2016-01-01T01:00:00Z
"""

from __future__ import annotations

import argparse

import numpy as np

from harness.tsbs.iot.kernels import _EPOCH, _KIND, _TRUCK
from harness.tsbs.iot.schema import TABLES
from harness.tsbs.iot.use_case import IotSimulator, max_points
from harness.tsbs.use_cases import make_spec


def records_of(spec) -> np.ndarray:
    simulator, blocks = IotSimulator(spec), []
    while not simulator.finished:
        blocks.append(simulator.next_records(1_000_000))
    return np.concatenate(blocks)


def share(count: int, of: int) -> str:
    return f"{count} ({count / of:.2%})" if of else "0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--timestamp-start", default="2016-01-01T00:00:00Z")
    parser.add_argument("--timestamp-end", default="2016-01-01T01:00:00Z")
    parser.add_argument("--log-interval", default="10s")
    flags = parser.parse_args()
    spec = make_spec(use_case="iot", seed=flags.seed, scale=flags.scale, timestamp_start=flags.timestamp_start,
                     timestamp_end=flags.timestamp_end, log_interval=flags.log_interval)
    records = records_of(spec)
    kind, truck, epoch = records[:, _KIND], records[:, _TRUCK], records[:, _EPOCH]
    print(f"iot seed {spec.seed}, scale {spec.scale}, {spec.epochs} epochs: {len(records)} lines of "
          f"{max_points(spec)} points drawn ({len(records) / max_points(spec):.1%} printed)")
    point = (epoch * len(TABLES) + kind) * spec.scale + truck  # its place in TSBS's stream of points
    lag = np.maximum.accumulate(point) - point
    late = lag > 0
    print(f"  stream: {share(int(late.sum()), len(lag))} lines printed after a later point; behind it by "
          f"median {np.median(lag[late]) if late.any() else 0:.0f}, max {lag.max()} points "
          f"(an epoch is {len(TABLES) * spec.scale} points)")
    for index, table in enumerate(TABLES):
        mine = kind == index
        table_epochs, table_trucks = epoch[mine], truck[mine]
        behind = np.maximum.accumulate(table_epochs) - table_epochs
        order = np.lexsort((np.arange(len(table_trucks)), table_trucks))
        same_truck = table_trucks[order][1:] == table_trucks[order][:-1]
        back = (table_epochs[order][:-1] - table_epochs[order][1:])[same_truck]
        stepped = back > 0
        print(f"  {table}: {int(mine.sum())} lines; behind the table's newest timestamp: "
              f"{share(int((behind > 0).sum()), len(behind))}, by at most {behind.max()} intervals; "
              f"before the truck's previous line: {share(int(stepped.sum()), len(back))}, by median "
              f"{np.median(back[stepped]) if stepped.any() else 0:.0f}, max {back[stepped].max() if stepped.any() else 0} "
              f"intervals")


if __name__ == "__main__":
    main()

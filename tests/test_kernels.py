"""The generator's compiled kernels: the ahead-of-time build and numba's just-in-time kernels agree, the
text printer agrees with the questdb client's serializer, `generate --fields long` starts without numba,
pandas or the client when the build is there, and without a build it falls back to the same bytes."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.ingest.ilp import write_ilp
from harness.ingest.ordered_write import write_in_order
from harness.tsbs import kernel_cache, kernels, numba_cache
from harness.tsbs.cpu_only import generator as cpu_only
from harness.tsbs.go.seed import seeded_source
from harness.tsbs.ilp_text import RowPrinter
from harness.tsbs.use_cases import make_spec

# The smallest golden file: generate's flags and the md5 of TSBS's bytes (shared/tsbs-golden/README.md).
GOLDEN_FLAGS = ["--seed", "1", "--scale", "3", "--timestamp-end", "2016-01-02T00:00:00Z", "--log-interval", "60s",
                "--fields", "long"]
GOLDEN_MD5 = "99dc1ff65e72be0f54c2ae3c697b3c18"


@pytest.fixture(scope="module")
def ahead_of_time():
    """The build for the current sources (`make setup` makes it; built here if it is missing)."""
    module = kernel_cache.load_ahead_of_time()
    if module is None:
        kernel_cache.build_ahead_of_time()
        module = kernel_cache.load_ahead_of_time()
    return module


def generate(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`generate` under ``python -X importtime`` (its import log on stderr)."""
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "harness", "generate", *args],
                          capture_output=True, timeout=300, env=env)


def imported_packages(stderr: bytes) -> set[str]:
    return {match.split(".")[0] for match in re.findall(r"^import time:.*\| +(\S+)$", stderr.decode(), re.M)}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 123, 2**31 + 5])
def test_ahead_of_time_and_just_in_time_kernels_agree(ahead_of_time, seed):
    scale, epochs = 37, 25
    results = []
    for module in (ahead_of_time, kernels):
        words, cursor = seeded_source(seed)
        states = np.empty((scale, 10))
        tag_codes = np.empty((scale, cpu_only.HOST_TAG_DRAWS), dtype=np.int64)
        module.create_hosts(words, cursor, scale, cpu_only.DATACENTER_OFFSETS, cpu_only.DATACENTER_COUNTS, states,
                            tag_codes)
        first = np.empty((10, scale))
        module.walk_epochs(words, cursor, states, False, first)
        later = np.empty((10, epochs * scale))
        module.walk_epochs(words, cursor, states, True, later)
        results.append((tag_codes, first, later, words, cursor))
    for aot, jit in zip(*results):
        np.testing.assert_array_equal(aot, jit)
    assert len(np.unique(results[0][2])) > epochs * scale  # the walk moved


@pytest.mark.slow
def test_both_builds_print_any_int64_alike(ahead_of_time):
    """cpu-only's values are 0..100, but the printer is TSBS's integer printer: negative numbers, every digit
    count and both ends of int64 (as doubles: the printer truncates doubles) come out as Python prints them."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.integers(-10**15, 10**15, 300), -(10 ** np.arange(16)), 10 ** np.arange(16),
                             [0, -1, 1, 99.99, -99.99, 2**62, -2**63]]).astype(np.float64)
    values = values[: len(values) // 2 * 2].reshape(2, -1)
    scale = 3
    lines = [b"m,host=%s x=%di,y=%di %d\n" % (b"abc"[row % scale:row % scale + 1], int(values[0, row]),
                                              int(values[1, row]), -10**18 + row // scale * 10**17)
             for row in range(values.shape[1])]
    for module in (ahead_of_time, kernels):
        printer = RowPrinter("m", {"host": ["a", "b", "c"]}, ["x", "y"], start_ns=-10**18, interval_ns=10**17,
                             kernels=module)
        assert printer.print_rows(0, values).tobytes() == b"".join(lines)
        assert printer.print_rows(5, values[:, 5:]).tobytes() == b"".join(lines[5:])  # a chunk mid-epoch


@pytest.mark.parametrize("chunk_rows,first_chunk_rows,workers", [(1, None, 1), (7, 3, 2), (60, 1, 3),
                                                                   (599, 25, 2), (5000, 4000, 2)])
def test_the_text_printer_writes_the_clients_bytes(chunk_rows, first_chunk_rows, workers):
    """Two independent serializers of the same rows: ours (text straight from the walk) and the questdb
    client's (from DataFrames)."""
    spec = make_spec(seed=99, scale=23, timestamp_end="2016-01-01T00:10:00Z", log_interval="7s")
    ours, clients = io.BytesIO(), io.BytesIO()
    rows, written = write_in_order(cpu_only.text_jobs(spec, chunk_rows, first_chunk_rows), ours, workers)
    write_ilp(cpu_only.chunks(spec, 50, "long"), clients)
    assert ours.getvalue() == clients.getvalue()
    assert (rows, written) == (spec.row_count, len(ours.getvalue())) and rows > 1000


def test_generate_long_starts_without_numba_pandas_or_the_client(ahead_of_time):
    result = generate(*GOLDEN_FLAGS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert hashlib.md5(result.stdout).hexdigest() == GOLDEN_MD5
    packages = imported_packages(result.stderr)
    assert "harness" in packages and "numpy" in packages
    assert not packages & {"numba", "llvmlite", "pandas", "pyarrow", "questdb"}, sorted(packages)


@pytest.mark.slow
def test_without_a_build_generate_runs_the_just_in_time_kernels(tmp_path):
    """A fresh kernel folder (``NUMBA_CACHE_DIR``) whose build fails (no working C compiler): the build says
    so in one line and exits 0, and `generate` prints TSBS's bytes through numba."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "CC": shutil.which("false")}
    build = subprocess.run([sys.executable, "-m", "harness.tsbs.kernel_cache"], capture_output=True, text=True,
                           timeout=300, env=env)
    assert build.returncode == 0
    assert build.stderr.startswith("ahead-of-time kernels: not built, generate uses numba's just-in-time kernels (")
    assert build.stderr.count("\n") == 1, build.stderr
    result = generate(*GOLDEN_FLAGS, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert hashlib.md5(result.stdout).hexdigest() == GOLDEN_MD5
    assert "numba" in imported_packages(result.stderr)
    assert not list((tmp_path / "cache").rglob("*.so"))
    assert list((tmp_path / "cache").rglob("*.nbi")), "the just-in-time kernels were not cached in the folder"


def test_the_kernel_folder_is_named_by_every_kernel_source(tmp_path, monkeypatch):
    """numba alone would keep running cached kernels after an edit of go/rand.py (whose draws they inline),
    and an old ahead-of-time build would keep its old code: both live in a folder named by a digest of every
    kernel source, so any edit compiles anew."""
    import numba

    folder = numba_cache.use_source_keyed_cache()
    assert numba.config.CACHE_DIR == str(folder) == str(numba_cache.kernel_folder())
    assert kernel_cache.ahead_of_time_path().parent == folder
    copy = tmp_path / "tsbs"
    copy.mkdir()
    for name in numba_cache.KERNEL_SOURCES:  # paths below harness/tsbs/
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(kernel_cache.__file__).parent / name, copy / name)
    monkeypatch.setattr(numba_cache, "_HERE", copy)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    same = numba_cache.kernel_folder()
    names = set()
    for name in numba_cache.KERNEL_SOURCES:
        original = (copy / name).read_bytes()
        (copy / name).write_bytes(original + b"\n# edited\n")
        names.add(numba_cache.kernel_folder().name)
        (copy / name).write_bytes(original)
    assert same.name == folder.name and same.parent == tmp_path / "cache"
    assert len(names) == len(numba_cache.KERNEL_SOURCES) and same.name not in names


@pytest.mark.parametrize("bad", ["a b", "a,b", "a=b", "a\\b", "a\nb", 'a"b'])
def test_the_printer_refuses_text_that_ilp_would_need_escaped(bad):
    RowPrinter("m", {"t": ["x", "y"]}, ["f"], 0, 1)
    for measurement, host_tags, fields in (("m", {"t": ["x", bad]}, ["f"]), ("m", {bad: ["x"]}, ["f"]),
                                           ("m", {"t": ["x"]}, [bad]), (bad, {"t": ["x"]}, ["f"])):
        with pytest.raises(ValueError, match="escaping"):
            RowPrinter(measurement, host_tags, fields, 0, 1)

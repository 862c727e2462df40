"""tools/cpu_per_test.py, the plugin that says where `make test`'s CPU time goes: it sums per file, largest first,
and the machine's busy time it reads grows while this process computes."""

import sys

import pytest

from tools.cpu_per_test import by_file, machine_cpu_seconds


def test_rows_sum_per_file_largest_first():
    rows = [("tests/a.py::x", 1.0, 2.0), ("tests/b.py::y[1]", 3.0, 1.0), ("tests/a.py::z", 0.5, 0.5),
            ("notebooks/01.ipynb::Cell 0", 0.25, 0.25)]
    assert by_file(rows) == [("tests/b.py", 3.0, 1.0, 1), ("tests/a.py", 1.5, 2.5, 2),
                             ("notebooks/01.ipynb", 0.25, 0.25, 1)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_busy_time_grows_while_this_process_computes():
    before = machine_cpu_seconds()
    total = 0
    for i in range(3_000_000):
        total += i * i
    assert total > 0 and machine_cpu_seconds() - before >= 0.05

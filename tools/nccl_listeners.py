"""Print what one NCCL rank started by ``launch`` listens on: with launch's default and with NCCL's own.

Usage: python -m tools.nccl_listeners   (needs a CUDA GPU; ``tools/record_gpu.sh`` runs it)

NCCL's own default (every interface but loopback and docker*) is what a launch without ``NCCL_SOCKET_IFNAME``
did; the test ``tests/test_rendezvous.py::test_nccl_bootstrap_listens_on_loopback_only`` checks the first case.
The rank function comes from the tests' workers (``tests/parallel_workers.py``), which the test shares.
"""

import os
import sys

from d2lmp.parallel.launch import launch
from tools.notebooks import ROOT


def main() -> int:
    sys.path.insert(0, str(ROOT / "tests"))  # the tests' rank functions are plain modules there
    import parallel_workers as W

    for label, interface in (("launch's default", None), ("NCCL's own default", "^docker,lo")):
        os.environ.pop("NCCL_SOCKET_IFNAME", None)
        if interface is not None:
            os.environ["NCCL_SOCKET_IFNAME"] = interface
        (report,) = launch(W.rank_listeners, 1, backend="nccl", timeout=120)
        print(f"{label}: NCCL_SOCKET_IFNAME={report['nccl_interface']!r}")
        print(f"  rank listens on     {sorted(report['rank'])}")
        print(f"  launcher listens on {sorted(report['launcher'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

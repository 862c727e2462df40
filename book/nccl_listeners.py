"""Print what one NCCL rank started by ``launch`` listens on: with launch's default and with NCCL's own.

Needs a CUDA GPU; ``book/record_gpu.sh`` runs it. NCCL's own default (every interface but
loopback and docker*) is what a launch without ``NCCL_SOCKET_IFNAME`` did; the test
``tests/test_rendezvous.py::test_nccl_bootstrap_listens_on_loopback_only`` checks the first case.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import parallel_workers as W  # noqa: E402

from d2lmp.parallel.launch import launch  # noqa: E402


def main() -> int:
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

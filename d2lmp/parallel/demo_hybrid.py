"""torchrun entry point: a 2 x 2 data x tensor grid of process groups trains to one device's parameters.

    python -m torch.distributed.run --standalone --nproc-per-node 4 -m d2lmp.parallel.demo_hybrid

Every rank checks its own result; a rank that finds a mismatch says so on stderr and exits
with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

from ..checks.ranks import check_hybrid
from .launch import exit_after_torchrun, report_errors, run_from_env

__all__ = ["TOLERANCE", "main"]

TOLERANCE = 1e-5


def main() -> int:
    """Run the check on this rank; return the exit status (0: everything matches, 1: a mismatch)."""
    rank, world, errors = run_from_env(check_hybrid)
    return report_errors("demo_hybrid", rank, world, errors, TOLERANCE)


if __name__ == "__main__":
    exit_after_torchrun(main())

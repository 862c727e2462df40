"""torchrun entry point: column- and row-split linear layers give the full layer's outputs.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.parallel.demo_tensor

Every rank checks its own result; a rank that finds a mismatch says so on stderr and exits
with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

from ..checks.ranks import check_tensor_parallel
from .launch import exit_after_torchrun, report_errors, run_from_env

__all__ = ["TOLERANCE", "main"]

TOLERANCE = 1e-5


def main() -> int:
    """Run the check on this rank; return the exit status (0: everything matches, 1: a mismatch)."""
    rank, world, errors = run_from_env(check_tensor_parallel)
    return report_errors("demo_tensor", rank, world, errors, TOLERANCE)


if __name__ == "__main__":
    exit_after_torchrun(main())

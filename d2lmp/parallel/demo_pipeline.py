"""torchrun entry point: every pipeline schedule (naive, GPipe, 1F1B) gives the unsplit model's gradients and outputs.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.parallel.demo_pipeline

Every rank checks its own result; a rank that finds a mismatch says so on stderr and exits
with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

from ..checks.ranks import check_pipeline
from .launch import exit_after_torchrun, report_errors, run_from_env

__all__ = ["TOLERANCE", "main"]

TOLERANCE = 1e-5


def main() -> int:
    """Run the check on this rank; return the exit status (0: everything matches, 1: a mismatch)."""
    rank, world, errors = run_from_env(check_pipeline)
    return report_errors("demo_pipeline", rank, world, errors, TOLERANCE)


if __name__ == "__main__":
    exit_after_torchrun(main())

"""torchrun entry point: every pipeline schedule (naive, GPipe, 1F1B, interleaved 1F1B) equals the unsplit model.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.parallel.demo_pipeline

Every rank checks its own result; a rank that finds a mismatch says so on stderr and exits
with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

from ..checks.ranks import check_interleaved_pipeline, check_pipeline
from .launch import exit_after_torchrun, report_errors, run_from_env

__all__ = ["TOLERANCE", "check_every_schedule", "main"]

TOLERANCE = 1e-5


def check_every_schedule(rank: int, world: int) -> dict[str, float]:
    """The plain schedules' check and the interleaved one's, in one run."""
    return {**check_pipeline(rank, world), **check_interleaved_pipeline(rank, world)}


def main() -> int:
    """Run the checks on this rank; return the exit status (0: everything matches, 1: a mismatch)."""
    rank, world, errors = run_from_env(check_every_schedule)
    return report_errors("demo_pipeline", rank, world, errors, TOLERANCE)


if __name__ == "__main__":
    exit_after_torchrun(main())

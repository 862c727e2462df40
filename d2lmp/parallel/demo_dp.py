"""torchrun entry point: every data-parallel version gives the single-process gradients.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.parallel.demo_dp

Every rank checks its own gradients; a rank that finds a mismatch says so on stderr and
exits with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

import sys

from ..checks.ranks import check_data_parallel
from .launch import exit_after_torchrun, run_from_env

__all__ = ["TOLERANCE", "main"]

TOLERANCE = 1e-5


def main() -> int:
    """Run the check on this rank; return the exit status (0: every version matches, 1: a mismatch)."""
    rank, world, errors = run_from_env(check_data_parallel)
    if rank == 0:
        for version, err in errors.items():
            print(f"{version:<20} max |grad - single-process grad| on {world} ranks: {err:.2e}  "
                  f"matches: {err < TOLERANCE}")
    bad = {version: err for version, err in errors.items() if not err < TOLERANCE}
    if bad:
        print(f"demo_dp: MISMATCH on rank {rank} of {world}: "
              + ", ".join(f"{version} differs from the single-process gradients by {err:.2e} (tolerance {TOLERANCE:g})"
                          for version, err in bad.items()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    exit_after_torchrun(main())

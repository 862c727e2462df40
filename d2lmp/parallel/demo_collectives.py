"""torchrun entry point: our collectives equal torch.distributed's.

    python -m torch.distributed.run --standalone --nproc-per-node 4 -m d2lmp.parallel.demo_collectives

Every rank checks its own results; a rank that finds a mismatch says so on stderr and
exits with status 1, so torchrun (and a shell script or CI job around it) reports a failure.
"""

import sys

from ..checks.ranks import check_collectives
from .launch import exit_after_torchrun, run_from_env

__all__ = ["main"]


def main() -> int:
    """Run the check on this rank; return the exit status (0: every collective matches, 1: a mismatch)."""
    rank, world, ok = run_from_env(check_collectives)
    if rank == 0:
        for name, good in ok.items():
            print(f"{name:<28} equals torch.distributed on {world} ranks: {good}")
    bad = [name for name, good in ok.items() if not good]
    if bad:
        print(f"demo_collectives: MISMATCH on rank {rank} of {world}: {', '.join(bad)} "
              "differ from torch.distributed's result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    exit_after_torchrun(main())

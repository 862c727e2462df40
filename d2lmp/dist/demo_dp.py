"""torchrun entry point: every data-parallel version gives the single-process gradients.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m d2lmp.dist.demo_dp
"""

from .launch import exit_after_torchrun, run_from_env
from .workers import check_data_parallel


def main() -> None:
    rank, world, errors = run_from_env(check_data_parallel)
    if rank == 0:
        for version, err in errors.items():
            print(f"{version:<20} max |grad - single-process grad| on {world} ranks: {err:.2e}  "
                  f"matches: {err < 1e-5}")


if __name__ == "__main__":
    main()
    exit_after_torchrun()

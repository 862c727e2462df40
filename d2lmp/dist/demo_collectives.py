"""torchrun entry point: our collectives equal torch.distributed's.

    python -m torch.distributed.run --standalone --nproc-per-node 4 -m d2lmp.dist.demo_collectives
"""

from .launch import exit_after_torchrun, run_from_env
from .workers import check_collectives


def main() -> None:
    rank, world, ok = run_from_env(check_collectives)
    if rank == 0:
        for name, good in ok.items():
            print(f"{name:<28} equals torch.distributed on {world} ranks: {good}")


if __name__ == "__main__":
    main()
    exit_after_torchrun()

"""Run our collectives on one NCCL rank per GPU with NCCL's log on: the recorded NCCL_DEBUG=INFO excerpt of notebook 12.

Needs a CUDA GPU; ``tools/record_gpu.sh`` runs it and keeps its output as ``nccl_debug_<gpu>_<date>.txt``, which
``d2lmp.recorded.nccl_log`` reads once copied into ``d2lmp/recorded/``. NCCL logs to the ranks' standard output,
so the file holds NCCL's lines between this script's first line (the command) and its last (the check's result).
With one GPU the log shows NCCL's version and set-up, but no transport between GPUs.
"""

import os
import sys

from d2lmp.checks.ranks import check_collectives
from d2lmp.parallel.launch import launch

LOG = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,TUNING"}


def main() -> int:
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0:
        print("python -m tools.nccl_debug needs a CUDA GPU: none here", file=sys.stderr)
        return 1
    os.environ.update(LOG)  # read by NCCL in every rank, which launch spawns after this
    settings = " ".join(f"{k}={v}" for k, v in LOG.items())
    print(f"{settings} python -m tools.nccl_debug: our collectives on {gpus} NCCL rank(s), one per GPU", flush=True)
    results = launch(check_collectives, gpus, backend="nccl", timeout=300)
    same = all(all(r.values()) for r in results)
    print(f"our collectives equal NCCL's on {gpus} rank(s): {same}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

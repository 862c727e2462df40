"""The rank runtime: code that runs on real processes, one per rank, through torch.distributed.

``launch`` starts the ranks (gloo on CPUs, NCCL with one GPU per rank); the other modules are the collectives
built from send/recv, the parallel strategies, checkpoints and recovery, each checked against one device. The
formulas and schedules they follow live in the torch-free ``d2lmp.model``. Import the submodules explicitly.
"""

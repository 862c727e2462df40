"""Multi-device training on real processes through torch.distributed.

``launch`` starts one process per rank (gloo on CPUs, NCCL with one GPU per rank);
``collectives`` builds all-reduce and friends from send/recv; ``data_parallel`` splits
the minibatch over ranks. Import the submodules explicitly.
"""

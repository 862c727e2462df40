"""d2lmp.model: every formula, assumed number and vocabulary of the series, as plain arithmetic.

Nothing here imports torch, numpy or the rank runtime (``d2lmp.parallel``): the package runs on the standard
library alone, beside the torch-free sourced tables it reads (``d2lmp.gpu_specs``, ``d2lmp.topology``,
``d2lmp.bibliography``). It holds the series' one vocabulary of strategies and choices (``vocabulary``), the
step-time and memory terms both cost models share (``terms``), the layer-table cost model of notebooks 10-17
(``costmodel``, ``dp_model``, ``model_size``, reading rows through ``layer_rows``), the cluster model and planner of
notebook 20 (``cluster``, also reachable as ``d2lmp.scale``),
the α-β model of a collective (``alpha_beta``, ``nccl_published``, ``allreduce_steps``), pipeline schedules
(``pipeline_schedule``, ``timeline``), a transformer's accounting (``transformer_accounting``,
``transformer_stage_memory``), the training state's bytes (``training_state``), learning-rate scaling
(``lr_scaling``) and the checkpoint interval (``checkpoint_interval``). Import the submodules explicitly.
"""

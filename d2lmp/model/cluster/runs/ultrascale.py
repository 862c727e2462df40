"""The Ultra-Scale Playbook's configuration sweep: 1B-80B models on 1-64 nodes of eight H100s, every measured layout.

Source: Tazi et al. (2025), "The Ultra-Scale Playbook", section "Finding the Best Training Configuration /
Benchmarking thousands of configurations": "All the following benchmarks were conducted with a sequence length of
4,096 and a global batch size of 1M tokens" on "1-64 nodes of 8xH100s". The per-configuration results are the
hover texts of the Space's interactive figure ``assets/data/benchmarks/benchmarks_interactive.html`` (a Plotly
figure: one panel per model, 1B, 3B, 8B and 80B, one row per node count), read from the copy of the Space's files
in GitHub vinjn/nanotron-ultrascale-playbook (commit 924e4d0). Each text prints Nodes, MBS, GradAcc, GBS, DP, PP,
TP, ZeRO, MFU, tok/s/gpu, tok/s and GPU memory. A configuration whose figures print "nan" (not measured, or failed:
the page does not say which) is left out; 1,751 configurations were measured, five of them two or three times
(each measurement is a row). The metric is tokens/s per GPU; MFU is kept in the note; ``memory_gb`` is the GPU memory
printed, converted from GiB (below). The rows are in ``ultrascale_sweep.csv`` (one line per measurement, the columns as
printed).

A sweep cell is a model and a node count; its rows are the layouts measured there, for the planner's score. 26 of
the 28 cells have measurements: none is printed for 80B on 1 or 2 nodes (the section: with fewer nodes "the model
doesn't fit at all").

The model shapes are not printed with the sweep; they are read from the script that generated its configurations,
huggingface/nanotron ``scripts/scaling_benchmarks.py`` (commit e24d248, "Generates configs and SLURM scripts for
scaling benchmarks used in https://huggingface.co/spaces/nanotron/ultrascale-playbook"): ``model_configs`` (layers,
hidden, heads, MLP) 1B (16, 2,048, 32, 8,192), 3B (28, 3,072, 32, 8,192), 8B (32, 4,096, 32, 14,336) and 70B (80,
8,192, 64, 28,672), vocabulary 131,072, KV heads = heads (``NUM_KEY_VALUE_HEADS = None``), SwiGLU, embeddings tied
below an MLP of 10,000 (1B and 3B). With untied embeddings of 131,072 and full multi-head attention the 70B entry
has 79.99B parameters by the script's own ``estimate_num_params``: the sweep's "80B". Check: MFU × 989 TFLOP/s ÷
tokens/s gives the FLOPs per token of nanotron's ``get_flops`` (``models/llama.py``: all matmuls, attention
without the causal half, the LM head once, times 3; no recomputation) for these shapes to 0.1 % in the figure's
first row, and within 0.89-1.21 of it in every row printing an MFU of 1 % or more: 1,357 of those 1,432 rows match,
within 2 %, either ``get_flops`` or ``get_flops`` with the LM head's ``6·h·V`` FLOPs per token counted twice (the page
does not say which count a row used). So the tokens/s per GPU, the MFU, the 989 TFLOP/s peak and the printed tok/s
(tokens/s per GPU × 8 × nodes in every row, to the printed rounding) agree: no unit differs between them.

Two things of the sweep's runs published by the same sources, which the records carry. The network: the Playbook
measures its cluster's bus bandwidth (figure ``pp_comm_bandwidth.html``, "Communication Bandwidth by Number of Nodes
(size=256MB)", medians): all-reduce 436, 362, 160, 99.6, 84.7, 64.9 and 32.9 GB/s on 1, 2, 4, 8, 16, 32 and 64 nodes;
all-gather 250, 185, 119, 69, 55, 28 and 11 GB/s (reduce-scatter within 3 % of it); the 5th percentile of the all-reduce
falls to 12.5 GB/s on 64 nodes. Each record carries the table of medians on 2 to 64 nodes (``NETWORK``,
``network_measured``), so that each group reads the figure for a collective over as many ranks (a TP 16 group: the
two-node figure on any cluster size), at most its own NICs where it has fewer members a node than GPUs
(``steptime.group_bytes_per_s``). The gradients: the base configuration (below) sets ``accumulate_grad_in_fp32: true``
(the script's own ``ACCUMULATE_GRAD_IN_FP32 = True`` is defined but unused), and nanotron's ``get_fp32_accum_hook``
(``optim/gradient_accumulator.py``) reduces the FP32 accumulation buffers, four bytes a parameter
(``fp32_grad_reduce``). For the 1B model with data parallelism alone (micro-batch 1, no ZeRO), the published step time
less the model's without these two is close to the all-reduce of four bytes a parameter at the measured rate, not
hidden: 0.104 s against 0.106 s on 8 nodes, 0.116 s against 0.126 s on 16, 0.145 s against 0.165 s on 32 (1.34B
parameters: the shapes above, tied embeddings, full multi-head attention). So the records say ``dp_overlap=False`` (the
reduction after the backward) and ``zero1_all_reduce=True``. With ZeRO 1 that is nanotron's code: with FP32 accumulation
and a ZeRO stage it builds no DDP (``trainer.py``, ``make_ddp``), and after the last micro-batch calls
``sync_gradients_across_dp`` with ``reduce_scatter=False``, a blocking all-reduce of the FP32 buffers, before the
optimizer gathers the 16-bit weights. With ZeRO 0 its DDP hook (``get_fp32_accum_hook``) launches each bucket's
all-reduce asynchronously during the last backward, and why that does not hide is not known; the records say it does
not, a choice made on the sweep's rows: its ZeRO 0 rows with data parallelism alone are few (seven), at a median of
1.80, 1.33 and 1.25 of their published speed on 8, 16 and 32 nodes with the model's bucketed overlap, 1.47, 0.94 and
0.94 without; over every validation row, 599 in band with it and 614 without, sweep picks 14 and 18 of 25 (the other
rows agree only with the reading of the measured network that ``steptime._network`` makes, chosen on them too). What the
records cannot carry: repeated measurements of one layout differ up to 4.7-fold (8B on 2 nodes, DP 2 TP 8 ZeRO 1,
micro-batch 1, GradAcc 128: 3,449 and 737 tokens/s per GPU), and of 306 layouts measured with ZeRO 0 and with ZeRO 1
(307 pairs of measurements: one layout has two ZeRO 1 runs), 82 pairs differ more than twofold, where the model's two
predictions differ at most 1.34-fold.

Precision, attention and recomputation are not printed either; they are read from what the script builds on: its
base configuration ``examples/config_tiny_llama_bench.yaml`` (last version, commit 67c5ebb6, December 2024: ``dtype:
bfloat16``, FP32 gradient accumulation, no ``recompute_layer``, so nanotron's default ``False`` in
``config/parallelism_config.py``) and nanotron's Llama attention, ``flash_attn_varlen_func`` (``models/llama.py``):
"bf16", "flash", recompute "none". Dropout: none; nanotron's Llama (``models/llama.py``, 67c5ebb6) has no dropout layer
and calls its attention kernels with ``dropout_p=0.0``. The same configuration sets the pipeline schedule, ``pp_engine:
1f1b`` (the model's), and DDP's 25 MB buckets; ``create_config`` in the script sets ``tp_mode`` ``REDUCE_SCATTER`` with
``tp_linear_async_communication`` (sequence parallelism, as ``convert`` assumes for TP > 1). GPUs: H100s, taken as the
SXM part (80 GB; not stated). In twelve rows the printed GBS (256) is not DP·MBS·GradAcc (1B on 32 nodes,
DP 32 TP 8 MBS 1: GradAcc 128, which gives 4,096 sequences), and the page does not say which figure is wrong; ten
of the twelve layouts also appear, with the same DP, TP, PP, ZeRO and MBS, at a GradAcc that gives 256. Their
configuration is not known, so they are information (``RunRecord.contradiction``), the rule being the printed
figures' disagreement, not the outcome. Judged as printed (global_batch 256), the six of them without a pipeline come
out at 2.4-5.6 times their published speed; ``tests/test_runs_ultrascale.py`` lists the twelve.

How each row was measured, and why many pipelined rows are not comparable. The launch script of the benchmark branch
(``run_multinode.sh``, branch nouamane/bench2, commit 67c5ebb6) sets ``NANOTRON_BENCHMARK=1``, under which the trainer
logs the throughput of one step (its third; the fourth in today's trainer) and exits: every row is one step, timed
once. The section says that tensor parallelism first outperformed pipeline parallelism and "After optimizing our PP
code, it became the faster option", and "Lessons learned on benchmarking" lists multi-node pipeline performance among
the work the sweep needed; the branch's last commit (67c5ebb6, 27 December 2024, "pp") waits for every pipeline metadata
send and receive by polling with 0.1 s sleeps (``parallel/pipeline_parallel/p2p.py``, ``_send_meta`` and
``_recv_meta``, until the work completes; the parent commit 4e075ab1 has no sleep); the page does not say which rows
ran which code. The rows show two populations: 578 of the 1,271
pipelined rows take 0.6 s or more per pipeline slot (step time ÷ (micro-batches + stages − 1), with micro-batches =
GBS ÷ (DP · MBS)), a median near 1.05 s for the 1B, 3B and 8B models alike (1.0-1.2 s for micro-batches of 1 to 16),
and the same pipelined layout measured with ZeRO 0 and with ZeRO 1 differs by a median factor of 4.0 on 4 nodes and
4.7 on 8 (ZeRO 1 the faster), where ZeRO changes only the optimizer's sharding (without a pipeline the two agree
within 2 % at the median on 1-8 nodes, 5 % on 16, 11 % on 32 and 25 % on 64). So every record says
``pipeline_sends="unknown"``: a pipelined row's speed depends on which pipeline code it ran, which the page does not
name, and is printed as information (``RunRecord.speed_unknown``); its memory is still judged, and the 487 rows
without a pipeline are judged in full. The criterion is the layout (PP > 1), not the outcome: of the 1,271 pipelined
rows (1,270 predicted; 3B with PP 32 is not representable), it takes the 262 the model predicts within 0.8-1.25 out
of the count with the rest, and ``d2lmp bench scale`` prints what the model scores on them.

What the memory figure counts. In benchmark mode world rank 0 writes each row to a CSV file (``helpers.py``,
``log_throughput`` and ``create_table_log``, 67c5ebb6): a GPU of the first pipeline stage and of tensor rank 0, with two
memory columns, "Mem Alloc (GB)" and "Mem Res (GB)", ``torch.cuda.max_memory_allocated()`` and ``max_memory_reserved()``
divided by ``1024**3``: GiB. The printed "GPU memory" is the reserved one: in its first five steps the trainer resets
the peak statistics after the forward and backward passes (``trainer.py``, ``training_step``, through ``logging.py``'s
``log_memory``), so at the third step the allocated peak covers only the optimizer's step, which does not grow with the
micro-batch as the printed figure does (1B on 2 nodes, DP 4 TP 4 ZeRO 0: 10.3 GiB at one sequence, 67.0 at sixteen),
while the reserved memory, reset too, starts again from what the allocator holds, which it does not release (no
``empty_cache``): the blocks the forward and backward needed. So the records convert the figure to 10⁹ bytes (×
2³⁰/10⁹), say ``memory_measure="reserved"`` and ``memory_stage="first"``, and the model's first stage is compared with
it. The allocator's cache beyond the bytes in use is in the figure and not in the model, which counts the bytes
allocated (and a fixed allowance for the CUDA context and communication buffers, which PyTorch's figure leaves out, in
part: how much is not known). The loss: nanotron casts the logits to FP32 (``models/llama.py``, ``cast_to_fp32``) and
its cross-entropy subtracts their maximum out of place (``parallel/tensor_parallel/functional.py``,
``_ShardedCrossEntropy.forward``), so on the last stage two FP32 copies of the logits, 8 bytes a logit, are alive at the
loss where the model otherwise counts the 4 of the softmax kept for the backward (``logit_bytes=8``); the 16-bit logits
are freed when the model's forward returns, before the loss runs.

The calibration table of the two fixed times (``efficiency.FIXED_COSTS``; ``use="calibration"``), 48 rows without a
pipeline: the 26 on one node (the host's launch time; 9 of them, at one sequence a micro-batch, wait for it) and the 22
whose one tensor-parallel group is the whole cluster, TP 16 on two nodes and TP 32 on four (the network's α; the
Playbook measured the bus bandwidth over the same nodes, with 256 MB messages). Every other row is validation. Why a
fixed time a block: with tensor parallelism 8 and one sequence a micro-batch, a block's forward and backward take a
median of 4.6-4.8 ms (published step ÷ (micro-batches · layers)) for the 1B, 3B and 8B models alike on 1 to 32 nodes
(4.4-4.6 on one node), though an 8B block does 3.3 times the FLOPs of a 1B block and the model without the host gives
the GPU 1.9-3.8 ms for it (``block_times``; notebook 20): a floor that does not follow the GPU's work (at TP 4 the 1B
and 3B sit at the same 4.8 ms; the 8B's own work, 6.0 ms in the model, lies above it at 5.7). Nanotron runs eagerly (no
``torch.compile`` or CUDA graph at 67c5ebb6): the host launches every kernel one at a time, the forward from Python, the
backward from PyTorch's autograd engine, which calls back into Python for nanotron's own layers. The host's launches are
the likeliest cause, read, not measured: no profile of these runs exists, and nanotron's
``CUDA_DEVICE_MAX_CONNECTIONS=1`` (one hardware queue, kernels run in the order issued) could add to it. One parameter
stands for it, fitted on one node's rows and tested on the other nodes'.

Why an α across nodes: at one sequence a micro-batch a block takes about 8 ms at TP 16 and 15-19 ms at TP 32 for the 1B,
3B and 8B models alike (4.6-4.8 at TP 8; medians over the node counts), a cost that does not follow the bytes and
roughly doubles with the group. Under sequence parallelism nanotron's linears
(``parallel/tensor_parallel/functional.py``, 67c5ebb6; the configurations set ``tp_linear_async_communication`` and keep
``tp_recompute_allgather``'s default, True) all-gather before each column-parallel linear and reduce-scatter after each
row-parallel one, and in the backward reduce-scatter the column-parallel inputs' gradients and all-gather both the
row-parallel outputs' gradients and the column-parallel inputs again: ten rings a block, each of ``t − 1`` steps, 150
steps at TP 16 and 310 at TP 32. One α a step across nodes accounts for both sizes: one parameter, ``network_us``,
fitted on the groups that are the whole cluster and tested on TP 16 on 4 to 64 nodes and TP 32 on 8 to 64. The sweep's
64-node rows are the least consistent: most of its TP 16 layouts there run 55-75 ms a block whatever the micro-batch,
where a few run 11-12 (the same layout, 3B at two sequences, 11.1 ms with ZeRO 0 and 57.9 with ZeRO 1).
"""

from __future__ import annotations

import csv
from importlib.resources import files

from d2lmp.model.cluster.hardware import NetworkMeasurement
from d2lmp.model.cluster.run_record import RunRecord, batch_contradiction

__all__ = ["RECORDS", "MODEL_NAMES", "NETWORK", "cell"]

_GIB = 2**30  # bytes in the GiB the printed memory is in (nanotron's ``/ 1024**3``)
_WHERE = "assets/data/benchmarks/benchmarks_interactive.html (Benchmarking thousands of configurations)"
# (layers, hidden, heads, MLP) of scripts/scaling_benchmarks.py's model_configs; "80B" is its 70B entry.
# The Playbook's pp_comm_bandwidth.html: median bus bandwidth (GB/s, 256 MB) by node count, all-reduce and all-gather.
_ALL_REDUCE_GBPS = {2: 361.7, 4: 160.1, 8: 99.6, 16: 84.7, 32: 64.9, 64: 32.9}
_GATHER_GBPS = {2: 184.6, 4: 119.0, 8: 69.0, 16: 55.0, 32: 28.0, 64: 11.0}
NETWORK = tuple(NetworkMeasurement(n, _ALL_REDUCE_GBPS[n], _GATHER_GBPS[n]) for n in sorted(_ALL_REDUCE_GBPS))
_SHAPES = {"1B": (16, 2048, 32, 8192), "3B": (28, 3072, 32, 8192), "8B": (32, 4096, 32, 14336),
           "80B": (80, 8192, 64, 28672)}
MODEL_NAMES = {(layers, hidden): name for name, (layers, hidden, _, _) in _SHAPES.items()}  # the sweep's names

# (model, nodes, MBS, GradAcc, GBS, DP, PP, TP, ZeRO, MFU %, tok/s/gpu, GPU memory GB) as the hover texts print them,
# one line each in ``ultrascale_sweep.csv`` beside this module.
Row = tuple[str, int, int, int, int, int, int, int, int, float, int, float]


def _read_rows() -> tuple[Row, ...]:
    text = files("d2lmp.model.cluster.runs").joinpath("ultrascale_sweep.csv").read_text()
    rows = []
    for line in list(csv.reader(text.splitlines()))[1:]:
        model, ints, mfu, tokens, memory = line[0], [int(v) for v in line[1:9]], line[9], line[10], line[11]
        nodes, mbs, grad_acc, gbs, dp, pp, tp, zero = ints
        rows.append((model, nodes, mbs, grad_acc, gbs, dp, pp, tp, zero, float(mfu), int(tokens), float(memory)))
    return tuple(rows)


_ROWS: tuple[Row, ...] = _read_rows()


def cell(model: str, nodes: int) -> str:
    """The sweep cell a row belongs to: '8B on 16 nodes'."""
    return f"{model} on {nodes} node{'s' if nodes > 1 else ''}"


def _record(row: Row) -> RunRecord:
    model, nodes, mbs, grad_acc, gbs, dp, pp, tp, zero, mfu, tokens, memory = row
    layers, hidden, heads, ffn = _SHAPES[model]
    tied = ffn < 10_000  # scripts/scaling_benchmarks.py: tie_word_embeddings = intermediate_size < 10_000
    return RunRecord(
        source="tazi2025ultrascale", where=f"{_WHERE}, panel '{model}', row '{nodes} node(s)', hover text",
        row=f"{cell(model, nodes)}: DP {dp} TP {tp} PP {pp} ZeRO {zero} MBS {mbs} GradAcc {grad_acc}",
        use="calibration" if pp == 1 and (nodes == 1 or tp == 8 * nodes) else "validation",  # FIXED_COSTS' table
        layers=layers, hidden=hidden, heads=heads, ffn=ffn, gated_mlp=True, tied_embeddings=tied,
        seq=4096, vocab=131072, dropout=False, gpu="H100-SXM", recompute="none", attention="flash", precision="bf16",
        gpus=8 * nodes, metric="tokens_per_s_per_gpu", value=tokens, tp=tp, pp=pp, dp=dp, zero=zero,
        micro_batch=mbs, global_batch=gbs, memory_gb=memory * _GIB / 1e9, memory_measure="reserved",
        memory_stage="first", network_measured=NETWORK, fp32_grad_reduce=True,
        dp_overlap=False, zero1_all_reduce=True, logit_bytes=8,
        counts_recompute=None,
        pipeline_sends="unknown",
        contradiction=batch_contradiction(gbs, dp, mbs, grad_acc),
        note=f"Printed: MFU {mfu} %.{' Embeddings tied to the LM head.' if tied else ''}")


RECORDS: tuple[RunRecord, ...] = tuple(_record(r) for r in _ROWS)

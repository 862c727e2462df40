"""BigScience's BLOOM-176B training: the run's throughput and the 3D-layout sweep on 384 A100 80GB that chose it.

Source: the repository bigscience-workshop/bigscience, folder ``train/tr11-176B-ml`` (read at commit 9e64edec).
``README.md``: the run (70 layers, hidden 14,336, 112 heads, sequence 2,048, vocabulary 250,680 padded to 250,880 in its
"embedding size" note, TP 4, PP 12, DP 8, MBS 2 on 48 nodes of 8; BF16; "--pp-partition-method
'type:transformer|embedding'", which gives the tied embedding and the output layer one transformer block's slot each, so
70 + 2 slots over 12 stages), with three measured points: line 663 (iteration 85376, GBS 2,048, 104.70 s, 149.77
TFLOPs), line 245 (GBS 16, 15.23 s, 8.04 TFLOPs) and line 272 (GBS 192 with MBS 1, 73 TFLOPs).
``chronicles-prequel.md``: section "Best TFLOPs" (lines 356-432: a 20B and a 200B model on 8-160 GPUs in FP16 and BF16,
iteration time from the log lines, recorded as step time; ``BEST``) and the sweep of sections "48 node contenders"
through "Rebalancing layers" (lines 599-964), each table under a line naming NHIDDEN and NLAYERS; columns Nodes, Size,
[ZS], [Layers], DP, TP, PP, MBS, [NHEADS], GBS, Mem, Sec/it, TFLOPs, Notes (the date). ``_SWEEP`` keeps each row's cells
with the shape read above its table: "line|hidden|layers|heads|nodes|size|zero|dp|tp|pp|mbs|gbs|mem
GB|sec/it|TFLOPs|date".

Read: the sweep's and the run's figure is TFLOPs per GPU as Megatron-DeepSpeed logs it after the fix of "TFLOPs
calculation improved" (prequel line 590, before every sweep row kept here): 96·B·s·l·h²·(1 + s/6h + V/16lh) per
iteration over the iteration time and GPUs, i.e. hardware FLOPs counting the recomputed forward of full activation
checkpointing (README, "Throughput": the 4·2 coefficient), with the logits; every row kept here reproduces it from its
Sec/it to 0.1 % with V = 250,880 (``tests/test_runs_bigscience.py``), except prequel line 670 (ZeRO stage 0, run "on the
special branch", 3.9 % below). Mem is "max memory used by the first (last) nodes with the word embedding matrix"
(prequel line 394), read from nvidia-smi (line 962): a GPU's peak including the allocator's cache
(``memory_measure="device"``, the fuller stage). Its unit is taken as 10⁹ bytes, as printed ("GB"), and is open:
nvidia-smi prints MiB, and read as GiB 38 rows, not 61, would lie within ±20 % of the model; the page's "max is 77GB" of
an 80 GB A100 settles neither. Blank or "GB" is None. OOM rows are recorded as out-of-memory; rows with no result are
left out. ZeRO stage 1 (DeepSpeed, the ZS column where printed, else 1); attention is Megatron's materialised softmax
(the fused softmax kernel's head constraints,
prequel line 743); full activation checkpointing (README, "Throughput"; the logged TFLOPs reproduce with its
recomputation factor, 96 = 24·4). No sequence parallelism, and the checkpointed activations are not partitioned: the
run's script ``tr11-176B-ml.slurm`` sets ``--checkpoint-activations`` and ``--deepspeed-activation-checkpointing``
without ``--partition-activations``, and the fork of Megatron-DeepSpeed it ran has no sequence-parallel option
(``megatron/arguments.py``), so DeepSpeed's ``checkpoint()`` keeps each layer's whole input on every tensor rank
(``save_args_for_backward``; "resulting in a replication of activations across MP GPUs", ``train/memory.md``):
``sequence_parallel=False``. The sweep's rows follow the same flags in the script's February versions
(``train/tr11-200B-ml/tr11-200B-ml.slurm``, a16f0ea of 2022-02-25, FP16 with ZeRO 1; 1a13e1f of 2022-02-28, BF16 with
ZeRO 0). From "Rebalancing layers" on, and in the run, the BF16 optimizer is "written to accumulate gradients in fp32
... The additional memory usage is 4bytes x params and it's not sharded across gpus" (prequel, that section; the
README, "Deepspeed config", says it in other words): ``fp32_grad_buffer``. The 16-bit gradients stay beside it, and
its all-reduce casts the buffer to BF16 (DeepSpeed's ``communication_data_type``, branch ``olruwase/bf16-updates``,
77b649d1), so the model's reduction stays 16-bit. Those BF16 rows ran DeepSpeed's stage 0 with the optimizer
sharding its own state as stage 1 does ("implements its own ZeRO Stage 1", README), recorded as ZeRO 1. The
gradients are reduced after the last micro-batch's backward, not behind it (``dp_overlap=False``): Megatron-DeepSpeed
runs its model as a DeepSpeed pipeline, whose training schedule issues ``ReduceTiedGrads``, ``ReduceGrads`` and
``OptimizerStep`` at the batch's last step (DeepSpeed, ``deepspeed/runtime/pipe/schedule.py``, ``TrainSchedule``).

Assumed: heads 64 where a table has no NHEADS column ("all NHEADS=64 (above too)", prequel line 680, and "NHEADS=64"
above "GBS Variations"); FP16 before "Rebalancing layers" and BF16 from it on (that section: "from now on the testing is
happening with BF16 optimizer ... compared to fp16"), where the embedding partition above also starts; before it the
partition method is not stated. Prequel lines 658-660 ("Max possible TFLOPs"): the table prints GBS 2048 but the line
above it says GBS=512 and the TFLOPs follow from 512, which is recorded. Line 648 prints DP 8 on 40 nodes (8·8·10 = 640
GPUs); its TFLOPs follow from 320 GPUs, so dp is left unknown."""

from __future__ import annotations

from d2lmp.model.cluster.run_record import Metric, Precision, RunRecord

__all__ = ["RECORDS", "RUN", "BEST", "SWEEP_ROWS", "VOCAB"]

SOURCE = "bigscience_tr11"
PREQUEL = "train/tr11-176B-ml/chronicles-prequel.md"
README = "train/tr11-176B-ml/README.md"
SEQ, VOCAB = 2048, 250880
BF16_FROM = 895  # prequel line of "## Rebalancing layers": BF16 and the embedding's own pipeline slots from here
# The sections of the prequel the sweep rows sit in, by their first row's line.
_SECTIONS = ((607, "48 node contenders"), (686, "Final round comparison"), (724, "NHEADs comparison"),
             (775, "GBS Variations"), (830, "Another round of NHEADS"), (867, "Batchsize Warmup"), (881, "Re-do"),
             (906, "Rebalancing layers"))
_NOTES = {
    658: "the table prints GBS 2048; the line above it says GBS=512, from which its TFLOPs follow",
    659: "the table prints GBS 2048; the line above it says GBS=512, from which its TFLOPs follow",
    660: "the table prints GBS 2048; the line above it says GBS=512, from which its TFLOPs follow",
    648: "DP printed 8, but 40 nodes with TP 8, PP 10 leave DP 4; its TFLOPs follow from 320 GPUs",
    670: "ZeRO stage 0 on another branch: its TFLOPs are 3.9 % below what its Sec/it gives",
}

_SWEEP: tuple[str, ...] = (
    "607|14336|72|64|48|181B|1|4|8|12|1|2048|29|143.31|112.49|02-21",
    "608|14336|72|64|48|181B|1|4|8|12|2|2048|37|134.02|120.29|02-21",
    "609|14336|72|64|48|181B|1|4|8|12|4|2048|49|123.69|130.34|02-21",
    "610|14336|72|64|48|181B|1|4|8|12|8|2048|69|129.26|124.72|02-21",
    "615|14336|72|64|48|181B|1|8|8|6|1|2048|38|139.82|115.31|02-21",
    "616|14336|72|64|48|181B|1|8|8|6|2|2048|44|131.02|123.05|02-21",
    "617|14336|72|64|48|181B|1|8|8|6|4|2048|56|121.48|132.71|02-21",
    "632|13824|84|64|48|196B|1|4|8|12|2|2048|39|143.89|121.45|02-21",
    "633|13824|84|64|48|196B|1|4|8|12|4|2048|52|133.12|131.27|02-21",
    "634|13824|84|64|48|196B|1|8|8|6|2|2048|65|141.41|123.58|02-21",
    "635|13824|84|64|48|196B|1|8|8|6|4|2048|56|130.31|134.11|02-21",
    "648|13824|80|64|40|187B|1|8|8|10|4|2048||147.04|135.92|02-21",
    "658|14336|6|64|1|18B|1|1|8|1|2|512|54|130.43|143.48|02-21",
    "659|14336|6|64|1|18B|1|1|8|1|2|512|54|119.19|157.02|02-21",
    "660|14336|10|64|1|18B|1|1|8|1|1|512|80|205.52|142.59|02-21",
    "669|14336|72|64|48|181B|1|4|8|12|2|2048|37|120.29|134.02|02-21",
    "670|14336|72|64|48|181B|0|4|8|12|2|2048|72|137.34|113.02|02-21",
    "686|12288|96|64|48|177B|1|8|8|6|2|2048||136.73|115.73|02-23",
    "687|12288|96|64|48|177B|1|8|8|6|4|2048||122.96|128.69|02-23",
    "695|13312|84|64|48|182B|1|4|8|12|4|2048||125.52|129.29|02-23",
    "696|13312|84|64|48|182B|1|8|8|6|2|2048||135.55|119.72|02-23",
    "697|13312|84|64|48|182B|1|8|8|6|4|2048||122.93|132.00|02-23",
    "704|13824|78|64|48|182B|1|8|8|6|4|2048||121.28|133.93|02-23",
    "711|14336|72|64|48|181B|1|4|8|12|4|2048||123.79|130.24|02-23",
    "712|14336|72|64|48|181B|1|8|8|6|4|2048||120.85|133.40|02-23",
    "724|14336|72|16|48|181B|1|8|8|6|4|2048|54|121.03|133.20|02-24",
    "725|14336|72|32|48|181B|1|8|8|6|4|2048|55|124.01|130.00|02-23",
    "726|14336|72|64|48|181B|1|8|8|6|4|2048|55|120.18|134.15|02-23",
    "727|14336|72|112|48|181B|1|8|8|6|4|2048|53|138.72|116.21|02-23",
    "728|14336|72|128|48|181B|1|8|8|6|4|2048|55|124.89|129.08|02-23",
    "729|14336|72|256|48|181B|1|8|8|6|4|2048|54|132.85|121.35|02-24",
    "738|13824|78|64|48|182B|1|8|8|6|4|2048||121.28|133.93|02-23",
    "739|13824|78|96|48|182B|1|8|8|6|4|2048|59|124.75|130.21|02-23",
    "740|13824|78|128|48|182B|1|8|8|6|4|2048|54|162.72|99.82|02-23",
    "750|13312|84|64|48|182B|1|8|8|6|4|2048||122.93|132.00|02-23",
    "751|13312|84|128|48|182B|1|8|8|6|4|2048||129.17|125.63|02-23",
    "759|12288|96|64|48|177B|1|8|8|6|4|2048||122.96|128.69|02-24",
    "760|12288|96|96|48|177B|1|8|8|6|4|2048||145.40|108.83|02-24",
    "761|12288|96|128|48|177B|1|8|8|6|4|2048||129.42|122.27|02-24",
    "775|14336|72|64|48|181B|1|8|8|6|4|1568|56|113.01|109.22|02-25",
    "776|14336|72|64|48|181B|1|8|8|6|4|2048|55|114.11|141.27|02-25",
    "777|14336|72|64|48|181B|1|8|8|6|6|2016|66|123.57|128.43|02-25",
    "778|14336|72|64|48|181B|1|4|8|12|4|1568||92.75|133.08|02-25",
    "779|14336|72|64|48|181B|1|4|8|12|4|2048|49|117.07|137.70|02-25",
    "780|14336|72|64|48|181B|1|4|8|12|2|1568||99.93|123.51|02-25",
    "781|14336|72|64|48|181B|1|4|8|12|2|2048||128.82|125.15|02-25",
    "788|14336|72|64|48|181B|1|6|8|8|4|2016|52|113.16|140.24|02-25",
    "789|14336|72|64|48|181B|1|12|8|4|2|2016|53|125.52|126.43|02-25",
    "790|14336|72|64|48|181B|1|12|8|4|4|2016|59|114.81|138.22|02-25",
    "791|14336|72|64|48|181B|1|24|8|2|1|2016|65|145.45|109.11|02-25",
    "792|14336|72|64|48|181B|1|24|8|2|2|2016|76|136.13|116.58|02-25",
    "793|14336|72|64|48|181B|1|48|8|1|1|2016|OOM|||02-25",
    "800|14336|72|64|48|181B|1|8|4|12|4|2048|60|111.89|144.08|02-25",
    "801|14336|72|64|48|181B|1|8|4|12|2|2048|44|110.48|145.92|02-25",
    "802|14336|72|64|48|181B|1|8|4|12|2|2048|38|113.54|141.99|02-25",
    "803|14336|72|64|48|181B|1|16|4|6|4|2048|75|117.11|137.66|02-25",
    "804|14336|72|64|48|181B|1|16|4|6|2|2048|57|111.71|144.31|02-25",
    "805|14336|72|64|48|181B|1|16|2|12|2|2048|63|112.50|143.30|02-25",
    "806|14336|72|64|48|181B|1|32|2|6|2|2048|OOM|||02-25",
    "807|14336|72|64|48|181B|1|32|2|6|1|2048|OOM|||02-25",
    "808|14336|72|64|48|181B|1|8|2|24|1|2048|44|119.53|134.88|02-25",
    "809|14336|72|64|48|181B|1|8|2|24|2|2048|53|122.75|131.33|02-25",
    "810|14336|72|64|48|181B|1|4|4|24|1|2048||130.60|123.44|02-25",
    "818|12288|96|64|48|177B|1|8|1|48|1|2048|58|142.17|111.30|02-25",
    "830|13824|78|64|48|182B|1|8|4|12|1|2048||148.24|109.57|02-26",
    "831|13824|78|64|48|182B|1|8|4|12|2|2048|48|103.51|156.92|02-26",
    "832|13824|78|96|48|182B|1|8|4|12|2|2048|48|107.12|151.64|02-26",
    "833|13824|78|128|48|182B|1|8|4|12|2|2048||147.41|110.19|02-26",
    "834|13824|78|64|48|182B|1|8|4|12|4|2048||106.72|152.21|02-26",
    "835|13824|78|96|48|182B|1|8|4|12|4|2048||110.31|147.25|02-26",
    "836|13824|78|128|48|182B|1|8|4|12|4|2048||153.90|105.54|02-26",
    "837|13824|78|96|48|182B|1|8|8|6|4|2048||118.12|137.51|02-26",
    "838|13824|78|128|48|182B|1|8|8|6|4|2048||156.84|103.56|02-26",
    "845|14336|72|64|48|181B|1|8|4|12|2|2048||110.42|146.00|02-26",
    "846|14336|72|128|48|181B|1|8|4|12|2|2048||114.02|141.39|02-26",
    "847|14336|72|128|48|181B|1|8|4|12|4|2048||137.53|117.23|02-26",
    "848|14336|72|64|48|181B|1|8|8|6|4|2048||113.95|141.47|02-26",
    "849|14336|72|128|48|181B|1|8|8|6|4|2048||116.06|138.90|02-26",
    "856|13312|84|64|48|182B|1|8|4|12|2|2048||103.82|156.46|02-26",
    "857|13312|84|64|48|182B|1|8|4|12|4|2048||113.21|143.34|02-26",
    "858|13312|84|64|48|182B|1|8|8|6|2|2048||129.61|125.21|02-26",
    "867|13824|78|96|48|182B|1|8|4|12|2|512||35.77|113.52|02-26",
    "868|13824|78|96|48|182B|1|8|4|12|2|1024||59.65|136.15|02-26",
    "869|13824|78|96|48|182B|1|8|4|12|2|1536||83.11|146.59|02-26",
    "870|13824|78|96|48|182B|1|8|4|12|2|2048||107.12|151.64|02-26",
    "881|13824|78|96|48|182B|1|8|8|6|2|2048||133.57|121.61|02-27",
    "882|13824|78|96|48|182B|1|8|8|6|4|2048|59|118.24|137.38|02-27",
    "884|13824|78|96|48|182B|1|16|4|6|4|2048|75|115.55|140.57|02-27",
    "891|12288|106|96|48|195B|1|8|4|12|2|2048|44|112.69|154.86|02-27",
    "892|12288|106|64|48|195B|1|8|4|12|2|2048||110.96|157.27|02-27",
    "906|12288|106|64|48|195B|1|8|4|12|2|2048|67|116.54|149.75|02-28",
    "907|12288|106|96|48|195B|1|8|4|12|2|2048|65|118.79|146.90|02-28",
    "908|12288|106|128|48|195B|1|8|4|12|2|2048|67|121.42|143.73|02-28",
    "909|12288|106|96|48|195B|1|8|4|12|4|2048|79|120.34|145.01|02-28",
    "917|12288|100|64|48|184B|1|16|4|6|2|2048|OOM|||02-28",
    "918|12288|100|64|48|184B|1|16|4|6|1|2048|OOM|||02-28",
    "919|12288|100|64|48|184B|1|8|8|6|2|2048|61|139.72|117.91|02-28",
    "920|12288|100|64|48|184B|1|8|8|6|4|2048|72|120.96|136.20|02-28",
    "928|13312|82|64|48|178B|1|4|8|12|4|2048|52|111.79|141.76|02-28",
    "929|13312|82|64|48|178B|1|8|4|12|2|2048|63|104.45|151.71|02-28",
    "930|13312|82|104|48|178B|1|8|4|12|2|2048|62|123.71|128.10|02-28",
    "931|13312|82|128|48|178B|1|8|4|12|2|2048|60|108.78|145.68|02-28",
    "932|13312|82|64|48|178B|1|8|4|12|4|2048|74|104.82|151.18|02-28",
    "939|13312|94|128|48|203B|1|8|4|12|2|2048|67|124.10|146.12|02-28",
    "946|14336|70|64|48|176B|1|4|8|12|2|2048|40|121.63|128.92|02-28",
    "947|14336|70|64|48|176B|1|8|4|12|2|2048|59|102.03|153.68|02-28",
    "948|14336|70|112|48|176B|1|8|4|12|2|2048|59|104.50|150.05|02-28",
    "949|14336|70|128|48|176B|1|8|4|12|2|2048|60|105.89|148.08|02-28",
    "950|14336|70|64|48|176B|1|8|4|12|4|2048|73|102.27|153.33|02-28",
    "957|14336|82|128|48|206B|1|8|4|12|2|2048|OOM|||02-28",
)


def _cells(row: str) -> dict[str, str]:
    names = ("line", "hidden", "layers", "heads", "nodes", "size", "zero", "dp", "tp", "pp", "mbs", "gbs", "mem",
             "seconds", "tflops", "date")
    return dict(zip(names, row.split("|")))


SWEEP_ROWS: tuple[dict[str, str], ...] = tuple(_cells(row) for row in _SWEEP)


def _section(line: int) -> str:
    return [title for first, title in _SECTIONS if first <= line][-1]


def _sweep_record(c: dict[str, str]) -> RunRecord:
    line, gpus = int(c["line"]), int(c["nodes"]) * 8
    tp, pp = int(c["tp"]), int(c["pp"])
    oom = c["mem"] == "OOM"
    metric: Metric = "oom" if oom else "hardware_tflops_per_gpu"
    precision: Precision = "bf16" if line >= BF16_FROM else "fp16"
    partition = ("embedding and output layer one block's slot each" if line >= BF16_FROM
                 else "partition method not stated")
    extra = f"; {_NOTES[line]}" if line in _NOTES else ""
    timing = "" if oom else f"; {c['seconds']} s per iteration"
    return RunRecord(
        source=SOURCE, where=f"{PREQUEL}, section '{_section(line)}', line {line}",
        row=(f"{c['size']} h{c['hidden']} l{c['layers']} heads {c['heads']}: {c['nodes']} nodes, DP {c['dp']} "
             f"TP {tp} PP {pp} MBS {c['mbs']} GBS {c['gbs']} ({c['date']})"),
        use="validation", layers=int(c["layers"]), hidden=int(c["hidden"]), heads=int(c["heads"]), seq=SEQ,
        vocab=VOCAB, gpu="A100-80GB", gpus=gpus, metric=metric, value=0.0 if oom else float(c["tflops"]),
        ffn=4 * int(c["hidden"]), tp=tp, pp=pp, dp=None if line == 648 else int(c["dp"]), zero=int(c["zero"]),
        micro_batch=int(c["mbs"]), global_batch=int(c["gbs"]), recompute="full", attention="materialised",
        sequence_parallel=False, dp_overlap=False, precision=precision, fp32_grad_buffer=precision == "bf16",
        counts_recompute=None if oom else True,
        memory_gb=float(c["mem"]) if c["mem"] not in ("", "OOM") else None,
        note=f"Megatron-DeepSpeed; {partition}{timing}{extra}.")


def _run_record(where: str, row: str, gbs: int, mbs: int, tflops: float, note: str) -> RunRecord:
    return RunRecord(
        source=SOURCE, where=f"{README}, {where}", row=row, use="validation", layers=70, hidden=14336, heads=112,
        seq=SEQ, vocab=VOCAB, gpu="A100-80GB", gpus=384, metric="hardware_tflops_per_gpu", value=tflops,
        ffn=4 * 14336, tp=4, pp=12, dp=8, zero=1, micro_batch=mbs, global_batch=gbs, recompute="full",
        attention="materialised", sequence_parallel=False, dp_overlap=False, precision="bf16",
        fp32_grad_buffer=True, counts_recompute=True,
        note=f"BLOOM-176B's run; embedding and output layer one block's slot each (72 slots over 12 stages); {note}.")


RUN: tuple[RunRecord, ...] = (
    _run_record("section 'Important checkpoints', line 663", "iteration 85376, GBS 2048", 2048, 2, 149.77,
                "104.70 s per iteration, the end of the first epoch"),
    _run_record("section 'Global batch size', line 245", "iteration 3707, GBS 16", 16, 2, 8.04,
                "15.23 s per iteration, one micro-batch per replica at the start of the batch-size ramp"),
    _run_record("section 'Global batch size', line 272", "GBS=192/MBS=1 @ 73 TFLOPs", 192, 1, 73.0,
                "the start of the batch-size ramp as run; iteration time not given"),
)
# "Best TFLOPs" (prequel lines 356-432, 02-17): (table line, log line, precision, layers, heads, GPUs, DP, PP,
# Mem GB, seconds per iteration from the log line, the table's TFLOPs).
_BEST: tuple[tuple[int, int, Precision, int, int, int, int, int, float, float, float], ...] = (
    (389, 367, "fp16", 8, 32, 8, 1, 1, 67, 769.99, 108.47),
    (390, 375, "fp16", 80, 96, 80, 1, 10, 73, 844.81, 98.87),
    (391, 381, "fp16", 80, 96, 160, 2, 10, 51, 430.21, 97.07),
    (427, 404, "bf16", 8, 32, 8, 1, 1, 68, 777.09, 107.48),
    (428, 413, "bf16", 80, 96, 80, 1, 10, 75, 853.81, 97.82),
    (429, 421, "bf16", 80, 96, 160, 2, 10, 53, 434.14, 96.19),
)


def _best_record(table: int, log: int, precision: Precision, layers: int, heads: int, gpus: int, dp: int, pp: int,
                 mem: float, seconds: float, tflops: float) -> RunRecord:
    return RunRecord(
        source=SOURCE, where=f"{PREQUEL}, section 'Best TFLOPs', table line {table}, log line {log}",
        row=f"{'20B' if layers == 8 else '200B'} ({precision}): {gpus} GPUs, DP {dp} TP 8 PP {pp}, MBS 1, GBS 2048",
        use="validation", layers=layers, hidden=14400, heads=heads, seq=SEQ, vocab=250000, gpu="A100-80GB",
        gpus=gpus, metric="step_s", value=seconds, ffn=4 * 14400, tp=8, pp=pp, dp=dp, zero=1, micro_batch=1,
        global_batch=2048, attention="materialised", sequence_parallel=False, dp_overlap=False, precision=precision,
        memory_gb=mem,
        note=(f"iteration 2's time from the log line; the table's {tflops} TFLOPs use the earlier estimate "
              "8·(12·l·h²)·tokens (math/README.md), before the fix of line 590; vocabulary '250k' as printed; "
              "recomputation not stated."))


BEST: tuple[RunRecord, ...] = tuple(_best_record(*row) for row in _BEST)
RECORDS: tuple[RunRecord, ...] = RUN + BEST + tuple(_sweep_record(c) for c in SWEEP_ROWS)

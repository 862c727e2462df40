"""MosaicML llm-foundry's MPT benchmarks: 216 FSDP runs of MPT 125M-70B on A100 and H100 GPUs, BF16 and FP8.

Source: ``scripts/train/benchmarking/README.md`` of mosaicml/llm-foundry (read at commit 8c8dd48f; the tables last
changed in commit 5e85bd62, January 2024), section "Results", five tables: "H100 80GB BF16 (Large Scale, >= 128 GPUs)",
"H100 80GB BF16", "H100 80GB FP8", "A100 80GB with 1600 Gbps node-node interconnect (RoCE)" and "A100 40GB with 1600
Gbps node-node interconnect (RoCE)". ``_TABLES`` keeps each row's published columns (the README line first, then Model,
SeqLen, # GPUs, MFU, HFU, Model TFLOP, MicroBatchSize, GradAccum, GlobalBatchSize, Throughput (T/s/GPU), Precision, MP
Mode, Sharding Strategy, Activation Checkpointing, NumParams); no row of the tables has Activation CPUOffload True, so
that column is left out.

Read: the figure is the table's MFU (in %, stored as a fraction). The README's section "MFU" gives its formula:
(3·2·NumParams·seq + 3·4·layers·d_model·seq²) FLOPs per sequence, i.e. 6N per token with N all parameters (embeddings
included) plus the attention score and value matmuls, no recomputation (HFU, kept in the row, counts the checkpointed
forward again); it excludes norms, activations and residuals. The peak it divides by is implied by Model TFLOP / MFU:
312 TFLOP/s on A100, 989 on H100 BF16 rows and 1,979 on FP8 rows (FP8 MFU is against the FP8 peak). Every run is PyTorch
FSDP without tensor or pipeline parallelism (Sharding Strategy FULL_SHARD: ZeRO-3, SHARD_GRAD_OP: ZeRO-2), so dp is the
GPU count; Activation Checkpointing True is recorded as full recomputation (whole blocks, see below). Precision amp_bf16
or bf16 is BF16 (MP Mode, Composer's FSDP mixed-precision setting, is in the row label); amp_fp8 is FP8, which matmuls
ran in FP8 the table does not say.

Assumed (not in the tables): the shapes, from the repository's ``scripts/train/yamls/pretrain/mpt-<size>.yaml``
(d_model, n_heads, n_layers, expansion_ratio 4, vocab_size 50368; heads of the 760m, 1b and 3b models set for a head
size of 128): the published NumParams of every row equal layers·(12·d² + 13·d) + vocab·d + seq·d + 2·d, i.e. these runs
had biases and learned position embeddings (``tests/test_runs_llm_foundry.py`` checks every row). The attention kernel:
``submit_benchmarks.py`` defaults to ``attn_impl`` "triton" (a Triton FlashAttention kernel) and ``sweep.py``, which ran
the large-scale H100 table, sets "flash" or "triton" per model; both are fused kernels, so every row is "flash".
Recomputation: ``activation_checkpointing_fn`` in ``llmfoundry/models/mpt/modeling_mpt.py`` checkpoints every
``MPTBlock``. Dropout: none (``dropout`` False): MPT's defaults are ``resid_pdrop`` and ``emb_pdrop`` 0.0
(``llmfoundry/models/mpt/configuration_mpt.py``) and ``attn_pdrop`` 0.0 (``attn_config_defaults``, in
``llmfoundry/models/layers/blocks.py`` at 5e85bd62, in ``llmfoundry/models/utils/config_defaults.py`` at 8c8dd48f),
and neither the pretraining yamls nor the benchmarking scripts set them; PyTorch's dropout at probability 0 returns its
input and keeps no mask. The nodes: eight GPUs each (assumed; every GPU count is a multiple of 8); the A100 tables name
1,600 Gb/s RoCE between nodes (the presets' DGX A100 has eight 200 Gb/s adapters, the same total); the H100 nodes'
network is not stated.
"""

from __future__ import annotations

from d2lmp.model.cluster.run_record import Precision, RecordRecompute, RunRecord

__all__ = ["RECORDS", "SHAPES", "TABLE_ROWS"]

SOURCE = "llm_foundry_benchmarks"
FILE = "scripts/train/benchmarking/README.md (commit 8c8dd48f)"
VOCAB = 50368
# Model name -> (n_layers, d_model, n_heads), from scripts/train/yamls/pretrain/mpt-<name>.yaml.
SHAPES: dict[str, tuple[int, int, int]] = {
    "125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12), "1b": (24, 2048, 16),
    "3b": (32, 2560, 20), "7b": (32, 4096, 32), "13b": (40, 5120, 40), "30b": (48, 7168, 56), "70b": (80, 8192, 64),
}
_GPUS = {"h100_80gb": "H100-SXM", "a100_80gb": "A100-80GB", "a100_40gb": "A100-40GB"}
_ZERO = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}
_PRECISION: dict[str, Precision] = {"amp_bf16": "bf16", "bf16": "bf16", "amp_fp8": "fp8"}

# (table title, GPU column, rows "line|Model|SeqLen|#GPUs|MFU|HFU|Model TFLOP|MicroBatchSize|GradAccum|
# GlobalBatchSize|T/s/GPU|Precision|MP Mode|Sharding Strategy|Activation Checkpointing|NumParams").
_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("H100 80GB BF16 (Large Scale, >= 128 GPUs)", "h100_80gb", (
        "75|70b|2048|512|41.25|55.0|408|8|1|4096|1007|amp_bf16|DEFAULT|FULL_SHARD|True|64862437376",
        "76|70b|2048|256|42.42|56.56|419|8|1|2048|1035|amp_bf16|DEFAULT|FULL_SHARD|True|64862437376",
        "77|70b|2048|128|43.36|57.81|428|8|1|1024|1058|amp_bf16|DEFAULT|FULL_SHARD|True|64862437376",
        "78|30b|2048|512|40.27|53.69|398|8|1|4096|2115|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "79|30b|2048|256|40.89|54.52|404|8|1|2048|2148|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "80|30b|2048|128|41.85|55.8|414|8|1|1024|2199|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "81|13b|2048|512|41.12|54.83|406|16|1|8192|4952|amp_bf16|DEFAULT|FULL_SHARD|True|12853954560",
        "82|13b|2048|256|41.42|55.23|409|16|1|4096|4989|amp_bf16|DEFAULT|FULL_SHARD|True|12853954560",
        "83|13b|2048|128|42.18|56.24|417|16|1|2048|5080|amp_bf16|DEFAULT|FULL_SHARD|True|12853954560",
        "84|7b|2048|512|42.2|42.2|417|6|1|3072|9670|amp_bf16|DEFAULT|FULL_SHARD|False|6658859008",
        "85|7b|2048|256|44.15|44.15|436|6|1|1536|10119|amp_bf16|DEFAULT|FULL_SHARD|False|6658859008",
        "86|7b|2048|128|45.71|45.71|452|6|1|768|10475|amp_bf16|DEFAULT|FULL_SHARD|False|6658859008",
        "87|3b|2048|512|39.24|39.24|388|8|1|4096|21664|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|2651837440",
        "88|3b|2048|256|41.25|41.25|408|8|1|2048|22772|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|2651837440",
        "89|3b|2048|128|42.43|42.43|419|8|1|1024|23422|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|2651837440",
        "90|1b|2048|512|36.65|36.65|362|12|1|6144|39837|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|1315950592",
        "91|1b|2048|256|39.15|39.15|387|12|1|3072|42555|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|1315950592",
        "92|1b|2048|128|40.6|40.6|401|12|1|1536|44123|amp_bf16|DEFAULT|SHARD_GRAD_OP|False|1315950592",
    )),
    ("H100 80GB BF16", "h100_80gb", (
        "98|70b|2048|64|42.57|56.76|421|8|4|2048|1039|amp_bf16|DEFAULT|FULL_SHARD|True|64862437376",
        "99|70b|2048|32|36.15|48.2|357|2|16|1024|882|amp_bf16|DEFAULT|FULL_SHARD|True|64862437376",
        "100|30b|8192|8|29.92|39.9|296|1|21|168|1384|amp_bf16|DEFAULT|FULL_SHARD|True|30019254272",
        "101|30b|4096|8|35.86|47.81|354|1|21|168|1802|amp_bf16|DEFAULT|FULL_SHARD|True|29989894144",
        "102|30b|2048|32|43.92|58.57|434|14|3|1344|2308|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "103|30b|2048|16|43.07|57.42|426|10|3|480|2263|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "104|30b|2048|8|38.11|50.82|377|3|21|504|2002|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "105|30b|1024|8|38.76|51.68|383|6|21|1008|2084|amp_bf16|DEFAULT|FULL_SHARD|True|29967874048",
        "106|13b|32768|8|31.68|42.24|313|1|3|24|1976|amp_bf16|DEFAULT|FULL_SHARD|True|13011240960",
        "107|13b|16384|8|35.55|47.4|351|3|3|72|2985|amp_bf16|DEFAULT|FULL_SHARD|True|12927354880",
        "108|13b|4096|8|41.6|55.47|411|10|3|240|4717|amp_bf16|DEFAULT|FULL_SHARD|True|12864440320",
        "109|13b|2048|64|39.86|39.86|394|2|1|128|4800|amp_bf16|DEFAULT|FULL_SHARD|False|12853954560",
        "110|13b|2048|32|39.95|39.95|395|2|1|64|4811|amp_bf16|DEFAULT|FULL_SHARD|False|12853954560",
        "111|13b|2048|16|39.58|39.58|391|2|1|32|4767|amp_bf16|DEFAULT|FULL_SHARD|False|12853954560",
        "112|13b|2048|8|39.79|39.79|393|2|1|16|4792|amp_bf16|DEFAULT|FULL_SHARD|False|12853954560",
        "113|13b|1024|8|44.27|59.03|438|40|3|960|5502|amp_bf16|DEFAULT|FULL_SHARD|True|12848711680",
        "114|7b|65536|8|28.59|38.13|282|1|2|16|1956|amp_bf16|DEFAULT|FULL_SHARD|True|6918905856",
        "115|7b|32768|8|30.94|41.25|306|2|2|32|3318|amp_bf16|DEFAULT|FULL_SHARD|True|6784688128",
        "116|7b|8192|8|37.14|49.52|367|8|2|128|6935|amp_bf16|DEFAULT|FULL_SHARD|True|6684024832",
        "117|7b|4096|8|40.42|53.9|399|16|2|256|8611|amp_bf16|DEFAULT|FULL_SHARD|True|6667247616",
        "118|7b|2048|8|46.44|46.44|459|6|1|48|10643|amp_bf16|DEFAULT|FULL_SHARD|False|6658859008",
        "119|7b|1024|8|42.83|57.11|423|64|2|1024|10203|amp_bf16|DEFAULT|FULL_SHARD|True|6654664704",
        "120|3b|65536|8|26.81|35.74|265|1|2|16|3262|amp_bf16|DEFAULT|FULL_SHARD|True|2814366720",
        "121|3b|32768|8|28.84|38.46|285|3|6|144|5873|amp_bf16|DEFAULT|FULL_SHARD|True|2730480640",
        "122|3b|16384|8|36.34|36.34|359|1|6|48|11152|amp_bf16|DEFAULT|FULL_SHARD|False|2688537600",
        "123|3b|8192|8|40.31|40.31|398|3|6|144|16578|amp_bf16|DEFAULT|FULL_SHARD|False|2667566080",
        "124|3b|4096|8|42.31|42.31|418|5|6|240|20964|amp_bf16|DEFAULT|FULL_SHARD|False|2657080320",
        "125|3b|2048|64|40.8|40.8|403|6|3|1152|22525|amp_bf16|DEFAULT|FULL_SHARD|False|2651837440",
        "126|3b|2048|32|41.7|41.7|412|6|3|576|23021|amp_bf16|DEFAULT|FULL_SHARD|False|2651837440",
        "127|3b|2048|16|43.73|43.73|432|10|3|480|24142|amp_bf16|DEFAULT|FULL_SHARD|False|2651837440",
        "128|3b|1024|8|46.2|46.2|457|20|6|960|27046|amp_bf16|DEFAULT|FULL_SHARD|False|2649216000",
        "129|3b|512|8|46.32|46.32|458|40|6|1920|27965|amp_bf16|DEFAULT|FULL_SHARD|False|2647905280",
        "130|1b|65536|8|26.34|35.12|260|1|2|16|5506|amp_bf16|DEFAULT|FULL_SHARD|True|1445974016",
        "131|1b|32768|8|33.54|33.54|331|1|4|32|12025|amp_bf16|DEFAULT|FULL_SHARD|False|1378865152",
        "132|1b|16384|8|35.22|35.22|348|2|4|64|19649|amp_bf16|DEFAULT|FULL_SHARD|False|1345310720",
        "133|1b|8192|8|37.73|37.73|373|3|4|96|29157|amp_bf16|DEFAULT|FULL_SHARD|False|1328533504",
        "134|1b|4096|8|40.26|40.26|398|7|4|224|38535|amp_bf16|DEFAULT|FULL_SHARD|False|1320144896",
        "135|1b|2048|64|40.85|40.85|404|20|1|1280|44402|amp_bf16|DEFAULT|FULL_SHARD|False|1315950592",
        "136|1b|2048|32|41.52|41.52|410|20|1|640|45130|amp_bf16|DEFAULT|FULL_SHARD|False|1315950592",
        "137|1b|2048|16|42.36|42.36|419|20|1|320|46037|amp_bf16|DEFAULT|FULL_SHARD|False|1315950592",
        "138|1b|2048|8|41.82|41.82|413|14|1|112|45455|amp_bf16|DEFAULT|FULL_SHARD|False|1315950592",
        "139|1b|1024|8|41.95|41.95|415|18|4|576|48910|amp_bf16|DEFAULT|FULL_SHARD|False|1313853440",
        "140|1b|512|8|43.21|43.21|427|56|4|1792|52275|amp_bf16|DEFAULT|FULL_SHARD|False|1312804864",
        "141|760m|32768|8|31.84|31.84|315|1|2|16|16291|amp_bf16|DEFAULT|FULL_SHARD|False|807656448",
        "142|760m|16384|8|33.57|33.57|332|3|2|48|27815|amp_bf16|DEFAULT|FULL_SHARD|False|782490624",
        "143|760m|8192|8|34.84|34.84|344|6|2|96|41825|amp_bf16|DEFAULT|FULL_SHARD|False|769907712",
        "144|760m|4096|8|35.83|35.83|354|12|2|192|55459|amp_bf16|DEFAULT|FULL_SHARD|False|763616256",
        "145|760m|2048|32|37.57|37.57|371|24|1|768|67971|amp_bf16|DEFAULT|FULL_SHARD|False|760470528",
        "146|760m|2048|16|37.89|37.89|374|24|1|384|68551|amp_bf16|DEFAULT|FULL_SHARD|False|760470528",
        "147|760m|2048|8|34.9|34.9|345|24|2|384|63147|amp_bf16|DEFAULT|FULL_SHARD|False|760470528",
        "148|760m|1024|8|39.76|39.76|393|48|2|768|78581|amp_bf16|DEFAULT|FULL_SHARD|False|758897664",
        "149|760m|512|8|40.42|40.42|399|96|2|1536|83749|amp_bf16|DEFAULT|FULL_SHARD|False|758111232",
    )),
    ("H100 80GB FP8", "h100_80gb", (
        "154|3b|32768|8|14.38|19.18|284|3|6|144|5856|amp_fp8|DEFAULT|FULL_SHARD|True|2730480640",
        "155|3b|8192|8|23.28|23.28|460|3|6|144|19146|amp_fp8|DEFAULT|FULL_SHARD|False|2667566080",
        "156|3b|2048|8|27.7|27.7|548|10|6|480|30586|amp_fp8|DEFAULT|FULL_SHARD|False|2651837440",
        "157|3b|512|8|30.25|30.25|598|40|6|1920|36527|amp_fp8|DEFAULT|FULL_SHARD|False|2647905280",
        "158|1b|32768|8|17.55|17.55|347|1|4|32|12580|amp_fp8|DEFAULT|FULL_SHARD|False|1378865152",
        "159|1b|8192|8|20.71|20.71|409|2|4|64|32010|amp_fp8|DEFAULT|FULL_SHARD|False|1328533504",
        "160|1b|512|8|29.06|29.06|575|56|4|1792|70315|amp_fp8|DEFAULT|FULL_SHARD|False|1312804864",
    )),
    ("A100 80GB with 1600 Gbps node-node interconnect (RoCE)", "a100_80gb", (
        "166|70b|2048|64|53.33|71.1|166|8|4|2048|410|bf16|PURE|FULL_SHARD|True|64862437376",
        "167|70b|2048|32|48.56|64.75|151|2|16|1024|373|bf16|PURE|FULL_SHARD|True|64862437376",
        "168|30b|8192|8|39.38|52.5|122|1|21|168|574|amp_bf16|DEFAULT|FULL_SHARD|True|30019254272",
        "169|30b|4096|8|51.37|68.49|160|1|21|168|814|amp_bf16|DEFAULT|FULL_SHARD|True|29989894144",
        "170|30b|2048|8|55.3|73.74|172|3|21|504|916|amp_bf16|DEFAULT|FULL_SHARD|True|29975214080",
        "171|30b|1024|8|55.82|74.43|174|6|21|1008|946|amp_bf16|DEFAULT|FULL_SHARD|True|29967874048",
        "172|30b|512|8|56.4|75.2|175|12|21|2016|967|amp_bf16|DEFAULT|FULL_SHARD|True|29964204032",
        "173|13b|32768|8|51.69|68.92|161|1|3|24|1016|amp_bf16|DEFAULT|FULL_SHARD|True|13011240960",
        "174|13b|16384|8|54.07|72.1|168|3|3|72|1431|amp_bf16|DEFAULT|FULL_SHARD|True|12927354880",
        "175|13b|8192|8|56.07|74.76|174|5|3|120|1795|amp_bf16|DEFAULT|FULL_SHARD|True|12885411840",
        "176|13b|4096|8|57.62|76.82|179|10|3|240|2060|amp_bf16|DEFAULT|FULL_SHARD|True|12864440320",
        "177|13b|2048|8|59.57|59.57|185|2|3|48|2262|amp_bf16|DEFAULT|FULL_SHARD|False|12853954560",
        "178|13b|1024|8|59.48|79.3|185|40|3|960|2330|amp_bf16|DEFAULT|FULL_SHARD|True|12848711680",
        "179|7b|65536|8|46.97|62.63|146|1|2|16|1013|amp_bf16|DEFAULT|FULL_SHARD|True|6918905856",
        "180|7b|32768|8|49.46|65.94|154|2|2|32|1672|amp_bf16|DEFAULT|FULL_SHARD|True|6784688128",
        "181|7b|16384|8|51.96|69.28|162|4|2|64|2453|amp_bf16|DEFAULT|FULL_SHARD|True|6717579264",
        "182|7b|8192|8|54.47|72.62|169|8|2|128|3206|amp_bf16|DEFAULT|FULL_SHARD|True|6684024832",
        "183|7b|4096|8|54.84|73.12|171|16|2|256|3684|amp_bf16|DEFAULT|FULL_SHARD|True|6667247616",
        "184|7b|2048|8|64.23|64.23|200|6|2|96|4641|amp_bf16|DEFAULT|FULL_SHARD|False|6658859008",
        "185|7b|1024|8|58.01|77.35|180|64|2|1024|4357|amp_bf16|DEFAULT|FULL_SHARD|True|6654664704",
        "186|3b|65536|8|46.05|61.41|143|1|2|16|1767|amp_bf16|DEFAULT|FULL_SHARD|True|2814366720",
        "187|3b|32768|8|47.18|62.91|147|3|6|144|3029|amp_bf16|DEFAULT|FULL_SHARD|True|2730480640",
        "188|3b|16384|8|57.13|57.13|178|1|6|48|5529|amp_bf16|DEFAULT|FULL_SHARD|False|2688537600",
        "189|3b|8192|8|59.34|59.34|185|3|6|144|7695|amp_bf16|DEFAULT|FULL_SHARD|False|2667566080",
        "190|3b|4096|8|60.53|60.53|188|5|6|240|9457|amp_bf16|DEFAULT|FULL_SHARD|False|2657080320",
        "191|3b|2048|8|62.11|62.11|193|10|2|160|10811|amp_bf16|DEFAULT|FULL_SHARD|False|2651837440",
        "192|3b|1024|8|62.73|62.73|195|20|6|960|11580|amp_bf16|DEFAULT|FULL_SHARD|False|2649216000",
        "193|3b|512|8|63.71|63.71|198|40|6|1920|12127|amp_bf16|DEFAULT|FULL_SHARD|False|2647905280",
        "194|1b|65536|8|46.18|61.57|144|1|2|16|3044|amp_bf16|DEFAULT|FULL_SHARD|True|1445974016",
        "195|1b|32768|8|55.52|55.52|173|1|4|32|6275|amp_bf16|DEFAULT|FULL_SHARD|False|1378865152",
        "196|1b|16384|8|56.6|56.6|176|2|4|64|9956|amp_bf16|DEFAULT|FULL_SHARD|False|1345310720",
        "197|1b|8192|8|56.69|56.69|176|3|4|96|13814|amp_bf16|DEFAULT|FULL_SHARD|False|1328533504",
        "198|1b|4096|8|59.0|59.0|184|7|4|224|17807|amp_bf16|DEFAULT|FULL_SHARD|False|1320144896",
        "199|1b|2048|8|59.86|59.86|186|14|4|448|20513|amp_bf16|DEFAULT|FULL_SHARD|False|1315950592",
        "200|1b|1024|8|60.15|60.15|187|18|4|576|22112|amp_bf16|DEFAULT|FULL_SHARD|False|1313853440",
        "201|1b|512|8|60.68|60.68|189|56|4|1792|23148|amp_bf16|DEFAULT|FULL_SHARD|False|1312804864",
        "202|760m|65536|8|45.34|60.45|141|1|2|16|4143|amp_bf16|DEFAULT|FULL_SHARD|True|857988096",
        "203|760m|32768|8|54.57|54.57|170|1|2|16|8802|amp_bf16|DEFAULT|FULL_SHARD|False|807656448",
        "204|760m|16384|8|54.64|54.64|170|3|2|48|14274|amp_bf16|DEFAULT|FULL_SHARD|False|782490624",
        "205|760m|8192|8|55.31|55.31|172|6|2|96|20933|amp_bf16|DEFAULT|FULL_SHARD|False|769907712",
        "206|760m|4096|8|56.05|56.05|174|12|2|192|27351|amp_bf16|DEFAULT|FULL_SHARD|False|763616256",
        "207|760m|2048|8|56.85|56.85|177|24|2|384|32434|amp_bf16|DEFAULT|FULL_SHARD|False|760470528",
        "208|760m|1024|8|47.76|47.76|149|48|2|768|29765|amp_bf16|DEFAULT|FULL_SHARD|False|758897664",
        "209|760m|512|8|45.07|45.07|140|96|2|1536|29446|amp_bf16|DEFAULT|FULL_SHARD|False|758111232",
        "210|350m|65536|8|52.7|52.7|164|1|2|16|7524|amp_bf16|DEFAULT|FULL_SHARD|False|420997120",
        "211|350m|32768|8|52.46|52.46|163|2|2|32|13652|amp_bf16|DEFAULT|FULL_SHARD|False|387442688",
        "212|350m|16384|8|53.28|53.28|166|4|2|64|23559|amp_bf16|DEFAULT|FULL_SHARD|False|370665472",
        "213|350m|8192|8|53.8|53.8|167|8|2|128|36569|amp_bf16|DEFAULT|FULL_SHARD|False|362276864",
        "214|350m|4096|8|53.31|53.31|166|16|2|256|49555|amp_bf16|DEFAULT|FULL_SHARD|False|358082560",
        "215|350m|2048|8|51.62|51.62|161|32|2|512|58782|amp_bf16|DEFAULT|FULL_SHARD|False|355985408",
        "216|350m|1024|8|50.51|50.51|157|64|2|1024|64813|amp_bf16|DEFAULT|FULL_SHARD|False|354936832",
        "217|350m|512|8|50.61|50.61|157|128|2|2048|69330|amp_bf16|DEFAULT|FULL_SHARD|False|354412544",
        "218|125m|65536|8|54.13|54.13|168|1|2|16|20368|amp_bf16|DEFAULT|FULL_SHARD|False|174070272",
        "219|125m|32768|8|52.71|52.71|164|2|2|32|36407|amp_bf16|DEFAULT|FULL_SHARD|False|148904448",
        "220|125m|16384|8|50.61|50.61|157|4|2|64|60040|amp_bf16|DEFAULT|FULL_SHARD|False|136321536",
        "221|125m|8192|8|48.85|48.85|152|8|2|128|90392|amp_bf16|DEFAULT|FULL_SHARD|False|130030080",
        "222|125m|4096|8|46.08|46.08|143|16|2|256|118396|amp_bf16|DEFAULT|FULL_SHARD|False|126884352",
        "223|125m|2048|8|44.79|44.79|139|40|2|640|142830|amp_bf16|DEFAULT|FULL_SHARD|False|125311488",
        "224|125m|2048|8|44.45|44.45|138|32|2|512|141737|amp_bf16|DEFAULT|FULL_SHARD|False|125311488",
        "225|125m|1024|8|43.15|43.15|134|64|2|1024|156468|amp_bf16|DEFAULT|FULL_SHARD|False|124525056",
        "226|125m|512|8|42.56|42.56|132|128|2|2048|165681|amp_bf16|DEFAULT|FULL_SHARD|False|124131840",
    )),
    ("A100 40GB with 1600 Gbps node-node interconnect (RoCE)", "a100_40gb", (
        "232|70b|2048|128|48.91|65.21|152|4|1|512|376|bf16|PURE|FULL_SHARD|True|64862437376",
        "233|70b|2048|64|35.87|47.82|111|2|1|128|276|bf16|PURE|FULL_SHARD|True|64862437376",
        "234|30b|2048|128|52.25|69.66|163|6|1|768|865|bf16|PURE|FULL_SHARD|True|29975214080",
        "235|30b|2048|32|51.74|68.98|161|4|1|128|857|bf16|PURE|FULL_SHARD|True|29975214080",
        "236|13b|8192|8|43.95|58.6|137|1|16|128|1407|bf16|PURE|FULL_SHARD|True|12885411840",
        "237|13b|4096|8|44.85|59.8|139|2|16|256|1603|bf16|PURE|FULL_SHARD|True|12864440320",
        "238|13b|2048|128|51.93|69.24|162|16|1|2048|1972|bf16|PURE|FULL_SHARD|True|12853954560",
        "239|13b|2048|64|52.04|69.39|162|16|1|1024|1976|bf16|PURE|FULL_SHARD|True|12853954560",
        "240|13b|2048|32|52.62|70.16|164|14|1|448|1998|bf16|PURE|FULL_SHARD|True|12853954560",
        "241|13b|2048|16|52.5|70.0|163|10|1|160|1993|bf16|PURE|FULL_SHARD|True|12853954560",
        "242|13b|2048|8|43.94|58.58|137|4|16|512|1668|bf16|PURE|FULL_SHARD|True|12853954560",
        "243|13b|1024|8|44.07|58.76|137|8|16|1024|1727|bf16|PURE|FULL_SHARD|True|12848711680",
        "244|13b|512|8|44.28|59.04|138|16|16|2048|1763|bf16|PURE|FULL_SHARD|True|12846090240",
        "245|7b|16384|8|47.65|63.53|148|1|4|32|2249|bf16|PURE|FULL_SHARD|True|6717579264",
        "246|7b|8192|8|49.04|65.38|153|3|4|96|2887|bf16|PURE|FULL_SHARD|True|6684024832",
        "247|7b|4096|8|50.11|66.82|156|6|4|192|3366|bf16|PURE|FULL_SHARD|True|6667247616",
        "248|7b|2048|128|50.14|66.85|156|18|1|2304|3623|bf16|PURE|FULL_SHARD|True|6658859008",
        "249|7b|2048|64|50.73|67.64|158|18|1|1152|3665|bf16|PURE|FULL_SHARD|True|6658859008",
        "250|7b|2048|32|51.55|68.73|160|18|1|576|3725|bf16|PURE|FULL_SHARD|True|6658859008",
        "251|7b|2048|16|50.44|67.26|157|16|1|256|3645|bf16|PURE|FULL_SHARD|True|6658859008",
        "252|7b|2048|8|50.92|67.89|158|12|4|384|3679|bf16|PURE|FULL_SHARD|True|6658859008",
        "253|7b|1024|8|51.31|68.42|160|24|4|768|3854|bf16|PURE|FULL_SHARD|True|6654664704",
        "254|7b|512|8|50.85|67.8|158|48|4|1536|3895|bf16|PURE|FULL_SHARD|True|6652567552",
        "255|3b|32768|8|46.03|61.37|143|1|4|32|2955|bf16|PURE|FULL_SHARD|True|2730480640",
        "256|3b|16384|8|46.14|61.52|143|2|8|128|4465|bf16|PURE|FULL_SHARD|True|2688537600",
        "257|3b|8192|8|55.13|55.13|172|1|8|64|7149|bf16|PURE|FULL_SHARD|False|2667566080",
        "258|3b|4096|8|56.18|56.18|175|2|8|128|8777|bf16|PURE|FULL_SHARD|False|2657080320",
        "259|3b|2048|128|54.8|54.8|170|6|1|768|9538|bf16|PURE|FULL_SHARD|False|2651837440",
        "260|3b|2048|64|55.94|55.94|174|6|1|384|9736|bf16|PURE|FULL_SHARD|False|2651837440",
        "261|3b|2048|32|56.96|56.96|177|6|1|192|9914|bf16|PURE|FULL_SHARD|False|2651837440",
        "262|3b|2048|16|56.02|56.02|174|5|1|80|9750|bf16|PURE|FULL_SHARD|False|2651837440",
        "263|3b|2048|8|57.82|57.82|180|5|8|320|10065|bf16|PURE|FULL_SHARD|False|2651837440",
        "264|3b|1024|8|58.14|58.14|181|10|8|640|10731|bf16|PURE|FULL_SHARD|False|2649216000",
        "265|3b|512|8|59.49|59.49|185|20|8|1280|11324|bf16|PURE|FULL_SHARD|False|2647905280",
        "266|1b|32768|8|45.07|60.1|140|1|4|32|5095|bf16|PURE|FULL_SHARD|True|1378865152",
        "267|1b|16384|8|55.23|55.23|172|1|8|64|9715|bf16|PURE|FULL_SHARD|False|1345310720",
        "268|1b|8192|8|55.29|55.29|172|2|8|128|13474|bf16|PURE|FULL_SHARD|False|1328533504",
        "269|1b|4096|8|55.85|55.85|174|4|8|256|16856|bf16|PURE|FULL_SHARD|False|1320144896",
        "270|1b|2048|128|54.41|54.41|169|10|1|1280|18647|bf16|PURE|FULL_SHARD|False|1315950592",
        "271|1b|2048|64|55.44|55.44|172|10|1|640|19001|bf16|PURE|FULL_SHARD|False|1315950592",
        "272|1b|2048|32|45.39|45.39|141|10|1|320|15555|bf16|PURE|FULL_SHARD|False|1315950592",
        "273|1b|2048|16|55.69|55.69|173|8|1|128|19085|bf16|PURE|FULL_SHARD|False|1315950592",
        "274|1b|2048|8|56.23|56.23|175|8|8|512|19271|bf16|PURE|FULL_SHARD|False|1315950592",
        "275|1b|1024|8|57.02|57.02|177|16|8|1024|20959|bf16|PURE|FULL_SHARD|False|1313853440",
        "276|1b|512|8|57.1|57.1|178|32|8|2048|21782|bf16|PURE|FULL_SHARD|False|1312804864",
        "277|760m|32768|8|44.53|59.37|138|1|4|32|7183|bf16|PURE|FULL_SHARD|True|807656448",
        "278|760m|16384|8|53.26|53.26|166|1|4|32|13914|bf16|PURE|FULL_SHARD|False|782490624",
        "279|760m|8192|8|53.12|53.12|165|3|4|96|20106|bf16|PURE|FULL_SHARD|False|769907712",
        "280|760m|4096|8|53.0|53.0|165|6|4|192|25863|bf16|PURE|FULL_SHARD|False|763616256",
        "281|760m|2048|128|50.73|50.73|158|12|1|1536|28940|bf16|PURE|FULL_SHARD|False|760470528",
        "282|760m|2048|64|51.44|51.44|160|12|1|768|29344|bf16|PURE|FULL_SHARD|False|760470528",
        "283|760m|2048|32|51.97|51.97|162|12|1|384|29648|bf16|PURE|FULL_SHARD|False|760470528",
        "284|760m|2048|16|51.9|51.9|161|12|1|192|29607|bf16|PURE|FULL_SHARD|False|760470528",
        "285|760m|2048|8|52.89|52.89|165|12|4|384|30173|bf16|PURE|FULL_SHARD|False|760470528",
        "286|760m|1024|8|53.63|53.63|167|24|4|768|33422|bf16|PURE|FULL_SHARD|False|758897664",
        "287|760m|512|8|53.47|53.47|166|48|4|1536|34938|bf16|PURE|FULL_SHARD|False|758111232",
        "288|350m|32768|8|51.55|51.55|160|1|4|32|13416|bf16|PURE|FULL_SHARD|False|387442688",
        "289|350m|16384|8|51.78|51.78|161|2|4|64|22896|bf16|PURE|FULL_SHARD|False|370665472",
        "290|350m|8192|8|51.39|51.39|160|4|4|128|34933|bf16|PURE|FULL_SHARD|False|362276864",
        "291|350m|4096|8|50.38|50.38|157|8|4|256|46833|bf16|PURE|FULL_SHARD|False|358082560",
        "292|350m|2048|128|45.61|45.61|142|18|1|2304|51934|bf16|PURE|FULL_SHARD|False|355985408",
        "293|350m|2048|64|46.27|46.27|144|18|1|1152|52689|bf16|PURE|FULL_SHARD|False|355985408",
        "294|350m|2048|32|47.26|47.26|147|18|1|576|53811|bf16|PURE|FULL_SHARD|False|355985408",
        "295|350m|2048|16|48.66|48.66|151|18|1|288|55413|bf16|PURE|FULL_SHARD|False|355985408",
        "296|350m|2048|8|49.17|49.17|153|16|4|512|55995|bf16|PURE|FULL_SHARD|False|355985408",
        "297|350m|1024|8|48.73|48.73|152|32|4|1024|62523|bf16|PURE|FULL_SHARD|False|354936832",
        "298|350m|512|8|48.39|48.39|150|64|4|2048|66284|bf16|PURE|FULL_SHARD|False|354412544",
        "299|125m|32768|8|47.27|47.27|147|1|4|32|32651|bf16|PURE|FULL_SHARD|False|148904448",
        "300|125m|16384|8|46.77|46.77|145|2|3|48|55484|bf16|PURE|FULL_SHARD|False|136321536",
        "301|125m|8192|8|46.94|46.94|146|5|3|120|86858|bf16|PURE|FULL_SHARD|False|130030080",
        "302|125m|4096|8|44.82|44.82|139|13|3|312|115162|bf16|PURE|FULL_SHARD|False|126884352",
        "303|125m|2048|128|38.86|38.86|121|26|1|3328|123936|bf16|PURE|FULL_SHARD|False|125311488",
        "304|125m|2048|64|39.27|39.27|122|26|1|1664|125234|bf16|PURE|FULL_SHARD|False|125311488",
        "305|125m|2048|32|39.86|39.86|124|26|1|832|127122|bf16|PURE|FULL_SHARD|False|125311488",
        "306|125m|2048|16|40.93|40.93|127|26|1|416|130535|bf16|PURE|FULL_SHARD|False|125311488",
        "307|125m|2048|8|42.75|42.75|133|26|3|624|136334|bf16|PURE|FULL_SHARD|False|125311488",
        "308|125m|1024|8|40.89|40.89|127|52|3|1248|148289|bf16|PURE|FULL_SHARD|False|124525056",
        "309|125m|512|8|40.26|40.26|125|104|3|2496|156735|bf16|PURE|FULL_SHARD|False|124131840",
    )),
)


def _cells(row: str) -> dict[str, str]:
    names = ("line", "model", "seq", "gpus", "mfu", "hfu", "tflop", "micro", "accum", "global", "tokens_per_gpu",
             "precision", "mp_mode", "sharding", "checkpointing", "params")
    return dict(zip(names, row.split("|")))


# Every published row as a dict of its columns (strings as printed), with its table's title and GPU.
TABLE_ROWS: tuple[dict[str, str], ...] = tuple({"table": title, "gpu": gpu, **_cells(row)}
                                               for title, gpu, rows in _TABLES for row in rows)


def _record(c: dict[str, str]) -> RunRecord:
    layers, hidden, heads = SHAPES[c["model"]]
    gpus = int(c["gpus"])
    recompute: RecordRecompute = "full" if c["checkpointing"] == "True" else "none"
    precision = _PRECISION[c["precision"]]
    peak = "1,979 (FP8)" if precision == "fp8" else ("989" if c["gpu"] == "h100_80gb" else "312")
    return RunRecord(
        source=SOURCE, where=f"{FILE}, table '{c['table']}', line {c['line']}",
        row=f"{c['model']} | {c['seq']} | {gpus} | {c['gpu']} | {c['precision']} {c['mp_mode']} {c['sharding']}",
        use="validation", layers=layers, hidden=hidden, heads=heads, seq=int(c["seq"]), vocab=VOCAB,
        gpu=_GPUS[c["gpu"]], gpus=gpus, metric="mfu", value=round(float(c["mfu"]) / 100, 6), ffn=4 * hidden,
        tp=1, pp=1, dp=gpus, zero=_ZERO[c["sharding"]], micro_batch=int(c["micro"]),
        global_batch=int(c["global"]), recompute=recompute, attention="flash", precision=precision,
        dropout=False, counts_recompute=False,
        note=(f"MFU of 6·N·tokens (N = {c['params']} parameters, embeddings included) plus attention matmuls, no "
              f"recomputation, over {peak} TFLOP/s; HFU {c['hfu']} %, Model TFLOP {c['tflop']}, "
              f"{c['tokens_per_gpu']} tokens/s per GPU, gradient accumulation {c['accum']}."))


RECORDS: tuple[RunRecord, ...] = tuple(_record(c) for c in TABLE_ROWS)

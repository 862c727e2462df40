"""The cluster model's physics against hand-worked examples: the attention kernel, the GPU generation's rates, the
node's network, uneven pipelines, mixtures of experts and FP8."""

from dataclasses import replace

import pytest

from d2lmp.model.cluster import Cluster, Plan, Transformer, predict
from d2lmp.model.cluster.hardware import NetworkMeasurement

# Two blocks of a small GPT on one A100: b = 1, s = 512, h = 256, a = 4 heads.
SMALL = Transformer(layers=2, hidden=256, heads=4, seq=512, vocab=1000)
ONE = Cluster(gpu="A100-80GB", gpus=1)


def test_a_fused_attention_kernel_keeps_no_scores_and_recomputes_them():
    """Korthikanti et al.'s s×s tensors per block, 5·a·s²·b bytes (scores and softmax 2 bytes each, the dropout
    mask 1), are never written; the backward computes the attention core, 4·b·s²·h FLOPs a block, once more."""
    plan = Plan(micro_batch=1, global_batch=8)
    materialised, flash = predict(SMALL, ONE, plan), predict(SMALL, ONE, Plan(micro_batch=1, global_batch=8,
                                                                              attention="flash"))
    scores_per_block = 5 * 4 * 512**2 * 1
    assert materialised.memory.saved_activations - flash.memory.saved_activations == 2 * scores_per_block
    assert flash.hardware_flops - materialised.hardware_flops == 2 * 4 * 8 * 512**2 * 256
    assert flash.model_flops == materialised.model_flops
    assert flash.parts["memory_bound"] < materialised.parts["memory_bound"]
    assert flash.parts["compute"] > materialised.parts["compute"]


def test_full_recomputation_with_a_fused_kernel_rematerialises_no_scores():
    """The recompute buffer is one block's activations less what full recomputation keeps (its input, 2·s·b·h):
    with the fused kernel that leaves out the same 5·a·s²·b bytes."""
    full = Plan(micro_batch=1, global_batch=8, recompute="full")
    materialised = predict(SMALL, ONE, full).memory
    flash = predict(SMALL, ONE, Plan(micro_batch=1, global_batch=8, recompute="full", attention="flash")).memory
    assert materialised.saved_activations == flash.saved_activations
    assert materialised.buffers - flash.buffers == pytest.approx(5 * 4 * 512**2 * 1.05)  # and the allocator's 5 %


def test_a_model_without_dropout_keeps_no_masks():
    """Dropout keeps a one-byte mask of s·b·h for the attention output and for the MLP in each block, and one for the
    embedding (Korthikanti et al. 2022, §4.1 and §4.4): 2 · 512 · 256 bytes a block, 512 · 256 for the embedding. A
    model trained without dropout (Llama, MPT) writes none of them, so its memory-bound operations move less too."""
    plan = Plan(micro_batch=1, global_batch=8, attention="flash")
    with_masks = predict(SMALL, ONE, plan)
    without = predict(replace(SMALL, dropout=False), ONE, plan)
    masks = 2 * (2 * 512 * 256) + 512 * 256
    assert with_masks.memory.saved_activations - without.memory.saved_activations == masks
    assert without.parts["memory_bound"] < with_masks.parts["memory_bound"]
    assert without.parts["compute"] == with_masks.parts["compute"]


def test_an_unknown_attention_kernel_is_an_error():
    with pytest.raises(ValueError, match="attention must be one of"):
        predict(SMALL, ONE, Plan(global_batch=1, attention="tiled"))  # type: ignore[arg-type]


def test_each_gpu_generation_computes_at_its_measured_matmul_rate():
    """A block's products run at ``gemm`` × the largest matmul measured on that GPU: 271.2 TFLOP/s on an A100,
    794.5 on an H100 (BF16) and 1,402.6 in FP8 (Bekman's table), not at one fraction of every peak."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.hardware import gpu_preset
    from d2lmp.model.cluster.steptime import matmul_seconds

    assert gpu_preset("A100-80GB").matmul_flops() == pytest.approx(271.2e12)
    assert gpu_preset("H100-SXM").matmul_flops() == pytest.approx(794.5e12)
    assert gpu_preset("H100-SXM").matmul_flops("fp8") == pytest.approx(1402.6e12)
    h100 = Cluster(gpu="H100-SXM", gpus=1)
    assert matmul_seconds(1e15, h100, FITTED) == pytest.approx(1e15 / (794.5e12 * FITTED.gemm))
    assert matmul_seconds(1e15, h100, FITTED, "fp8") == pytest.approx(1e15 / (1402.6e12 * FITTED.gemm))
    with pytest.raises(ValueError, match="no FP8"):
        gpu_preset("A100-80GB").matmul_flops("fp8")


def test_fp8_speeds_the_linear_layers_only():
    """FP8 moves the linear layers' products to the FP8 rate; the attention core and the logits stay in 16 bits."""
    from d2lmp.model import transformer_accounting as ta
    from d2lmp.model.cluster.efficiency import FITTED

    h100 = Cluster(gpu="H100-SXM", gpus=1)
    bf16 = predict(SMALL, h100, Plan(micro_batch=1, global_batch=1, attention="flash"))
    fp8 = predict(SMALL, h100, Plan(micro_batch=1, global_batch=1, attention="flash", precision="fp8"))
    linear = 3 * 2 * (ta.layer_forward_flops(SMALL, 1) - ta.attention_core_flops(SMALL, 1))  # fwd + bwd, 2 blocks
    saved = linear / (794.5e12 * FITTED.gemm) - linear / (1402.6e12 * FITTED.gemm)
    assert bf16.parts["compute"] - fp8.parts["compute"] == pytest.approx(saved)


def test_a_group_spanning_nodes_sends_over_as_many_nics_as_it_has_members_in_a_node():
    """An H100 node has eight 400 Gb/s NICs, 50 GB/s per GPU. Data parallelism over 16 GPUs, eight a node, sends
    over all eight: 8 × 50 × ``network`` GB/s (below NVLink's 450 × ``nvlink``); after tensor parallelism of 8, one
    member a node sends over one NIC. Its all-reduce takes NCCL's tree between the two nodes: 2·7 + 2·1 = 16 α
    steps (the network's, ``network_us``), not a ring's 2·15."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.steptime import all_reduce_bytes, group_all_reduce_seconds, group_bytes_per_s

    h100 = Cluster(gpu="H100-SXM", gpus=16)
    flat = check_plan(SMALL, h100, Plan(dp=16, global_batch=16))
    assert (flat.dp_link, flat.dp_per_node) == ("network", 8)
    wide = group_bytes_per_s(h100, flat.dp_link, flat.dp_per_node, FITTED)
    assert wide == pytest.approx(8 * 50e9 * FITTED.network) and wide < 450e9 * FITTED.nvlink
    after_tp = check_plan(SMALL, h100, Plan(tp=4, dp=4, global_batch=4))
    assert (after_tp.dp_link, after_tp.dp_per_node) == ("network", 2)
    assert group_bytes_per_s(h100, "network", 1, FITTED) == pytest.approx(50e9 * FITTED.network)
    seconds = group_all_reduce_seconds(1e9, 16, wide, 8, "network")
    assert seconds == pytest.approx(all_reduce_bytes(1e9, 16) / wide + 16 * FITTED.network_us * 1e-6)


def test_a_gpu_faster_than_the_host_waits_for_its_launches():
    """SMALL's two blocks of one micro-batch take the GPU far less than the host's 2 × ``host_ms`` to launch: each of
    the 8 micro-batches runs at the host's pace, so the wait is 8 × (2 × host_ms − the GPU's seconds a micro-batch),
    and the GPU's own parts do not move. With a host that is never slower (``host_ms`` 0), or blocks longer than the
    host's launches, nothing waits."""
    from d2lmp.model.cluster.efficiency import FITTED

    plan = Plan(micro_batch=1, global_batch=8, attention="flash")
    bound, free = predict(SMALL, ONE, plan), predict(SMALL, ONE, plan, replace(FITTED, host_ms=0.0))
    gpu_per_microbatch = sum(free.parts[p] for p in ("compute", "memory_bound", "tp", "cp")) / 8
    assert gpu_per_microbatch < 2 * FITTED.host_ms * 1e-3
    assert bound.parts["host"] == pytest.approx(8 * (2 * FITTED.host_ms * 1e-3 - gpu_per_microbatch))
    assert free.parts["host"] == 0.0 and bound.step_s == pytest.approx(free.step_s + bound.parts["host"])
    assert all(bound.parts[p] == free.parts[p] for p in ("compute", "memory_bound", "tp", "cp", "optimizer_step"))
    big = Transformer(layers=2, hidden=4096, heads=32, seq=2048, vocab=1000)
    assert predict(big, ONE, Plan(micro_batch=8, global_batch=8, attention="flash")).parts["host"] == 0.0


def test_the_gradient_reduction_hides_behind_the_backward_but_for_its_last_bucket():
    """With a long backward, DDP's exposed reduction is the all-reduce of its last 25 MiB bucket."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.steptime import group_all_reduce_seconds, group_bytes_per_s
    from d2lmp.model.dp_model import DDP_BUCKET_BYTES

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000)
    h100 = Cluster(gpu="H100-SXM", gpus=16)
    prediction = predict(big, h100, Plan(dp=16, micro_batch=8, global_batch=128, attention="flash"))
    bandwidth = group_bytes_per_s(h100, "network", 8, FITTED)
    assert prediction.parts["dp"] == pytest.approx(group_all_reduce_seconds(DDP_BUCKET_BYTES, 16, bandwidth, 8,
                                                                            "network"))


MEASURED = (NetworkMeasurement(2, 361.7, 184.6), NetworkMeasurement(32, 64.9, 28.0))


def test_a_cluster_with_measured_bus_bandwidths_uses_them_rail_by_rail():
    """A cluster measured at 64.9 GB/s for a cross-node all-reduce and 28 GB/s for an all-gather over 32 nodes (eight
    GPUs a node in the group) gives a group with eight members a node exactly those, one with two members a quarter,
    and a lone sender an eighth; NVLink and unmeasured clusters keep the NICs' rate × ``network``."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.steptime import group_bytes_per_s, link_bytes_per_s

    measured = Cluster(gpu="H100-SXM", gpus=256, network_measured=MEASURED)
    assert group_bytes_per_s(measured, "network", 8, FITTED) == pytest.approx(64.9e9)
    assert group_bytes_per_s(measured, "network", 8, FITTED, gather=True) == pytest.approx(28e9)
    assert group_bytes_per_s(measured, "network", 2, FITTED) == pytest.approx(64.9e9 / 4)
    assert link_bytes_per_s(measured, "network", FITTED) == pytest.approx(64.9e9 / 8)
    assert group_bytes_per_s(measured, "nvlink", 8, FITTED) == pytest.approx(450e9 * FITTED.nvlink)
    plain = Cluster(gpu="H100-SXM", gpus=256)
    assert group_bytes_per_s(plain, "network", 8, FITTED, gather=True) == pytest.approx(8 * 50e9 * FITTED.network)


def test_a_group_reads_the_measurement_over_as_many_ranks_at_most_its_nics():
    """On 32 nodes, a group of 16 with eight members a node spans two: it all-gathers at the two-node figure, 184.6
    GB/s, not the whole cluster's 28 (NVLink's 450 × ``nvlink`` caps the all-reduce); a group of 32, not measured,
    reads the next measurement up (32 nodes). A group of 16 with one member a node (16 nodes) reads the same two-node
    measurement, a ring as long, but gets no more than its one NIC, 50 GB/s × ``network``; with two members a node,
    two NICs."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.steptime import group_bytes_per_s

    measured = Cluster(gpu="H100-SXM", gpus=256, network_measured=MEASURED)
    assert group_bytes_per_s(measured, "network", 8, FITTED, gather=True, ranks=16) == pytest.approx(184.6e9)
    assert group_bytes_per_s(measured, "network", 8, FITTED, ranks=16) == pytest.approx(450e9 * FITTED.nvlink)
    assert group_bytes_per_s(measured, "network", 8, FITTED, gather=True, ranks=32) == pytest.approx(28e9)
    assert measured.measured_network(64) == MEASURED[-1] and measured.measured_network(2) == MEASURED[0]
    one_nic = 50e9 * FITTED.network
    assert group_bytes_per_s(measured, "network", 1, FITTED, gather=True, ranks=16) == pytest.approx(one_nic)
    assert group_bytes_per_s(measured, "network", 2, FITTED, gather=True, ranks=16) == pytest.approx(2 * one_nic)
    wide = Cluster(gpu="H100-SXM", gpus=2048, network_measured=MEASURED)  # 256 nodes, one member each: 32 nodes' worth
    assert group_bytes_per_s(wide, "network", 1, FITTED, gather=True, ranks=256) == pytest.approx(28e9)


@pytest.mark.parametrize("bad", [(NetworkMeasurement(4, 1.0, 1.0), NetworkMeasurement(2, 1.0, 1.0)),
                                 (NetworkMeasurement(1, 1.0, 1.0),), (NetworkMeasurement(2, 0.0, 1.0),)])
def test_a_measured_network_needs_ascending_node_counts_and_positive_rates(bad):
    with pytest.raises(ValueError):
        Cluster(gpu="H100-SXM", gpus=16, network_measured=bad)


def test_tensor_parallelism_across_two_nodes_counts_ten_rings_a_block_with_sequence_parallelism():
    """Sixteen tensor ranks over two nodes of the measured cluster, one sequence of 4,096 tokens, hidden 2,048. With
    sequence parallelism a block all-gathers or reduce-scatters 2·b·s·h = 16.8 MB four times forward and six times
    backward, each a ring of 15 steps: (15/16)·16.8 MB at the two-node all-gather's 184.6 GB/s plus 15 × α. Without
    it, two all-reduces a pass at the two-node all-reduce rate (NVLink's rate caps it), NCCL's tree of 2·7 + 2·1
    steps."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.steptime import tensor_parallel_seconds

    model = Transformer(layers=2, hidden=2048, heads=16, seq=4096, vocab=1000)
    cluster = Cluster(gpu="H100-SXM", gpus=32, network_measured=MEASURED)
    plan = Plan(tp=16, dp=2, global_batch=2, sequence_parallel=True)
    layout = check_plan(model, cluster, plan)
    assert (layout.tp_link, layout.tp_per_node) == ("network", 8)
    message, alpha = 2 * 4096 * 2048, FITTED.network_us * 1e-6
    one = 15 / 16 * message / 184.6e9 + 15 * alpha
    assert tensor_parallel_seconds(model, cluster, plan, layout, FITTED) == pytest.approx((4 * one, 6 * one, 2 * one))
    plain = Plan(tp=16, dp=2, global_batch=2, sequence_parallel=False)
    ring = 2 * 15 / 16 * message / min(361.7e9, 450e9 * FITTED.nvlink) + 16 * alpha
    assert tensor_parallel_seconds(model, cluster, plain, check_plan(model, cluster, plain), FITTED) == pytest.approx(
        (2 * ring, 2 * ring, ring))


def test_fp32_gradients_double_the_bytes_the_reduction_carries():
    """Data parallelism over 32 nodes, not overlapped: FP32 gradients add ``2(n−1)/n`` × two more bytes a parameter
    at the measured all-reduce rate; ZeRO-1 reduce-scatters the four bytes and all-gathers two, at the gather rate."""
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.memory import stage_parameters
    from d2lmp.model.cluster.steptime import all_reduce_bytes, gather_bytes

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000)
    cluster = Cluster(gpu="H100-SXM", gpus=256, network_measured=MEASURED)
    plan = Plan(dp=256, global_batch=256, attention="flash", dp_overlap=False)
    params = stage_parameters(big, plan, check_plan(big, cluster, plan), "first")
    sixteen = predict(big, cluster, plan).parts["dp"]
    fp32 = predict(big, cluster, Plan(**{**plan.__dict__, "fp32_grad_reduce": True})).parts["dp"]
    assert fp32 - sixteen == pytest.approx(all_reduce_bytes(2 * params, 256) / 64.9e9)
    zero1 = predict(big, cluster, Plan(**{**plan.__dict__, "fp32_grad_reduce": True, "zero": 1})).parts["dp"]
    wire = gather_bytes(4 * params, 256) + gather_bytes(2 * params, 256)
    assert zero1 - wire / 28e9 == pytest.approx(fp32 - all_reduce_bytes(4 * params, 256) / 64.9e9)


@pytest.mark.parametrize("zero, dp, grad_bytes", [(1, 8, 4), (0, 1, 4), (0, 8, 6)])
def test_fp32_gradient_accumulation_keeps_four_bytes_a_gradient_and_ddps_buckets_two_more(zero, dp, grad_bytes):
    """nanotron's FP32GradientAccumulator keeps an FP32 buffer for every parameter's gradient, under ZeRO-1 too; under
    ZeRO-0 on several ranks DDP's 16-bit buckets persist beside it. Weights, optimizer state, activations unchanged."""
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.memory import stage_parameters

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000)
    cluster = Cluster(gpu="H100-SXM", gpus=dp)
    plan = Plan(dp=dp, global_batch=8, attention="flash", zero=zero)
    params = stage_parameters(big, plan, check_plan(big, cluster, plan), "first")
    sixteen = predict(big, cluster, plan).memory
    fp32 = predict(big, cluster, replace(plan, fp32_grad_reduce=True)).memory
    assert sixteen.gradients == 2 * params and fp32.gradients == grad_bytes * params
    assert (fp32.parameters, fp32.optimizer_state, fp32.saved_activations) == (
        sixteen.parameters, sixteen.optimizer_state, sixteen.saved_activations)


def test_an_unsharded_fp32_gradient_buffer_adds_four_bytes_a_parameter_beside_the_16_bit_gradients():
    """DeepSpeed's BF16_Optimizer as BLOOM ran it: "The additional memory usage is 4bytes x params and it's not
    sharded across gpus". Under ZeRO-1 over 8 ranks: 2 + 4 bytes a gradient; nothing else moves, nor the step."""
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.memory import stage_parameters

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000)
    cluster = Cluster(gpu="A100-80GB", gpus=8)
    plan = Plan(dp=8, global_batch=8, zero=1, recompute="full")
    params = stage_parameters(big, plan, check_plan(big, cluster, plan), "first")
    plain, buffered = predict(big, cluster, plan), predict(big, cluster, replace(plan, fp32_grad_buffer=True))
    assert plain.memory.gradients == 2 * params and buffered.memory.gradients == 6 * params
    assert (buffered.memory.parameters, buffered.memory.optimizer_state, buffered.memory.saved_activations) == (
        plain.memory.parameters, plain.memory.optimizer_state, plain.memory.saved_activations)
    assert buffered.step_s == plain.step_s


def test_without_sequence_parallelism_a_fully_recomputed_layer_keeps_its_whole_input_on_every_tensor_rank():
    """Full recomputation keeps a block's input, 2·s·b·h bytes (Korthikanti et al. 2022, Table 2): split over the
    tensor ranks under sequence parallelism, whole on each without it (BLOOM's runs)."""
    from d2lmp.model.cluster.memory import layer_activation_bytes

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000, dropout=False)
    block_input = 2 * 2048 * 2 * 1024  # 2 bytes · s · b · h, b = 2
    assert layer_activation_bytes(big, 2, 4, True, "full") == block_input / 4
    assert layer_activation_bytes(big, 2, 4, False, "full") == block_input
    cluster = Cluster(gpu="A100-80GB", gpus=4)
    with_sp = Plan(tp=4, global_batch=4, micro_batch=2, recompute="full", sequence_parallel=True)
    split, whole = (predict(big, cluster, p).memory.saved_activations
                    for p in (with_sp, replace(with_sp, sequence_parallel=False)))
    assert whole - split >= 4 * block_input * 3 / 4  # four blocks, and the embedding's output is not split either


def _llama(layers: int, hidden: int, ffn: int, heads: int) -> Transformer:
    return Transformer(layers=layers, hidden=hidden, heads=heads, seq=8192, vocab=128000, ffn=ffn, kv_heads=8,
                       gated_mlp=True, bias=False, tied_embeddings=False, learned_positions=False)


def test_any_layer_count_splits_over_any_stage_count():
    """BLOOM's 70 layers over 12 stages: ten stages of 6, two of 5, the fullest (6) sets the pace. Llama 3 405B's
    126 layers over 16 stages with the embedding and the output layer in a block's place: 128 places, 8 a stage,
    the first and the last 7 blocks."""
    from d2lmp.model.cluster.layout import check_plan

    bloom = Transformer(layers=70, hidden=14336, heads=112, seq=2048, vocab=250880)
    layout = check_plan(bloom, Cluster(gpu="A100-80GB", gpus=384), Plan(tp=4, pp=12, dp=8, global_batch=2048))
    assert (layout.layers_per_stage, layout.layers_first, layout.layers_last) == (6, 6, 6)
    llama = _llama(126, 16384, 53248, 128)
    plan = Plan(tp=8, pp=16, dp=64, global_batch=2048, head_stages=True, attention="flash", recompute="full")
    layout = check_plan(llama, Cluster(gpu="H100-SXM", gpus=8192), plan)
    assert (layout.layers_per_stage, layout.layers_first, layout.layers_last) == (8, 7, 7)
    with pytest.raises(ValueError, match="too few"):
        check_plan(SMALL, Cluster(gpu="A100-80GB", gpus=4), Plan(pp=4, global_batch=4))


def test_zero3_combines_with_a_pipeline():
    """FSDP over the data-parallel ranks of each stage: the state is sharded, the stage's 16-bit weights gathered
    once a step and kept for its micro-batches (in the buffers)."""
    llama = _llama(32, 4096, 14336, 32)
    h100 = Cluster(gpu="H100-SXM", gpus=64)
    zero1 = predict(llama, h100, Plan(pp=4, dp=16, micro_batch=1, global_batch=64, zero=1, attention="flash"))
    zero3 = predict(llama, h100, Plan(pp=4, dp=16, micro_batch=1, global_batch=64, zero=3, attention="flash"))
    assert zero3.memory.parameters == pytest.approx(zero1.memory.parameters / 16)
    assert zero3.parts["zero"] > 0 and zero3.fits


def test_zero1_that_all_reduces_pays_a_whole_all_reduce_and_the_gather_back():
    """nanotron's ZeRO-1 with FP32 accumulation: after the backward, an all-reduce of the four-byte gradients at the
    all-reduce rate, NCCL's tree across 32 nodes (2·7 + 2·5 α steps), then the two-byte weights all-gathered, a ring
    of 255 steps; the default ZeRO-1 instead pays the reduce-scatter and the gather as one all-reduce's bytes."""
    from d2lmp.model.cluster.efficiency import FITTED
    from d2lmp.model.cluster.layout import check_plan
    from d2lmp.model.cluster.memory import stage_parameters
    from d2lmp.model.cluster.steptime import all_reduce_bytes, gather_bytes

    big = Transformer(layers=4, hidden=1024, heads=8, seq=2048, vocab=1000)
    cluster = Cluster(gpu="H100-SXM", gpus=256, network_measured=MEASURED)
    plan = Plan(dp=256, global_batch=256, attention="flash", dp_overlap=False, fp32_grad_reduce=True, zero=1,
                zero1_all_reduce=True)
    params = stage_parameters(big, plan, check_plan(big, cluster, plan), "first")
    alpha = FITTED.network_us * 1e-6
    expected = (all_reduce_bytes(4 * params, 256) / 64.9e9 + (2 * 7 + 2 * 5) * alpha
                + gather_bytes(2 * params, 256) / 28e9 + 255 * alpha)
    assert predict(big, cluster, plan).parts["dp"] == pytest.approx(expected)
    scatter = predict(big, cluster, Plan(**{**plan.__dict__, "zero1_all_reduce": False})).parts["dp"]
    assert scatter < expected

from dataclasses import replace

import pytest
import torch

from d2lmp.gpu_specs import NOTABLE_GPUS
from d2lmp.model import costmodel as CM
from d2lmp.model.alpha_beta import GPU_ALPHA_S, GPU_ALPHA_SOURCE
from d2lmp.models import alexnet2012, layer_table
from d2lmp.topology import NVLINK, pcie_bandwidth_gbs


@pytest.fixture(scope="module")
def rows():
    with torch.device("meta"):
        model = alexnet2012()
    return layer_table(model, (1, 3, 224, 224))


def test_presets_are_sourced(rows):
    for hw in CM.PRESETS.values():
        assert hw.source and hw.flops > 0 and hw.link_bytes_per_s > 0 and hw.overlap
    assert CM.PRESETS["2x GTX 580 (PCIe 2.0)"].flops == pytest.approx(512 * 2 * 1.544e9, rel=1e-3)


# preset -> (its row of the GPU table, its link: ("pcie", generation) or ("nvlink", generation))
PRESET_ROWS = {
    "2x GTX 580 (PCIe 2.0)": ("GTX 580", ("pcie", 2)),
    "8x V100 (NVLink 2, hybrid cube-mesh)": ("V100 SXM2", ("nvlink", 2)),
    "8x A100 (NVSwitch)": ("A100 SXM4 40GB", ("nvlink", 3)),
    "8x H100 (NVSwitch)": ("H100 SXM5", ("nvlink", 4)),
}


def test_presets_equal_the_table_rows_they_derive_from():
    assert set(CM.PRESETS) == set(PRESET_ROWS)
    for name, (gpu, (kind, generation)) in PRESET_ROWS.items():
        hw, (spec,) = CM.PRESETS[name], [g for g in NOTABLE_GPUS if g.name == gpu]
        assert hw.flops == spec.fp32_tflops * 1e12, name
        if gpu == "GTX 580":  # AlexNet's 3 GB partner boards, which the row's note names, not the 1.5 GB reference
            assert hw.memory_bytes == 3e9 and spec.memory_gb == 1.5 and "3 GB" in spec.note
        else:
            assert hw.memory_bytes == spec.memory_gb * 1e9, name
        if kind == "pcie":
            assert hw.link_bytes_per_s == pcie_bandwidth_gbs(generation, 16) * 1e9, name
        else:
            _, _, per_link, links = NVLINK[generation]
            assert hw.link_bytes_per_s == links * per_link * 1e9, name
        assert hw.devices == int(name.split("x")[0]) and hw.alpha == GPU_ALPHA_S
        assert set(GPU_ALPHA_SOURCE) <= set(hw.source), "α is sourced on every preset"


def test_one_device_has_no_communication_or_bubble(rows):
    hw = CM.PRESETS["8x H100 (NVSwitch)"].with_devices(1)
    for strategy in CM.STRATEGIES:
        p = CM.predict(rows, strategy, hw, 128)
        assert p.comm_s == 0 and p.bubble_s == 0
        assert p.compute_s == pytest.approx(3 * sum(r.flops for r in rows) * 128 / hw.flops)


def test_memory_and_time_split_as_each_strategy_says(rows):
    hw = CM.PRESETS["8x A100 (NVSwitch)"]
    params = sum(r.params for r in rows) * 4
    dp = CM.predict(rows, "data", hw, 1024)
    assert dp.memory["parameters"] == params  # every replica holds everything
    pp = CM.predict(rows, "pipeline", hw, 1024, micro_batches=8)
    assert pp.memory["parameters"] == pytest.approx(params / 8)
    assert pp.bubble_s == pytest.approx(pp.compute_s * 7 / 8)  # (p-1)/m of a stage
    trick = CM.predict(rows, CM.WEIRD_TRICK, hw, 1024)
    assert trick.memory["parameters"] < dp.memory["parameters"] / 5  # FC weights (96 %) are split
    for p in (dp, pp, trick):  # the default optimizer, SGD with momentum, keeps one FP32 velocity per weight
        assert list(p.memory) == ["parameters", "gradients", "optimizer_state", "saved_activations"]
        assert p.memory["optimizer_state"] == p.memory["gradients"] == p.memory["parameters"]
    adam = CM.predict(rows, "pipeline", hw, 1024, micro_batches=8, optimizer="adam")
    assert adam.memory["optimizer_state"] == pytest.approx(2 * params / 8) and adam.step_s == pp.step_s


def test_pipeline_stage_sizes_set_the_pace(rows):
    hw = CM.PRESETS["8x V100 (NVLink 2, hybrid cube-mesh)"].with_devices(2)
    balanced = CM.predict(rows, "pipeline", hw, 256)
    lopsided = CM.predict(rows, "pipeline", hw, 256, stage_sizes=[1, len(rows) - 1])
    assert lopsided.compute_s > balanced.compute_s
    with pytest.raises(ValueError):
        CM.predict(rows, "pipeline", hw, 256, stage_sizes=[1, 2])


def test_cpu_ranks_do_not_overlap(rows):
    hw = CM.this_machine(1e11, 1e-4, 1e-9)
    assert not hw.overlap
    p = CM.predict(rows, "data", hw, 64)
    assert p.comm_s == pytest.approx(2 * (hw.alpha + sum(r.params for r in rows) * 4 / 2 * 1e-9), rel=0.05)
    with pytest.raises(ValueError):
        CM.this_machine(0, 1e-4, 1e-9)


def test_comm_bytes_are_the_messages_predict_charges(rows):
    """With no latency, a link of 1 byte/s and no overlap, predict's communication time in seconds is the bytes
    sent (the pipeline's critical path aside, which counts its m + p - 1 micro-batch slots)."""
    hw = replace(CM.PRESETS["8x V100 (NVLink 2, hybrid cube-mesh)"], alpha=0.0, link_bytes_per_s=1.0,
                    overlap=False)
    for strategy in ("data", "tensor", CM.WEIRD_TRICK):
        for optimizer in ("momentum", "adam_mixed"):  # FP32 messages, and fp16 gradients and activations
            assert CM.comm_bytes(rows, strategy, 8, 1024, optimizer=optimizer) == \
                pytest.approx(CM.predict(rows, strategy, hw, 1024, optimizer=optimizer).comm_s)
    params = sum(r.params for r in rows)
    assert CM.comm_bytes(rows, "data", 8, 1024) == pytest.approx(2 * 7 / 8 * params * 4)
    assert CM.comm_bytes(rows, "data", 8, 1024, optimizer="adam_mixed") == pytest.approx(2 * 7 / 8 * params * 2)
    m = 8
    pipeline = CM.predict(rows, "pipeline", hw, 1024, micro_batches=m).comm_s
    assert CM.comm_bytes(rows, "pipeline", 8, 1024) == pytest.approx(pipeline * m / (m + 8 - 1))
    assert CM.comm_bytes(rows, "pipeline", 2, 1024) == pytest.approx(CM.comm_bytes(rows, "pipeline", 8, 1024) / 2)
    assert all(CM.comm_bytes(rows, s, 1, 1024) == 0 for s in CM.STRATEGIES)
    # AlexNet: the one weird trick sends the fewest bytes, splitting every layer the most
    sent = {s: CM.comm_bytes(rows, s, 8, 1024) for s in CM.STRATEGIES}
    assert min(sent, key=sent.get) == CM.WEIRD_TRICK and max(sent, key=sent.get) == "tensor"
    with pytest.raises(ValueError):
        CM.comm_bytes(rows, "expert", 8, 1024)


def test_tensor_parallel_sends_each_layers_output_and_its_inputs_gradient(rows):
    """All-gather of every split layer's output; all-reduce of its input's gradient, the previous row's output,
    except for the first layer, whose input is the data."""
    n, batch = 8, 16
    expected = 0.0
    for i, r in enumerate(rows):
        if r.flops > 0:
            expected += 7 / 8 * r.activation_bytes * batch
            if i > 0:
                expected += 2 * 7 / 8 * rows[i - 1].activation_bytes * batch
    assert CM.comm_bytes(rows, "tensor", n, batch) == pytest.approx(expected)
    first = next(i for i, r in enumerate(rows) if r.flops > 0)
    assert first == 0  # the data's gradient is never sent
    # Latency only (an endless link): each split layer pays an all-gather's (n-1)α, and all but the first an
    # all-reduce's 2(n-1)α; a message that is never sent costs no latency either.
    hw = replace(CM.PRESETS["8x V100 (NVLink 2, hybrid cube-mesh)"], alpha=1e-5, link_bytes_per_s=float("inf"))
    split = sum(r.flops > 0 for r in rows)
    assert CM.predict(rows, "tensor", hw, batch).comm_s == pytest.approx((split * 7 + (split - 1) * 14) * 1e-5)


def test_bad_strategy(rows):
    h100 = CM.PRESETS["8x H100 (NVSwitch)"]
    with pytest.raises(ValueError, match="available: data, pipeline, tensor, one weird trick, or 'hybrid' with grid="):
        CM.predict(rows, "expert", h100, 64)
    with pytest.raises(ValueError, match="is a data × tensor grid: pass grid="):  # one name per idea
        CM.predict(rows, CM.GRID, h100, 64)
    with pytest.raises(ValueError, match="grid= belongs to the data × tensor grid"):
        CM.predict(rows, CM.WEIRD_TRICK, h100, 64, grid=(2, 4))


def test_message_sizes_are_what_each_strategy_sends(rows):
    """The listing's bookkeeping: each buffer read off the layer table, at the optimizer's widths."""
    batch = 64
    m = CM.message_sizes(rows, batch)
    params = sum(r.params for r in rows)
    conv = sum(r.params for r in rows if r.kind != "Linear")
    assert m.gradients == 4 * params and m.conv_gradients == 4 * conv
    assert m.boundary == pytest.approx(sum(r.activation_bytes for r in rows) / len(rows) * batch)
    linear = [r for r in rows if r.kind == "Linear"]
    assert [x / (4 * batch) for x in m.fc_inputs] == [9216, 4096, 4096]  # AlexNet's fc6, fc7, fc8 inputs
    assert len(m.split_layers) == sum(r.flops > 0 for r in rows) and m.split_layers[0][1] == 0
    assert len(linear) == 3
    half = CM.message_sizes(rows, batch, optimizer="adam_mixed")  # 2-byte gradients and activations
    assert half.gradients == m.gradients / 2 and half.fc_inputs == tuple(x / 2 for x in m.fc_inputs)
    # a table counted for 8 examples says the same per step
    eight = [replace(r, flops=8 * r.flops, macs=8 * r.macs, activation_bytes=8 * r.activation_bytes) for r in rows]
    assert CM.message_sizes(eight, batch, batch_of_table=8) == pytest.approx(m)

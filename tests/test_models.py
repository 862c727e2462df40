"""Model parameter counts (torchvision's published one, and the counts the paper's and D2L's layer shapes
give), layer tables, shapes."""

import dataclasses

import pytest
import torch

from d2lmp.models import (
    LRN_ALPHA,
    LRN_BETA,
    LRN_K,
    LRN_N,
    AlexNetSummary,
    LayerRow,
    LayerShare,
    LayerTotals,
    alexnet2012,
    alexnet_d2l,
    alexnet_small,
    alexnet_summary,
    alexnet_torchvision,
    count_parameters,
    format_layer_table,
    layer_table,
    lenet5,
    mlp,
    paper_lrn,
    params_vs_flops,
    pipeline_model,
    totals,
)

TORCHVISION_SHAPES = {  # torchvision.models.alexnet().state_dict() (bibliography: torchvision_alexnet_docs)
    "features.0.weight": (64, 3, 11, 11), "features.0.bias": (64,),
    "features.3.weight": (192, 64, 5, 5), "features.3.bias": (192,),
    "features.6.weight": (384, 192, 3, 3), "features.6.bias": (384,),
    "features.8.weight": (256, 384, 3, 3), "features.8.bias": (256,),
    "features.10.weight": (256, 256, 3, 3), "features.10.bias": (256,),
    "classifier.1.weight": (4096, 9216), "classifier.1.bias": (4096,),
    "classifier.4.weight": (4096, 4096), "classifier.4.bias": (4096,),
    "classifier.6.weight": (1000, 4096), "classifier.6.bias": (1000,),
}


def meta(fn, *args, **kwargs):
    with torch.device("meta"):
        return fn(*args, **kwargs)


def test_torchvision_names_shapes_and_count():
    model = meta(alexnet_torchvision)
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == TORCHVISION_SHAPES
    assert count_parameters(model) == 61_100_840  # torchvision's AlexNet_Weights meta num_params

@pytest.mark.slow

def test_torchvision_state_dict_loads_unchanged_and_runs():
    model = alexnet_torchvision(num_classes=10)
    model.load_state_dict(alexnet_torchvision(num_classes=10).state_dict())
    assert model.eval()(torch.zeros(1, 3, 63, 63)).shape == (1, 10)  # torchvision's min_size 63×63


def test_paper_alexnet_count_and_layers():
    model = meta(alexnet2012, init="torch")
    assert count_parameters(model) == 60_965_224  # the "60 million" of Krizhevsky et al. 2012 (abstract)
    rows = {r.name.split(".")[-1]: r for r in layer_table(model, (1, 3, 224, 224))}
    expected = {"conv1": 34_944, "conv2": 307_456, "conv3": 885_120, "conv4": 663_936, "conv5": 442_624,
                "fc6": 37_752_832, "fc7": 16_781_312, "fc8": 4_097_000}
    assert {k: rows[k].params for k in expected} == expected
    assert rows["conv1"].output_shape == (1, 96, 55, 55)
    assert rows["pool2"].output_shape == (1, 256, 13, 13)
    assert rows["pool5"].output_shape == (1, 256, 6, 6)
    assert [model.features.conv2.groups, model.features.conv3.groups, model.features.conv4.groups,
            model.features.conv5.groups] == [2, 1, 2, 2]


def test_paper_lrn_constants_and_formula():
    assert (LRN_K, LRN_N, LRN_ALPHA, LRN_BETA) == (2.0, 5, 1e-4, 0.75)
    x = torch.rand(1, 7, 2, 2) * 30
    out = paper_lrn()(x)
    # b_c = a_c / (k + α Σ_{c' within n/2} a_c'²)^β (paper §3.3)
    c = 3
    expected = x[0, c] / (LRN_K + LRN_ALPHA * (x[0, c - 2:c + 3] ** 2).sum(0)) ** LRN_BETA
    torch.testing.assert_close(out[0, c], expected)


def test_paper_init():
    model = alexnet2012(num_classes=10, width=0.25, input_size=96).requires_grad_(False)
    f = model.features
    assert float(f.conv1.bias.abs().max()) == 0 and float(f.conv2.bias.min()) == 1.0
    assert float(model.classifier.fc6.bias.min()) == 1.0 and float(model.classifier.fc8.bias.abs().max()) == 0
    assert abs(float(f.conv3.weight.std()) - 0.01) < 0.002
    with pytest.raises(ValueError, match="init"):
        alexnet2012(init="xavier")


def test_alexnet2012_fc6_fits_pool5_at_any_input_size():
    for size in (63, 100, 227):  # fc6's input is counted, not probed: the forward pass must agree with it
        model = alexnet2012(num_classes=3, width=0.125, input_size=size, init="torch").eval()
        with torch.no_grad():
            assert model(torch.zeros(1, 3, size, size)).shape == (1, 3)
    with pytest.raises(ValueError, match="too small"):
        alexnet2012(input_size=40)


def test_d2l_alexnet_count():
    assert count_parameters(meta(alexnet_d2l)) == 46_764_746  # 1 input channel, 10 classes
    rows = layer_table(meta(alexnet_d2l), (1, 1, 224, 224))
    assert rows[-1].output_shape == (1, 10)
    flatten = next(r for r in rows if r.kind == "Flatten")
    assert flatten.output_shape == (1, 6400)


def test_lenet_count_from_the_formula():
    expected = (6 * 25 + 6) + (16 * 6 * 25 + 16) + (400 * 120 + 120) + (120 * 84 + 84) + (84 * 10 + 10)
    model = lenet5()
    assert count_parameters(model) == expected == 61_706
    assert model(torch.zeros(2, 1, 28, 28)).shape == (2, 10)


def test_layer_table_counts_macs_flops_and_bytes():
    model = meta(alexnet_torchvision)
    rows = layer_table(model, (1, 3, 224, 224))
    t = totals(rows)
    assert t.params == 61_100_840
    assert t.macs == 714_188_480  # torchvision's meta `_ops` 0.714 GFLOPS counts multiply-adds
    assert t.flops == 2 * t.macs
    conv1 = rows[0]
    assert conv1.output_shape == (1, 64, 55, 55)
    assert conv1.macs == 64 * 55 * 55 * 3 * 11 * 11
    assert conv1.activation_bytes == 64 * 55 * 55 * 4
    batch2 = totals(layer_table(model, (2, 3, 224, 224)))
    assert batch2.macs == 2 * t.macs and batch2.params == t.params
    text = format_layer_table(rows)
    assert "61,100,840" in text and "ReLU" not in text
    with pytest.raises(ValueError, match="batch"):
        layer_table(model, (224,))


def test_params_live_in_fc_and_compute_in_conv():
    rows = layer_table(meta(alexnet2012, init="torch"), (1, 3, 224, 224))
    shares = params_vs_flops(rows)
    fc_params = sum(s.param_share for s in shares if s.kind == "Linear")
    conv_flops = sum(s.flop_share for s in shares if s.kind == "Conv2d")
    assert fc_params > 0.95 and conv_flops > 0.9  # FC: (60,965,224 − 2,334,080 conv) / 60,965,224 = 96 %
    assert sum(s.param_share for s in shares) == pytest.approx(1.0)


def test_layer_table_records_are_frozen():
    rows = layer_table(lenet5(), (1, 1, 28, 28))
    assert all(type(r) is LayerRow for r in rows)
    t = totals(rows)
    assert t == LayerTotals(params=61_706, macs=sum(r.macs for r in rows), flops=sum(r.flops for r in rows),
                            activation_bytes=sum(r.activation_bytes for r in rows))
    shares = params_vs_flops(rows)
    assert all(type(s) is LayerShare for s in shares)
    for record in (rows[0], t, shares[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.params = 0


def test_alexnet_summary_width_and_input_size():
    base = alexnet_summary()
    assert isinstance(base, AlexNetSummary) and isinstance(base.totals, LayerTotals)
    assert base.totals.params == 60_965_224
    half = alexnet_summary(width=0.5)
    assert half.totals.params < base.totals.params / 3
    small = alexnet_summary(input_size=63)
    assert small.rows[-1].output_shape == (1, 1000)
    with pytest.raises(ValueError, match="too small"):
        alexnet_summary(input_size=40)


def test_small_alexnet_is_alexnet_shaped():
    model = alexnet_small()
    kinds = [type(m).__name__ for m in model.modules() if not list(m.children())]
    assert kinds.count("Conv2d") == 5 and kinds.count("Linear") == 3 and kinds.count("Dropout") == 2
    assert kinds.count("MaxPool2d") == 3
    assert model(torch.zeros(4, 1, 32, 32)).shape == (4, 10)
    with pytest.raises(ValueError):
        alexnet_small(width=1)


def test_mlp_layers_in_order():
    kinds = [type(m).__name__ for m in mlp(64, (32, 16), 10, dropout=0.5)]
    assert kinds == ["Flatten", "Linear", "ReLU", "Dropout", "Linear", "ReLU", "Dropout", "Linear"]
    assert [type(m).__name__ for m in mlp(8, (4,), 2, flatten=False)] == ["Linear", "ReLU", "Linear"]
    assert mlp(64, (32,), 10)(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    for bad in ((), (0,)):
        with pytest.raises(ValueError):
            mlp(8, bad, 2)


def test_pipeline_model_is_one_flat_seeded_sequential():
    a, b = pipeline_model(), pipeline_model()
    assert all(not list(layer.children()) for layer in a)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert a(torch.zeros(1, 3, 115, 115)).shape == (1, 10)


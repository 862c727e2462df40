"""Convolution three ways against torch.nn.functional.conv2d (values, shapes, gradients, errors)."""

import pytest
import torch
import torch.nn.functional as F
from conftest import requires_cuda
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmp.bench.conv import benchmark_conv, conv_points
from d2lmp.conv import (
    ALEXNET_2012_CONV,
    ConvLayer,
    check_conv_shapes,
    check_layer,
    conv2d_c01b,
    conv2d_flops,
    conv2d_im2col,
    conv2d_loops,
    conv2d_macs,
    conv_output_size,
    cuda_convnet_fit,
    filters_to_c01b,
    from_c01b,
    im2col_size,
    to_c01b,
)


@st.composite
def conv_cases(draw, allow_groups=True, max_size=9):
    groups = draw(st.integers(1, 3)) if allow_groups else 1
    cin = groups * draw(st.integers(1, 3))
    cout = groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = draw(st.one_of(st.integers(1, 3), st.tuples(st.integers(1, 3), st.integers(1, 3))))
    padding = draw(st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))))
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    h = draw(st.integers(max(1, kh - 2 * ph), max_size))
    w = draw(st.integers(max(1, kw - 2 * pw), max_size))
    n = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cin, h, w, generator=g, dtype=torch.float64)
    wt = torch.randn(cout, cin // groups, kh, kw, generator=g, dtype=torch.float64)
    b = torch.randn(cout, generator=g, dtype=torch.float64) if draw(st.booleans()) else None
    return x, wt, b, stride, padding, groups


@settings(max_examples=60, deadline=None)
@given(conv_cases())
def test_im2col_equals_conv2d(case):
    x, w, b, stride, padding, groups = case
    expected = F.conv2d(x, w, b, stride, padding, 1, groups)
    got = conv2d_im2col(x, w, b, stride, padding, groups)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected)


@settings(max_examples=60, deadline=None)
@given(conv_cases())
def test_c01b_equals_conv2d(case):
    x, w, b, stride, padding, groups = case
    expected = F.conv2d(x, w, b, stride, padding, 1, groups)
    got = conv2d_c01b(to_c01b(x), filters_to_c01b(w), b, stride, padding, groups)
    assert got.shape == (expected.shape[1], *expected.shape[2:], expected.shape[0])
    torch.testing.assert_close(from_c01b(got), expected)


@settings(max_examples=15, deadline=None)
@given(conv_cases(allow_groups=False, max_size=6))
def test_loops_equal_conv2d(case):
    x, w, b, stride, padding, _ = case
    torch.testing.assert_close(conv2d_loops(x, w, b, stride, padding), F.conv2d(x, w, b, stride, padding))


@settings(max_examples=20, deadline=None)
@given(conv_cases(max_size=7))
def test_gradients_flow_like_conv2d(case):
    x, w, b, stride, padding, groups = case
    grads = []
    for fn in (lambda *a: F.conv2d(*a[:5], 1, a[5]), conv2d_im2col,
               lambda x, w, b, s, p, g: from_c01b(conv2d_c01b(to_c01b(x), filters_to_c01b(w), b, s, p, g))):
        xx, ww = x.clone().requires_grad_(), w.clone().requires_grad_()
        fn(xx, ww, b, stride, padding, groups).sin().sum().backward()
        grads.append((xx.grad, ww.grad))
    for gx, gw in grads[1:]:
        torch.testing.assert_close(gx, grads[0][0])
        torch.testing.assert_close(gw, grads[0][1])


def test_im2col_columns_match_f_unfold():
    from d2lmp.conv import im2col_columns

    x = torch.randn(2, 6, 7, 8, generator=torch.Generator().manual_seed(5))
    cols = im2col_columns(x, 3, stride=2, padding=1, groups=3)
    ref = F.unfold(x, 3, padding=1, stride=2)  # (N, C·9, L)
    assert cols.shape == (2, 3, 2 * 9, ref.shape[-1])
    torch.testing.assert_close(cols.reshape(2, 6 * 9, -1), ref)


def test_layout_round_trips():
    x = torch.randn(2, 3, 4, 5)
    assert to_c01b(x).shape == (3, 4, 5, 2) and to_c01b(x).is_contiguous()
    assert torch.equal(from_c01b(to_c01b(x)), x)
    assert filters_to_c01b(torch.randn(8, 3, 5, 5)).shape == (3, 5, 5, 8)
    # batch innermost: neighbouring images of one pixel are neighbours in memory
    c = to_c01b(x)
    assert c.stride()[-1] == 1 and c[0, 0, 0, 1].data_ptr() - c[0, 0, 0, 0].data_ptr() == c.element_size()


@pytest.mark.parametrize("x_shape, w_shape, kwargs, words", [
    ((3, 8, 8), (4, 3, 3, 3), {}, ["4-D", "(3, 8, 8)"]),
    ((1, 3, 8, 8), (4, 3, 3), {}, ["4-D", "(4, 3, 3)"]),
    ((1, 3, 8, 8), (4, 2, 3, 3), {}, ["(1, 3, 8, 8)", "(4, 2, 3, 3)"]),
    ((1, 4, 8, 8), (6, 2, 3, 3), {"groups": 3}, ["groups=3", "(1, 4, 8, 8)"]),
    ((1, 4, 8, 8), (5, 2, 3, 3), {"groups": 2}, ["groups=2", "(5, 2, 3, 3)"]),
    ((1, 3, 4, 4), (2, 3, 7, 7), {"padding": 1}, ["larger than the padded input", "6×6"]),
    ((1, 3, 8, 8), (2, 3, 3, 3), {"stride": 0}, ["stride"]),
    ((1, 3, 8, 8), (2, 3, 3, 3), {"padding": -1}, ["padding"]),
])
def test_bad_input_raises_value_error_naming_shapes(x_shape, w_shape, kwargs, words):
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    for call in (lambda: conv2d_im2col(x, w, **kwargs), lambda: check_conv_shapes(x_shape, w_shape, **kwargs)):
        with pytest.raises(ValueError) as info:
            call()
        for word in words:
            assert word in str(info.value)
    if len(x_shape) == 4 and len(w_shape) == 4 and "groups" not in kwargs:
        with pytest.raises(ValueError):
            conv2d_loops(x, w, **kwargs)
        with pytest.raises(ValueError, match="c01b"):
            conv2d_c01b(to_c01b(x), filters_to_c01b(w), **kwargs)


def test_bias_shape_is_checked():
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        conv2d_im2col(torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(3))


def test_counts_for_alexnet_conv1():
    # conv1 of the paper (Krizhevsky et al. 2012, §3.5; bibliography: krizhevsky2012imagenet): 96 kernels
    # 11×11×3, stride 4; a 224 input padded by 2 → (224 + 4 − 11) // 4 + 1 = 55×55
    assert conv_output_size(224, 11, 4, 2) == 55
    macs = conv2d_macs((1, 3, 224, 224), (96, 3, 11, 11), 4, 2)
    assert macs == 96 * 55 * 55 * 3 * 11 * 11
    assert conv2d_flops((1, 3, 224, 224), (96, 3, 11, 11), 4, 2) == 2 * macs
    size = im2col_size((1, 3, 224, 224), 11, 4, 2)
    assert (size.rows, size.cols) == (363, 3025)
    assert size.bytes == 363 * 3025 * 4
    assert size.blowup == pytest.approx(363 * 3025 / (3 * 224 * 224))


def test_alexnet_layers_total_the_paper_parameter_count():
    convs = sum(c.w_shape[0] * c.w_shape[1] * c.w_shape[2] * c.w_shape[3] + c.out_channels for c in ALEXNET_2012_CONV)
    assert convs == 34_944 + 307_456 + 885_120 + 663_936 + 442_624  # e.g. conv1: 96·3·11·11 + 96 biases
    assert [ConvLayer("c", 3, 224, 96, 11, 4, 2).w_shape] == [(96, 3, 11, 11)]


def test_check_layer_and_benchmark_rows():
    layer = ConvLayer("tiny", 4, 9, 8, 3, padding=1, groups=2)
    errs = check_layer(layer, batch=2)
    assert errs.im2col < 1e-5 and errs.c01b < 1e-5
    rows = benchmark_conv([layer], batch=2, min_time=0.01, rounds=1)
    assert [r.impl for r in rows] == ["F.conv2d", "im2col", "c01b", "copy only", "GEMM only"]
    assert rows[0].ratio == 1.0 and all(r.seconds > 0 for r in rows)
    assert all((r.gflops is None) == (r.impl == "copy only") for r in rows)  # a copy does no arithmetic
    assert [p.name for p in conv_points(rows)] == ["tiny (F.conv2d)"]
    with pytest.raises(ValueError, match="available"):
        benchmark_conv([layer], implementations=["winograd"])


@requires_cuda
def test_cuda_implementations_match():
    for layer in ALEXNET_2012_CONV:
        errs = check_layer(layer, batch=2, device="cuda")
        assert max(errs.im2col, errs.c01b) < 1e-2 * errs.max_abs_ref, errs


@pytest.mark.slow
def test_bench_conv_command_prints_ratios(capsys):
    from d2lmp.commands.main import main

    assert main(["bench", "conv", "--batch", "1", "--devices", "cpu", "--min-time", "0.01", "--gemm-size", "512"]) == 0
    out = capsys.readouterr().out
    assert "F.conv2d" in out and "cpu im2col: ratio to F.conv2d" in out and "cpu c01b" in out
    assert "the same 512³ FP32 product through two libraries" in out and "torch.matmul" in out
    assert "goal: im2col / its own lower bound (copy only + GEMM only, same run), every layer on cpu <= 1.2×: " \
        "worst " in out and "goal for im2col" not in out
    assert main(["bench", "conv", "--devices", "cuda:5"]) == 2
    assert main(["bench", "conv", "--gemm-size", "0"]) == 2  # checked before anything runs
    assert "--gemm-size must be positive, got 0" in capsys.readouterr().err


def test_im2col_over_lower_bound_is_time_over_its_two_parts():
    from d2lmp.bench.conv import ConvTiming, im2col_over_lower_bound

    def row(impl, seconds):
        return ConvTiming(layer="a", impl=impl, device="cpu", batch=1, seconds=seconds, gflops=1.0, ratio=1.0,
                          flops=1, bytes=1)

    rows = [row("im2col", 3.0), row("copy only", 1.0), row("GEMM only", 1.5), row("F.conv2d", 0.5)]
    assert im2col_over_lower_bound(rows) == {"a": pytest.approx(1.2)}
    with pytest.raises(ValueError, match="copy only"):
        im2col_over_lower_bound(rows[:1])


def test_cuda_convnet_constraints_on_alexnet():
    fits = [cuda_convnet_fit(layer, 128) for layer in ALEXNET_2012_CONV]
    assert all(f.filters_multiple_of_16 and f.channels_supported and f.stride_at_most_kernel for f in fits)
    assert all(f.batch_multiple_of_128 and f.images_per_thread == 4 for f in fits)
    odd = cuda_convnet_fit(ConvLayer("odd", 5, 8, 24, 3), 64)
    assert not odd.filters_multiple_of_16 and not odd.channels_supported and odd.images_per_thread == 2


def test_onednn_matmul_equals_torch_matmul_where_exposed():
    from d2lmp.bench.conv import onednn_matmul

    mm = onednn_matmul()
    if mm is None:
        pytest.skip("this torch does not expose oneDNN's matrix product")
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(37, 19, generator=g), torch.randn(23, 19, generator=g)
    torch.testing.assert_close(mm(a, b), a @ b.T, rtol=1e-5, atol=1e-5)


def test_compare_gemm_libraries_rows():
    from d2lmp.bench.conv import blas_name, compare_gemm_libraries

    rows = compare_gemm_libraries(n=128, min_time=0.01)
    assert rows[0].library == f"torch.matmul ({blas_name()})" and rows[0].ratio == 1.0
    assert all(r.gflops > 0 for r in rows)
    with pytest.raises(ValueError):
        compare_gemm_libraries(n=0)

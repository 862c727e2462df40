"""ipywidgets front-ends. Each wraps a pure, tested function from the package and only
draws what that function returns; the notebooks also show one default result as a
plain plot, so they read well where widgets cannot render."""

from __future__ import annotations


def _show(fig):
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)


def cube_widget():
    """Rotate a cube with two sliders: every frame is one (8, 4) @ (4, 4) matrix product."""
    import ipywidgets as w

    from .graphics import cube_edges, cube_vertices, project, rotation_x, rotation_y, transform_batched
    from .plots import plot_wireframe

    def draw(yaw=30, pitch=20):
        import math

        m = rotation_x(math.radians(pitch)) @ rotation_y(math.radians(yaw))
        pts = project(transform_batched(cube_vertices(), m))
        _show(plot_wireframe(pts, cube_edges(), title=f"yaw {yaw}°, pitch {pitch}°"))

    return w.interactive(draw, yaw=w.IntSlider(30, 0, 360, 5, description="yaw (°)"),
                         pitch=w.IntSlider(20, -90, 90, 5, description="pitch (°)"))


def matmul_widget(sizes=(128, 256, 512, 1024, 2048), min_time: float = 0.1):
    """Pick size, dtype and a device that is present; press the button to measure one matmul."""
    import ipywidgets as w

    from .hardware import peak_gflops, torch_devices
    from .timing import DTYPES, time_matmul

    size = w.Dropdown(options=list(sizes), value=sizes[len(sizes) // 2], description="n")
    dtype = w.Dropdown(options=list(DTYPES), value="float32", description="dtype")
    device = w.Dropdown(options=torch_devices(), description="device")
    button = w.Button(description="Measure")
    out = w.Output()

    def measure(_=None):
        out.clear_output()
        with out:
            m = time_matmul(size.value, dtype.value, device.value, min_time=min_time)
            peak, source = peak_gflops(device.value, dtype.value)
            ratio = f"{m.extra['gflops'] / peak:.0%} of the estimated peak" if peak else source
            print(f"{size.value}×{size.value} {dtype.value} on {device.value}: {m.median * 1e3:.3f} ms "
                  f"(IQR {m.spread:.0%}), {m.extra['gflops']:,.1f} GFLOP/s, {ratio}")

    button.on_click(measure)
    measure()
    return w.VBox([w.HBox([size, dtype, device, button]), out])


def power_widget():
    """Clock fraction, power exponent and parallel fraction → cores and throughput for one budget."""
    import ipywidgets as w

    from .plots import plot_power_model
    from .power import EXPONENTS, many_slow_cores

    def draw(clock=0.25, exponent=3, parallel=1.0):
        r = many_slow_cores(clock, exponent, parallel_fraction=parallel)
        print(f"{EXPONENTS[exponent]}: each core at {clock:.0%} clock draws {r.power_per_core:.3f} of the budget, "
              f"so {r.cores:.1f} cores fit; throughput {r.throughput:.2f}×, speedup with "
              f"{parallel:.0%} parallel work {r.speedup:.2f}×")
        _show(plot_power_model(exponent, parallel, marked=clock))

    return w.interactive(
        draw,
        clock=w.FloatSlider(value=0.25, min=0.1, max=1.0, step=0.05, description="clock"),
        exponent=w.Dropdown(options=[(v, k) for k, v in EXPONENTS.items()], value=3, description="power law"),
        parallel=w.FloatSlider(value=1.0, min=0.0, max=1.0, step=0.05, description="parallel"),
    )


def roofline_widget(peak_gflops: float, bandwidth_gbs: float, points=(), **plot_kwargs):
    """Slide an arithmetic intensity along this machine's roofline and read the bound.

    ``plot_kwargs`` (label, peak_estimate, title, ...) go to ``plots.plot_roofline``.
    """
    import ipywidgets as w

    from .plots import plot_roofline
    from .roofline import OpPoint, attainable_gflops, ridge_point

    def draw(log10_intensity=0.0):
        ai = 10**log10_intensity
        bound = attainable_gflops(ai, peak_gflops, bandwidth_gbs)
        kind = "memory-bound" if ai < ridge_point(peak_gflops, bandwidth_gbs) else "compute-bound"
        print(f"{ai:.3g} FLOP/byte → at most {bound:,.1f} GFLOP/s ({kind})")
        marker = OpPoint.from_rates("your op (at its bound)", ai, bound)
        _show(plot_roofline(peak_gflops, bandwidth_gbs, list(points) + [marker], **plot_kwargs))

    return w.interactive(draw, log10_intensity=w.FloatSlider(
        value=0.0, min=-2.0, max=3.0, step=0.1, description="log10 AI"))


def alexnet_widget():
    """Input size and width → AlexNet's (2012) layer shapes, parameters and FLOPs, and where they live."""
    import ipywidgets as w

    from .models import alexnet_summary, format_layer_table, params_vs_flops
    from .plots import plot_params_vs_flops

    def draw(input_size=224, width=1.0):
        s = alexnet_summary(input_size=input_size, width=width)
        t = s["totals"]
        print(f"input {input_size}×{input_size}, width ×{width}: {t['params']:,} parameters, "
              f"{t['flops'] / 1e9:.2f} GFLOPs per image; conv layers do {s['conv_flop_share']:.0%} of the FLOPs, "
              f"FC layers hold {s['fc_param_share']:.0%} of the parameters")
        print(format_layer_table(s["rows"], skip_kinds=("ReLU", "Dropout", "Flatten", "LocalResponseNorm")))
        _show(plot_params_vs_flops(params_vs_flops(s["rows"])))

    return w.interactive(draw, input_size=w.IntSlider(224, 64, 320, 16, description="input size"),
                         width=w.SelectionSlider(options=[0.25, 0.5, 0.75, 1.0, 1.5, 2.0], value=1.0,
                                                 description="width ×"))


def im2col_widget():
    """Kernel, stride, channels, input size and batch → the im2col matrix's size and its blow-up over the input."""
    import ipywidgets as w

    from .conv import im2col_size
    from .plots import plot_im2col_memory

    def draw(kernel=3, stride=1, channels=64, size=27, batch=16):
        m = im2col_size((batch, channels, size, size), kernel, stride, kernel // 2)
        print(f"input {batch}×{channels}×{size}×{size} = {m.input_elements * 4 / 2**20:,.2f} MiB; im2col matrix "
              f"{m.rows:,} × {m.cols:,} = {m.bytes / 2**20:,.2f} MiB ({m.blowup:.1f}× the input)")
        _show(plot_im2col_memory(channels, size, batch, marked=(kernel, stride)))

    return w.interactive(draw,
                         kernel=w.IntSlider(3, 1, 11, 2, description="kernel"),
                         stride=w.IntSlider(1, 1, 4, 1, description="stride"),
                         channels=w.IntSlider(64, 1, 512, 1, description="channels"),
                         size=w.IntSlider(27, 11, 224, 1, description="input size"),
                         batch=w.IntSlider(16, 1, 128, 1, description="batch"))


def bandwidth_widget():
    """Bus width and data rate per pin → peak bandwidth, with the known GPUs (sourced table) for comparison."""
    import ipywidgets as w

    from .bandwidth import bus_bandwidth_gbs, gpu_memory_table
    from .plots import plot_bus_bandwidth

    table = gpu_memory_table()

    def draw(bus_bits=384, gbps=14.0):
        print(f"{bus_bits}-bit bus × {gbps:g} Gb/s per pin / 8 = {bus_bandwidth_gbs(bus_bits, gbps):,.0f} GB/s")
        _show(plot_bus_bandwidth(table, marked=(bus_bits, gbps)))

    return w.interactive(draw,
                         bus_bits=w.SelectionSlider(options=[64, 128, 192, 256, 320, 352, 384, 512, 1024, 2048,
                                                             4096, 5120, 6144, 8192],
                                                    value=384, description="bus bits"),
                         gbps=w.FloatSlider(value=14.0, min=1.0, max=32.0, step=0.5, description="Gb/s per pin"))


def power_budget_widget():
    """GPUs × board power + CPU + the rest against a power supply kept below a headroom."""
    import ipywidgets as w

    from .gpu_specs import NOTABLE_GPUS
    from .plots import plot_power_budget
    from .topology import power_budget

    def draw(gpus=2, gpu="RTX 2080 Ti", cpu_watts=150, other_watts=100, psu_watts=1000, headroom=0.2):
        spec = next(s for s in NOTABLE_GPUS if s.name == gpu)
        b = power_budget(gpus, spec.tdp_w, cpu_watts, other_watts, psu_watts, headroom)
        print(f"{gpus} × {spec.name} ({spec.tdp_w:g} W board power, vendor figure) + CPU {cpu_watts} W + rest "
              f"{other_watts} W = {b['load']:,.0f} W; supply needed with {headroom:.0%} headroom: "
              f"{b['psu_needed']:,.0f} W → {'fits' if b['fits'] else 'does not fit'}")
        _show(plot_power_budget(b))

    return w.interactive(draw,
                         gpus=w.IntSlider(2, 1, 8, 1, description="GPUs"),
                         gpu=w.Dropdown(options=[s.name for s in NOTABLE_GPUS], value="RTX 2080 Ti", description="GPU"),
                         cpu_watts=w.IntSlider(150, 50, 700, 10, description="CPU W"),
                         other_watts=w.IntSlider(100, 0, 1000, 10, description="rest W"),
                         psu_watts=w.IntSlider(1000, 300, 6000, 50, description="supply W"),
                         headroom=w.FloatSlider(value=0.2, min=0.0, max=0.5, step=0.05, description="headroom"))


def memory_widget():
    """Batch size and optimizer → predicted memory of a training step and of inference for D2L's AlexNet."""
    import ipywidgets as w
    import torch

    from .memory import breakdown_rows
    from .models import alexnet_d2l
    from .plots import plot_memory_breakdown

    with torch.device("meta"):
        model = alexnet_d2l()

    def draw(batch=128, optimizer="adam"):
        rows = breakdown_rows(model, (batch, 1, 224, 224), optimizer, device_type="cuda")
        t, i = (sum(v for k, v in r.items() if k != "label") for r in rows)
        print(f"D2L AlexNet (224×224, FP32), batch {batch}: training {t / 2**30:.2f} GiB, inference "
              f"{i / 2**30:.2f} GiB ({t / i:.1f}× less)")
        _show(plot_memory_breakdown(rows, unit="GiB", title=f"D2L AlexNet, batch {batch}, {optimizer}"))

    return w.interactive(draw, batch=w.SelectionSlider(options=[1, 8, 32, 64, 128, 256, 512], value=128,
                                                       description="batch"),
                         optimizer=w.Dropdown(options=["sgd", "momentum", "adam"], value="adam",
                                              description="optimizer"))


def loss_scale_widget(gradients):
    """Slide the loss scale (a power of two) and watch gradients move into FP16's range or out past its max."""
    import ipywidgets as w

    from .plots import plot_exponent_histogram
    from .precision import underflow_fractions

    def draw(log2_scale=0):
        f = underflow_fractions(gradients, 2.0**log2_scale)
        print(f"scale 2^{log2_scale}: {f['zero']:.2%} flushed to zero, {f['subnormal']:.2%} subnormal, "
              f"{f['overflow']:.2%} overflow (of {f['count']:,} non-zero gradients)")
        _show(plot_exponent_histogram(gradients, 2.0**log2_scale))

    return w.interactive(draw, log2_scale=w.IntSlider(0, 0, 30, 1, description="log2 scale"))

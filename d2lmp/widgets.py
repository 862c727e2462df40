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

    from .roofline import OpPoint, attainable_gflops, ridge_point
    from .plots import plot_roofline

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

"""Matrix-multiplication speed: the size sweep against the peak, and a widget that times one product."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from d2lmp.views.figure import fig_ax

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from d2lmp.timing import MatmulRow

__all__ = ["plot_matmul_sweep", "matmul_widget"]


def plot_matmul_sweep(rows: Sequence[MatmulRow], ax: Axes | None = None,
                      title: str = "Matrix multiplication throughput", recorded_rows: Sequence[MatmulRow] = (),
                      recorded_label: str | None = None) -> Figure:
    """GFLOP/s against matrix size, one line per (device, dtype), with dashed peak lines.

    ``recorded_rows`` (e.g. an H200 sweep from ``d2lmp.recorded``) are drawn apart from the
    live ``rows``: hollow markers, dotted lines, every legend entry carrying ``recorded_label``. Their
    peak line is the vendor's figure for that GPU, labelled as such: only the sweep was recorded.
    """
    if not rows and not recorded_rows:
        raise ValueError("nothing to plot: rows and recorded_rows are both empty")
    if recorded_rows and not recorded_label:
        raise ValueError("recorded_rows need a recorded_label saying where they were measured")
    fig, ax = fig_ax(ax)
    series = [(rows, None), (recorded_rows, recorded_label)]
    for data, source in series:
        groups: dict[tuple[str, str], list[MatmulRow]] = {}
        for r in data:
            groups.setdefault((r.device, r.dtype), []).append(r)
        for (device, dtype), rs in groups.items():
            rs = sorted(rs, key=lambda r: r.size)
            xs, ys = [r.size for r in rs], [r.gflops for r in rs]
            if source is None:
                line, = ax.plot(xs, ys, "o-", label=f"{device} {dtype} (measured here)")
                peak_label = f"{device} {dtype} peak {{:,.0f}}"
            else:
                line, = ax.plot(xs, ys, "o:", mfc="none", label=f"{dtype}, {source}")
                peak_label = f"{dtype} peak {{:,.0f}}, vendor figure (not recorded)"
            peak = rs[0].peak_gflops
            if peak:
                ax.axhline(peak, ls="--", color=line.get_color(), alpha=0.7, label=peak_label.format(peak))
    sizes = sorted({r.size for r in list(rows) + list(recorded_rows)})
    ax.set(xscale="log", yscale="log", xlabel="matrix size n (n×n @ n×n)", ylabel="GFLOP/s", title=title)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def matmul_widget(sizes: Sequence[int] = (128, 256, 512, 1024, 2048), min_time: float = 0.1) -> ipywidgets.VBox:
    """Pick size, dtype and a device that is present; press the button to measure one matmul."""
    import ipywidgets as w

    from d2lmp.hardware import peak_gflops, torch_devices
    from d2lmp.timing import DTYPES, time_matmul

    size = w.Dropdown(options=list(sizes), value=sizes[len(sizes) // 2], description="n")
    dtype = w.Dropdown(options=list(DTYPES), value="float32", description="dtype")
    device = w.Dropdown(options=torch_devices(), description="device")
    button = w.Button(description="Measure")
    out = w.Output()

    def measure(_: object = None) -> None:
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

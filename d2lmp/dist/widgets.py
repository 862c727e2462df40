"""ipywidgets for the distributed notebooks; each wraps a pure, tested model function."""

from __future__ import annotations


def dp_scaling_widget(single_device_s: float, grad_bytes: float, alpha: float, default_gbs: float = 15.75):
    """World size, bucket size and link bandwidth → predicted data-parallel step and efficiency."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from .dp_model import buckets_needed, predict_step

    def draw(world=8, bucket_mb=25.0, bandwidth_gbs=default_gbs, overlap=True):
        beta = 1 / (bandwidth_gbs * 1e9)
        p = predict_step(single_device_s, grad_bytes, world, alpha, beta, bucket_mb * 2**20, overlap)
        print(f"{buckets_needed(grad_bytes, bucket_mb * 2**20)} bucket(s); compute {p.compute_s * 1e3:.1f} ms, "
              f"all-reduce {p.comm_s * 1e3:.1f} ms of which {p.exposed_comm_s * 1e3:.1f} ms exposed; "
              f"step {p.step_s * 1e3:.1f} ms, efficiency {p.efficiency(single_device_s):.0%}")
        worlds = [1, 2, 4, 8, 16, 32, 64]
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for ov in (False, True):
            ax.plot(worlds, [predict_step(single_device_s, grad_bytes, n, alpha, beta, bucket_mb * 2**20, ov)
                             .efficiency(single_device_s) for n in worlds], "o-",
                    label="with overlap" if ov else "no overlap")
        ax.axvline(world, color="gray", ls=":")
        ax.set(xscale="log", xlabel="devices", ylabel="scaling efficiency", ylim=(0, 1.05),
               title=f"Predicted, {bandwidth_gbs:g} GB/s links, α = {alpha * 1e6:.0f} µs")
        ax.set_xticks(worlds)
        ax.set_xticklabels(worlds)
        ax.grid(True, alpha=0.3)
        ax.legend()
        display(fig)
        plt.close(fig)

    return w.interactive(
        draw,
        world=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        bucket_mb=w.FloatLogSlider(value=25, base=2, min=-2, max=9, step=1, description="bucket MiB"),
        bandwidth_gbs=w.FloatLogSlider(value=default_gbs, base=10, min=-1, max=3, step=0.05, description="GB/s"),
        overlap=w.Checkbox(value=True, description="overlap"),
    )


def allreduce_model_widget(alpha: float, beta: float):
    """Ranks and message size → predicted naive, tree and ring all-reduce times under the α-β model."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from .collectives import predicted_all_reduce_time

    def draw(world=8, log2_bytes=20):
        size = 2**log2_bytes
        times = {a: predicted_all_reduce_time(a, world, size, alpha, beta) for a in ("naive", "tree", "ring")}
        best = min(times, key=times.get)
        print(f"{world} ranks, {size:,} bytes: " + ", ".join(f"{a} {t * 1e3:.3f} ms" for a, t in times.items())
              + f" -> {best} is fastest")
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar(list(times), [t * 1e3 for t in times.values()], color=["#999999", "#55a868", "#c44e52"])
        ax.set(ylabel="predicted ms", title=f"α = {alpha * 1e6:.1f} µs, 1/β = {1 / beta / 1e9:.2f} GB/s")
        display(fig)
        plt.close(fig)

    return w.interactive(draw, world=w.IntSlider(8, 2, 64, description="ranks"),
                         log2_bytes=w.IntSlider(20, 4, 32, description="log2 bytes"))


def pipeline_widget():
    """Schedule, stages and micro-batches → the ideal pipeline's timeline and its bubble."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from .figures import plot_timeline
    from .pipeline import bubble_fraction, measured_bubble, simulate

    def draw(kind="gpipe", stages=4, micro_batches=4):
        events = simulate(kind, stages, micro_batches)
        bubble = measured_bubble(events, stages)
        m = 1 if kind == "naive" else micro_batches
        print(f"{kind}: bubble {bubble:.3f} (formula (p-1)/(m+p-1) = {bubble_fraction(stages, m):.3f}); "
              f"peak micro-batches held by stage 0: {_peak_in_flight(events)}")
        fig, ax = plt.subplots(figsize=(9, 0.6 + 0.45 * stages))
        plot_timeline([{**e, "start": e["start"] / 1e3, "end": e["end"] / 1e3} for e in events], ax=ax,
                      title=f"{kind}, {stages} stages, {m} micro-batch(es); forward 1 unit, backward 2",
                      lanes=("compute",))
        ax.set_xlabel("time (units)")
        display(fig)
        plt.close(fig)

    return w.interactive(draw, kind=w.Dropdown(options=["naive", "gpipe", "1f1b"], value="gpipe", description="schedule"),
                         stages=w.IntSlider(4, 2, 8, description="stages"),
                         micro_batches=w.IntSlider(4, 1, 16, description="micro-batches"))


def _peak_in_flight(events) -> int:
    alive = peak = 0
    for e in sorted((e for e in events if e["rank"] == 0), key=lambda e: e["start"]):
        alive += 1 if e["kind"] == "forward" else -1
        peak = max(peak, alive)
    return peak


def comm_volume_widget():
    """Batch, layer width and ranks → bytes per rank that each way of splitting a Linear layer communicates."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from .tensor_parallel import comm_volume

    def draw(batch=128, width=4096, world=2):
        volume = comm_volume(batch, width, width, world)
        for name, v in volume.items():
            print(f"{name:<28} forward {v['forward'] / 2**20:8.2f} MiB, backward {v['backward'] / 2**20:8.2f} MiB")
        fig, ax = plt.subplots(figsize=(6, 3))
        names = list(volume)
        ax.barh(names, [v["forward"] / 2**20 for v in volume.values()], label="forward")
        ax.barh(names, [v["backward"] / 2**20 for v in volume.values()],
                left=[v["forward"] / 2**20 for v in volume.values()], label="backward")
        ax.set(xlabel="MiB per rank per step", title=f"Linear({width}, {width}), batch {batch}, {world} ranks")
        ax.legend()
        display(fig)
        plt.close(fig)

    return w.interactive(draw, batch=w.IntSlider(128, 1, 4096, description="batch"),
                         width=w.SelectionSlider(options=[256, 512, 1024, 2048, 4096, 8192], value=4096,
                                                 description="features"),
                         world=w.SelectionSlider(options=[2, 4, 8], value=2, description="ranks"))

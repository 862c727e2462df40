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

    from .alpha_beta import predicted_all_reduce_time

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

    return w.interactive(draw,
                         kind=w.Dropdown(options=["naive", "gpipe", "1f1b"], value="gpipe", description="schedule"),
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


def costmodel_widget(rows: list[dict], presets: dict, batch_of_table: int = 1):
    """Strategy, devices, hardware preset and batch → predicted time and memory bars for every strategy."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from .costmodel import STRATEGIES, predict

    first_preset = next(iter(presets))

    def draw(strategy="hybrid", preset=first_preset, devices=8, batch=1024):
        hw = presets[preset].with_devices(devices)
        preds = {s: predict(rows, s, hw, batch, micro_batches=8, batch_of_table=batch_of_table) for s in STRATEGIES}
        best = min(preds, key=lambda s: preds[s].step_s)
        p = preds[strategy]
        print(f"{strategy} on {devices} x {preset.split('(')[0].split('x ')[-1].strip()}: step {p.step_s * 1e3:.1f} ms "
              f"(compute {p.compute_s * 1e3:.1f}, communication {p.comm_s * 1e3:.1f}, bubble {p.bubble_s * 1e3:.1f}); "
              f"memory {p.memory_bytes / 2**30:.2f} GiB per device. Fastest here: {best}.")
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
        names = list(preds)
        bottom = [0.0] * len(names)
        for part, colour in (("compute_s", "#4c72b0"), ("comm_s", "#c44e52"), ("bubble_s", "#bbbbbb")):
            values = [getattr(preds[s], part) * 1e3 for s in names]
            axes[0].bar(names, values, bottom=bottom, color=colour, label=part[:-2])
            bottom = [b + v for b, v in zip(bottom, values)]
        axes[0].set(ylabel="ms per step", title=f"batch {batch} on {devices} devices")
        axes[0].legend(fontsize=8)
        bottom = [0.0] * len(names)
        for part, colour in (("parameters", "#8172b2"), ("gradients", "#937860"), ("optimizer", "#da8bc3"),
                             ("activations", "#55a868")):
            values = [preds[s].memory[part] / 2**30 for s in names]
            axes[1].bar(names, values, bottom=bottom, color=colour, label=part)
            bottom = [b + v for b, v in zip(bottom, values)]
        axes[1].axhline(hw.memory_bytes / 2**30, color="k", ls="--", label="device memory")
        axes[1].set(ylabel="GiB per device", title="memory per device")
        axes[1].legend(fontsize=7)
        for ax in axes:
            for label in ax.get_xticklabels():
                label.set_fontweight("bold" if label.get_text() == strategy else "normal")
        fig.tight_layout()
        display(fig)
        plt.close(fig)

    return w.interactive(
        draw,
        strategy=w.Dropdown(options=list(STRATEGIES), value="hybrid", description="strategy"),
        preset=w.Dropdown(options=list(presets), description="hardware"),
        devices=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="devices"),
        batch=w.SelectionSlider(options=[32, 128, 512, 1024, 4096, 16384], value=1024, description="batch"),
    )

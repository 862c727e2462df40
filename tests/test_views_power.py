"""Power-model figure: one budget spent on slower cores, with Amdahl's speedup marked."""

import matplotlib.pyplot as plt

from d2lmp.power import many_slow_cores
from d2lmp.views.power import plot_power_model


def test_power_model_marks_the_amdahl_speedup():
    fig = plot_power_model(3, 0.9, marked=0.25)
    texts = [t.get_text() for t in fig.axes[0].texts]
    speedup = many_slow_cores(0.25, 3, parallel_fraction=0.9).speedup
    assert texts == ["64.0 cores → 16.0×", f"{speedup:.2f}× speedup"]
    plt.close(fig)
    fig = plot_power_model(3, 1.0, marked=0.25)
    assert [t.get_text() for t in fig.axes[0].texts] == ["64.0 cores → 16.0×"]
    plt.close(fig)

"""The data-parallel scaling widget builds from its model."""

import matplotlib

matplotlib.use("Agg")


def test_widget_builds():
    from d2lmp.views.data_parallel import dp_scaling_widget

    assert dp_scaling_widget(0.1, 60e6, 50e-6).children

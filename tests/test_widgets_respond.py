"""Every widget's controls, moved off their defaults, redraw without an exception (no browser needed).

ipywidgets swallows an exception raised in an interact callback when no IPython kernel runs
(it only logs "Exception in interact callback"), so the test watches the log as well as the
figures the callbacks display.
"""

import logging

import matplotlib
import pytest

matplotlib.use("Agg")

import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

w = pytest.importorskip("ipywidgets")

from d2lmp import models, roofline  # noqa: E402
from d2lmp import widgets as W  # noqa: E402
from d2lmp.parallel import costmodel as CM  # noqa: E402
from d2lmp.parallel import widgets as DW  # noqa: E402


def _alexnet_rows():
    with torch.device("meta"):
        return models.layer_table(models.alexnet2012(), (1, 3, 224, 224))


FACTORIES = {
    "cube": lambda: W.cube_widget(),
    "power": lambda: W.power_widget(),
    "roofline": lambda: W.roofline_widget(300.0, 40.0, [roofline.OpPoint("x", 1e6, 1e6, 1e-3)], title="test"),
    "alexnet": lambda: W.alexnet_widget(),
    "im2col": lambda: W.im2col_widget(),
    "bandwidth": lambda: W.bandwidth_widget(),
    "power_budget": lambda: W.power_budget_widget(),
    "memory": lambda: W.memory_widget(),
    "loss_scale": lambda: W.loss_scale_widget(torch.logspace(-10, 0, 100)),
    "dp_scaling": lambda: DW.dp_scaling_widget(0.1, 60e6, 50e-6),
    "allreduce_model": lambda: DW.allreduce_model_widget(50e-6, 1e-9),
    "pipeline": lambda: DW.pipeline_widget(),
    "comm_volume": lambda: DW.comm_volume_widget(),
    "costmodel": lambda: DW.costmodel_widget(_alexnet_rows(), CM.PRESETS),
}


def _other_value(control):
    """A valid value different from the control's current one."""
    if isinstance(control, w.Checkbox):
        return not control.value
    if hasattr(control, "options") and control.options:
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        values = [v for v in values if v != control.value]
        return values[-1] if values else None
    if hasattr(control, "max"):
        return control.min if control.value == control.max else control.max
    return None


@pytest.fixture
def displayed(monkeypatch):
    """The objects the callbacks display, instead of a notebook's output."""
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    return shown


@pytest.mark.parametrize("name", FACTORIES)
def test_every_control_redraws_without_error(name, displayed, caplog):
    caplog.set_level(logging.WARNING)
    widget = FACTORIES[name]()
    assert isinstance(widget, w.interactive), f"{name}: expected an interactive widget"
    moved = 0
    for control in widget.kwargs_widgets:
        value = _other_value(control)
        if value is None:
            continue
        before = len(displayed)
        control.value = value
        failures = [r.getMessage() for r in caplog.records if "Exception" in r.getMessage()]
        assert not failures, f"{name}: moving {control.description!r} to {value!r} raised: {failures}"
        assert len(displayed) > before, f"{name}: moving {control.description!r} drew nothing"
        assert any(isinstance(obj, Figure) for obj in displayed[before:]), f"{name}: no figure after the move"
        moved += 1
    assert moved >= 1


def test_matmul_widget_measures_again_on_click(displayed, capsys, caplog):
    caplog.set_level(logging.WARNING)
    box = W.matmul_widget(sizes=(32, 64), min_time=0.01)
    size, dtype, device, button = box.children[0].children
    size.value = 32
    button.click()
    assert not [r for r in caplog.records if "Exception" in r.getMessage()]
    printed = capsys.readouterr().out
    assert "32×32 float32 on cpu" in printed and "GFLOP/s" in printed

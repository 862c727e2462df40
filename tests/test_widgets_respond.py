"""Every widget's controls, moved off their defaults, redraw without an exception (no browser needed).

ipywidgets swallows an exception raised in an interact callback when no IPython kernel runs
(it only logs "Exception in interact callback"), so the test watches the log as well as the
figures the callbacks display.
"""

import logging

import ipywidgets as w
import pytest
import torch
from matplotlib.figure import Figure

from d2lmp import models, roofline
from d2lmp.model import costmodel as CM
from d2lmp.model.memory_calculator import MemorySetting
from d2lmp.views import bandwidth as bandwidth_views
from d2lmp.views import collectives as collectives_views
from d2lmp.views import comm_roofline as comm_roofline_views
from d2lmp.views import context_parallel as context_parallel_views
from d2lmp.views import conv as conv_views
from d2lmp.views import costmodel as costmodel_views
from d2lmp.views import data_parallel as data_parallel_views
from d2lmp.views import experts as experts_views
from d2lmp.views import failures as failures_views
from d2lmp.views import graphics as graphics_views
from d2lmp.views import matmul as matmul_views
from d2lmp.views import memory as memory_views
from d2lmp.views import memory_calculator as memory_calculator_views
from d2lmp.views import models as models_views
from d2lmp.views import pipeline as pipeline_views
from d2lmp.views import planner as planner_views
from d2lmp.views import power as power_views
from d2lmp.views import precision as precision_views
from d2lmp.views import roofline as roofline_views
from d2lmp.views import tensor_parallel as tensor_parallel_views
from d2lmp.views import topology as topology_views


def _alexnet_rows():
    with torch.device("meta"):
        return models.layer_table(models.alexnet2012(), (1, 3, 224, 224))


FACTORIES = {
    "cube": lambda: graphics_views.cube_widget(),
    "power": lambda: power_views.power_widget(),
    "roofline": lambda: roofline_views.roofline_widget(300.0, 40.0, [roofline.OpPoint("x", 1e6, 1e6, 1e-3)],
                                                       title="test"),
    "linear_layer_roofline": lambda: roofline_views.linear_layer_roofline_widget(
        {"FP32": 8100.0, "INT8 tensor": 130000.0}, 320.0, 4096, label="test"),
    "alexnet": lambda: models_views.alexnet_widget(),
    "im2col": lambda: conv_views.im2col_widget(),
    "bandwidth": lambda: bandwidth_views.bandwidth_widget(),
    "power_budget": lambda: topology_views.power_budget_widget(),
    "memory": lambda: memory_views.memory_widget(),
    "loss_scale": lambda: precision_views.loss_scale_widget(torch.logspace(-10, 0, 100)),
    "dp_scaling": lambda: data_parallel_views.dp_scaling_widget(0.1, 60e6, 50e-6, 15.75),
    "allreduce_model": lambda: collectives_views.allreduce_model_widget(5e-6, 100.0),
    "pipeline": lambda: pipeline_views.pipeline_widget(),
    "comm_volume": lambda: tensor_parallel_views.comm_volume_widget(),
    "costmodel": lambda: costmodel_views.costmodel_widget(_alexnet_rows(), CM.PRESETS),
    "memory calculator": lambda: memory_calculator_views.memory_calculator_widget(
        "175B", "H100 SXM5", MemorySetting(tp=8, pp=8, sequence_parallel=True)),
    "memory calculator, ZeRO": lambda: memory_calculator_views.memory_calculator_widget(
        "7.5B", "H100 SXM5", MemorySetting(dp=64, recompute="full"), axis="zero"),
    "comm_roofline": lambda: comm_roofline_views.comm_roofline_widget(),
    "planner": lambda: planner_views.planner_widget(),
    "ring_work": lambda: context_parallel_views.ring_work_widget(),
    "capacity": lambda: experts_views.capacity_widget(),
    "checkpoint_interval": lambda: failures_views.interval_widget(),
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


@pytest.mark.slow
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
    box = matmul_views.matmul_widget(sizes=(32, 64), min_time=0.01)
    size, dtype, device, button = box.children[0].children
    size.value = 32
    button.click()
    assert not [r for r in caplog.records if "Exception" in r.getMessage()]
    printed = capsys.readouterr().out
    assert "32×32 float32 on cpu" in printed and "GFLOP/s" in printed

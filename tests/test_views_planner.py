"""The planner's figures and widget: the pure case is the library's plan, the bars add up to the step and the
memory, and a plan that does not fit says so."""


import matplotlib.pyplot as plt
import pytest

from d2lmp.model.cluster import Cluster, Plan, model_preset, plan, predict
from d2lmp.views import planner as V


def test_the_case_is_the_librarys_plan():
    report = V.plan_for("7.5B", 64, "A100-80GB", 256, zero=(0,), cp=(1,))
    direct = plan(model_preset("7.5B").model, Cluster("A100-80GB", 64), 256, zero=(0,), cp=(1,))
    assert [c.plan for c in report.ranked] == [c.plan for c in direct.ranked]
    with pytest.raises(ValueError, match="unknown GPU"):
        V.plan_for(gpu="B300")


def test_step_bars_add_up_to_the_step():
    model, cluster = model_preset("175B").model, Cluster("A100-80GB", 1024)
    megatron = predict(model, cluster, Plan(tp=8, pp=16, dp=8, global_batch=1536, recompute="full"))
    fig = V.plot_step_parts({"Megatron": megatron})
    ax = fig.axes[0]
    right = max(patch.get_x() + patch.get_width() for patch in ax.patches)
    assert right == pytest.approx(megatron.step_s)
    plt.close(fig)
    fig = V.plot_step_parts({})
    assert "no configuration fits" in fig.axes[0].texts[0].get_text()
    plt.close(fig)


def test_a_mixture_of_experts_bar_adds_its_all_to_alls():
    model = model_preset("deepseek-v3").model
    moe = predict(model, Cluster("H100-SXM", 2048), Plan(pp=16, dp=128, ep=64, global_batch=15360, zero=1))
    fig = V.plot_step_parts({"DeepSeek-V3 shape": moe})
    ax = fig.axes[0]
    assert max(patch.get_x() + patch.get_width() for patch in ax.patches) == pytest.approx(moe.step_s)
    assert "expert all-to-alls" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


def test_memory_bars_add_up_and_say_what_does_not_fit():
    model = model_preset("175B").model
    one = predict(model, Cluster("A100-80GB", 1), Plan(global_batch=1)).memory
    fig = V.plot_memory_parts({"one GPU": one})
    ax = fig.axes[0]
    assert max(p.get_x() + p.get_width() for p in ax.patches) == pytest.approx(one.total / 1e9)
    assert any("does not fit" in t.get_text() for t in ax.texts)
    plt.close(fig)
    with pytest.raises(ValueError):
        V.plot_memory_parts({})

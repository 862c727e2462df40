"""The communication roofline's figure and widget: the pure case is the library's point, the figure draws every
roof and point it is given, and moving a control moves the point."""


import matplotlib.pyplot as plt
import pytest

from d2lmp.model.cluster import model_preset
from d2lmp.model.cluster.comm_roofline import link_roof, tensor_parallel_point, zero3_point
from d2lmp.views import comm_roofline as V


def test_the_case_is_the_librarys_point():
    case = V.roofline_case("tp", "175B", "network", "A100-80GB", 8, 2)
    assert case == tensor_parallel_point(model_preset("175B").model, link_roof("A100-80GB", "network"), 8, 2)
    assert V.roofline_case("zero3", "175B", "network", ranks=64, sequences=4) == zero3_point(
        model_preset("175B").model, link_roof("A100-80GB", "network"), 64, 4)
    with pytest.raises(ValueError, match="unknown model"):
        V.roofline_case(model="200B")
    # the batch moves data parallelism across the ridge, and leaves tensor parallelism where it is
    small, large = (V.roofline_case("dp", "7.5B", "network", ranks=64, sequences=b) for b in (1, 64))
    assert small.bound == "communication" and large.bound == "compute"
    assert V.roofline_case("tp", sequences=1).intensity == pytest.approx(V.roofline_case("tp", sequences=64).intensity)


def test_available_roofs_skip_what_the_tables_do_not_give():
    assert [r.link for r in V.available_roofs("A100-80GB")] == ["nvlink", "network", "pcie"]
    assert [r.link for r in V.available_roofs("V100-32GB")] == ["nvlink", "network"]


def test_the_figure_draws_each_roof_ridge_and_point():
    points = [V.roofline_case("tp", link="nvlink"), V.roofline_case("tp", link="network"),
              V.roofline_case("pp", link="network", ranks=16)]
    fig = V.plot_comm_roofline(points, V.available_roofs("A100-80GB"))
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert sum("ridge" in label for label in labels) == 3 and sum(label.startswith("matrix") for label in labels) == 1
    assert sum("-bound" in label for label in labels) == 3
    assert ax.get_xscale() == ax.get_yscale() == "log"
    marker = next(line for line in ax.get_lines() if line.get_label().startswith("TP") and "InfiniBand" in
                  line.get_label())
    assert marker.get_xdata()[0] == pytest.approx(points[1].intensity)
    assert marker.get_ydata()[0] == pytest.approx(points[1].attainable_flops / 1e12)
    plt.close(fig)
    with pytest.raises(ValueError, match="nothing to draw"):
        V.plot_comm_roofline([])


def test_the_sentence_names_the_bound_and_the_crossing():
    text = V.describe_point(V.roofline_case("tp", link="network"))
    assert "communication-bound" in text and "hidden size per rank needed" in text and "InfiniBand" in text

"""The feature comparison figure: one bar per kind of feature, measured and reported side by side."""

import matplotlib.pyplot as plt
import pytest

from d2lmp.views.features import plot_feature_accuracies


def test_measured_and_reported_panels():
    measured = {"raw pixels": 0.96, "edge histograms (hand-designed)": 0.99, "CNN features (learned)": 0.97}
    fig = plot_feature_accuracies(measured, "digits, measured here", {"SIFT + FVs": 0.543, "CNN (learned)": 0.625},
                                  "ImageNet, reported")
    left, right = fig.axes
    assert [round(p.get_height(), 1) for p in left.patches] == [96.0, 99.0, 97.0]
    assert [t.get_text() for t in left.texts] == ["96.0 %", "99.0 %", "97.0 %"]
    assert right.get_title() == "ImageNet, reported" and len(right.patches) == 2
    colours = [p.get_facecolor() for p in left.patches]
    assert len(set(colours)) == 3  # pixels, hand-designed, learned: three colours
    plt.close(fig)
    fig = plot_feature_accuracies(measured, "measured only")
    assert len(fig.axes) == 1
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_feature_accuracies({"raw pixels": 96.0}, "percent, not a fraction")

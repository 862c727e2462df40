"""Convolution figures: im2col's memory blow-up and its widget."""



from d2lmp.views.conv import im2col_widget, plot_im2col_memory


def test_figure_and_widget_build():
    assert plot_im2col_memory(marked=(3, 1)).axes
    assert im2col_widget() is not None

"""Views: figures and thin ipywidgets front ends, one module per topic.

The top layer: views may import the library, the checks and the benchmarks; nothing below imports a view.
"""

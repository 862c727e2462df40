"""d2lmp: helpers for the notebook series on GPUs for deep learning and multi-GPU training.

Importing the package does no work: no device queries, no thread changes, no downloads.
Submodules are imported explicitly, e.g. ``from d2lmp import timing``.
"""

__version__ = "0.1.0"

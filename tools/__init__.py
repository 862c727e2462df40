"""Maintenance scripts of the repository (not part of the installed package); run them from its root as
``python -m tools.<job>`` (``tools/record_gpu.sh`` is a shell script). Each script's docstring says what it
does and how to run it; this list is left to ``ls tools``, so it cannot go stale.

``tools.notebooks`` lists the notebooks and reads their cells, for these scripts and for the tests alike.
Tools import ``d2lmp`` and each other, never the tests.
"""

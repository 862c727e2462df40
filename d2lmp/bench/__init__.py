"""Benchmarks: measurements against a reference measured in the same run, returned as frozen records.

This layer imports the library (``d2lmp`` and ``d2lmp.parallel``), never the views or the commands;
``d2lmp.commands.bench`` runs each one as ``d2lmp bench <name>`` and prints its report and goal.
"""

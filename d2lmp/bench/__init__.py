"""Benchmarks: measurements that print ratios against a reference measured in the same run.

This layer imports the library (``d2lmp`` and ``d2lmp.parallel``), never the views or the CLI.
"""

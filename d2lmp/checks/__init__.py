"""Checks and the GPU self-check: code that proves the library right on the machine at hand.

This layer imports the library (``d2lmp`` and ``d2lmp.parallel``), never the views or the CLI.
"""

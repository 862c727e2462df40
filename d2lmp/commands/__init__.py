"""The command layer: the ``d2lmp`` command, each ``d2lmp bench <name>`` and the torchrun entry points.

It holds the ``d2lmp`` command (``commands.main``), each ``d2lmp bench <name>`` (``commands.bench``) and the
torchrun entry point (``commands.demo``); they parse options, run what lies below and print the verdict."""

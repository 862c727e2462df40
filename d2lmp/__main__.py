"""`python -m d2lmp ...` is the same as the `d2lmp` command."""

import sys

from d2lmp.commands.main import main

sys.exit(main())

"""Maintenance scripts of the repository (not part of the installed package); run them from its root.

    python -m tools.execute [NOTEBOOK ...]       re-execute notebooks in place at full size (`make execute`)
    python -m tools.build [OUTPUT_DIR]           the static HTML book (`make book`)
    python -m tools.update_references            regenerate each notebook's References cell
    python -m tools.refresh_listings NOTEBOOK... refresh the stored output of the cells that only show() code
    python -m tools.notebook_modules             the README's notebook -> modules table
    python -m tools.type_coverage [--list]       how much of d2lmp is annotated, which functions return dicts
    python -m tools.nccl_listeners               what an NCCL rank listens on (needs a CUDA GPU)
    tools/record_gpu.sh OUTDIR                   re-record d2lmp/recorded/ on a GPU machine

``tools.notebooks`` lists the notebooks and reads their cells, for these scripts and for the tests alike.
"""

"""Exercises that check themselves, one module per notebook topic (``d2lmp.exercises.<notebook slug>``).

In a notebook: ``from d2lmp.exercises import data_parallelism as ex`` then ``ex.bucket_count.hint()``,
``ex.bucket_count.check(answer)`` and ``ex.bucket_count.solution()``. Every topic module lists its
exercises in ``EXERCISES``, in the notebook's order. This layer sits with the checks: it imports the
library, never the views.
"""

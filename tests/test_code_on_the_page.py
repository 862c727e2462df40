"""Each notebook that teaches an algorithm shows the code that runs, before the code is used.

A notebook shows a function with ``show(...)`` (d2lmp.views.source): its real source, from the one
place it lives. REQUIRED lists, per notebook slug (chapter numbers change, slugs do not), the functions
and classes a notebook must show; the show() cell must come before any other code cell that uses the name.
"""

import ast
import inspect
import re
import textwrap

import pytest

from d2lmp.parallel import collectives
from d2lmp.views.source import show, source_of
from tools.notebooks import notebooks, source_text
from tools.refresh_listings import shown_objects

NOTEBOOKS = {nb.slug: nb for nb in notebooks()}

REQUIRED = {
    "cuda_convnet": ["conv2d_loops", "conv2d_im2col", "conv2d_c01b"],
    "parallel_strategies": ["comm_bytes"],
    "a_transformer_to_split": ["causal_attention", "CausalSelfAttention", "Block", "data_parallel_point"],
    "nccl_collectives": ["ring_send_chunk", "ring_reduce_scatter", "ring_all_gather", "tree_all_reduce"],
    "data_parallelism": ["allreduce_gradients", "BucketedAllReduce"],
    "network_partitioning": ["balance", "schedule", "pipeline_step", "interleaved_schedule", "balance_schedule"],
    "layerwise_partitioning": ["CopyToParallel", "ReduceFromParallel", "ColumnParallelLinear", "RowParallelLinear",
                               "ColumnLinear", "RowLinear", "TPSelfAttention", "TPBlock", "GatherForSplitCompute",
                               "ReduceScatterSequence"],
    "sharding_the_training_state": ["zero_memory", "FlatUnit", "ZeroAdam", "shard_parameters", "zero_traffic",
                                    "fsdp2_train"],
    "activation_memory_and_composing": ["CheckpointedSegment", "checkpointed", "ActivationLedger", "accumulate",
                                        "grid_groups", "hybrid_step", "grid3d_groups"],
    "long_sequences_and_experts": ["ring_attention_schedule", "attention_block", "merge", "ring_forward", "KVRing",
                                   "ring_backward", "top_k_gating", "expert_capacity", "route", "all_to_all",
                                   "exchange_order", "context_parallel_point", "expert_parallel_point"],
    "training_at_scale": ["link_roof", "tensor_parallel_point", "crossing", "step_seconds", "bubble_seconds",
                          "data_parallel_seconds"],
    "when_things_fail": ["save", "load", "checkpoint_state", "resume", "expected_wall_time", "daly_interval",
                         "skipped_collective", "send_send", "shape_mismatch"],
}


def _shown(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "show":
            for arg in node.args:
                names.add(arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", ""))
    return names


def _uses(tree, name: str) -> bool:
    """True when the cell refers to ``name`` outside imports and show() calls."""
    shown_args = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "id", getattr(n.func, "attr", "")) == "show" for a in n.args}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in shown_args:
            continue
        if (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name):
            return True
    return False


@pytest.mark.parametrize("slug", sorted(REQUIRED))
def test_notebook_shows_its_algorithms_before_using_them(slug):
    assert slug in NOTEBOOKS, f"no notebook NN_{slug}.ipynb"
    cells = [(c.index, c.tree()) for c in NOTEBOOKS[slug].code()]
    for name in REQUIRED[slug]:
        shown_at = [i for i, tree in cells if name in _shown(tree)]
        assert shown_at, f"{slug}: no cell shows {name} (use d2lmp.views.source.show)"
        used_at = [i for i, tree in cells if _uses(tree, name)]
        assert not used_at or shown_at[0] <= used_at[0], \
            f"{slug}: {name} is used in cell {used_at[0]} before it is shown in cell {shown_at[0]}"


def test_source_of_names_the_file_and_is_the_running_code():
    text = source_of(collectives.ring_reduce_scatter)
    assert text.startswith("# d2lmp/parallel/collectives.py\n")
    assert "def ring_reduce_scatter(" in text
    with pytest.raises(TypeError):
        source_of(42)
    with pytest.raises(ValueError):
        show()


def test_show_displays_highlighted_code(capsys):
    show(collectives.ring_reduce_scatter)
    assert "def ring_reduce_scatter(" in capsys.readouterr().out


# A listing on the page is the idea in about 30 lines; speed tricks and bookkeeping live behind named helpers.
MAX_LISTING_LINES = 30
# (notebook slug, shown name) -> why this listing may be longer. Keep it short: shorten the code instead.
LONG_LISTINGS: dict[tuple[str, str], str] = {}


def _shown_listings() -> list[tuple[str, int, str, int]]:
    """(slug, cell, name, lines) for every object a notebook shows, its length read from the stored output."""
    found = []
    for slug, nb in sorted(NOTEBOOKS.items()):
        for cell in nb.code():
            if not _shown(cell.tree()):
                continue
            for out in cell.outputs:
                text = out.get("data", {}).get("text/plain", "")
                text = "".join(text) if isinstance(text, list) else text
                head = re.match(r"# d2lmp/\S+\n(?:@.*\n)*(?:class|def|async def) (\w+)", text)
                if head:  # the header line names the file; the listing is what follows it
                    found.append((slug, cell.index, head.group(1), text.count("\n")))
    return found


def test_every_listing_is_the_idea_in_about_30_lines():
    long = [f"{slug} cell {i}: {name} is {n} lines" for slug, i, name, n in _shown_listings()
            if n > MAX_LISTING_LINES and (slug, name) not in LONG_LISTINGS]
    assert not long, (f"listings over {MAX_LISTING_LINES} lines: show the idea and move the bookkeeping behind a "
                      f"named helper (or add a reason to LONG_LISTINGS): {long}")


def test_no_listing_is_shown_twice():
    places: dict[str, list[str]] = {}
    for slug, i, name, _ in _shown_listings():
        places.setdefault(name, []).append(f"{slug} cell {i}")
    twice = {name: where for name, where in places.items() if len(where) > 1}
    assert not twice, f"shown more than once (show it where it is taught, then refer to it): {twice}"


def _docstring(obj: object) -> str | None:
    """The docstring written in ``obj``'s source (a dataclass's generated ``__doc__`` does not count)."""
    node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    return ast.get_docstring(node)


def _page_problems(shown: list[tuple[str, int, str, object]]) -> list[str]:
    """What is wrong with each shown (slug, cell, expression, object): a private name on the way, no docstring."""
    problems = []
    for slug, index, expr, obj in shown:
        if any(part.startswith("_") for part in expr.split(".")):
            problems.append(f"{slug} cell {index}: {expr} is private (make it public and add it to __all__)")
        if not (_docstring(obj) or "").strip():
            problems.append(f"{slug} cell {index}: {expr} has no docstring")
    return problems


@pytest.fixture(scope="module")
def shown_on_pages() -> list[tuple[str, int, str, object]]:
    """(slug, cell, expression, object) of every show() argument of every notebook."""
    return [(slug, index, expr, obj) for slug, nb in sorted(NOTEBOOKS.items())
            for index, expr, obj in shown_objects(nb)]


def test_the_page_shows_public_documented_code(shown_on_pages):
    assert len(shown_on_pages) > 50  # the notebooks' listings were found
    problems = _page_problems(shown_on_pages)
    assert not problems, "\n".join(problems)


def test_a_private_or_undocumented_listing_is_caught():
    def undocumented() -> None:
        pass

    found = _page_problems([("nb", 1, "C._ring_pass_like", collectives.global_rank), ("nb", 2, "undocumented",
                                                                                          undocumented)])
    assert found == ["nb cell 1: C._ring_pass_like is private (make it public and add it to __all__)",
                     "nb cell 2: undocumented has no docstring"]


def test_stored_listings_are_the_code_that_runs(shown_on_pages):
    """Every stored listing is the shown code as it is now, in listing cells and beside a cell's other outputs
    (a changed listing needs no re-execution: tools.refresh_listings)."""
    expected: dict[tuple[str, int], list[str]] = {}
    for slug, index, _, obj in shown_on_pages:
        expected.setdefault((slug, index), []).append(source_of(obj).rstrip("\n"))
    stale = []
    for (slug, index), texts in sorted(expected.items()):
        cell = NOTEBOOKS[slug].cells[index]
        if not cell.is_code:
            continue  # a show() the text asks the reader to run has no stored output
        # A listing is a display whose HTML is highlighted code; a cell may also print or draw around it.
        stored = [source_text(o.get("data", {}).get("text/plain", "")).rstrip("\n") for o in cell.outputs
                  if "highlight" in source_text(o.get("data", {}).get("text/html", ""))]
        if stored != texts:
            stale.append(f"{NOTEBOOKS[slug].name} cell {index}")
    assert not stale, f"stale listings: run python -m tools.refresh_listings on their notebooks: {stale}"

"""Every roofline point the notebooks print follows one convention (``comm_roofline.LABEL``: strategy and group
size, link, "hypothetical" where no node joins that many GPUs by it, recomputation, then the model and the knob), and
one label means one intensity in every notebook: the first number printed after a label is its FLOP/byte.

Notebooks whose committed outputs predate the convention are listed in ``PENDING`` until they are executed again;
the list may only shrink (the test fails when a listed notebook already prints labels in the convention only).
"""

from __future__ import annotations

import re

from d2lmp.model.cluster import comm_roofline as CR
from d2lmp.model.cluster.hardware import GPU_PRESETS
from d2lmp.model.cluster.presets import model_preset
from tools.notebooks import Notebook, paths, read, source_text

# notebook number: the cells whose outputs still print the labels of before the convention (their prints also add
# " over <link>" after the label, which now names the link itself: drop it when refreshing them)
PENDING: dict[str, tuple[int, ...]] = {}
LABEL = re.compile(CR.LABEL)
OLD_LABEL = re.compile(r"\b(DP|ZeRO-3|TP|PP|CP|EP), [\d,]+ (replicas|devices|ranks|stages)\b")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
LARGEST_DOMAIN = max(p.gpus_per_node for p in GPU_PRESETS.values())


def _printed(notebook: Notebook) -> dict[int, str]:
    """Each code cell's printed text: its streams and plain-text results."""
    texts = {}
    for cell in notebook.cells:
        if cell.is_code:
            text = cell.stream_text() + "".join(source_text(o.get("data", {}).get("text/plain", ""))
                                                for o in cell.outputs)
            if text:
                texts[cell.index] = text
    return texts


def _all_printed() -> dict[tuple[str, int], str]:
    return {(path.name[:2], index): text for path in paths() for index, text in _printed(read(path)).items()}


PRINTED = _all_printed()


def test_the_convention_parses_the_library_labels():
    model = model_preset("175B").model
    nvlink = CR.link_roof("A100-80GB", "nvlink")
    inside = CR.tensor_parallel_point(model, nvlink, 8, 1, "full")
    outside = CR.data_parallel_point(model, nvlink, 64, 4)
    assert LABEL.fullmatch(inside.label) and LABEL.fullmatch(outside.label)
    assert not inside.hypothetical and outside.hypothetical and "(hypothetical)" in outside.label
    assert "full recomputation" in inside.label and "no recomputation" in outside.label


def test_one_label_one_intensity_across_notebooks():
    seen: dict[str, dict[float, list[str]]] = {}
    for (number, index), text in PRINTED.items():
        for line in text.splitlines():
            for found in LABEL.finditer(line):
                after = NUMBER.search(line, found.end())
                if after is not None:
                    value = float(after.group().replace(",", ""))
                    seen.setdefault(found.group(), {}).setdefault(value, []).append(f"{number}[{index}]")
    assert seen, "no notebook prints a roofline label in the convention"
    clashes = {label: values for label, values in seen.items() if len(values) > 1}
    assert not clashes, f"one label, several intensities: {clashes}"


def test_every_printed_label_follows_the_convention():
    old = sorted(key for key, text in PRINTED.items() if OLD_LABEL.search(text))
    pending = sorted((number, index) for number, cells in PENDING.items() for index in cells)
    assert [key for key in old if key not in pending] == [], "labels outside the convention (comm_roofline.LABEL)"
    assert [key for key in pending if key not in old] == [], "these cells follow the convention now: unlist them"


def test_a_group_larger_than_any_node_over_nvlink_is_hypothetical():
    unmarked = [f"{number}[{index}]: {found.group()}" for (number, index), text in PRINTED.items()
                for found in LABEL.finditer(text)
                if found.group(3) != "InfiniBand" and not found.group(4)
                and int(found.group(2).replace(",", "")) > LARGEST_DOMAIN]
    assert not unmarked, f"no node joins that many GPUs by that link: {unmarked}"

"""tools.renumber on a made-up series: a lettered notebook takes the next number, and every name of a moved
notebook follows (links, link texts, prose, ranges, titles, table rows, test keys); the split notebook's moved
sections and unlinked mentions go to the new one."""

import json

import pytest

from tools import renumber


def _notebook(path, *cells):
    path.write_text(json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text}
                                          for kind, text in cells], "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))


@pytest.fixture
def plan(tmp_path):
    _notebook(tmp_path / "09_before.ipynb", ("markdown", "# 09 · Before"))
    _notebook(tmp_path / "10_three_splits.ipynb", ("markdown", "# 10 · Three splits"),
              ("markdown", "## A cost model\n\nThe cost model predicts each step from the optimizer state."))
    _notebook(tmp_path / "10b_running_gpt.ipynb", ("markdown", "# 10b · Running GPT"),
              ("markdown", "## The communication roofline\n\nThe small GPT sends bytes; its intensity meets a ridge."))
    _notebook(tmp_path / "11_nccl.ipynb", ("markdown", "# 11 · NCCL"))
    _notebook(tmp_path / "12_data.ipynb", ("markdown", "# 12 · Data"))
    return renumber.plan(tmp_path)


def test_the_lettered_notebook_takes_the_next_number(plan):
    assert plan.numbers == {"10b": "11", "11": "12", "12": "13"}
    assert plan.stems == {"10b_running_gpt": "11_running_gpt", "11_nccl": "12_nccl", "12_data": "13_data"}


def test_links_titles_prose_and_ranges_follow(plan):
    text = ("# 11 · NCCL\n\n**Learn after:** [10b · Running GPT](10b_running_gpt.ipynb), [11 · NCCL](11_nccl.ipynb)\n"
            "Notebook 12 builds it; notebooks 11 to 12 and notebooks 10-12 use it, as 12[3] says, and notebook 09 "
            "does not.\n| 11 | [NCCL](notebooks/11_nccl.ipynb) | badge (blob/main/notebooks/11_nccl.ipynb) |\n"
            '("11", 0): "long", ("09", 2): "long"\nLONG_SENTENCES: set[str] = {"12"}\nthe 4 notebooks\n'
            "collectives (11 to 12), data (12), range(11), gpus (12) must, (02-11), '### 11 · NCCL', {\"09\", \"11\"}")
    assert renumber.rewrite_text(plan, text) == (
        "# 12 · NCCL\n\n**Learn after:** [11 · Running GPT](11_running_gpt.ipynb), [12 · NCCL](12_nccl.ipynb)\n"
        "Notebook 13 builds it; notebooks 12 to 13 and notebooks 10-13 use it, as 13[3] says, and notebook 09 "
        "does not.\n| 12 | [NCCL](notebooks/12_nccl.ipynb) | badge (blob/main/notebooks/12_nccl.ipynb) |\n"
        '("12", 0): "long", ("09", 2): "long"\nLONG_SENTENCES: set[str] = {"13"}\nthe 5 notebooks\n'
        "collectives (12 to 13), data (13), range(11), gpus (12) must, (02-11), '### 12 · NCCL', {\"09\", \"12\"}")


def test_the_split_notebooks_moved_sections_go_to_the_new_one(plan):
    text = ("See [the roofline](10_three_splits.ipynb#The-communication-roofline) and "
            "[the cost model](10_three_splits.ipynb#A-cost-model). Notebook 10's roofline sets the intensity "
            "against a ridge. The cost model of notebook 10 predicts the step.")
    assert renumber.rewrite_text(plan, text) == (
        "See [the roofline](11_running_gpt.ipynb#The-communication-roofline) and "
        "[the cost model](10_three_splits.ipynb#A-cost-model). Notebook 11's roofline sets the intensity "
        "against a ridge. The cost model of notebook 10 predicts the step.")


def test_history_keeps_its_prose_and_follows_links(plan):
    text = "Notebook 11 at the time, [file](../notebooks/11_nccl.ipynb)"
    after = renumber.rewrite_text(plan, text, history=True)
    assert after == "Notebook 11 at the time, [file](../notebooks/12_nccl.ipynb)"


def test_refuses_to_run_twice(tmp_path):
    _notebook(tmp_path / "10_a.ipynb", ("markdown", "# 10 · A"))
    with pytest.raises(ValueError, match="has run already"):
        renumber.plan(tmp_path)

"""Grouped-query attention on one device: with each group's key/value head copied to its query heads it is ordinary
multi-head attention; bad head counts are refused, on one device and for a tensor group."""

import pytest
import torch

from d2lmp.gqa import GroupedQueryAttention
from d2lmp.parallel.gqa_tp import check_kv_split, kv_rows


def test_grouped_query_attention_is_multi_head_attention_with_shared_key_value_heads():
    torch.manual_seed(0)
    grouped = GroupedQueryAttention(hidden=24, heads=6, kv_heads=2)
    full = GroupedQueryAttention(hidden=24, heads=6, kv_heads=6)
    d, group = 4, 3
    k, v = grouped.kv.weight.detach().chunk(2)
    kb, vb = grouped.kv.bias.detach().chunk(2)
    with torch.no_grad():
        full.q.load_state_dict(grouped.q.state_dict())
        full.proj.load_state_dict(grouped.proj.state_dict())
        repeat = [t.view(2, d, *t.shape[1:]).repeat_interleave(group, 0).reshape(6 * d, *t.shape[1:])
                  for t in (k, v, kb, vb)]
        full.kv.weight.copy_(torch.cat(repeat[:2]))
        full.kv.bias.copy_(torch.cat(repeat[2:]))
    x = torch.randn(2, 5, 24)
    torch.testing.assert_close(grouped(x), full(x))


def test_kv_rows_pick_the_key_and_the_value_rows_of_the_heads():
    assert kv_rows(kv_heads=4, head_dim=2, first=1, count=2).tolist() == [2, 3, 4, 5, 10, 11, 12, 13]


def test_head_counts_that_do_not_split_are_refused():
    with pytest.raises(ValueError, match="must divide heads"):
        GroupedQueryAttention(hidden=24, heads=6, kv_heads=4)
    with pytest.raises(ValueError, match="at most kv_heads"):
        check_kv_split(heads=32, kv_heads=8, tp=16)
    check_kv_split(heads=32, kv_heads=8, tp=8)

"""The data × pipeline × tensor grid's groups: every rank once in each kind of group, the tensor index fastest."""

from d2lmp.model.grid_ranks import grid3d_rank, grid3d_ranks


def test_each_kind_of_group_holds_every_rank_once():
    grid = grid3d_ranks(2, 3, 4)
    for groups, size in ((grid.tensor, 4), (grid.pipe, 3), (grid.data, 2)):
        members = [r for g in groups.values() for r in g]
        assert sorted(members) == list(range(24)) and {len(g) for g in groups.values()} == {size}
    assert grid.tensor[0, 0] == [0, 1, 2, 3] and grid.pipe[0, 1] == [1, 5, 9] and grid.data[1, 2] == [6, 18]
    assert grid3d_rank(1, 2, 3, pipe=3, tensor=4) == 23

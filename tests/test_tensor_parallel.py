import pytest
import tp_workers as W

from d2lmp.parallel.launch import WorkerError, launch


@pytest.mark.parametrize("world", [2, 4])
def test_linear_splits_equal_the_full_layer(world):
    for rank, result in enumerate(launch(W.linear_layers, world)):
        for layer, (errors, _calls) in result.items():
            assert max(errors.values()) < 1e-5, (rank, layer, errors)
        # Communication exactly where the theory puts it (5 examples of float32):
        assert result["column"][1] == [("all_gather", 5 * 12 // world * 4, "column linear"),
                                       ("all_reduce", 5 * 8 * 4, "column linear (backward)")]
        assert result["row"][1] == [("all_reduce", 5 * 12 * 4, "row linear"),
                                    ("all_reduce", 5 * 8 * 4, "row linear (backward)")]
        assert [c[0] for c in result["mlp"][1]] == ["all_reduce", "all_reduce"]  # one forward (fc2), one backward (fc1)


@pytest.mark.parametrize("world", [2, 4])
def test_conv_splits_equal_the_full_layer(world):
    for rank, result in enumerate(launch(W.conv_layers, world)):
        for layer, (errors, _calls) in result.items():
            assert max(errors.values()) < 1e-5, (rank, layer, errors)
        assert [c[0] for c in result["out_channels"][1]] == ["all_gather", "all_reduce"]
        assert [c[0] for c in result["in_channels"][1]] == ["all_reduce", "all_reduce"]


def test_indivisible_features_are_refused():
    with pytest.raises(WorkerError, match="out_features = 5 is not divisible by the 2 ranks"):
        launch(W.indivisible, 2)


@pytest.mark.parametrize("world", [2, 4])
def test_comm_volume_formula_matches_the_logged_collectives(world):
    from d2lmp.parallel.tensor_parallel import comm_volume

    predicted = comm_volume(5, 8, 12, world)
    result = launch(W.linear_layers, world)[0]
    col, row = result["column"][1], result["row"][1]
    assert predicted["column, gather output"] == {"forward": col[0][1], "backward": col[1][1]}
    # The row layer in the test gets the full input (input_is_parallel=False): its backward all-reduce
    # is the input split's price; with an already split input the backward is free.
    assert predicted["row, split input"]["forward"] == row[0][1]
    with pytest.raises(ValueError):
        comm_volume(5, 8, 12, 5)


def test_pytorch_dtensor_tensor_parallel_equals_the_unsplit_mlp():
    from d2lmp.checks.ranks import DTensorCheck, dtensor_mlp_check

    for result in launch(dtensor_mlp_check, 2):
        assert result == DTensorCheck(output_equal=True, local_weight_shape=(8, 8), grad_equal=True)

"""Exercises for notebook 15 (layerwise partitioning): split linear layers on ranks, their bytes, two bugs, and how
far tensor parallelism stretches over NVLink (the communication roofline).

The code exercises (the column split's forward and backward, and two find-the-bug ones: a row split that
adds its bias before the all-reduce, and a column split seeded alike on every rank) run on 2 and 3 real
gloo ranks against one device's ``nn.Linear``, and the column split's bytes are counted (``_tensor_code``).
"""

from __future__ import annotations

from d2lmp.exercises import _tensor_code as T
from d2lmp.exercises._code import bug_hunt
from d2lmp.exercises.core import Exercise, number_checker
from d2lmp.model.cluster.comm_roofline import link_roof, tensor_parallel_point
from d2lmp.model.cluster.presets import model_preset

__all__ = ["EXERCISES", "column_forward", "column_backward", "megatron_order", "fc6_break_even", "conv4_all_maps",
           "overlap_gathers", "row_bias", "same_seed", "tp_ranks_nvlink"]

# --------------------------------------------------------------------------------------------
# Bytes


FC6_IN, FC6_OUT = 9216, 4096
FC6_GRAD_BYTES = (FC6_IN * FC6_OUT + FC6_OUT) * 4
FC6_BREAK_EVEN = FC6_GRAD_BYTES / ((FC6_OUT // 2 + FC6_IN) * 4)  # column split, gathered output, 2 ranks: ≈ 3352
CONV4_ALL_MAPS = 192 * 13 * 13 * 4  # each GPU's half of conv3's 384 maps of 13×13, FP32, per image

# How many ranks one 39B block's tensor parallelism can take over H100 NVLink and stay compute-bound
ROOF_MODEL, ROOF_GPU = "39B", "H100-SXM"
_ROOF_SHAPE = model_preset(ROOF_MODEL).model
_RANKS = [t for t in (2, 4, 8, 16, 32, 64, 128) if _ROOF_SHAPE.heads % t == 0]
_BOUND = {t: tensor_parallel_point(_ROOF_SHAPE, link_roof(ROOF_GPU, "nvlink"), t).bound for t in _RANKS}
TP_RANKS_NVLINK = max(t for t in _RANKS if _BOUND[t] == "compute")


column_forward = Exercise(
    function="my_column_linear(rank, world, x, weight, bias)",
    key="column_forward", number=1, title="The column split, forward",
    question="Write the forward pass of a column-split linear layer: `my_column_linear(rank, world, x, weight, "
             "bias)`. `x` (batch, in) is the same on every rank; `weight` (out, in) and `bias` (out,) have the "
             "full layer's shapes, but only this rank's rows [r·k, (r+1)·k), k = out/world, hold values: the "
             "other ranks' rows are NaN, as a rank holding only its shard would not have them. Every rank returns "
             "the full output (batch, out), equal to `nn.Linear`'s. It runs on 2 and 3 gloo ranks, and the check "
             "counts each rank's bytes: no more than the split needs.",
    hint_text="Compute this rank's slice of the outputs with its rows of `weight` and `bias`, then "
              "`dist.all_gather` the slices into a list and concatenate them along the feature dimension.",
    solution_text="Y_r = x W_rᵀ + b_r with this rank's k rows, then all-gather the (batch, k) slices and "
                  "torch.cat them along dim=-1 in rank order. Forward, the column split needs no communication "
                  "until the full output is needed; the all-gather moves batch × out × (world−1)/world values "
                  "into each rank.",
    checker=T.forward_checker, reference=T.my_column_linear, wrong=T.FORWARD_WRONG)


column_backward = Exercise(
    function="my_column_backward(rank, world, x, weight, grad_output)",
    key="column_backward", number=2, title="The column split, backward",
    question="Write the backward pass of a column-split layer by hand: which gradient is local and which needs "
             "the all-reduce? `my_column_backward(rank, world, x, weight, grad_output)` gets the full input `x` "
             "(batch, in), this rank's weight shard (k, in) and the gradient of its output slice (batch, k), and "
             "returns `(grad_x, grad_weight, grad_bias)` for the full input and this rank's shard. It is checked "
             "on 2 and 3 gloo ranks against `TP.ColumnParallelLinear`'s autograd gradients on the same ranks, and "
             "each rank's bytes are counted.",
    hint_text="For Y_r = x W_rᵀ + b_r: dL/dW_r = (dL/dY_r)ᵀ x and dL/db_r = Σ over the batch of dL/dY_r use only "
              "this rank's data. dL/dx = Σ_r (dL/dY_r) W_r: each rank can compute one term of that sum.",
    solution_text="grad_weight = grad_outputᵀ · x and grad_bias = grad_output.sum(0) are local: the shard's "
                  "weights only affect this rank's output features. grad_x = grad_output · W_r is a partial sum, "
                  "because x feeds every rank's features: all-reduce (sum) it, which is exactly what "
                  "copy_to_parallel does in backward.",
    checker=T.backward_checker, reference=T.my_column_backward, wrong=T.BACKWARD_WRONG)


megatron_order = Exercise(
    key="megatron_order", number=3, title="Column first, row second",
    question="Why does Megatron-LM put the column split first and the row split second in an MLP, rather than the "
             "other way round?",
    hint_text="Follow what each rank holds after a column split (a slice of the hidden features) and what a row "
              "split needs as input; where does an element-wise activation fit; what would a row split first "
              "leave you with?",
    solution_text="A column split leaves each rank with a slice of the hidden features; an element-wise "
                  "activation (GeLU) can be applied to that slice locally, and a row split takes exactly such a "
                  "slice as its input. So column → activation → row needs one all-reduce forward (after the row "
                  "layer) and one backward (before the column layer), nothing in between. Row first would end "
                  "with partial sums of the hidden features: they must be all-reduced before the non-linear "
                  "activation (GeLU of a partial sum is not a partial sum of GeLU), and the column layer after "
                  "it needs the full input, so it costs an extra collective each way.")


fc6_break_even = Exercise(
    key="fc6_break_even", number=4, title="When splitting fc6 pays",
    question="With `TP.comm_volume`, find the batch size at which splitting fc6 (9216 → 4096) over two ranks by "
             "columns (output gathered) sends as much as all-reducing its gradients.",
    hint_text="Ask `TP.comm_volume` for the column split's bytes at two batch sizes: how do they grow with the "
              "batch? Which bytes does data parallelism send for this layer, and do they depend on the batch?",
    solution_text=f"Column split: B × (2048 + 9216) × 4 bytes per step; gradients: (9216 × 4096 + 4096) × 4 = "
                  f"{FC6_GRAD_BYTES:,} bytes. Equal at B ≈ {FC6_BREAK_EVEN:,.0f}. Below that (AlexNet's 128) "
                  "splitting fc6 sends far less than data parallelism; the row split (B·4096·4 bytes) breaks even "
                  "only at about 9,217.",
    checker=number_checker(FC6_BREAK_EVEN, "examples", rel_tol=0.01, near_misses=[
        (FC6_GRAD_BYTES / (FC6_OUT * 4), "that is the row split's break-even (input split, all-reduced output); "
                                         "the question asks for the column split with the output gathered"),
        (FC6_GRAD_BYTES / (FC6_OUT // 2 * 4), "you counted only the forward all-gather: backward all-reduces the "
                                              "input gradient, B × 9216 values"),
        (FC6_GRAD_BYTES / (FC6_OUT * 4 + FC6_IN * 4), "the forward all-gather sends this rank's half of the "
                                                      "outputs, B × 4096/2 values, not all of them")]),
    reference=FC6_BREAK_EVEN,
    wrong=[(9217, "row split's break-even"), (18434, "only the forward all-gather")],
    how_to_answer="Pass the batch size.")


conv4_all_maps = Exercise(
    key="conv4_all_maps", number=5, title="Connecting conv4 to every map",
    question="In `AlexNetTower`, conv4 and conv5 need no communication. What would it cost (bytes each GPU sends "
             "forward per image at the paper's size) to connect conv4 to all of conv3's maps, as conv3 is to "
             "conv2's?",
    hint_text="conv3's output is 384 maps of 13×13 (no pooling after conv3), half of them on each GPU; an "
              "all-gather sends each GPU's half, in FP32, as `crossing_bytes` counts.",
    solution_text=f"Each GPU sends its 192 maps of 13 × 13 FP32 values: 192 × 169 × 4 = {CONV4_ALL_MAPS:,} bytes "
                  "per image (16.6 MB at batch 128), and the same again backward (reduce-scatter), larger than "
                  "the conv2 → conv3 crossing, which happens after pooling to 13×13 from 256 maps (86,528 "
                  "bytes). The paper chose this connectivity by cross-validation, to keep the communication an "
                      "acceptable fraction of the computation (Krizhevsky et al. 2012, §3.2).",
    checker=number_checker(CONV4_ALL_MAPS, "bytes", rel_tol=0.001, near_misses=[
        (2 * CONV4_ALL_MAPS, "that is all of conv3's output; each GPU sends only its half (192 maps)"),
        (192 * 6 * 6 * 4, "conv3's output is not pooled: its maps are 13×13"),
        (CONV4_ALL_MAPS // 4, "count 4 bytes per FP32 value")]),
    reference=CONV4_ALL_MAPS, wrong=[(2 * CONV4_ALL_MAPS, "only its half"), (27_648, "not pooled")],
    how_to_answer="Pass the bytes per image per GPU.")


overlap_gathers = Exercise(
    key="overlap_gathers", number=6, title="Hiding the all-gathers",
    question="The towers' all-gathers block the computation. Which of them could overlap with other work, and how?",
    hint_text="An all-gather can overlap only with work that does not need its result: look for computation on "
              "this rank's own half that can start before the other half arrives, and for independent "
              "micro-batches.",
    solution_text="conv2 → conv3: conv3's output channels sum over all 256 input maps, so each GPU can start on "
                  "the contribution of its own 128 maps (an input-channel-split partial convolution) while the "
                  "other half is in flight (async all_gather / isend), then add the rest. Likewise fc6, fc7 and "
                  "fc8 can multiply the local half of their input by the matching columns of their weights while "
                  "the remote half arrives. Across the batch, splitting it into micro-batches lets micro-batch "
                  "i+1's convolutions run during micro-batch i's all-gather. Backward, the reduce-scatters can "
                  "overlap with the weight-gradient computation of the same layer, which does not need them.")


row_bias = Exercise(
    key="row_bias", number=7, title="Find the bug: a row split's bias",
    function="my_row_linear(rank, world, x, weight, bias)",
    imports="import torch.distributed as dist\nimport torch.nn.functional as F",
    question="The function below is the forward pass of a row-split linear layer: each rank holds a slice of the "
             "input features and the matching columns of the weight, computes its share of the output, and an "
             "all-reduce sums the shares. It runs and returns outputs of the right shape and about the right "
             "size, but it has a bug. Find it with this notebook's check of the split layers: on 2 and on 4 "
             "ranks, compare every rank's output with the full `nn.Linear`'s with `torch.testing.assert_close`. "
             "How does the difference depend on the number of ranks? Fix it in the cell and run the check (2 and "
             "3 gloo ranks).",
    hint_text="Subtract the full layer's output from the split one's: what is left, and how does it change with "
              "the number of ranks? What does the all-reduce add together?",
    solution_text="Every rank adds the whole bias to its partial sum, and the all-reduce adds the ranks' partial "
                  "sums, so the output carries the bias world times: off by (world − 1)·b, a constant shift that "
                  "looks plausible and grows with the number of ranks. Add the bias once, after the all-reduce "
                  "(`F.linear(x, weight)`, all-reduce, then `+ bias`), as `TP.RowParallelLinear` does, and "
                  "Megatron-LM too; the bias's gradient is then the output gradient summed over the batch, the "
                  "same on every rank.",
    checker=bug_hunt(T.given_row_linear, T.row_checker,
                     "Compare every rank's output with the full nn.Linear's on 2 and 4 ranks, and look at the "
                     "difference."),
    reference=T.my_row_linear, given=T.given_row_linear,
    wrong=[(T.given_row_linear, "bug included"), *T.ROW_WRONG])


same_seed = Exercise(
    key="same_seed", number=8, title="Find the bug: seeding a split layer",
    function="my_column_init(rank, world, n_in, n_out, seed)", imports="import torch\nfrom torch import nn",
    question="A column-split layer must start as the one device's layer would: the ranks' rows together must be "
             "`nn.Linear(n_in, n_out)` created after `torch.manual_seed(seed)`. The function below gives each "
             "rank its weight and bias rows. It runs, its numbers have the right scale (the initialisation "
             "depends only on `n_in`), and training from it even converges, but it has a bug. Find it: return "
             "the rows from a `launch`ed worker on 2 ranks, concatenate them, and compare them with the one "
             "device's layer with `torch.testing.assert_close`, as the notebook builds `TP.ColumnParallelLinear` "
             "from a full layer. Fix it in the cell and run the check (2 and 3 gloo ranks).",
    hint_text="Print the rows rank 0 and rank 1 return side by side. What does a random generator given the same "
              "seed draw on two processes?",
    solution_text="Every rank seeds its generator alike and draws a layer of n_out / world outputs, so every rank "
                  "gets the same rows: the split layer is one block repeated, not the one device's layer, and its "
                  "ranks' output features start identical (their gradients differ, so training moves them apart, "
                  "which is why it still converges, to something else). Draw the full layer from the seed on "
                  "every rank and keep this rank's rows [r·k, (r + 1)·k), as `TP.ColumnParallelLinear(full)` "
                  "does; for a layer too large to draw whole, draw the master weight once and scatter it, or give "
                  "each rank a generator of its own (Megatron-LM's per-rank seeds), accepting that the layer then "
                  "differs from the one device's.",
    checker=bug_hunt(T.given_column_init, T.init_checker,
                     "Concatenate the ranks' rows and compare them with the one device's nn.Linear built after "
                     "torch.manual_seed(seed)."),
    reference=T.my_column_init, given=T.given_column_init,
    wrong=[(T.given_column_init, "bug included"), *T.INIT_WRONG])


tp_ranks_nvlink = Exercise(
    key="tp_ranks_nvlink", number=9, title="How far tensor parallelism stretches over NVLink",
    question=f"NVLink joins 8 GPUs in a DGX node, and larger NVLink domains join more. For one block of the "
             f"{ROOF_MODEL} preset ({_ROOF_SHAPE.heads} heads, hidden {_ROOF_SHAPE.hidden:,}) on {ROOF_GPU} GPUs, "
             f"one sequence per micro-batch: what is the largest number of ranks t, a power of two that divides "
             f"the heads, for which tensor parallelism over NVLink stays compute-bound? Use "
             f"`CR.tensor_parallel_point` and `CR.link_roof` as the roofline section does.",
    hint_text="Each rank computes 1/t of the block but the all-reduced activation keeps its size, so the "
              "intensity falls as t grows. Build the point for t = 2, 4, 8, ... and compare its intensity with "
              "the ridge (`point.bound` says which side it is on).",
    solution_text=f"The intensity is (18h + 3s)/(4(t − 1)) FLOPs a byte, the batch cancelling; over {ROOF_GPU} "
                  f"NVLink it stays above the ridge up to t = {TP_RANKS_NVLINK} and falls below it at "
                  f"t = {2 * TP_RANKS_NVLINK}: "
                  + ", ".join(f"t = {t}: {b}-bound" for t, b in _BOUND.items()) + ". So a node of 8 is not the "
                  "limit the link sets for this model: a larger NVLink domain could split it further, and a "
                  "narrower model reaches the ridge sooner (its hidden size per rank is smaller).",
    checker=number_checker(TP_RANKS_NVLINK, "ranks", rel_tol=0.0, abs_tol=0.5, near_misses=[
        (8, "8 is the GPUs one DGX node joins; the question asks how many ranks the link's ridge allows"),
        (2 * TP_RANKS_NVLINK, f"at t = {2 * TP_RANKS_NVLINK} the intensity is below the ridge: "
                              "communication-bound")]),
    reference=TP_RANKS_NVLINK,
    wrong=[(8, "one DGX node joins"), (2 * TP_RANKS_NVLINK, "communication-bound")],
    how_to_answer="Pass the number of ranks.")


EXERCISES = [column_forward, column_backward, megatron_order, fc6_break_even, conv4_all_maps, overlap_gathers, row_bias,
             same_seed, tp_ranks_nvlink]

import alexnet_workers as W
import torch

from d2lmp.parallel.alexnet_towers import crossing_bytes
from d2lmp.parallel.launch import launch


def test_two_towers_equal_the_single_device_network():
    full = W.build()
    x, y = W.sample()
    out = full(x)
    torch.nn.functional.cross_entropy(out, y).backward()
    names = {"conv1": full.features.conv1, "conv2": full.features.conv2, "conv3": full.features.conv3,
             "conv4": full.features.conv4, "conv5": full.features.conv5, "fc6": full.classifier.fc6,
             "fc7": full.classifier.fc7, "fc8": full.classifier.fc8}
    results = launch(W.towers, 2)
    for rank, (tower_out, grads, calls) in enumerate(results):
        torch.testing.assert_close(tower_out, out.detach(), rtol=1e-5, atol=1e-6)
        for layer, module in names.items():
            for kind in ("weight", "bias"):
                full_grad = getattr(module, kind).grad
                half = full_grad.shape[0] // 2
                torch.testing.assert_close(grads[f"{layer}.{kind}"], full_grad[rank * half:(rank + 1) * half],
                                           rtol=1e-4, atol=1e-6, msg=f"rank {rank} {layer}.{kind}")
        # Communication exactly where the paper's network crosses GPUs, with the predicted sizes.
        forward = [(c.label, c.bytes) for c in calls if c.op == "all_gather"]
        assert dict(forward) == crossing_bytes(3, full, W.SIZE)
        backward = [c.label for c in calls if c.op == "reduce_scatter"]
        assert backward == ["fc7 → fc8 (backward)", "fc6 → fc7 (backward)", "pool5 → fc6 (backward)",
                            "conv2 → conv3 (all maps) (backward)"]

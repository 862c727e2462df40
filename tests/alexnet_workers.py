import torch

from d2lmp.models import alexnet2012
from d2lmp.parallel.alexnet_towers import AlexNetTower
from d2lmp.parallel.p2p_log import MessageLog

SIZE = 67  # the smallest convenient input: 67 → 16 → 7 → 7 → 3 → 3 → 1


def build():
    torch.manual_seed(0)
    return alexnet2012(num_classes=10, width=0.25, input_size=SIZE, init="torch").eval()


def sample(batch=3):
    g = torch.Generator().manual_seed(1)
    return torch.randn(batch, 3, SIZE, SIZE, generator=g), torch.randint(0, 10, (batch,), generator=g)


def towers(rank, world):
    full = build()
    tower = AlexNetTower(full).eval()
    x, y = sample()
    with MessageLog() as log:
        out = tower(x)
        torch.nn.functional.cross_entropy(out, y).backward()
    grads = {n: p.grad.clone() for n, p in tower.named_parameters()}
    return out.detach(), grads, log.calls

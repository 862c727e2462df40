"""Pipeline schedules as data: which forward and backward each rank runs, in what order, and the bubble they leave.

A schedule is a list per rank of operations on micro-batches. ``schedule`` gives the classic ones,
("F", i) and ("B", i) on the rank's one stage:

* naive: one micro-batch (m = 1): each stage waits for the whole batch.
* GPipe (Huang et al. 2019): every micro-batch's forward, then every backward (in reverse).
* 1F1B (PipeDream-Flush, Narayanan et al. 2021b): after a warm-up of (p - r - 1) forwards, stage r
  alternates one forward and one backward, so at most p - r micro-batches are in flight.

``interleaved_schedule`` is Megatron-LM's interleaved 1F1B (Narayanan et al. 2021a, §2.2.2): rank r holds
v model chunks, the virtual stages r, r + p, r + 2p, ..., and works through micro-batches in groups of p,
which shrinks the bubble v-fold for (pv − 1)/(p − 1) times the point-to-point messages (about v on many
ranks). ``zero_bubble_schedule`` is
ZB-H1 (Qi et al. 2024): each backward is split into B (the input's gradient, which the previous stage
waits for) and W (the weights' gradient, which nobody waits for), and stage r defers r of its W's to
fill the bubble of the drain. ``rank_plan`` writes every kind in one form, (op, virtual stage,
micro-batch); ``simulate`` runs the plans with ideal stage times, and ``measured_bubble`` and
``measured_bubble_time`` read the bubble off any timeline, simulated or measured on ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from d2lmp.model.timeline import TimelineEvent

__all__ = ["SCHEDULES", "micro_batch_count", "PLANS", "COMPUTE_KINDS", "Op", "schedule", "interleaved_schedule",
           "zero_bubble_schedule",
           "rank_plan", "bubble_fraction", "bubble_time_fraction", "simulate", "step_span", "measured_bubble",
           "measured_bubble_time"]

SCHEDULES = ("naive", "gpipe", "1f1b")  # what ``schedule`` writes
PLANS = SCHEDULES + ("interleaved", "zero-bubble")  # what ``rank_plan`` and ``simulate`` know
COMPUTE_KINDS = ("forward", "backward", "weight")  # timeline events that keep a rank busy
Op = tuple[str, int, int]  # ("F" | "B" | "W", virtual stage, micro-batch)


def micro_batch_count(kind: str, micro_batches: int) -> int:
    """How many micro-batches schedule ``kind`` cuts the batch into: the naive one runs it whole (1)."""
    return 1 if kind == "naive" else micro_batches


def schedule(kind: str, stages: int, rank: int, micro_batches: int) -> list[tuple[str, int]]:
    """The order of ("F", i) and ("B", i) operations that ``rank`` performs."""
    if kind not in SCHEDULES:
        raise ValueError(f"unknown schedule {kind!r}; available: {', '.join(SCHEDULES)}")
    m = micro_batch_count(kind, micro_batches)
    if kind in ("naive", "gpipe"):
        return [("F", i) for i in range(m)] + [("B", i) for i in reversed(range(m))]
    warmup = min(stages - rank - 1, m)
    ops = [("F", i) for i in range(warmup)]
    f, b = warmup, 0
    while f < m:
        ops += [("F", f), ("B", b)]
        f, b = f + 1, b + 1
    ops += [("B", i) for i in range(b, m)]
    return ops


def interleaved_schedule(stages: int, rank: int, micro_batches: int, chunks: int) -> list[Op]:
    """Interleaved 1F1B: the (op, virtual stage, micro-batch) operations of ``rank``, which holds ``chunks``
    virtual stages (rank, rank + p, ...). Micro-batches go in groups of p: the group's forwards through
    chunk 0, then chunk 1, ...; backwards through the chunks in reverse. The warm-up is
    2(p - r - 1) + (v - 1)p forwards (all of them when m = p), then one forward and one backward alternate.
    """
    p, m, v = stages, micro_batches, chunks
    _check_sizes(p, rank, m)
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"chunks must be an integer >= 1, got {v!r}")
    if m % p:
        raise ValueError(f"interleaved 1F1B needs the micro-batches to be a multiple of the stages: "
                         f"{m} micro-batches on {p} stages")
    total = m * v

    def unit(k: int, forward: bool) -> tuple[int, int]:
        """This rank's k-th forward (or backward): its virtual stage and micro-batch."""
        group, within = divmod(k, p * v)
        chunk = within // p if forward else v - 1 - within // p
        return chunk * p + rank, group * p + within % p

    warmup = total if m == p else min(total, 2 * (p - rank - 1) + (v - 1) * p)
    ops = [("F", *unit(k, True)) for k in range(warmup)]
    for k in range(total - warmup):
        ops += [("F", *unit(warmup + k, True)), ("B", *unit(k, False))]
    return ops + [("B", *unit(k, False)) for k in range(total - warmup, total)]


def zero_bubble_schedule(stages: int, rank: int, micro_batches: int) -> list[tuple[str, int]]:
    """ZB-H1: 1F1B's order of forwards ("F", i) and input-gradient backwards ("B", i), with each weight-gradient
    pass ("W", i) run right after its B except that stage r keeps r of them back, for the end of the step."""
    _check_sizes(stages, rank, micro_batches)
    ops: list[tuple[str, int]] = []
    w = 0
    for op, i in schedule("1f1b", stages, rank, micro_batches):
        ops.append((op, i))
        if op == "B" and i + 1 - w > rank:  # more than r weight passes waiting: run the oldest
            ops.append(("W", w))
            w += 1
    return ops + [("W", i) for i in range(w, micro_batches)]


def rank_plan(kind: str, stages: int, rank: int, micro_batches: int, chunks: int = 1) -> list[Op]:
    """Any schedule of ``PLANS`` as (op, virtual stage, micro-batch); ``chunks`` > 1 only for "interleaved"."""
    if kind not in PLANS:
        raise ValueError(f"unknown schedule {kind!r}; available: {', '.join(PLANS)}")
    if kind == "interleaved":
        return interleaved_schedule(stages, rank, micro_batches, chunks)
    if chunks != 1:
        raise ValueError(f"only the interleaved schedule holds several chunks per rank, not {kind!r}")
    ops = zero_bubble_schedule(stages, rank, micro_batches) if kind == "zero-bubble" else schedule(
        kind, stages, rank, micro_batches)
    return [(op, rank, i) for op, i in ops]


def _check_sizes(stages: int, rank: int, micro_batches: int) -> None:
    if stages < 1 or micro_batches < 1 or not 0 <= rank < stages:
        raise ValueError(f"need stages >= 1, micro_batches >= 1 and 0 <= rank < stages; got stages {stages}, "
                         f"rank {rank}, micro_batches {micro_batches}")


def bubble_fraction(stages: int, micro_batches: int) -> float:
    """Idle share of a GPipe or 1F1B step with equal stage times: (p - 1) / (m + p - 1)."""
    if stages < 1 or micro_batches < 1:
        raise ValueError("stages and micro_batches must be >= 1")
    return (stages - 1) / (micro_batches + stages - 1)


def bubble_time_fraction(stages: int, micro_batches: int, chunks: int = 1) -> float:
    """The bubble over the ideal compute time, (p - 1) / (v·m) (Narayanan et al. 2021a, t_pb / t_id):
    (p - 1)/m for GPipe and 1F1B, v times less for interleaved 1F1B with v chunks per rank."""
    if stages < 1 or micro_batches < 1 or chunks < 1:
        raise ValueError("stages, micro_batches and chunks must be >= 1")
    return (stages - 1) / (chunks * micro_batches)


def step_span(events: list[TimelineEvent]) -> float:
    """Seconds from the first operation's start to the last one's end, over all ranks."""
    return max(e.end for e in events) - min(e.start for e in events)


def measured_bubble(events: list[TimelineEvent], world: int) -> float:
    """Idle share of the step: 1 - (busy time summed over ranks) / (ranks × span of the step)."""
    busy = sum(e.duration for e in events if e.kind in COMPUTE_KINDS)
    return 1 - busy / (world * step_span(events))


def measured_bubble_time(events: list[TimelineEvent], world: int) -> float:
    """Idle time over busy time, summed over ranks: the measured counterpart of ``bubble_time_fraction``."""
    busy = sum(e.duration for e in events if e.kind in COMPUTE_KINDS)
    return (world * step_span(events) - busy) / busy


def simulate(kind: str, stages: int, micro_batches: int, forward: float = 1.0, backward: float = 2.0,
             message: float = 0.0, chunks: int = 1, weights: Sequence[float] | None = None) -> list[TimelineEvent]:
    """Events of an ideal pipeline: each stage takes ``forward``/``backward`` time units per micro-batch, so a
    chunk of the interleaved schedule takes 1/v of them, and the zero-bubble schedule's B and W half the
    backward each. ``weights`` (one per virtual stage) make the stages unequal: virtual stage s then takes
    ``weights[s]`` times ``forward`` and ``backward`` (the measured stage costs, with forward 1/3 and backward
    2/3, give a measured network's timeline). Each rank runs its ``rank_plan`` in order, an op starting once
    the rank is free and its input is ready. Messages are free by default; with ``message`` > 0 each
    activation or gradient takes that long to reach another rank, recorded as a "send" event on the sender
    and a "recv" event on the receiver (the sender does not wait).
    """
    if forward <= 0 or backward <= 0 or message < 0:
        raise ValueError("forward and backward times must be positive, message time non-negative")
    if weights is not None and (len(weights) != stages * chunks or min(weights) < 0):
        raise ValueError(f"weights must give each of the {stages * chunks} virtual stages a non-negative time, "
                         f"got {list(weights)}")
    m = micro_batch_count(kind, micro_batches)
    scale = micro_batches / m  # naive: one micro-batch as large as all of them
    plans = [rank_plan(kind, stages, r, micro_batches, chunks) for r in range(stages)]
    last = stages * chunks - 1
    split = 2 if kind == "zero-bubble" else 1
    seconds = {"F": forward * scale, "B": backward * scale / split, "W": backward * scale / split}
    done: dict[Op, float] = {}
    position, free = [0] * stages, [0.0] * stages
    events = []
    while any(position[r] < len(plans[r]) for r in range(stages)):
        progressed = False
        for r in range(stages):
            if position[r] == len(plans[r]):
                continue
            op, s, i = plans[r][position[r]]
            need = _needs(op, s, i, last)
            if need is not None and need not in done:
                continue
            crosses = need is not None and need[1] % stages != r  # the input comes from another rank
            ready = done[need] + (message * scale if crosses else 0.0) if need is not None else 0.0
            start = max(free[r], ready)
            end = start + (seconds[op] * weights[s] if weights is not None else seconds[op] / chunks)
            done[(op, s, i)] = free[r] = end
            kind_of = {"F": "forward", "B": "backward", "W": "weight"}[op]
            events.append(TimelineEvent(r, kind_of, f"{op}{i}", start, end, micro_batch=i, stage=s))
            to = {"F": s + 1, "B": s - 1}.get(op, -1)
            if message > 0 and 0 <= to <= last and to % stages != r:
                arrives = end + message * scale
                events += [TimelineEvent(r, "send", f"{op}{i}", end, arrives, micro_batch=i, stage=s),
                           TimelineEvent(to % stages, "recv", f"{op}{i}", end, arrives, micro_batch=i, stage=to)]
            position[r] += 1
            progressed = True
        if not progressed:
            raise RuntimeError("schedule deadlocks")  # cannot happen for the schedules above
    return events


def _needs(op: str, s: int, i: int, last: int) -> Op | None:
    """The operation whose result ``op`` on virtual stage ``s`` and micro-batch ``i`` waits for (None: the data)."""
    if op == "F":
        return ("F", s - 1, i) if s > 0 else None
    if op == "B":
        return ("B", s + 1, i) if s < last else ("F", s, i)
    return ("B", s, i)  # W: the weights' gradient needs the output gradient that B received

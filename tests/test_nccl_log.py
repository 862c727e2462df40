"""The recorded NCCL log reader: None until a log is recorded, and an excerpt of the lines a reader looks for."""

import pytest

from d2lmp.recorded import nccl_log

# A made-up log in NCCL's line format (host:pid:tid [device] NCCL INFO ...), for the parser only.
TEXT = """NCCL_DEBUG=INFO python -m tools.nccl_debug: our collectives on 2 NCCL rank(s), one per GPU
host:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
NCCL version 2.99.0+cuda99.0
host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM
host:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM
host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 - Init COMPLETE
our collectives equal NCCL's on 2 rank(s): True
"""


def test_a_log_is_its_command_and_nccls_lines():
    log = nccl_log.parse_nccl_debug_log("nccl_debug_x_2099-01-01.txt", TEXT)
    assert log.command.startswith("NCCL_DEBUG=INFO python -m tools.nccl_debug")
    assert len(log.lines) == 5 and all("NCCL" in line for line in log.lines)  # the script's own lines are not NCCL's
    assert log.excerpt() == [log.lines[1], log.lines[2], log.lines[3], log.lines[4]]  # version, transports, set-up
    assert log.excerpt(per_topic=1) == [log.lines[1], log.lines[2], log.lines[4]]
    with pytest.raises(ValueError, match="NCCL_DEBUG=INFO"):
        nccl_log.parse_nccl_debug_log("empty.txt", "a command\nno log here\n")


def test_the_recorded_log_is_read_when_there_is_one():
    log = nccl_log.nccl_debug_log()
    assert log is None or (log.name.startswith("nccl_debug_") and any("NCCL version" in x for x in log.excerpt()))

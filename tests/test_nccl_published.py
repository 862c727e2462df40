"""The published nccl-tests sweeps are read as their source prints them; nccl-tests' arithmetic holds on them."""

import dataclasses

import pytest

from d2lmp.bibliography import SOURCES
from d2lmp.model import alpha_beta as AB
from d2lmp.model import nccl_published as P


def test_azure_h200_sweep_is_the_tables_doubling_sizes_from_1_kib_to_8_gib():
    sweep = P.AZURE_ND_H200_V5
    # the table's labels, "1K" ... "65K", "132K" ... "8G": the command's -b 8 -e 8G -f 2 sizes from 1 KiB on
    labels = ["1K", "2K", "4K", "8K", "16K", "32K", "65K", "132K", "256K", "524K", "1M", "2M", "4M", "8M", "16M",
              "33M", "67M", "134M", "268M", "536M", "1G", "2G", "4G", "8G"]
    assert len(sweep.sizes_bytes) == len(labels) == len(sweep.busbw_gbs)
    assert sweep.sizes_bytes == tuple(2**k for k in range(10, 34))
    for size, label in zip(sweep.sizes_bytes, labels):  # each label is its size rounded, in 1000s or 1024s
        power = "KMG".index(label[-1]) + 1
        assert min(abs(int(label[:-1]) * base**power - size) / size for base in (1000, 1024)) < 0.02, label
    assert (sweep.busbw_gbs[0], sweep.busbw_gbs[-1]) == (0.06, 479.98)  # the table's first and last rows
    assert all(a < b for a, b in zip(sweep.busbw_gbs, sweep.busbw_gbs[1:])), "the published sweep only climbs"
    assert all(k in SOURCES for k in sweep.source) and sweep.ranks == 8 and sweep.algorithm == "NVLS"


def test_algbw_undoes_the_all_reduce_bus_factor():
    sweep = P.AZURE_ND_H200_V5
    factor = AB.BUS_FACTORS["all_reduce"](8)
    assert factor == pytest.approx(1.75)
    assert sweep.algbw_gbs[-1] == pytest.approx(479.98 / 1.75)
    # NCCL's maintainer quotes about 480 GB/s busbw and 275 GB/s algbw for an NVLS all-reduce on 8 GPUs
    assert sweep.algbw_gbs[-1] == pytest.approx(275, rel=0.01)


def test_a_sweep_refuses_mismatched_columns_and_unknown_collectives():
    good = dataclasses.asdict(P.AZURE_ND_H200_V5)
    with pytest.raises(ValueError, match="sizes"):
        P.PublishedBusBandwidth(**{**good, "busbw_gbs": good["busbw_gbs"][:-1]})
    with pytest.raises(ValueError, match="unknown collective"):
        P.PublishedBusBandwidth(**{**good, "collective": "all_to_allv"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.AZURE_ND_H200_V5.ranks = 4

import sys
import types

import pytest

from d2lmp import gpu_specs, hardware
from d2lmp.gpu_specs import find_gpu_spec
from d2lmp.hardware import CPUInfo, low_precision_instructions, simd_from_flags


@pytest.mark.parametrize("flags, lanes, units", [
    ({"avx512f", "avx2", "fma", "avx"}, 16, 2),
    ({"avx2", "fma", "avx"}, 8, 2),
    ({"avx", "sse2"}, 8, 1),
    ({"sse2"}, 4, 1),
    ({"asimd"}, 4, 2),
    (set(), 1, 1),
])
def test_simd_from_flags(flags, lanes, units):
    _, got_lanes, got_units = simd_from_flags(flags)
    assert (got_lanes, got_units) == (lanes, units)


def test_peak_formula_haswell_style_core():
    # An AVX2 core with two FMA units does 32 FP32 FLOP/cycle (Intel/StackOverflow q/15655835).
    cpu = CPUInfo("test", cores=8, clock_ghz=3.0, clock_source="given", simd="AVX2+FMA",
                  fp32_lanes=8, fma_units=2, fma_note="")
    assert cpu.flops_per_cycle_per_core == 32
    assert cpu.peak_gflops_fp32 == pytest.approx(768.0)
    assert cpu.peak_gflops("float64") == pytest.approx(384.0)
    assert cpu.peak_gflops("float16") is None
    assert "8 cores × 3.000 GHz × 8 FP32 lanes" in cpu.formula()


def test_peak_unknown_without_clock():
    cpu = CPUInfo("test", 2, None, "unknown", "AVX2+FMA", 8, 2, "")
    assert cpu.peak_gflops_fp32 is None
    assert "unknown" in cpu.formula()


def test_cpu_info_on_this_machine():
    cpu = hardware.cpu_info()
    assert cpu.cores >= 1
    assert cpu.fp32_lanes >= 1
    if cpu.clock_ghz is not None:
        assert 0.2 < cpu.clock_ghz < 10
        assert cpu.peak_gflops_fp32 > 0


def test_torch_devices_always_lists_cpu_last():
    devices = hardware.torch_devices()
    assert devices[-1] == "cpu"


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5"),
    ("NVIDIA H100 PCIe", None),  # 2.0 TB/s HBM2e, not the SXM's 3.35 TB/s: no row rather than a wrong one
    ("NVIDIA H100 NVL", None),
    ("NVIDIA A100-PCIE-40GB", None),
    ("NVIDIA A100 80GB PCIe", None),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
    ("Tesla T4", "T4"),
    ("Tesla V100-SXM2-16GB", "V100 SXM2"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
    ("NVIDIA GeForce RTX 4090", None),
    ("NVIDIA RTX A6000", None),
])
def test_find_gpu_spec(name, expected):
    spec = find_gpu_spec(name)
    assert (spec.name if spec else None) == expected


def test_gpu_table_is_sourced_and_self_consistent():
    for spec in gpu_specs.NOTABLE_GPUS:
        assert spec.source and spec.link
        assert spec.fp32_tflops > 0 and spec.bandwidth_gbs > 0 and spec.memory_gb > 0
        if spec.fp16_tensor_tflops:
            assert spec.fp16_tensor_tflops > spec.fp32_tflops
    gtx580 = find_gpu_spec("GTX 580")
    assert gtx580.fp32_tflops == pytest.approx(512 * 2 * 1.544e9 / 1e12, abs=0.01)
    assert gtx580.bandwidth_gbs == pytest.approx(384 / 8 * 4.008, abs=0.1)
    h200 = find_gpu_spec("H200")
    assert h200.bandwidth_gbs == pytest.approx(6144 / 8 * 6.25, rel=0.01)


def test_peak_gflops_by_device():
    peak, source = hardware.peak_gflops("cpu", "float16")
    assert peak is None and "no CPU peak" in source
    assert gpu_specs.gpu_peak_gflops("NVIDIA H200", "bfloat16") == pytest.approx(989_400)
    assert gpu_specs.gpu_peak_gflops("NVIDIA H200", "float64") is None


def test_nvml_without_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    gpus, sentence = hardware.nvml_gpus()
    assert gpus == [] and "nvidia-ml-py" in sentence


class _NotSupported(Exception):
    pass


def _fake_pynvml(init_error=None, count=1):
    """A stand-in for the pynvml module: one H200, power limit not reported, 12 NVLinks up."""
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_NVLINK_MAX_LINKS, m.NVML_FEATURE_ENABLED = 1, 2, 18, 1
    calls = []

    def init():
        if init_error:
            raise init_error
        calls.append("init")

    m.nvmlInit = init
    m.nvmlShutdown = lambda: calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: count
    m.nvmlSystemGetDriverVersion = lambda: "580.1"
    m.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=141 * 2**30)
    m.nvmlDeviceGetMaxClockInfo = lambda h, kind: {1: 1980, 2: 3201}[kind]
    m.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    m.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16

    def power(h):
        raise _NotSupported("not supported")

    m.nvmlDeviceGetEnforcedPowerLimit = power

    def link_state(h, link):  # 12 of 18 links up, as on a partly cabled board
        return 1 if link < 12 else 0

    m.nvmlDeviceGetNvLinkState = link_state
    return m, calls


def test_nvml_query_with_fake_library(monkeypatch):
    fake, calls = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus, sentence = hardware.nvml_gpus()
    assert "1 NVIDIA GPU" in sentence and "580.1" in sentence
    g = gpus[0]
    assert g.name == "NVIDIA H200" and g.memory_gib == pytest.approx(141)
    assert (g.sm_clock_max_mhz, g.mem_clock_max_mhz, g.pcie_gen, g.pcie_width) == (1980, 3201, 5, 16)
    assert g.power_limit_w is None and any("power limit" in n for n in g.notes)
    assert g.nvlink_active == 12
    assert calls == ["init", "shutdown"]


def test_nvml_without_driver_gives_a_sentence(monkeypatch):
    fake, _ = _fake_pynvml(init_error=RuntimeError("NVML Shared Library Not Found"))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus, sentence = hardware.nvml_gpus()
    assert gpus == [] and "No NVIDIA driver" in sentence


def test_nvml_driver_without_gpus(monkeypatch):
    fake, _ = _fake_pynvml(count=0)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus, sentence = hardware.nvml_gpus()
    assert gpus == [] and "reports no GPU" in sentence


def _fake_cache(tmp_path, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return str(tmp_path)


def test_last_level_cache_from_sysfs(tmp_path):
    root = _fake_cache(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                  (3, "Unified", "32768K")])
    assert hardware.last_level_cache(root) == (3, 32 * 2**20)


def test_last_level_cache_skips_instruction_caches_and_bad_sizes(tmp_path):
    root = _fake_cache(tmp_path, [(1, "Data", "32K"), (2, "Instruction", "64M"), (2, "Unified", "oops")])
    assert hardware.last_level_cache(root) == (1, 32 * 2**10)


def test_last_level_cache_missing_directory(tmp_path):
    assert hardware.last_level_cache(str(tmp_path / "nothing")) is None


def test_last_level_cache_on_this_machine():
    found = hardware.last_level_cache()
    if found is not None:
        level, nbytes = found
        assert level >= 1 and nbytes > 0


def test_nvml_error_after_init_gives_a_sentence(monkeypatch):
    fake, calls = _fake_pynvml()

    def lost(i):
        raise _NotSupported("GPU is lost")

    fake.nvmlDeviceGetHandleByIndex = lost
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus, sentence = hardware.nvml_gpus()
    assert gpus == [] and "could not be queried" in sentence and "GPU is lost" in sentence
    assert calls == ["init", "shutdown"]


def test_accelerator_sentence_names_the_gpu_through_nvml(monkeypatch):
    """Naming the GPU must not start CUDA here, or launch() could no longer fork notebook workers."""
    fake, _ = _fake_pynvml(count=2)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(hardware, "gpu_count", lambda: 2)

    def would_start_cuda(*args, **kwargs):
        raise AssertionError("torch.cuda.get_device_name starts CUDA in the notebook process")

    monkeypatch.setattr("torch.cuda.get_device_name", would_start_cuda)
    assert hardware.accelerator_sentence() == "Using 2 CUDA GPU(s): NVIDIA H200."
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert "could not name" in hardware.accelerator_sentence()


def test_accelerator_sentence_without_gpu_leaves_cuda_untouched():
    import torch

    sentence = hardware.accelerator_sentence()
    assert sentence
    assert not torch.cuda.is_initialized()


def test_meminfo_total_is_read_in_kib():
    assert hardware.meminfo_total_bytes("MemFree:  10 kB\nMemTotal:       24684084 kB\n") == 24684084 * 1024
    assert hardware.meminfo_total_bytes("nothing here") is None


def test_host_memory_on_this_machine_and_without_sysconf(monkeypatch):
    total = hardware.host_memory_bytes()
    assert total is None or total > 2**28  # any machine that runs these tests has more than 256 MiB
    meminfo = hardware._read("/proc/meminfo")
    if total is not None and meminfo:  # Linux: both ways agree within a few percent (kernel-reserved pages)
        assert abs(total - hardware.meminfo_total_bytes(meminfo)) < 0.05 * total

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(hardware.os, "sysconf", no_sysconf)
    monkeypatch.setattr(hardware, "_read", lambda path: "MemTotal:  2048 kB\n" if path == "/proc/meminfo" else None)
    assert hardware.host_memory_bytes() == 2048 * 1024


def test_low_precision_instructions_are_read_for_the_cpus_family():
    x86 = low_precision_instructions({"sse2", "avx2", "fma", "avx512f", "avx512_vnni"}, "x86_64")
    assert x86 == {"avx512_bf16": False, "amx_bf16": False, "avx512_vnni": True, "avx_vnni": False, "amx_int8": False}
    arm = low_precision_instructions({"fp", "asimd", "asimddp", "bf16"}, "aarch64")
    assert arm == {"bf16": True, "asimddp": True, "i8mm": False}
    assert low_precision_instructions(set(), "x86_64") == {}  # no flags listed: nothing is reported missing

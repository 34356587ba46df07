"""GPU presets for `configbags plan --gpu`: the memory a device reports and its SM count.

Memory is the capacity `nvidia-smi` reports (MiB), which is also what SGLang's
`get_device_memory_capacity` sees and what its default `mem_fraction_static` is computed
from. The plan takes it as the pre-load free memory, i.e. it leaves out the few hundred MiB
a CUDA context takes (docs/PLAN.md lists this among the deliberate differences).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

MiB = 1 << 20


@attrs.frozen
class GpuPreset:
    name: str
    memory_bytes: int
    sm_count: int
    sm: int  # compute capability, major*10+minor (the `gpu.sm` fact the rules test)


GPU_PRESETS: Mapping[str, GpuPreset] = {
    p.name.lower(): p
    for p in (
        GpuPreset("H100", 81559 * MiB, 132, 90),  # H100 SXM5 80GB HBM3
        GpuPreset("H200", 143771 * MiB, 132, 90),  # H200 SXM 141GB HBM3e
        GpuPreset("B200", 183359 * MiB, 148, 100),
        GpuPreset("A100-80G", 81920 * MiB, 108, 80),  # A100 SXM4 80GB
        GpuPreset("A100-40G", 40960 * MiB, 108, 80),
        GpuPreset("L40S", 46068 * MiB, 142, 89),
    )
}


def gpu_preset(name: str) -> GpuPreset:
    """The preset of that name (case-insensitive); KeyError lists the known ones."""
    try:
        return GPU_PRESETS[name.strip().lower()]
    except KeyError:
        known = ", ".join(p.name for p in GPU_PRESETS.values())
        raise KeyError(f"unknown GPU {name!r}; known: {known}") from None

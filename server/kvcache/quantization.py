"""How a checkpoint stores quantized weights (`quantization_config`), as bytes per weight:
what the weight estimate multiplies the decoder parameters by."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

import attrs

from configbags.server.kvcache.config_fields import ConfigFields


@attrs.frozen
class WeightQuant:
    """How a checkpoint stores its quantized linear weights, from `quantization_config`."""

    method: str  # quant_method (plus the algorithm where one method covers several)
    bytes_per_param: Fraction  # one quantized weight, its share of scales and zeros included
    experts_only: bool = False  # mxfp4 (gpt-oss) quantizes the routed experts only


_FP4_BLOCK = Fraction(1, 2) + Fraction(1, 16)  # nvfp4: 4 bits + one fp8 scale per 16
_GPTQ_BITS = frozenset({2, 3, 4, 8})  # GPTQConfig's supported widths


def weight_quant(f: ConfigFields) -> WeightQuant | None:
    """The storage of quantized weights the checkpoint declares (`quantization_config`):
    AWQ and GPTQ (`bits`, `group_size`), compressed-tensors (`config_groups`), fp8 (with
    `weight_block_size` scales), mxfp4 and nvfp4 (ModelOpt or compressed-tensors)."""
    quant = f.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, Mapping):
        raise f.refuse("quantization_config", quant, "it must be an object")
    q = ConfigFields(quant, f"{f.source}: quantization_config")
    method = q.string("quant_method").lower()
    reader = _READERS.get(method)
    if reader is None:
        raise f.refuse(
            "quantization_config.quant_method", method,
            "the planner sizes awq, gptq, compressed-tensors, fp8, mxfp4 and modelopt (fp8, nvfp4) "
            "checkpoints; pass --weight-bytes with the measured size",
        )
    return reader(q, method)


def _group_wise(q: ConfigFields, method: str) -> WeightQuant:
    """AWQ / GPTQ: `bits` per weight, and per group one float16 scale and (GPTQ always,
    AWQ with `zero_point`) one packed zero point."""
    bits = q.integer("bits", maximum=16)
    group = q.optional_int("group_size", -1, minimum=-1)
    if method.startswith("awq") and bits != 4:
        # AWQConfig: "Currently, only 4-bit weight quantization is supported for AWQ"
        raise q.refuse("bits", bits, "SGLang's AWQ runs 4-bit weights only; use a 4-bit AWQ checkpoint")
    if method.startswith("gptq") and bits not in _GPTQ_BITS:
        raise q.refuse("bits", bits, f"SGLang's GPTQ runs {', '.join(map(str, sorted(_GPTQ_BITS)))}-bit weights")
    if group != -1 and (group < 1 or group & (group - 1)):
        raise q.refuse("group_size", group, "it must be -1 (one group per row) or a power of two such as "
                                            "32, 64 or 128 (the quantization kernels tile by it)")
    zero = method.startswith("gptq") or q.get("zero_point", True) is True
    overhead = Fraction(0) if group <= 0 else Fraction(16 + (bits if zero else 0), 8 * group)
    return WeightQuant(method, Fraction(bits, 8) + overhead)


def _fp8(q: ConfigFields, method: str) -> WeightQuant:
    """One byte per weight, plus one float32 scale per `weight_block_size` block."""
    block = q.get("weight_block_size")
    if block is None:
        return WeightQuant("fp8", Fraction(1))
    if not (isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise q.refuse("weight_block_size", block, "it must be two positive integers")
    return WeightQuant("fp8", 1 + Fraction(4, block[0] * block[1]))


def _mxfp4(q: ConfigFields, method: str) -> WeightQuant:
    """gpt-oss: 4 bits + one e8m0 scale per 32 values, routed experts only."""
    return WeightQuant("mxfp4", Fraction(17, 32), experts_only=True)


def _modelopt(q: ConfigFields, method: str) -> WeightQuant:
    algo = q.string("quant_algo", "FP4" if method == "modelopt_fp4" else "FP8").upper()
    if algo in ("NVFP4", "FP4"):
        return WeightQuant("nvfp4", _FP4_BLOCK)
    if algo == "FP8":
        return WeightQuant("fp8", Fraction(1))
    raise q.refuse("quant_algo", algo, "the planner sizes FP8 and NVFP4 ModelOpt checkpoints")


def _compressed_tensors(q: ConfigFields, method: str) -> WeightQuant:
    if "nvfp4" in q.string("format").lower():
        return WeightQuant("compressed-tensors nvfp4", _FP4_BLOCK)
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise q.refuse("config_groups", groups, "it must name at least one quantization group")
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, Mapping) else None
    if not isinstance(weights, Mapping):
        raise q.refuse("config_groups", groups, "its first group must hold a `weights` scheme")
    w = ConfigFields(weights, f"{q.source}.config_groups.weights")
    bits = w.integer("num_bits", maximum=16)
    group = w.optional_int("group_size", 0, minimum=0)
    if w.string("type", "int") == "float" and bits == 4:
        return WeightQuant("compressed-tensors nvfp4", _FP4_BLOCK)
    zero = bits if w.get("symmetric", True) is False else 0
    overhead = Fraction(16 + zero, 8 * group) if group else Fraction(0)
    return WeightQuant(f"compressed-tensors w{bits}", Fraction(bits, 8) + overhead)




_READERS: Mapping[str, Callable[[ConfigFields, str], WeightQuant]] = {
    "awq": _group_wise,
    "awq_marlin": _group_wise,
    "gptq": _group_wise,
    "gptq_marlin": _group_wise,
    "fp8": _fp8,
    "mxfp4": _mxfp4,
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
    "modelopt_fp8": _modelopt,
    "compressed-tensors": _compressed_tensors,
}

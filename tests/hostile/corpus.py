"""Hand-picked hostile inputs, shared by the hostile-input tests: each names what it
attacks. Kept as text (not built values) where the attack is in the parsing."""

from __future__ import annotations

# A hang detector, not a speed target (bench/bench_hostile.py prints the real figures):
# an unguarded bomb runs for minutes, a refused one in milliseconds.
HANG_S = 20.0


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """The classic alias bomb as a YAML flow value: `width**levels` strings from ~500 bytes."""
    lines = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    # nest the anchors so every level is defined before it is used, in one flow value
    text = lines[0]
    for line in lines[1:]:
        text = f"[{text}, {line}]"
    return text


def deep_json_text(depth: int = 900) -> str:
    return "[" * depth + "]" * depth


def deep_list(depth: int = 900) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def cyclic_list() -> list[object]:
    value: list[object] = []
    value.append(value)
    return value


def cyclic_dict() -> dict[str, object]:
    value: dict[str, object] = {}
    value["self"] = value
    return value


HUGE_INT = 10**5000
BIG_FLOAT_INT = 2**2000

# Text a config file may hold that YAML 1.1 would silently misread, with what YAML 1.2
# (and so configbags) makes of it.
YAML_1_1_TRAPS = {
    "010": 10,  # 1.1: octal 8
    "1:20": "1:20",  # 1.1: sexagesimal 80
    "0b11": "0b11",  # 1.1: binary 3
    "1_000": "1_000",  # 1.1: 1000
    "yes": "yes",  # 1.1: True
    "off": "off",  # 1.1: False
    "2001-12-14": "2001-12-14",  # 1.1: a date
}

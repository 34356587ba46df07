"""Round seven's false passes of the read ratchet about copies (an outside attack): a copy
made by `dataclasses.replace(get_server_args(), ...)` (the draft-worker idiom), by the
generated record's own `.replace(...)`, or `from_dict` of such a copy's `to_dict()`,
carries every published value it does not change. It reads like the record, as a
`copy.copy` does: turned into text, pickled, queued or handed on, it is reported; a leaf
read on it is reported too, and `ratchet fix` never rewrites it (it may be a changed one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, read_keys, scan_pkg
from ratchet_case import fails as _fails

from configbags.migrate.fix import REPLACED_REASON, refusal

GENERATED = "from configbags.generated.accessors import get_server_args\n"


# ---- H2: dataclasses.replace of the raw record


@pytest.mark.parametrize("body", [
    # r02: turned into text
    "import dataclasses\n" + RAW + "def f():\n    return str(dataclasses.replace(get_server_args()))\n",
    # x10: logged and repr'd under a name (the draft worker's copy)
    "import dataclasses, logging\n" + RAW + "log = logging.getLogger(__name__)\n"
    "def f():\n    draft = dataclasses.replace(get_server_args(), page_size=1)\n"
    "    log.warning('draft args: %s', draft)\n    return repr(draft)\n",
    # x11: put on a queue, read back elsewhere
    "import dataclasses, queue\n" + RAW + "Q = queue.Queue()\n"
    "def f():\n    Q.put(dataclasses.replace(get_server_args(), port=1))\n",
    # attrs.evolve, f-string
    "import attrs\n" + RAW + "def f():\n    return f'{attrs.evolve(get_server_args(), port=1)}'\n",
    # a self. attribute bound to a copy, formatted in another method
    "import dataclasses\n" + RAW + "class Draft:\n    def __init__(self):\n"
    "        self.args = dataclasses.replace(get_server_args(), tp_size=1)\n"
    "    def show(self):\n        return str(self.args)\n",
])
def test_a_replace_copy_of_the_record_escapes_like_the_record(tmp_path: Path, body: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": body})
    assert [r for r in result.reads if r.leaf == "*"], result.reads
    assert _fails(result)


def test_a_replace_copy_pickled_round_trip_is_read(tmp_path: Path) -> None:
    # r03
    user = "import dataclasses, pickle\n" + RAW + (
        "def f():\n    return pickle.loads(pickle.dumps(dataclasses.replace(get_server_args()))).tp_size\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    # pickled, the copy escapes (as the record does)
    assert read_keys(result) & {("pkg/user.py", "f", "tp_size"), ("pkg/user.py", "f", "*")}, result.reads
    assert _fails(result)


def test_a_replace_copy_handed_to_a_project_function_is_followed(tmp_path: Path) -> None:
    # r04
    user = "import dataclasses\n" + RAW + (
        "def run(sa):\n    return sa.tp_size * 1\n"
        "def f():\n    return run(dataclasses.replace(get_server_args(), port=1))\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "run", "tp_size") in read_keys(result), result.reads
    assert _fails(result)


# ---- H2b: the generated record's own .replace, and from_dict of its to_dict


@pytest.mark.parametrize(("body", "key"), [
    # g02
    ("def f():\n    return str(get_server_args().replace())\n", ("pkg/user.py", "f", "*")),
    # g03
    ("def run(sa):\n    return sa.tp_size\n"
     "def f():\n    return run(get_server_args().replace(port=1))\n", ("pkg/user.py", "run", "tp_size")),
    # g06: to_dict of the copy reads every leaf
    ("def f():\n    return type(get_server_args()).from_dict(get_server_args().replace().to_dict()).tp_size\n",
     ("pkg/user.py", "f", "*")),
])
def test_the_generated_records_replace_copy_reads_like_the_record(
    tmp_path: Path, body: str, key: tuple[str, str, str]
) -> None:
    result = scan_pkg(tmp_path, {"user.py": GENERATED + body})
    assert key in read_keys(result), result.reads
    assert _fails(result)


# ---- what the copy's own leaf reads are: reported, never rewritten


def test_a_leaf_read_on_a_replace_copy_is_reported_and_fix_refuses_it(tmp_path: Path) -> None:
    user = "import dataclasses\n" + RAW + (
        "def f():\n    draft = dataclasses.replace(get_server_args(), tp_size=1)\n    return draft.tp_size\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    (read,) = [r for r in result.reads if r.leaf == "tp_size"]
    assert read.origin == "replaced"
    assert refusal(read, {"tp_size": "get_parallel().tp_size"}, rewrite_parameters=True) == REPLACED_REASON
    assert _fails(result)


def test_a_record_built_from_scratch_still_escapes_nothing(tmp_path: Path) -> None:
    user = "import logging\nfrom legacy.server_args import ServerArgs\n" + (
        "def f():\n    args = ServerArgs(model_path='m')\n    logging.info('%s', args)\n    return str(args)\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert not [r for r in result.reads if r.leaf == "*"], result.reads


# ---- a record rebuilt from the record's values is a copy of it


@pytest.mark.parametrize("made", [
    "ServerArgs.from_dict(get_server_args().to_dict())",
    "type(get_server_args()).from_dict(get_server_args().replace(port=1).to_dict())",
    "ServerArgs.from_dict(dataclasses.asdict(get_server_args()))",
])
def test_a_record_rebuilt_from_the_records_values_escapes_like_it(tmp_path: Path, made: str) -> None:
    # the values read whole where it is built may be allowlisted; its escape elsewhere is not
    user = "import dataclasses, queue\nfrom legacy.server_args import ServerArgs, get_server_args\n" + (
        "Q = queue.Queue()\n"
        f"class Draft:\n    def __init__(self):\n        self.args = {made}\n"
        "    def send(self):\n        Q.put(self.args)\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("pkg/user.py", "Draft.send", "*") in read_keys(result), result.reads


def test_a_write_to_a_record_rebuilt_from_the_records_values_changes_a_copy(tmp_path: Path) -> None:
    user = "from legacy.server_args import ServerArgs, get_server_args\n" + (
        "def f():\n    draft = ServerArgs.from_dict(get_server_args().to_dict())\n    draft.tp_size = 1\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert [v.origin for v in result.violations] == ["copied"], result.violations

"""Round twenty-three's findings about the read ratchet (an outside attack): a suffixless
script whose first line runs it through a Python launcher (`torchrun`, `deepspeed`,
`accelerate launch`) or an interpreter not named python (`graalpy`, `py`) was not scanned
(R23-1); `ratchet init` wrote a ratchet.yaml that no command could load back for a file
name holding a byte that is not UTF-8 (R23-2); and a zip archive of Python code under a
name zipimport does not care about (`vendor.whl`, `data.bin`, an image with a zip appended)
was not reported (R23-3)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest
from ratchet_case import RAW, SETTINGS, fails, file_reads, scan_pkg, write_pkg

from configbags.migrate.cli import main
from configbags.migrate.importer import ROLES_YAML
from configbags.migrate.scan import scan_tree

RAW_READ = RAW + "def run():\n    return get_server_args().page_size\n"


# ---- R23-1: a script run by a Python launcher from its shebang is scanned as a module


@pytest.mark.parametrize("shebang", [
    "#!/usr/bin/env -S torchrun --nproc_per_node=1",
    "#!/usr/bin/env -S deepspeed --num_gpus 1",
    "#!/usr/bin/env -S accelerate launch --num_processes 1",
    "#!/usr/bin/env -S nice -n 5 torchrun --standalone",
    "#!/opt/venv/bin/torchrun",
    "#!/usr/bin/env graalpy",
    "#!/usr/bin/env -S py -3.12",
    "#!/usr/local/bin/jython",
])
def test_a_script_run_by_a_python_launcher_from_its_shebang_is_scanned(tmp_path: Path, shebang: str) -> None:
    result = scan_pkg(tmp_path, {"bin/serve": f"{shebang}\n{RAW_READ}"})
    assert "pkg/bin/serve" in result.files
    assert ("run", "page_size") in file_reads(result, "pkg/bin/serve")
    assert fails(result)


@pytest.mark.parametrize("shebang", [
    "#!/usr/bin/env -S accelerate config",  # (accelerate's other commands run no script)
    "#!/bin/sh",
    "#!/usr/bin/env node",
    "#!/opt/py/bin/bash",  # (a folder named py is no interpreter)
])
def test_a_script_run_by_no_python_is_not_scanned_as_a_module(tmp_path: Path, shebang: str) -> None:
    write_pkg(tmp_path, {"user.py": "x = 1\n", "bin/tool": f"{shebang}\necho hi\n"})
    result = scan_tree(tmp_path, SETTINGS)
    assert not result.problems, result.problems
    assert not fails(result), result.reads


# ---- R23-2: init never writes a ratchet.yaml that no command can load back


READER = "def f(server_args):\n    return server_args.tp_size\n"
BAD_NAME = os.fsdecode(b"bad\xff.py")  # (a byte that is not UTF-8: legal on Linux, imported by path)


def _project(folder: Path) -> list[str]:
    """An engine of five reading modules and a schema beside it; the init command's words."""
    (folder / "eng").mkdir()
    for i in range(5):
        (folder / "eng" / f"m{i}.py").write_text(READER)
    (folder / "schema" / "namespaces").mkdir(parents=True)
    (folder / "schema" / "namespaces" / "parallel.yaml").write_text(
        "namespace: parallel\ndoc: d\nleaves:\n  tp_size: {type: int, default: 1, help: h, owner: launcher, override: startup}\n"
    )
    (folder / "schema" / "roles.yaml").write_text(ROLES_YAML)
    return ["init", "--schema", str(folder / "schema"), "--root", "eng"]


def test_init_refuses_a_file_name_no_yaml_entry_can_hold_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = _project(tmp_path)
    check = ["check", "--schema", str(tmp_path / "schema"), "--no-cache"]
    assert main(init) == 0
    before = (tmp_path / "schema" / "ratchet.yaml").read_bytes()
    (tmp_path / "eng" / BAD_NAME).write_text(READER)
    capsys.readouterr()
    # check names the rename, not an entry that would break the file
    assert main(check) == 1
    out = capsys.readouterr().out
    assert "eng/bad\\xff.py) is not UTF-8" in out and "rename the file" in out
    assert "\\uDCFF" not in out and "allowlist it with a reason" not in out.split("bad")[-1]
    assert main(init) == 2
    err = capsys.readouterr().err
    assert "eng/bad\\xff.py: a file name that is not UTF-8" in err and "Nothing was written" in err
    assert (tmp_path / "schema" / "ratchet.yaml").read_bytes() == before
    assert main(check) == 1  # (the file still loads: the failure is the read, not the schema)


def test_a_file_name_that_is_not_utf8_with_nothing_to_list_is_no_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = _project(tmp_path)
    (tmp_path / "eng" / BAD_NAME).write_text("def g():\n    return 1\n")
    assert main(init) == 0
    assert main(["check", "--schema", str(tmp_path / "schema"), "--no-cache"]) == 0


# ---- R23-3: a zip archive of Python code is reported whatever its name


def _zip(members: dict[str, str], comment: bytes = b"") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
        archive.comment = comment
    return buf.getvalue()


PNG_HEAD = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
USER = (
    "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'logo.png'))\n"
    "import zmod2\ndef run():\n    return zmod2.run()\n"
)


@pytest.mark.parametrize(("name", "data"), [
    ("vendor.whl", _zip({"zmod/__init__.py": RAW_READ})),
    ("vendor", _zip({"zmod.py": RAW_READ})),
    ("data.bin", _zip({"zmod.py": RAW_READ})),
    ("logo.png", PNG_HEAD + _zip({"zmod2.py": RAW_READ})),
    ("blob.dat", _zip({"zmod.pyc": "\0" * 16}, comment=b"c" * 4000)),  # (a comment after the end record)
])
def test_a_zip_archive_of_python_code_is_reported_whatever_its_name(tmp_path: Path, name: str, data: bytes) -> None:
    write_pkg(tmp_path, {"uz.py": USER})
    (tmp_path / "pkg" / name).write_bytes(data)
    result = scan_tree(tmp_path, SETTINGS)
    assert [p.file for p in result.problems] == [f"pkg/{name}"], result.problems
    assert "a zip archive holding Python code" in result.problems[0].reason
    assert fails(result)


@pytest.mark.parametrize(("name", "data"), [
    ("logo.png", PNG_HEAD),
    ("weights.bin", os.urandom(70000)),
    ("vendor.whl", _zip({"data/table.csv": "a,b\n"})),
    ("fake.bin", b"x" * 100 + b"PK\x05\x06" + b"\0" * 10),  # (the signature, but no zip)
    ("tiny", b"PK"),
])
def test_a_file_that_is_no_archive_of_python_code_is_no_problem(tmp_path: Path, name: str, data: bytes) -> None:
    write_pkg(tmp_path, {"uz.py": "x = 1\n"})
    (tmp_path / "pkg" / name).write_bytes(data)
    result = scan_tree(tmp_path, SETTINGS)
    assert not result.problems, result.problems
    assert not fails(result)


# ---- R23-4, R23-6: a side file's lines are split as the reader that runs them splits them

PTH_IMPORT = b'import builtins, os; builtins.PAGE = os.environ.get("SGLANG_PAGE_SIZE")'


@pytest.mark.parametrize(("data", "line"), [
    (b"# vendored paths\r" + PTH_IMPORT + b"\r", 2),  # (a lone CR ends a line in text mode)
    (b"\xef\xbb\xbf" + PTH_IMPORT + b"\n", 1),  # (Python 3.13 decodes a .pth as utf-8-sig)
    (b"../vendor\r\n# x\r\n" + PTH_IMPORT + b"\r\n", 3),
])
def test_a_pth_import_line_is_read_at_every_line_end_site_knows(tmp_path: Path, data: bytes, line: int) -> None:
    write_pkg(tmp_path, {"user.py": "x = 1\n"})
    (tmp_path / "pkg" / "zz.pth").write_bytes(data)
    result = scan_tree(tmp_path, SETTINGS)
    rows = [r for r in result.reads if r.file == "pkg/zz.pth"]
    assert [(r.leaf, r.line) for r in rows] == [("$SGLANG_PAGE_SIZE", line)], result.reads
    assert fails(result)


def test_a_pth_of_folders_with_lone_crs_is_clean(tmp_path: Path) -> None:
    write_pkg(tmp_path, {"user.py": "x = 1\n"})
    (tmp_path / "pkg" / "zz.pth").write_bytes(b"# paths\r../vendor\r/opt/SGLANG_PAGE_SIZE\r")
    result = scan_tree(tmp_path, SETTINGS)
    assert not result.problems and not fails(result), result.reads


PLUGIN_LOOP = (
    "from importlib.metadata import entry_points\ndef f():\n"
    "    return sorted(ep.load()().page_size for ep in entry_points(group='engine.plugins'))\n"
)


@pytest.mark.parametrize("end", [b"\r", b"\r\n", b"\n"])
def test_an_entry_point_file_with_lone_crs_is_read_as_importlib_metadata_reads_it(tmp_path: Path, end: bytes) -> None:
    plug = tmp_path / "pkg" / "plug-1.0.dist-info"
    good = tmp_path / "pkg" / "good-1.0.dist-info"
    plug.mkdir(parents=True)
    good.mkdir()
    (plug / "entry_points.txt").write_bytes(end.join([b"# plugins", b"[engine.plugins]", b"args = legacy.server_args:get_server_args", b""]))
    (good / "entry_points.txt").write_text("[engine.plugins]\nok = pkg.prov:provide\n")
    prov = "import types\ndef provide():\n    return types.SimpleNamespace(page_size=1)\n"
    result = scan_pkg(tmp_path, {"prov.py": prov, "loadp.py": PLUGIN_LOOP})
    rows = [r for r in result.reads if r.file == "pkg/plug-1.0.dist-info/entry_points.txt"]
    assert rows and rows[0].line == 3 and rows[0].function == "<module>", result.reads
    assert fails(result)

"""Round fourteen's virtual dispatch (an outside attack): a base method hands the record to
`self.hook(rec)` (R14-1; `cls.build(rec)` in a classmethod, R14-2) or a declared name to
`self.read("X")` (R14-3), and the base's own `hook`/`read` is a stub, abstract or reads
nothing, while a subclass's override (in the base's module or another) reads a leaf or
the environment. The project pass follows such a call into the override of every scanned
subclass, and the read is reported where it is read (the override for a record leaf, the
base's call for the name it hands over). Each case has a twin whose override reads
nothing declared; an override that cannot take the record is an escape (`*`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import RAW, fails, file_reads, scan_env_pkg, scan_pkg

BASE_STUB = "        return None\n"
BASE_RAISES = "        raise NotImplementedError\n"

RUNNER = """\
class BaseRunner:
    def run(self):
        return self.init_memory(get_server_args())

    def init_memory(self, sa):
{stub}
"""

CUDA = """\
class CudaRunner(BaseRunner):
    def init_memory(self, sa):
        return {body}


def main():
    return CudaRunner().run()
"""


def _runner(stub: str = BASE_STUB, body: str = "sa.page_size") -> str:
    return RAW + RUNNER.format(stub=stub.rstrip("\n")) + "\n\n" + CUDA.format(body=body)


# ---- R14-1: the hook's override, in the base's module


@pytest.mark.parametrize("stub", [BASE_STUB, BASE_RAISES, "        ...\n"])
def test_an_override_of_a_hook_in_the_same_module_is_read(tmp_path: Path, stub: str) -> None:
    result = scan_pkg(tmp_path, {"user.py": _runner(stub)})
    assert ("CudaRunner.init_memory", "page_size") in file_reads(result), result.reads
    assert fails(result)


def test_an_abstract_hook_is_read_in_its_implementation(tmp_path: Path) -> None:
    user = RAW + (
        "import abc\n\n\nclass Backend(abc.ABC):\n    def setup(self):\n"
        "        return self.init_metadata(get_server_args())\n\n"
        "    @abc.abstractmethod\n    def init_metadata(self, sa):\n        ...\n\n\n"
        "class FlashInfer(Backend):\n    def init_metadata(self, sa):\n        return sa.page_size\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("FlashInfer.init_metadata", "page_size") in file_reads(result), result.reads


def test_an_override_reading_nothing_of_the_record_stays_clean(tmp_path: Path) -> None:
    result = scan_pkg(tmp_path, {"user.py": _runner(body="id(sa)")})
    assert not {leaf for _, leaf in file_reads(result)}, result.reads
    assert not fails(result)


def test_an_override_a_subclass_of_a_subclass_defines_is_read(tmp_path: Path) -> None:
    user = _runner(body="None") + (
        "\n\nclass H100Runner(CudaRunner):\n    def init_memory(self, sa):\n        return sa.page_size\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("H100Runner.init_memory", "page_size") in file_reads(result), result.reads


def test_an_override_that_cannot_take_the_record_escapes(tmp_path: Path) -> None:
    user = _runner().replace("    def init_memory(self, sa):\n        return sa.page_size", "    def init_memory(self):\n        return 1")
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("BaseRunner.run", "*") in file_reads(result), result.reads
    assert fails(result)


# ---- R14-1: the base in another module, the record kept in `self`

MODEL_RUNNER_BASE = """\
class BaseModelRunner:
    def __init__(self, server_args):
        self.server_args = server_args
        self.init_memory_pool(server_args)

    def init_memory_pool(self, server_args):
        raise NotImplementedError
"""

CUDA_MODEL_RUNNER = RAW + """\
from pkg.base import BaseModelRunner


class CudaModelRunner(BaseModelRunner):
    def __init__(self, server_args):
        super().__init__(server_args)

    def init_memory_pool(self, sa):
        self.page_size = {body}


def main():
    return CudaModelRunner(get_server_args()).page_size
"""


@pytest.mark.parametrize("two_modules", [True, False])
def test_a_runner_overriding_its_base_hook_is_read(tmp_path: Path, two_modules: bool) -> None:
    user = CUDA_MODEL_RUNNER.format(body="sa.page_size")
    files = {"base.py": MODEL_RUNNER_BASE, "user.py": user} if two_modules else {
        "user.py": MODEL_RUNNER_BASE + "\n\n" + user.replace("from pkg.base import BaseModelRunner\n", "")
    }
    result = scan_pkg(tmp_path, files)
    assert ("CudaModelRunner.init_memory_pool", "page_size") in file_reads(result), result.reads
    assert fails(result)


def test_a_runner_whose_override_reads_nothing_stays_clean(tmp_path: Path) -> None:
    files = {"base.py": MODEL_RUNNER_BASE, "user.py": CUDA_MODEL_RUNNER.format(body="0")}
    result = scan_pkg(tmp_path, files)
    assert not any(r.leaf != "tp_size" for r in result.reads), result.reads
    assert not fails(result)


def test_a_hook_handed_the_record_kept_in_self_is_read(tmp_path: Path) -> None:
    user = RAW + (
        "class BaseWorker:\n    def __init__(self):\n        self.server_args = get_server_args()\n\n"
        "    def start(self):\n        return self.init_device(self.server_args)\n\n"
        "    def init_device(self, cfg):\n        raise NotImplementedError\n\n\n"
        "class GPUWorker(BaseWorker):\n    def init_device(self, cfg):\n        return cfg.page_size\n"
    )
    result = scan_pkg(tmp_path, {"user.py": user})
    assert ("GPUWorker.init_device", "page_size") in file_reads(result), result.reads


# ---- R14-2: a classmethod's `cls.build(rec)`

TEMPLATE = RAW + """\
class ModelConfig:
    @classmethod
    def from_server_args(cls, sa):
        return cls.build(sa)

    @classmethod
    def build(cls, sa):
        return None


class DeepSeekConfig(ModelConfig):
    @classmethod
    def build(cls, sa):
        return {body}


def main():
    return DeepSeekConfig.from_server_args(get_server_args())
"""


@pytest.mark.parametrize(("body", "read"), [("sa.page_size", True), ("None", False)])
def test_a_classmethod_override_is_read(tmp_path: Path, body: str, read: bool) -> None:
    result = scan_pkg(tmp_path, {"user.py": TEMPLATE.format(body=body)})
    assert (("DeepSeekConfig.build", "page_size") in file_reads(result)) is read, result.reads
    assert fails(result) is read


# ---- R14-3: an environment helper's override

ENV_BASE = """\
class Base:
    def read(self, name):
        return None

    def page(self):
        return self.read({name})
"""

ENV_BACKED = """\
class EnvBacked(Base):
    def read(self, name):
        return os.environ.get(name)
"""


@pytest.mark.parametrize("two_modules", [False, True])
@pytest.mark.parametrize(("name", "leaf"), [('"SGLANG_PAGE_SIZE"', "$SGLANG_PAGE_SIZE"), ('"HOME"', None)])
def test_a_name_handed_to_an_overriding_env_helper_is_read(
    tmp_path: Path, two_modules: bool, name: str, leaf: str | None
) -> None:
    base = ENV_BASE.format(name=name)
    if two_modules:
        files = {"base.py": base, "user.py": "import os\nfrom pkg.base import Base\n\n\n" + ENV_BACKED}
    else:
        files = {"base.py": "import os\n\n\n" + base + "\n\n" + ENV_BACKED}
    result = scan_env_pkg(tmp_path, files)
    reads = file_reads(result, "pkg/base.py")
    assert {found for function, found in reads if function == "Base.page"} == ({leaf} if leaf else set()), result.reads


def test_a_name_the_base_does_not_show_is_unresolved(tmp_path: Path) -> None:
    base = ENV_BASE.format(name="input()")
    result = scan_env_pkg(tmp_path, {"base.py": "import os\n\n\n" + base + "\n\n" + ENV_BACKED})
    assert ("Base.page", "$?") in file_reads(result, "pkg/base.py"), result.reads

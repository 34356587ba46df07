"""Round sixteen's false passes of the read ratchet through settings libraries (an outside
attack, families 11 and 12): a pydantic-settings subclass of a settings base of another
scanned module, an `alias_generator`, a `model_config` changed after the class; and
Dynaconf's `Dynaconf(envvar_prefix="SGLANG")` read by attribute, `.get` or key, and an
unknown settings object made with a prefix of declared variables. Each is read (or `$?`);
each has a twin that reads nothing declared."""

from __future__ import annotations

from pathlib import Path

import pytest
from ratchet_case import fails, file_reads, scan_env_pkg

PAGE = "$SGLANG_PAGE_SIZE"
UNRESOLVED = "$?"

PS = "from pydantic_settings import BaseSettings, SettingsConfigDict\n"
BASE = PS + """\
class EngSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="{prefix}")
"""
SUB = """\
from pkg.settings_base import EngSettings
class Knobs(EngSettings):
    page_size: int = 1
def main():
    return Knobs().page_size
"""


def _leaves(files: dict[str, str], tmp_path: Path, file: str = "pkg/user.py") -> set[str]:
    result = scan_env_pkg(tmp_path, files)
    leaves = {leaf for _, leaf in file_reads(result, file)}
    assert bool(leaves) == fails(result) or file != "pkg/user.py", result.reads
    return leaves


# ---- 11: a settings base of another module


def test_subclass_of_a_settings_base_of_another_module_reads_its_fields(tmp_path: Path) -> None:  # l03
    files = {"settings_base.py": BASE.format(prefix="SGLANG_"), "user.py": SUB}
    assert _leaves(files, tmp_path) == {PAGE}


def test_subclass_of_a_base_reached_through_its_module_reads_its_fields(tmp_path: Path) -> None:
    sub = SUB.replace("from pkg.settings_base import EngSettings", "import pkg.settings_base as sb").replace(
        "(EngSettings)", "(sb.EngSettings)")
    assert _leaves({"settings_base.py": BASE.format(prefix="SGLANG_"), "user.py": sub}, tmp_path) == {PAGE}


def test_subclass_two_modules_down_reads_its_fields(tmp_path: Path) -> None:
    mid = "from pkg.settings_base import EngSettings\nclass Mid(EngSettings):\n    pass\n"
    user = SUB.replace("pkg.settings_base import EngSettings", "pkg.mid import Mid").replace("(EngSettings)", "(Mid)")
    files = {"settings_base.py": BASE.format(prefix="SGLANG_"), "mid.py": mid, "user.py": user}
    assert _leaves(files, tmp_path) == {PAGE}


def test_subclass_of_a_base_under_another_prefix_reads_nothing(tmp_path: Path) -> None:
    files = {"settings_base.py": BASE.format(prefix="OTHER_"), "user.py": SUB}
    assert _leaves(files, tmp_path) == set()


def test_a_base_of_another_module_with_an_unknown_prefix_is_unresolved(tmp_path: Path) -> None:
    base = BASE.format(prefix="x").replace('"x"', "os.environ.get('P', 'X_')").replace(PS, "import os\n" + PS)
    assert UNRESOLVED in _leaves({"settings_base.py": base, "user.py": SUB}, tmp_path)


@pytest.mark.parametrize("where", ["same", "other"])
def test_a_base_s_fields_read_under_the_prefix_its_subclass_sets(tmp_path: Path, where: str) -> None:
    base = PS + "class EngSettings(BaseSettings):\n    page_size: int = 1\n"
    sub = 'class Knobs(EngSettings):\n    model_config = SettingsConfigDict(env_prefix="SGLANG_")\n'
    if where == "same":
        assert _leaves({"user.py": base + sub}, tmp_path) == {PAGE}
    else:
        user = "from pkg.settings_base import EngSettings\nfrom pydantic_settings import SettingsConfigDict\n" + sub
        assert _leaves({"settings_base.py": base, "user.py": user}, tmp_path) == {PAGE}


def test_a_base_s_fields_under_a_subclass_s_other_prefix_read_nothing(tmp_path: Path) -> None:
    base = PS + "class EngSettings(BaseSettings):\n    page_size: int = 1\n"
    user = (
        "from pkg.settings_base import EngSettings\nfrom pydantic_settings import SettingsConfigDict\n"
        'class Knobs(EngSettings):\n    model_config = SettingsConfigDict(env_prefix="OTHER_")\n'
    )
    assert _leaves({"settings_base.py": base, "user.py": user}, tmp_path) == set()


# ---- 11: alias generators


GEN = PS + """\
from pydantic import AliasGenerator
class Knobs(BaseSettings):
    model_config = SettingsConfigDict(alias_generator={generator})
    page_size: int = 1
def main():
    return Knobs().page_size
"""


@pytest.mark.parametrize("generator", [
    'lambda f: "SGLANG_" + f.upper()',  # l01
    'AliasGenerator(validation_alias=lambda f: f"SGLANG_{f.upper()}")',  # l06
    'AliasGenerator(alias=lambda name: "sglang_" + name)',
    'lambda f: PREFIX + f',
])
def test_an_alias_generator_reads_the_names_it_makes(tmp_path: Path, generator: str) -> None:
    text = GEN.format(generator=generator).replace("from pydantic import", 'PREFIX = "SGLANG_"\nfrom pydantic import')
    assert _leaves({"user.py": text}, tmp_path) == {PAGE}


@pytest.mark.parametrize("generator", [
    'lambda f: "OTHER_" + f.upper()',
    'AliasGenerator(serialization_alias=lambda f: "SGLANG_" + f.upper())',  # (not read from the environment)
    "to_camel",
])
def test_an_alias_generator_making_no_declared_name_reads_nothing(tmp_path: Path, generator: str) -> None:
    text = GEN.format(generator=generator).replace(
        "from pydantic import AliasGenerator", "from pydantic import AliasGenerator\nfrom pydantic.alias_generators import to_camel")
    assert _leaves({"user.py": text}, tmp_path) == set()


@pytest.mark.parametrize("generator", ["make_alias", 'lambda f: ENVS.get(f, "X")', "AliasGenerator(make_alias)"])
def test_an_alias_generator_not_shown_is_unresolved(tmp_path: Path, generator: str) -> None:
    text = GEN.format(generator=generator) + "def make_alias(f):\n    return 'SGLANG_' + f.upper()\nENVS = {}\n"
    assert UNRESOLVED in _leaves({"user.py": text}, tmp_path)


def test_a_field_s_own_alias_wins_over_the_generator(tmp_path: Path) -> None:
    text = GEN.format(generator='lambda f: "SGLANG_" + f.upper()').replace(
        "page_size: int = 1", 'page_size: int = Field(1, validation_alias="OTHER")').replace(
        "from pydantic import AliasGenerator", "from pydantic import AliasGenerator, Field")
    assert _leaves({"user.py": text}, tmp_path) == set()


# ---- 11: model_config changed after the class


CHANGED = PS + """\
class Knobs(BaseSettings):
    page_size: int = 1
{change}
def main():
    return Knobs().page_size
"""


@pytest.mark.parametrize("change", [
    'Knobs.model_config["env_prefix"] = "SGLANG_"',  # l02
    'Knobs.model_config.update(env_prefix="SGLANG_")',  # l05
    'Knobs.model_config |= {"env_prefix": "SGLANG_"}',
    'Knobs.model_config = SettingsConfigDict(env_prefix="SGLANG_")',
    'setattr(Knobs, "model_config", {"env_prefix": "SGLANG_"})',
    'def tune():\n    Knobs.model_config.update(CFG)\nCFG = {}',
])
def test_model_config_changed_after_the_class_is_unresolved(tmp_path: Path, change: str) -> None:
    assert UNRESOLVED in _leaves({"user.py": CHANGED.format(change=change)}, tmp_path)


def test_model_config_of_an_imported_settings_class_changed_is_unresolved(tmp_path: Path) -> None:
    user = 'from pkg.settings_base import EngSettings\nEngSettings.model_config["env_prefix"] = "SGLANG_"\n'
    base = PS + "class EngSettings(BaseSettings):\n    page_size: int = 1\n"
    assert UNRESOLVED in _leaves({"settings_base.py": base, "user.py": user}, tmp_path)


@pytest.mark.parametrize("change", [
    'Knobs.model_config["extra"] = "forbid"',
    'Knobs.model_config.update(frozen=True)',
    'print(Knobs.model_config["env_prefix"])',
])
def test_model_config_changed_in_no_environment_setting_reads_nothing(tmp_path: Path, change: str) -> None:
    assert _leaves({"user.py": CHANGED.format(change=change)}, tmp_path) == set()


# ---- 12: Dynaconf


DYN = """\
from dynaconf import Dynaconf
settings = Dynaconf(envvar_prefix="{prefix}")
def main(name):
    return {use}
"""


@pytest.mark.parametrize("use", [
    "settings.PAGE_SIZE",  # l04
    'settings.get("page_size")',  # l07
    'settings["page_size"]',
    "settings.page_size",
    'settings.as_int("PAGE_SIZE")',
    'settings("page_size")',
])
def test_dynaconf_reads_the_prefixed_name(tmp_path: Path, use: str) -> None:
    assert _leaves({"user.py": DYN.format(prefix="SGLANG", use=use)}, tmp_path) == {PAGE}


@pytest.mark.parametrize("use", ["settings.get(name)", "settings[name]", "settings.as_dict()", "helper(settings)"])
def test_dynaconf_read_by_a_name_not_shown_or_handed_on_is_unresolved(tmp_path: Path, use: str) -> None:
    assert UNRESOLVED in _leaves({"user.py": DYN.format(prefix="SGLANG", use=use) + "def helper(s):\n    pass\n"}, tmp_path)


@pytest.mark.parametrize(("prefix", "use"), [
    ("OTHER", "settings.PAGE_SIZE"),
    ("OTHER", "settings.get(name)"),
    ("SGLANG", "settings.MODEL_PATH"),
    ("SGLANG", 'settings.set("PAGE_SIZE", 3)'),
])
def test_dynaconf_reading_no_declared_name_reads_nothing(tmp_path: Path, prefix: str, use: str) -> None:
    assert _leaves({"user.py": DYN.format(prefix=prefix, use=use)}, tmp_path) == set()


def test_dynaconf_made_in_another_module_is_read_where_it_is_used(tmp_path: Path) -> None:
    conf = 'from dynaconf import LazySettings\nsettings = LazySettings(envvar_prefix="SGLANG")\n'
    user = "from pkg.conf import settings\ndef main():\n    return settings.PAGE_SIZE\n"
    assert _leaves({"conf.py": conf, "user.py": user}, tmp_path) == {PAGE}
    user = "import pkg.conf as conf\ndef main():\n    return conf.settings.get('page_size')\n"
    assert _leaves({"conf.py": conf, "user.py": user}, tmp_path / "b") == {PAGE}


def test_dynaconf_of_another_module_by_another_prefix_reads_nothing(tmp_path: Path) -> None:
    conf = 'from dynaconf import Dynaconf\nsettings = Dynaconf(envvar_prefix="OTHER")\n'
    user = "from pkg.conf import settings\ndef main():\n    return settings.PAGE_SIZE\n"
    assert _leaves({"conf.py": conf, "user.py": user}, tmp_path) == set()


def test_dynaconf_without_a_prefix_reads_unprefixed_names(tmp_path: Path) -> None:
    text = DYN.format(prefix="x", use="settings.SGLANG_PAGE_SIZE").replace('envvar_prefix="x"', "envvar_prefix=False")
    assert _leaves({"user.py": text}, tmp_path) == {PAGE}


# ---- an unknown settings object made with a prefix of declared variables


@pytest.mark.parametrize("call", ['Config(envvar_prefix="SGLANG")', 'make_settings(env_prefix="SGLANG_")'])
def test_an_unknown_object_made_with_a_declared_prefix_is_unresolved(tmp_path: Path, call: str) -> None:
    text = f"from somelib import Config, make_settings\ncfg = {call}\ndef main():\n    return cfg.page\n"
    assert UNRESOLVED in _leaves({"user.py": text}, tmp_path)


@pytest.mark.parametrize("call", [
    'Config(envvar_prefix="OTHER")', 'make_settings(env_prefix="")', "Config(prefix='SGLANG_')",
    'Registry(env_prefix="SGLANG_")',  # (configbags' own generated registry)
])
def test_an_unknown_object_made_with_another_prefix_reads_nothing(tmp_path: Path, call: str) -> None:
    text = (
        "from somelib import Config, make_settings\nfrom configbags.runtime.generated_api import Registry\n"
        f"cfg = {call}\ndef main():\n    return cfg.page\n"
    )
    assert _leaves({"user.py": text}, tmp_path) == set()

"""The package as shipped: one version number, type information next to the module."""

import pathlib
import re

import tensormem


def test_version_is_the_one_of_the_cmake_project(source_dir):
    cmake = (source_dir / "CMakeLists.txt").read_text()
    version = re.search(r"project\(tensormem\s+VERSION\s+([0-9.]+)", cmake).group(1)
    assert tensormem.__version__ == version


def test_type_information_ships_with_the_module():
    package = pathlib.Path(tensormem.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_tensormem.pyi").read_text()
    native = tensormem._tensormem
    for name in ("plan", "read_trace", "replay", "Trace", "BfcAllocator", "write_replay_report"):
        assert hasattr(native, name) and f" {name}" in stub, name


def test_public_functions_are_documented():
    for name in tensormem.__all__:
        if name.startswith("__"):
            continue
        assert getattr(tensormem, name).__doc__, name

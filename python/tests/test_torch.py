"""tensormem.torch: the plug-in library ships next to the module; the old name
is an alias. Enabling the allocator (once per process) is checked end to end by
tests/torch/plugin_checks.py."""

import os

import pytest

torch = pytest.importorskip("torch")
import tensormem.torch as tm_torch  # noqa: E402


def test_library_is_found_next_to_the_module(monkeypatch):
    monkeypatch.delenv("TENSORMEM_TORCH_LIBRARY", raising=False)
    path = tm_torch.library_path()
    assert os.path.dirname(path) == os.path.dirname(tm_torch.__file__)
    assert os.path.basename(path) == "libtensormem_torch.so"


def test_explicit_library_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORMEM_TORCH_LIBRARY", str(tmp_path / "none.so"))
    with pytest.raises(FileNotFoundError, match="none.so"):
        tm_torch.library_path()


def test_bad_option_is_a_value_error_from_its_code():
    with pytest.raises(ValueError, match="memory_limt"):
        tm_torch.enable(memory_limt="1GiB")
    with pytest.raises(ValueError, match="sub_allocator"):
        tm_torch.enable(sub_allocator="cuda")
    assert not tm_torch.is_enabled()


def test_old_module_name_is_an_alias():
    import tensormem_torch

    assert tensormem_torch.enable is tm_torch.enable
    assert tensormem_torch.stats is tm_torch.stats

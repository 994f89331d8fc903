"""Builds the tensormem package: CMake compiles the extension module (and the
PyTorch plug-in, when libtorch-dev is installed) from the repository around
this folder, and the results are copied into the package.

TENSORMEM_CMAKE_BUILD_DIR names an existing build tree to reuse (`make python`
passes build/<preset>); otherwise a Release tree is configured under build/.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
SOURCE_DIR = PACKAGE_DIR.parent


def project_version() -> str:
    """The version of project(tensormem VERSION ...), the one place it is defined."""
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    match = re.search(r"project\(tensormem\s+VERSION\s+([0-9][0-9.]*)", text)
    if match is None:
        raise RuntimeError(f"{SOURCE_DIR / 'CMakeLists.txt'}: no project(tensormem VERSION ...)")
    return match.group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = pathlib.Path(
            os.environ.get("TENSORMEM_CMAKE_BUILD_DIR") or pathlib.Path(self.build_temp) / "cmake"
        ).resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.check_call([
                "cmake", "-S", str(SOURCE_DIR), "-B", str(build_dir), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release",
                "-DTENSORMEM_BUILD_TESTS=OFF",
                "-DTENSORMEM_BUILD_BENCHMARKS=OFF",
                "-DTENSORMEM_BUILD_CLI=OFF",
                "-DTENSORMEM_BUILD_PYTHON=ON",
                f"-DPython_EXECUTABLE={sys.executable}",
            ])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call([
            "cmake", "--build", str(build_dir), "--target", "tensormem_python_package", "-j", jobs,
        ])
        staged = build_dir / "python" / "tensormem"
        destination = pathlib.Path(self.get_ext_fullpath(ext.name)).parent
        destination.mkdir(parents=True, exist_ok=True)
        libraries = list(staged.glob("_tensormem*.so")) + list(staged.glob("libtensormem_*.so"))
        if not any(path.name.startswith("_tensormem") for path in libraries):
            raise RuntimeError(f"{staged}: the build made no _tensormem module")
        for library in libraries:
            shutil.copy2(library, destination / library.name)


setup(
    version=project_version(),
    ext_modules=[Extension("tensormem._tensormem", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)

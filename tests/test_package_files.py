"""The package's folders found by the import system (inkling_compat/inputs/package_files.py) are those
`importlib.resources.files` finds, for the package and the folders mapped into it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from inkling_compat.inputs.package_files import package_folder


@pytest.mark.parametrize("name", ["inkling_compat", "inkling_compat.rules", "inkling_compat.schemas"])
def test_the_folder_is_the_one_importlib_resources_finds(name):
    assert package_folder(name) == Path(str(resources.files(name)))
    assert package_folder(name).is_dir()


def test_a_missing_package_is_said():
    with pytest.raises(ModuleNotFoundError):
        package_folder("inkling_compat.no_such_folder")

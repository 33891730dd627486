"""The repository keeps the design card's top-level folders; the wheel ships them under ``labtest``.

``drivers/`` becomes ``labtest.drivers``, ``fixtures/`` ``labtest.fixtures``, and the data
folders (suites, testbeds, stations) ``labtest.suites`` and friends, so one distribution
installs one import name and nothing else at the top of site-packages.
"""

from setuptools import find_namespace_packages, find_packages, setup

ROOTS = {
    "labtest": "labtest",
    "labtest.drivers": "drivers",
    "labtest.fixtures": "fixtures",
    "labtest.suites": "suites",
    "labtest.testbeds": "testbeds",
    "labtest.stations": "stations",
}


def _packages() -> list[str]:
    found: list[str] = []
    for name, folder in ROOTS.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(folder)]
    # `labtest init`'s template: data folders, not importable code
    found += [f"labtest.{sub}" for sub in find_namespace_packages("labtest",
                                                                 include=["project_template*"])]
    return found


setup(package_dir=ROOTS, packages=_packages())

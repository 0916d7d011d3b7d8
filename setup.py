"""What pyproject.toml cannot say: the compiled laundromat module, the package data, and the egg
``scrapyd-deploy`` builds.

* ``pip install .`` / ``python -m build``: the package with its recordings, templates, CouchDB design
  documents (``couchdb_views/`` becomes ``votersdaily._couchdb_views``) and the laundromat's compiled
  fast path ``votersdaily.laundromat._ntscan``, the event pipeline's JSON text of an event
  ``votersdaily._eventjson``, and the ingest's page-0 renderer ``votersdaily.ingest._page0`` (C++ on
  poppler's own classes, Debian's ``libpoppler-private-dev``). The extensions are optional: without a
  compiler, the Python headers or poppler's, the build warns and goes on, and the package runs its
  other path (the laundromat's pure-Python one, the C JSON encoder of Python's ``json`` for events,
  ``pdftoppm`` for thumbnails: slower, same output). ``scripts/build_native.py`` builds them in place for
  development.
* ``scrapyd-deploy`` (``setup.py bdist_egg``): a thin egg, the project's name, version and ``scrapy``
  settings entry point only. The code runs from the package installed on the scrapyd node (with its
  compiled module, which a zipped egg cannot load for another platform); docs/operations.md.
"""

import shutil
import subprocess

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.bdist_egg import bdist_egg

NTSCAN = "votersdaily.laundromat._ntscan"
EVENTJSON = "votersdaily._eventjson"
PAGE0 = "votersdaily.ingest._page0"
VIEWS = "votersdaily._couchdb_views"
#: Folders of data (recordings, templates, views) are packages too, so every file in them is package
#: data without a list of suffixes to keep up to date.
NOT_PACKAGES = ["*.__pycache__", "*.egg-info"]


def ntscan_extension(
    *, compile_args: list[str] | None = None, link_args: list[str] | None = None
) -> Extension:
    """The laundromat's compiled module (C, no dependencies beyond the Python headers)."""
    return Extension(
        NTSCAN,
        sources=[
            "votersdaily/laundromat/_ntscan.c",
            "votersdaily/laundromat/_turtle.c",
            "votersdaily/laundromat/_rdfxml.c",
        ],
        depends=["votersdaily/laundromat/_ntscan.h"],
        extra_compile_args=["-Wall", "-Wextra", *(compile_args if compile_args is not None else ["-O3"])],
        extra_link_args=link_args or [],
        optional=True,
    )


def eventjson_extension(
    *, compile_args: list[str] | None = None, link_args: list[str] | None = None
) -> Extension:
    """The event pipeline's compiled JSON text of an event (C, no dependencies beyond the Python
    headers; schema.py runs its Python path without it)."""
    return Extension(
        EVENTJSON,
        sources=["votersdaily/_eventjson.c"],
        extra_compile_args=["-Wall", "-Wextra", *(compile_args if compile_args is not None else ["-O3"])],
        extra_link_args=link_args or [],
        optional=True,
    )


def page0_extension(*, compile_args: list[str] | None = None) -> Extension:
    """The ingest's warm page-0 renderer: poppler's classes, called as ``pdftoppm`` calls them
    (their headers: ``libpoppler-private-dev``, matching the installed poppler)."""
    return Extension(
        PAGE0,
        sources=["votersdaily/ingest/_page0.cc"],
        language="c++",
        extra_compile_args=[
            "-std=c++17",
            "-Wall",
            "-Wextra",
            *("-isystem%s" % folder for folder in _pkg_config("--cflags-only-I", "poppler")),
            *(compile_args if compile_args is not None else ["-O2"]),
        ],
        libraries=["poppler", "fontconfig"],
        optional=True,
    )


def _pkg_config(option: str, package: str) -> list[str]:
    """The folders pkg-config names for a package (``-I`` stripped); poppler's usual one without it."""
    if shutil.which("pkg-config"):
        done = subprocess.run(["pkg-config", option, package], capture_output=True, text=True, check=False)  # noqa: S603, S607 - a fixed command
        if done.returncode == 0:
            return [flag[2:] for flag in done.stdout.split() if flag.startswith("-I")]
    return ["/usr/include/poppler"]


class ProjectEgg(bdist_egg):
    """The egg scrapyd-deploy uploads: metadata and the settings entry point, no code (the node's
    installed package runs; an egg's copy would be shadowed by it anyway, site-packages coming first)."""

    def run(self):
        dist = self.distribution
        dist.packages, dist.py_modules, dist.ext_modules, dist.package_data = [], [], [], {}
        dist.package_dir = {}
        super().run()


if __name__ == "__main__":
    setup(
        packages=[
            *find_namespace_packages(include=["votersdaily", "votersdaily.*"], exclude=NOT_PACKAGES),
            VIEWS,
            *(
                "%s.%s" % (VIEWS, name)
                for name in find_namespace_packages(where="couchdb_views", exclude=NOT_PACKAGES)
            ),
        ],
        package_dir={VIEWS: "couchdb_views"},
        package_data={"": ["*"]},
        # the C source is built, not shipped; a module built in place is rebuilt, not copied
        exclude_package_data={"": ["*.c", "*.cc", "*.h", "*.so", "*.pyd", "*.pyc"]},
        ext_modules=[ntscan_extension(), eventjson_extension(), page0_extension()],
        cmdclass={"bdist_egg": ProjectEgg},
        zip_safe=False,
    )

"""Packaging for scrapyd: ``scrapyd-deploy`` builds an egg of the project from this file.

The egg carries the code, the recorded responses (offline replay) and the CouchDB design documents;
it never carries a store URI or credentials: scrapyd nodes set VOTERSDAILY_STORE in their environment.
"""

from setuptools import find_packages, setup

from votersdaily import __version__

setup(
    name="votersdaily",
    version=__version__,
    packages=[*find_packages(include=["votersdaily", "votersdaily.*"]), "votersdaily._couchdb_views"],
    package_dir={"votersdaily._couchdb_views": "couchdb_views"},
    package_data={
        "votersdaily": ["recordings/**/*", "recordings/*", "feeds/templates/*.html", "feeds/static/*"],
        "votersdaily._couchdb_views": ["*/views/*/*.js"],
    },
    entry_points={"scrapy": ["settings = votersdaily.settings"]},
    zip_safe=False,
)

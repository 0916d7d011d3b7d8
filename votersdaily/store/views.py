"""The views of every database, declared once.

CouchDB runs the JavaScript map functions in ``couchdb_views/<db>/views/<view>/map.js``; the embedded
store computes the same keys from the :class:`ViewSpec` below. ``tests/test_views.py`` runs each JS
map function under Node on sample documents and checks it emits exactly what the spec says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from votersdaily.store.base import Store

DESIGN_NAME = "votersdaily"
DESIGN_ID = "_design/" + DESIGN_NAME

#: Where the CouchDB design documents live: a checkout of the repository (an editable install too),
#: else the copy setup.py packages as votersdaily._couchdb_views (a wheel, a scrapyd node's install).
VIEWS_DIR: Traversable = Path(__file__).resolve().parents[2] / "couchdb_views"
if not VIEWS_DIR.is_dir():
    import importlib.resources

    VIEWS_DIR = importlib.resources.files("votersdaily").joinpath("_couchdb_views")


@dataclass(frozen=True)
class ViewSpec:
    #: Document keys forming the view key; one field → a scalar key, several → an array key.
    fields: tuple[str, ...]
    #: Extra condition on the document (mirrors the ``if`` of the JS map function).
    where: Callable[[Mapping[str, Any]], bool] | None = None

    def key(self, doc: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The emitted key as a tuple of components, or None when the document is not emitted."""
        values = tuple(doc.get(field) for field in self.fields)
        if any(not isinstance(value, str) for value in values):
            return None
        if self.where is not None and not self.where(doc):
            return None
        return values


VIEWS: dict[str, dict[str, ViewSpec]] = {
    "vd_events": {
        "by_datetime": ViewSpec(("datetime",)),
        "by_branch_datetime": ViewSpec(("branch", "datetime")),
        "by_entity_datetime": ViewSpec(("entity", "datetime")),
        "by_parser_datetime": ViewSpec(("parser_name", "datetime")),
        "by_parser_unique_key": ViewSpec(("parser_name", "unique_key")),
        "by_committee_datetime": ViewSpec(("committee_code", "datetime")),
    },
    "vd_log": {
        "by_access_datetime": ViewSpec(("access_datetime",)),
        "errors": ViewSpec(("access_datetime",), where=lambda doc: doc.get("result") != "success"),
        "by_parser": ViewSpec(("parser_name", "access_datetime")),
    },
}


def views_for(db: str) -> dict[str, ViewSpec]:
    return VIEWS.get(db, {})


def view_key(spec: ViewSpec, doc: Mapping[str, Any]) -> Any:
    """The key as CouchDB would return it: a scalar for one field, a list for several."""
    key = spec.key(doc)
    if key is None:
        return None
    return key[0] if len(key) == 1 else list(key)


def design_document(db: str, views_dir: Traversable = VIEWS_DIR) -> dict[str, Any] | None:
    """The design document for ``db`` built from its folder of map.js (and optional reduce.js)."""
    folder = views_dir / db / "views"
    if not folder.is_dir():
        return None
    views = {}
    for view_dir in sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.name):
        view = {"map": (view_dir / "map.js").read_text(encoding="utf-8").strip()}
        reduce_js = view_dir / "reduce.js"
        if reduce_js.is_file():
            view["reduce"] = reduce_js.read_text(encoding="utf-8").strip()
        views[view_dir.name] = view
    return {"_id": DESIGN_ID, "language": "javascript", "views": views}


def install_design(store: Store, db: str, attempts: int = 5) -> bool:
    """Create or update the design document of ``db``; True when something changed.

    Several crawlers of one process (``crawl --all``) or several workers may install at once: a
    conflict is re-read, and an identical design document written meanwhile counts as done.
    """
    from .base import StoreError

    store.ensure_db(db)
    design = design_document(db)
    if design is None:
        return False
    for _ in range(attempts):
        current = store.get(db, DESIGN_ID)
        if current is not None:
            if current.get("views") == design["views"] and current.get("language") == design["language"]:
                return False
            design["_rev"] = current["_rev"]
        else:
            design.pop("_rev", None)
        answer = store.bulk_docs(db, [dict(design)])[0]
        if "error" not in answer:
            return True
        if answer["error"] in ("forbidden", "unauthorized"):  # CouchDB: a member may not write designs
            raise StoreError(
                "the views of %s are missing or out of date and this user may not write them (%s: %s): a "
                "server admin runs `python -m votersdaily views push` once (docs/operations.md: Users and "
                "roles)" % (db, answer["error"], answer.get("reason"))
            )
        if answer["error"] != "conflict":
            raise StoreError("could not install views in %s: %s" % (db, answer))
    raise StoreError("could not install views in %s: conflicts kept coming" % db)

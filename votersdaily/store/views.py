"""The views of every database, declared once.

CouchDB runs the JavaScript map functions in ``couchdb_views/<db>/views/<view>/map.js``; the embedded
store computes the same keys from the :class:`ViewSpec` below. ``tests/store/test_views.py`` runs each JS
map function under Node on sample documents and checks it emits exactly what the spec says.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from votersdaily.locations import checkout_root

if TYPE_CHECKING:
    from votersdaily.store.base import Store

DESIGN_NAME = "votersdaily"
DESIGN_ID = "_design/" + DESIGN_NAME

#: Where the CouchDB design documents live: a checkout of the repository (an editable install too:
#: the folder beside the package holds the project's pyproject.toml and scrapy.cfg), else the copy
#: setup.py packages as votersdaily._couchdb_views (a wheel, a scrapyd node's install), never a
#: ``couchdb_views`` folder that merely sits beside an installed package.
_CHECKOUT = checkout_root()
VIEWS_DIR: Traversable = (
    _CHECKOUT / "couchdb_views"
    if _CHECKOUT is not None and (_CHECKOUT / "couchdb_views").is_dir()
    else importlib.resources.files("votersdaily").joinpath("_couchdb_views")
)


@dataclass(frozen=True)
class ViewSpec:
    #: Document keys forming the view key; one field → a scalar key, several → an array key.
    fields: tuple[str, ...]
    #: Extra condition on the document (mirrors the ``if`` of the JS map function).
    where: Callable[[Mapping[str, Any]], bool] | None = None
    #: Keys holding ids (a string, or a list of strings): one row per distinct id, with the id first
    #: in the key and ``fields`` after it (``by_bill``: ``[bill_id, datetime]``), as the JS map emits
    #: for each string of ``[].concat(doc.<key>, …)`` the first time it meets it.
    ids: tuple[str, ...] = ()
    #: Keys whose values the view emits as each row's value: an object of those the document holds
    #: (what JSON keeps of the JS map's ``{key: doc.key, …}``: a key the document lacks is left
    #: out). None emits ``null``, as most views do.
    values: tuple[str, ...] | None = None

    @property
    def width(self) -> int:
        """How many components a key has."""
        return len(self.fields) + (1 if self.ids else 0)

    def keys(self, doc: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The keys the document emits, each a tuple of components: none, one, or one per id."""
        values = tuple(doc.get(field) for field in self.fields)
        if any(not isinstance(value, str) for value in values):
            return []
        if self.where is not None and not self.where(doc):
            return []
        if not self.ids:
            return [values]
        return [(one, *values) for one in _ids_of(doc, self.ids)]

    def value(self, doc: Mapping[str, Any]) -> dict[str, Any] | None:
        """The value each of the document's rows carries."""
        if self.values is None:
            return None
        return {key: doc[key] for key in self.values if key in doc}


def _ids_of(doc: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    """The string ids of ``keys`` in the document, in order, each once: JavaScript's ``[].concat(…)``
    of their values (a string is one id, a list gives its members) with what is no string skipped and
    an id met before skipped too (an event listing its vote as ``vote_id`` and in ``vote_ids`` is one
    row of ``by_vote``, not two: the embedded store holds a key of a document once)."""
    found: list[str] = []
    for key in keys:
        value = doc.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found.extend(one for one in value if isinstance(one, str))
    return list(dict.fromkeys(found))


#: The value of ``by_parser_provenance``: an event's archive pointer (votersdaily/archive.py),
#: ``archived`` (false when its crawl could not archive it), ``parser_version``, and the marks that
#: take it out of the live views (a reschedule's ``superseded_by``, a reparse's ``withdrawn_by`` and
#: ``replaced_by``).
PROVENANCE = (
    "warc_file",
    "warc_offset",
    "warc_record_id",
    "archived",
    "parser_version",
    "superseded_by",
    "withdrawn_by",
    "replaced_by",
)

VIEWS: dict[str, dict[str, ViewSpec]] = {
    "vd_events": {
        "by_datetime": ViewSpec(("datetime",)),
        "by_branch_datetime": ViewSpec(("branch", "datetime")),
        "by_entity_datetime": ViewSpec(("entity", "datetime")),
        "by_parser_datetime": ViewSpec(("parser_name", "datetime")),
        "by_parser_unique_key": ViewSpec(("parser_name", "unique_key")),
        # The same rows, each with what a reparse reads of every event of its parser (its archive
        # pointer, parser version and marks: votersdaily/reparse.py), so it reads no document.
        "by_parser_provenance": ViewSpec(("parser_name", "unique_key"), values=PROVENANCE),
        "by_committee_datetime": ViewSpec(("committee_code", "datetime")),
        # The ids of docs/events.md §2 ("Ids"): every event of one bill, case or roll call in time order.
        "by_bill": ViewSpec(("datetime",), ids=("bill_ids",)),
        "by_docket": ViewSpec(("datetime",), ids=("dockets",)),
        "by_vote": ViewSpec(("datetime",), ids=("vote_id", "vote_ids")),
    },
    "vd_log": {
        "by_access_datetime": ViewSpec(("access_datetime",)),
        "errors": ViewSpec(("access_datetime",), where=lambda doc: doc.get("result") != "success"),
        "by_parser": ViewSpec(("parser_name", "access_datetime")),
    },
}


def views_for(db: str) -> dict[str, ViewSpec]:
    return VIEWS.get(db, {})


def view_keys(spec: ViewSpec, doc: Mapping[str, Any]) -> list[Any]:
    """The keys as CouchDB would return them: a scalar for one component, a list for several."""
    return [key[0] if len(key) == 1 else list(key) for key in spec.keys(doc)]


def view_installed(store: Store, db: str, view: str) -> bool:
    """Whether the design document in ``db`` holds ``view`` as this code defines it: its rows then
    cover every stored document (an embedded store rebuilds them, CouchDB indexes them, when the
    design changes). A reader that may run before anything installs the views (a dry run, a
    member user) takes another way when it does not."""
    design = design_document(db)
    stored = store.get(db, DESIGN_ID) if store.has_db(db) else None
    wanted = design["views"].get(view) if design is not None else None
    return wanted is not None and stored is not None and stored.get("views", {}).get(view) == wanted


def design_is_current(store: Store, db: str) -> bool:
    """Whether ``db`` holds this code's design document (or the code has none for it)."""
    design = design_document(db)
    if design is None:
        return True
    stored = store.get(db, DESIGN_ID) if store.has_db(db) else None
    return stored is not None and _same_views(stored, design)


def _same_views(stored: Mapping[str, Any], design: Mapping[str, Any]) -> bool:
    return stored.get("views") == design["views"] and stored.get("language") == design["language"]


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
            if _same_views(current, design):
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

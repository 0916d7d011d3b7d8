"""The status state machine of the LOD Laundromat 2 design, with the states named as the design names them.

A seed is ``added`` (``failed`` for good, with its ``error``, when no request can be made of its
URI: one stored before links were checked); its download record goes ``downloading → filed``; a filed file is unpacked
(``unarchiving``) into either ``depleted`` (an archive: its entries become child records, each
``filed``) or ``unarchived`` (data); data goes ``guessing → guessed → parsing → parsed`` and gets a
``cleaned`` record. ``failed`` ends a record whose step could not complete (its ``error`` says why);
the design only names the success path.
"""

from __future__ import annotations

ADDED = "added"
DOWNLOADING = "downloading"
FILED = "filed"
UNARCHIVING = "unarchiving"
UNARCHIVED = "unarchived"
DEPLETED = "depleted"
GUESSING = "guessing"
GUESSED = "guessed"
PARSING = "parsing"
PARSED = "parsed"
CLEANED = "cleaned"
FAILED = "failed"

TRANSITIONS: dict[str, frozenset[str]] = {
    ADDED: frozenset({DOWNLOADING, FAILED}),
    # A seed whose download finished goes back to waiting until it is stale.
    DOWNLOADING: frozenset({FILED, FAILED, ADDED}),
    FILED: frozenset({UNARCHIVING}),
    UNARCHIVING: frozenset({UNARCHIVED, DEPLETED, FAILED}),
    UNARCHIVED: frozenset({GUESSING}),
    GUESSING: frozenset({GUESSED, FAILED}),
    GUESSED: frozenset({PARSING}),
    PARSING: frozenset({PARSED, FAILED}),
    PARSED: frozenset(),
    DEPLETED: frozenset(),
    CLEANED: frozenset(),
    FAILED: frozenset(),
}

#: States a crashed run left half-done: redo the step from the state before it.
RESUME_FROM = {UNARCHIVING: FILED, GUESSING: UNARCHIVED, PARSING: GUESSED}
TERMINAL = frozenset(state for state, nxt in TRANSITIONS.items() if not nxt)


class IllegalTransition(ValueError):
    """A record was asked to move to a state the machine does not allow from its current one."""


def check_transition(current: str, new: str) -> None:
    if new not in TRANSITIONS.get(current, frozenset()):
        raise IllegalTransition("status %r cannot go to %r" % (current, new))

"""The file table's database name."""

from __future__ import annotations

import pytest

from votersdaily.ingest.filetable import table_name


def test_table_name_must_be_a_couchdb_name():
    assert table_name(0, "prod") == "wbgrp-journal-extract-0-prod"
    with pytest.raises(ValueError):
        table_name(0, "Prod")

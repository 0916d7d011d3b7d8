"""``site build DIR`` replaces only a site an earlier build wrote.

It used to delete whatever was at DIR: the checkout's ``docs/``, a folder holding ``notes.txt``, a
regular file; ``site build /`` and ``.`` ended in a traceback with an empty ``..old-*`` folder left
behind. Each case here is run through the command as a user types it, and checks that nothing it did
not build is gone, that the answer is one line and exit status 2, and that nothing is left beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import recording
from tests.support.services import REPO
from votersdaily.feeds.site_folder import MARKER, _exchange, replaced_site
from votersdaily.locations import BY_SETTING, FILE_LOCATIONS


@pytest.fixture(scope="module")
def store(house_votes_store):
    return house_votes_store


ROLL314 = recording("gov/house_roll_call/roll314.xml")


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (what must survive a refused build)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def siblings(folder: Path) -> list[str]:
    """What is beside ``folder`` in its parent: a build leaves no ``.name.partial-*``/``.old-*``."""
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("." + folder.name))


def assert_refused(proc, *, forceable: bool) -> str:
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("votersdaily site: refusing to ")
    assert ("--force" in line) is forceable, line
    assert "Traceback" not in proc.stderr
    return line


def test_a_folder_of_someone_elses_files_is_refused_and_kept(cli_main, store, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    line = assert_refused(cli_main("site", "build", str(notes), store_uri=store), forceable=True)
    assert "not empty and was not written by site build" in line
    assert tree(notes) == {"notes.txt": b"mine"} and siblings(notes) == []
    forced = cli_main("site", "build", str(notes), "--force", store_uri=store)
    assert forced.returncode == 0, forced.stderr
    assert (notes / "index.html").is_file() and not (notes / "notes.txt").exists()
    assert siblings(notes) == []


def test_a_regular_file_is_refused_and_kept(cli_main, store, tmp_path):
    target = tmp_path / "report.html"
    target.write_text("not a site")
    assert "it is a file" in assert_refused(
        cli_main("site", "build", str(target), store_uri=store), forceable=True
    )
    assert target.read_text() == "not a site" and siblings(target) == []


@pytest.mark.parametrize(
    "where, why",
    [
        ("/", "the root folder"),
        (".", "the working folder"),  # the command runs in the checkout
        ("HOME", "your home folder"),
        ("docs", "part of the votersdaily checkout"),
        ("README.md", "part of the votersdaily checkout"),
        ("votersdaily/feeds", "a folder of the votersdaily package"),
        ("/usr", "a top-level system folder"),
        ("PARENT", "a folder that holds the working folder"),
    ],
)
def test_folders_it_never_replaces_even_with_force(cli_main, store, tmp_path, where, why):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".profile").write_text("kept")
    # The folder above the working one (run from a folder of its own: the checkout's parent may be a
    # top-level folder, refused for that reason first).
    work = tmp_path / "outer" / "work"
    work.mkdir(parents=True)
    target = {"HOME": str(home), "PARENT": str(work.parent)}.get(where, where)
    resolved = Path(target) if Path(target).is_absolute() else (REPO / target).resolve()
    before = sorted(p.name for p in resolved.parent.iterdir())
    for force in ((), ("--force",)):
        cwd = work if where == "PARENT" else REPO
        proc = cli_main("site", "build", target, *force, store_uri=store, env={"HOME": str(home)}, cwd=cwd)
        line = assert_refused(proc, forceable=False)
        assert why in line and "never replaces" in line
    assert sorted(p.name for p in resolved.parent.iterdir()) == before  # nothing beside it either
    assert (home / ".profile").read_text() == "kept"


def test_an_earlier_build_is_replaced_and_a_changed_one_is_not(cli_main, store, tmp_path):
    site = tmp_path / "site"
    assert cli_main("site", "build", str(site), store_uri=store).returncode == 0
    first = json.loads((site / MARKER).read_text())
    assert first["generator"] == "votersdaily site build" and "index.html" in first["files"]
    again = cli_main("site", "build", str(site), store_uri=store)
    assert again.returncode == 0, again.stderr
    assert json.loads((site / MARKER).read_text())["build_id"] != first["build_id"]
    assert siblings(site) == [] and site.stat().st_mode & 0o777 == 0o755

    (site / "notes.txt").write_text("mine")
    assert "files were added since the last build (notes.txt)" in assert_refused(
        cli_main("site", "build", str(site), store_uri=store), forceable=True
    )
    (site / "notes.txt").unlink()
    with open(site / "index.html", "a") as page:
        page.write("<!-- edited by hand -->")
    assert "files were changed since the last build (index.html)" in assert_refused(
        cli_main("site", "build", str(site), store_uri=store), forceable=True
    )
    assert (site / "index.html").read_text().endswith("<!-- edited by hand -->")


def test_a_link_to_a_site_updates_the_site_it_points_at(cli_main, store, tmp_path):
    real = tmp_path / "www" / "site"
    assert cli_main("site", "build", str(real), store_uri=store).returncode == 0
    link = tmp_path / "site"
    link.symlink_to(real)
    assert cli_main("site", "build", str(link), store_uri=store).returncode == 0
    assert link.is_symlink() and (link / "index.html").is_file() and siblings(real) == []


def test_a_failed_build_keeps_the_previous_site_and_leaves_nothing_beside_it(cli_main, store, tmp_path):
    site = tmp_path / "site"
    assert cli_main("site", "build", str(site), store_uri=store).returncode == 0
    before = tree(site)
    with pytest.raises(RuntimeError), replaced_site(site) as partial:
        (partial / "index.html").write_text("half")
        raise RuntimeError("the build failed half-way")
    assert tree(site) == before and siblings(site) == []


def test_the_swap_is_one_step_where_the_kernel_can(tmp_path):
    """renameat2(RENAME_EXCHANGE): the target is never absent, never half old and half new."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "page").write_text("old")
    (new / "page").write_text("new")
    if not _exchange(new, old):
        pytest.skip("this kernel or filesystem cannot exchange two paths in one step")
    assert (old / "page").read_text() == "new" and (new / "page").read_text() == "old"


def test_a_folder_holding_the_projects_data_is_never_replaced(cli_main, tmp_path):
    """The embedded store's folder, the spool, the archive: forced or not."""
    data = tmp_path / "data"
    data.mkdir()
    uri = "sqlite:///%s" % (data / "store.db")
    from tests.support.inprocess import crawl_in_process
    from tests.support.services import cli_environment

    crawled = crawl_in_process(["house_votes", "-a", "url=" + ROLL314.as_uri()], cli_environment(uri))
    assert crawled.returncode == 0, crawled.stderr
    before = tree(data)
    line = assert_refused(cli_main("site", "build", str(data), "--force", store_uri=uri), forceable=False)
    assert "a folder that holds the store" in line and tree(data) == before
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "vd_events--1795000000.000000-1-0.jsonl").write_text("{}\n")
    proc = cli_main(
        "site", "build", str(spool), "--force", store_uri=uri, env={"VOTERSDAILY_SPOOL_DIR": str(spool)}
    )
    assert "it is the spool" in assert_refused(proc, forceable=False)


@pytest.mark.parametrize("setting", sorted(set(BY_SETTING) - {"VOTERSDAILY_STORE"}))
def test_no_location_where_lists_is_replaced_even_with_force(cli_main, store, tmp_path, setting):
    """Every location ``where`` lists, set as an operator sets it (the environment; the HTTP cache at
    its default, under the data home), holding a file of its own. ``site build`` once listed its own
    places and left out the TEI feed and the context cache: ``--force`` replaced them."""
    home, folder = tmp_path / "home", tmp_path / "place"
    env = {"VOTERSDAILY_HOME": str(home)}
    if setting == "HTTPCACHE_DIR":
        folder = home / ".scrapy" / "httpcache"
    else:
        env[setting] = str(folder / "feed.jsonl" if setting in FILE_LOCATIONS else folder)
    folder.mkdir(parents=True)
    (folder / "feed.jsonl").write_text("kept\n")
    line = assert_refused(
        cli_main("site", "build", str(folder), "--force", store_uri=store, env=env), forceable=False
    )
    called = BY_SETTING[setting].called
    assert "it is %s," % called in line or "a folder that holds %s," % called in line, line
    assert tree(folder) == {"feed.jsonl": b"kept\n"} and siblings(folder) == []


def test_a_folder_added_to_a_built_site_is_not_removed_unasked(cli_main, store, tmp_path):
    site = tmp_path / "site"
    assert cli_main("site", "build", str(site), store_uri=store).returncode == 0
    (site / "drafts").mkdir()
    assert "(drafts)" in assert_refused(cli_main("site", "build", str(site), store_uri=store), forceable=True)
    assert (site / "drafts").is_dir()

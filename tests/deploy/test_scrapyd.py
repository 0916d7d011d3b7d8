"""scrapyd deployment and the recurring scheduler, against a real scrapyd on a node with the package
installed and the project egg deployed."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import time
import zipfile

import pytest

from tests.conftest import recording, shared_file
from tests.support.cli_main import run_main
from tests.support.processes import Deployment, ScrapydServer, deployment, scrapyd_env
from tests.support.services import REPO
from votersdaily.deploy.scrapyd import Scrapyd
from votersdaily.store import open_store

pytestmark = pytest.mark.slow  # a scrapyd node: a wheel and an egg built, crawls as scrapyd jobs

ROLL = "gov/house_roll_call/roll314.xml"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> Deployment:
    return deployment(tmp_path_factory.mktemp("deploy"))


@pytest.fixture(scope="module")
def egg(deployed):
    return deployed.egg


@pytest.fixture(scope="module")
def node(tmp_path_factory, couchdb, deployed):
    """One scrapyd for the module (a start and an upload take seconds), on a node with the package
    installed, the egg deployed; what it keeps per node (data home, archive, spool) lives in ``workdir``."""
    workdir = tmp_path_factory.mktemp("node")
    server = ScrapydServer(workdir / "scrapyd", scrapyd_env(couchdb.url, workdir), deployed.python).start()
    client = Scrapyd(server.auth_url)
    client.add_version("r1", deployed.egg.read_bytes())
    yield workdir, server, client
    client.close()
    server.stop()


@pytest.fixture
def scrapyd(node, couch_uri, egg):
    """The module's scrapyd, running, on an empty store and an empty archive: each test starts as on
    a fresh node."""
    workdir, server, client = node
    shutil.rmtree(workdir / "archive", ignore_errors=True)
    if server.proc.poll() is not None:  # a test that restarts scrapyd failed half-way
        server.start()
        client.add_version("r1", egg.read_bytes())
    return server, client


def wait_finished(client: Scrapyd, jobids: list[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = client.jobs()
        if all(jobs.state_of(j) == "finished" for j in jobids):
            return
        time.sleep(0.3)
    raise AssertionError("jobs did not finish: %r" % client.jobs())


def test_the_egg_only_names_the_project_and_the_node_runs_its_installed_package(deployed):
    """A thin egg (docs/operations.md): scrapyd finds the settings through its entry point; the code,
    recordings, views, templates and compiled module are the package installed on the node."""
    egg = zipfile.ZipFile(deployed.egg)
    assert [n for n in egg.namelist() if not n.startswith("EGG-INFO/")] == []
    assert "[scrapy]\nsettings = votersdaily.settings" in egg.read("EGG-INFO/entry_points.txt").decode()
    assert b"Version: 0.1.0" in egg.read("EGG-INFO/PKG-INFO")
    probe = (
        "import votersdaily, votersdaily.store.views as v, votersdaily.recordings as r;"
        "from votersdaily.laundromat import native;"
        "print(votersdaily.__file__, native.location(), v.VIEWS_DIR, r.recording_path(%r).is_file())" % ROLL
    )
    found = subprocess.run(
        [str(deployed.python), "-c", probe],
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        capture_output=True,
        text=True,
    )
    package, module, views, recording = found.stdout.split()
    site = str(deployed.python.parent.parent)
    assert package.startswith(site) and module.startswith(site) and views.startswith(site), found.stderr
    assert recording == "True"


def test_event_ingest_and_laundromat_jobs_on_scrapyd(scrapyd, deployed, site, couch_uri, tmp_path):
    server, client = scrapyd
    assert {"house_votes", "ingest", "laundromat"} <= set(client.spiders())
    page = shared_file("fixtures/inplace/scholarly/plos_one_article.html")
    html_url = site.route("/article.html", page.read_bytes(), content_type="text/html; charset=utf-8")
    ttl = shared_file("conformance/w3c-rdf-tests/rdf/rdf11/rdf-turtle/IRI-resolution-01.ttl")
    ttl_url = site.route("/data.ttl", ttl.read_bytes(), content_type="text/turtle")

    jobs = {
        "house_votes": client.schedule("house_votes", url=recording(ROLL).resolve().as_uri()),
        "ingest": client.schedule(
            "ingest",
            settings={"INGEST_ALLOW_PRIVATE": "True", "INGEST_FETCH_RESOURCES": "False"},
            url=html_url,
            ingest_type="html",
        ),
        "laundromat": client.schedule(
            "laundromat", settings={"LAUNDROMAT_OUTPUT_DIR": str(tmp_path / "ll")}, url=ttl_url
        ),
    }
    wait_finished(client, list(jobs.values()))
    store = open_store(couch_uri)
    logs = {d["parser_name"]: d for d in store.iter_docs("vd_log")}
    for spider, jobid in jobs.items():
        assert spider in logs, server.job_log(spider, jobid)[-3000:]
        assert logs[spider]["result"] == "success", (
            logs[spider].get("error_message"),
            server.job_log(spider, jobid)[-2000:],
        )

    # The roll call of the recording (congress 119, 2nd session, roll 314, 16-Sep-2026 19:05 Eastern).
    events = list(store.iter_docs("vd_events"))
    assert [e["_id"] for e in events] == ["2026-09-16T23:05:00Z-house_votes-119-2-314"]
    # Given by a path outside the node's package, the recording is known by its relative name: upstream URL kept.
    assert events[0]["source_url"] == "https://clerk.house.gov/evs/2026/roll314.xml"
    assert events[0]["replayed_from"].startswith("file://")
    results = list(store.iter_docs("ingest_file_result"))
    assert [r["request"]["base_url"] for r in results] == [html_url]
    records = list(store.iter_docs("ll_seeds"))
    assert len([d for d in records if d.get("uri") == ttl_url and not d.get("parent")]) == 1
    assert "Turtle" in {d.get("format") for d in records}
    store.close()
    # The laundromat job ran the compiled path: the module of the package installed on the node,
    # and its worker cleaned the document with it (the compiled module travels in the wheel).
    compiled = logs["laundromat"]["compiled_path"]
    assert compiled["module"].startswith(str(deployed.python.parent.parent)) and compiled["documents"] == 1
    assert "'laundromat/compiled_path_documents': 1" in server.job_log("laundromat", jobs["laundromat"])


def test_a_reparse_is_a_scrapyd_job(scrapyd, node, couch_uri):
    """The archive a job wrote on the node is reparsed by another job (spider argument reparse=archive)."""
    server, client = scrapyd
    crawl = client.schedule("house_votes", url=recording(ROLL).resolve().as_uri())
    wait_finished(client, [crawl])
    workdir = node[0]
    assert list((workdir / "archive" / "house_votes").glob("house_votes-*.warc.gz"))
    reparse = client.schedule("house_votes", reparse="archive")
    wait_finished(client, [reparse])
    store = open_store(couch_uri)
    logs = sorted(store.iter_docs("vd_log"), key=lambda d: d["_id"])
    store.close()
    assert [log.get("reparse", False) for log in logs] == [False, True], server.job_log(
        "house_votes", reparse
    )
    assert logs[-1]["result"] == "success" and logs[-1]["unchanged_count"] == 1


def _scheduler(url: str, couch_uri: str, *extra: str, status: int = 0):
    """``python -m votersdaily scheduler --once`` (in this process: one pass runs no reactor)."""
    out = run_main(
        "scheduler",
        "--scrapyd",
        url,
        "--once",
        "--spider",
        "house_votes",
        "--offline",
        *extra,
        store_uri=couch_uri,
    )
    assert out.returncode == status, out.stderr
    return out.stdout


def _decisions(couch_uri: str) -> list[dict]:
    store = open_store(couch_uri)
    try:
        return sorted(
            (d for d in store.iter_docs("vd_scheduler") if d.get("type") == "decision"),
            key=lambda d: d["_id"],
        )
    finally:
        store.close()


def test_scheduler_frequency_running_jobs_and_scrapyd_restart(scrapyd, couch_uri, egg):
    server, client = scrapyd
    first = _scheduler(server.auth_url, couch_uri)
    assert "scheduled" in first
    jobid = _decisions(couch_uri)[-1]["jobid"]
    # The job is still pending or running: the next pass leaves it alone.
    second = _scheduler(server.auth_url, couch_uri)
    if client.jobs().state_of(jobid) != "finished":
        assert "skipped-running" in second and jobid in second
    wait_finished(client, [jobid])
    # Finished, but its hour has not passed: nothing to do, and no decision document for it.
    n = len(_decisions(couch_uri))
    assert "not-due" in _scheduler(server.auth_url, couch_uri)
    assert len(_decisions(couch_uri)) == n

    # scrapyd restarts (its job list is gone); the state in the store survives.
    server.stop()
    down = _scheduler(server.auth_url, couch_uri, status=3)  # exit 3: scrapyd unavailable
    assert "scrapyd-unavailable" in down
    server.start()
    client.add_version("r2", egg.read_bytes())
    due = _scheduler(server.auth_url, couch_uri, "--hours", "house_votes=0.0001")
    assert "scheduled" in due
    decisions = _decisions(couch_uri)
    assert next(d["decision"] for d in decisions if d["spider"] == "house_votes") == "scheduled"
    assert decisions[-1]["decision"] == "scheduled" and decisions[-1]["jobid"] != jobid
    assert "unknown to scrapyd" in decisions[-1]["reason"] or client.jobs().state_of(jobid) == "finished"
    assert any(d["decision"] == "scrapyd-unavailable" for d in decisions)
    store = open_store(couch_uri)
    state = store.get("vd_scheduler", "state:house_votes")
    store.close()
    assert state["jobid"] == decisions[-1]["jobid"]
    wait_finished(client, [state["jobid"]])


def test_scrapyd_refuses_every_call_without_the_configured_credentials(scrapyd, egg):
    """The documented scrapyd.conf has username/password: no local process can upload an egg,
    schedule a job or read a job log without them."""
    import requests

    server, _ = scrapyd
    for method, endpoint, kwargs in (
        ("GET", "daemonstatus.json", {}),
        ("POST", "addversion.json", {"data": {"project": "votersdaily", "version": "evil"}}),
        ("POST", "schedule.json", {"data": {"project": "votersdaily", "spider": "house_votes"}}),
        ("GET", "logs/", {}),
    ):
        for auth in (None, ("deployer", "wrong")):
            answer = requests.request(method, server.url + endpoint, auth=auth, timeout=10, **kwargs)
            assert answer.status_code == 401, (endpoint, auth, answer.status_code)
    ok = requests.get(server.url + "daemonstatus.json", auth=(server.USERNAME, server.PASSWORD), timeout=10)
    assert ok.json()["status"] == "ok"


def test_scrapyd_credentials_stay_out_of_messages_and_decisions(tmp_path, caplog):
    import socket

    from votersdaily.deploy.periodic import UNAVAILABLE, Plan, RecurringScheduler
    from votersdaily.store import open_store

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = Scrapyd("http://deployer:s3cret%%21@127.0.0.1:%d/" % port)
    assert client.session.auth == ("deployer", "s3cret!")
    assert "s3cret" not in client.url
    store = open_store("sqlite:///%s" % (tmp_path / "sched.db"))
    scheduler = RecurringScheduler(client, store, [Plan("house_votes", 1.0, {}, {})])
    with caplog.at_level("INFO"):
        [decision] = scheduler.run_once()
    assert decision["decision"] == UNAVAILABLE
    stored = list(store.iter_docs("vd_scheduler"))
    assert stored and all("s3cret" not in json.dumps(doc) for doc in stored)
    assert "s3cret" not in caplog.text and "127.0.0.1:%d" % port in caplog.text


def _run_log(couch_uri: str, spider: str) -> dict:
    store = open_store(couch_uri)
    try:
        (log,) = [d for d in store.iter_docs("vd_log") if d["parser_name"] == spider]
    finally:
        store.close()
    return log


def test_a_job_says_which_code_it_runs(scrapyd, couch_uri, deployed):
    """Before: a node started in a checkout ran the checkout, not what was deployed, and
    nothing said so. The run log names the package version and where it was imported from."""
    import votersdaily
    from tests.support.services import REPO

    server, client = scrapyd
    jobid = client.schedule("house_votes", url=recording(ROLL).resolve().as_uri())
    wait_finished(client, [jobid])
    code = _run_log(couch_uri, "house_votes")["code"]
    assert code["version"] == votersdaily.__version__
    node_env = deployed.python.parent.parent  # the node's virtual environment
    assert code["path"].startswith(str(node_env)) and "site-packages" in code["path"], code
    assert not code["path"].startswith(str(REPO))
    assert "code: votersdaily %s from %s" % (code["version"], code["path"]) in server.job_log(
        "house_votes", jobid
    )


def documented_deploy_folder_cfg() -> str:
    """docs/operations.md's ``scrapy.cfg`` for a node without a clone (its ```ini block)."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    (body,) = re.findall(r"```ini\n\s*# ~/votersdaily-deploy/scrapy\.cfg\n(.*?)```", text, re.S)
    return "\n".join(line.strip() for line in body.splitlines()) + "\n"


def test_a_node_without_a_clone_deploys_from_the_documented_folder(scrapyd, couch_uri, deployed, tmp_path):
    """Before: the docs ran ``scrapyd-deploy`` where only a clone has a ``scrapy.cfg``; on a node
    that installed the wheel it said ``no Scrapy project found`` (exit 1). From a folder holding only
    the documented file it uploads an egg whose jobs run the installed package."""
    import requests

    server, client = scrapyd
    folder = tmp_path / "votersdaily-deploy"
    folder.mkdir()
    (folder / "scrapy.cfg").write_text(
        documented_deploy_folder_cfg().replace("http://127.0.0.1:6800/", server.url)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRAPY_", "VOTERSDAILY_"))}
    env.update(PYTHONPATH="", SCRAPYD_USERNAME=server.USERNAME, SCRAPYD_PASSWORD=server.PASSWORD)
    deploy = subprocess.run(
        [str(deployed.python), "-m", "scrapyd_client.deploy", "--version", "from-wheel"],  # scrapyd-deploy
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        assert '"status": "ok"' in deploy.stdout, deploy.stdout + deploy.stderr
        jobid = client.schedule("house_votes", _version="from-wheel", url=recording(ROLL).resolve().as_uri())
        wait_finished(client, [jobid])
        log = _run_log(couch_uri, "house_votes")
        assert log["result"] == "success", log
        assert log["code"]["path"].startswith(str(deployed.python.parent.parent)), log["code"]
    finally:
        requests.post(
            server.url + "delversion.json",
            data={"project": "votersdaily", "version": "from-wheel"},
            auth=(server.USERNAME, server.PASSWORD),
            timeout=10,
        )


def test_an_ingest_job_without_requests_fails_and_the_scheduler_gives_it_the_store(scrapyd, couch_uri, site):
    """Before: the scheduler scheduled `ingest` with no arguments, and the job logged
    `ERROR: no ingest requests` and recorded `success`."""
    server, client = scrapyd
    bare = client.schedule("ingest")
    wait_finished(client, [bare])
    log = _run_log(couch_uri, "ingest")
    assert log["result"] == "NoIngestRequests", server.job_log("ingest", bare)[-3000:]
    assert "give -a url=" in log["error_message"]

    page = shared_file("fixtures/inplace/scholarly/plos_one_article.html")
    url = site.route("/article.html", page.read_bytes(), content_type="text/html; charset=utf-8")
    queued = run_main("ingest", "enqueue", "--url", url, "--type", "html", store_uri=couch_uri)
    assert queued.returncode == 0, queued.stderr
    out = run_main(
        "scheduler",
        "--scrapyd",
        server.auth_url,
        "--once",
        "--spider",
        "ingest",
        "--setting",
        "INGEST_PRIVATE_HOSTS=127.0.0.1:%d" % site.port,
        "--setting",
        "INGEST_FETCH_RESOURCES=False",
        store_uri=couch_uri,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    jobid = _decisions(couch_uri)[-1]["jobid"]
    wait_finished(client, [jobid])
    store = open_store(couch_uri)
    try:
        logs = sorted(
            (d for d in store.iter_docs("vd_log") if d["parser_name"] == "ingest"), key=lambda d: d["_id"]
        )
        results = list(store.iter_docs("ingest_file_result"))
    finally:
        store.close()
    assert logs[-1]["result"] == "success", server.job_log("ingest", jobid)[-3000:]
    assert [(r["request"]["base_url"], r["status"]) for r in results] == [(url, "success")]


def test_the_scheduler_says_scrapyd_refused_the_credentials(scrapyd, couch_uri, monkeypatch):
    """Before: without credentials it reported `scrapyd-unavailable ... JSONDecodeError`
    (scrapyd had answered 401)."""
    server, client = scrapyd
    refused = _scheduler(server.url, couch_uri, status=3)
    assert "refused the credentials (HTTP 401)" in refused and "$SCRAPYD_USERNAME" in refused, refused
    assert "JSONDecodeError" not in refused
    wrong = _scheduler(server.url.replace("//", "//deployer:wrong@"), couch_uri, status=3)
    assert "refused the credentials (HTTP 401): the username and password given are not" in wrong
    # The variables scrapyd-deploy reads (scrapy.cfg) serve the scheduler too, off the command line.
    monkeypatch.setenv("SCRAPYD_USERNAME", server.USERNAME)
    monkeypatch.setenv("SCRAPYD_PASSWORD", server.PASSWORD)
    assert "scheduled" in _scheduler(server.url, couch_uri)
    wait_finished(client, [_decisions(couch_uri)[-1]["jobid"]])


def test_the_scheduler_refuses_a_scrapyd_that_answers_without_credentials(
    tmp_path, pouchdb, couch_uri, deployed
):
    """Before: a scrapyd without credentials took an unauthenticated egg upload and the
    scheduler said nothing."""
    import requests

    open_node = ScrapydServer(
        tmp_path / "open", scrapyd_env(pouchdb.url, tmp_path), deployed.python, credentials=False
    ).start()
    try:
        upload = requests.post(
            open_node.url + "addversion.json",
            data={"project": "votersdaily", "version": "anyone"},
            files={"egg": ("project.egg", deployed.egg.read_bytes())},
            timeout=30,
        )
        assert upload.json()["status"] == "ok", upload.json()  # what any local process can do to such a node
        refused = _scheduler(open_node.url, couch_uri, status=2)
        assert "scrapyd-open" in refused and "answers without credentials" in refused, refused
        assert "--allow-open-scrapyd" in refused
        client = Scrapyd(open_node.url)
        assert client.jobs().active() == [], "nothing scheduled"
        allowed = run_main(
            "scheduler",
            "--scrapyd",
            open_node.url,
            "--once",
            "--spider",
            "house_votes",
            "--offline",
            "--allow-open-scrapyd",
            store_uri=couch_uri,
        )
        assert allowed.returncode == 0 and "scheduled" in allowed.stdout, allowed.stdout + allowed.stderr
        assert (
            "answers without credentials" in allowed.stderr
            and "allowed by --allow-open-scrapyd" in allowed.stderr
        )
        wait_finished(client, [_decisions(couch_uri)[-1]["jobid"]])
        client.close()
    finally:
        open_node.stop()


def test_the_scheduler_loop_shows_each_change_and_stores_only_changes(scrapyd, couch_uri, tmp_path):
    """Before: in loop mode it printed nothing and wrote a decision document every pass,
    due or not (53 in 4 minutes). Now each change is a line of its output and a document (at most
    VOTERSDAILY_SCHEDULER_DECISIONS are kept); passes that change nothing write nothing."""
    import signal

    from tests.support.processes import SchedulerLoop

    server, client = scrapyd
    out = tmp_path / "scheduler.out"
    loop = SchedulerLoop(
        *(server.auth_url, couch_uri, out, "--interval", "0.3", "--spider", "house_votes", "--offline"),
        environment={"VOTERSDAILY_SCHEDULER_DECISIONS": "2"},
    )
    try:
        deadline = time.monotonic() + 60
        loop.wait_for(" scheduled ", deadline)
        jobid = _decisions(couch_uri)[0]["jobid"]
        wait_finished(client, [jobid])
        loop.wait_for("not-due", deadline)
        time.sleep(1.5)  # a few more passes, each with nothing new
    finally:
        status = loop.stop(signal.SIGINT)
    assert status == 0, out.read_text()[-3000:]
    lines = out.read_text().splitlines()
    assert lines[0].startswith("votersdaily scheduler: a pass every 0.3 s on %s" % server.url), lines
    shown = [line.split()[1:4] for line in lines[1:] if "house_votes" in line]
    assert shown[0][1] == "scheduled" and shown[-1][1] == "not-due", lines
    assert all(a != b for a, b in itertools.pairwise(shown)), "a change is shown once"
    assert len(shown) <= 4, lines  # scheduled, pending, running, not-due: not one per pass
    decisions = _decisions(couch_uri)
    assert 1 <= len(decisions) <= 2, decisions  # at most VOTERSDAILY_SCHEDULER_DECISIONS kept
    assert decisions[-1]["decision"] in ("scheduled", "skipped-running") and decisions[-1]["jobid"] == jobid


def test_a_job_refused_at_the_start_leaves_a_run_log(scrapyd, couch_uri):
    """Before: a job with a mistyped ``setting=`` exited 2 before Scrapy opened its log file, its one
    line in scrapyd's own log alone, and vd_log had nothing of it. Now its run log says the refusal
    (the exception's name, the message) in the node's store; a refusal of where run logs go is kept
    nowhere (the right store is unknown), and the line says so."""
    server, client = scrapyd
    url = recording(ROLL).resolve().as_uri()
    jobid = client.schedule("house_votes", settings={"VOTERSDAILY_BATCH_SIZ": "3"}, url=url)
    wait_finished(client, [jobid])
    said = (server.workdir / "scrapyd.out").read_text()
    log = _run_log(couch_uri, "house_votes")
    assert log["result"] == "BadSettingValue", said[-3000:]
    message = "unknown setting VOTERSDAILY_BATCH_SIZ; did you mean VOTERSDAILY_BATCH_SIZE?"
    assert log["error_message"] == message and log["errors"][0]["exception"] == "BadSettingValue"
    assert log["scrapyd_job"] == jobid and log["insert_count"] == 0
    assert "scrapy crawl: job %s: its run log (BadSettingValue) is in vd_log of " % jobid in said

    astray = client.schedule("house_votes", settings={"VOTERSDAILY_STOR": couch_uri + "elsewhere"}, url=url)
    wait_finished(client, [astray])
    said = (server.workdir / "scrapyd.out").read_text()
    assert "job %s: no run log kept: the refusal concerns where run logs go" % astray in said
    assert _run_log(couch_uri, "house_votes")["scrapyd_job"] == jobid  # still the one run log

"""``scrapy crawl``: Scrapy's own command, with the project's checks, interrupts and exit status.

Scrapy lets a project replace a command through ``COMMANDS_MODULE``; this one differs from Scrapy's
``crawl`` in three ways, each where a person would otherwise be misled:

* settings (``-s NAME=VALUE``, ``-L LEVEL``) are checked before anything starts
  (votersdaily/setting_rules.py): one line naming the setting and what it takes, exit status 2
  (Scrapy's for a usage error), instead of a Twisted traceback and no run log;
* Ctrl-C stops after the current requests and says so, a second one now (votersdaily/interrupts.py);
* the exit status says how the run went, as ``python -m votersdaily crawl``'s does: 0 when its run
  log says ``success``, 1 when the spider could not start, its run failed (the run log in ``vd_log``
  says why), documents were lost or its source documents were not all archived (its events stored,
  ``archived: false``), 2 for an unknown spider or a bad setting, 3 when it stopped before its work
  because its store was unavailable, 4 when documents wait in the spool, 130 when it was
  interrupted. Scrapy's own command exits 0 after any run that started.

scrapyd runs ``scrapy crawl`` too, so its jobs get the same checks (a job's exit status is in its log).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from scrapy.commands import crawl
from scrapy.exceptions import NotConfigured, UsageError

from votersdaily.gc_freeze import freeze_at_exit
from votersdaily.interrupts import EXIT_INTERRUPTED, Interrupts
from votersdaily.locations import archive_written, misplaced
from votersdaily.scrapy_internals import prepare_version_line
from votersdaily.scrapy_outputs import guard_log_file, output_problems
from votersdaily.setting_marks import LOG_LEVELS
from votersdaily.setting_rules import BadSettingValue, assign, bad_environment, bad_settings

if TYPE_CHECKING:
    import argparse

    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_SPOOLED = 0, 1, 2, 3, 4
PREFIX = "scrapy crawl"
#: Spiders whose crawl waits for a cleaning worker at its first document: the worker is started as
#: the command reads its options, before the spider's module is imported and the crawler built
#: (votersdaily/laundromat/worker_pool.py: start_ahead; the spider's pool adopts it).
CLEANING_SPIDERS = frozenset({"laundromat", "laundromat_worker"})


def say(message: str) -> None:
    """A line for the person, in the shape of ``python -m votersdaily``'s (``scrapy crawl: …``)."""
    print("%s: %s" % (PREFIX, message), file=sys.stderr, flush=True)


def run_status(crawlers: list[Crawler], interrupted: bool = False) -> int:
    """The exit status of a finished ``scrapy crawl``, by the rule of ``python -m votersdaily crawl``
    (docs/cli.md: Exit codes): 130 interrupted; 1 when a run failed (its run log says why), documents
    were lost, source documents not all archived or documents refused by the store; 3 when a run
    stopped before its work because its store was unavailable (the laundromat's: its run log waits
    in the spool); 4 when it is done but documents wait in the spool (``flush`` delivers them); else 0.
    A crawler without a run log (the run log switched off) counts as a success, as in Scrapy."""
    from votersdaily.crawlcontext import crawl_context, incomplete_lines
    from votersdaily.store.base import STORE_RESULTS

    if interrupted:
        return EXIT_INTERRUPTED
    incomplete = incomplete_lines(crawl_context(c).run for c in crawlers)
    for line in incomplete:
        say(line)
    if incomplete:
        return EXIT_FAILED
    status = EXIT_OK
    for crawler in crawlers:
        record = crawl_context(crawler).run
        if record is None:
            continue
        result = record.result
        if record.lost or result not in ("success", *STORE_RESULTS):
            return EXIT_FAILED
        if record.stopped_for_store:  # nothing was done: its run log waits for the store
            status = EXIT_UNAVAILABLE
        elif record.spooled:
            status = EXIT_SPOOLED
        elif result in STORE_RESULTS:
            return EXIT_FAILED
    return status


def bad_store_uri(settings: BaseSettings) -> list[str]:
    """The line saying why the store URI cannot name a store (``ftp://…``, ``http://[::1``, no host),
    if it cannot: before, the crawl's pipelines met it and Scrapy printed a traceback, exit 1."""
    from votersdaily.locations import store_uri
    from votersdaily.store.check import StoreMisconfigured, uri_scheme

    try:
        uri_scheme(store_uri(settings))
    except StoreMisconfigured as exc:
        return [str(exc)]
    return []


def spider_problem(spidercls: type[Spider], spider_args: dict[str, Any]) -> str | None:
    """Why a spider of the project cannot start with ``spider_args`` (a name it does not take, which
    it would otherwise run without; a value it cannot use, which would fail the run), or None: the
    spider is built to find out, as ``python -m votersdaily crawl`` does. Another package's spider is
    left to Scrapy."""
    if not spidercls.__module__.startswith("votersdaily."):
        return None
    from votersdaily.plumbing.inputs import bad_spider_arguments

    return bad_spider_arguments(spidercls, spider_args)


class ChecksBeforeStart(Protocol):
    """A spider that can say, before its crawl starts, that it cannot run (a worker's Redis)."""

    @classmethod
    def check_before_start(cls, settings: BaseSettings) -> None:
        """Raises NotConfigured (or a subclass) with the line saying why."""


def start_refusal(crawler: Crawler) -> NotConfigured | None:
    """Why the crawler's spider cannot start, by its own check (:class:`ChecksBeforeStart`), or
    None. Its ``from_crawler`` would raise the same inside Scrapy's start task, which logs a
    traceback at ERROR ("Task exception was never retrieved") instead of the line."""
    check = getattr(crawler.spidercls, "check_before_start", None)
    if check is None:
        return None
    try:
        check(crawler.settings)
    except NotConfigured as exc:
        return exc
    return None


def refusal_line(refusal: NotConfigured) -> str:
    """The one line of a start refusal: a subclass's name says what was refused (RedisNotDurable)."""
    return str(refusal) if type(refusal) is NotConfigured else "%s: %s" % (type(refusal).__name__, refusal)


class UnknownSpider(KeyError):
    """``scrapy crawl`` of a name no spider of the project has: no run log can name its spider."""

    def __str__(self) -> str:
        return str(self.args[0])


class StoreLocationRefused(ValueError):
    """A refused start whose refusal concerns where run logs go (the store URI): no run log is kept."""


#: The settings (and environment variables) that say where a run log goes: a refusal naming one of
#: them cannot be kept there, and a scrapyd job's ``setting=`` giving one is where its refusal goes.
STORE_LOCATION = ("VOTERSDAILY_STORE", "VOTERSDAILY_DB_PREFIX", "VOTERSDAILY_SPOOL_DIR", "VOTERSDAILY_HOME")
_NAMES_STORE_LOCATION = re.compile(r"\b(?:%s)\b" % "|".join(STORE_LOCATION))


def scrapyd_job(spider_args: list[str] | dict[str, Any]) -> str | None:
    """The scrapyd job this crawl is (scrapyd runs ``scrapy crawl SPIDER -a _job=ID``), or None;
    ``spider_args`` as given (``NAME=VALUE`` texts) or as Scrapy parsed them."""
    if isinstance(spider_args, dict):
        return spider_args.get("_job")
    for pair in spider_args:
        name, sep, value = pair.partition("=")
        if sep and name.strip() == "_job":
            return value
    return None


def record_refusal(
    spider: str, job: str, refusal: Exception, settings: BaseSettings, given: list[str]
) -> None:
    """Keeps the run log of scrapyd job ``job`` of ``spider`` refused at the start (result: the
    refusal's exception name; its message) in the configured store, or spooled for it, and says
    where: the brief's "a failing source is logged in vd_log", for a failure before any crawl. Not
    when the refusal concerns where run logs go (a bad store URI, a mistyped store setting): then
    the right store is unknown, and nothing is written anywhere else; that is said instead."""
    from scrapy.spiderloader import get_spider_loader

    from votersdaily.extensions import keep_refused_run_log, not_started_run_log
    from votersdaily.store.spool import NotSpooled

    if isinstance(refusal, StoreLocationRefused) or _NAMES_STORE_LOCATION.search(str(refusal)):
        say("job %s: no run log kept: the refusal concerns where run logs go" % job)
        return
    located = settings.copy()
    for pair in given:  # the job's own store, even when the refused setting came before it
        name, sep, value = pair.partition("=")
        if sep and name.strip() in STORE_LOCATION:
            located.set(name.strip(), value, priority="cmdline")
    try:
        spidercls = get_spider_loader(located).load(spider)
    except KeyError:
        say("job %s: no run log kept: no spider is named %r" % (job, spider))
        return
    doc = not_started_run_log(
        spidercls, "", refusal, result=type(refusal).__name__, where="start", reason="refused at the start"
    )
    doc["scrapyd_job"] = job
    try:
        say("job %s: %s" % (job, keep_refused_run_log(located, doc)))
    except NotSpooled:
        say("job %s: its run log is lost: neither the store nor the spool took it" % job)


class Command(crawl.Command):
    def short_desc(self) -> str:
        return "Run a spider of the current project, by name (exit status: how the run went)"

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and args[0] in CLEANING_SPIDERS:
            from votersdaily.laundromat.worker_pool import drop_ahead, start_ahead

            start_ahead()
            try:
                self._process_options(args, opts)
            except BaseException:
                drop_ahead()
                raise
        else:
            self._process_options(args, opts)

    def _process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        if settings is None:
            raise RuntimeError("Scrapy sets a command's settings before its options")
        prepare_version_line(settings)
        scratch = settings.copy() if opts.set else settings  # one copy for all (a copy is 4-5 ms)
        for pair in opts.set:  # before Scrapy stores them: some values it cannot even store
            name, sep, value = pair.partition("=")
            if sep:
                try:
                    assign(scratch, name.strip(), value)
                except BadSettingValue as exc:
                    self._refuse(exc, args, opts)
        super().process_options(args, opts)
        level = settings.get("LOG_LEVEL")
        if isinstance(level, str) and level.strip().upper() in LOG_LEVELS:  # -L info, as people type it
            priority = settings.getpriority("LOG_LEVEL") or "cmdline"
            settings.set("LOG_LEVEL", level.strip().upper(), priority)
        for problem in (
            *bad_environment(),
            *bad_settings(settings),
            *misplaced(settings),
            *output_problems(settings),
        ):
            self._refuse(BadSettingValue(problem), args, opts)  # before Scrapy builds its crawler process
        guard_log_file()  # before Scrapy opens the log file for its crawler process
        for problem in bad_store_uri(settings):
            self._refuse(StoreLocationRefused(problem), args, opts)
        if len(args) == 1:
            refusal = self._spider_refusal(args[0], opts.spargs)
            if refusal is not None:
                self._refuse(refusal, args, opts)

    def _refuse(self, refusal: Exception, args: list[str], opts: argparse.Namespace) -> NoReturn:
        """Says why the crawl cannot start, in one line, and exits 2. A scrapyd job's refusal is also
        kept as a run log (:func:`record_refusal`): no one reads a job's standard error."""
        say(str(refusal))
        job = scrapyd_job(opts.spargs)
        if job is not None and len(args) == 1 and not isinstance(refusal, UnknownSpider):
            if self.settings is None:
                raise RuntimeError("Scrapy sets a command's settings before its options")
            record_refusal(args[0], job, refusal, self.settings, opts.set)
        raise SystemExit(EXIT_USAGE)

    def _spider_refusal(self, name: str, spider_args: dict[str, Any]) -> Exception | None:
        """Why ``name`` cannot run, before Scrapy's crawler process logs its start-up: no spider of
        the project, its own settings checks fail (a host list entry that can never match, …) or
        it does not take ``spider_args``; None when it can."""
        from scrapy.spiderloader import get_spider_loader

        from votersdaily.plumbing.inputs import BadSpiderArgument

        if self.settings is None:
            raise RuntimeError("Scrapy sets a command's settings before its options")
        loader = get_spider_loader(self.settings)
        try:
            spidercls = loader.load(name)
        except KeyError:
            return UnknownSpider("unknown spider %r; known: %s" % (name, ", ".join(sorted(loader.list()))))
        try:
            spidercls.update_settings(self.settings.copy())  # what building its crawler checks
        except UsageError as exc:
            return exc
        problem = spider_problem(spidercls, spider_args)
        if problem:
            return BadSpiderArgument(problem)
        from votersdaily.spiders.base import EventSpider

        outputs = misplaced(
            self.settings,
            (
                *getattr(spidercls, "output_settings", ()),
                # it archives every document it parses (a file there: no WARC copy of any)
                *(archive_written(self.settings) if issubclass(spidercls, EventSpider) else ()),
            ),
        )
        return BadSettingValue(outputs[0]) if outputs else None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            self._run(args, opts)
        finally:
            if len(args) == 1 and args[0] in CLEANING_SPIDERS:  # a worker started ahead, not adopted
                from votersdaily.laundromat.worker_pool import drop_ahead

                drop_ahead()

    def _run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's usage errors
            return
        if self.crawler_process is None:
            raise RuntimeError("Scrapy gives a crawl command its crawler process")
        try:
            crawler = self._create_crawler(args[0])
        except KeyError:
            say(
                "unknown spider %r; known: %s"
                % (args[0], ", ".join(sorted(self.crawler_process.spider_loader.list())))
            )
            self.exitcode = EXIT_USAGE
            return
        refusal = start_refusal(crawler)
        if refusal is not None:
            say(refusal_line(refusal))
            job = scrapyd_job(opts.spargs)
            if job is not None and self.settings is not None:  # no one reads a job's stderr: vd_log keeps it
                record_refusal(args[0], job, refusal, self.settings, opts.set)
            self.exitcode = EXIT_FAILED
            return
        self.crawler_process.crawl(crawler, **opts.spargs)
        freeze_at_exit()  # the process ends after the crawl: no collection of everything at its exit
        interrupts = Interrupts(self.crawler_process, say)
        interrupts.install()
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = EXIT_FAILED
        else:
            self.exitcode = run_status([crawler], interrupted=interrupts.stop is not None)

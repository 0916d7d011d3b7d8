"""Every setting of the project, with its default, in one place.

Spiders tune politeness (delay, concurrency) for their own source in ``custom_settings``; nothing
here slows every source down to the slowest one's needs.
"""

from typing import Annotated

from votersdaily import __version__
from votersdaily.setting_marks import ABSOLUTE_FOLDER as absolute_folder
from votersdaily.setting_marks import DATABASE_NAME as database_name
from votersdaily.setting_marks import DB_PREFIX as database_prefix
from votersdaily.setting_marks import LOG_LEVELS as log_levels
from votersdaily.setting_marks import REDIS_URL_FORM as redis_url_form
from votersdaily.setting_marks import AtLeast, AtMost, OneOf

# A setting takes what its default's type allows; an annotation declares more (a type where the
# default is None, a range, a choice): votersdaily/setting_rules.py checks each before a crawl starts.

BOT_NAME = "votersdaily"
#: Event spiders in votersdaily/spiders; the ingest and laundromat spiders and the Redis-fed workers in
#: their packages.
SPIDER_MODULES = [
    "votersdaily.spiders",
    "votersdaily.ingest.spider",
    "votersdaily.laundromat.spider",
    "votersdaily.distributed.worker_spiders",
]
#: `scrapy crawl <name>` imports the module the layout names for the spider, not every spider module
#: (votersdaily/spiderloader.py); listing the spiders still imports them all.
SPIDER_LOADER_CLASS = "votersdaily.spiderloader.NamedModuleSpiderLoader"
NEWSPIDER_MODULE = "votersdaily.spiders"
#: `scrapy crawl` is the project's (votersdaily/commands/crawl.py): settings checked before any work,
#: Ctrl-C handled, and an exit status that says how the run went.
COMMANDS_MODULE = "votersdaily.commands"

# -- identity and politeness ----------------------------------------------------------------------
USER_AGENT = (
    "votersdaily/%s (public-affairs event and document crawler; "
    "+https://github.com/votersdaily/votersdaily)" % __version__
)
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN: Annotated[int, AtLeast(1)] = 8
DOWNLOAD_TIMEOUT: float = 60
RETRY_TIMES = 2
REDIRECT_MAX_TIMES = 10
#: Body size limits (Scrapy aborts larger downloads).
DOWNLOAD_MAXSIZE = 256 * 1024 * 1024
DOWNLOAD_WARNSIZE = 64 * 1024 * 1024
#: Event documents are small (the largest recorded is a few MB): an event spider refuses a larger
#: response (run log result DownloadCancelledError) instead of parsing it in GBs of memory.
VOTERSDAILY_EVENT_MAXSIZE = 64 * 1024 * 1024
#: URLs an event spider finds in what it reads (a listing's links, a feed's enclosures, an API's
#: next page, a redirect) go through the ingest's address policy (votersdaily/spiders/address_guard.py):
#: http(s) to public addresses only, unless on the host of a start URL. True lets them reach
#: private/loopback addresses (never file:); the hosts ("host" or "host:port") whose private
#: addresses they may reach; if set, the only hosts they may name.
VOTERSDAILY_EVENT_ALLOW_PRIVATE = False
VOTERSDAILY_EVENT_PRIVATE_HOSTS: list[str] = []
VOTERSDAILY_EVENT_ALLOWED_HOSTS: list[str] = []
COOKIES_ENABLED = False
#: No way into a running crawl: Scrapy's telnet console and its remote-control HTTP endpoint (which
#: runs Python code sent to it) are off; a job's secrets stay in its process.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
#: Scrapy imports a component before the component says it is off: while their setting is False, this
#: add-on leaves the cookies middleware, the remote control and the telnet console out (tldextract,
#: aiohttp, twisted.conch: 0.14 s of every crawl's start).
ADDONS = {"votersdaily.switched_off.LeaveOutSwitchedOff": 0}

# -- conditional requests (If-Modified-Since / ETag) for sources that support them ---------------
HTTPCACHE_POLICY = "scrapy.extensions.httpcache.RFC2616Policy"
#: Relative: under the data home's .scrapy folder (votersdaily/locations.py), from any working folder.
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_IGNORE_SCHEMES = ["file", "data"]

# -- the votersdaily foundation -------------------------------------------------------------------
#: Where data goes: every relative location setting below (the embedded store's file, the spool, the
#: archive, the ingest's and the laundromat's outputs) is under this folder; the VOTERSDAILY_HOME
#: environment variable wins; an absolute folder. None: the Scrapy project the command runs in (closest scrapy.cfg from
#: the working folder up), else ~/.local/share/votersdaily ($XDG_DATA_HOME). `votersdaily where` shows it.
VOTERSDAILY_HOME: Annotated[str | None, absolute_folder] = None
#: Store URI; the VOTERSDAILY_STORE environment variable wins over this setting. A relative sqlite
#: path is under the data home.
VOTERSDAILY_STORE = "sqlite:///votersdaily.db"
#: Put before the name of every database the project creates or reads (``staging_``: ``staging_vd_events``,
#: ``staging_vd_log``, ``staging_ll_seeds``, …), so several deployments share one CouchDB cluster;
#: lowercase a-z first, then a-z, 0-9 or _$()+-/. The VOTERSDAILY_DB_PREFIX environment variable wins.
VOTERSDAILY_DB_PREFIX: Annotated[str, database_prefix] = ""
VOTERSDAILY_BATCH_SIZE: Annotated[int, AtLeast(1)] = 1000
#: Seconds a document waits at most in a writer's buffer before its batch is written, full or not;
#: 0: until VOTERSDAILY_BATCH_SIZE documents came or the crawl ends. The ingest spider sets 1 s: a
#: long ingest (a file of requests, one a second) otherwise held up to a batch of results in memory
#: alone, all lost when the process was killed (the OOM killer, ``kill -9``, a lost node). Event
#: spiders keep 0: their runs are short, and a source that lists an event twice (two Federal
#: Register pages share documents) with its copies in two batches writes two revisions where one
#: batch writes the last copy only. The counts do not depend on where batches end, except that an
#: event changed by its first copy and changed back by its second counts updated, not unchanged.
VOTERSDAILY_BATCH_MAX_WAIT: Annotated[float, AtLeast(0)] = 0.0
VOTERSDAILY_MAX_PENDING_BATCHES: Annotated[int, AtLeast(1)] = 2
#: The embedded store's writes run in a process of their own (votersdaily/store/process.py): the
#: encoding, hashing and SQLite work of every batch leaves the crawl process's lock to the reactor.
#: False keeps them in the crawl process.
VOTERSDAILY_STORE_PROCESS = True
#: While the store holds items back, pause the engine so nothing new is downloaded. False keeps
#: downloading (overlap with slow sources), and Scrapy parks the responses up to SCRAPER_SLOT_MAX_ACTIVE_SIZE.
VOTERSDAILY_PAUSE_ENGINE_ON_BACKPRESSURE = True
#: Store outages: a batch is retried with exponential backoff (1, 2, 4, 8, 16 s, at most 30 s apart);
#: if the store is still unavailable the documents are spooled to VOTERSDAILY_SPOOL_DIR (environment
#: variable wins) and delivered by the next run or `python -m votersdaily flush`.
VOTERSDAILY_STORE_RETRY_TIMES = 5
VOTERSDAILY_STORE_RETRY_BACKOFF = 1.0
VOTERSDAILY_STORE_RETRY_MAX_DELAY = 30.0
VOTERSDAILY_SPOOL_ENABLED = True
VOTERSDAILY_SPOOL_DIR = ".votersdaily-spool"
VOTERSDAILY_RUN_LOG_ENABLED = True
#: While a crawl runs, the objects from before it started are left out of Python's cyclic garbage
#: collector (votersdaily/gc_freeze.py): full collections walk only what the crawl made.
VOTERSDAILY_GC_FREEZE = True
#: While a crawl runs, Python's youngest generation is collected every this many allocations, not
#: every 700 (votersdaily/gc_freeze.py: the documents in flight are not walked over and over); 0
#: keeps Python's threshold.
VOTERSDAILY_GC_YOUNG_THRESHOLD: Annotated[int, AtLeast(0)] = 50_000

# -- distributed workers (votersdaily/distributed): a shared Redis queue with leases -------------
#: Redis for the shared queue and duplicate filter; $VOTERSDAILY_REDIS_URL wins.
REDIS_URL: Annotated[str | None, redis_url_form] = None
#: A worker renews its leases every third of this; a dead worker's requests come back after it.
VOTERSDAILY_REDIS_LEASE = 60.0
#: How often finished requests are acked (after the store writers have flushed).
VOTERSDAILY_REDIS_ACK_INTERVAL = 2.0
VOTERSDAILY_REDIS_REAP_INTERVAL = 5.0
#: A request whose lease expired this many times goes to <queue>:dead instead of back to the queue.
VOTERSDAILY_REDIS_MAX_ATTEMPTS = 5
#: Seconds a worker waits with nothing queued or in processing anywhere before it stops (0: never).
VOTERSDAILY_REDIS_IDLE_CLOSE = 0.0
#: After a lease found the queue empty, a worker asks again only this many seconds later (its engine
#: asks after every finished request: at the end of a run that was a round trip per request).
VOTERSDAILY_REDIS_EMPTY_WAIT = 0.5
#: Requests one worker may hold that are still downloading or in their callback (0: CONCURRENT_REQUESTS).
VOTERSDAILY_REDIS_MAX_LEASES = 0
#: Workers and enqueue refuse a Redis that would lose the queue on a restart (no append-only file);
#: False: they warn and go on (a restart then loses the queue, and workers report what was lost).
VOTERSDAILY_REDIS_REQUIRE_PERSISTENCE = True
#: When Redis is unreachable, a worker tries again after this many seconds, doubling up to the maximum.
VOTERSDAILY_REDIS_RECONNECT_DELAY = 0.5
VOTERSDAILY_REDIS_RECONNECT_MAX_DELAY = 5.0

# -- recurring schedules on scrapyd (python -m votersdaily scheduler) -------------------------------
#: Hours between runs for spiders without frequency_hours (ingest, laundromat); 0 removes a spider.
VOTERSDAILY_SCHEDULE_HOURS = {"ingest": 24.0, "laundromat": 24.0}
#: Decision documents vd_scheduler keeps (only decisions that change are written; the oldest go first).
VOTERSDAILY_SCHEDULER_DECISIONS = 1000
#: Start-URL text larger than this goes to the run log as an attachment.
VOTERSDAILY_LOG_INLINE_LIMIT = 256 * 1024
VOTERSDAILY_LOG_PREVIEW_CHARS = 4096

# -- source spiders ---------------------------------------------------------------------------------
#: Pages of the Federal Register API followed through next_page_url (spider argument max_pages wins).
FEDERAL_REGISTER_MAX_PAGES = 3

# -- JavaScript rendering (votersdaily/rendering): a Splash server, else Playwright ----------------
#: Splash endpoint; unset: pages that need rendering go through scrapy-playwright.
SPLASH_URL: str | None = None
#: Seconds Splash waits after load, and its render timeout.
SPLASH_WAIT = 0.5
SPLASH_TIMEOUT = 30.0
#: Splash fetches a page's scripts, images and frames from its own machine, outside the crawl's
#: address policy: SPLASH_URL is used only once the operator states (True) that Splash's network
#: reaches public addresses only (docs/operations.md, "JavaScript").
SPLASH_NETWORK_CONFINED = False
#: Chromium's own network (what no page route sees: WebSockets, service workers, redirects it
#: follows) leads nowhere by our launch flags. A remote browser (PLAYWRIGHT_CDP_URL/_CONNECT_URL), a
#: browser provider or type of its own, or launch/context options setting its network (a proxy, the
#: proxy or resolver switches, ignore_default_args naming ours, a persistent context) would undo
#: them: nothing is rendered with those until the operator states (True) that the browser's own
#: network reaches public addresses only; then their options are used as written.
VOTERSDAILY_BROWSER_NETWORK_CONFINED = False
#: Chromium fetches nothing itself (votersdaily/rendering/gate.py): every request of a rendered page
#: is checked by the crawl's address guard and fetched for it, at most this many per page (the page
#: and its scripts, images, frames, XHR; the rest are refused) ...
VOTERSDAILY_BROWSER_MAX_REQUESTS: Annotated[int, AtLeast(1)] = 200
#: ... each at most this many bytes ...
VOTERSDAILY_BROWSER_MAX_BYTES: Annotated[int, AtLeast(1)] = 20 * 1024 * 1024
#: ... within this many seconds, its redirect hops included.
VOTERSDAILY_BROWSER_TIMEOUT: Annotated[float, AtLeast(0.001)] = 20.0
#: Threads the rendering gate fetches on (a pool of its own): a page's many slow requests wait for
#: each other, not for the threads the crawl's address guard resolves hosts on (asyncio's default
#: executor, a handful on a small machine).
VOTERSDAILY_BROWSER_FETCH_THREADS: Annotated[int, AtLeast(1)] = 8

# -- the static site and its spider health page (votersdaily/feeds) --------------------------------
#: Zone the day pages group and show times in (all-day events keep their own date).
VOTERSDAILY_SITE_TIMEZONE = "America/New_York"
#: Runs per spider shown on the health page.
VOTERSDAILY_HEALTH_RUNS: Annotated[int, AtLeast(1)] = 20
#: A run is flagged when its item count falls below this share of the median of the spider's
#: previous successful runs (over at most VOTERSDAILY_HEALTH_HISTORY runs).
VOTERSDAILY_HEALTH_DROP_RATIO: Annotated[float, AtMost(1)] = 0.5
VOTERSDAILY_HEALTH_HISTORY: Annotated[int, AtLeast(1)] = 10

# -- the ingest spider (votersdaily/ingest/) ------------------------------------------------------
#: Fetch loopback/private/link-local addresses (SSRF guard off). Tests and benchmarks only.
INGEST_ALLOW_PRIVATE = False
#: Hosts ("host": every port, or "host:port") whose private addresses the ingest may reach, e.g.
#: ["127.0.0.1:8080"] for a local test site; every other private address stays refused.
INGEST_PRIVATE_HOSTS: list[str] = []
#: If set, only these hosts ("host" or "host:port", as above) are fetched at all.
INGEST_ALLOWED_HOSTS: list[str] = []
#: Substrings of a URL never ingested, checked before every fetch and on every terminal URL
#: (sandcrawler's base-URL blocklist). Setting a list replaces the defaults; ``*_EXTRA`` adds to them.
INGEST_URL_BLOCKLIST = [
    "://localhost/",
    "://127.0.0.1/",
    "://hkvalidate.perfdrive.com/",
    "://ieeexplore.ieee.org/",
    "://archive.org/",
    "://www.archive.org/",
    "://web.archive.org/web/",
    "://openlibrary.org/",
    "://www.openlibrary.org/",
    "://fatcat.wiki/",
    "://scholar.archive.org/",
    "://orcid.org/",
    "://bartandjones.com",
    "://ijretm.com",
    "://ijrcemas.com",
    "://jist.net.in",
    "://croisements-revue.org",
    "://page-one.live.cf.public.springer.com",
    "plutof.ut.ee/",
    "www.gbif.org/",
    "doi.pangaea.de/",
    "www.plate-archive.org/",
    "://doi.org/10.25642/ipk/gbis/",
    "://apex.ipk-gatersleben.de/",
    "fao.org/glis/",
    "dhz.uni-passau.de/",
    "digital.ucd.ie/",
    "doi.org/10.2307/",
    "doi.org/10.18730/",
    "doi.org/10.15468/",
    "doi.org/10.48550/",
    "://edoc.mpg.de/",
    "://isiarticles.com/",
    "://unsworks.unsw.edu.au/",
]
INGEST_URL_BLOCKLIST_EXTRA: list[str] = []
#: Login walls (``skip-wall`` before a fetch, ``blocked-wall`` after one).
INGEST_WALL_BLOCKLIST = [
    "://profile.thieme.de/HTML/sso/ejournals/login.htm",
    "://login.bepress.com/",
    "?SAMLRequest=",
    "://osapublishing.org/captcha/",
    "/password-login",
    "://gateway.isiknowledge.com/",
    "/login?TARGET=",
    "jstage.jst.go.jp/sblogin",
    "://acw.elsevier.com/SSOCore",
    "://acw.sciencedirect.com/SSOCore",
    "/login?source=",
]
INGEST_WALL_BLOCKLIST_EXTRA: list[str] = []
#: Cookie walls (``blocked-cookie``).
INGEST_COOKIE_BLOCKLIST = [
    "/cookieAbsent",
    "cookieSet=1",
    "error=cookies_not_supported",
    "://secure.jbs.elsevierhealth.com/",
]
INGEST_COOKIE_BLOCKLIST_EXTRA: list[str] = []
#: Hosts (and their subdomains) whose sub-resources are never fetched: trackers, ads, widgets
#: (upstream's custom rules plus the EasyList/EasyPrivacy entries it hit on real pages).
INGEST_RESOURCE_DOMAIN_BLOCKLIST = [
    "fonts.googleapis.com",
    "widgets.figshare.com",
    "crossmark-cdn.crossref.org",
    "crossmark.crossref.org",
    "platform.twitter.com",
    "verify.nature.com",
    "s7.addthis.com",
    "www.mendeley.com",
    "pbs.twimg.com",
    "badge.dimensions.ai",
    "recaptcha.net",
    "tag.imagino.com",
    "consent.cookiebot.com",
    "google-analytics.com",
    "googletagmanager.com",
    "googletagservices.com",
    "doubleclick.net",
    "googlesyndication.com",
    "adservice.google.com",
    "trendmd.com",
    "scorecardresearch.com",
    "connect.facebook.net",
    "hotjar.com",
    "quantserve.com",
    "chartbeat.com",
    "newrelic.com",
    "nr-data.net",
    "addthis.com",
    "sharethis.com",
    "altmetric.com",
    "plumx.plu.mx",
    "cdn.segment.com",
    "mathjax-analytics",
]
INGEST_RESOURCE_DOMAIN_BLOCKLIST_EXTRA: list[str] = []
INGEST_MAX_HOPS = 8
INGEST_MAX_REDIRECTS = 25
INGEST_MAX_BODY_BYTES = 128 * 1024 * 1024
INGEST_MAX_RESOURCES = 200
INGEST_MAX_RESOURCE_BYTES = 32 * 1024 * 1024
#: Sub-resource bytes held in memory at once by one page's downloads, and by all pages of a worker
#: (a download reserves INGEST_MAX_RESOURCE_BYTES, or its Content-Length once known; see docs/workers.md).
INGEST_RESOURCE_BYTES_PER_PAGE = 128 * 1024 * 1024
INGEST_RESOURCE_BYTES_PER_WORKER = 512 * 1024 * 1024
INGEST_FETCH_RESOURCES = True
#: True: one failed sub-resource fails the page (sandcrawler's html-resource-no-capture policy).
INGEST_STRICT_RESOURCES = False
#: Seconds one ingest (all its hops) may take before it ends as ``timeout``.
INGEST_TIMEOUT: float = 300
#: True maps OJS "fulltext" scope to article-fulltext (upstream's quirk made those wrong-scope).
INGEST_OJS_FULLTEXT_FIX = True
#: Pages of a PDF whose text is read (poppler's ``pdftotext -l``; 0: no text).
INGEST_PDF_MAX_PAGES = 50
#: Render each ingested PDF's first page as a 180 px JPEG (poppler's pdftoppm, ~10 ms CPU a PDF;
#: none without pdftoppm installed).
INGEST_PDF_THUMBNAILS = True
#: True: a body libmagic calls something else (application/javascript) is HTML when the HTTP type
#: says HTML and it starts like HTML; False: libmagic's word only, as sandcrawler (wrong-mimetype).
INGEST_HTML_BY_DECLARED_TYPE = True
#: Worker processes for trafilatura/pypdf/poppler's text/libmagic (None: one per CPU; 0: reactor
#: threads instead, each PDF's text then a pdftotext process).
INGEST_EXTRACT_PROCESSES: int | None = None
#: Niceness added to those processes: the crawl's reactor (downloads, sub-resources, the store)
#: goes first when they contend for the cores, and the extraction takes what is left (0: the
#: crawl's own priority). On 2 cores the HTML benchmark's fetches otherwise waited for trafilatura.
INGEST_EXTRACT_NICE: Annotated[int, AtLeast(0), AtMost(19)] = 10
#: GROBID server base URL (e.g. http://localhost:8070); None: no GROBID processing.
GROBID_URL: str | None = None
GROBID_TIMEOUT: float = 180
INGEST_FILE_TABLE_VERSION = "0"
INGEST_FILE_TABLE_ENV = "dev"
INGEST_REQUESTS_DB: Annotated[str, database_name] = "ingest_requests"
INGEST_CATALOG_DB: Annotated[str, database_name] = "ingest_catalog"
#: JSON-lines file of catalog works ({"doi", "title", ...}) loaded into INGEST_CATALOG_DB at start.
INGEST_CATALOG_JSONL: str | None = None
#: "folder" (INGEST_BLOB_DIR) or "store" (attachments in INGEST_BLOB_DB of the store).
INGEST_BLOB_BACKEND = "folder"
INGEST_BLOB_DIR = "ingest-blobs"
INGEST_BLOB_DB: Annotated[str, database_name] = "sandcrawler"
#: JSON-lines "html-teixml" feed; None to disable.
INGEST_TEIXML_FEED = "ingest-feeds/html-teixml.jsonl"
INGEST_WARC_ENABLED = False
INGEST_WARC_DIR = "warcs"
INGEST_WARC_MAX_SIZE = 1024 * 1024 * 1024
INGEST_WARC_PREFIX = "VOTERSDAILY-INGEST"

#: The event pipeline's four stages (normalise time → validate → _id → store) in one component. A
#: pipeline of your own before 800 sees the event as the spider made it (its changes are then checked
#: and stored); to run one between two stages, list the stages instead of EventPipeline:
#: NormaliseDatetimesPipeline 100, ValidateEventPipeline 200, EventIdPipeline 300, EventStorePipeline 800.
ITEM_PIPELINES = {"votersdaily.pipelines.EventPipeline": 800}

EXTENSIONS = {
    "votersdaily.gc_freeze.FreezeStartupObjects": 0,
    # Before the run log: a reparse's marks and figures are in place when the log is written.
    "votersdaily.reparse.ReparseExtension": 400,
    "votersdaily.redact.RedactSecrets": 0,
    "votersdaily.extensions.RunLog": 500,
}

# -- the source archive and reparsing (votersdaily/archive.py, votersdaily/reparse.py) ------------
#: Every response an event spider parses is kept as WARC records, one gzipped file per run, under
#: <VOTERSDAILY_ARCHIVE_DIR>/<spider>/ (on scrapyd nodes: a shared path).
VOTERSDAILY_ARCHIVE_ENABLED = True
VOTERSDAILY_ARCHIVE_DIR = "archive"
#: Retention: WARC files older than this many days are deleted at the end of a run (0: keep all) ...
VOTERSDAILY_ARCHIVE_RETENTION_DAYS = 0.0
#: ... and then the oldest while a spider's folder holds more than this many bytes (0: no limit).
VOTERSDAILY_ARCHIVE_MAX_BYTES = 0

LOG_LEVEL: Annotated[str, OneOf(*log_levels)] = "INFO"
LOG_FORMATTER = "votersdaily.logformatter.LogFormatter"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
#: Feeds to local files (``-o``, ``FEEDS``) on a full disk: cut short, said once, the run failed
#: (``OutputFolderFull``), the items stored (votersdaily/scrapy_outputs.py).
FEED_STORAGES = {
    "": "votersdaily.scrapy_outputs.GuardedFileFeedStorage",
    "file": "votersdaily.scrapy_outputs.GuardedFileFeedStorage",
}

# -- the laundromat spider (votersdaily/laundromat) -----------------------------------------------
#: Folder of downloaded/unpacked files (files/) and cleaned output (cleaned/).
LAUNDROMAT_OUTPUT_DIR = "laundromat"
#: Seconds before a processed seed is stale (re-downloaded); sitemap changefreq overrides it.
LAUNDROMAT_DEFAULT_INTERVAL = 86400.0
#: Worker processes that unpack, recode, guess and clean (CPU work off the reactor); None: one per CPU.
LAUNDROMAT_WORKERS: int | None = None
LAUNDROMAT_GZIP_LEVEL: Annotated[int, AtMost(9)] = 1
LAUNDROMAT_GENID_BASE = "https://lodlaundromat.org/.well-known/genid/"
#: Sitemaps nested in sitemaps: how deep below the first one (an operator's seed, a dump link) a
#: sitemap is still read. 1 is the protocol's sitemap index of sitemaps (it allows no index in an
#: index); 2 lets an index name indexes, as some sites do. A deeper one is not read, its links not
#: followed (the run log's not_followed: sitemap_too_deep).
LAUNDROMAT_SITEMAP_MAX_DEPTH = 2
#: New seeds one run registers from crawled content (sitemap entries, dump locations,
#: void:dataDump links; 0: no limit): past it they are not followed (not_followed: seed_limit), until
#: a later run reads what names them again. A site's data cannot steer a run into endless fetching.
LAUNDROMAT_MAX_FOUND_SEEDS = 100_000
#: Unpacking limits: uncompressed bytes per archive, compression ratio, entries, nesting depth.
LAUNDROMAT_MAX_UNPACKED_BYTES = 8 * 1024**3
LAUNDROMAT_MAX_RATIO = 200.0
LAUNDROMAT_MAX_ENTRIES = 10000
LAUNDROMAT_MAX_DEPTH = 5
#: Seconds one document may take (unpack, recode, guess, clean together), plus
#: LAUNDROMAT_DOCUMENT_SECONDS_PER_MB per MiB of it: past that its worker is killed and the
#: document fails with that reason; the run goes on (0: no limit).
LAUNDROMAT_DOCUMENT_TIMEOUT = 120.0
LAUNDROMAT_DOCUMENT_SECONDS_PER_MB = 1.0
#: Bound on blank-node canonicalisation (JSON-LD, RDFa) in units of its estimated permutations
#: (RDFC-1.0 is factorial in blank nodes it cannot tell apart; 20,000 is about 2 s): a document
#: past it fails instead of running for days.
LAUNDROMAT_MAX_CANONICALISATION_WORK = 20000
#: Remote JSON-LD contexts: the folder they are cached in, which the operator may pre-fill
#: (file names: votersdaily.laundromat.contexts.cache_name; empty: <LAUNDROMAT_OUTPUT_DIR>/contexts),
#: whether to fetch those not there, and limits per document (contexts, bytes each, seconds each).
LAUNDROMAT_CONTEXT_CACHE_DIR = ""
LAUNDROMAT_FETCH_CONTEXTS = True
LAUNDROMAT_CONTEXT_MAX_COUNT = 10
LAUNDROMAT_CONTEXT_MAX_BYTES = 4 * 1024**2
LAUNDROMAT_CONTEXT_TIMEOUT = 10.0
#: URLs from crawled content (sitemap locs, dump locations, void:dataDump links, redirects, JSON-LD
#: contexts) go through the ingest's address policy: http(s) to public addresses only. Only the
#: operator's own seeds (-a url=, -a seedlist=) skip it (and may be file:). True lets derived URLs
#: reach private/loopback addresses (tests and benchmarks only); never file:.
LAUNDROMAT_ALLOW_PRIVATE = False
#: Hosts ("host" or "host:port") whose private addresses derived URLs may reach, e.g. ["127.0.0.1:8080"].
LAUNDROMAT_PRIVATE_HOSTS: list[str] = []
#: If set, derived URLs may name only these hosts ("host" or "host:port").
LAUNDROMAT_ALLOWED_HOSTS: list[str] = []
#: Every download is streamed to disk; one larger than this (or a file: seed) ends as failed.
LAUNDROMAT_MAX_DOWNLOAD_BYTES = 8 * 1024**3
#: Seconds one download (one HTTP hop, or the copy of a file: seed) may take.
LAUNDROMAT_DOWNLOAD_TIMEOUT = 3600.0

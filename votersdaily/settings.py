"""Every setting of the project, with its default, in one place.

Spiders tune politeness (delay, concurrency) for their own source in ``custom_settings``; nothing
here slows every source down to the slowest one's needs.
"""

from votersdaily import __version__

BOT_NAME = "votersdaily"
SPIDER_MODULES = ["votersdaily.spiders"]
NEWSPIDER_MODULE = "votersdaily.spiders"

# -- identity and politeness ----------------------------------------------------------------------
USER_AGENT = (
    "votersdaily/%s (public-affairs event and document crawler; "
    "+https://github.com/votersdaily/votersdaily)" % __version__
)
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_TIMEOUT = 60
RETRY_TIMES = 2
REDIRECT_MAX_TIMES = 10
#: Body size limits (Scrapy aborts larger downloads).
DOWNLOAD_MAXSIZE = 256 * 1024 * 1024
DOWNLOAD_WARNSIZE = 64 * 1024 * 1024
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False

# -- conditional requests (If-Modified-Since / ETag) for sources that support them ---------------
HTTPCACHE_POLICY = "scrapy.extensions.httpcache.RFC2616Policy"
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_IGNORE_SCHEMES = ["file", "data"]

# -- the votersdaily foundation -------------------------------------------------------------------
#: Store URI; the VOTERSDAILY_STORE environment variable wins over this setting.
VOTERSDAILY_STORE = None
VOTERSDAILY_BATCH_SIZE = 500
VOTERSDAILY_MAX_PENDING_BATCHES = 2
#: Store outages: a batch is retried with exponential backoff (1, 2, 4, 8, 16 s, at most 30 s apart);
#: if the store is still unavailable the documents are spooled to VOTERSDAILY_SPOOL_DIR (environment
#: variable wins) and delivered by the next run or `python -m votersdaily flush`.
VOTERSDAILY_STORE_RETRY_TIMES = 5
VOTERSDAILY_STORE_RETRY_BACKOFF = 1.0
VOTERSDAILY_STORE_RETRY_MAX_DELAY = 30.0
VOTERSDAILY_SPOOL_ENABLED = True
VOTERSDAILY_SPOOL_DIR = ".votersdaily-spool"
VOTERSDAILY_RUN_LOG_ENABLED = True
#: Start-URL text larger than this goes to the run log as an attachment.
VOTERSDAILY_LOG_INLINE_LIMIT = 256 * 1024
VOTERSDAILY_LOG_PREVIEW_CHARS = 4096

# -- the static site and its spider health page (votersdaily/feeds) --------------------------------
#: Zone the day pages group and show times in (all-day events keep their own date).
VOTERSDAILY_SITE_TIMEZONE = "America/New_York"
#: Runs per spider shown on the health page.
VOTERSDAILY_HEALTH_RUNS = 20
#: A run is flagged when its item count falls below this share of the median of the spider's
#: previous successful runs (over at most VOTERSDAILY_HEALTH_HISTORY runs).
VOTERSDAILY_HEALTH_DROP_RATIO = 0.5
VOTERSDAILY_HEALTH_HISTORY = 10

ITEM_PIPELINES = {
    "votersdaily.pipelines.NormaliseDatetimesPipeline": 100,
    "votersdaily.pipelines.ValidateEventPipeline": 200,
    "votersdaily.pipelines.EventIdPipeline": 300,
    "votersdaily.pipelines.EventStorePipeline": 800,
}

EXTENSIONS = {
    "votersdaily.extensions.RunLog": 500,
}

LOG_LEVEL = "INFO"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"

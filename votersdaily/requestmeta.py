"""Request meta keys that several modules share (spiders, the run log, the archive, reparse).

The project's own keys start with ``vd_``: the archive keeps exactly those with a response (Scrapy's
are ``download_*``, ``depth``, ``redirect_*``, …), so a replayed request carries them again.
"""

#: Prefix of every meta key of the project's own.
SPIDER_META_PREFIX = "vd_"
#: Marks a request as one of the run's start URLs (the run log reports how each start ended).
START_META = "vd_start"
#: The upstream URL of a response replayed from a recording (a ``file://`` URL was fetched).
SOURCE_URL_META = "vd_source_url"
#: Where the response's record went in the archive ({"warc_file", "warc_record_id", "warc_offset"}).
ARCHIVE_META = "vd_archive"
#: A response replayed from the archive (it is not archived again).
REPLAY_META = "vd_replay"
#: When the response was fetched (ISO 8601 UTC, to the second): the archive's WARC-Date when the
#: archive is on, the record's WARC-Date when replayed from it; an event's ``access_datetime``.
ACCESS_META = "vd_access_datetime"

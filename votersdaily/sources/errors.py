"""What a source can do wrong; the class name becomes the run log's ``result``."""


class SourceError(Exception):
    """The source answered, but not with a document this spider can turn into events."""


class ErrorPage(SourceError):
    """An error body served with a success status (HTTP 200 "File Not Found", "Error sanitizing")."""


class UnexpectedDocument(SourceError):
    """A well-formed document of the wrong kind (unexpected root element or content type)."""


class MalformedDocument(SourceError):
    """A document that does not parse (truncated, invalid bytes for its encoding, syntax errors)."""


class BadLink(SourceError):
    """A listing's link to a document that is no URL a request can be made of (an unclosed IPv6
    literal, a port out of range, no host): that document is skipped, the listing read on."""


class AllRecordsDropped(SourceError):
    """A reply had records and every one was dropped: a changed format, not an empty source. The
    run log's result; the events of the run's other replies are kept."""

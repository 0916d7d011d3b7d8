"""A minimal client of scrapyd's JSON API (schedule.json, listjobs.json, listspiders.json...).

scrapyd-client builds and deploys the egg (``scrapyd-deploy``); its ``ScrapydClient`` is not used
here because it does not do this job: it has no timeout (a hung scrapyd would stall the recurring
scheduler for ever), no ``addversion.json``, no session, and falls back to ``~/.netrc`` credentials.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import requests

from votersdaily.rfc3986 import service_base


class ScrapydError(RuntimeError):
    """scrapyd refused a call or could not be reached."""


class ScrapydCredentialsRefused(ScrapydError):
    """scrapyd answered 401: no credentials, or not those of its ``scrapyd.conf``."""


def credentials_from_environment() -> tuple[str, str] | None:
    """``$SCRAPYD_USERNAME`` and ``$SCRAPYD_PASSWORD``, the variables ``scrapyd-deploy`` reads
    (scrapy.cfg): the deploy and the scheduler take the same credentials, off the command line."""
    username = os.getenv("SCRAPYD_USERNAME")  # scrapyd-client's variables, not settings
    return (username, os.getenv("SCRAPYD_PASSWORD") or "") if username else None


@dataclass
class Jobs:
    pending: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    finished: list[dict[str, Any]] = field(default_factory=list)

    def active(self) -> list[dict[str, Any]]:
        return self.pending + self.running

    def state_of(self, jobid: str | None) -> str | None:
        for state in ("pending", "running", "finished"):
            if any(job.get("id") == jobid for job in getattr(self, state)):
                return state
        return None


class Scrapyd:
    def __init__(
        self,
        url: str,
        project: str = "votersdaily",
        timeout: float = 30.0,
        auth: tuple[str, str] | None = None,
    ) -> None:
        # Credentials travel as HTTP basic auth only: self.url (in messages and decisions) has none.
        self.url, from_url = service_base(url)
        if auth is None:
            auth = from_url or credentials_from_environment()
        self.project = project
        self.timeout = timeout
        self.session = requests.Session()
        self.session.auth = auth

    def _call(self, method: str, endpoint: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.session.request(method, self.url + endpoint, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise ScrapydError("scrapyd %s%s: %s" % (self.url, endpoint, type(exc).__name__)) from None
        if response.status_code == 401:
            raise ScrapydCredentialsRefused(
                "scrapyd %s refused the credentials (HTTP 401): %s" % (self.url, self._credentials_hint())
            )
        try:
            answer = response.json()
        except ValueError:
            raise ScrapydError(
                "scrapyd %s%s answered HTTP %d, not JSON: is this scrapyd?"
                % (self.url, endpoint, response.status_code)
            ) from None
        if not isinstance(answer, dict) or answer.get("status") != "ok":
            message = answer.get("message", answer) if isinstance(answer, dict) else answer
            raise ScrapydError("scrapyd %s%s: %s" % (self.url, endpoint, message))
        return answer

    def _credentials_hint(self) -> str:
        if self.session.auth is None:
            return (
                "give its scrapyd.conf's username and password in $SCRAPYD_USERNAME and "
                "$SCRAPYD_PASSWORD (or in the URL, http://<username>:<password>@host:6800/)"
            )
        return "the username and password given are not those of its scrapyd.conf"

    def answers_without_credentials(self) -> bool:
        """Whether scrapyd serves its API to anyone (no ``username``/``password`` in its
        ``scrapyd.conf``): then any local process can upload an egg and run code with the node's
        store and Redis passwords."""
        try:
            response = requests.get(self.url + "daemonstatus.json", timeout=self.timeout)
        except requests.RequestException:
            return False  # unreachable: the pass itself says so
        return response.status_code == 200

    def daemonstatus(self) -> dict[str, Any]:
        return self._call("GET", "daemonstatus.json")

    def add_version(self, version: str, egg: bytes) -> dict[str, Any]:
        return self._call(
            "POST",
            "addversion.json",
            data={"project": self.project, "version": version},
            files={"egg": ("project.egg", egg)},
        )

    def spiders(self) -> list[str]:
        return self._call("GET", "listspiders.json", params={"project": self.project})["spiders"]

    def schedule(self, spider: str, settings: dict[str, Any] | None = None, **args: str) -> str:
        data = [("project", self.project), ("spider", spider)]
        data += [("setting", "%s=%s" % item) for item in (settings or {}).items()]
        data += list(args.items())
        return self._call("POST", "schedule.json", data=data)["jobid"]

    def jobs(self) -> Jobs:
        answer = self._call("GET", "listjobs.json", params={"project": self.project})
        return Jobs(answer.get("pending", []), answer.get("running", []), answer.get("finished", []))

    def close(self) -> None:
        self.session.close()

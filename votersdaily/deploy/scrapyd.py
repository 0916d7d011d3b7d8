"""A minimal client of scrapyd's JSON API (schedule.json, listjobs.json, listspiders.json...).

scrapyd-client builds and deploys the egg (``scrapyd-deploy``); its ``ScrapydClient`` is not used
here because it does not do this job: it has no timeout (a hung scrapyd would stall the recurring
scheduler for ever), no ``addversion.json``, no session, and falls back to ``~/.netrc`` credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests

from votersdaily.rfc3986 import service_base


class ScrapydError(RuntimeError):
    """scrapyd refused a call or could not be reached."""


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
            auth = from_url
        self.project = project
        self.timeout = timeout
        self.session = requests.Session()
        self.session.auth = auth

    def _call(self, method: str, endpoint: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.session.request(method, self.url + endpoint, timeout=self.timeout, **kwargs)
            answer = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ScrapydError("scrapyd %s%s: %s" % (self.url, endpoint, type(exc).__name__)) from None
        if answer.get("status") != "ok":
            raise ScrapydError("scrapyd %s%s: %s" % (self.url, endpoint, answer.get("message", answer)))
        return answer

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

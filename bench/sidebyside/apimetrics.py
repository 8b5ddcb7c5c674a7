"""What each side asked of kube-apiserver: requests by verb and resource, their time, CEL and
webhook time, read from the apiserver's own /metrics before and after the run."""

from __future__ import annotations

import re
from typing import Any, Final

from kubernetes import client

REQUESTS: Final = "apiserver_request_total"
REQUEST_SECONDS: Final = "apiserver_request_duration_seconds_sum"
CEL_SECONDS: Final = "apiserver_cel_evaluation_duration_seconds_sum"
WEBHOOK_SECONDS: Final = "apiserver_admission_webhook_admission_duration_seconds_sum"
WATCH_EVENTS: Final = "apiserver_watch_events_total"
WANTED: Final = (REQUESTS, REQUEST_SECONDS, CEL_SECONDS, WEBHOOK_SECONDS, WATCH_EVENTS)
TOP: Final = 12  # request rows shown in the report

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(api: client.ApiClient) -> dict[str, float]:
    """The wanted series, keyed `metric|key`: requests by `verb resource[/sub]`, webhooks by
    name, watch events by kind, CEL as one sum; empty when /metrics cannot be read."""
    cfg = api.configuration
    headers = {"Accept": "text/plain"}
    for auth in cfg.auth_settings().values():  # the kubeconfig's token, as the typed calls send it
        if auth["in"] == "header":
            headers[auth["key"]] = auth["value"]
    try:
        response = api.call_api("GET", f"{cfg.host}/metrics", header_params=headers)
        body: bytes = response.response.data
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        text = body.decode()
    except Exception as e:
        print(f"apiserver metrics unreadable: {e}", flush=True)
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _SAMPLE.match(line)
        if m is None or m["name"] not in WANTED:
            continue
        labels = dict(_LABEL.findall(m["labels"] or ""))
        if m["name"] == REQUEST_SECONDS and labels.get("verb") == "WATCH":
            continue  # a watch lasts as long as it is open: its seconds are not work
        key = f"{m['name']}|{_key(m['name'], labels)}"
        out[key] = out.get(key, 0.0) + float(m["value"])
    return out


def _key(name: str, labels: dict[str, str]) -> str:
    if name in (REQUESTS, REQUEST_SECONDS):
        sub = labels.get("subresource")
        resource = labels.get("resource", "") + (f"/{sub}" if sub else "")
        return f"{labels.get('verb', '')} {resource}"
    if name == WEBHOOK_SECONDS:
        return f"{labels.get('name', '')} {labels.get('operation', '')}"
    if name == WATCH_EVENTS:
        return labels.get("kind", labels.get("resource", ""))
    return ""


def delta(before: dict[str, float], after: dict[str, float], jobs: int) -> dict[str, Any]:
    """Per job, what the run added: requests and seconds by request, CEL, webhooks, watch events."""

    def per_job(metric: str) -> dict[str, float]:
        rows = {
            k.split("|", 1)[1]: (v - before.get(k, 0.0)) / jobs
            for k, v in after.items()
            if k.startswith(metric + "|")
        }
        return {k: round(v, 4) for k, v in sorted(rows.items(), key=lambda kv: -kv[1]) if v > 0}

    if not before or not after:
        return {}
    requests = per_job(REQUESTS)
    return {
        "requests_per_job": requests,
        "requests_per_job_total": round(sum(requests.values()), 2),
        "request_seconds_per_job": per_job(REQUEST_SECONDS),
        "cel_seconds_per_job": sum(per_job(CEL_SECONDS).values()),
        "webhook_seconds_per_job": per_job(WEBHOOK_SECONDS),
        "watch_events_per_job": per_job(WATCH_EVENTS),
    }


def table(order: list[str], sides: dict[str, Any]) -> list[str]:
    """The busiest requests per job, each side's count and summed latency side by side."""
    measured = [n for n in order if sides.get(n, {}).get("apiserver")]
    if not measured:
        return ["(apiserver metrics not read)"]
    counts = {n: sides[n]["apiserver"]["requests_per_job"] for n in measured}
    seconds = {n: sides[n]["apiserver"]["request_seconds_per_job"] for n in measured}
    keys = sorted(
        {k for n in measured for k in counts[n]},
        key=lambda k: -max(counts[n].get(k, 0.0) for n in measured),
    )[:TOP]
    lines = [
        "| request | " + " | ".join(f"{n}: per job / s per job" for n in measured) + " |",
        "|---" * (len(measured) + 1) + "|",
    ]
    for k in keys:
        cells = [f"{counts[n].get(k, 0.0):.2f} / {seconds[n].get(k, 0.0):.3f}" for n in measured]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines.append(
        "| **all requests** | "
        + " | ".join(f"{sides[n]['apiserver']['requests_per_job_total']:.1f}" for n in measured)
        + " |"
    )
    lines.append(
        "| CEL evaluation s | "
        + " | ".join(f"{sides[n]['apiserver']['cel_seconds_per_job']:.4f}" for n in measured)
        + " |"
    )
    webhooks = sorted(
        {k for n in measured for k in sides[n]["apiserver"]["webhook_seconds_per_job"]}
    )
    for w in webhooks:
        cells = [
            f"{sides[n]['apiserver']['webhook_seconds_per_job'].get(w, 0.0):.4f}" for n in measured
        ]
        lines.append(f"| webhook {w} s | " + " | ".join(cells) + " |")
    return lines

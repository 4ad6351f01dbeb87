#!/usr/bin/env python3
"""The demo's curl lines, derived from the resolved document itself.

    demo_probes.py print DOC PORT BACKEND_PORT   show what to try
    demo_probes.py check DOC PORT BACKEND_PORT   run those very lines and assert

Each probe picks the first route of the schema-1 document (written by
`attache watch` for examples/shop) that sets the behaviour, builds a request
that route matches, and says what Envoy with the attache filter must answer.
Deriving them from the document keeps the demo true when the example changes.
Standard library only: this runs before anything else is installed.
"""

import json
import shlex
import subprocess
import sys


def request_for(route):
    """(path, [curl -H args]) for a request the route matches, or None."""
    headers = []
    hostnames = route.get("hostnames") or []
    if hostnames:
        headers.append(f"host: {hostnames[0].replace('*', 'demo')}")
    matches = route.get("matches") or [{}]
    first = matches[0]
    if first.get("method", "GET") != "GET" or first.get("queryParams"):
        return None
    for header in first.get("headers", []):
        if header.get("type", "Exact") != "Exact":
            return None
        headers.append(f"{header['name']}: {header['value']}")
    path = first.get("path", {"type": "PathPrefix", "value": "/"})
    if path.get("type", "PathPrefix") == "RegularExpression":
        return None
    return path.get("value", "/"), headers


def curl(port, path, headers, extra=(), fmt=None, show_headers=False):
    args = ["curl", "-s"]
    if show_headers:
        args += ["-D", "-", "-o", "/dev/null"]
    if fmt:
        args += ["-o", "/dev/null", "-w", fmt]
    for header in list(headers) + list(extra):
        args += ["-H", header]
    args.append(f"http://127.0.0.1:{port}{path}")
    return args


def source(route, field):
    where = (route.get("sources") or {}).get(field)
    return f" (from {where})" if where else ""


# The Gateway listener that the demo publishes on PORT.
LISTENER = "http"


def probes(doc, port, backend_port):
    """Yields (title, [commands], check(outputs) -> problem or None)."""
    routes = [r for r in doc.get("routes", []) if r.get("listener") == LISTENER]

    def first(pred):
        for route in routes:
            req = request_for(route)
            if req and pred(route):
                return route, req
        return None, None

    route, req = first(lambda r: 0 < (r.get("timeouts") or {}).get("requestMs", 0) <= 10000)
    if route:
        ms = route["timeouts"]["requestMs"]
        per_try = route["timeouts"].get("backendRequestMs", 0)
        # A shorter per-try timeout ends the first attempt sooner; whatever
        # retries follow, the request timeout bounds the whole exchange.
        cut = min(ms, per_try) if per_try else ms
        path, headers = req
        delay = f"x-backend-delay-ms: {ms + 2000}"
        fmt = "%{http_code} after %{time_total}s\\n"

        def check_timeout(outputs, ms=ms, cut=cut):
            for out in outputs:
                code, _, secs = out.strip().partition(" after ")
                took = float(secs.rstrip("s") or 0) * 1000
                # Envoy's timers tick in milliseconds and may fire a hair early.
                if code != "504" or not cut - 20 <= took < ms + 1500:
                    return f"expected 504 after {cut}-{ms}ms, got {out.strip()!r}"
            return None

        per_try_note = f" (each attempt {per_try}ms)" if per_try and per_try < ms else ""
        yield (
            f"Timeout: {route['name']} allows {ms}ms{per_try_note}{source(route, 'timeouts.requestMs')}; "
            f"a backend taking {ms + 2000}ms gives 504 instead, even when the client asks for 60s",
            [curl(port, path, headers, [delay], fmt),
             curl(port, path, headers, [delay, "x-envoy-upstream-rq-timeout-ms: 60000"], fmt)],
            check_timeout,
        )

    route, req = first(lambda r: (r.get("retry") or {}).get("codes")
                       and 1 <= (r.get("retry") or {}).get("attempts", 0) <= 5)
    if route:
        retry = route["retry"]
        attempts, code = retry["attempts"], retry["codes"][0]
        path, headers = req
        key = "demo-retry"

        def check_retry(outputs, attempts=attempts):
            status = outputs[1].strip()
            seen = json.loads(outputs[2] or "{}").get("attempts")
            if status != "200" or seen != attempts + 1:
                return f"expected 200 after {attempts + 1} attempts, got {status!r} after {seen}"
            return None

        yield (
            f"Retry: {route['name']} retries {retry['codes']} up to {attempts} times"
            f"{source(route, 'retry.attempts')}; a backend failing {attempts} times with {code} "
            f"still gives 200, and the backend saw {attempts + 1} attempts",
            [["curl", "-s", "-o", "/dev/null", "-X", "POST", f"http://127.0.0.1:{backend_port}/__reset"],
             curl(port, path, headers,
                  [f"x-backend-key: {key}", f"x-backend-fail-times: {attempts}", f"x-backend-status: {code}"],
                  "%{http_code}\\n"),
             ["curl", "-s", f"http://127.0.0.1:{backend_port}/__attempts/{key}"]],
            check_retry,
        )

    route, req = first(lambda r: (r.get("requestHeaders") or {}).get("set"))
    if route:
        header = route["requestHeaders"]["set"][0]
        path, headers = req
        name, value = header["name"], header["value"]
        also_added = any(a["name"] == name for a in route["requestHeaders"].get("add", []))

        def check_request_header(outputs, name=name, value=value, also_added=also_added):
            seen = json.loads(outputs[0]).get("headers", {}).get(name)
            ok = seen == value or (also_added and isinstance(seen, list) and seen[0] == value)
            return None if ok else f"expected the backend to see {name}: {value}, it saw {seen!r}"

        yield (
            f"Request header: {route['name']} sets {name}: {value}"
            f"{source(route, 'requestHeaders.set.' + name)}; the backend echoes what it received, "
            f"whatever the client sent",
            [curl(port, path, headers, [f"{name}: from-the-client"])],
            check_request_header,
        )

    # A route served through a tenant's ListenerSet listener (on the same
    # port), with a header its set's policy sets.
    def set_header(r):
        return next((h for h in (r.get("requestHeaders") or {}).get("set", [])
                     if "@ ListenerSet " in (r.get("sources") or {}).get("requestHeaders.set." + h["name"], "")),
                    None)

    route, req = first(lambda r: r.get("listenerSet") and set_header(r))
    if route:
        header = set_header(route)
        path, headers = req
        name, value = header["name"], header["value"]

        def check_set_header(outputs, name=name, value=value):
            seen = json.loads(outputs[0]).get("headers", {}).get(name)
            return None if seen == value else f"expected the backend to see {name}: {value}, it saw {seen!r}"

        yield (
            f"ListenerSet: {route['name']} is served through listener {route['listener']} of ListenerSet "
            f"{route['listenerSet']}, on the Gateway's port; its team's policy on the set sets {name}: {value}"
            f"{source(route, 'requestHeaders.set.' + name)}",
            [curl(port, path, headers)],
            check_set_header,
        )

    route, req = first(lambda r: any("," in h["value"] for h in (r.get("requestHeaders") or {}).get("set", [])))
    if route:
        header = next(h for h in route["requestHeaders"]["set"] if "," in h["value"])
        path, headers = req
        name, value = header["name"], header["value"]

        def check_joined(outputs, name=name, value=value):
            seen = json.loads(outputs[0]).get("headers", {}).get(name)
            return None if seen == value else f"expected the backend to see {name}: {value}, it saw {seen!r}"

        yield (
            f"Deep merge: {route['name']} gets {name}: {value}, values joined from several levels"
            f"{source(route, 'requestHeaders.set.' + name)}",
            [curl(port, path, headers)],
            check_joined,
        )

    route, req = first(lambda r: (r.get("responseHeaders") or {}).get("set"))
    if route:
        header = route["responseHeaders"]["set"][0]
        path, headers = req
        name, value = header["name"], header["value"]

        def check_response_header(outputs, name=name, value=value):
            lines = [line.strip() for line in outputs[0].splitlines()]
            wanted = f"{name}: {value}".lower()
            return None if any(line.lower() == wanted for line in lines) else \
                f"expected response header {name}: {value} in {lines!r}"

        yield (
            f"Response header: {route['name']} sets {name}: {value} on the response"
            f"{source(route, 'responseHeaders.set.' + name)}",
            [curl(port, path, headers, show_headers=True)],
            check_response_header,
        )


def main(argv):
    if len(argv) != 5 or argv[1] not in ("print", "check"):
        sys.exit("usage: demo_probes.py print|check DOC PORT BACKEND_PORT")
    mode, doc_path, port, backend_port = argv[1:]
    with open(doc_path, encoding="utf-8") as handle:
        doc = json.load(handle)
    found = list(probes(doc, port, backend_port))
    if not found:
        sys.exit(f"{doc_path}: no route sets a timeout, retry or header change to show")
    if mode == "print":
        print("Try these (each line is a complete command):")
        for title, commands, _ in found:
            print(f"\n# {title}")
            for command in commands:
                print(shlex.join(command))
        return
    passed = failed = 0
    for title, commands, check in found:
        outputs = [subprocess.run(c, capture_output=True, text=True, check=False).stdout for c in commands]
        problem = check(outputs)
        if problem:
            failed += 1
            print(f"FAIL {title}\n     {problem}")
        else:
            passed += 1
            print(f"ok   {title}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv)

"""A real gRPC server and client for tests/e2e/grpc.rs (grpcio from PyPI).

Generic handlers with raw-bytes (de)serialisers: no protobuf code generation.
Every message is UTF-8 JSON.

    grpc_peer.py serve PORT_FILE [SERVICE [PORT]]
        Serves SERVICE (default `attache.test.Echo`) on PORT (default: a free
        one) of 127.0.0.1, writes the port to PORT_FILE once listening, and
        runs until killed (scripts/demo.sh --grpc uses it too). Methods:
          Echo    {"sleepMs": N}            -> {"metadata": {...}, "attempt": K}
                  answers after N ms, with the request's metadata as received;
          Flaky   {"key": k, "failures": F} -> UNAVAILABLE for the first F
                  calls with that key, then OK; every call is counted;
          Unretried                         the same, served by another rule;
          Count   {"key": k}                -> {"calls": calls seen with key k}.
    grpc_peer.py call TARGET METHOD JSON [--metadata k=v]... [--timeout S]
                      [--ca CAFILE --name NAME]
        One unary call (no deadline unless --timeout; authority NAME when
        given; over TLS, trusting CAFILE, with SNI NAME, when --ca is given); prints one
        JSON line:
        {"code": "OK"|"DEADLINE_EXCEEDED"|..., "details": ..., "elapsedMs": ...,
         "response": {...} | null}.
"""

import json
import sys
import threading
import time
from concurrent import futures

import grpc

SERVICE = "attache.test.Echo"

_calls = {}
_lock = threading.Lock()


def _count(key):
    with _lock:
        _calls[key] = _calls.get(key, 0) + 1
        return _calls[key]


def _echo(request, context):
    body = json.loads(request or b"{}")
    time.sleep(body.get("sleepMs", 0) / 1000.0)
    metadata = {k: v for k, v in context.invocation_metadata()}
    return json.dumps({"metadata": metadata}).encode()


def _flaky(request, context):
    body = json.loads(request or b"{}")
    n = _count(body["key"])
    if n <= body.get("failures", 0):
        context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {n} fails on purpose")
    return json.dumps({"attempt": n}).encode()


def _calls_of(request, context):
    body = json.loads(request or b"{}")
    with _lock:
        return json.dumps({"calls": _calls.get(body["key"], 0)}).encode()


def serve(port_file, service=SERVICE, wanted_port=0):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    raw = dict(request_deserializer=None, response_serializer=None)
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(_echo, **raw),
        "Flaky": grpc.unary_unary_rpc_method_handler(_flaky, **raw),
        # Flaky again, under a name only the GRPCRoute's service-wide rule
        # (no retry policy) matches.
        "Unretried": grpc.unary_unary_rpc_method_handler(_flaky, **raw),
        "Count": grpc.unary_unary_rpc_method_handler(_calls_of, **raw),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service, handlers),)
    )
    port = server.add_insecure_port(f"127.0.0.1:{wanted_port}")
    server.start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    # Renamed into place, so the reader never sees half a number.
    import os

    os.replace(port_file + ".tmp", port_file)
    server.wait_for_termination()


def call(argv):
    target, method, payload = argv[0], argv[1], argv[2]
    metadata, timeout, ca, name = [], None, None, None
    rest = argv[3:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--metadata":
            k, v = value.split("=", 1)
            metadata.append((k, v))
        elif flag == "--timeout":
            timeout = float(value)
        elif flag == "--ca":
            ca = value
        elif flag == "--name":
            name = value
        else:
            raise SystemExit(f"unknown flag {flag}")
    if ca:
        with open(ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        options = [("grpc.ssl_target_name_override", name), ("grpc.default_authority", name)]
        channel = grpc.secure_channel(target, credentials, options=options)
    else:
        options = [("grpc.default_authority", name)] if name else []
        channel = grpc.insecure_channel(target, options=options)
    with channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        stub = channel.unary_unary(method)
        start = time.monotonic()
        try:
            reply = stub(payload.encode(), metadata=metadata, timeout=timeout)
            out = {"code": "OK", "details": "", "response": json.loads(reply)}
        except grpc.RpcError as e:
            out = {"code": e.code().name, "details": e.details() or "", "response": None}
        out["elapsedMs"] = (time.monotonic() - start) * 1000.0
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(*sys.argv[2:3], *sys.argv[3:4], *[int(p) for p in sys.argv[4:5]])
    elif sys.argv[1] == "call":
        call(sys.argv[2:])
    else:
        raise SystemExit("usage: grpc_peer.py serve PORT_FILE | call TARGET METHOD JSON ...")

#!/usr/bin/env python3
"""A real OTLP/HTTP receiver for the end-to-end tests: the stand-in for an OpenTelemetry Collector,
which cannot be installed here.

It decodes every request body with the official definitions (PyPI's `opentelemetry-proto`, the
generated classes of opentelemetry-proto), strictly: a body that does not parse, or that holds a
field the definitions do not know (anywhere in the message), is answered 400 and counted as a
rejection; nothing is guessed. Accepted: POST /v1/logs, /v1/traces, /v1/metrics (and
/v1development/profiles), `application/x-protobuf`, optionally gzip-encoded.

What it received is kept in memory, flattened to plain dicts (ids as lowercase hex):
  logs:   {trace_id, span_id, severity_number, severity_text, body, event_name, attributes, resource}
  spans:  {trace_id, span_id, parent_span_id, name, attributes, events: [{name, attributes}]}
  metrics: metric names, with how many data points each brought.

Used in-process by Tests/EndToEnd/otel.py (`Receiver`), or alone:
  otlp_receiver.py [--port N]   prints "otlp receiver on 127.0.0.1:N", then one line per request.
"""
import gzip
import http.server
import json
import sys
import threading
import time

from google.protobuf import unknown_fields
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

try:  # alpha: absent from older opentelemetry-proto releases
    from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
except ImportError:  # pragma: no cover
    profiles_service_pb2 = None

REQUESTS = {
    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest, logs_service_pb2.ExportLogsServiceResponse),
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics_service_pb2.ExportMetricsServiceResponse),
}
if profiles_service_pb2 is not None:
    REQUESTS["/v1development/profiles"] = (profiles_service_pb2.ExportProfilesServiceRequest,
                                           profiles_service_pb2.ExportProfilesServiceResponse)


def is_repeated(field):
    # protobuf 5.28+ has `is_repeated`; `label` is gone in 7.
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == FieldDescriptor.LABEL_REPEATED


def unknown_field_paths(message, path=""):
    """Where `message` holds fields its definition does not know (empty when none)."""
    here = path or message.DESCRIPTOR.full_name
    found = [here] if len(unknown_fields.UnknownFieldSet(message)) else []
    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        if field.message_type.GetOptions().map_entry:
            values = [v for v in value.values() if hasattr(v, "ListFields")]
        elif is_repeated(field):
            values = list(value)
        else:
            values = [value]
        for i, v in enumerate(values):
            found += unknown_field_paths(v, f"{here}.{field.name}[{i}]")
    return found


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


class Store:
    """What the receiver accepted and rejected; thread-safe."""
    def __init__(self):
        self.lock = threading.Lock()
        self.logs, self.spans, self.metrics, self.profiles = [], [], {}, []
        self.profile_bodies = []  # each accepted profiles request, decompressed, for otlp_profile_check
        self.faults = []  # (path, status or "delay") answered by the fault schedule
        self.rejected = []  # (path, reason)
        self.requests = 0

    def add(self, path, request, body=b""):
        with self.lock:
            self.requests += 1
            if path == "/v1/logs":
                for rl in request.resource_logs:
                    resource = attributes(rl.resource.attributes)
                    for sl in rl.scope_logs:
                        for r in sl.log_records:
                            self.logs.append({
                                "trace_id": r.trace_id.hex(), "span_id": r.span_id.hex(),
                                "severity_number": r.severity_number, "severity_text": r.severity_text,
                                "body": any_value(r.body), "event_name": r.event_name,
                                "attributes": attributes(r.attributes), "resource": resource,
                            })
            elif path == "/v1/traces":
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            self.spans.append({
                                "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex(), "name": s.name,
                                "attributes": attributes(s.attributes),
                                "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in s.events],
                            })
            elif path == "/v1/metrics":
                for rm in request.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            kind = m.WhichOneof("data")
                            points = len(getattr(m, kind).data_points) if kind else 0
                            self.metrics[m.name] = self.metrics.get(m.name, 0) + points
            else:
                self.profiles.append(request)
                self.profile_bodies.append(body)

    def reject(self, path, reason):
        with self.lock:
            self.rejected.append((path, reason))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store = None  # set per server
    verbose = False
    # For profiles requests: called with the request's number (0, 1, ...), returns (status,
    # retry_after, delay_seconds); a status other than 200 is answered without decoding the request,
    # with a text body. "partial" takes the request and answers 200 with a partial success that
    # rejects one profile.
    fault = None
    fault_count = 0

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("otlp receiver: " + (fmt % args) + "\n")

    def answer(self, status, body=b"", content_type="application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        if self.fault is not None and path == "/v1development/profiles":
            with self.store.lock:
                number = type(self).fault_count
                type(self).fault_count += 1
            status, retry_after, delay = self.fault(number)
            partial = status == "partial"
            status = 200 if partial else status
            if delay:
                time.sleep(delay)
                with self.store.lock:
                    self.store.faults.append((path, "delay"))
            if status != 200:
                with self.store.lock:
                    self.store.faults.append((path, status))
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", str(retry_after))
                message = b"shedding load"
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)
                return
        else:
            partial = False
        if path not in REQUESTS:
            self.store.reject(path, "unknown path")
            return self.answer(404, b"unknown path", "text/plain")
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/x-protobuf":
            self.store.reject(path, f"content type {self.headers.get('Content-Type')}")
            return self.answer(415, b"only application/x-protobuf", "text/plain")
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            request_type, response_type = REQUESTS[path]
            request = request_type()
            request.ParseFromString(body)
        except (DecodeError, OSError, EOFError) as e:
            self.store.reject(path, f"undecodable: {e}")
            return self.answer(400, str(e).encode(), "text/plain")
        unknown = unknown_field_paths(request)
        if unknown:
            self.store.reject(path, f"unknown fields at {unknown[:3]}")
            return self.answer(400, f"unknown fields at {unknown[:3]}".encode(), "text/plain")
        self.store.add(path, request, body)
        response = response_type()
        if partial:
            with self.store.lock:
                self.store.faults.append((path, "partial"))
            response.partial_success.rejected_profiles = 1
            response.partial_success.error_message = "profile too old"
        self.answer(200, response.SerializeToString())


class Receiver:
    """The receiver on 127.0.0.1 (an ephemeral port unless given), served from a thread."""
    def __init__(self, port=0, verbose=False, fault=None):
        handler = type("BoundHandler", (Handler,), {"store": Store(), "verbose": verbose,
                                                    "fault": staticmethod(fault) if fault else None})
        self.store = handler.store
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def self_test():
    """The strictness itself: a valid request is accepted, one with an unknown field is not."""
    from opentelemetry.proto.logs.v1 import logs_pb2  # noqa: F401
    request = logs_service_pb2.ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add()
    record.body.string_value = "x"
    good = request.SerializeToString()
    # Field 99 (varint 1) appended inside the log record: valid protobuf, unknown to OTLP.
    inner = record.SerializeToString() + b"\xb8\x06\x01"
    record_bytes = b"\x12" + bytes([len(inner)]) + inner           # ScopeLogs.log_records = 2
    scope = b"\x12" + bytes([len(record_bytes)]) + record_bytes     # ResourceLogs.scope_logs = 2
    bad = b"\x0a" + bytes([len(scope)]) + scope                     # request.resource_logs = 1
    parsed_good, parsed_bad = logs_service_pb2.ExportLogsServiceRequest(), logs_service_pb2.ExportLogsServiceRequest()
    parsed_good.ParseFromString(good)
    parsed_bad.ParseFromString(bad)
    assert not unknown_field_paths(parsed_good), "a valid request was taken for one with unknown fields"
    assert unknown_field_paths(parsed_bad), "a field unknown to OTLP went unnoticed"
    print("otlp receiver self-test: strict on unknown fields")


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=4318)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        sys.exit(0)
    receiver = Receiver(args.port, verbose=True)
    print(f"otlp receiver on 127.0.0.1:{receiver.port}", flush=True)
    try:
        receiver.thread.join()
    except KeyboardInterrupt:
        receiver.close()
        print(json.dumps({"logs": len(receiver.store.logs), "spans": len(receiver.store.spans),
                          "rejected": receiver.store.rejected}))

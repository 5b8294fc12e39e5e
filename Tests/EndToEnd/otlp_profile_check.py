#!/usr/bin/env python3
"""Checks an OTLP profiles request (ExportProfilesServiceRequest, profiles/v1development) as a
backend would read it: decoded with PyPI's opentelemetry-proto classes, strictly (a field the
definitions do not know fails it), then each profile's samples rebuilt through the dictionary
tables and compared with the call tree of the report it carries as its original payload (JSON):
the same stacks with the same sample counts, the stall's facts as attributes, the request's trace
as the samples' link.

Usage: otlp_profile_check.py REQUEST.bin   (prints one line per profile; exit 1 on a mismatch)
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_receiver import any_value, unknown_field_paths  # noqa: E402
from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2  # noqa: E402


def frame_key(address, name):
    """A frame as both sides can name it: its address, with its function's name when it has one."""
    return (address, name)


def report_stacks(report):
    """{(root, ..., leaf): samples} from a report's flat call tree (nodes after their parents);
    frames keyed by address and symbol (an unnamed frame by its address: the profile names it
    `module+offset`, which the report does not spell)."""
    nodes = report.get("callTree", [])
    paths, out = [], collections.Counter()
    for node in nodes:
        parent = node.get("parent", -1)
        key = frame_key(int(node["address"], 16), node.get("symbol") or None)
        paths.append((paths[parent] if parent >= 0 else ()) + (key,))
        if node.get("selfCount", 0):
            out[paths[-1]] += node["selfCount"]
    return out


def wanted_frames(want):
    return {frame for path in want for frame in path}


def check(data):
    request = profiles_service_pb2.ExportProfilesServiceRequest()
    request.ParseFromString(data)
    problems = [f"unknown fields at {p}" for p in unknown_field_paths(request)]
    d = request.dictionary
    strings = list(d.string_table)
    if not strings or strings[0] != "":
        problems.append("string table does not start with the empty string")
    attrs = [(strings[a.key_strindex], any_value(a.value)) for a in d.attribute_table]
    profiles = [p for rp in request.resource_profiles for sp in rp.scope_profiles for p in sp.profiles]
    for profile in profiles:
        report = json.loads(profile.original_payload) if profile.original_payload_format == "json" else {}
        rid = report.get("id", "?")
        got = collections.Counter()
        times, untimed = [], 0
        for sample in profile.samples:
            if sample.timestamps_unix_nano:
                if len(sample.timestamps_unix_nano) != len(sample.values):
                    problems.append(f"{rid}: {len(sample.timestamps_unix_nano)} timestamps for {len(sample.values)} values")
                times += [t - profile.time_unix_nano for t in sample.timestamps_unix_nano]
            else:
                untimed += sum(sample.values)
            stack = d.stack_table[sample.stack_index]
            keys = []
            for li in stack.location_indices:  # leaf first
                location = d.location_table[li]
                name = strings[d.function_table[location.lines[0].function_index].name_strindex]
                keys.append((location.address, name))
            got[tuple(reversed(keys))] += sum(sample.values)
            link = d.link_table[sample.link_index]
            want_trace = (report.get("request") or {}).get("traceID")
            if want_trace and link.trace_id.hex() != want_trace:
                problems.append(f"{rid}: sample link trace {link.trace_id.hex()} != {want_trace}")
        want = report_stacks(report)
        # An unnamed frame matches on its address alone.
        wanted = wanted_frames(want)
        named = collections.Counter()
        for path, count in got.items():
            named[tuple((a, n) if (a, n) in wanted else (a, None) for a, n in path)] += count
        got = named
        if got != want:
            problems.append(f"{rid}: stacks differ: got {dict(got)}, want {dict(want)}")
        facts = dict(attrs[i] for i in profile.attribute_indices)
        if facts.get("stallwatch.report_id") != rid:
            problems.append(f"{rid}: attribute stallwatch.report_id is {facts.get('stallwatch.report_id')}")
        if report.get("cause") and facts.get("stallwatch.cause") != report["cause"]["kind"]:
            problems.append(f"{rid}: attribute stallwatch.cause is {facts.get('stallwatch.cause')}")
        if profile.time_unix_nano != report.get("startTimeUnixNanoseconds"):
            problems.append(f"{rid}: time_unix_nano {profile.time_unix_nano}")
        # Every sample the watchdog took has its time; a sample before the start or after the
        # end of the stall is printed (it counts in the report, as in the profile).
        want_times = sorted(t for node in report.get("callTree", []) for t in node.get("sampleOffsetsNanoseconds") or [])
        if sorted(times) != want_times:
            problems.append(f"{rid}: sample times {sorted(times)[:5]}... != the report's {want_times[:5]}...")
        end = profile.duration_nano
        outside = sum(1 for t in times if t < 0 or t > end)
        span = f"{min(times) / 1e6:.0f}..{max(times) / 1e6:.0f} ms of {end / 1e6:.0f}" if times else "none"
        print(f"profile {rid}: {sum(got.values())} samples in {len(got)} stacks "
              f"(report: {sum(want.values())} in {len(want)}), {len(profile.attribute_indices)} attributes, "
              f"sample times {span}, {outside} outside the stall")
    if not profiles:
        problems.append("no profile in the request")
    return problems


def leaf_counts(data):
    """{report id: {leaf function name: samples}} of every profile in the request."""
    request = profiles_service_pb2.ExportProfilesServiceRequest()
    request.ParseFromString(data)
    d = request.dictionary
    strings = list(d.string_table)
    attrs = [(strings[a.key_strindex], any_value(a.value)) for a in d.attribute_table]
    out = {}
    for rp in request.resource_profiles:
        for sp in rp.scope_profiles:
            for profile in sp.profiles:
                rid = dict(attrs[i] for i in profile.attribute_indices).get("stallwatch.report_id")
                counts = collections.Counter()
                for sample in profile.samples:
                    leaf = d.location_table[d.stack_table[sample.stack_index].location_indices[0]]
                    counts[strings[d.function_table[leaf.lines[0].function_index].name_strindex]] += sum(sample.values)
                out[rid] = counts
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        found = check(f.read())
    for p in found:
        print("FAIL " + p)
    sys.exit(1 if found else 0)

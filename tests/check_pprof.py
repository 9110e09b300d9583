#!/usr/bin/env python3
"""check_pprof.py - reads `trace-dump pprof` output as protoc decoded it (after gunzip).

Purpose: the outside reader's view of the heap profile, for tests/test_pprof.c. Input: the
text of `protoc --decode=perftools.profiles.Profile tests/profile.proto`. Checks pprof's rules
(string_table[0] is "", every sample has one value per sample_type, every location id and
function id it refers to exists, ids are nonzero) and prints the samples as JSON:
{"types": [[type, unit]...], "stacks": {"root;...;leaf": [objects, bytes]}, "total":
[objects, bytes], "comment": "...", "period_type": [type, unit], "period": N, "mappings":
[[filename, build_id]...]}; exits 1 with a message on a broken rule.
Threads: none. Reference: google/pprof proto/profile.proto.
"""
import json
import re
import sys


def parse_text(text):
    root = {}
    stack = [root]
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if re.match(r"^\d+[: {]", line):
            fail("unknown field in the output (wrong field number?): " + line)
        if line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
            continue
        key, _, val = line.partition(": ")
        if val.startswith('"'):
            val = bytes(val[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode(
                "utf-8", "replace")
        elif val in ("true", "false"):
            val = val == "true"
        elif re.match(r"^-?\d+$", val):
            val = int(val)
        stack[-1].setdefault(key, []).append(val)
    return root


def fail(msg):
    print("check_pprof: " + msg)
    sys.exit(1)


def main():
    p = parse_text(open(sys.argv[1], encoding="utf-8").read())
    st = p.get("string_table", [])
    if not st or st[0] != "":
        fail("string_table[0] is not \"\"")
    types = [[st[t.get("type", [0])[0]], st[t.get("unit", [0])[0]]] for t in p["sample_type"]]
    funcs = {}
    for f in p.get("function", []):
        fid = f["id"][0]
        if not fid or fid in funcs:
            fail("function id %r zero or repeated" % fid)
        funcs[fid] = st[f["name"][0]]
    locs = {}
    for loc in p.get("location", []):
        lid = loc["id"][0]
        if not lid or lid in locs:
            fail("location id %r zero or repeated" % lid)
        names = []
        for ln in loc.get("line", []):
            if ln["function_id"][0] not in funcs:
                fail("location %d: unknown function %r" % (lid, ln["function_id"]))
            names.append(funcs[ln["function_id"][0]])
        locs[lid] = ";".join(reversed(names))
    stacks = {}
    total = [0] * len(types)
    for s in p.get("sample", []):
        vals = s.get("value", [])
        if len(vals) != len(types):
            fail("a sample with %d values for %d types" % (len(vals), len(types)))
        ids = s.get("location_id", [])
        for i in ids:
            if i not in locs:
                fail("sample refers to unknown location %d" % i)
        key = ";".join(locs[i] for i in reversed(ids))
        old = stacks.get(key, [0] * len(types))
        stacks[key] = [a + b for a, b in zip(old, vals)]
        total = [a + b for a, b in zip(total, vals)]
    comment = [st[c] for c in p.get("comment", [])]
    pt = p.get("period_type", [])
    period_type = [st[pt[0].get("type", [0])[0]], st[pt[0].get("unit", [0])[0]]] if pt else None
    mappings = []
    for m in p.get("mapping", []):
        if not m.get("id", [0])[0]:
            fail("mapping id zero")
        mappings.append([st[m.get("filename", [0])[0]], st[m.get("build_id", [0])[0]]])
    print(json.dumps({"types": types, "stacks": stacks, "total": total, "comment": comment,
                      "period_type": period_type, "period": p.get("period", [0])[0],
                      "mappings": mappings}, sort_keys=True))


main()

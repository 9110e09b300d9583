#!/usr/bin/env python3
"""check_perfetto.py - reads `trace-dump perfetto` output as protoc decoded it and checks it.

Purpose: the outside reader's view of the Perfetto export, for tests/test_perfetto.c. Input:
the text `protoc --decode=perfetto.protos.Trace tests/perfetto_trace.proto` printed for the
output, and `trace-dump summary --json` of the same trace. It replays what a Perfetto importer
does with the packets (sequences, incremental state, interned names, incremental clock,
default tracks, slice stacks per track) and checks:
  - protocol rules: every packet has a sequence id; a sequence starts with a packet that clears
    the incremental state and defines clock 64 as incremental; later ones need that state; an
    interned name is defined once per sequence, before use; no field protoc does not know
    (a bare field number in the text means the writer wrote a field of the wrong number);
  - content against the summary: per span name the number of slices and their total duration
    (unfinished ones apart), spans still open at the end, counter min/max/last per name, the
    live-heap peak and last value, the RSS samples, lost records per thread;
  - descriptors: every process described once, with its command line; thread names.
Prints a JSON object of what it found (names -> slices, nesting, instants...) on success, for
the C test to check exact values; exits 1 with a message on the first broken rule.

Threads: none. Reference: Perfetto's docs, "Converting arbitrary timestamped data to
Perfetto" and TracePacket's comments (sequence flags, interning, incremental clocks).
"""
import json
import re
import sys


def parse_text(text):
    """protoc's text format -> nested dicts of lists."""
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
            key = line[:-1].strip()
            child = {}
            stack[-1].setdefault(key, []).append(child)
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
    print("check_perfetto: " + msg)
    sys.exit(1)


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default


def main_split():
    """--split SUMMARY FILE.txt...: the files of one --split-size export, in order: each is
    checked alone, and together they must hold every span once (begins not flagged continued),
    pieces adding up to the summary's durations, cuts matched (the slices a file ends with
    "split" are the ones the next begins "continued"), time ranges consecutive."""
    import subprocess
    summary = json.load(open(sys.argv[2]))
    begins, pieces, prev = {}, {}, None
    for i, f in enumerate(sys.argv[3:]):
        out = subprocess.run([sys.executable, sys.argv[0], f, "-"], capture_output=True,
                             text=True)
        if out.returncode:
            fail("%s: %s" % (f, out.stdout))
        r = json.loads(out.stdout)
        if prev is not None:
            if r["cut"]["continued"] != prev["cut"]["split"]:
                fail("%s begins %d continued slices; the file before cut %d" %
                     (f, r["cut"]["continued"], prev["cut"]["split"]))
            if r["first_ts"] < prev["last_ts"]:
                fail("%s starts at %d, before the file before ends (%d)" %
                     (f, r["first_ts"], prev["last_ts"]))
        elif r["cut"]["continued"]:
            fail("the first file begins continued slices")
        for n, v in r["begins"].items():
            begins[n] = begins.get(n, 0) + v
        for n, v in r["pieces"].items():
            pieces[n] = pieces.get(n, 0) + v
        prev = r
    for n in summary["names"]:
        if n["begins"] and (begins.get(n["name"]) != n["begins"] or
                            pieces.get(n["name"]) != n["span_total_ns"]):
            fail("%s: %r begins, %r ns over the files; summary %d, %d" %
                 (n["name"], begins.get(n["name"]), pieces.get(n["name"]), n["begins"],
                  n["span_total_ns"]))
    print(json.dumps({"files": len(sys.argv) - 3, "begins": begins, "pieces": pieces},
                     sort_keys=True))


def main():
    if sys.argv[1] == "--split":
        return main_split()
    trace = parse_text(open(sys.argv[1], encoding="utf-8").read())
    # "-" instead of the summary: one file of --split-size, checked alone (protocol, balance)
    summary = json.load(open(sys.argv[2])) if sys.argv[2] != "-" else None
    seqs = {}  # id -> {"names": {iid: name}, "ts": last, "track": default}
    tracks = {}  # uuid -> descriptor
    procs_described = {}
    slices = {}  # name -> [durations]
    unfinished = {}  # name -> count
    stacks = {}  # track -> [(name, ts)]
    nesting = {}  # "parent/child" -> count
    counters = {}  # track -> [values]
    instants = []
    begin_ts = {}  # name -> [ts]
    pieces = {}  # name -> total ns of every slice piece (split files: pieces add up)
    cut = {"split": 0, "continued": 0}
    first_ts = last_ts = None
    events = 0
    for pkt in trace.get("packet", []):
        seq = one(pkt, "trusted_packet_sequence_id")
        if not seq:
            fail("a packet without trusted_packet_sequence_id")
        flags = one(pkt, "sequence_flags", 0)
        st = seqs.get(seq)
        if flags & 1:
            st = seqs[seq] = {"names": {}, "ts": None, "track": None, "clock": None}
            d = one(pkt, "trace_packet_defaults")
            if d:
                st["clock"] = one(d, "timestamp_clock_id")
                ted = one(d, "track_event_defaults")
                st["track"] = one(ted, "track_uuid") if ted else None
            for c in one(pkt, "clock_snapshot", {}).get("clocks", []):
                if one(c, "clock_id") == 64:
                    if not one(c, "is_incremental"):
                        fail("clock 64 is not incremental")
                    st["ts"] = one(c, "timestamp")
        if flags & 2 and st is None:
            fail("sequence %d needs incremental state before any clears it" % seq)
        if seq != 1 and seq not in seqs:
            fail("sequence %d: first packet does not clear the incremental state" % seq)
        idata = one(pkt, "interned_data")
        if idata:
            for en in idata.get("event_names", []):
                iid = one(en, "iid")
                if iid in st["names"]:
                    fail("sequence %d: iid %d interned twice" % (seq, iid))
                st["names"][iid] = one(en, "name")
        td = one(pkt, "track_descriptor")
        if td:
            uuid = one(td, "uuid")
            tracks[uuid] = td
            p = one(td, "process")
            if p:
                pid = one(p, "pid")
                if pid in procs_described and one(p, "process_name") is not None and \
                        procs_described[pid] is not None:
                    fail("process %d named twice" % pid)
                procs_described[pid] = one(p, "process_name")
            continue
        te = one(pkt, "track_event")
        if not te:
            continue
        events += 1
        # time
        ts = one(pkt, "timestamp")
        clock = one(pkt, "timestamp_clock_id", st["clock"] if st else None)
        if clock == 64:
            st["ts"] += ts
            ts = st["ts"]
        elif clock != 3:
            fail("event on clock %r" % clock)
        first_ts = ts if first_ts is None else min(first_ts, ts)
        last_ts = ts if last_ts is None else max(last_ts, ts)
        track = one(te, "track_uuid", st["track"])
        if track not in tracks:
            fail("event on undescribed track %r" % track)
        typ = one(te, "type")
        name = one(te, "name")
        iid = one(te, "name_iid")
        if iid is not None:
            if iid not in st["names"]:
                fail("sequence %d: iid %d used before it is interned" % (seq, iid))
            name = st["names"][iid]
        annots = {one(a, "name"): (one(a, "int_value") if "int_value" in a else
                                   one(a, "bool_value"))
                  for a in te.get("debug_annotations", [])}
        stack = stacks.setdefault(track, [])
        if typ == "TYPE_SLICE_BEGIN":
            if stack:
                k = stack[-1][0] + "/" + name
                nesting[k] = nesting.get(k, 0) + 1
            stack.append((name, ts, bool(annots.get("continued"))))
            if annots.get("continued"):
                cut["continued"] += 1
            else:
                begin_ts.setdefault(name, []).append(ts)
        elif typ == "TYPE_SLICE_END":
            if not stack:
                fail("slice end with no open slice on track %d" % track)
            n, t0, cont = stack.pop()
            pieces[n] = pieces.get(n, 0) + ts - t0
            if annots.get("split"):
                cut["split"] += 1
            elif cont:
                pass
            elif annots.get("unfinished"):
                unfinished[n] = unfinished.get(n, 0) + 1
            else:
                slices.setdefault(n, []).append(ts - t0)
        elif typ == "TYPE_INSTANT":
            instants.append({"name": name, "track": track, "ts": ts, "args": annots})
        elif typ == "TYPE_COUNTER":
            if one(tracks[track], "counter") is None:
                fail("counter value on a track that is not a counter track")
            counters.setdefault(track, []).append(one(te, "counter_value"))
        else:
            fail("event type %r" % typ)
    for t, s in stacks.items():
        if s:
            fail("track %d: slices never ended: %r" % (t, s))

    if summary is None:
        print(json.dumps({"events": events, "cut": cut, "pieces": pieces,
                          "begins": {n: len(v) for n, v in begin_ts.items()},
                          "first_ts": first_ts, "last_ts": last_ts}, sort_keys=True))
        return
    # against the summary: every begin (span or function) is one slice, ended or unfinished
    rt = summary["records_by_type"]
    n_slices = sum(len(v) for v in slices.values()) + sum(unfinished.values())
    if n_slices != rt.get("span_begin", 0) + rt.get("func_enter", 0):
        fail("%d slices; the summary has %d span begins and %d function entries" %
             (n_slices, rt.get("span_begin", 0), rt.get("func_enter", 0)))
    by_name = {n["name"]: n for n in summary["names"]}
    for n, v in by_name.items():
        got = slices.get(n, [])
        if len(got) != v["spans"] or sum(got) != v["span_total_ns"]:
            fail("span %r: %d slices, %d ns in the export; the summary says %d, %d ns" %
                 (n, len(got), sum(got), v["spans"], v["span_total_ns"]))
    if sum(unfinished.values()) != summary["spans_open_at_end"]:
        fail("unfinished slices %r, summary spans_open_at_end %d" %
             (unfinished, summary["spans_open_at_end"]))

    def track_name(t):
        return one(tracks[t], "name")

    by_counter = {}
    for t, vals in counters.items():
        by_counter.setdefault(track_name(t), []).append((t, vals))
    for n, v in by_name.items():
        if not v["counters"]:
            continue
        vals = [x for _, vs in by_counter.get(n, []) for x in vs]
        if len(vals) != v["counters"] or min(vals) != v["counter_min"] or \
                max(vals) != v["counter_max"]:
            fail("counter %r: %r; summary %r" % (n, vals, v))
    heap = [x for _, vs in by_counter.get("heap live bytes", []) for x in vs]
    if summary["allocs"] and (max(heap) != summary["live_peak_bytes"] or
                              heap[-1] != summary["live_end_bytes"]):
        fail("heap live bytes %r; summary peak %d end %d" %
             (heap, summary["live_peak_bytes"], summary["live_end_bytes"]))
    rss = [x for _, vs in by_counter.get("RSS", []) for x in vs]
    if len(rss) != summary["rss_samples"] or (rss and (
            max(rss) != summary["rss_peak_sampled_bytes"] or
            min(rss) != summary["rss_sampled_min_bytes"])):
        fail("RSS %r; summary %d samples" % (rss, summary["rss_samples"]))
    lost = sum(i["args"].get("count", 0) for i in instants if i["name"].startswith("lost "))
    # lost records of every reason: events lost, and the sampler's late ticks
    if lost != summary["events_lost"] + summary["rss_ticks_skipped"]:
        fail("lost instants count %d records; summary %d + %d sampler ticks" %
             (lost, summary["events_lost"], summary["rss_ticks_skipped"]))

    threads = {}
    for t in tracks.values():
        th = one(t, "thread")
        if th:
            threads["%d/%d" % (one(th, "pid"), one(th, "tid"))] = one(th, "thread_name")
    for th in summary["threads"]:
        k = "%d/%d" % (th["pid"], th["tid"])
        if th["name"] and threads.get(k) != th["name"]:
            fail("thread %s named %r, summary %r" % (k, threads.get(k), th["name"]))
    cmdlines = {}
    for t in tracks.values():
        p = one(t, "process")
        if p and "cmdline" in p:
            cmdlines[one(p, "pid")] = p["cmdline"]
    counter_tracks = {}
    for n, lst in by_counter.items():
        counter_tracks[n] = [
            (lambda th: "%d/%d" % (one(th, "pid"), one(th, "tid")) if th else "process")(
                one(tracks.get(one(tracks[t], "parent_uuid"), {}), "thread"))
            for t, _ in lst]
    print(json.dumps({
        "events": events,
        "slices": {n: len(v) for n, v in slices.items()},
        "slice_total_ns": {n: sum(v) for n, v in slices.items()},
        "unfinished": unfinished,
        "nesting": nesting,
        "begin_ts": begin_ts,
        "instants": [[i["name"], i["args"]] for i in instants],
        "counters": {n: [vs for _, vs in lst] for n, lst in by_counter.items()},
        "counter_tracks": counter_tracks,
        "threads": threads,
        "processes": {str(k): v for k, v in procs_described.items()},
        "cmdlines": {str(k): v for k, v in cmdlines.items()},
    }, sort_keys=True))


main()

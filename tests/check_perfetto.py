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


UNKNOWN_FIELD = re.compile(r"^\d+[: {]")
INTEGER = re.compile(r"^-?\d+$")


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
        if line[0].isdigit() and UNKNOWN_FIELD.match(line):
            fail("unknown field in the output (wrong field number?): " + line)
        if line.endswith("{"):
            key = line[:-1].strip()
            child = {}
            stack[-1].setdefault(key, []).append(child)
            stack.append(child)
            continue
        key, _, val = line.partition(": ")
        if val.startswith('"') and "\\" not in val:
            val = val[1:-1]  # protoc escapes every byte outside printable ASCII
        elif val.startswith('"'):
            val = bytes(val[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode(
                "utf-8", "replace")
        elif val in ("true", "false"):
            val = val == "true"
        elif INTEGER.match(val):
            val = int(val)
        stack[-1].setdefault(key, []).append(val)
    return root


def fail(msg):
    print("check_perfetto: " + msg)
    sys.exit(1)


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default


def exact_double(v):
    """Whether the whole number v is exactly a double (its bits span at most 53)."""
    u = abs(v)
    return u == 0 or (u >> ((u & -u).bit_length() - 1)) < (1 << 53)


def counter_value(te):
    """A counter event's value, checked to be in the shorter exact encoding: double_counter_value
    (tag and 8 bytes) for negative values and values from 2^56 that a double holds exactly,
    counter_value (an int64 varint: 10 bytes for any negative value) otherwise. Every counter
    trace-dump writes is a whole number."""
    v = one(te, "counter_value")
    if v is not None:
        if (v < 0 or v >= 1 << 56) and exact_double(v):
            fail("counter_value %d: double_counter_value holds it exactly in fewer bytes" % v)
        return v
    d = one(te, "double_counter_value")
    if d is None:
        fail("a counter event without a value")
    f = float(d)
    if f != int(f):
        fail("double_counter_value %r: not a whole number" % d)
    v = int(f)
    if not (v < 0 or v >= 1 << 56):
        fail("double_counter_value %r: counter_value is shorter" % d)
    return v


def split_heap(trace):
    """Takes the heap profile out of trace (its ProfilePackets and the clock snapshot that
    declares CLOCK_MONOTONIC_COARSE for them, before the first) and checks it as trace
    processor reads it (profile_module.cc, profile_packet_sequence_state.cc): one sequence of
    its own, ProfilePacket.index from 0 in order, packet times in order; within a dump (packets
    up to one not continued) every iid interned once and every reference defined (a frame's
    name and mapping, a mapping's build-id and path, a callstack's frames, none empty, a
    sample's callstack); each process dump on the packet's time, heap libc.malloc; per process
    and callstack the values never go down from one dump to the next, and freed never exceeds
    allocated. Returns {pid: [dump, ...]}, a dump {"ts", "samples": {"f1;f2;...": [allocated,
    freed, allocs, frees]}, "interval", "guardrail"} (frames outermost first)."""
    kept, heap = [], {}
    seq, index, last_ts, coarse, group = None, 0, None, None, None
    prev = {}  # (pid, callstack) -> values of the last dump
    for pkt in trace.get("packet", []):
        cs = one(pkt, "clock_snapshot")
        if cs and any(one(c, "clock_id") == 4 for c in cs.get("clocks", [])):
            if seq is not None or one(pkt, "trusted_packet_sequence_id") != 1:
                fail("CLOCK_MONOTONIC_COARSE declared after a dump, or not on sequence 1")
            vals = {one(c, "clock_id"): one(c, "timestamp") for c in cs["clocks"]}
            if len(vals) != 2 or len(set(vals.values())) != 1 or one(cs, "primary_trace_clock"):
                fail("the heap's clock snapshot %r: CLOCK_MONOTONIC_COARSE equal to the trace "
                     "clock, nothing else" % vals)
            coarse = vals[4]
            continue
        pp = one(pkt, "profile_packet")
        if not pp:
            kept.append(pkt)
            continue
        ts = one(pkt, "timestamp")
        s = one(pkt, "trusted_packet_sequence_id")
        if coarse is None or ts < coarse:
            fail("a profile packet before CLOCK_MONOTONIC_COARSE is declared")
        if seq is None:
            seq = s
        elif s != seq:
            fail("profile packets on sequences %d and %d: one, for the deltas" % (seq, s))
        if one(pp, "index", 0) != index:
            fail("ProfilePacket.index %r, expected %d" % (one(pp, "index"), index))
        index += 1
        if last_ts is not None and ts < last_ts:
            fail("a dump at %d after one at %d" % (ts, last_ts))
        last_ts = ts
        if group is None:
            group = {"strings": {}, "maps": {}, "frames": {}, "stacks": {}, "dumps": []}

        def put(table, iid, v):
            if not iid or iid in group[table]:
                fail("%s iid %r interned twice (or 0) in a dump" % (table, iid))
            group[table][iid] = v

        for e in pp.get("strings", []):
            put("strings", one(e, "iid"), one(e, "str", ""))
        for e in pp.get("mappings", []):
            put("maps", one(e, "iid"), e)
        for e in pp.get("frames", []):
            put("frames", one(e, "iid"), e)
        for e in pp.get("callstacks", []):
            put("stacks", one(e, "iid"), e.get("frame_ids", []))
        for d in pp.get("process_dumps", []):
            if one(d, "timestamp") != ts or one(d, "heap_name") != "libc.malloc":
                fail("process dump %r at %d" % ({k: v for k, v in d.items()
                                                 if k != "samples"}, ts))
            group["dumps"].append(d)
        if one(pp, "continued"):
            continue
        g, group = group, None
        strs = g["strings"]

        def string(i):
            if i not in strs:
                fail("string iid %r not interned in its dump" % i)
            return strs[i]

        for m in g["maps"].values():
            string(one(m, "build_id"))
            for i in m.get("path_string_ids", []):
                string(i)
        names = {}
        for iid, fr in g["frames"].items():
            if one(fr, "mapping_id") not in g["maps"]:
                fail("frame %d: mapping %r not interned (trace processor drops it)" %
                     (iid, one(fr, "mapping_id")))
            names[iid] = string(one(fr, "function_name_id"))
        dumps = {}
        for d in g["dumps"]:
            pid = one(d, "pid")
            dump = dumps.get(pid)
            if dump is None:
                dump = dumps[pid] = {"ts": ts, "samples": {},
                                     "interval": one(d, "sampling_interval_bytes", 0),
                                     "guardrail": bool(one(d, "hit_guardrail"))}
                heap.setdefault(pid, []).append(dump)
            for smp in d.get("samples", []):
                cid = one(smp, "callstack_id")
                if not g["stacks"].get(cid):
                    fail("sample of callstack %r, empty or not interned" % cid)
                for f in g["stacks"][cid]:
                    if f not in names:
                        fail("callstack %d: frame %r not interned" % (cid, f))
                key = ";".join(names[f] for f in g["stacks"][cid])
                v = [one(smp, k, 0) for k in ("self_allocated", "self_freed", "alloc_count",
                                             "free_count")]
                if v[1] > v[0] or v[3] > v[2]:
                    fail("pid %d %s: freed %r more than allocated" % (pid, key, v))
                old = prev.get((pid, cid), [0, 0, 0, 0])
                if any(a < b for a, b in zip(v, old)):
                    fail("pid %d %s: %r after %r: cumulative values went down" %
                         (pid, key, v, old))
                prev[(pid, cid)] = v
                got = dump["samples"].setdefault(key, [0, 0, 0, 0])
                for k in range(4):
                    got[k] += v[k]
    if group is not None:
        fail("the last profile packet says continued")
    trace["packet"] = kept
    return heap


def check_heap_summary(heap, summary):
    """Without sampling the last dump of each process holds every allocation the summary
    counts for it (live_by_process), bytes and number."""
    for p in summary.get("live_by_process") or []:
        dumps = heap.get(p["pid"])
        if not dumps or dumps[-1]["interval"]:
            continue
        got = [sum(v[0] for v in dumps[-1]["samples"].values()),
               sum(v[2] for v in dumps[-1]["samples"].values())]
        if not dumps[-1]["guardrail"] and got != [p["alloc_bytes"], p["allocs"]]:
            fail("process %d: the heap profile holds %r bytes, allocations; the summary "
                 "%d, %d" % (p["pid"], got, p["alloc_bytes"], p["allocs"]))


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


def main_multi():
    """--multi OUT.txt CHROME.json LABEL SUMMARY [LABEL SUMMARY]...: the export of several
    FILEs. Trace N (from 1, in the order given) is the pid range N x 10000000; per trace the
    slices (count and total per name), unfinished slices, instants, counters, RSS samples, heap
    values and exits agree with that trace's summary; every process name starts with its
    LABEL ("HOST TRACE: "); events come in CLOCK_REALTIME order (spans closed at the end
    apart), each trace's within its recording, and every slice begin, instant and counter is,
    trace and time from the earliest start exactly, the one `trace-dump chrome` of the same
    FILEs has at that place."""
    import decimal
    trace = parse_text(open(sys.argv[2], encoding="utf-8").read())
    split_heap(trace)
    chrome = json.load(open(sys.argv[3]), parse_float=decimal.Decimal)
    labels = sys.argv[4::2]
    sums = [json.load(open(p)) for p in sys.argv[5::2]]
    n = len(sums)
    pr = 10000000
    start_rt = chrome["otherData"]["start_realtime_ns"]
    seqs, tracks = {}, {}
    per = [{"slices": {}, "unfinished": 0, "instants": 0, "exits": 0, "counters": {},
            "heap": [], "rss": [], "ts": []} for _ in range(n)]
    stacks = {}
    order = []  # (trace, ts - start_rt, kind) in packet order
    prev = None
    for pkt in trace.get("packet", []):
        seq = one(pkt, "trusted_packet_sequence_id")
        flags = one(pkt, "sequence_flags", 0)
        if flags & 1:
            st = seqs[seq] = {"names": {}, "ts": None}
            d = one(pkt, "trace_packet_defaults")
            st["clock"] = one(d, "timestamp_clock_id")
            st["track"] = one(one(d, "track_event_defaults"), "track_uuid")
            for c in one(pkt, "clock_snapshot", {}).get("clocks", []):
                if one(c, "clock_id") == 64:
                    st["ts"] = one(c, "timestamp")
                elif one(c, "clock_id") != 1:
                    fail("sequence %d: clock 64 pinned to clock %r, not REALTIME" %
                         (seq, one(c, "clock_id")))
        st = seqs.get(seq)
        cs = one(pkt, "clock_snapshot")
        if seq == 1 and cs and one(cs, "primary_trace_clock") != "BUILTIN_CLOCK_REALTIME":
            fail("the trace clock is not REALTIME: %r" % one(cs, "primary_trace_clock"))
        idata = one(pkt, "interned_data")
        if idata:
            for en in idata.get("event_names", []):
                st["names"][one(en, "iid")] = one(en, "name")
        td = one(pkt, "track_descriptor")
        if td:
            tracks[one(td, "uuid")] = td
            p = one(td, "process")
            if p and one(p, "process_name") is not None:
                i = one(p, "pid") // pr - 1
                if not 0 <= i < n or not one(p, "process_name").startswith(labels[i] + ": "):
                    fail("process %d named %r: not labelled %r" %
                         (one(p, "pid"), one(p, "process_name"), labels[i]))
            th = one(td, "thread")
            if th and one(th, "pid") // pr != one(th, "tid") // pr:
                fail("thread %d of process %d: another trace's range" %
                     (one(th, "tid"), one(th, "pid")))
            continue
        te = one(pkt, "track_event")
        if not te:
            continue
        ts = one(pkt, "timestamp")
        clock = one(pkt, "timestamp_clock_id", st["clock"])
        if clock == 64:
            st["ts"] += ts
            ts = st["ts"]
        elif clock != 1:
            fail("event on clock %r (not REALTIME)" % clock)
        track = one(te, "track_uuid", st["track"])
        t = tracks[track]
        while one(t, "process") is None and one(t, "thread") is None:
            t = tracks[one(t, "parent_uuid")]
        i = one(one(t, "process") or one(t, "thread"), "pid") // pr - 1
        r = per[i]
        typ = one(te, "type")
        name = one(te, "name")
        if one(te, "name_iid") is not None:
            name = st["names"][one(te, "name_iid")]
        annots = {one(a, "name"): (one(a, "int_value") if "int_value" in a else
                                   one(a, "bool_value"))
                  for a in te.get("debug_annotations", [])}
        if not annots.get("unfinished"):
            if prev is not None and ts < prev:
                fail("trace %d: an event at %d after one at %d: not in realtime order" %
                     (i + 1, ts, prev))
            prev = ts
        r["ts"].append(ts)
        stack = stacks.setdefault(track, [])
        if typ == "TYPE_SLICE_BEGIN":
            stack.append((name, ts))
            order.append((i, ts - start_rt, "B"))
        elif typ == "TYPE_SLICE_END":
            nm, t0 = stack.pop()
            if annots.get("unfinished"):
                r["unfinished"] += 1
            else:
                r["slices"].setdefault(nm, []).append(ts - t0)
        elif typ == "TYPE_INSTANT":
            if name.startswith(("exited with status ", "killed by signal ")):
                r["exits"] += 1
            elif not name.startswith("lost ") and "value" in annots:
                r["instants"] += 1
                order.append((i, ts - start_rt, "i"))
        elif typ == "TYPE_COUNTER":
            cn = one(tracks[track], "name")
            if cn == "heap live bytes":
                r["heap"].append(counter_value(te))
            elif cn == "RSS":
                r["rss"].append(counter_value(te))
            elif cn != "RSS trace buffers":
                r["counters"][cn] = r["counters"].get(cn, 0) + 1
                order.append((i, ts - start_rt, "C"))
    for i, (r, s) in enumerate(zip(per, sums)):
        rt = s["records_by_type"]
        got = sum(len(v) for v in r["slices"].values()) + r["unfinished"]
        want = {
            "slices": rt["span_begin"] + rt["func_enter"], "unfinished": s["spans_open_at_end"],
            "instants": rt["instant"], "rss": s["rss_samples"],
            "exits": sum(1 for pr in s["processes"] if pr["exit"] is not None or
                         pr["exit_signal"] is not None)}
        have = {"slices": got, "unfinished": r["unfinished"], "instants": r["instants"],
                "exits": r["exits"], "rss": len(r["rss"])}
        if have != want:
            fail("trace %d (%s): %r in the export; the summary says %r" %
                 (i + 1, labels[i], have, want))
        for nm in s["names"]:
            sl = r["slices"].get(nm["name"], [])
            if len(sl) != nm["spans"] or sum(sl) != nm["span_total_ns"] or \
                    r["counters"].get(nm["name"], 0) != nm["counters"]:
                fail("trace %d: %r: %d slices, %d ns, %d counters; summary %r" %
                     (i + 1, nm["name"], len(sl), sum(sl), r["counters"].get(nm["name"], 0),
                      nm))
        if s["allocs"] and (max(r["heap"]) != s["live_peak_bytes"] or
                            r["heap"][-1] != s["live_end_bytes"]):
            fail("trace %d: heap %r; summary peak %d end %d" %
                 (i + 1, r["heap"][-5:], s["live_peak_bytes"], s["live_end_bytes"]))
        t0 = s["start_realtime_ns"]
        if r["ts"] and (min(r["ts"]) < t0 - 10**9 or max(r["ts"]) > t0 + s["duration_ns"] + 10**9):
            fail("trace %d: events from %d to %d, its recording started at %d on "
                 "CLOCK_REALTIME and lasted %d ns" %
                 (i + 1, min(r["ts"]), max(r["ts"]), t0, s["duration_ns"]))
    # the same FILEs in trace-dump chrome: same events, same places, same times
    corder = []
    for e in chrome["traceEvents"]:
        if e["ph"] == "B" or (e["ph"] == "i" and e["s"] == "t" and "value" in e["args"]) or \
                (e["ph"] == "C" and "value" in e["args"]):
            corder.append((e["pid"] // pr - 1, int(e["ts"] * 1000), e["ph"]))
    if corder != order:
        k = next((j for j, (a, b) in enumerate(zip(corder, order)) if a != b),
                 min(len(corder), len(order)))
        fail("%d events (trace, ns from the earliest start, kind); chrome has %d; first "
             "difference at %d: %r, chrome %r" %
             (len(order), len(corder), k, order[k:k + 3], corder[k:k + 3]))
    print(json.dumps({"traces": n, "events": [len(r["ts"]) for r in per],
                      "slices": [sum(len(v) for v in r["slices"].values()) for r in per],
                      "merged": len(order),
                      "switches": sum(1 for a, b in zip(order, order[1:]) if a[0] != b[0])},
                     sort_keys=True))


def main():
    if sys.argv[1] == "--split":
        return main_split()
    if sys.argv[1] == "--heap":  # --heap OUT.txt: the heap profile's checks and report only
        print(json.dumps(split_heap(parse_text(open(sys.argv[2], encoding="utf-8").read())),
                         sort_keys=True))
        return
    if sys.argv[1] == "--multi":
        return main_multi()
    trace = parse_text(open(sys.argv[1], encoding="utf-8").read())
    heap_profile = split_heap(trace)
    # "-" instead of the summary: one file of --split-size, checked alone (protocol, balance)
    summary = json.load(open(sys.argv[2])) if sys.argv[2] != "-" else None
    seqs = {}  # id -> {"names": {iid: name}, "ts": last, "track": default}
    tracks = {}  # uuid -> descriptor
    thread_uuids = {}  # "pid/tid" -> {uuid}
    thread_names = {}  # uuid -> [every name its descriptors gave, in order]
    procs_described = {}
    clocks = {}  # the trace's clock snapshot: clock id -> timestamp
    slices = {}  # name -> [durations]
    unfinished = {}  # name -> count
    cut_by_loss = {}  # name -> count: open when their thread lost events (FORMAT.md)
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
        # trace_packet.proto: a sequence with TracePacketDefaults "requires that any future
        # packet emitted on the same sequence specifies the SEQ_NEEDS_INCREMENTAL_STATE flag"
        if seq != 1 and not flags & 1 and not flags & 2:
            fail("sequence %d: a packet after the first without SEQ_NEEDS_INCREMENTAL_STATE" %
                 seq)
        idata = one(pkt, "interned_data")
        if idata:
            for en in idata.get("event_names", []):
                iid = one(en, "iid")
                if iid in st["names"]:
                    fail("sequence %d: iid %d interned twice" % (seq, iid))
                st["names"][iid] = one(en, "name")
        if seq == 1 and one(pkt, "clock_snapshot"):
            for c in one(pkt, "clock_snapshot").get("clocks", []):
                cid = one(c, "clock_id")
                if cid not in (1, 3):
                    fail("the trace's clock snapshot declares clock %r: the file knows only "
                         "MONOTONIC (3) and REALTIME (1)" % cid)
                clocks[cid] = one(c, "timestamp")
        td = one(pkt, "track_descriptor")
        if td:
            uuid = one(td, "uuid")
            tracks[uuid] = td
            th = one(td, "thread")
            if th:
                k = "%d/%d" % (one(th, "pid"), one(th, "tid"))
                thread_uuids.setdefault(k, set()).add(uuid)
                thread_names.setdefault(uuid, []).append(one(th, "thread_name"))
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
            elif annots.get("cut_by_loss"):
                cut_by_loss[n] = cut_by_loss.get(n, 0) + 1
            else:
                slices.setdefault(n, []).append(ts - t0)
        elif typ == "TYPE_INSTANT":
            instants.append({"name": name, "track": track, "ts": ts, "args": annots})
        elif typ == "TYPE_COUNTER":
            if one(tracks[track], "counter") is None:
                fail("counter value on a track that is not a counter track")
            counters.setdefault(track, []).append(counter_value(te))
        else:
            fail("event type %r" % typ)
    exits = {}  # pid -> [(name, annotations)]: every exit instant of a process
    for i in instants:
        if i["name"] == "exited" or i["name"].startswith(("exited with status ",
                                                          "killed by signal ")):
            p = one(tracks[i["track"]], "process")
            if p is None:
                fail("exit instant %r not on a process track" % i["name"])
            exits.setdefault(one(p, "pid"), []).append((i["name"], i["args"]))
        elif i["name"] == "exit":
            fail("an exit instant named 'exit' (%r): say how it ended" % i["args"])
    for pid, lst in exits.items():
        if len(lst) != 1:
            fail("process %d has %d exit instants %r: one a process" % (pid, len(lst), lst))
    for t, s in stacks.items():
        if s:
            fail("track %d: slices never ended: %r" % (t, s))
    # one track per thread for the whole trace (an exec renames it, never a second track)
    for k, us in thread_uuids.items():
        if len(us) != 1:
            fail("thread %s has %d tracks %r: one a thread" % (k, len(us), sorted(us)))
    # a thread's track is named from the start with its name when the trace knows one:
    # "tid N" then renamed is a placeholder the trace did not need
    for u, names in thread_names.items():
        if len(names) > 1 and re.match(r"^tid \d+$", names[0] or ""):
            fail("thread track %d first named %r, then %r" % (u, names[0], names[1:]))

    if summary is None:
        print(json.dumps({"events": events, "cut": cut, "pieces": pieces,
                          "begins": {n: len(v) for n, v in begin_ts.items()},
                          "first_ts": first_ts, "last_ts": last_ts}, sort_keys=True))
        return
    check_heap_summary(heap_profile, summary)
    # against the summary: every begin (span or function) is one slice, ended or unfinished
    rt = summary["records_by_type"]
    n_slices = (sum(len(v) for v in slices.values()) + sum(unfinished.values()) +
                sum(cut_by_loss.values()))
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
    by_proc = summary.get("live_by_process") or []
    if len(by_proc) > 1:
        # a track a process: each against the summary's line for that process
        want = {p["pid"]: (p["live_peak_bytes"], p["live_end_bytes"]) for p in by_proc}
        for t, vs in by_counter.get("heap live bytes", []):
            pid = one(one(tracks[one(tracks[t], "parent_uuid")], "process"), "pid")
            if (max(vs), vs[-1]) != want.get(pid):
                fail("process %d: heap live bytes peak %d end %d; summary %r" %
                     (pid, max(vs), vs[-1], want.get(pid)))
    elif summary["allocs"] and (max(heap) != summary["live_peak_bytes"] or
                                heap[-1] != summary["live_end_bytes"]):
        fail("heap live bytes %r; summary peak %d end %d" %
             (heap, summary["live_peak_bytes"], summary["live_end_bytes"]))
    def proc_of(t):
        return one(one(tracks.get(one(tracks[t], "parent_uuid"), {}), "process") or {}, "pid")

    # the summary's RSS figures are the program's: its own track (each process has one)
    rss = [x for t, vs in by_counter.get("RSS", []) if proc_of(t) in (summary["pid"], None)
           for x in vs]
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
    for k, us in thread_uuids.items():
        threads[k] = thread_names[min(us)][-1]
    # one thread track per summary thread, named as the summary names it
    sum_threads = {"%d/%d" % (th["pid"], th["tid"]): th["name"] for th in summary["threads"]}
    if sorted(threads) != sorted(sum_threads):
        fail("thread tracks %r; the summary's threads %r" % (sorted(threads),
                                                             sorted(sum_threads)))
    for k, name in sum_threads.items():
        if name and threads.get(k) != name:
            fail("thread %s named %r, summary %r" % (k, threads.get(k), name))
    cmdlines = {}
    for t in tracks.values():
        p = one(t, "process")
        if p and "cmdline" in p:
            cmdlines[one(p, "pid")] = p["cmdline"]
    # exits as the summary's processes say them: one instant each, same code or signal
    for pr in summary["processes"]:
        code, sig = pr["exit"], pr["exit_signal"]
        got = exits.get(pr["pid"], [])
        if code is not None:
            want = [("exited with status %d" % code, {"exit_code": code})]
        elif sig is not None:
            want = [("killed by signal %d" % sig, {"signal": sig})]
        else:
            want = [x for x in got if x[0] == "exited" and not x[1]]
        if [(n, {a: v for a, v in args.items() if a != "core_dumped"}) for n, args in got] \
                != want:
            fail("process %d: exit instants %r; the summary says exit %r, signal %r" %
                 (pr["pid"], got, code, sig))
    for pid in exits:
        if pid not in {pr["pid"] for pr in summary["processes"]}:
            fail("an exit instant for process %d, which the summary does not list" % pid)
    counter_tracks = {}
    for n, lst in by_counter.items():
        counter_tracks[n] = [
            (lambda th: "%d/%d" % (one(th, "pid"), one(th, "tid")) if th else "process")(
                one(tracks.get(one(tracks[t], "parent_uuid"), {}), "thread"))
            for t, _ in lst]
    print(json.dumps({
        "events": events,
        "exits": {str(k): [n for n, _ in v] for k, v in exits.items()},
        "slices": {n: len(v) for n, v in slices.items()},
        "slice_total_ns": {n: sum(v) for n, v in slices.items()},
        "unfinished": unfinished,
        "nesting": nesting,
        "begin_ts": begin_ts,
        "instants": [[i["name"], i["args"]] for i in instants],
        "counters": {n: [vs for _, vs in lst] for n, lst in by_counter.items()},
        "counter_tracks": counter_tracks,
        "clocks": {str(k): v for k, v in clocks.items()},
        "heap": {str(k): v for k, v in heap_profile.items()},
        "threads": threads,
        "thread_tracks": len(thread_names),
        "processes": {str(k): v for k, v in procs_described.items()},
        "cmdlines": {str(k): v for k, v in cmdlines.items()},
    }, sort_keys=True))


main()

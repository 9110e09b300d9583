#!/usr/bin/env python3
"""report.py - turn the SUMMARY lines of one benchmark run into build/bench/report.md and .svg.

Purpose: the reporting half of the harness (bench/run.sh runs the programs, bench/peers.sh the
peer tools). Every number in the report comes from a SUMMARY line of the files it is given;
nothing is typed by hand, and a benchmark that did not run is listed with the reason.

Files (all in the bench output folder, default build/bench):
  summary.txt        SUMMARY lines of the project's bench programs (written by `finish`)
  runs.txt           one line per program: bench<TAB>status<TAB>seconds<TAB>exit<TAB>command<TAB>reason
                     (runs.raw is the same as run.sh saw it, before the outputs were judged)
  machine.txt        "key: value" lines describing the machine (written by `finish`)
  peers-summary.txt  SUMMARY bench=peers lines, plus CMD/NOTE lines (peers.sh), if present
  out/NAME.out       each program's own readable output, quoted in the report
SUMMARY grammar: `SUMMARY bench=NAME case=CASE key=value ...`; a key K with K_min and K_max
beside it is a median with its spread.

Subcommands (one Python start per harness run: it costs ~0.4 s on this machine):
  finish DIR MODE [--print]     after bench/run.sh ran the programs (DIR/runs.raw, DIR/out/,
                                DIR/run-start.txt): judge each program's output (it must hold a
                                well-formed SUMMARY line of its own bench), write runs.txt,
                                summary.txt and machine.txt, render the report; exit 1 when a
                                benchmark did not run cleanly
  render DIR                    write DIR/report.md and DIR/report.svg, print the report

Only the Python standard library (Debian's python3); no third-party packages.
"""

import datetime
import html
import math
import os
import platform
import re
import sys

NOISY_SPREAD = 0.20  # max/min - 1 above this flags a figure as noisy
OUTPUT_LINES = 60  # lines of each program's own output quoted in the report

TOKEN_RE = re.compile(r"^([A-Za-z0-9_.-]+)=(\S+)$")
BAD_NUMBERS = {"nan", "-nan", "inf", "-inf", "+inf", "infinity"}


# ---- parsing -------------------------------------------------------------------------------

def parse_value(text):
    """A float when the value is a finite number, else the text itself."""
    try:
        v = float(text)
    except ValueError:
        return text
    return v if math.isfinite(v) else text


def parse_summary_line(line):
    """Return (fields dict, None) for a well-formed SUMMARY line, or (None, reason)."""
    tokens = line.split()
    if not tokens or tokens[0] != "SUMMARY":
        return None, "does not start with SUMMARY"
    fields = {}
    raw = {}
    order = []
    for tok in tokens[1:]:
        m = TOKEN_RE.match(tok)
        if not m:
            return None, "token %r is not key=value" % tok
        key, val = m.group(1), m.group(2)
        if key in fields:
            return None, "key %r repeated" % key
        if val.lower() in BAD_NUMBERS:
            return None, "key %r has no finite value (%s)" % (key, val)
        fields[key] = parse_value(val)
        raw[key] = val
        order.append(key)
    if not isinstance(fields.get("bench"), str) or not isinstance(fields.get("case"), str):
        return None, "bench= and case= are required"
    if not any(isinstance(fields[k], float) for k in order if k not in ("bench", "case")):
        return None, "no numeric figure"
    fields["_order"] = [k for k in order if k not in ("bench", "case")]
    fields["_raw"] = raw
    return fields, None


def read_summaries(path):
    """SUMMARY records, NOTE and CMD lines, header comments and malformed lines of one file."""
    out = {"records": [], "notes": [], "cmds": [], "header": {}, "bad": []}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("SUMMARY"):
                rec, why = parse_summary_line(line)
                if rec:
                    out["records"].append(rec)
                else:
                    out["bad"].append((line, why))
            elif line.startswith("NOTE\t"):
                parts = line.split("\t", 2)
                if len(parts) == 3:
                    out["notes"].append((parts[1], parts[2]))
            elif line.startswith("CMD\t"):
                parts = line.split("\t", 2)
                if len(parts) == 3:
                    out["cmds"].append((parts[1], parts[2]))
            elif line.startswith("# ") and "=" in line:
                for tok in line[2:].split("\t"):
                    if "=" in tok:
                        k, v = tok.split("=", 1)
                        out["header"][k.strip()] = v.strip()
    return out


def read_runs(path):
    runs = []
    if not os.path.exists(path):
        return runs
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            parts = raw.rstrip("\n").split("\t")
            if len(parts) >= 5 and not raw.startswith("#"):
                runs.append({
                    "bench": parts[0], "status": parts[1], "seconds": parts[2],
                    "exit": parts[3], "command": parts[4],
                    "reason": parts[5] if len(parts) > 5 else "",
                })
    return runs


def read_kv(path):
    kv = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                if ": " in raw:
                    k, v = raw.rstrip("\n").split(": ", 1)
                    kv.append((k, v))
    return kv


# ---- figures -------------------------------------------------------------------------------

def figures(rec):
    """Rows (name, median, min, max) of one record: K with K_min/K_max folded into one row."""
    keys = rec["_order"]
    keyset = set(keys)
    rows = []
    for k in keys:
        if k.endswith("_min") or k.endswith("_max"):
            base = k[:-4]
            if base in keyset:
                continue  # shown in base's row
        lo = rec.get(k + "_min")
        hi = rec.get(k + "_max")
        rows.append((k, rec[k], lo if isinstance(lo, float) else None,
                     hi if isinstance(hi, float) else None))
    return rows


def spread(lo, hi):
    """max/min - 1, or None when it means nothing (missing, zero or negative minimum)."""
    if lo is None or hi is None or lo <= 0 or hi < lo:
        return None
    return hi / lo - 1.0


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10000:
        return "{:,.0f}".format(v)
    if a >= 100:
        return "{:.1f}".format(v).rstrip("0").rstrip(".")
    return "{:.4g}".format(v)


def md_escape(text):
    return text.replace("|", "\\|")


# ---- machine -------------------------------------------------------------------------------

def machine_info():
    def read(path):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    cpuinfo = read("/proc/cpuinfo")
    model = next((l.split(":", 1)[1].strip() for l in cpuinfo.splitlines()
                  if l.startswith("model name")), platform.processor() or "unknown")
    flags = next((l.split(":", 1)[1].split() for l in cpuinfo.splitlines()
                  if l.startswith("flags")), [])
    mem = next((l.split(":", 1)[1].strip() for l in read("/proc/meminfo").splitlines()
                if l.startswith("MemTotal")), "unknown")
    try:
        mem_gib = "%.1f GiB" % (int(mem.split()[0]) / 1048576.0)
    except (ValueError, IndexError):
        mem_gib = mem
    clock = read("/sys/devices/system/clocksource/clocksource0/current_clocksource").strip()
    load = read("/proc/loadavg").split()[:3]
    uname = os.uname()
    return [
        ("date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %z")),
        ("host", uname.nodename),
        ("cores", str(os.cpu_count())),
        ("cpu", model),
        ("invariant tsc", "yes" if "constant_tsc" in flags and "nonstop_tsc" in flags
         else "no"),
        ("kernel", "%s %s %s" % (uname.sysname, uname.release, uname.machine)),
        ("clocksource", clock or "unknown"),
        ("memory", mem_gib),
        ("load average at start", " ".join(load) if load else "unknown"),
    ]


# ---- the Markdown report -------------------------------------------------------------------

def case_table(rec):
    lines = ["| figure | median | min | max | spread | |", "|---|---:|---:|---:|---:|---|"]
    noisy = 0
    for name, med, lo, hi in figures(rec):
        sp = spread(lo, hi)
        flag = ""
        if sp is not None and sp > NOISY_SPREAD:
            flag = "noisy"
            noisy += 1
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            md_escape(name), fmt(med), fmt(lo), fmt(hi),
            "" if sp is None else "%.0f %%" % (sp * 100), flag))
    return lines, noisy


def quote_output(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        text = [l.rstrip("\n") for l in f if not l.startswith("SUMMARY")]
    while text and not text[-1].strip():
        text.pop()
    if not text:
        return []
    cut = len(text) > OUTPUT_LINES
    text = text[:OUTPUT_LINES] + (["... (%d more lines in %s)" % (len(text) - OUTPUT_LINES, path)]
                                  if cut else [])
    return ["<details><summary>the program's own output</summary>", "", "```"] + text + \
        ["```", "", "</details>", ""]


def render_markdown(d, summary, runs, machine, peers, svg_written):
    order = []
    for r in runs:
        if r["bench"] not in order:
            order.append(r["bench"])
    for rec in summary["records"]:
        if rec["bench"] not in order:
            order.append(rec["bench"])
    by_bench = {}
    for rec in summary["records"]:
        by_bench.setdefault(rec["bench"], []).append(rec)
    run_of = {r["bench"]: r for r in runs}

    md = ["# trc benchmark report", ""]
    hdr = summary["header"]
    if hdr:
        md.append("Run: `bench/run.sh %s`, started %s, finished %s." % (
            hdr.get("mode", "?"), hdr.get("started", "?"), hdr.get("finished", "?")))
        md.append("")
    md += [
        "Every figure below is copied by `bench/report.py` from a `SUMMARY` line printed in this "
        "run; ratios compare figures measured in the same run. Medians over the runs each "
        "program made (`runs=` where it says); min and max give the spread, and a figure whose "
        "max/min exceeds 1 + %d %% is marked **noisy**: this machine is shared and small, so "
        "treat those as rough." % round(NOISY_SPREAD * 100), ""]

    md += ["## Machine", "", "| | |", "|---|---|"]
    md += ["| %s | %s |" % (md_escape(k), md_escape(v)) for k, v in machine]
    md.append("")

    md += ["## Status", "", "| bench | status | seconds | command |", "|---|---|---:|---|"]
    for b in order:
        r = run_of.get(b)
        if r:
            status = r["status"] + (": " + r["reason"] if r["reason"] else "")
            md.append("| %s | %s | %s | `%s` |" % (b, md_escape(status), r["seconds"],
                                                    md_escape(r["command"])))
        else:
            md.append("| %s | SUMMARY lines only | | |" % b)
    if peers is not None:
        ph = peers["header"]
        md.append("| peers | %s | %s | `%s` |" % (
            md_escape(ph.get("status", "ran") + (": " + ph["reason"] if ph.get("reason") else "")),
            ph.get("seconds", ""), md_escape(ph.get("command", "bench/peers.sh"))))
    md.append("")
    panels = chart_panels(summary["records"] + (peers["records"] if peers else []))
    if panels:
        md += ["## Main comparisons", ""]
        if svg_written:
            md += ["![main comparisons](report.svg)", "",
                   "(`report.svg` beside this file: bars are medians, whiskers min to max.)",
                   ""]
        md += ["| comparison | | median | min | max | from |", "|---|---|---:|---:|---:|---|"]
        for title, unit, got in panels:
            for i, (label, (med, lo, hi), src) in enumerate(got):
                md.append("| %s | %s | %s %s | %s | %s | `%s` |" % (
                    md_escape(title) if i == 0 else "", md_escape(label), fmt(med), unit,
                    fmt(lo), fmt(hi), src))
        md.append("")

    total_noisy = 0
    for b in order:
        md += ["## bench=%s" % b, ""]
        r = run_of.get(b)
        if r:
            if r["status"] in ("ok", "failed", "timeout"):
                md.append("Command: `%s` (workload and method: the program's own output below "
                          "and the design block of `bench/bench_%s.c`)." % (
                              md_escape(r["command"]), b))
                md.append("")
            if r["status"] != "ok":
                md += ["**%s**%s" % (r["status"], ": " + r["reason"] if r["reason"] else ""),
                       ""]
        for rec in by_bench.get(b, []):
            md += ["### case=%s" % rec["case"], ""]
            table, noisy = case_table(rec)
            total_noisy += noisy
            md += table + [""]
        md += quote_output(os.path.join(d, "out", "%s.out" % b))

    if peers is not None:
        md += render_peers(peers)
        total_noisy += sum(case_table(rec)[1] for rec in peers["records"])

    bad = summary["bad"] + (peers["bad"] if peers else [])
    if bad:
        md += ["## Malformed SUMMARY lines (ignored)", ""]
        md += ["- `%s`: %s" % (md_escape(l), md_escape(why)) for l, why in bad]
        md.append("")
    md += ["---", "%d figure(s) marked noisy." % total_noisy, ""]
    return "\n".join(md)


def render_peers(peers):
    md = ["## Peers: the same workloads through the tools people use today", ""]
    ph = peers["header"]
    if ph.get("status", "ran") != "ran":
        md += ["Not measured in this run (%s): %s." % (ph.get("status"), ph.get("reason", "?")),
               ""]
    if ph.get("started"):
        md += ["Measured by `bench/peers.sh` (started %s, finished %s, mode %s)." % (
            ph.get("started"), ph.get("finished", "?"), ph.get("mode", "?")), ""]
    notes = peers["notes"]
    if notes:
        md += ["| peer or case | note |", "|---|---|"]
        md += ["| %s | %s |" % (md_escape(w), md_escape(t)) for w, t in notes]
        md.append("")
    cmds = {}
    for case, cmd in peers["cmds"]:
        cmds.setdefault(case, []).append(cmd)
    seen = set()
    for rec in peers["records"]:
        seen.add(rec["case"])
        md += ["### case=%s" % rec["case"], ""]
        md += case_table(rec)[0] + [""]
        if rec["case"] in cmds:
            md += ["Commands:", ""] + ["- `%s`" % md_escape(c) for c in cmds[rec["case"]]]
            md.append("")
    for case in cmds:
        if case not in seen:
            md += ["### case=%s (no figures)" % case, "", "Commands:", ""]
            md += ["- `%s`" % md_escape(c) for c in cmds[case]] + [""]
    return md


# ---- the SVG chart -------------------------------------------------------------------------

def find(records, bench, case, key):
    for rec in records:
        if rec["bench"] == bench and rec["case"] == case and isinstance(rec.get(key), float):
            lo, hi = rec.get(key + "_min"), rec.get(key + "_max")
            return (rec[key], lo if isinstance(lo, float) else None,
                    hi if isinstance(hi, float) else None)
    return None


# Each chart: title, unit, and bars (label, bench, case, key[, note_key, note_format]). A bar
# is drawn only when its figure is in this run; a chart with no bar is left out. The note, when
# its key is there, is added to the label (e.g. how much a tracer lost while being timed).
CHARTS = [
    ("ns per event, one thread, tight event loop (lower is better)", "ns", [
        ("bare loop: TSC + store", "peers", "events-1t", "bare_ns_per_event"),
        ("trc (trace-run)", "peers", "events-1t", "trc_ns_per_event",
         "trc_lost_pct", "%s %% lost"),
        ("LTTng-UST", "peers", "events-1t", "lttng_ns_per_event",
         "lttng_lost_pct", "%s %% lost"),
    ]),
    ("ns per event, two threads, tight event loop (lower is better)", "ns", [
        ("bare loop: TSC + store", "peers", "events-2t", "bare_ns_per_event"),
        ("trc (trace-run)", "peers", "events-2t", "trc_ns_per_event",
         "trc_lost_pct", "%s %% lost"),
        ("LTTng-UST", "peers", "events-2t", "lttng_ns_per_event",
         "lttng_lost_pct", "%s %% lost"),
    ]),
    ("ns per event, micro-benchmarks (lower is better)", "ns", [
        ("bare loop: TSC + store", "producer", "enabled", "bare_ns"),
        ("trc, live session", "producer", "enabled", "ns_per_event"),
        ("trc, no session", "producer", "disabled", "ns_per_call"),
        ("bare loop (bench=ring)", "ring", "push", "bare_ns_per_record"),
        ("ring push (bench=ring)", "ring", "push", "ns_per_record"),
    ]),
    ("the recorder's drain, ns per record (lower is better)", "ns", [
        ("memcpy of the ring bytes", "drain", "raw", "memcpy_ns_per_record"),
        ("fused drain: ring -> chunk bytes", "drain", "raw", "ns_per_record"),
        ("old drain: struct trc_record", "drain", "raw", "struct_ns_per_record"),
    ]),
    ("slowdown of the malloc workload, x untraced (lower is better)", "x", [
        ("trc (trace-run)", "peers", "malloc", "trc_slowdown"),
        ("heaptrack", "peers", "malloc", "heaptrack_slowdown"),
        ("trc preload (bench=preload)", "preload", "malloc", "ratio"),
    ]),
    ("slowdown of the call-heavy workload, x untraced (lower is better)", "x", [
        ("trc -finstrument-functions", "peers", "calls", "trc_slowdown"),
        ("uftrace -pg", "peers", "calls", "uftrace_slowdown"),
        ("trc (bench=preload)", "preload", "calls", "ratio"),
    ]),
    ("events per second with RSS read in-band vs out-of-band (higher is better)", "ev/s", [
        ("no RSS", "rss", "none", "events_per_s"),
        ("in-band every 1000th event", "rss", "inband-1000", "events_per_s"),
        ("in-band every event", "rss", "inband", "events_per_s"),
        ("out-of-band sampler 10 Hz", "rss", "oob", "events_per_s"),
    ]),
    ("read-back speed, events per second (higher is better)", "ev/s", [
        ("trace-dump summary", "peers", "events-1t", "trc_read_events_per_s"),
        ("babeltrace2", "peers", "events-1t", "lttng_read_events_per_s"),
    ]),
]

SVG_W = 960
LABEL_W = 290
BAR_H = 22
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"]


def chart_panels(records):
    """The CHARTS that have figures in this run: (title, unit, [(label, (med, lo, hi), src)])."""
    panels = []
    for title, unit, bars in CHARTS:
        got = []
        for bar in bars:
            label, b, c, k = bar[:4]
            v = find(records, b, c, k)
            if v is None:
                continue
            if len(bar) > 4:
                note = find(records, b, c, bar[4])
                if note is not None:
                    label = "%s, %s" % (label, bar[5] % fmt(note[0]))
            got.append((label, v, "bench=%s case=%s %s" % (b, c, k)))
        if got:
            panels.append((title, unit, got))
    return panels


def render_svg(records):
    panels = chart_panels(records)
    if not panels:
        return None
    out = []
    y = 20
    for title, unit, got in panels:
        top = max(max(v[0], v[2] or v[0]) for _, v, _ in got)
        top = top if top > 0 else 1.0
        plot_w = SVG_W - LABEL_W - 110
        out.append('<text x="10" y="%d" class="t">%s</text>' % (y + 14, html.escape(title)))
        y += 26
        for i, (label, (med, lo, hi), _) in enumerate(got):
            w = max(1.0, plot_w * med / top) if med > 0 else 0
            color = PALETTE[i % len(PALETTE)]
            out.append('<text x="%d" y="%d" class="l" text-anchor="end">%s</text>' % (
                LABEL_W - 8, y + 15, html.escape(label)))
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
                LABEL_W, y + 2, w, BAR_H - 4, color))
            if lo is not None and hi is not None and top > 0:
                x1 = LABEL_W + plot_w * max(lo, 0) / top
                x2 = LABEL_W + plot_w * max(hi, 0) / top
                cy = y + BAR_H / 2
                out.append('<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" '
                           'class="w"/>' % (x1, cy, x2, x1, cy - 5, cy + 5, x2, cy - 5, cy + 5))
            vx = LABEL_W + max(w, plot_w * (hi or 0) / top) + 6
            out.append('<text x="%.1f" y="%d" class="v">%s %s</text>' % (
                vx, y + 15, html.escape(fmt(med)), html.escape(unit)))
            y += BAR_H
        y += 18
    height = y + 10
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" font-family="sans-serif">' % (SVG_W, height, SVG_W, height))
    style = ('<style>.t{font-size:15px;font-weight:bold}.l{font-size:13px}.v{font-size:12px}'
             '.w{stroke:#222;stroke-width:1.2;fill:none}</style>'
             '<rect width="100%" height="100%" fill="white"/>')
    return "\n".join([head, style] + out + ["</svg>", ""])


# ---- subcommands ---------------------------------------------------------------------------

def check_output(path, bench):
    """Why the output of bench NAME is not acceptable, or None: it must hold at least one
    well-formed SUMMARY line, all of them naming this bench."""
    s = read_summaries(path)
    problems = ["malformed SUMMARY line (%s): %s" % (why, line) for line, why in s["bad"]]
    others = sorted(set(r["bench"] for r in s["records"] if r["bench"] != bench))
    if others:
        problems.append("SUMMARY lines name bench=%s, expected bench=%s" % (",".join(others),
                                                                          bench))
    if not any(r["bench"] == bench for r in s["records"]):
        problems.append("no well-formed SUMMARY line with bench=%s" % bench)
    return "; ".join(problems) or None, [r for r in s["records"] if r["bench"] == bench]


def cmd_finish(d, mode, print_report):
    """After run.sh ran the programs: judge each output, write runs.txt, summary.txt and
    machine.txt, render the report. Exit status 1 when a benchmark did not run cleanly."""
    start = dict(read_kv(os.path.join(d, "run-start.txt")))
    raw = read_runs(os.path.join(d, "runs.raw"))
    failures = 0
    lines = []
    with open(os.path.join(d, "runs.txt"), "w", encoding="utf-8") as runs_f:
        for r in raw:
            if r["status"] in ("ok", "failed", "timeout"):
                problem, recs = check_output(os.path.join(d, "out", r["bench"] + ".out"),
                                             r["bench"])
                if problem:
                    if r["status"] == "ok":
                        r["status"] = "failed"
                    r["reason"] = "; ".join(x for x in (r["reason"], problem) if x)
                lines += ["SUMMARY " + " ".join(["bench=" + x["bench"], "case=" + x["case"]] +
                                                ["%s=%s" % (k, x["_raw"][k]) for k in x["_order"]])
                          for x in recs]
            if r["status"] not in ("ok", "skipped"):
                failures += 1
            sys.stderr.write("run.sh: %-10s %-9s %6ss  %s\n" % (
                r["bench"], r["status"], r["seconds"], r["reason"]))
            runs_f.write("\t".join([r["bench"], r["status"], r["seconds"], r["exit"],
                                    r["command"], r["reason"].replace("\t", " ")
                                    .replace("\n", " ")]) + "\n")
    finished = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    with open(os.path.join(d, "summary.txt"), "w", encoding="utf-8") as f:
        f.write("# mode=%s\tstarted=%s\tfinished=%s\n" % (mode, start.get("started", "?"),
                                                          finished))
        f.writelines(l + "\n" for l in lines)
    machine = machine_info()
    machine = [(k, start.get("started", v) if k == "date" else
                start.get(k, v)) for k, v in machine]
    with open(os.path.join(d, "machine.txt"), "w", encoding="utf-8") as f:
        f.writelines("%s: %s\n" % kv for kv in machine)
    md = render(d)
    if print_report:
        sys.stdout.write(md)
    return 1 if failures else 0


def render(d):
    summary = read_summaries(os.path.join(d, "summary.txt"))
    runs = read_runs(os.path.join(d, "runs.txt"))
    machine = read_kv(os.path.join(d, "machine.txt")) or machine_info()
    peers_path = os.path.join(d, "peers-summary.txt")
    peers = read_summaries(peers_path) if os.path.exists(peers_path) else None
    records = summary["records"] + (peers["records"] if peers else [])
    svg = render_svg(records)
    svg_path = os.path.join(d, "report.svg")
    if svg:
        with open(svg_path, "w", encoding="utf-8") as f:
            f.write(svg)
    elif os.path.exists(svg_path):
        os.unlink(svg_path)  # never leave a chart from another run beside this report
    md = render_markdown(d, summary, runs, machine, peers, svg is not None)
    with open(os.path.join(d, "report.md"), "w", encoding="utf-8") as f:
        f.write(md)
    return md


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "finish" and argv[4:] in ([], ["--print"]):
        return cmd_finish(argv[2], argv[3], argv[4:] == ["--print"])
    if len(argv) == 3 and argv[1] == "render":
        sys.stdout.write(render(argv[2]))
        return 0
    sys.stderr.write("usage: report.py finish DIR MODE [--print] | render DIR\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

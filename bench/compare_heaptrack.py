#!/usr/bin/env python3
"""compare_heaptrack.py - one program under trc (a call stack on every allocation) and under
heaptrack, in the same run: slowdowns, trace sizes, and the top allocation sites of both.

  bench/compare_heaptrack.py [--runs N] [--top N] [--sample SIZE] [--build DIR] -- PROGRAM ARGS...

Runs PROGRAM untraced, under `trace-run --alloc-stacks` none, all and sample=SIZE (default
512K), and under `heaptrack`, N times each in turns (default 5), and prints the median wall
time of each and its slowdown against untraced, the trace sizes (all stacks against none),
then, for the last run of each tool, the top N (default 20) allocation sites side by side and
how many functions the two lists share:
  by count   trc: `trace-dump memory --stack --csv sites` (allocations by whole stack);
             heaptrack: `heaptrack_print -a -m 0` (calls to allocation functions by backtrace)
  by bytes   bytes live at the peak of heap use, the only bytes by stack heaptrack_print
             gives: trc `trace-dump pprof --live-at peak`, heaptrack `-F` with
             --flamegraph-cost-type peak
A site is the innermost function of an allocation's stack that is not an allocator function
or a known wrapper (malloc and family, operator new, xmalloc, g_malloc, Perl_safesys*), the
same rule for both tools, over the functions that hold the return addresses: heaptrack also
names the functions inlined at each address (gawk's emalloc_real inside make_str_node), trc
the function whose code it is, so heaptrack's inlined frames are folded into the function
they were inlined into (the last frame of each address in heaptrack_print's backtraces).
Also, over trc's bytes allocated (memory --stack): the share whose site is named, and whose
every frame is named (a frame is named unless it is 0x..., module+0x... or [...]).
Examples (programs nobody here wrote):
  bench/realprog_gawk.sh DIR   # gawk built from Debian's source, its own default flags
  seq 200000 | shuf > nums.txt; bench/compare_heaptrack.py -- sort -n nums.txt -o out.txt
Prints a line "SUMMARY bench=heaptrack-compare case=NAME ...".
"""
import argparse
import csv
import gzip
import io
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WRAPPER = re.compile(
    r"^(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|"
    r"pvalloc|__libc_\w*alloc\w*|operator new.*|operator delete.*|xmalloc|xcalloc|xrealloc|"
    r"xzalloc|xmemdup|xstrdup|ximalloc|xicalloc|xnmalloc|xinmalloc|xcharalloc|g_malloc\w*|"
    r"g_realloc\w*|g_try_malloc\w*|Perl_safesys\w*|__gnu_cxx::new_allocator.*|"
    r"std::allocator.*|std::__new_allocator.*)$")


def run(cmd, out=None, env=None):
    t0 = time.monotonic()
    with open(out or os.devnull, "wb") as o:
        p = subprocess.run(cmd, stdout=o, stderr=subprocess.PIPE, env=env)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("compare_heaptrack: %s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                         p.stderr.decode()[-400:]))
    return dt


def site_of(frames):
    """frames innermost first: the first not an allocator or a wrapper."""
    for f in frames:
        if not WRAPPER.match(f):
            return f
    return frames[-1] if frames else "[no stack]"


def named(f):
    return not (f.startswith("0x") or re.search(r"\+0x[0-9a-f]+$", f) or f.startswith("["))


def trc_by_stack(trace_dump, trace):
    """[(frames innermost first, bytes allocated, allocations)] from trace-dump memory."""
    out = subprocess.run([trace_dump, "memory", "--stack", "--sites", "0", "--csv", "sites",
                          trace], capture_output=True, text=True, check=True).stdout
    rows = []
    for r in csv.DictReader(io.StringIO(out)):
        rows.append((r["site"].split(";")[::-1], int(r["bytes"]), int(r["allocs"])))
    return rows


def _varint(b, i):
    v = sh = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """(field, wire type, value) of one protobuf message."""
    i = 0
    while i < len(b):
        k, i = _varint(b, i)
        if k & 7 == 0:
            v, i = _varint(b, i)
        elif k & 7 == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif k & 7 == 1:
            v, i = b[i:i + 8], i + 8
        elif k & 7 == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("protobuf wire type %d" % (k & 7))
        yield k >> 3, k & 7, v


def _ints(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def trc_peak(trace_dump, trace, work):
    """{frames innermost first: bytes live at the heap's peak}, from trace-dump pprof (the
    thread's frame, outermost, left out)."""
    out = os.path.join(work, "peak.pb.gz")
    subprocess.run([trace_dump, "pprof", "--live-at", "peak", trace, "-o", out], check=True,
                   capture_output=True)
    strs, funcs, locs, samples = [], {}, {}, []
    for f, wire, v in _fields(gzip.open(out).read()):
        if f == 6:
            strs.append(v.decode())
        elif f == 5:
            d = {ff: vv for ff, _, vv in _fields(v)}
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif f == 4:
            lid, fids = 0, []
            for ff, _, vv in _fields(v):
                if ff == 1:
                    lid = vv
                elif ff == 4:
                    fids.append({a: c for a, _, c in _fields(vv)}.get(1, 0))
            locs[lid] = fids
        elif f == 2:
            ids, vals = [], []
            for ff, w2, vv in _fields(v):
                if ff == 1:
                    ids += _ints(w2, vv)
                elif ff == 2:
                    vals += _ints(w2, vv)
            samples.append((ids, vals))
    by_stack = {}
    for ids, vals in samples:
        frames = [strs[funcs[fid]] for lid in ids for fid in locs.get(lid, [])]
        if frames and frames[-1].startswith("tid "):
            frames.pop()
        k = tuple(frames)
        by_stack[k] = by_stack.get(k, 0) + vals[-1]
    return by_stack


def heaptrack_backtraces(text):
    """[(calls, [[frame, inlined...] per address, innermost first])] from heaptrack_print -a
    -m 0: each address's frame has an "in MODULE" line, the frames inlined there do not."""
    traces, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^(\d+) calls to allocation functions with .* from$", line)
        if m:
            cur = (int(m[1]), [])
            traces.append(cur)
        elif cur is not None and line.startswith("  ") and not line.startswith("   "):
            cur[1].append([line.strip()])
        elif cur is not None and line.startswith("    in ") and cur[1]:
            cur[1][-1].append(None)  # marks the frame that starts an address
        elif not line.strip():
            cur = None
    out = []
    for calls, frames in traces:
        groups = []
        for f in frames:
            if len(f) == 2 or not groups:
                groups.append([f[0]])
            else:
                groups[-1].append(f[0])
        out.append((calls, groups))
    return out


def physical(groups):
    """The function holding each return address: the last frame of each address's group."""
    return [g[-1] for g in groups]


def heaptrack_folded(text, groups_of):
    """{frames innermost first: weight} from heaptrack_print -F, heaptrack's inlined frames
    folded as in physical() where the backtrace is known."""
    by_stack = {}
    for line in text.splitlines():
        stack, _, w = line.rpartition(" ")
        if not stack or not w.isdigit():
            continue
        # frames are "name (file.c)", outermost address first, each address's frames
        # innermost first (as in -a), and the line ends with ';'
        names = tuple(re.sub(r" \([^()]*\)$", "", f) for f in stack.rstrip(";").split(";"))
        groups = groups_of.get(names)
        frames = tuple(physical(groups)) if groups else names[::-1]
        by_stack[frames] = by_stack.get(frames, 0) + int(w)
    return by_stack


def by_site(weights):
    out = {}
    for frames, w in weights:
        s = site_of(list(frames))
        out[s] = out.get(s, 0) + w
    return out


def norm(f):
    """A function's name without its arguments and clone suffixes, for matching the tools."""
    f = re.sub(r"\.(constprop|isra|part|cold|lto_priv)\.\d+.*$", "", f)
    f = re.sub(r"\.localalias$", "", f)
    f = re.sub(r"^(__GI_)+", "", f).lstrip("_")  # glibc's aliases: __GI___strdup, strdup
    # unnamed in both: trc's module+offset and heaptrack's address share the page offset
    m = re.match(r"^(?:[^+]+\+)?0x[0-9a-f]*([0-9a-f]{3})$", f)
    if m:
        return "[unnamed ...%s]" % m[1]
    return f.split("(")[0].strip()


def side_by_side(title, a, b, top, a_name, b_name):
    ta = sorted(a.items(), key=lambda x: -x[1])[:top]
    tb = sorted(b.items(), key=lambda x: -x[1])[:top]
    print("\n%s (top %d)" % (title, top))
    print("  %-44s %12s | %-44s %12s" % (a_name, "", b_name, ""))
    for i in range(max(len(ta), len(tb))):
        x = ta[i] if i < len(ta) else ("", "")
        y = tb[i] if i < len(tb) else ("", "")
        print("  %-44.44s %12s | %-44.44s %12s" % (x[0], x[1], y[0], y[1]))
    sa, sb = {norm(x[0]) for x in ta}, {norm(y[0]) for y in tb}
    common = len(sa & sb)
    print("  functions in both lists: %d of %d (only trc: %s; only heaptrack: %s)" %
          (common, len(sa), ", ".join(sorted(sa - sb)[:8]) or "-",
           ", ".join(sorted(sb - sa)[:8]) or "-"))
    return common, len(sa)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--sample", default="512K", help="SIZE of trc's sample=SIZE run")
    ap.add_argument("--build", default="build")
    ap.add_argument("--name", default=None, help="case name in the SUMMARY line")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    tr = os.path.join(a.build, "bin", "trace-run")
    td = os.path.join(a.build, "bin", "trace-dump")
    if not shutil.which("heaptrack") or not shutil.which("heaptrack_print"):
        sys.exit("compare_heaptrack: heaptrack is not installed")
    work = tempfile.mkdtemp(prefix="trc-cmp-ht-")
    name = a.name or os.path.basename(a.cmd[0])
    modes = (("none", "trc_none"), ("all", "trc_stacks"), ("sample=" + a.sample, "trc_sample"))
    times = {k: [] for k in ("untraced", "trc_none", "trc_stacks", "trc_sample", "heaptrack")}
    sizes = {k: [] for _, k in modes}
    loads = []
    try:
        for r in range(a.runs):
            loads.append(float(open("/proc/loadavg").read().split()[0]))
            times["untraced"].append(run(a.cmd))
            for mode, key in modes:
                f = os.path.join(work, key + ".trc")
                if os.path.exists(f):
                    os.unlink(f)
                times[key].append(run([tr, "-q", "--alloc-stacks", mode, "-o", f, "--"] +
                                      a.cmd))
                sizes[key].append(os.path.getsize(f))
            for old in os.listdir(work):
                if old.startswith("ht."):
                    os.unlink(os.path.join(work, old))
            times["heaptrack"].append(run(["heaptrack", "-o", os.path.join(work, "ht")] +
                                          a.cmd))
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["untraced"]
        print("program: %s   runs: %d   load average at each run's start: %s" %
              (" ".join(a.cmd), a.runs, " ".join("%.1f" % x for x in loads)))
        for k in times:
            print("  %-12s median %8.3f s  (min %.3f, max %.3f)  slowdown %.2fx" %
                  (k, med[k], min(times[k]), max(times[k]), med[k] / base))
        sz = {k: statistics.median(v) for k, v in sizes.items()}
        print("  trace size: %d B all stacks, %d B sampled, %d B none: %.2fx with all" %
              (sz["trc_stacks"], sz["trc_sample"], sz["trc_none"],
               sz["trc_stacks"] / sz["trc_none"]))
        htf = os.path.join(work, next(f for f in os.listdir(work) if f.startswith("ht.")))
        trc_file = os.path.join(work, "trc_stacks.trc")
        rows = trc_by_stack(td, trc_file)
        total = sum(b for _, b, _ in rows)
        site_named = sum(b for f, b, _ in rows if named(site_of(f)))
        all_named = sum(b for f, b, _ in rows if all(named(x) for x in f))
        print("  trc bytes allocated %d: site named %.2f %%, every frame named %.2f %%" %
              (total, 100.0 * site_named / max(total, 1), 100.0 * all_named / max(total, 1)))
        trc_count = by_site((f, n) for f, _, n in rows)
        trc_bytes = by_site(trc_peak(td, trc_file, work).items())
        txt = subprocess.run(["heaptrack_print", "-f", htf, "-m", "0", "-a", "1", "-p", "0",
                              "-T", "0", "-l", "0", "-n", "1000000000"], capture_output=True,
                             text=True).stdout
        bts = heaptrack_backtraces(txt)
        ht_count = by_site((physical(g), n) for n, g in bts)
        groups_of = {tuple(f for g in reversed(gs) for f in g): gs for _, gs in bts}
        out = os.path.join(work, "ht-peak.folded")
        subprocess.run(["heaptrack_print", "-f", htf, "-p", "0", "-a", "0", "-T", "0", "-l",
                        "0", "--flamegraph-cost-type", "peak", "-F", out], capture_output=True)
        ht_bytes = by_site(heaptrack_folded(open(out).read(), groups_of).items())
        cb, nb = side_by_side("allocation sites by bytes live at the heap's peak", trc_bytes,
                              ht_bytes, a.top, "trc (pprof --live-at peak)", "heaptrack")
        cc, nc = side_by_side("allocation sites by count", trc_count, ht_count, a.top,
                              "trc (memory --stack)", "heaptrack")
        print("  allocations: trc %d, heaptrack %d; bytes at the peak: trc %d, heaptrack %d" %
              (sum(trc_count.values()), sum(ht_count.values()), sum(trc_bytes.values()),
               sum(ht_bytes.values())))
        print("SUMMARY bench=heaptrack-compare case=%s runs=%d untraced_s=%.3f "
              "trc_stacks_s=%.3f trc_none_s=%.3f trc_sample_s=%.3f heaptrack_s=%.3f "
              "trc_stacks_slowdown=%.2f trc_none_slowdown=%.2f trc_sample_slowdown=%.2f "
              "heaptrack_slowdown=%.2f trace_bytes_stacks=%d trace_bytes_none=%d "
              "trace_size_ratio=%.2f site_named_pct=%.2f all_frames_named_pct=%.2f "
              "top_bytes_agree=%d/%d top_count_agree=%d/%d" %
              (name, a.runs, base, med["trc_stacks"], med["trc_none"], med["trc_sample"],
               med["heaptrack"], med["trc_stacks"] / base, med["trc_none"] / base,
               med["trc_sample"] / base, med["heaptrack"] / base, sz["trc_stacks"],
               sz["trc_none"], sz["trc_stacks"] / sz["trc_none"],
               100.0 * site_named / max(total, 1), 100.0 * all_named / max(total, 1), cb, nb,
               cc, nc))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""compare_heaptrack.py - one program under trc (a call stack on every allocation) and under
heaptrack, in the same run: slowdowns, trace sizes, and the top allocation sites of both.

  bench/compare_heaptrack.py [--runs N] [--top N] [--build DIR] -- PROGRAM ARGS...

Runs PROGRAM untraced, under `trace-run --alloc-stacks all`, `trace-run --alloc-stacks none`
and `heaptrack` N times each in turns (default 5), and prints the median wall time of each and
the slowdowns, the trace sizes (with stacks against without), then, for the last run of each
tool, the top N (default 20) allocation sites by bytes and by count side by side and how many
functions the two lists share. A site is the innermost frame of an allocation's stack that is
not an allocator function or a known wrapper (malloc and family, operator new, xmalloc, g_malloc,
Perl_safesys*), the same rule for both tools:
  trc bytes   `trace-dump flame --weight alloc` (bytes allocated, names from trc's symbolizer);
  trc count   `trace-dump events` (the stack id of each allocation), its frames named here from
              the modules' symbol tables (their debug files by build-id first) as trc does;
  heaptrack   `heaptrack_print -F` folded stacks: --flamegraph-cost-type allocations (count);
              heaptrack_print gives no bytes allocated by stack, so its bytes are "peak"
              (bytes live at its peak of heap use): compared with trc's bytes allocated, the
              two lists agree only where the program keeps what it allocates.
Examples (a program nobody here wrote, as Debian builds it):
  seq 200000 | shuf > nums.txt; bench/compare_heaptrack.py -- sort -n nums.txt -o out.txt
  bench/compare_heaptrack.py -- perl -e 'my %h; for my $i (1..150000) {
      $h{"key$i"} = [map { "v$_" x 3 } 1..($i % 5)] } my $j = join(",", sort keys %h);
      my @w = split /,/, $j; print scalar(@w), "\n"'
Also: the share of trc's allocated bytes whose site is named, and whose every frame is named
(neither 0x... nor module+offset). Prints PREFIX lines "SUMMARY bench=heaptrack-compare ...".
"""
import argparse
import bisect
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


class Symtab:
    """Names a module's file offsets from its symbol table, as trc's symbolizer does."""

    def __init__(self):
        self.cache = {}

    def _load(self, path, build_id):
        if path in self.cache:
            return self.cache[path]
        loads, syms = [], []
        try:
            ph = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            for m in re.finditer(r"LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+"
                                 r"(0x[0-9a-f]+)", ph):
                loads.append((int(m[1], 16), int(m[2], 16), int(m[3], 16)))
            files = []
            if build_id:
                files.append("/usr/lib/debug/.build-id/%s/%s.debug" % (build_id[:2],
                                                                       build_id[2:]))
            files.append(path)
            for f in files:
                if not os.path.exists(f):
                    continue
                for dyn in ([], ["-D"]):
                    txt = subprocess.run(["nm", "-n", "-S", "--defined-only", "-C"] + dyn +
                                         [f], capture_output=True, text=True).stdout
                    for line in txt.splitlines():
                        t = line.split(" ", 3)
                        if len(t) == 4 and len(t[2]) == 1:
                            addr, size, kind, nm = t[0], int(t[1], 16), t[2], t[3]
                        elif len(t) >= 3 and len(t[1]) == 1:
                            addr, size, kind, nm = t[0], 0, t[1], " ".join(t[2:])
                        else:
                            continue
                        if kind in "TtWwi" and addr:
                            syms.append((int(addr, 16), size, nm.split("@")[0]))
                    if syms:
                        break
                if syms:
                    break
        except OSError:
            pass
        syms.sort()
        self.cache[path] = (loads, [s[0] for s in syms], [(s[1], s[2]) for s in syms])
        return self.cache[path]

    def name(self, mod, addr):
        if not mod:
            return "0x%x" % addr
        start, end, offset, path, build_id = mod
        loads, addrs, names = self._load(path, build_id)
        off = addr - start + offset
        base = os.path.basename(path)
        for poff, pvaddr, filesz in loads:
            if poff <= off < poff + filesz:
                va = off - poff + pvaddr
                i = bisect.bisect_right(addrs, va) - 1
                # a symbol covers the address only up to its size (a function the table
                # does not name is not its predecessor's)
                if i >= 0 and (names[i][0] == 0 or va < addrs[i] + names[i][0]):
                    return names[i][1]
        return "%s+0x%x" % (base, off)


def trc_counts(trace_dump, trace):
    """Allocations and bytes by site, from the events' stacks named here."""
    mods, stacks, per_id = {}, {}, {}
    ev = subprocess.run([trace_dump, "events", trace], capture_output=True, text=True).stdout
    rmod = re.compile(r" meta module pid=(\d+) start=(0x[0-9a-f]+) end=(0x[0-9a-f]+) "
                      r"offset=(0x[0-9a-f]+) path=\"([^\"]*)\"(?: build_id=([0-9a-f]+))?")
    rstk = re.compile(r" meta stack id=(\d+) (?:truncated )?frames=([0-9a-fx,]+)")
    ralloc = re.compile(r" (\d+)/\d+ (?:alloc|realloc|calloc)\S* .*?size=(\d+) stack=(\d+)")
    nostack = [0, 0]
    for line in ev.splitlines():
        m = ralloc.search(line)
        if m:
            k = (int(m[1]), int(m[3]))
            c = per_id.setdefault(k, [0, 0])
            c[0] += 1
            c[1] += int(m[2])
            continue
        if " alloc addr=" in line:
            nostack[0] += 1
            continue
        m = rstk.search(line)
        if m:
            stacks[int(m[1])] = [int(x, 16) for x in m[2].split(",")]
            continue
        m = rmod.search(line)
        if m:
            mods.setdefault(int(m[1]), []).append(
                (int(m[2], 16), int(m[3], 16), int(m[4], 16), m[5], m[6]))
    st = Symtab()
    by_site = {}
    for (pid, sid), (n, b) in per_id.items():
        frames = []
        for a in stacks.get(sid, []):
            mod = next((x for x in mods.get(pid, []) if x[0] <= a - 1 < x[1]), None)
            frames.append(st.name(mod, a - 1))
        s = by_site.setdefault(site_of(frames), [0, 0])
        s[0] += n
        s[1] += b
    return by_site, nostack[0]


def folded(text, innermost_last=True):
    """{site: weight} and the lines, from folded stacks."""
    by_site, lines = {}, []
    for line in text.splitlines():
        stack, _, w = line.rpartition(" ")
        if not stack or not w.isdigit():
            continue
        # heaptrack's frames are "name (file.c)" and its stacks end with ';'
        frames = [re.sub(r" \([^()]*\)$", "", f) for f in stack.rstrip(";").split(";")]
        if innermost_last:
            frames.reverse()
        lines.append((frames, int(w)))
        s = site_of(frames)
        by_site[s] = by_site.get(s, 0) + int(w)
    return by_site, lines


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
    times = {"untraced": [], "trc_stacks": [], "trc_none": [], "heaptrack": []}
    sizes = {"trc_stacks": [], "trc_none": []}
    try:
        for r in range(a.runs):
            times["untraced"].append(run(a.cmd))
            for mode, key in (("all", "trc_stacks"), ("none", "trc_none")):
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
        print("program: %s   runs: %d   load average: %s" %
              (" ".join(a.cmd), a.runs, open("/proc/loadavg").read().split()[:3]))
        for k in ("untraced", "trc_stacks", "trc_none", "heaptrack"):
            print("  %-12s median %8.3f s  (min %.3f, max %.3f)  slowdown %.2fx" %
                  (k, med[k], min(times[k]), max(times[k]), med[k] / base))
        s_all, s_none = statistics.median(sizes["trc_stacks"]), statistics.median(
            sizes["trc_none"])
        print("  trace size: %d B with stacks, %d B without: %.2fx" %
              (s_all, s_none, s_all / s_none))
        htf = os.path.join(work, next(f for f in os.listdir(work) if f.startswith("ht.")))
        trc_file = os.path.join(work, "trc_stacks.trc")
        fl = subprocess.run([td, "flame", "--weight", "alloc", trc_file], capture_output=True,
                            text=True).stdout
        trc_bytes, lines = folded(fl)
        total = sum(w for _, w in lines)
        site_named = sum(w for f, w in lines if named(site_of(f)))
        all_named = sum(w for f, w in lines if all(named(x) for x in f))
        print("  trc bytes allocated %d: site named %.2f %%, every frame named %.2f %%" %
              (total, 100.0 * site_named / max(total, 1), 100.0 * all_named / max(total, 1)))
        counts, nostack = trc_counts(td, trc_file)
        trc_count = {k: v[0] for k, v in counts.items()}
        ht = {}
        for cost in ("allocations", "peak"):
            out = os.path.join(work, "ht-%s.folded" % cost)
            subprocess.run(["heaptrack_print", "-f", htf, "-p", "0", "-a", "0", "-T", "0", "-l",
                            "0", "--flamegraph-cost-type", cost, "-F", out],
                           capture_output=True)
            ht[cost], _ = folded(open(out).read())
        cb, nb = side_by_side("allocation sites by bytes (trc: allocated; heaptrack: peak)",
                              trc_bytes, ht["peak"], a.top, "trc", "heaptrack")
        cc, nc = side_by_side("allocation sites by count", trc_count, ht["allocations"], a.top,
                              "trc", "heaptrack")
        print("  trc allocations %d (without a stack %d); heaptrack allocations %d" %
              (sum(trc_count.values()) + nostack, nostack, sum(ht["allocations"].values())))
        print("SUMMARY bench=heaptrack-compare case=%s runs=%d untraced_s=%.3f "
              "trc_stacks_s=%.3f trc_none_s=%.3f heaptrack_s=%.3f trc_stacks_slowdown=%.2f "
              "trc_none_slowdown=%.2f heaptrack_slowdown=%.2f trace_bytes_stacks=%d "
              "trace_bytes_none=%d trace_size_ratio=%.2f site_named_pct=%.2f "
              "all_frames_named_pct=%.2f top_bytes_agree=%d/%d top_count_agree=%d/%d" %
              (name, a.runs, base, med["trc_stacks"], med["trc_none"], med["heaptrack"],
               med["trc_stacks"] / base, med["trc_none"] / base, med["heaptrack"] / base,
               s_all, s_none, s_all / s_none, 100.0 * site_named / max(total, 1),
               100.0 * all_named / max(total, 1), cb, nb, cc, nc))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tests/mutants/run.py - plants each one-line bug of tests/mutants/LIST in a copy of the tree and
runs the test tiers against it (`make mutants`).

The copy is build/mutants/work (git-tracked files only, refreshed file by file so its build/ stays
and each mutant rebuilds incrementally). For each mutant: the edit is applied (its text must occur
exactly once, else the entry is STALE), the plain tier is built (a compile error makes the entry
INVALID), then the plain suites run one after another, the hinted ones first, stopping at the
first that fails twice in a row (the mutant is caught; failing once only is a loaded machine's
flaky timing, noted and not counted); only if all pass, the plain stress programs, then the
ASan+UBSan suites, then the TSan stress programs. The file is restored after each mutant.

Every run is in its own process group under a timeout, and is stopped (counted as a failure) if
the disk's free space falls under MUTANTS_MIN_FREE_GB: a mutant that loops writing must not fill
the shared disk.

Environment: MUTANTS=id1,id2 runs those only; MUTANTS_TIERS=plain,asan,tsan (default all three);
MUTANTS_TIMEOUT=seconds per suite (default 300); MUTANTS_NO_BASELINE=1 skips the run of the plain
suites on the unmutated tree (a test that fails there is left out of every run, a suite that
fails without naming a test, of the verdicts); MUTANTS_SKIP_TESTS=suite/test,... leaves those
out;
MUTANTS_CHECK=1 only checks that every entry applies (its text occurs once); MUTANTS_TREE=dir
copies that checkout instead of this one.
Output: one line per mutant, then `SUMMARY mutants total=N caught=C equivalent=E survived=S
caught_pct=X`; the report is also written to build/mutants/report.txt. Exit status 0 when the
share is at least MUTANTS_MIN_PCT (default 90) and no entry is STALE or INVALID.
A run stopped by SIGINT or SIGTERM stops its suite and puts the file back; one killed outright
leaves its mutant in the copy, which the next run's refresh of the copy undoes.
Threads: one (and a watcher of the disk per run); runs no two suites at once (the suites use two workers each).
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The tree whose files (and LIST) are copied: this one, or MUTANTS_TREE (another checkout, e.g.
# a trial merge of branches); the copy and the report stay under this tree's build/.
ROOT = os.path.abspath(os.environ.get("MUTANTS_TREE", HERE))
LIST = os.path.join(ROOT, "tests", "mutants", "LIST")
OUT = os.path.join(HERE, "build", "mutants")
WORK = os.path.join(OUT, "work")
REPORT = os.path.join(OUT, "report.txt")

TIMEOUT = int(os.environ.get("MUTANTS_TIMEOUT", "300"))
MIN_FREE = float(os.environ.get("MUTANTS_MIN_FREE_GB", "15")) * (1 << 30)
TIERS = os.environ.get("MUTANTS_TIERS", "plain,asan,tsan").split(",")
MIN_PCT = float(os.environ.get("MUTANTS_MIN_PCT", "90"))

report_lines = []
current = {"pgid": None}  # the process group running now, stopped with us


def stop(signum, frame):
    if current["pgid"]:
        try:
            os.killpg(current["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise SystemExit(128 + signum)  # unwinds through the restore of the mutated file


def say(line):
    print(line, flush=True)
    report_lines.append(line)


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            c = s[i + 1]
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(c, "\\" + c))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def parse_list(path):
    """Blocks of `key: value` lines separated by blank lines; '#' lines are comments."""
    entries, cur, lineno = [], {}, 0
    keys = {"id", "file", "bug", "from", "to", "hint", "equivalent"}
    with open(path) as f:
        for raw in f:
            lineno += 1
            line = raw.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                if cur:
                    entries.append(cur)
                    cur = {}
                continue
            key, sep, val = line.partition(": ")
            if not sep and line.endswith(":"):
                key, val, sep = line[:-1], "", ":"
            if not sep or key not in keys:
                sys.exit(f"{path}:{lineno}: expected 'key: value' with key one of {sorted(keys)}")
            if key in cur:
                sys.exit(f"{path}:{lineno}: '{key}' given twice in one entry")
            if not cur:
                cur["line"] = lineno
            cur[key] = val
    if cur:
        entries.append(cur)
    ids = set()
    for e in entries:
        for k in ("id", "file", "bug", "from", "to"):
            if k not in e:
                sys.exit(f"{path}:{e['line']}: entry without '{k}'")
        if e["id"] in ids:
            sys.exit(f"{path}:{e['line']}: id {e['id']} used twice")
        ids.add(e["id"])
        e["from"], e["to"] = unescape(e["from"]), unescape(e["to"])
        e["hint"] = e.get("hint", "").split()
    return entries


def sync_tree():
    """Copies the tracked files into WORK, writing only those that differ (a file written gets a
    new mtime, so make rebuilds what depends on it; an unchanged one keeps its objects)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    n = 0
    for rel in filter(None, files):
        src, dst = os.path.join(ROOT, rel), os.path.join(WORK, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            target = os.readlink(src)
            if not (os.path.islink(dst) and os.readlink(dst) == target):
                if os.path.lexists(dst):
                    os.remove(dst)
                os.symlink(target, dst)
                n += 1
            continue
        if not os.path.exists(src):  # deleted, not yet committed
            continue
        with open(src, "rb") as f:
            data = f.read()
        if os.path.exists(dst) and not os.path.islink(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        with open(dst, "wb") as f:
            f.write(data)
        shutil.copymode(src, dst)
        n += 1
    return n


def run(cmd, log, env=None, timeout=TIMEOUT):
    """Runs cmd in WORK in a process group of its own; returns (status, seconds), status
    'ok', 'fail', 'timeout' or 'disk'."""
    t0 = time.monotonic()
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        p = subprocess.Popen(cmd, cwd=WORK, stdout=out, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True, stdin=subprocess.DEVNULL)
        verdict = [None]
        current["pgid"] = p.pid

        def watch():
            while p.poll() is None:
                if shutil.disk_usage(WORK).free < MIN_FREE:
                    verdict[0] = "disk"
                    os.killpg(p.pid, signal.SIGKILL)
                    return
                time.sleep(1)

        w = threading.Thread(target=watch, daemon=True)
        w.start()
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            verdict[0] = "timeout"
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
        try:  # what the run left behind (Criterion workers, traced programs)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        w.join()
        current["pgid"] = None
    status = verdict[0] or ("ok" if rc == 0 else "fail")
    return status, time.monotonic() - t0


# Criterion tests that fail on the unmutated tree ("suite/test"), left out of every run of their
# suite with a --filter: from the baseline, and MUTANTS_SKIP_TESTS=suite/test,...
skip_tests = {t for t in os.environ.get("MUTANTS_SKIP_TESTS", "").split(",") if t}


def suites(tier):
    """(name, command, env) of a tier's runs, in the Makefile's order."""
    b = "build" if tier == "plain" else f"build/{tier}"
    env = dict(os.environ, TRC_BUILD=b, ASAN_OPTIONS=os.environ.get(
        "ASAN_OPTIONS", "detect_leaks=0"), TMPDIR=os.path.join(OUT, "tmp"))
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    if tier != "plain":
        env["TRC_SANITIZER_TIER"] = tier
    names = sorted(n[:-2] for n in os.listdir(os.path.join(WORK, "tests"))
                   if n.endswith(".c") and (n.startswith("test_") or n.startswith("stress_")))
    out = []
    for n in names:
        if tier == "tsan" and not n.startswith("stress_"):
            continue
        if n.startswith("test_"):
            cmd = [f"{b}/tests/{n}", "--jobs", "2"]
            mine = sorted(t for t in skip_tests if t.split("/")[0] == n[len("test_"):])
            if mine:
                cmd += ["--filter", "!(" + "|".join(mine) + ")"]
            out.append((n, cmd, env))
        else:
            out.append((n, [f"{b}/tests/{n}"], env))
    # Criterion suites first, then the stress programs (slower, and rarely the first to fail).
    out.sort(key=lambda s: s[0].startswith("stress_"))
    return out


def build(tier, log, only=None):
    """Builds a tier, or (only: suite names) just those suites with the libraries, commands and
    programs they run, which is a few links instead of every suite's."""
    b = "build" if tier == "plain" else f"build/{tier}"
    san = [] if tier == "plain" else [f"SAN={tier}"]
    if only:
        t = os.path.join(WORK, "tests")
        progs = [f"{b}/tests/{n[:-2]}" for n in os.listdir(t)
                 if n.startswith("prog_") and n.endswith(".c")]
        progs += [f"{b}/tests/{n[:-3]}" for n in os.listdir(t)
                  if n.startswith("prog_") and n.endswith(".cc")]
        progs += [f"{b}/tests/{n[:-2]}.so" for n in os.listdir(t)
                  if n.startswith("lib_") and n.endswith(".c")]
        target = san + ["libs", "tools"] + sorted(progs) + [f"{b}/tests/{n}" for n in only]
    elif tier == "tsan":
        target = san + [f"{b}/tests/{s}" for s, _, _ in suites("tsan")]
    else:
        target = san + ["tests"]
    env = dict(os.environ)
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    return run(["make", "--no-print-directory", "-j2"] + target, log, env=env,
               timeout=3600)[0]


def run_suites(tier_suites, tier, mid, log, counts, memo, broken):
    """Runs the suites in order until one fails twice in a row: its verdict, or None."""
    for name, cmd, env in tier_suites:
        if (tier, name) in broken:
            continue
        st, _ = run(cmd, log, env=env)
        if st == "fail":
            # Twice in a row: a timing test that a loaded machine failed once is not a catch
            # (a planted bug fails it every time).
            st, _ = run(cmd, log, env=env)
            if st == "ok":
                say(f"note: {mid}: {tier}/{name} failed once, passed again: not counted "
                    "(see its log)")
        if st != "ok":
            what = {"fail": "", "timeout": " (timeout)", "disk": " (disk filling)"}
            counts["caught"] += 1
            memo[mid] = name
            return f"caught by {tier}/{name}{what[st]}"
    return None


def order(tier_suites, hints):
    first = [s for h in hints for s in tier_suites if s[0] == h]
    return first + [s for s in tier_suites if s not in first]


def check_only(entries):
    """MUTANTS_CHECK=1: only that each entry's text occurs once in the tree, and where."""
    bad = 0
    for e in entries:
        try:
            with open(os.path.join(ROOT, e["file"])) as f:
                n = f.read().count(e["from"])
        except OSError as err:
            n, bad = -1, bad + 1
            print(f"STALE {e['id']}: {e['file']}: {err.strerror}")
            continue
        if n != 1:
            bad += 1
            print(f"STALE {e['id']}: the original text occurs {n} times in {e['file']} "
                  f"(LIST line {e['line']})")
    folders = sorted({os.path.dirname(e["file"]) for e in entries})
    print(f"{len(entries)} entries, {bad} stale; folders: {' '.join(folders)}")
    return 1 if bad else 0


def main():
    entries = parse_list(LIST)
    pick = [m for m in os.environ.get("MUTANTS", "").split(",") if m]
    if pick:
        unknown = set(pick) - {e["id"] for e in entries}
        if unknown:
            sys.exit("run.py: no such mutant: " + ", ".join(sorted(unknown)))
        entries = [e for e in entries if e["id"] in pick]
    if os.environ.get("MUTANTS_CHECK"):
        return check_only(entries)
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(os.path.join(OUT, "logs"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "tmp"), exist_ok=True)
    t_start = time.monotonic()
    changed = sync_tree()
    head = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()
    say(f"tree {ROOT} at {head}")
    say(f"mutants: {len(entries)} from tests/mutants/LIST; tree copied to {WORK} "
        f"({changed} files refreshed); tiers {','.join(TIERS)}; {TIMEOUT} s per suite")
    base_log = os.path.join(OUT, "logs", "baseline.log")
    open(base_log, "w").close()
    built = set()
    if build("plain", base_log) != "ok":
        sys.exit(f"run.py: the unmutated tree does not build, see {base_log}")
    built.add("plain")
    broken = set()
    if not os.environ.get("MUTANTS_NO_BASELINE"):
        for name, cmd, env in suites("plain"):
            start = os.path.getsize(base_log)
            st, secs = run(cmd, base_log, env=env)
            if st == "ok":
                continue
            with open(base_log, errors="replace") as f:
                f.seek(start)
                failed = {line.split()[1].replace("::", "/").rstrip(":")
                          for line in f if line.startswith("[FAIL] ")}
            if st == "fail" and failed:
                skip_tests.update(failed)
                say(f"baseline: {name}: {', '.join(sorted(failed))} fail on the unmutated tree: "
                    f"left out of every run (see {base_log})")
            else:
                broken.add(("plain", name))
                say(f"baseline: {name} {st} on the unmutated tree ({secs:.0f} s): left out of "
                    f"the verdicts (see {base_log})")
        say(f"baseline: plain suites run in {time.monotonic() - t_start:.0f} s")

    # The suite that caught each mutant last time goes first this time (build/mutants/caught_by).
    memo_path = os.path.join(OUT, "caught_by")
    memo = {}
    if os.path.exists(memo_path):
        with open(memo_path) as f:
            memo = dict(line.split() for line in f if len(line.split()) == 2)
    counts = {"caught": 0, "equivalent": 0, "survived": 0, "stale": 0, "invalid": 0}
    survivors = []
    for e in entries:
        t0 = time.monotonic()
        path = os.path.join(WORK, e["file"])
        mid = e["id"]
        log = os.path.join(OUT, "logs", mid + ".log")
        open(log, "w").close()
        try:
            with open(path) as f:
                orig = f.read()
        except OSError as err:
            counts["stale"] += 1
            say(f"MUTANT {mid:32} STALE: {e['file']}: {err.strerror}")
            continue
        n = orig.count(e["from"])
        if n != 1:
            counts["stale"] += 1
            say(f"MUTANT {mid:32} STALE: the original text occurs {n} times in {e['file']} "
                f"(LIST line {e['line']}): fix the entry")
            continue
        if "equivalent" in e:
            counts["equivalent"] += 1
            say(f"MUTANT {mid:32} equivalent: {e['equivalent']}")
            continue
        verdict = None
        try:
            with open(path, "w") as f:
                f.write(orig.replace(e["from"], e["to"]))
            for tier in TIERS:
                hints = ([memo[mid]] if mid in memo else []) + e["hint"]
                tier_suites = order(suites(tier), hints)
                first = [s for s in tier_suites if s[0] in hints and (tier, s[0]) not in broken]
                # The suites expected to catch it first, built alone (when they do, the rest
                # of the tier is never built); then the whole tier for the others.
                if first and tier == "plain" and build(tier, log, [s[0] for s in first]) == "ok":
                    verdict = run_suites(first, tier, mid, log, counts, memo, broken)
                    if verdict:
                        break
                    tier_suites = [s for s in tier_suites if s not in first]
                if build(tier, log) != "ok":
                    if tier == "plain":
                        verdict = "INVALID: does not compile (see " + log + ")"
                        counts["invalid"] += 1
                    else:
                        verdict = f"caught by the {tier} build"
                        counts["caught"] += 1
                    break
                built.add(tier)
                verdict = run_suites(tier_suites, tier, mid, log, counts, memo, broken)
                if verdict:
                    break
        finally:
            with open(path, "w") as f:  # a new mtime: the next build recompiles it
                f.write(orig)
        if not verdict:
            verdict = "SURVIVED"
            counts["survived"] += 1
            survivors.append(e)
        say(f"MUTANT {mid:32} {verdict} [{time.monotonic() - t0:.0f} s] {e['file']}: {e['bug']}")
        with open(memo_path, "w") as f:
            f.writelines(f"{k} {v}\n" for k, v in sorted(memo.items()))

    total = len(entries) - counts["stale"] - counts["invalid"]
    live = total - counts["equivalent"]
    pct = 100.0 * counts["caught"] / live if live else 100.0
    for e in survivors:
        say(f"survivor: {e['id']} ({e['file']}): {e['bug']}")
    if counts["stale"] or counts["invalid"]:
        say(f"ERROR: {counts['stale']} stale and {counts['invalid']} invalid entries in "
            "tests/mutants/LIST")
    say(f"run time {time.monotonic() - t_start:.0f} s")
    say(f"SUMMARY mutants total={total} caught={counts['caught']} "
        f"equivalent={counts['equivalent']} survived={counts['survived']} caught_pct={pct:.1f}")
    with open(REPORT, "w") as f:
        f.write("\n".join(report_lines) + "\n")
    ok = pct >= MIN_PCT and not counts["stale"] and not counts["invalid"]
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    sys.exit(main())

#!/usr/bin/env python3
"""Cycles of the whole corpus on every path, before and after a change: the table that every
change to code generation reports.

    scripts/corpus.py run NKC OUT.json [--root DIR] [-j N] [--only REGEX] [--paths p,q]
        Runs every kernel of DIR/examples, DIR/tests/good and DIR/tests/nki (with the inputs
        tests/nki_corpus.rs gives them) on the paths none, annotated, default, emergent and
        auto, each with and without --peel: `NKC run --check --json`, so every run is compared
        with the interpreter bit for bit and raced nowhere. Writes one entry per run,
        {"FILE::KERNEL|PATH[+peel]": {"cycles", "bound"} or {"err"}}. DIR is the repository by
        default; a full run takes a few minutes with -j 2.
    scripts/corpus.py figs RUN.json [BEFORE.json] [-v]
        Per group (own: examples and tests/good; nki: tests/nki): the best path (without --peel)
        over the lower bound, within 1.05x, within 1.15x and its geometric mean; `default`
        within 1.10x of `emergent`, and slower than `annotated`; failures. With BEFORE, also on
        the kernels both runs have.
    scripts/corpus.py table BEFORE.json AFTER.json [--md PREFIX]
        Entries faster, slower and the same (none+peel left out), the largest changes, runs
        newly failing or newly running; --md PREFIX adds the markdown table of the kernels whose
        name starts with PREFIX (e.g. `examples`), a column per path.
"""
import argparse
import json
import math
import os
import re
import subprocess
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

PATHS = ["none", "annotated", "default", "emergent", "auto"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kernels_of(path):
    """The kernels a `.nk` file defines (top-level `def`s)."""
    with open(path) as f:
        return re.findall(r"^def (\w+)\(", f.read(), re.M)


def units_of(root):
    """(name, file, extra arguments) of every kernel of the corpus under `root`."""
    units = []
    for d in ["examples", "tests/good"]:
        for f in sorted(os.listdir(os.path.join(root, d))):
            if not f.endswith(".nk"):
                continue
            p = os.path.join(root, d, f)
            ks = kernels_of(p)
            for k in ks:
                units.append((f"{d}/{f}::{k}", p, ["--kernel", k] if len(ks) > 1 else []))
    with open(os.path.join(root, "tests/nki_corpus.rs")) as f:
        corpus = f.read()
    seen = set()
    for case in re.split(r"\bCase\s*\{", corpus)[1:]:
        fm = re.search(r'file:\s*"([\w.]+)"', case)
        im = re.search(r"inputs:\s*&\[(.*?)\]\s*,\s*\n", case, re.S)
        if not fm or not im or fm.group(1) in seen:
            continue
        seen.add(fm.group(1))
        p = os.path.join(root, "tests/nki", fm.group(1))
        if not os.path.exists(p):
            continue
        extra = []
        for name, dims in re.findall(r'\(\s*"(\w+)",\s*&\[([\d,\s]+)\]\s*\)', im.group(1)):
            extra += ["--shape", name + "=" + "x".join(d.strip() for d in dims.split(",") if d.strip())]
        with open(p) as f:
            grid = re.search(r"^# grid:\s*(\S+)", f.read(), re.M)
        if grid:
            extra += ["--grid", grid.group(1)]
        units.append((f"tests/nki/{fm.group(1)}", p, extra))
    return units


def cmd_run(a):
    nkc = os.path.abspath(a.nkc)
    only = re.compile(a.only) if a.only else None
    tasks = []
    for key, p, extra in units_of(a.root):
        for path in a.paths.split(","):
            for peel in (False, True):
                k = f"{key}|{path}{'+peel' if peel else ''}"
                if not only or only.search(k):
                    tasks.append((k, [nkc, "run", p, "--check", "--json", "--pipeline", path]
                                  + extra + (["--peel"] if peel else [])))

    def one(task):
        k, argv = task
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            out = r.stdout.strip().splitlines()
            j = json.loads(out[-1]) if out else {}
        except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            return k, {"err": str(e)[:300]}
        if "cycles" in j and not j.get("races"):
            return k, {"cycles": j["cycles"], "bound": j.get("lower_bound")}
        return k, {"err": json.dumps(j.get("error") or j.get("diagnostics") or r.stderr[-300:])[:300]}

    with ThreadPoolExecutor(a.jobs) as ex:
        res = dict(ex.map(one, tasks))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=0, sort_keys=True)
    ok = sum("cycles" in v for v in res.values())
    print(f"{len(res)} runs, {ok} ok, {len(res) - ok} failed")


def by_unit(path):
    with open(path) as f:
        runs = json.load(f)
    units = defaultdict(dict)
    for k, v in runs.items():
        unit, p = k.split("|")
        units[unit][p] = v
    return units


def stats(units, names, label, verbose):
    n = w105 = w115 = d110 = dn = 0
    logs, slow, worst, fails = [], [], [], []
    for u in names:
        runs = units[u]
        fails += [(u, p, v["err"][:120]) for p, v in runs.items() if "err" in v and "E04" not in v["err"][:40]]
        ok = {p: v for p, v in runs.items() if "cycles" in v and "+peel" not in p}
        bound = max((v["bound"] or 0 for v in ok.values()), default=0)
        if not bound:
            continue
        r = min(v["cycles"] for v in ok.values()) / bound
        n += 1
        logs.append(math.log(r))
        w105 += r <= 1.05
        w115 += r <= 1.15
        worst.append((r, u))
        if "default" in ok and "emergent" in ok:
            dn += 1
            q = ok["default"]["cycles"] / ok["emergent"]["cycles"]
            d110 += q <= 1.10
            if q > 1.10:
                slow.append(f"default {q:.3f}x emergent: {u}")
        if "default" in ok and "annotated" in ok and ok["default"]["cycles"] > ok["annotated"]["cycles"]:
            slow.append(f"default slower than annotated: {u}")
    g = math.exp(sum(logs) / len(logs)) if logs else 0.0
    print(f"{label}: {n} kernels; best/bound <= 1.05: {w105}, <= 1.15: {w115}, geomean {g:.3f}; "
          f"default <= 1.10x emergent: {d110}/{dn}; failed runs: {len(fails)}")
    if verbose:
        for r, u in sorted(worst, reverse=True)[:15]:
            print(f"   {r:.3f} {u}")
        for s in slow + [f"FAIL {f}" for f in fails]:
            print("  ", s)


def cmd_figs(a):
    run = by_unit(a.run)
    before = by_unit(a.before) if a.before else None
    for label, own in [("own", True), ("nki", False)]:
        names = [u for u in run if u.startswith("tests/nki") != own]
        if before:
            common = [u for u in names if u in before]
            stats(before, common, f"{label}, before (the {len(common)} both have)", a.v)
            stats(run, common, f"{label}, after (the {len(common)} both have)", a.v)
        stats(run, names, f"{label}, all", a.v)


def cmd_table(a):
    with open(a.before) as f:
        b = json.load(f)
    with open(a.after) as f:
        c = json.load(f)
    faster = slower = same = 0
    changes, newfail, fixed = [], [], []
    for k in sorted(set(b) & set(c)):
        x, y = b[k], c[k]
        if "cycles" in x and "cycles" in y:
            if k.endswith("|none+peel"):
                continue
            faster += y["cycles"] < x["cycles"]
            slower += y["cycles"] > x["cycles"]
            same += y["cycles"] == x["cycles"]
            if y["cycles"] != x["cycles"]:
                changes.append(((y["cycles"] - x["cycles"]) / x["cycles"], k, x["cycles"], y["cycles"]))
        elif "cycles" in x:
            newfail.append((k, y.get("err", "")[:150]))
        elif "cycles" in y:
            fixed.append(k)
    print(f"faster {faster}, slower {slower}, same {same}; newly failing {len(newfail)}, newly running {len(fixed)}")
    changes.sort()
    shown = changes[:15] + [t for t in changes[15:] if t[0] > 0][-30:]
    for d, k, x, y in shown:
        print(f"  {d * 100:+.1f}% {k} {x} -> {y}")
    for k, e in newfail:
        print("  NEWLY FAILING", k, e)
    for k in fixed:
        print("  NEWLY RUNNING", k)
    if a.md:
        units = sorted({k.split("|")[0] for k in c if k.startswith(a.md)})
        print("\n| kernel | " + " | ".join(PATHS) + " |")
        print("|---" * (len(PATHS) + 1) + "|")
        for u in units:
            cells = []
            for p in PATHS:
                x, y = b.get(f"{u}|{p}", {}).get("cycles"), c.get(f"{u}|{p}", {}).get("cycles")
                if x is not None and x == y:
                    cells.append(f"{x:,}")
                else:
                    cells.append(f"{x if x is None else f'{x:,}'} → {y if y is None else f'{y:,}'}")
            print(f"| {u} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("nkc")
    r.add_argument("out")
    r.add_argument("--root", default=REPO)
    r.add_argument("-j", "--jobs", type=int, default=2)
    r.add_argument("--only")
    r.add_argument("--paths", default=",".join(PATHS))
    f = sub.add_parser("figs")
    f.add_argument("run")
    f.add_argument("before", nargs="?")
    f.add_argument("-v", action="store_true")
    t = sub.add_parser("table")
    t.add_argument("before")
    t.add_argument("after")
    t.add_argument("--md")
    a = ap.parse_args()
    {"run": cmd_run, "figs": cmd_figs, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()

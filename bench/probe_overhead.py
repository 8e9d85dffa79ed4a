#!/usr/bin/env python3
"""Probe overhead: tcp-stream throughput with every probe on, against the
same stream without probes, side by side in one run.

For each place (loopback, veth) the script alternates A (no probes) and B
(`--probe all`) runs, R rounds of D seconds each, with the endpoints pinned
to CPUs 0 and 1 in both, and reports medians and the median of per-round
B/A ratios. The target (issue 4) is B/A >= 0.97. It also reports the probe
records per second and how many the ring buffer lost.

Needs root (BPF, namespaces). Raw numbers go to bench/out/probe-overhead-<UTC>.json.
"""

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(tcplab, place, probes, duration, db, groups="all"):
    cmd = [str(tcplab), "bench", "tcp-stream", "--duration", f"{duration}s", "--repeat", "1",
           "--pin", "sender=0,receiver=1", "--json", "--quiet", "--db", db]
    if place != "loopback":
        cmd += ["--topology", place]
    if probes:
        cmd += ["--probe", groups]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration * 10 + 60)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-400:]}")
    m = json.loads(p.stdout)["points"][0]["metrics"]
    g = lambda k: m[k]["mean"] if k in m else None
    return {"throughput_bps": g("throughput_bps"), "probe_records": g("probe_records") or 0,
            "probe_lost": g("probe_lost") or 0, "steal": g("host_steal_fraction")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration", type=int, default=3, help="seconds per run")
    ap.add_argument("--places", default="loopback,veth")
    ap.add_argument("--groups", default="all",
                    help="--probe groups of the B runs (e.g. cpu, or queues,tcp,sched)")
    ap.add_argument("--tcplab", type=Path, default=ROOT / "target" / "release" / "tcplab")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args()
    if not a.tcplab.exists():
        print(f"error: {a.tcplab} not found; cargo build --release -p tcplab", file=sys.stderr)
        return 2
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    db = f"/tmp/tcplab-probe-overhead-{stamp}.db"
    result = {"started_utc": stamp, "rounds": a.rounds, "duration_s": a.duration,
              "groups": a.groups, "places": {}}
    for place in a.places.split(","):
        runs = []
        for r in range(a.rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            pair = {}
            for probes in order:
                x = run(a.tcplab, place, probes, a.duration, db, a.groups)
                pair["B" if probes else "A"] = x
                print(f"  {place:<9} round {r + 1} {'probes' if probes else 'plain ':<6} "
                      f"{x['throughput_bps'] / 1e9:6.2f} Gbit/s"
                      + (f"  {x['probe_records'] / a.duration / 1e3:7.0f}k records/s, lost {x['probe_lost']:.0f}"
                         if probes else ""), flush=True)
            runs.append(pair)
        ratios = [p["B"]["throughput_bps"] / p["A"]["throughput_bps"] for p in runs]
        med_a = statistics.median(p["A"]["throughput_bps"] for p in runs)
        med_b = statistics.median(p["B"]["throughput_bps"] for p in runs)
        lost = sum(p["B"]["probe_lost"] or 0 for p in runs)
        rec = statistics.median(p["B"]["probe_records"] / a.duration for p in runs)
        print(f"{place} (--probe {a.groups}): plain {med_a / 1e9:.2f} Gbit/s, probes {med_b / 1e9:.2f} Gbit/s, "
              f"median ratio {statistics.median(ratios):.3f} [min {min(ratios):.3f}, max {max(ratios):.3f}], "
              f"{rec / 1e3:.0f}k records/s, {lost:.0f} lost in all", flush=True)
        result["places"][place] = {"runs": runs, "ratios": ratios,
                                   "median_ratio": statistics.median(ratios)}
    a.out.mkdir(parents=True, exist_ok=True)
    out = a.out / f"probe-overhead-{stamp}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"raw numbers: {out}")
    Path(db).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Probe overhead: tcp-stream throughput with every probe on, against the
same stream without probes, side by side in one run.

For each place (loopback, veth) the script alternates A (no probes) and B
(`--probe all`) runs, R rounds of D seconds each, with the endpoints pinned
to CPUs 0 and 1 in both, and reports medians and the median of per-round
B/A ratios. The target (issue 4) is B/A >= 0.97. It also reports the probe
records per second and how many the ring buffer lost.

--depths splits the loss. Besides full probes, B runs can use
`--probe-depth filter` (the programs find the experiment's packets but record
nothing) and `--probe-depth empty` (they return at once): empty measures
what attaching costs, filter - empty what finding the flow costs, full -
filter what recording costs. --cc sets the congestion control of every run:
on a host whose default is BBR, loopback and veth streams are limited by
BBR's pacing timers rather than by CPU, and the probes' cost shows only when
the stream is CPU-bound (--cc cubic).

After the rounds, one more probed run per place is made with the kernel's
BPF run-time statistics on (kernel.bpf_stats_enabled, restored afterwards;
kept out of the A/B runs because the statistics cost time of their own): it
reports what each program costs per run and how much CPU all of them take,
which is what the throughput pays for (--no-cost-breakdown skips it).

--perf-peer HZ adds a run per round in which the stream runs unprobed
while `perf record -e cpu-clock -F HZ -a -g` samples every CPU: the cost
of the sampler users know, beside tcplab's `--probe cpu --sample-hz HZ`
(use `--groups cpu --sample-hz HZ`). On a host without a PMU both sample
with the same software timer, and what the timer itself costs shows in
both.

Needs root (BPF, namespaces). Raw numbers go to bench/out/probe-overhead-<UTC>.json.
"""

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(tcplab, place, depth, duration, db, groups="all", cc=None, sample_hz=None, perf_hz=None):
    """One trial: without probes if depth is None, else at that --probe-depth;
    depth "perf" is the unprobed stream under `perf record` at perf_hz."""
    if depth == "perf":
        return under_perf(tcplab, place, duration, db, cc, perf_hz)
    cmd = [str(tcplab), "bench", "tcp-stream", "--duration", f"{duration}s", "--repeat", "1",
           "--pin", "sender=0,receiver=1", "--json", "--quiet", "--db", db]
    if cc:
        cmd += ["--cc", cc]
    if place != "loopback":
        cmd += ["--topology", place]
    if depth:
        cmd += ["--probe", groups, "--probe-depth", depth] + sample_hz_args(groups, sample_hz)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration * 10 + 60)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()[-400:]}")
    m = json.loads(p.stdout)["points"][0]["metrics"]
    g = lambda k: m[k]["mean"] if k in m else None
    return {"throughput_bps": g("throughput_bps"), "probe_records": g("probe_records") or 0,
            "probe_lost": g("probe_lost") or 0, "steal": g("host_steal_fraction")}


def under_perf(tcplab, place, duration, db, cc, hz):
    """The unprobed stream while `perf record -e cpu-clock -F hz -a -g`
    samples every CPU into a throw-away file; perf is stopped (SIGINT, by
    its pid) once the stream ends."""
    data = f"/tmp/tcplab-probe-overhead-perf-{os.getpid()}.data"
    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-a", "-g",
                             "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # perf opens its events before it writes the file's header.
        deadline = time.monotonic() + 10
        while not (os.path.exists(data) and os.path.getsize(data) > 0):
            if perf.poll() is not None:
                raise RuntimeError(f"perf record exited: {perf.stderr.read().strip()[-400:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("perf record did not start within 10 s")
            time.sleep(0.05)
        time.sleep(0.2)
        return run(tcplab, place, None, duration, db, cc=cc)
    finally:
        perf.send_signal(signal.SIGINT)
        try:
            perf.wait(timeout=60)
        except subprocess.TimeoutExpired:
            perf.kill()
            perf.wait()
        Path(data).unlink(missing_ok=True)


def sample_hz_args(groups, sample_hz):
    """`--sample-hz` for a probed command whose groups include cpu."""
    has_cpu = groups == "all" or "cpu" in groups.split(",")
    return ["--sample-hz", str(sample_hz)] if sample_hz and has_cpu else []


BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")


def bpf_progs():
    """Loaded BPF programs: id -> (name, run_time_ns, run_cnt), from bpftool."""
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"bpftool prog show failed: {p.stderr.strip()}")
    return {x["id"]: (x.get("name", "?"), x.get("run_time_ns", 0), x.get("run_cnt", 0))
            for x in json.loads(p.stdout or "[]")}


def cost_breakdown(tcplab, place, groups, duration, db, cc=None, sample_hz=None):
    """One probed run with BPF statistics on: per program ns/run and runs/s,
    and the CPU share of all the run's programs, over the middle of the run."""
    before = max(bpf_progs(), default=0)
    old = BPF_STATS.read_text().strip()
    BPF_STATS.write_text("1")
    try:
        cmd = [str(tcplab), "bench", "tcp-stream", "--duration", f"{max(duration, 4)}s", "--repeat", "1",
               "--pin", "sender=0,receiver=1", "--quiet", "--db", db, "--probe", groups]
        cmd += sample_hz_args(groups, sample_hz)
        if cc:
            cmd += ["--cc", cc]
        if place != "loopback":
            cmd += ["--topology", place]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Every program of the run, first and last seen running: a probed
        # run may load its programs more than once (one session per trial).
        seen = {}
        try:
            while proc.poll() is None:
                t = time.monotonic()
                for i, (name, ns, n) in bpf_progs().items():
                    # libbpf's short-lived feature probes never run.
                    if i <= before or n == 0:
                        continue
                    first = seen.get(i, (None, (t, ns, n)))[1]
                    seen[i] = (name, first, (t, ns, n))
                time.sleep(0.25)
        finally:
            _, err = proc.communicate(timeout=duration * 10 + 60)
        if proc.returncode != 0:
            raise RuntimeError(f"probed run failed: {err.strip()[-400:]}")
    finally:
        BPF_STATS.write_text(old)
    progs = []
    for name, (t0, ns0, n0), (t1, ns1, n1) in seen.values():
        span = t1 - t0
        if span < 1.0 or n1 == n0:
            continue
        progs.append({"name": name, "span_s": span, "runs_per_s": (n1 - n0) / span,
                      "ns_per_run": (ns1 - ns0) / (n1 - n0), "cpu_share": (ns1 - ns0) / 1e9 / span})
    if not progs:
        raise RuntimeError("no probe program of the run was seen running for a second")
    progs.sort(key=lambda x: -x["cpu_share"])
    return {"programs": progs,
            "cpu_share": sum(x["cpu_share"] for x in progs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration", type=int, default=3, help="seconds per run")
    ap.add_argument("--places", default="loopback,veth")
    ap.add_argument("--groups", default="all",
                    help="--probe groups of the B runs (e.g. cpu, or queues,tcp,sched)")
    ap.add_argument("--cc", help="congestion control of both A and B (default: the host's, "
                    "net.ipv4.tcp_congestion_control)")
    ap.add_argument("--depths", default="full",
                    help="--probe-depth of the B runs, comma-separated: full, filter, empty. With "
                    "several, the loss is split into attaching (empty), finding the flow "
                    "(filter) and recording (full)")
    ap.add_argument("--sample-hz", type=int,
                    help="--sample-hz of the B runs when their groups include cpu (default: tcplab's, 10000)")
    ap.add_argument("--perf-peer", type=int, metavar="HZ",
                    help="add a run per round with the unprobed stream under "
                    "`perf record -e cpu-clock -F HZ -a -g`, the peer of --probe cpu")
    ap.add_argument("--no-cost-breakdown", action="store_true",
                    help="skip the extra run with BPF run-time statistics")
    ap.add_argument("--tcplab", type=Path, default=ROOT / "target" / "release" / "tcplab")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args()
    if not a.tcplab.exists():
        print(f"error: {a.tcplab} not found; cargo build --release -p tcplab", file=sys.stderr)
        return 2
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    db = f"/tmp/tcplab-probe-overhead-{stamp}.db"
    result = {"started_utc": stamp, "rounds": a.rounds, "duration_s": a.duration,
              "groups": a.groups, "sample_hz": a.sample_hz, "perf_peer_hz": a.perf_peer, "cc": a.cc or Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip(),
              "places": {}}
    depths = a.depths.split(",")
    for d in depths:
        if d not in ("full", "filter", "empty"):
            print(f"error: unknown depth {d!r} in --depths (full, filter, empty)", file=sys.stderr)
            return 2
    # Every B run of a round: the probe depths, then perf if asked for.
    variants = depths + (["perf"] if a.perf_peer else [])
    for place in a.places.split(","):
        runs = []
        for r in range(a.rounds):
            # A and every B in each round, the order rotated round to round.
            order = [None] + variants
            k = r % len(order)
            order = order[k:] + order[:k]
            row = {}
            for depth in order:
                x = run(a.tcplab, place, depth, a.duration, db, a.groups, a.cc, a.sample_hz, a.perf_peer)
                row[depth or "plain"] = x
                print(f"  {place:<9} round {r + 1} {depth or 'plain':<6} "
                      f"{x['throughput_bps'] / 1e9:6.2f} Gbit/s"
                      + (f"  {x['probe_records'] / a.duration / 1e3:7.0f}k records/s, lost {x['probe_lost']:.0f}"
                         if depth == "full" else ""), flush=True)
            runs.append(row)
        med_a = statistics.median(p["plain"]["throughput_bps"] for p in runs)
        summary = {}
        for depth in variants:
            ratios = [p[depth]["throughput_bps"] / p["plain"]["throughput_bps"] for p in runs]
            med_b = statistics.median(p[depth]["throughput_bps"] for p in runs)
            summary[depth] = {"ratios": ratios, "median_ratio": statistics.median(ratios)}
            what = (f"perf record -e cpu-clock -F {a.perf_peer} -a -g" if depth == "perf"
                    else f"--probe {a.groups} --probe-depth {depth}"
                    + (f" --sample-hz {a.sample_hz}" if a.sample_hz else ""))
            line = (f"{place} ({what}): plain {med_a / 1e9:.2f} Gbit/s, "
                    f"{'under perf' if depth == 'perf' else 'probes'} {med_b / 1e9:.2f} Gbit/s, median ratio {statistics.median(ratios):.3f} "
                    f"[min {min(ratios):.3f}, max {max(ratios):.3f}]")
            if depth == "full":
                lost = sum(p["full"]["probe_lost"] or 0 for p in runs)
                rec = statistics.median(p["full"]["probe_records"] / a.duration for p in runs)
                line += f", {rec / 1e3:.0f}k records/s, {lost:.0f} lost in all"
            print(line, flush=True)
        if "full" in depths and a.perf_peer:
            side = statistics.median(p["full"]["throughput_bps"] / p["perf"]["throughput_bps"] for p in runs)
            print(f"  {place}: tcplab probed / under perf, median of rounds: {side:.3f}", flush=True)
        if len(depths) > 1:
            # Each depth adds to the one below it: attaching (empty), finding
            # the flow (filter), recording (full).
            steps = [d for d in ("empty", "filter", "full") if d in depths]
            prev, parts = 1.0, []
            for d in steps:
                m = summary[d]["median_ratio"]
                parts.append(f"{d} {100 * (prev - m):+.1f}%")
                prev = m
            print(f"  {place}: throughput lost by step (medians): " + ", ".join(parts), flush=True)
        result["places"][place] = {"runs": runs, "depths": summary}
        if not a.no_cost_breakdown and "full" in depths:
            c = cost_breakdown(a.tcplab, place, a.groups, a.duration, db, a.cc, a.sample_hz)
            result["places"][place]["cost"] = c
            print(f"  {place}: the probes' programs took {c['cpu_share'] * 100:.1f}% of one CPU "
                  f"(of {os.cpu_count()}); per program:")
            for x in c["programs"]:
                print(f"    {x['name']:<18} {x['ns_per_run']:7.0f} ns/run  {x['runs_per_s'] / 1e3:8.1f}k runs/s"
                      f"  {x['cpu_share'] * 100:5.1f}% of a CPU", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    out = a.out / f"probe-overhead-{stamp}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"raw numbers: {out}")
    Path(db).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

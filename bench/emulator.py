#!/usr/bin/env python3
"""Benchmark tcplab's link emulator against a direct veth pair.

Alternates A/B runs (A = `--topology veth`, a direct veth pair; B =
`--link via=emulator`, the router topology bridged by the emulator with zero
delay and no rate limit) and reports, per measure, the median over rounds
and the ratio B/A:

  * tcp-stream goodput (default 128 KiB writes), and its line rate in 1500-byte frames;
  * udp-stream of 1472-byte datagrams (1514-byte frames), unpaced: frames/s delivered;
  * tcp-rr 1-byte latency p50 and p99: the latency the emulator adds (B - A).

The emulated path runs with checksum and segmentation offloads off (frames
cross the bridge whole, 1500 bytes at most); the direct veth pair keeps the
kernel's defaults, so the ratio includes the cost of plain frames too.

Usage: python3 bench/emulator.py [--rounds 5] [--duration 3] [--tcplab PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FRAME = 1514  # Ethernet frame of a 1472-byte UDP payload


def bench(tcplab, db, test, place, duration, extra):
    cmd = [tcplab, "--db", db, "bench", test, *place, "--duration", f"{duration}s",
           "--repeat", "1", "--json", "--quiet", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration * 4 + 60)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    return {k: v["mean"] for k, v in doc["points"][0]["metrics"].items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--tcplab", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "tcplab"))
    a = ap.parse_args()
    if not os.access(a.tcplab, os.X_OK):
        sys.exit(f"no tcplab binary at {a.tcplab}: run cargo build --release -p tcplab first")
    places = {"veth": ["--topology", "veth"], "emulator": ["--link", "via=emulator"]}
    runs = {name: [] for name in places}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        for r in range(a.rounds):
            order = list(places) if r % 2 == 0 else list(reversed(places))
            for name in order:
                place = places[name]
                tcp = bench(a.tcplab, db, "tcp-stream", place, a.duration, [])
                udp = bench(a.tcplab, db, "udp-stream", place, a.duration, ["--write-size", "1472", "--rcvbuf", "8M"])
                rr = bench(a.tcplab, db, "tcp-rr", place, a.duration, ["--nodelay"])
                m = {
                    "tcp_goodput_bps": tcp["throughput_bps"],
                    "tcp_frames_per_s": tcp["throughput_bps"] / 8 / tcp["snd_mss"],
                    "udp_frames_per_s": udp["datagrams_received"] / udp["delay_s"],
                    "udp_line_bps": udp["datagrams_received"] / udp["delay_s"] * FRAME * 8,
                    "rr_p50_s": rr["latency_p50_s"],
                    "rr_p99_s": rr["latency_p99_s"],
                }
                runs[name].append(m)
                print(f"round {r + 1} {name:8} tcp {m['tcp_goodput_bps'] / 1e9:6.2f} Gbit/s  "
                      f"udp {m['udp_line_bps'] / 1e9:5.2f} Gbit/s of 1514-B frames  "
                      f"rr p50 {m['rr_p50_s'] * 1e6:7.1f} µs p99 {m['rr_p99_s'] * 1e6:7.1f} µs", flush=True)
    med = {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in runs.items()}
    A, B = med["veth"], med["emulator"]
    print("\nmedians over", a.rounds, "alternating rounds (A = direct veth, B = emulator)")
    print(f"{'measure':32} {'A veth':>14} {'B emulator':>14} {'B/A':>8}")
    rows = [
        ("tcp-stream goodput (Gbit/s)", "tcp_goodput_bps", 1e-9),
        ("tcp-stream frames/s (k)", "tcp_frames_per_s", 1e-3),
        ("udp 1514-B frames (Gbit/s)", "udp_line_bps", 1e-9),
        ("udp frames/s (k)", "udp_frames_per_s", 1e-3),
        ("tcp-rr p50 (µs)", "rr_p50_s", 1e6),
        ("tcp-rr p99 (µs)", "rr_p99_s", 1e6),
    ]
    for label, k, s in rows:
        print(f"{label:32} {A[k] * s:14.2f} {B[k] * s:14.2f} {B[k] / A[k]:8.2f}")
    print(f"\nlatency the emulator adds: p50 {(B['rr_p50_s'] - A['rr_p50_s']) * 1e6:.1f} µs, "
          f"p99 {(B['rr_p99_s'] - A['rr_p99_s']) * 1e6:.1f} µs")
    print(f"emulator line rate in 1500-byte frames (TCP): {B['tcp_frames_per_s'] * FRAME * 8 / 1e9:.2f} Gbit/s "
          f"(target ≥ 1 Gbit/s)")
    os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "out", time.strftime("emulator-%Y%m%dT%H%M%SZ.json", time.gmtime()))
    with open(path, "w") as f:
        json.dump({"runs": runs, "medians": med}, f, indent=1)
    print("raw numbers:", path)


if __name__ == "__main__":
    main()

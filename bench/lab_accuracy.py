#!/usr/bin/env python3
"""How accurately the lab imposes links: rate per mechanism, RTT, loss.

For each profile (ether10, lan100) and each mechanism this kernel offers
(tbf, htb, netem if present, emulator) it runs tcp-stream (cubic, 4 s) and
reports the line rate (goodput plus Ethernet/IP/TCP header overhead) against
the target; for man and wan it runs tcp-rr (1 byte, NODELAY) and reports the
median RTT against 2 x delay plus the serialization of the 67-byte frames;
and it runs 100,000 datagrams through a 1% loss link.

Usage: python3 bench/lab_accuracy.py [--tcplab PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def bench(tcplab, db, args):
    out = subprocess.run([tcplab, "--db", db, "bench", *args, "--json", "--quiet"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"tcplab bench {' '.join(args)} failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    return {k: v["mean"] for k, v in doc["points"][0]["metrics"].items()}


def netem_available():
    probe = "tcplab-accuracy-probe"
    subprocess.run(["ip", "netns", "add", probe], capture_output=True)
    try:
        subprocess.run(["ip", "-n", probe, "link", "add", "tcplab-p", "type", "dummy"], capture_output=True)
        r = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "tcplab-p", "root",
                            "netem", "delay", "1ms"], capture_output=True)
        return r.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcplab", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "tcplab"))
    a = ap.parse_args()
    mechs = ["tbf", "htb"] + (["netem"] if netem_available() else []) + ["emulator"]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "acc.db")
        print("rate: tcp-stream, cubic, 4 s x 2 trials; line rate = goodput x (MSS + 66) / MSS")
        print(f"{'profile':8} {'via':9} {'target':>10} {'line rate':>12} {'error':>8}")
        for profile, target in [("ether10", 10e6), ("lan100", 100e6)]:
            for m in mechs:
                r = bench(a.tcplab, db, ["tcp-stream", "--link", f"{profile},via={m}", "--cc", "cubic",
                                         "--duration", "4s", "--repeat", "2"])
                line = r["throughput_bps"] * (r["snd_mss"] + 66) / r["snd_mss"]
                print(f"{profile:8} {m:9} {target / 1e6:8.1f} M {line / 1e6:10.3f} M {(line / target - 1) * 100:+7.2f}%")
        print("\nRTT: tcp-rr, 1 byte, NODELAY, 2 s; target = 2 x delay + 2 x 67-byte frame time")
        for profile, delay, rate in [("man", 0.001, 10e6), ("wan", 0.030, 6e6)]:
            r = bench(a.tcplab, db, ["tcp-rr", "--topology", profile, "--nodelay", "--duration", "2s", "--repeat", "1"])
            target = 2 * delay + 2 * 67 * 8 / rate
            rtt = r["latency_p50_s"]
            print(f"{profile:8} target {target * 1e3:8.3f} ms  p50 {rtt * 1e3:8.3f} ms  "
                  f"p99 {r['latency_p99_s'] * 1e3:8.3f} ms  error {(rtt / target - 1) * 100:+6.2f}%")
        r = bench(a.tcplab, db, ["udp-stream", "--link", "loss=1%,via=emulator", "--write-size", "1000",
                                 "--bytes", "100000000", "--send-rate", "100mbit", "--rcvbuf", "4M", "--repeat", "1"])
        n = r["datagrams_sent"]
        sigma = (0.01 * 0.99 / n) ** 0.5
        print(f"\nloss: {n:.0f} datagrams at 1%: measured {r['loss_rate'] * 100:.3f}% "
              f"(±4σ = ±{4 * sigma * 100:.3f} points); receiver socket drops {r['socket_drops']:.0f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Side-by-side loopback benchmark: tcplab against iperf3, iperf 2, nuttcp and sockperf.

Three cases are measured on 127.0.0.1 only:

  a  tcp-stream, 131072-byte (128 KiB) writes: tcplab, iperf3, iperf (2.x), nuttcp
  b  tcp-stream, 1460-byte writes:             tcplab, iperf3, iperf (2.x), nuttcp
  c  tcp-rr, 14-byte messages (ping-pong):     tcplab, sockperf (TCP)

Every run starts the tool's server as its own process, waits until it
listens, runs the tool's client as a separate process for D seconds, and
then kills the server.  tcplab is driven exactly like its peers
(`tcplab server` + `tcplab bench --to`), never with its embedded server.

Runs alternate A/B style: in round r every tool of a case runs once, in an
order rotated by r positions, so no tool always goes first or last.

Per run we record the tool's own throughput report and byte count, and
system-wide busy CPU seconds from /proc/stat (user+nice+system+irq+softirq
jiffies of all CPUs / USER_HZ; idle, iowait and hypervisor steal are not
busy) sampled right before the client is started and right after it exits.  The same method is used for every tool,
so forked helpers, server threads and softirq work are all charged.
Efficiency is bytes (or transactions) per busy CPU-second.

The report gives per tool the median over rounds of throughput and of
efficiency, and the median over rounds of the per-round ratio tcplab/tool
(runs paired by round).  Raw numbers go to bench/out/peers-<UTC>.json.
"""

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HOST = "127.0.0.1"  # all traffic stays on loopback
USER_HZ = os.sysconf("SC_CLK_TCK")

# Ports (all within 5400-5499); one fixed block per tool.
PORT = {
    "tcplab": 5400,
    "iperf3": 5410,
    "iperf": 5420,
    "nuttcp": 5430,  # control; data on 5431
    "sockperf": 5440,
}

CASES = {
    "a": dict(key="a", test="tcp-stream", size=131072,
              title="tcp-stream, 131072-byte (128 KiB) writes",
              tools=["tcplab", "iperf3", "iperf", "nuttcp"]),
    "b": dict(key="b", test="tcp-stream", size=1460,
              title="tcp-stream, 1460-byte writes",
              tools=["tcplab", "iperf3", "iperf", "nuttcp"]),
    "c": dict(key="c", test="tcp-rr", size=14,
              title="tcp-rr, 14-byte request/response (ping-pong)",
              tools=["tcplab", "sockperf"]),
}

BINARY = {"iperf3": "iperf3", "iperf": "iperf", "nuttcp": "nuttcp", "sockperf": "sockperf"}


# --------------------------------------------------------------------------
# CPU accounting


def cpu_sample():
    """Aggregate 'cpu' line of /proc/stat, in jiffies."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    assert fields[0] == "cpu"
    v = [int(x) for x in fields[1:]] + [0] * 10
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    # guest/guest_nice are already included in user/nice: not added again.
    # steal (time the hypervisor gave to other guests) is not work done here:
    # it is kept apart, and a run with much of it is treated as disturbed.
    busy = user + nice + system + irq + softirq
    return {"busy": busy, "steal": steal, "irq": irq + softirq,
            "total": busy + steal + idle + iowait, "t": time.monotonic()}


def cpu_delta(a, b):
    busy = (b["busy"] - a["busy"]) / USER_HZ
    total = (b["total"] - a["total"]) / USER_HZ
    return {"busy_cpu_s": busy, "steal_cpu_s": (b["steal"] - a["steal"]) / USER_HZ,
            "irq_cpu_s": (b["irq"] - a["irq"]) / USER_HZ, "all_cpu_s": total,
            "busy_frac": busy / total if total > 0 else 0.0,
            # busy or stolen: how much of the machine was unavailable to us
            "load_frac": (busy + (b["steal"] - a["steal"]) / USER_HZ) / total if total > 0 else 0.0}


def busy_fraction(seconds):
    a = cpu_sample()
    time.sleep(seconds)
    return cpu_delta(a, cpu_sample())


# --------------------------------------------------------------------------
# Process helpers


def listening(port):
    """True if some socket listens on TCP `port` (read from /proc, no probe)."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, state = parts[1], parts[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except FileNotFoundError:
            pass
    return False


class Server:
    """A tool's server, started fresh for one run and always killed."""

    def __init__(self, cmd, port, workdir, timeout):
        self.cmd = cmd
        self.port = port
        self.log = open(os.path.join(workdir, "server.log"), "w+")
        self.proc = None
        self.timeout = timeout

    def start(self):
        if listening(self.port):
            raise RuntimeError(f"port {self.port} is already in use; is an old server running?")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.tail()}")
            if listening(self.port):
                return
            time.sleep(0.02)
        raise RuntimeError(f"server did not listen on port {self.port} within 10 s: {self.tail()}")

    def cpu_s(self):
        """utime+stime of the server process (all its threads), in seconds."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            return (int(rest[11]) + int(rest[12])) / USER_HZ
        except (OSError, IndexError, AttributeError):
            return None

    def tail(self, n=400):
        try:
            self.log.flush()
            self.log.seek(0)
            return self.log.read()[-n:].strip()
        except Exception:
            return ""

    def stop(self):
        """SIGTERM our server (and its own process group), then SIGKILL."""
        p = self.proc
        if p is not None:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
            # Anything the server forked lives in the session we created for it.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc = None
        # Wait for the listening socket to go away so the next run can bind.
        deadline = time.monotonic() + 5
        while listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.log.close()


# --------------------------------------------------------------------------
# Tools: server command, client command, and a parser of the client's report.
# Every parser returns dict(value=<bits/s or transactions/s>, bytes=..., and for
# rr transactions=<count used for transactions per CPU-second>).


def tool_cmds(tool, case, D, args, workdir):
    size, port = case["size"], PORT[tool]
    if tool == "tcplab":
        tl = str(args.tcplab)
        srv = [tl, "server", "--bind", HOST, "--port", str(port),
               "--db", os.path.join(workdir, "server.db")]
        cli = [tl, "bench", case["test"], "--to", f"{HOST}:{port}",
               "--write-size", str(size), "--duration", f"{D}s", "--repeat", "1",
               "--json", "--quiet", "--db", os.path.join(workdir, "client.db")]
        if case["test"] == "tcp-rr":
            cli += ["--nodelay"]  # sockperf ping-pong sets TCP_NODELAY by default
        elif args.match_reads:
            cli += ["--read-size", str(size)]
        return srv, cli
    if tool == "iperf3":
        srv = ["iperf3", "-s", "-1", "-B", HOST, "-p", str(port)]
        cli = ["iperf3", "-c", HOST, "-p", str(port), "-l", str(size), "-t", str(D), "-J"]
        return srv, cli
    if tool == "iperf":
        srv = ["iperf", "-s", "-B", HOST, "-p", str(port)]
        if args.match_reads:
            srv += ["-l", str(size)]
        cli = ["iperf", "-c", HOST, "-p", str(port), "-l", str(size), "-t", str(D), "-y", "C"]
        return srv, cli
    if tool == "nuttcp":
        srv = ["nuttcp", "-S", "--nofork", "-P", str(port), "-p", str(port + 1)]
        cli = ["nuttcp", f"-T{D}", f"-l{size}", "-P", str(port), "-p", str(port + 1), HOST]
        return srv, cli
    if tool == "sockperf":
        srv = ["sockperf", "server", "--tcp", "-i", HOST, "-p", str(port)]
        cli = ["sockperf", "ping-pong", "--tcp", "-i", HOST, "-p", str(port),
               "-m", str(size), "-t", str(D)]
        return srv, cli
    raise ValueError(tool)


def parse_tcplab(out, case):
    d = json.loads(out)
    pts = d.get("points") or []
    if not pts:
        raise ValueError("no points in tcplab JSON")
    pt = pts[0]
    if not pt.get("trials_ok"):
        raise ValueError(f"tcplab trial failed: {pt.get('failures')}")
    m = pt["metrics"]
    r = {"bytes": m["bytes"]["mean"], "run_id": d.get("run_id"),
         "tool_busy_s": m.get("busy_s", {}).get("mean")}
    if case["test"] == "tcp-rr":
        r["value"] = m["transactions_per_s"]["mean"]
        r["transactions"] = m["transactions"]["mean"]
    else:
        r["value"] = m["throughput_bps"]["mean"]
    return r


def parse_iperf3(out, case):
    d = json.loads(out)
    if d.get("error"):
        raise ValueError(f"iperf3: {d['error']}")
    s = d["end"]["sum_received"]
    return {"value": s["bits_per_second"], "bytes": s["bytes"], "seconds": s["seconds"]}


def parse_iperf(out, case):
    lines = [l for l in out.splitlines() if l.count(",") >= 8]
    if not lines:
        raise ValueError("no CSV line in iperf output")
    f = lines[-1].split(",")
    return {"value": float(f[-1]), "bytes": float(f[-2]), "interval": f[-3]}


NUTTCP_RE = re.compile(r"([\d.]+)\s+MB\s*/\s*([\d.]+)\s+sec\s*=\s*([\d.]+)\s+Mbps")


def parse_nuttcp(out, case):
    m = None
    for m in NUTTCP_RE.finditer(out):
        pass
    if m is None:
        raise ValueError("no '... MB / ... sec = ... Mbps' line in nuttcp output")
    mb, sec, mbps = (float(x) for x in m.groups())
    # nuttcp's MB is 2^20 bytes, its Mbps is 10^6 bits/s.
    return {"value": mbps * 1e6, "bytes": mb * 1048576, "seconds": sec}


SOCKPERF_VALID = re.compile(
    r"\[Valid Duration\]\s*RunTime=([\d.]+)\s*sec;\s*SentMessages=(\d+);\s*ReceivedMessages=(\d+)")
SOCKPERF_TOTAL = re.compile(
    r"\[Total Run\]\s*RunTime=([\d.]+)\s*sec;.*?SentMessages=(\d+);\s*ReceivedMessages=(\d+)")


def parse_sockperf(out, case):
    v = SOCKPERF_VALID.search(out)
    if not v:
        raise ValueError("no '[Valid Duration] RunTime=...' line in sockperf output")
    run_s, _, recv = float(v.group(1)), int(v.group(2)), int(v.group(3))
    t = SOCKPERF_TOTAL.search(out)
    # Transactions per CPU-second use every round trip made while the CPU was
    # sampled ([Total Run], warm-up included); rate uses the valid window.
    total_recv = int(t.group(3)) if t else recv
    return {"value": recv / run_s, "valid_s": run_s, "valid_received": recv,
            "transactions": total_recv, "total_run_s": float(t.group(1)) if t else None,
            "bytes": 2 * case["size"] * total_recv}


PARSE = {"tcplab": parse_tcplab, "iperf3": parse_iperf3, "iperf": parse_iperf,
         "nuttcp": parse_nuttcp, "sockperf": parse_sockperf}


# --------------------------------------------------------------------------
# One run


def wait_quiet(limit_s, threshold):
    """Wait (up to limit_s) for a 0.5 s window with system busy < threshold."""
    t0 = time.monotonic()
    while True:
        q = busy_fraction(0.5)
        if q["load_frac"] < threshold or time.monotonic() - t0 >= limit_s:
            q["waited_s"] = round(time.monotonic() - t0, 2)
            return q


def measure_once(tool, case, rnd, args):
    D = args.duration
    rec = {"case": case["key"], "tool": tool, "round": rnd, "ok": False, "noisy": False}
    workdir = tempfile.mkdtemp(prefix=f"peers-{tool}-")
    srv_cmd, cli_cmd = tool_cmds(tool, case, D, args, workdir)
    if args.pin:
        # Same placement for every tool: the server (receiver) on one CPU,
        # the client (sender) on another; forked children inherit it.
        srv_cmd = ["taskset", "-c", str(args.pin[0])] + srv_cmd
        cli_cmd = ["taskset", "-c", str(args.pin[1])] + cli_cmd
    rec["server_cmd"], rec["client_cmd"] = srv_cmd, cli_cmd
    server = Server(srv_cmd, PORT[tool], workdir, D + 30)
    try:
        server.start()
        time.sleep(0.2)  # let the server settle after listen()
        pre = wait_quiet(args.wait_quiet, args.quiet_threshold)
        rec["pre_busy_frac"] = round(pre["load_frac"], 4)
        rec["pre_waited_s"] = pre["waited_s"]
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s0 = server.cpu_s()
        a = cpu_sample()
        try:
            p = subprocess.run(cli_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True, timeout=D + 30,
                               env=dict(os.environ, LC_ALL="C"))
        except subprocess.TimeoutExpired:
            rec["error"] = f"client timed out after {D + 30} s"
            return rec
        b = cpu_sample()
        s1 = server.cpu_s()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c = cpu_delta(a, b)
        wall = b["t"] - a["t"]
        client_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        server_cpu = (s1 - s0) if (s0 is not None and s1 is not None) else 0.0
        # Busy time not explained by our two processes (their utime+stime
        # already include the softirq work done in their context): an
        # estimate of other load on the machine during the run.
        other = c["busy_cpu_s"] - client_cpu - server_cpu
        rec.update(wall_s=round(wall, 4), busy_cpu_s=c["busy_cpu_s"],
                   steal_cpu_s=c["steal_cpu_s"], irq_softirq_cpu_s=c["irq_cpu_s"],
                   client_cpu_s=round(client_cpu, 4), server_cpu_s=round(server_cpu, 4),
                   other_cpu_s=round(other, 4), rc=p.returncode)
        rec["noisy"] = (pre["load_frac"] >= args.quiet_threshold
                        or (other + c["steal_cpu_s"]) / wall
                        > args.quiet_threshold * (os.cpu_count() or 1))
        if p.returncode != 0:
            rec["error"] = f"client exit status {p.returncode}: {(p.stderr or p.stdout)[-400:].strip()}"
            rec["stderr_tail"] = p.stderr[-2000:]
            return rec
        try:
            r = PARSE[tool](p.stdout + ("\n" + p.stderr if tool == "sockperf" else ""), case)
        except Exception as e:  # keep going, report the unparsable output
            rec["error"] = f"could not parse {tool} output: {e!r}"
            rec["stdout_tail"] = p.stdout[-2000:]
            rec["stderr_tail"] = p.stderr[-2000:]
            return rec
        rec.update(r)
        busy = c["busy_cpu_s"]
        if case["test"] == "tcp-rr":
            rec["eff"] = r["transactions"] / busy if busy > 0 else None  # transactions per CPU-s
        else:
            rec["eff"] = r["bytes"] / busy if busy > 0 else None  # bytes per CPU-s
        rec["ok"] = rec["eff"] is not None
        if not rec["ok"]:
            rec["error"] = "no busy CPU time measured"
        return rec
    except Exception as e:
        rec["error"] = f"{type(e).__name__}: {e}"
        return rec
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def run_one(tool, case, rnd, args, discarded):
    """Measure once; repeat (up to --retry-noisy times) if other load disturbed the run."""
    for attempt in range(args.retry_noisy + 1):
        rec = measure_once(tool, case, rnd, args)
        rec["attempt"] = attempt + 1
        if not (rec["ok"] and rec["noisy"]) or attempt == args.retry_noisy:
            return rec
        rec["discarded"] = True
        discarded.append(rec)
        print(f"  round {rnd} {tool:<9} other load during the run "
              f"({rec['other_cpu_s']:.2f} CPU-s, steal {rec['steal_cpu_s']:.2f} CPU-s, "
              f"before {rec['pre_busy_frac']:.0%}); retrying",
              flush=True)
        time.sleep(2)


# --------------------------------------------------------------------------
# Reporting


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=2, width=0):
    s = "n/a" if x is None else f"{x:.{nd}f}"
    return s.rjust(width) if width else s


def summarize(case, tools, runs):
    rr = case["test"] == "tcp-rr"
    # value scale: Gbit/s for streams, transactions/s for rr
    vs = (lambda v: v) if rr else (lambda v: v / 1e9)
    es = (lambda e: e) if rr else (lambda e: e / 1e6)
    by = {t: {r["round"]: r for r in runs if r["tool"] == t and r["ok"]} for t in tools}
    base = by.get("tcplab", {})
    summary = {}
    for t in tools:
        rs = by[t]
        s = {"n_ok": len(rs), "n": sum(1 for r in runs if r["tool"] == t),
             "value_median": med([r["value"] for r in rs.values()]),
             "eff_median": med([r["eff"] for r in rs.values()]),
             "busy_cores_median": med([r["busy_cpu_s"] / r["wall_s"] for r in rs.values()]),
             "values": {k: r["value"] for k, r in rs.items()},
             "effs": {k: r["eff"] for k, r in rs.items()}}
        common = sorted(set(rs) & set(base))
        if t != "tcplab" and common:
            rv = [base[k]["value"] / rs[k]["value"] for k in common]
            re_ = [base[k]["eff"] / rs[k]["eff"] for k in common]
            s.update(ratio_value_median=med(rv), ratio_eff_median=med(re_),
                     ratio_value_range=[min(rv), max(rv)], ratio_eff_range=[min(re_), max(re_)],
                     ratio_rounds=len(common))
        summary[t] = s

    vunit = "trans/s" if rr else "Gbit/s"
    eunit = "trans/CPU-s" if rr else "MB/CPU-s"
    lines = []
    head = (f"{'tool':<9} {('thru ' + vunit):>14} {eunit:>12} {'busy cores':>10}   "
            f"{'tcplab/tool thru [min-max]':>27}   {'tcplab/tool eff [min-max]':>26}  ok")
    lines.append(head)
    lines.append("-" * len(head))
    for t in tools:
        s = summary[t]
        vd = 0 if rr else 2
        ed = 0 if rr else 1
        if t == "tcplab" or "ratio_value_median" not in s:
            rv = "—" if t == "tcplab" else "n/a"
            re_ = rv
        else:
            rv = (f"{s['ratio_value_median']:.2f} [{s['ratio_value_range'][0]:.2f}-"
                  f"{s['ratio_value_range'][1]:.2f}]")
            re_ = (f"{s['ratio_eff_median']:.2f} [{s['ratio_eff_range'][0]:.2f}-"
                   f"{s['ratio_eff_range'][1]:.2f}]")
        v = None if s["value_median"] is None else vs(s["value_median"])
        e = None if s["eff_median"] is None else es(s["eff_median"])
        lines.append(f"{t:<9} {fmt(v, vd, 14)} {fmt(e, ed, 12)} {fmt(s['busy_cores_median'], 2, 10)}   "
                     f"{rv:>27}   {re_:>26}  {s['n_ok']}/{s['n']}")
    lines.append("")
    lines.append(f"runs by round (thru {vunit} / {eunit} / busy CPU-s; * = other load on the "
                 f"machine during or just before the run):")
    for t in tools:
        cells = []
        for r in sorted((r for r in runs if r["tool"] == t), key=lambda r: r["round"]):
            flag = "*" if r.get("noisy") else ""
            if r["ok"]:
                if rr:
                    cells.append(f"{r['value']:.0f}/{r['eff']:.0f}/{r['busy_cpu_s']:.2f}{flag}")
                else:
                    cells.append(f"{vs(r['value']):.2f}/{es(r['eff']):.0f}/{r['busy_cpu_s']:.2f}{flag}")
            else:
                cells.append("FAIL")
        lines.append(f"  {t:<9} " + "  ".join(cells))
    return summary, lines


# --------------------------------------------------------------------------


def tool_version(tool, args):
    cmd = {"tcplab": [str(args.tcplab), "--version"], "iperf3": ["iperf3", "--version"],
           "iperf": ["iperf", "-v"], "nuttcp": ["nuttcp", "-V"],
           "sockperf": ["sockperf", "--version"]}[tool]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
        return (p.stdout.strip().splitlines() or [""])[0]
    except Exception as e:
        return f"unknown ({e})"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Cases: a = tcp-stream 128 KiB writes, b = tcp-stream 1460-byte writes, "
               "c = tcp-rr 14-byte ping-pong. All traffic goes to 127.0.0.1, ports 5400-5449.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="A/B rounds per case (R)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per run (D)")
    ap.add_argument("--quick", action="store_true", help="fast look: R=2, D=2")
    ap.add_argument("--cases", default="a,b,c", help="comma-separated subset of a,b,c")
    ap.add_argument("--tools", default=None,
                    help="comma-separated subset of tcplab,iperf3,iperf,nuttcp,sockperf")
    ap.add_argument("--tcplab", type=Path, default=ROOT / "target" / "release" / "tcplab",
                    help="tcplab binary (build: cargo build --release -p tcplab)")
    ap.add_argument("--match-reads", action="store_true",
                    help="streams: also make tcplab and the iperf 2 server read in write-size "
                         "chunks, as the iperf3 and nuttcp receivers always do")
    ap.add_argument("--pin", default=None, metavar="SERVER_CPU,CLIENT_CPU",
                    help="run every tool's server and client under taskset on these CPUs "
                         "(e.g. 1,0): the scheduler's placement then cannot differ between "
                         "tools or rounds, which on a 2-CPU machine is the largest source of "
                         "run-to-run spread in case a")
    ap.add_argument("--wait-quiet", type=float, default=30.0,
                    help="before each run wait up to this many seconds for a quiet 0.5 s window")
    ap.add_argument("--quiet-threshold", type=float, default=0.10,
                    help="system busy fraction below which the machine counts as quiet")
    ap.add_argument("--retry-noisy", type=int, default=2,
                    help="re-measure a run up to N times when other load disturbed it "
                         "(discarded runs are kept in the JSON)")
    ap.add_argument("--out", type=Path, default=HERE / "out", help="directory for the raw JSON")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.duration = 2, 2
    if args.pin:
        try:
            args.pin = [int(x) for x in args.pin.split(",")]
            assert len(args.pin) == 2 and all(0 <= c < (os.cpu_count() or 1) for c in args.pin)
        except (ValueError, AssertionError):
            ap.error(f"--pin wants two CPU numbers below {os.cpu_count()}, like 1,0")
        if not shutil.which("taskset"):
            ap.error("--pin needs taskset (Debian package util-linux)")
    if args.rounds < 1 or args.duration < 1:
        ap.error("--rounds and --duration must be >= 1")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case {c!r}")
    only = set(t.strip() for t in args.tools.split(",")) if args.tools else None

    available = {}
    if not (args.tcplab.is_file() and os.access(args.tcplab, os.X_OK)):
        print(f"error: tcplab binary {args.tcplab} not found; build it with "
              f"`cargo build --release -p tcplab` or pass --tcplab", file=sys.stderr)
        return 2
    available["tcplab"] = True
    for t, b in BINARY.items():
        available[t] = shutil.which(b) is not None
        if not available[t]:
            print(f"note: skipping {t}: binary '{b}' not found in PATH")

    ncpu = os.cpu_count()
    started = dt.datetime.now(dt.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    print(f"tcplab vs peers on {HOST}: {args.rounds} rounds x {args.duration} s per run, "
          f"{ncpu} CPUs, USER_HZ={USER_HZ}, {platform.release()}")
    versions = {t: tool_version(t, args) for t in PORT if available.get(t)}
    for t, v in versions.items():
        print(f"  {t:<9} {v}")
    idle = busy_fraction(1.0)
    print(f"idle check (1 s): system busy {idle['busy_frac']:.1%} of {ncpu} CPUs "
          f"({idle['busy_cpu_s']:.2f} CPU-s, steal {idle['steal_cpu_s']:.2f})"
          + ("  -- WARNING: machine is not quiet" if idle["load_frac"] >= args.quiet_threshold else ""))
    print("CPU = system-wide busy jiffies (/proc/stat user+nice+system+irq+softirq, all CPUs) "
          "from client start to client exit")
    print()

    result = {"started_utc": started.isoformat(), "host": platform.node(),
              "kernel": platform.release(), "cpus": ncpu, "user_hz": USER_HZ,
              "rounds": args.rounds, "duration_s": args.duration,
              "match_reads": args.match_reads, "pin": args.pin, "versions": versions,
              "idle_check": idle, "cases": {}}
    out_path = None
    try:
        for ck in cases:
            case = CASES[ck]
            tools = [t for t in case["tools"] if available.get(t) and (only is None or t in only)]
            if not tools:
                continue
            print(f"== case {ck}: {case['title']} ==", flush=True)
            runs, discarded = [], []
            for rnd in range(1, args.rounds + 1):
                k = (rnd - 1) % len(tools)
                order = tools[k:] + tools[:k]
                for t in order:
                    rec = run_one(t, case, rnd, args, discarded)
                    runs.append(rec)
                    if rec["ok"]:
                        v = (f"{rec['value']:.0f} trans/s" if case["test"] == "tcp-rr"
                             else f"{rec['value'] / 1e9:.2f} Gbit/s")
                        print(f"  round {rnd} {t:<9} {v}, busy {rec['busy_cpu_s']:.2f} CPU-s"
                              f" in {rec['wall_s']:.2f} s"
                              + (f" (NOISY: other load {rec['other_cpu_s']:.2f} CPU-s, "
                                 f"steal {rec['steal_cpu_s']:.2f} CPU-s)"
                                 if rec["noisy"] else ""),
                              flush=True)
                    else:
                        print(f"  round {rnd} {t:<9} FAILED: {rec.get('error')}", flush=True)
                    time.sleep(0.3)
            summary, lines = summarize(case, tools, runs)
            result["cases"][ck] = {"title": case["title"], "test": case["test"],
                                   "size": case["size"], "tools": tools, "runs": runs,
                                   "discarded_noisy_runs": discarded,
                                   "summary": summary}
            print()
            print(f"case {ck}: {case['title']} — medians over {args.rounds} rounds; ratios are "
                  f"medians of per-round tcplab/tool ratios")
            for l in lines:
                print(l)
            if discarded:
                print(f"  ({len(discarded)} run(s) disturbed by other load were re-measured; "
                      f"the discarded ones are in the JSON)")
            print(flush=True)
    finally:
        result["finished_utc"] = dt.datetime.now(dt.timezone.utc).isoformat()
        args.out.mkdir(parents=True, exist_ok=True)
        out_path = args.out / f"peers-{stamp}.json"
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1, default=str)
        print(f"raw numbers: {out_path}")
    notes = ["MB = 10^6 bytes; Gbit = 10^9 bits; busy cores = busy CPU-s / client wall s "
             f"(max {ncpu})."]
    if not args.match_reads and any(c in ("a", "b") for c in cases):
        notes.append("streams: the iperf3 and nuttcp receivers read in write-size chunks; "
                     "tcplab reads up to 512 KiB and the iperf 2 server up to 128 KiB "
                     "(see --match-reads).")
    if any(c in ("a", "b") for c in cases):
        notes.append("streams: the tcplab receiver sets SO_RCVLOWAT to twice the write size "
                     "(32-256 KiB, capped at its read size) after its first read (--rcvlowat "
                     "auto, its default); --rcvlowat 1 is the kernel's default.")
    if args.pin:
        notes.append(f"every server ran under taskset -c {args.pin[0]}, every client under "
                     f"taskset -c {args.pin[1]}.")
    if "c" in cases:
        notes.append("rr: tcplab runs with --nodelay (sockperf's default); sockperf trans/s is "
                     "from [Valid Duration], its trans/CPU-s counts [Total Run] round trips.")
    for n in notes:
        print("note: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())

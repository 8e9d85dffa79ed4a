#!/usr/bin/env bash
# syscalls.sh — show that tcplab's data path makes one write(2) per application
# write and no per-write poll/select.
#
# Runs `strace -f -c` on
#     tcplab bench tcp-stream --write-size 1460 --bytes SIZE --repeat 1 --quiet
# (embedded loopback server: sender and receiver are threads of the one traced
# process), prints strace's syscall summary table, then:
#   * write calls per 1460-byte chunk (expected ~1.0: SIZE/1460 write calls);
#   * poll/ppoll/select/pselect6/epoll_wait/epoll_pwait/epoll_pwait2 calls
#     (expected few, and not growing with SIZE: only the control channel is
#     ever polled, with a 100 ms timeout; the data sockets are blocking and
#     never polled);
#   * futex calls (thread hand-offs and the trial watchdogs' 50 ms timed
#     waits: they grow with elapsed time, not with bytes).
# It does this for two sizes (default 200M and 50M; K/M/G are powers of 1024,
# as in tcplab) and compares how write and poll counts scale with the bytes.
#
# strace slows the transfer a lot; that is fine, it is counting calls.
#
# Usage: bench/syscalls.sh [SIZE ...]        (default: 200M 50M)
#        TCPLAB=/path/to/tcplab bench/syscalls.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
TCPLAB=${TCPLAB:-$root/target/release/tcplab}
WRITE=1460
POLLS='poll|ppoll|select|pselect6|_newselect|epoll_wait|epoll_pwait|epoll_pwait2'

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
fi
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(200M 50M)

command -v strace >/dev/null || { echo "error: strace not found in PATH" >&2; exit 2; }
[[ -x $TCPLAB ]] || {
    echo "error: $TCPLAB not found; build it with: cargo build --release -p tcplab" >&2
    exit 2
}

to_bytes() {  # 200M -> 209715200 (powers of 1024, like tcplab)
    local s=${1^^} n mult=1
    case $s in
        *K) mult=1024 ;;
        *M) mult=$((1024 * 1024)) ;;
        *G) mult=$((1024 * 1024 * 1024)) ;;
    esac
    n=${s%[KMG]}
    [[ $n =~ ^[0-9]+$ ]] || { echo "error: bad size '$1'" >&2; exit 2; }
    echo $((n * mult))
}

# calls of the syscalls matching regex $2 in strace -c summary $1
calls() {
    awk -v re="^($2)\$" '
        $1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" && $NF ~ re { n += $4 }
        END { print n + 0 }' "$1"
}

tmp=$(mktemp -d /tmp/tcplab-syscalls.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

declare -A W P B T F
for size in "${sizes[@]}"; do
    bytes=$(to_bytes "$size")
    chunks=$(( (bytes + WRITE - 1) / WRITE ))
    echo "== strace -f -c  tcplab bench tcp-stream --write-size $WRITE --bytes $size (embedded server) =="
    t0=$(date +%s.%N)
    if ! timeout 900 strace -f -c -o "$tmp/strace-$size.txt" \
        "$TCPLAB" bench tcp-stream --write-size "$WRITE" --bytes "$size" --repeat 1 \
        --quiet --db "$tmp/run-$size.db" >"$tmp/out-$size.txt" 2>&1; then
        echo "error: traced tcplab run failed:" >&2
        cat "$tmp/out-$size.txt" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    cat "$tmp/strace-$size.txt"
    w=$(calls "$tmp/strace-$size.txt" write)
    other=$(calls "$tmp/strace-$size.txt" 'writev|sendto|sendmsg|sendmmsg|sendfile|pwrite64')
    p=$(calls "$tmp/strace-$size.txt" "$POLLS")
    fx=$(calls "$tmp/strace-$size.txt" futex)
    el=$(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }')
    W[$size]=$w P[$size]=$p B[$size]=$bytes T[$size]=$el F[$size]=$fx
    echo
    awk -v w="$w" -v c="$chunks" -v s="$size" -v b="$bytes" -v o="$other" 'BEGIN {
        printf "write calls: %d for %d %d-byte chunks (%s = %d bytes): %.4f writes per chunk\n",
               w, c, '"$WRITE"', s, b, w / c
        printf "  (all processes and threads; includes a handful of non-data writes; other\n"
        printf "   send/write-family calls: %d, e.g. control messages and SQLite pwrite64)\n", o }'
    echo "poll-family calls ($POLLS): $p in ${el}s of traced run"
    echo "futex calls (thread hand-offs, and the trial watchdogs' 50 ms timed waits, which"
    echo "  follow elapsed time, not bytes): $fx"
    echo
done

if [[ ${#sizes[@]} -ge 2 ]]; then
    a=${sizes[0]} b=${sizes[1]}
    echo "== scaling: $a vs $b =="
    awk -v a="$a" -v b="$b" -v ba="${B[$a]}" -v bb="${B[$b]}" -v wa="${W[$a]}" -v wb="${W[$b]}" \
        -v pa="${P[$a]}" -v pb="${P[$b]}" -v ta="${T[$a]}" -v tb="${T[$b]}" \
        -v fa="${F[$a]}" -v fb="${F[$b]}" 'BEGIN {
        printf "%-28s %12s %12s %8s\n", "", a, b, "ratio"
        printf "%-28s %12d %12d %8.2f\n", "bytes", ba, bb, ba / bb
        printf "%-28s %12d %12d %8.2f\n", "write calls", wa, wb, wa / wb
        printf "%-28s %12d %12d %8s\n", "poll-family calls", pa, pb, (pb ? sprintf("%.2f", pa / pb) : "-")
        printf "%-28s %12d %12d %8s\n", "futex calls", fa, fb, (fb ? sprintf("%.2f", fa / fb) : "-")
        printf "%-28s %12.1f %12.1f %8.2f\n", "traced wall time (s)", ta, tb, ta / tb
        print ""
        print "write calls scale with the bytes (one write per 1460-byte chunk); poll-family"
        print "calls do not: they come from the control channel, not from the data path." }'
fi

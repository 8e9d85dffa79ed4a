// SPDX-License-Identifier: GPL-2.0
/* tcplab's probes on the kernel's TCP/IP path: the four queues of the SunOS
 * IPC study (send socket, interface, IP input, receive socket), TCP's view
 * of every arriving segment, retransmissions and the scheduler switches of
 * the experiment's threads. Raw tracepoints only (no kprobes, no fentry),
 * fields read through CO-RE. Only the experiment's flows are recorded: the
 * ports and the thread group are read-only data set before load. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "events.h"
#include "depth.h"

/* A tcp_sock field, or 0 for a socket that is not TCP (UDP flows). */
#define TP(tp, f) ((tp) ? (tp)->f : 0)

char LICENSE[] SEC("license") = "GPL";

const volatile __u16 filter_ports[MAX_PORTS] = {};
const volatile __u32 n_ports = 0;
const volatile __u32 filter_tgid = 0;
/* Set by user space while a trial is recorded; cleared before the final
 * drain so no program writes while the ring buffer is read. */
volatile __u32 enabled = 0;

/* The probe reader's own thread: its switches are not the experiment's. */
const volatile __u32 ignore_tid = 0;

/* DEPTH_FULL, DEPTH_FILTER or DEPTH_EMPTY (depth.h). */
const volatile __u32 depth = DEPTH_FULL;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

/* Records reach the ring buffer in batches: one bpf_ringbuf_output per
 * BATCH records instead of a reserve/submit per record, which on the
 * development VM was the largest part of a record's cost.
 *
 * Nesting: on one CPU a program can be interrupted (softirq, hard irq) by
 * another program, never preempted (tracepoints run with preemption off),
 * so invocations nest strictly last-in first-out. Each program takes the
 * next nesting level with an atomic add on entry and gives it back on exit,
 * and writes only the batch of its level: a batch is never touched by two
 * invocations at once. User space reads the partial batches after the
 * stop protocol (enabled = 0, then every level count back to 0). */
#define BATCH 32
#define NEST 4

struct batches {
	__u32 nest;             /* levels in use on this CPU */
	__u32 n[NEST];          /* records waiting in each level's batch */
	__u32 pad[3];
	struct probe_event rec[NEST][BATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batches);
} batch SEC(".maps");

/* Records handed to the ring buffer, per CPU (whole batches). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} flushed SEC(".maps");

/* Records lost per probe: the ring buffer was full when their batch was
 * output, or the invocation nested deeper than NEST levels. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, P_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void add(void *map, __u32 key, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(map, &key);
	/* Atomic: a program interrupting another on this CPU adds too. */
	if (c)
		__sync_fetch_and_add(c, n);
}

static __always_inline bool port_match(__u16 a, __u16 b)
{
	if (n_ports == 0)
		return true;
#pragma unroll
	for (int i = 0; i < MAX_PORTS; i++) {
		if (i >= n_ports)
			break;
		if (filter_ports[i] == a || filter_ports[i] == b)
			return true;
	}
	return false;
}

/* The slot of one record being written: its batch and nesting level. */
struct slot {
	struct batches *b;
	__u32 level;
};

/* Takes a nesting level and a record slot in its batch, or returns 0 (and
 * takes nothing) when recording is off or the depth records nothing.
 * Every non-zero return must be followed by submit(). */
static __always_inline struct probe_event *reserve(__u8 probe, struct slot *s)
{
	if (depth != DEPTH_FULL)
		return 0;
	__u32 zero = 0;
	struct batches *b = bpf_map_lookup_elem(&batch, &zero);
	if (!b)
		return 0;
	/* A plain (not atomic) increment is enough: only a program nested in
	 * this one runs on this CPU before it returns, and a nested program
	 * gives its level back before returning, so an interrupt between the
	 * load and the store leaves the value as it found it. (Two programs
	 * may then use the same level, but one after the other: the nested
	 * one has finished before the outer one reads its slot below.) */
	__u32 level = b->nest;
	b->nest = level + 1;
	barrier();
	/* Checked after taking the level: once user space clears `enabled`
	 * and sees every level free, no program can still be writing. */
	if (!enabled || level >= NEST) {
		if (level >= NEST && enabled)
			add(&lost, probe, 1);
		b->nest = level;
		return 0;
	}
	level &= NEST - 1;
	__u32 n = b->n[level] & (BATCH - 1);
	struct probe_event *e = &b->rec[level][n];
	s->b = b;
	s->level = level;
	e->ts_ns = bpf_ktime_get_ns();
	e->probe = probe;
	e->cpu = bpf_get_smp_processor_id();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->pad = 0;
	e->ifindex = 0;
	e->seq = 0;
	e->ack = 0;
	e->win = 0;
	e->flags = 0;
	e->id = 0;
	e->len = 0;
	e->sport = 0;
	e->dport = 0;
	e->x[0] = e->x[1] = e->x[2] = e->x[3] = 0;
	return e;
}

/* Commits the record in the slot; a full batch goes to the ring buffer. */
static __always_inline void submit(struct slot *s)
{
	struct batches *b = s->b;
	__u32 level = s->level & (NEST - 1);
	__u32 n = (b->n[level] & (BATCH - 1)) + 1;
	if (n < BATCH) {
		b->n[level] = n;
	} else {
		if (bpf_ringbuf_output(&events, b->rec[level], sizeof(b->rec[level]),
				       BPF_RB_NO_WAKEUP) == 0) {
			add(&flushed, 0, BATCH);
		} else {
			for (int i = 0; i < BATCH; i++)
				add(&lost, b->rec[level][i].probe, 1);
		}
		b->n[level] = 0;
	}
	barrier();
	b->nest = level;
}

struct tcp_fields {
	__u16 sport, dport, win;
	__u8 flags;
	__u32 seq, ack, payload;
};

/* Decodes the first 16 bytes of a TCP header; payload = bytes after the
 * header among `after` bytes. */
static __always_inline void decode_tcp(const __u8 *h, __u32 after, struct tcp_fields *f)
{
	f->sport = ((__u16)h[0] << 8) | h[1];
	f->dport = ((__u16)h[2] << 8) | h[3];
	f->seq = ((__u32)h[4] << 24) | ((__u32)h[5] << 16) | ((__u32)h[6] << 8) | h[7];
	f->ack = ((__u32)h[8] << 24) | ((__u32)h[9] << 16) | ((__u32)h[10] << 8) | h[11];
	__u32 doff = (h[12] >> 4) * 4;
	f->flags = h[13];
	f->win = ((__u16)h[14] << 8) | h[15];
	f->payload = after > doff ? after - doff : 0;
}

/* Reads a TCP header at th; payload = bytes after it among `after` bytes. */
static __always_inline int read_tcp(const unsigned char *th, __u32 after, struct tcp_fields *f)
{
	__u8 h[16] = {};
	if (bpf_probe_read_kernel(h, sizeof(h), th))
		return -1;
	decode_tcp(h, after, f);
	return 0;
}

/* Parses the IPv4/IPv6 + TCP headers of a packet skb (device layer). One
 * kernel read covers an option-less IPv4 header and the TCP fields (the
 * common case: each read costs ~100 ns on the development VM); IPv4 with
 * options and IPv6 take a second. */
static __always_inline int parse_packet(struct sk_buff *skb, struct tcp_fields *f)
{
	unsigned char *head = skb->head;
	unsigned char *data = skb->data;
	__u16 nh_off = skb->network_header;
	__u32 len = skb->len;
	unsigned char *nh = nh_off == 0xffff ? data : head + nh_off;
	__u32 before = nh > data ? (__u32)(nh - data) : 0;
	if (before > len)
		return -1;
	__u32 l3 = len - before;
	/* 20 bytes of IPv4 header + 16 of TCP: never past a TCP/IPv4 packet. */
	__u8 h[36] = {};
	if (l3 < 40 || bpf_probe_read_kernel(h, sizeof(h), nh))
		return -1;
	__u8 version = h[0] >> 4;
	if (version == 4) {
		__u32 ihl = (h[0] & 15) * 4;
		if (h[9] != 6 || ihl < 20 || ihl > l3)
			return -1;
		if (ihl == 20) {
			decode_tcp(h + 20, l3 - 20, f);
			return 0;
		}
		return read_tcp(nh + ihl, l3 - ihl, f);
	}
	if (version == 6) {
		if (h[6] != 6)
			return -1;
		return read_tcp(nh + 40, l3 - 40, f);
	}
	return -1;
}

static __always_inline int packet_event(struct sk_buff *skb, __u8 probe, __u32 x0, __u32 x1)
{
	struct tcp_fields f = {};
	if (parse_packet(skb, &f))
		return 0;
	if (!port_match(f.sport, f.dport))
		return 0;
	struct slot s;
	struct probe_event *e = reserve(probe, &s);
	if (!e)
		return 0;
	e->id = (__u64)skb;
	e->len = f.payload;
	e->seq = f.seq;
	e->ack = f.ack;
	e->win = f.win;
	e->flags = f.flags;
	e->sport = f.sport;
	e->dport = f.dport;
	struct net_device *dev = skb->dev;
	e->ifindex = dev ? dev->ifindex : 0;
	e->x[0] = x0;
	e->x[1] = x1;
	submit(&s);
	return 0;
}

/* Ports of a socket in host order: local, remote. */
static __always_inline bool sock_ports(const struct sock *sk, __u16 *local, __u16 *remote)
{
	*local = sk->__sk_common.skc_num;
	*remote = bpf_ntohs(sk->__sk_common.skc_dport);
	return port_match(*local, *remote);
}

static __always_inline struct probe_event *sock_event(const struct sock *sk, __u8 probe,
						      struct slot *s)
{
	__u16 local, remote;
	if (!sock_ports(sk, &local, &remote))
		return 0;
	struct probe_event *e = reserve(probe, s);
	if (!e)
		return 0;
	e->id = (__u64)sk;
	e->sport = local;
	e->dport = remote;
	return e;
}

/* The application handed `ret` bytes to the socket (send) or took them
 * (recv): the stream position after the call, the bytes still queued on that
 * side, and that side's buffer size. */
static __always_inline int app_call(struct sock *sk, __u8 probe, int ret, bool send)
{
	struct slot s;
	struct probe_event *e = sock_event(sk, probe, &s);
	if (!e)
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	e->len = ret > 0 ? ret : 0;
	e->x[0] = (__u32)ret;
	if (send) {
		e->seq = TP(tp, write_seq);
		e->x[1] = TP(tp, write_seq) - TP(tp, snd_una);
		e->x[2] = sk->sk_sndbuf;
	} else {
		e->seq = TP(tp, copied_seq);
		e->x[1] = TP(tp, rcv_nxt) - TP(tp, copied_seq);
		e->x[2] = sk->sk_rcvbuf;
	}
	submit(&s);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(send_app, struct sock *sk, int ret, int flags)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return app_call(sk, P_SEND_APP, ret, true);
}

/* The segment tcp_sendmsg was last recorded filling, per CPU: its socket
 * and its first sequence number. */
struct sendmsg_seen {
	__u64 sk;
	__u32 start;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sendmsg_seen);
} sendmsg_last SEC(".maps");

/* The tracepoint fires for every chunk tcp_sendmsg copies (about six per
 * 128 KiB write on loopback, 134k a second), all on the sender's CPU with
 * its socket locked. One record per segment TCP starts filling says when
 * TCP took the data; the chunks in between say nothing the write's own
 * record (sock_send_length) does not. A segment is known by its first
 * sequence number, not its address: a freed skb's address comes back at
 * once. Process context only (sendmsg), so no program nests in this one. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg, struct sock *sk, struct msghdr *msg, struct sk_buff *skb, int size_goal)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u32 queued_to = TP(tp, write_seq);
	__u32 start = queued_to - (skb ? skb->len : 0);
	__u32 zero = 0;
	struct sendmsg_seen *seen = bpf_map_lookup_elem(&sendmsg_last, &zero);
	if (seen) {
		if (seen->sk == (__u64)sk && seen->start == start)
			return 0;
		seen->sk = (__u64)sk;
		seen->start = start;
	}
	struct slot s;
	struct probe_event *e = sock_event(sk, P_TCP_SENDMSG, &s);
	if (!e)
		return 0;
	e->len = skb ? skb->len : 0;
	e->seq = queued_to;
	e->x[0] = size_goal;
	e->x[1] = queued_to - TP(tp, snd_una);
	e->x[2] = start;
	submit(&s);
	return 0;
}

SEC("tp_btf/net_dev_queue")
int BPF_PROG(dev_queue, struct sk_buff *skb)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return packet_event(skb, P_DEV_QUEUE, 0, 0);
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(qdisc_enq, struct Qdisc *q, struct netdev_queue *txq, struct sk_buff *skb)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return packet_event(skb, P_QDISC_ENQ, q->q.qlen,
			    q->qstats.backlog);
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(qdisc_deq, struct Qdisc *q, struct netdev_queue *txq, int packets, struct sk_buff *skb)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	if (!skb)
		return 0;
	return packet_event(skb, P_QDISC_DEQ, q->q.qlen,
			    q->qstats.backlog);
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(dev_start_xmit, struct sk_buff *skb, struct net_device *dev)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return packet_event(skb, P_DEV_START_XMIT, 0, 0);
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev, unsigned int skb_len)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	/* After a successful transmit the skb may be freed: read only what the
	 * tracepoint hands over, plus the headers while the driver still holds
	 * them (veth and loopback pass the same skb on, so they are intact). */
	return packet_event(skb, P_DEV_XMIT, (__u32)rc, skb_len);
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(netif_receive, struct sk_buff *skb)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return packet_event(skb, P_NETIF_RECEIVE, 0, 0);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	struct slot s;
	struct probe_event *e = sock_event(sk, P_TCP_PROBE, &s);
	if (!e)
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	struct tcp_fields f = {};
	unsigned char *th = skb->data;
	if (read_tcp(th, skb->len, &f) == 0) {
		e->len = f.payload;
		e->seq = f.seq;
		e->ack = f.ack;
		e->win = f.win;
		e->flags = f.flags;
	}
	e->x[0] = TP(tp, snd_cwnd);
	e->x[1] = TP(tp, srtt_us) >> 3;
	e->x[2] = TP(tp, snd_wnd);
	e->x[3] = TP(tp, rcv_wnd);
	submit(&s);
	return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(data_ready, struct sock *sk)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	struct slot s;
	struct probe_event *e = sock_event(sk, P_SK_DATA_READY, &s);
	if (!e)
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	e->x[0] = TP(tp, rcv_nxt) - TP(tp, copied_seq);
	submit(&s);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(recv_app, struct sock *sk, int ret, int flags)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	return app_call(sk, P_RECV_APP, ret, false);
}

/* Last (SO_RCVBUF, window clamp) recorded per socket: tcp_rcv_space_adjust
 * runs on every read, but autotuning changes something only now and then. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} rcv_space_last SEC(".maps");

SEC("tp_btf/tcp_rcv_space_adjust")
int BPF_PROG(rcv_space, struct sock *sk)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	__u16 local, remote;
	if (!enabled || !sock_ports(sk, &local, &remote))
		return 0;
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u32 rcvbuf = sk->sk_rcvbuf, clamp = TP(tp, window_clamp);
	__u64 key = (__u64)sk, val = ((__u64)rcvbuf << 32) | clamp;
	__u64 *old = bpf_map_lookup_elem(&rcv_space_last, &key);
	if (old && *old == val)
		return 0;
	bpf_map_update_elem(&rcv_space_last, &key, &val, BPF_ANY);
	struct slot s;
	struct probe_event *e = sock_event(sk, P_RCV_SPACE, &s);
	if (!e)
		return 0;
	e->x[0] = rcvbuf;
	e->x[1] = clamp;
	e->x[2] = TP(tp, rcv_wnd);
	submit(&s);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(retransmit, struct sock *sk, struct sk_buff *skb, int err)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	struct slot s;
	struct probe_event *e = sock_event(sk, P_RETRANSMIT, &s);
	if (!e)
		return 0;
	__u32 cb[2] = {};
	/* TCP_SKB_CB(skb): seq and end_seq are the first two words of cb. */
	bpf_probe_read_kernel(cb, sizeof(cb), &skb->cb[0]);
	e->seq = cb[0];
	e->len = cb[1] - cb[0];
	e->x[0] = (__u32)err;
	submit(&s);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (depth == DEPTH_EMPTY)
		return 0;
	if (filter_tgid == 0)
		return 0;
	__u32 prev_tgid = prev->tgid;
	__u32 next_tgid = next->tgid;
	if (prev_tgid != filter_tgid && next_tgid != filter_tgid)
		return 0;
	if (prev->pid == ignore_tid || next->pid == ignore_tid)
		return 0;
	struct slot s;
	struct probe_event *e = reserve(P_SCHED_SWITCH, &s);
	if (!e)
		return 0;
	e->id = 0;
	e->len = 0;
	e->sport = 0;
	e->dport = 0;
	e->x[0] = prev_tgid == filter_tgid ? prev->pid : 0;
	e->x[1] = next_tgid == filter_tgid ? next->pid : 0;
	e->x[2] = prev_state;
	e->x[3] = preempt;
	submit(&s);
	return 0;
}

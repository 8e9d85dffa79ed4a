/* The record every probe writes to the ring buffer. Mirrored field by field
 * in crates/record/src/probe_event.rs; change both together (and EVENT_VERSION). */
#ifndef TCPLAB_EVENTS_H
#define TCPLAB_EVENTS_H

#define EVENT_VERSION 1
#define MAX_PORTS 8

/* Probe ids: stable, stored with every record. */
enum probe_id {
	P_SEND_APP = 1,       /* sock_send_length: the application hands data to the socket */
	P_TCP_SENDMSG = 2,    /* tcp_sendmsg_locked: TCP starts filling a segment with it (once per segment) */
	P_DEV_QUEUE = 3,      /* net_dev_queue: IP hands a packet to the device layer */
	P_QDISC_ENQ = 4,      /* qdisc_enqueue: the packet enters the interface queue */
	P_QDISC_DEQ = 5,      /* qdisc_dequeue: it leaves the interface queue */
	P_DEV_START_XMIT = 6, /* net_dev_start_xmit: the driver gets it */
	P_DEV_XMIT = 7,       /* net_dev_xmit: the driver returned */
	P_NETIF_RECEIVE = 8,  /* netif_receive_skb: IP input begins */
	P_TCP_PROBE = 9,      /* tcp_probe: TCP processes an arriving segment */
	P_SK_DATA_READY = 10, /* sk_data_ready: the receive queue has data for the reader */
	P_RECV_APP = 11,      /* sock_recv_length: the application read */
	P_RCV_SPACE = 12,     /* tcp_rcv_space_adjust: receive buffer autotuning */
	P_RETRANSMIT = 13,    /* tcp_retransmit_skb */
	P_SCHED_SWITCH = 14,  /* sched_switch of an experiment thread */
	P_COUNT = 15,
};

struct probe_event {
	__u64 ts_ns;   /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 id;      /* skb address (packets) or sock address (socket probes) */
	__u32 len;     /* payload bytes, or the call's return value */
	__u32 seq;     /* TCP sequence number (host order) */
	__u32 ack;     /* TCP acknowledgment number (host order) */
	__u32 ifindex; /* device, where known */
	__u32 x[4];    /* per-probe values, see event.rs */
	__u16 sport;   /* host order */
	__u16 dport;   /* host order */
	__u16 win;     /* raw TCP window field (host order) */
	__u8 probe;    /* enum probe_id */
	__u8 flags;    /* TCP flags */
	__u16 cpu;
	__u16 pad;
	__u32 tid;     /* current thread */
};

#endif

/* The few kernel types tcplab's probes read, declared with
 * preserve_access_index so every field access is a CO-RE relocation that
 * libbpf resolves against the running kernel's BTF at load time. Only the
 * field names matter, not their offsets or the order here. */
#ifndef TCPLAB_VMLINUX_MIN_H
#define TCPLAB_VMLINUX_MIN_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

/* Flags of bpf_map_update_elem (uapi/linux/bpf.h). */
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

/* Flags of bpf_get_stackid (uapi/linux/bpf.h). */
enum {
	BPF_F_USER_STACK = 1 << 8,
};

/* Flags of bpf_ringbuf_submit (uapi/linux/bpf.h). */
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct net_device {
	int ifindex;
};

struct sock;

struct sk_buff {
	unsigned int len;
	char cb[48];
	__u16 transport_header;
	__u16 network_header;
	__u16 mac_header;
	unsigned char *head;
	unsigned char *data;
	struct net_device *dev;
	struct sock *sk;
};

struct sock_common {
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
};

struct sock {
	struct sock_common __sk_common;
	int sk_rcvbuf;
	int sk_sndbuf;
};

struct tcp_sock {
	__u32 snd_cwnd;
	__u32 srtt_us;
	__u32 snd_wnd;
	__u32 rcv_wnd;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 copied_seq;
	__u32 write_seq;
	__u32 window_clamp;
};

struct qdisc_skb_head {
	__u32 qlen;
};

struct gnet_stats_queue {
	__u32 qlen;
	__u32 backlog;
};

struct Qdisc {
	__u32 handle;
	struct qdisc_skb_head q;
	struct gnet_stats_queue qstats;
};

struct netdev_queue;
struct msghdr;

/* The registers saved at kernel entry: where user space was. */
#if defined(__TARGET_ARCH_arm64)
struct pt_regs {
	__u64 pc;
};
#define PT_USER_IP(r) ((r)->pc)
#else
struct pt_regs {
	unsigned long ip;
};
#define PT_USER_IP(r) ((r)->ip)
#endif

struct sched_entity {
	__u64 sum_exec_runtime;
};

struct task_struct {
	int pid;
	int tgid;
	struct sched_entity se;
};

#pragma clang attribute pop

#endif

// SPDX-License-Identifier: GPL-2.0
/* tcplab's CPU sampler: a perf_event program run by a sampling event (PMU
 * cycles, or cpu-clock where there is no PMU) on every CPU at a fixed
 * rate. Each sample is counted in the kernel under (thread, kernel stack,
 * innermost user frame), as bcc's profile tool does, so the cost per sample
 * is one kernel stack walk and one hash update, and nothing is copied to
 * user space until the trial ends. The user frame is kept for the
 * experiment's threads only; every other thread (softirq threads, other
 * processes, the idle task) keeps its kernel stack so softirq and idle time
 * can be attributed too.
 *
 * Samples are weighted by time, not only counted. On a virtual machine a
 * halted CPU's timer fires late, and the kernel then takes one sample for
 * all the periods missed, so plain counts undercount threads that wake
 * often. Here each sample is worth the time its thread ran since the
 * previous sample or since it was switched in, whichever is later, and at
 * each switch the outgoing thread's time since its last sample goes to that
 * sample's stack (or to an unsampled marker if it was never sampled). The
 * weights of a thread then add up to exactly the time it ran. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"
#include "depth.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 filter_tgid = 0;
/* The sampler's own thread (reads the maps at the end). */
const volatile __u32 ignore_tid = 0;
/* DEPTH_FULL, DEPTH_FILTER (return before the stack walk) or DEPTH_EMPTY
 * (return at once: the cost of the sampling timer alone). */
const volatile __u32 depth = DEPTH_FULL;
/* Set by user space while a trial is sampled. */
volatile __u32 enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, STACK_SLOTS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_FRAMES * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNT_SLOTS);
	__type(key, struct sample_key);
	__type(value, struct sample_weight);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct thread_name);
} comms SEC(".maps");

/* Per CPU: when the running thread's unaccounted time began, and the key
 * of its latest sample since it was switched in. */
struct cpu_state {
	__u64 since;
	struct sample_key last;
	__u32 has_last;
	/* The running thread's stint: when it began, its scheduler runtime
	 * then, and its id (valid when in_tid is set). */
	__u32 in_tid;
	__u64 in_ts;
	__u64 in_runtime;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct thread_time);
} times SEC(".maps");

/* Samples that found the counts map full (index 0) and stack walks that
 * failed for want of a free stack slot (index 1). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} trouble SEC(".maps");

static __always_inline void bump(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&trouble, &slot);
	if (c)
		*c += 1;
}

/* Adds `ns` (and `samples`) to a key's weight. */
static __always_inline void add(struct sample_key *k, __u64 ns, __u64 samples)
{
	struct sample_weight *w = bpf_map_lookup_elem(&counts, k);
	if (w) {
		__sync_fetch_and_add(&w->ns, ns);
		__sync_fetch_and_add(&w->samples, samples);
		return;
	}
	struct sample_weight fresh = { .ns = ns, .samples = samples };
	if (bpf_map_update_elem(&counts, k, &fresh, BPF_NOEXIST)) {
		w = bpf_map_lookup_elem(&counts, k);
		if (w) {
			__sync_fetch_and_add(&w->ns, ns);
			__sync_fetch_and_add(&w->samples, samples);
		} else {
			bump(0);
		}
	}
}

SEC("perf_event")
int sample(void *ctx)
{
	if (depth == DEPTH_EMPTY || !enabled)
		return 0;
	__u32 zero = 0;
	struct cpu_state *st = bpf_map_lookup_elem(&state, &zero);
	if (!st)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct sample_key k = {};
	k.tid = (__u32)pid_tgid;
	k.tgid = pid_tgid >> 32;
	if (depth == DEPTH_FILTER)
		return 0;
	if (k.tid == ignore_tid && k.tid != 0) {
		st->since = now;
		st->has_last = 0;
		return 0;
	}
	k.kstack = bpf_get_stackid(ctx, &stacks, 0);
	/* The user-space frame is where the thread entered the kernel (or
	 * where it is, in user mode): the saved registers' instruction
	 * pointer. Release builds have no frame pointers to walk further. */
	if (k.tid != 0 && k.tgid == filter_tgid) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (regs)
			k.uip = PT_USER_IP(regs);
	}
	if (k.kstack == -E_NOMEM_STACK || k.kstack == -E_EXIST_STACK)
		bump(1);
	/* The first sample after enabling knows no start: one period. */
	__u64 ns = st->since && now > st->since ? now - st->since : SAMPLE_PERIOD_GUESS;
	add(&k, ns, 1);
	st->since = now;
	st->last = k;
	st->has_last = 1;
	if (k.tid != 0 && !bpf_map_lookup_elem(&comms, &k.tid)) {
		struct thread_name n = {};
		bpf_get_current_comm(n.comm, sizeof(n.comm));
		bpf_map_update_elem(&comms, &k.tid, &n, BPF_NOEXIST);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_out, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (depth == DEPTH_EMPTY || !enabled)
		return 0;
	__u32 zero = 0;
	struct cpu_state *st = bpf_map_lookup_elem(&state, &zero);
	if (!st || depth == DEPTH_FILTER)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tid = prev->pid;
	if (st->since && now > st->since && (prev_tid != ignore_tid || prev_tid == 0)) {
		if (st->has_last && st->last.tid == prev_tid) {
			add(&st->last, now - st->since, 0);
		} else {
			struct sample_key k = {};
			k.tid = prev_tid;
			k.tgid = prev->tgid;
			k.kstack = -E_UNSAMPLED;
			add(&k, now - st->since, 0);
		}
	}
	st->since = now;
	st->has_last = 0;

	/* Close prev's stint (if it began while sampling), open next's. */
	if (prev_tid != 0 && st->in_tid == prev_tid && st->in_ts && now > st->in_ts) {
		__u64 runtime = prev->se.sum_exec_runtime;
		struct thread_time *t = bpf_map_lookup_elem(&times, &prev_tid);
		if (!t) {
			struct thread_time fresh = {};
			bpf_map_update_elem(&times, &prev_tid, &fresh, BPF_NOEXIST);
			t = bpf_map_lookup_elem(&times, &prev_tid);
		}
		if (t && runtime >= st->in_runtime) {
			__sync_fetch_and_add(&t->wall_ns, now - st->in_ts);
			__sync_fetch_and_add(&t->exec_ns, runtime - st->in_runtime);
		}
	}
	st->in_tid = next->pid;
	st->in_ts = now;
	st->in_runtime = next->se.sum_exec_runtime;
	return 0;
}

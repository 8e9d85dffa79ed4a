/* Shared between profile.bpf.c and crates/probe/src/sampler.rs. */
#ifndef TCPLAB_PROFILE_H
#define TCPLAB_PROFILE_H

/* Deepest stack kept (the kernel's PERF_MAX_STACK_DEPTH). */
#define MAX_FRAMES 127
#define STACK_SLOTS 16384
#define COUNT_SLOTS 65536
#define E_NOMEM_STACK 12 /* ENOMEM: no free stack slot */
#define E_EXIST_STACK 17 /* EEXIST: hash collision with another stack */
/* kstack of the time a thread ran without being sampled. */
#define E_UNSAMPLED 1000
/* Weight of a CPU's first sample, before any start time is known (the
 * default period; user space does not rely on it). */
#define SAMPLE_PERIOD_GUESS 100000

struct sample_key {
	__u32 tid;
	__u32 tgid;
	__s32 kstack; /* stack id, or a negative errno (no kernel stack: user mode) */
	__u32 pad;
	__u64 uip;    /* user instruction pointer (experiment's threads), else 0 */
};

struct sample_weight {
	__u64 samples; /* samples taken with this key */
	__u64 ns;      /* time the thread ran, attributed to this key */
};

/* Per thread: over the stints that began and ended while sampling, the
 * wall time they spanned and the CPU time the scheduler charged (which
 * leaves out time the hypervisor stole). */
struct thread_time {
	__u64 wall_ns;
	__u64 exec_ns;
};

struct thread_name {
	char comm[16];
};

#endif

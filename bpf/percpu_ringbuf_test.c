/* Test and benchmark producer for per-CPU ring buffer groups (percpu_ringbuf.h).
 *
 * SCHED_CLS programs run by BPF_PROG_TEST_RUN from threads pinned to each CPU; each
 * call writes one struct pcpu_event into the ring of the CPU it runs on:
 *   pcpu_output   bpf_ringbuf_output (rt_pcpu_output)
 *   pcpu_reserve  reserve + submit (rt_pcpu_reserve)
 * ts = bpf_ktime_get_ns(), seq = per-CPU sequence number (first is 1, a dropped
 * event consumes its number), cpu = the CPU. cflags: RingBufGroup.cflags().
 */
#include "percpu_ringbuf.h"

BPF_PERCPU_ARRAY(pcpu_seq, u64, 1);

struct pcpu_event {
    u64 ts;
    u64 seq;
    u32 cpu;
    u32 magic;
};

static __always_inline u64 pcpu_next_seq(void)
{
    int key = 0;
    u64 *seq = pcpu_seq.lookup(&key);
    if (!seq)
        return 0;
    *seq += 1;  /* per-CPU slot: no other writer */
    return *seq;
}

int pcpu_output(struct __sk_buff *skb)
{
    struct pcpu_event e = {};
    e.seq = pcpu_next_seq();
    e.cpu = bpf_get_smp_processor_id();
    e.magic = 0x50435055;  /* "PCPU" */
    e.ts = bpf_ktime_get_ns();
    rt_pcpu_output(&e, sizeof(e), 0);
    return 0;
}

int pcpu_reserve(struct __sk_buff *skb)
{
    u64 seq = pcpu_next_seq();
    struct pcpu_event *e = rt_pcpu_reserve(sizeof(*e));
    if (!e)
        return 0;
    e->seq = seq;
    e->cpu = bpf_get_smp_processor_id();
    e->magic = 0x50435055;
    e->ts = bpf_ktime_get_ns();
    bpf_ringbuf_submit(e, 0);
    return 0;
}

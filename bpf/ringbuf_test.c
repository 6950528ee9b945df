/* Test and benchmark producer for ringtool's RINGBUF consumer.
 *
 * SCHED_CLS programs, run by BPF_PROG_TEST_RUN (ringtool.kernel.bpf.prog_test_run),
 * each call emitting one record into `events`:
 *   emit_reserve  reserve + submit a struct test_event (seq, cpu, ts)
 *   emit_discard  reserve + discard every other record (odd seq), submit the rest
 *   emit_output   bpf_ringbuf_output with RINGTOOL_OUTPUT_FLAGS (0 / NO_WAKEUP / FORCE)
 *   emit_varlen   variable-size records: 8 + (seq % 4) * 8 bytes
 * cflags: -DRINGTOOL_RING_PAGES=N, -DRINGTOOL_OUTPUT_FLAGS=F.
 */
#include "ringtool_ringbuf.h"

#ifndef RINGTOOL_OUTPUT_FLAGS
#define RINGTOOL_OUTPUT_FLAGS 0
#endif

RINGTOOL_RINGBUF(events, RINGTOOL_RING_PAGES);
BPF_ARRAY(seq_counter, u64, 1);

struct test_event {
    u64 seq;
    u64 ts;
    u32 cpu;
    u32 magic;
};

static __always_inline u64 next_seq(void)
{
    int key = 0;
    u64 *seq = seq_counter.lookup(&key);
    if (!seq)
        return 0;
    return __sync_fetch_and_add(seq, 1) + 1;
}

int emit_reserve(struct __sk_buff *skb)
{
    struct test_event *e = events.ringbuf_reserve(sizeof(*e));
    if (!e) {
        events_drops.increment(0);
        next_seq();  /* the dropped event still consumes its number */
        return 0;
    }
    e->seq = next_seq();
    e->ts = bpf_ktime_get_ns();
    e->cpu = bpf_get_smp_processor_id();
    e->magic = 0x52494e47;  /* "RING" */
    events.ringbuf_submit(e, 0);
    return 0;
}

int emit_discard(struct __sk_buff *skb)
{
    struct test_event *e = events.ringbuf_reserve(sizeof(*e));
    if (!e) {
        events_drops.increment(0);
        next_seq();
        return 0;
    }
    e->seq = next_seq();
    e->ts = bpf_ktime_get_ns();
    e->cpu = bpf_get_smp_processor_id();
    e->magic = 0x52494e47;
    if (e->seq & 1)
        events.ringbuf_discard(e, 0);
    else
        events.ringbuf_submit(e, 0);
    return 0;
}

int emit_output(struct __sk_buff *skb)
{
    struct test_event e = {};
    e.seq = next_seq();
    e.ts = bpf_ktime_get_ns();
    e.cpu = bpf_get_smp_processor_id();
    e.magic = 0x52494e47;
    if (events.ringbuf_output(&e, sizeof(e), RINGTOOL_OUTPUT_FLAGS))
        events_drops.increment(0);
    return 0;
}

struct var_event {
    u64 seq;
    u64 words[3];
};

int emit_varlen(struct __sk_buff *skb)
{
    struct var_event e = {};
    e.seq = next_seq();
    e.words[0] = e.seq;
    e.words[1] = e.seq;
    e.words[2] = e.seq;
    long err;
    switch (e.seq & 3) {
    case 0: err = events.ringbuf_output(&e, 8, 0); break;
    case 1: err = events.ringbuf_output(&e, 16, 0); break;
    case 2: err = events.ringbuf_output(&e, 24, 0); break;
    default: err = events.ringbuf_output(&e, 32, 0); break;
    }
    if (err)
        events_drops.increment(0);
    return 0;
}

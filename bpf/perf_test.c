/* Test and benchmark producer for ringtool's PERF_EVENT_ARRAY consumer.
 *
 * SCHED_CLS program, run by BPF_PROG_TEST_RUN (ringtool.kernel.bpf.prog_test_run) on
 * a pinned CPU: each run outputs one struct perf_test_event into `events` at the
 * current CPU's index. `seq` is per CPU (first is 1, +1 per run, a failed output
 * still consumes its number) so a consumer can check nothing was lost, duplicated or
 * reordered; `failed` counts outputs the kernel refused (ring full -> later a
 * PERF_RECORD_LOST carrying the same count).
 * cflags: -DPERF_TEST_PAD_WORDS=N adds N u64 of padding (default 0: 16-byte event).
 */
#include <uapi/linux/bpf.h>
#include <uapi/linux/pkt_cls.h>

#ifndef PERF_TEST_PAD_WORDS
#define PERF_TEST_PAD_WORDS 0
#endif

#define PERF_TEST_MAGIC 0x46524550 /* "PERF" */

struct perf_test_event {
    u64 seq;
    u32 cpu;
    u32 magic;
#if PERF_TEST_PAD_WORDS > 0
    u64 pad[PERF_TEST_PAD_WORDS];
#endif
};

BPF_PERF_OUTPUT(events);
BPF_PERCPU_ARRAY(seqs, u64, 1);
BPF_PERCPU_ARRAY(failed, u64, 1);

int emit(struct __sk_buff *skb)
{
    int zero = 0;
    u64 *seq = seqs.lookup(&zero);
    if (!seq)
        return TC_ACT_OK;
    struct perf_test_event ev = {};
    *seq += 1;
    ev.seq = *seq;
    ev.cpu = bpf_get_smp_processor_id();
    ev.magic = PERF_TEST_MAGIC;
    if (events.perf_submit(skb, &ev, sizeof(ev)) != 0) {
        u64 *f = failed.lookup(&zero);
        if (f)
            *f += 1;
    }
    return TC_ACT_OK;
}

/* Test producer for ringtool's RINGBUF overwrite-mode reader.
 *
 * `events` is a RINGBUF created with BPF_F_RB_OVERWRITE (kernel/bpf/ringbuf.c, Linux
 * 6.19+): the producer overwrites the oldest records instead of failing. BCC's
 * BPF_RINGBUF_OUTPUT has no flags, so the map is declared as it expands, plus the
 * `flags` field BCC reads for every table (as BPF_F_TABLE does).
 * SCHED_CLS program run by BPF_PROG_TEST_RUN:
 *   emit_fill  reserve + submit a struct ow_event: its sequence number, then bytes
 *              computed from it (a torn copy does not match), RINGTOOL_OW_FILL of them
 * cflags: -DRINGTOOL_RING_PAGES=N, -DRINGTOOL_RB_FLAGS=F (default BPF_F_RB_OVERWRITE,
 * given by value: Debian 12's headers predate it).
 */
#ifndef RINGTOOL_RING_PAGES
#define RINGTOOL_RING_PAGES 1
#endif
#ifndef RINGTOOL_RB_FLAGS
#define RINGTOOL_RB_FLAGS (1U << 19) /* BPF_F_RB_OVERWRITE */
#endif
#ifndef RINGTOOL_OW_FILL
#define RINGTOOL_OW_FILL 56
#endif

struct events_table_t {
    int key;
    u32 leaf;
    int (*ringbuf_output)(void *, u64, u64);
    void *(*ringbuf_reserve)(u64);
    void (*ringbuf_discard)(void *, u64);
    void (*ringbuf_submit)(void *, u64);
    u32 max_entries;
    int flags;
};
__attribute__((section("maps/ringbuf")))
struct events_table_t events = {
    .max_entries = RINGTOOL_RING_PAGES * PAGE_SIZE,
    .flags = RINGTOOL_RB_FLAGS,
};

BPF_ARRAY(seq_counter, u64, 1);
BPF_ARRAY(failed, u64, 1);

struct ow_event {
    u64 seq;
    u8 fill[RINGTOOL_OW_FILL];
};

int emit_fill(struct __sk_buff *skb)
{
    int key = 0;
    u64 *counter = seq_counter.lookup(&key);
    if (!counter)
        return 0;
    struct ow_event *e = events.ringbuf_reserve(sizeof(*e));
    if (!e) {
        failed.increment(0);
        return 0;
    }
    u64 seq = __sync_fetch_and_add(counter, 1);
    e->seq = seq;
#pragma unroll
    for (int i = 0; i < RINGTOOL_OW_FILL; i++)
        e->fill[i] = (u8)(seq * 31 + i * 7);
    events.ringbuf_submit(e, 0);
    return 0;
}

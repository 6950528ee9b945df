/* ringtool: BPF ring buffers with drop counting, for BCC programs.
 *
 * A RINGBUF map has no lost-record signal: when bpf_ringbuf_reserve/output fails
 * the event is simply gone. Declare rings with RINGTOOL_RINGBUF so each gets a
 * per-CPU array NAME_drops (one u64 at key 0), and count every failure:
 *
 *   #include "ringtool_ringbuf.h"
 *   RINGTOOL_RINGBUF(events, RINGTOOL_RING_PAGES);   // cflags -DRINGTOOL_RING_PAGES=64
 *
 *   struct ev *e = events.ringbuf_reserve(sizeof(*e));
 *   if (!e) { events_drops.increment(0); return 0; }
 *   ...
 *   events.ringbuf_submit(e, 0);        // or events.ringbuf_discard(e, 0)
 *
 *   if (events.ringbuf_output(&ev, sizeof(ev), 0)) events_drops.increment(0);
 *
 * ringtool.RingBuffer finds NAME_drops next to the ring NAME and reports it per CPU
 * (rb.dropped()). The counting line lives in the program's own file because BCC
 * rewrites map methods (x.ringbuf_reserve, x.increment) only in the main source,
 * never in an included header or inside a macro.
 */
#ifndef RINGTOOL_RINGBUF_H
#define RINGTOOL_RINGBUF_H

#ifndef RINGTOOL_RING_PAGES
#define RINGTOOL_RING_PAGES 64
#endif

#define RINGTOOL_RINGBUF(name, pages)   \
    BPF_RINGBUF_OUTPUT(name, pages);    \
    BPF_PERCPU_ARRAY(name##_drops, u64, 1)

#endif

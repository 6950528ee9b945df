/* ringtool: per-CPU BPF ring buffer groups, for BCC programs.
 *
 * One RINGBUF per N CPUs (N = 1: one per CPU; N = 0: one shared buffer), kept in a
 * BPF_MAP_TYPE_ARRAY_OF_MAPS indexed by *buffer id*. Buffer ids are contiguous
 * (0..RT_PCPU_NR_BUFS-1) even when some CPUs are offline: an ARRAY map translates the
 * CPU the program runs on (bpf_get_smp_processor_id()) into its buffer id. All three
 * maps are created and filled by ringtool (ringtool.readers.ringbuf_group), which
 * also maps and reads every inner ring; the program only includes this file:
 *
 *   #include "percpu_ringbuf.h"          // cflags: RingBufGroup.cflags()
 *
 *   struct ev e = { .ts = bpf_ktime_get_ns(), ... };
 *   rt_pcpu_output(&e, sizeof(e), 0);    // copies; counts a drop on failure
 *
 *   struct ev *p = rt_pcpu_reserve(sizeof(*p));   // or reserve + submit
 *   if (!p) return 0;                    // (drop already counted)
 *   ...
 *   rt_pcpu_submit(p, sizeof(*p));       // or bpf_ringbuf_discard(p, 0)
 *
 *   void *ring;                          // the same, the ring looked up once
 *   struct ev *p = rt_pcpu_reserve_in(&ring, sizeof(*p));
 *   ...
 *   rt_pcpu_submit_to(ring, p, sizeof(*p));
 *
 * Macros ringtool passes with -D (computed in Python, no C is generated):
 *   RT_PCPU_RINGS_FD       fd of the ARRAY_OF_MAPS: buffer id -> RINGBUF
 *   RT_PCPU_CPUMAP_FD      fd of the ARRAY: cpu -> buffer id (u32; RT_PCPU_NO_BUF for
 *                          CPUs that were offline at setup: their events are dropped
 *                          and counted until RingBufGroup.check_cpus() gives them a
 *                          ring; see ringtool/readers/ringbuf_group.py)
 *   RT_PCPU_DROPS_FD       fd of a PERCPU_ARRAY with one u64 (key 0): failed outputs
 *   RT_PCPU_NR_BUFS        number of buffers
 *   RT_PCPU_CPUS_PER_BUF   N as configured; 0 (one shared buffer, which every CPU
 *                          writes to, even one that comes online later) skips the
 *                          CPU lookup
 *   RT_PCPU_WAKEUP_BYTES   optional: adaptive wakeups for rt_pcpu_submit (below)
 *   RT_PCPU_PERF_FD, RT_PCPU_SCRATCH_FD, RT_PCPU_SCRATCH_BYTES, RT_PCPU_OUTPUTS_FD
 *                          optional: the perf flight-recorder mode (below); sources
 *                          submit with RT_PCPU_SUBMIT(ctx, p, size) (or
 *                          RT_PCPU_SUBMIT_TO(ctx, ring, p, size)) to support it
 *
 * Why fds and not BCC table declarations: BCC 0.26 rewrites map methods
 * (x.lookup(), and the &map of a table) only in the main source: edits in an
 * included header are dropped (the load fails with "unknown opcode 8d") and map
 * methods inside a macro are refused ("cannot use map function inside a macro"). The
 * helpers below instead name the maps by fd with bpf_pseudo_fd(1, fd) -- the very
 * instruction BCC's rewriter emits for its own tables -- so they work from a header.
 * The maps exist before the program is compiled; the fds must stay open until it is
 * loaded (RingBufGroup keeps them).
 */
#ifndef RINGTOOL_PERCPU_RINGBUF_H
#define RINGTOOL_PERCPU_RINGBUF_H

#if !defined(RT_PCPU_RINGS_FD) || !defined(RT_PCPU_CPUMAP_FD) || \
    !defined(RT_PCPU_DROPS_FD) || !defined(RT_PCPU_NR_BUFS)
#error "percpu_ringbuf.h: compile with the cflags of ringtool's RingBufGroup.cflags()"
#endif

#define RT_PCPU_NO_BUF 0xffffffffU
#define RT_PCPU_ENOENT 2

/* A map named by its fd in this process (BPF_PSEUDO_MAP_FD load). A libbpf program
 * (bpf/trace_mark.bpf.c) defines RT_PCPU_MAP and the three *_FD as its declared maps. */
#ifndef RT_PCPU_MAP
#define RT_PCPU_MAP(fd) ((void *)bpf_pseudo_fd(1, (fd)))
#endif

/* The buffer id of the CPU this runs on, or RT_PCPU_NO_BUF. */
static __always_inline u32 rt_pcpu_buf_id(void)
{
#if defined(RT_PCPU_CPUS_PER_BUF) && RT_PCPU_CPUS_PER_BUF == 0
    return 0;  /* one shared buffer for every CPU */
#else
    u32 cpu = bpf_get_smp_processor_id();
    u32 *id = bpf_map_lookup_elem(RT_PCPU_MAP(RT_PCPU_CPUMAP_FD), &cpu);
    return id ? *id : RT_PCPU_NO_BUF;
#endif
}

/* The RINGBUF map of this CPU's buffer (for bpf_ringbuf_* helpers), or NULL. */
static __always_inline void *rt_pcpu_ring(void)
{
    u32 id = rt_pcpu_buf_id();
    if (id == RT_PCPU_NO_BUF)
        return NULL;
    return bpf_map_lookup_elem(RT_PCPU_MAP(RT_PCPU_RINGS_FD), &id);
}

/* Count one lost event on this CPU (rb full, or a CPU with no buffer). */
static __always_inline void rt_pcpu_count_drop(void)
{
    u32 zero = 0;
    u64 *n = bpf_map_lookup_elem(RT_PCPU_MAP(RT_PCPU_DROPS_FD), &zero);
    if (n)
        *n += 1;  /* per-CPU slot: no other writer */
}

/* bpf_ringbuf_output into this CPU's buffer; 0 or a negative errno (drop counted). */
static __always_inline long rt_pcpu_output(void *data, u64 size, u64 flags)
{
    void *ring = rt_pcpu_ring();
    long err;
    if (!ring) {
        rt_pcpu_count_drop();
        return -RT_PCPU_ENOENT;
    }
    err = bpf_ringbuf_output(ring, data, size, flags);
    if (err)
        rt_pcpu_count_drop();
    return err;
}

/* bpf_ringbuf_reserve in this CPU's buffer; NULL on failure (drop counted). Finish
 * with rt_pcpu_submit(p, size), bpf_ringbuf_submit(p, flags) or bpf_ringbuf_discard(p, flags). */
#ifdef RT_PCPU_PERF_FD
/* Flight-recorder mode on a kernel without BPF_F_RB_OVERWRITE (ringtool trace
 * --flight-recorder): records go to a PERF_EVENT_ARRAY (RT_PCPU_PERF_FD) whose per-CPU
 * buffers ringtool opened with write_backward, so the kernel keeps the newest ones.
 * rt_pcpu_reserve hands out this CPU's scratch record (RT_PCPU_SCRATCH_FD: a
 * PERCPU_ARRAY with one value of RT_PCPU_SCRATCH_BYTES) and RT_PCPU_SUBMIT copies it
 * out with bpf_perf_event_output, which needs the program's ctx. Each record the ring
 * took is counted in RT_PCPU_OUTPUTS_FD (a PERCPU_ARRAY with one u64): what a dump
 * did not find of them was overwritten (ringtool/trace/reading/flight_count.py); a failed
 * output is a drop. */
#ifndef RT_PCPU_OUTPUTS_FD
#error "percpu_ringbuf.h: the perf mode counts its outputs: define RT_PCPU_OUTPUTS_FD"
#endif

static __always_inline void *rt_pcpu_reserve(u64 size)
{
    u32 zero = 0;
    void *p = NULL;
    if (size <= RT_PCPU_SCRATCH_BYTES)
        p = bpf_map_lookup_elem(RT_PCPU_MAP(RT_PCPU_SCRATCH_FD), &zero);
    if (!p)
        rt_pcpu_count_drop();
    return p;
}

/* Count one record the perf ring of this CPU took. An atomic add (the verifier
 * inlines the PERCPU_ARRAY lookup): a program that interrupts another on this CPU
 * between its load and store would otherwise lose a count, and this one must be
 * exact. */
static __always_inline void rt_pcpu_count_output(void)
{
    u32 zero = 0;
    u64 *n = bpf_map_lookup_elem(RT_PCPU_MAP(RT_PCPU_OUTPUTS_FD), &zero);
    if (n)
        __sync_fetch_and_add(n, 1);
}

static __always_inline void rt_pcpu_perf_submit(void *ctx, void *p, u64 size)
{
    if (bpf_perf_event_output(ctx, RT_PCPU_MAP(RT_PCPU_PERF_FD), BPF_F_CURRENT_CPU, p, size))
        rt_pcpu_count_drop();
    else
        rt_pcpu_count_output();
}

/* rt_pcpu_reserve; no ring here (*ring = NULL), for RT_PCPU_SUBMIT_TO. */
static __always_inline void *rt_pcpu_reserve_in(void **ring, u64 size)
{
    *ring = NULL;
    return rt_pcpu_reserve(size);
}

/* Submit a reserved record: `ctx` is the program's context (BCC: `args`). */
#define RT_PCPU_SUBMIT(ctx, p, size) rt_pcpu_perf_submit((ctx), (p), (size))
#define RT_PCPU_SUBMIT_TO(ctx, ring, p, size) rt_pcpu_perf_submit((ctx), (p), (size))
#else
#define RT_PCPU_SUBMIT(ctx, p, size) rt_pcpu_submit((p), (size))
#define RT_PCPU_SUBMIT_TO(ctx, ring, p, size) rt_pcpu_submit_to((ring), (p), (size))

static __always_inline void *rt_pcpu_reserve(u64 size)
{
    void *ring = rt_pcpu_ring();
    void *p = NULL;
    if (ring)
        p = bpf_ringbuf_reserve(ring, size, 0);
    if (!p)
        rt_pcpu_count_drop();
    return p;
}

/* rt_pcpu_reserve that also gives the ring reserved in (*ring), for
 * rt_pcpu_submit_to: the CPU's ring is looked up once per record. */
static __always_inline void *rt_pcpu_reserve_in(void **ring, u64 size)
{
    void *p = NULL;
    *ring = rt_pcpu_ring();
    if (*ring)
        p = bpf_ringbuf_reserve(*ring, size, 0);
    if (!p)
        rt_pcpu_count_drop();
    return p;
}

/* Submit a record of `size` bytes (its sizeof) from rt_pcpu_reserve.
 *
 * Default: flags 0, the kernel's rule: it wakes the reader when the record starts at
 * the consumer position (the reader had caught up), i.e. about once per record when
 * the reader keeps up -- one epoll wakeup and one read loop per event.
 * With -DRT_PCPU_WAKEUP_BYTES=N (adaptive wakeups): BPF_RB_FORCE_WAKEUP only for
 * the record that makes this CPU's ring cross N bytes of unread data
 * (bpf_ringbuf_query(BPF_RB_AVAIL_DATA) = producer_pos - consumer_pos, this record
 * included: before it < N <= with it), BPF_RB_NO_WAKEUP for every other. Forcing on
 * every record above N would queue the irq_work (a self-IPI) again for each record
 * once the reader has run it. Nothing is lost by waking less: the ring fd's poll is
 * level-triggered, so a reader that comes back to wait with data left returns at
 * once; but a ring below N wakes nobody, so the reader MUST poll with a bounded
 * timeout (ringtool's TraceSession.wait caps it), which bounds the latency.
 * `ring` is the one reserved in (rt_pcpu_reserve_in gives it; rt_pcpu_submit looks
 * it up again: a BPF program does not migrate, so it is the same). */
static __always_inline void rt_pcpu_submit_to(void *ring, void *p, u64 size)
{
#ifdef RT_PCPU_WAKEUP_BYTES
    u64 span = (size + 8 + 7) & ~7ULL;  /* BPF_RINGBUF_HDR_SZ + data, 8-aligned */
    u64 flags = BPF_RB_NO_WAKEUP;
    if (ring) {
        u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
        if (avail >= RT_PCPU_WAKEUP_BYTES && avail - span < RT_PCPU_WAKEUP_BYTES)
            flags = BPF_RB_FORCE_WAKEUP;
    }
    bpf_ringbuf_submit(p, flags);
#else
    bpf_ringbuf_submit(p, 0);
#endif
}

/* rt_pcpu_submit_to the ring of this CPU, looked up again: the one reserved in (a BPF
 * program does not migrate), except across a switch of this CPU's ring
 * (ringtool.readers.ringbuf_resize), where a program that reserved in the old ring may
 * find the new one here; only the wakeup decision then looks at the wrong ring (the
 * reader polls with a bounded timeout anyway). */
static __always_inline void rt_pcpu_submit(void *p, u64 size)
{
#ifdef RT_PCPU_WAKEUP_BYTES
    rt_pcpu_submit_to(rt_pcpu_ring(), p, size);
#else
    rt_pcpu_submit_to(NULL, p, size);
#endif
}
#endif /* RT_PCPU_PERF_FD */

#endif

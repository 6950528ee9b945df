/* ringtool trace: the log-linear latency buckets of the in-kernel histograms (the
 * syscalls source's, bpf/trace_syscalls.c, and the disk source's, bpf/trace_disk.c).
 * The math and its error bound: ringtool/trace/reading/latency_buckets.py, whose
 * SUB_BITS and KEY_BITS these are. */
#ifndef RINGTOOL_TRACE_LAT_H
#define RINGTOOL_TRACE_LAT_H

#ifndef TRACE_LAT_SUB_BITS
#define TRACE_LAT_SUB_BITS 5
#endif
#ifndef TRACE_LAT_KEY_BITS
#define TRACE_LAT_KEY_BITS 11
#endif

/* The log-linear bucket of `v` ns: v itself below 2^SUB_BITS, else (with
 * m = floor(log2 v)) ((m - SUB_BITS + 1) << SUB_BITS) | the SUB_BITS bits after the
 * leading one. No loop, no float: bpf_log2l is BCC's branch-free log2 (+1). */
static __always_inline u64 lat_bucket(u64 v)
{
    if (v < (1ULL << TRACE_LAT_SUB_BITS))
        return v;
    u64 m = bpf_log2l(v) - 1;
    u64 sub = (v >> (m - TRACE_LAT_SUB_BITS)) & ((1ULL << TRACE_LAT_SUB_BITS) - 1);
    return ((m - TRACE_LAT_SUB_BITS + 1) << TRACE_LAT_SUB_BITS) | sub;
}

#endif

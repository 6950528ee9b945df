/* ringtool trace source `net`: TC clsact ingress/egress -> PERF_EVENT_ARRAY.
 *
 * For every packet one struct trace_net (bpf/trace_event.h: 5-tuple parsed from the
 * Ethernet/IPv4/IPv6/TCP/UDP headers, length, direction) is output, and the kernel
 * appends the first `captured` packet bytes (from the MAC header) to the same perf
 * record because the length is passed in BPF_F_CTXLEN_MASK (perf_submit_skb).
 * TC programs may not ask for the current task (and the task a packet passes TC in is
 * rarely its process's). With -DTRACE_TCP_OWNERS_FD (the tcp source runs too) a TCP
 * packet of a connection bpf/trace_tcp.c follows and has published (bpf/tcp_owners.h:
 * looked up by the 4-tuple of the packet's own end, by its direction) gets that
 * connection's owner: the header's pid, tid, comm, cgroup and `owner_uid`. Every
 * other packet's are 0 / "" (docs/trace.md, "Packets and their processes"). A failed
 * output (perf buffer full) is counted per CPU by the kernel and reported as
 * PERF_RECORD_LOST (ringtool's "lost"); BCC rewrites perf_submit_skb as a
 * statement, so the helper's result can't be kept.
 * cflags: TRACE_SNAPLEN (bytes captured, default 96), TRACE_* sizes, TRACE_TCP_OWNERS_FD
 * and its sizes.
 */
#include <uapi/linux/bpf.h>
#include <uapi/linux/pkt_cls.h>
#include <uapi/linux/if_ether.h>
#include <uapi/linux/in.h>
#include <uapi/linux/ip.h>
#include <uapi/linux/ipv6.h>
#include "trace_event.h"
#include "tcp_owners.h"

#ifndef TRACE_SNAPLEN
#define TRACE_SNAPLEN 96
#endif

struct l4_ports {
    u16 sport;
    u16 dport;
};

BPF_PERF_OUTPUT(net_events);

#ifdef TRACE_TCP_OWNERS_FD
/* `a` (a packet's address: IPv4 in its first 4 bytes) as the owners' key has it. */
static __always_inline void key_addr(u8 *out, const u8 *a, u8 family)
{
    if (family == 4) {
        out[10] = 0xff;
        out[11] = 0xff;
        __builtin_memcpy(out + 12, a, 4);
    } else {
        __builtin_memcpy(out, a, 16);
    }
}

/* The owner of `ev`'s TCP connection end into its header, when one is published. */
static __always_inline void take_owner(struct trace_net *ev)
{
    if (ev->proto != IPPROTO_TCP || !ev->sport || !ev->dport)
        return;
    struct tcp_owner_key k = {};
    if (ev->dir) {  /* egress: the source's end */
        key_addr(k.local, ev->saddr, ev->family);
        key_addr(k.remote, ev->daddr, ev->family);
        k.lport = ev->sport;
        k.rport = ev->dport;
    } else {        /* ingress: the destination's */
        key_addr(k.local, ev->daddr, ev->family);
        key_addr(k.remote, ev->saddr, ev->family);
        k.lport = ev->dport;
        k.rport = ev->sport;
    }
    struct tcp_owner *o = bpf_map_lookup_elem(TCP_OWNERS, &k);
    if (!o)
        return;
    ev->h.pid = o->pid;
    ev->h.tid = o->tid;
    __builtin_memcpy(ev->h.comm, o->comm, sizeof(ev->h.comm));
    ev->h.cgroup = o->cgroup;
    ev->owner_uid = o->uid;
}
#endif

static __always_inline int trace_packet(struct __sk_buff *skb, u8 dir)
{
    struct trace_net ev = {};
    struct iphdr ip = {};
    struct ipv6hdr ip6 = {};
    struct l4_ports ports = {};
    u32 l4off = 0;

    ev.h.ts = bpf_ktime_get_ns();
    ev.h.type = TRACE_NET;
    ev.h.cpu = bpf_get_smp_processor_id();
    ev.dir = dir;
    ev.ifindex = skb->ifindex;
    ev.len = skb->len;
    if (skb->protocol == bpf_htons(ETH_P_IP)) {
        if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) == 0) {
            ev.family = 4;
            ev.proto = ip.protocol;
            __builtin_memcpy(ev.saddr, &ip.saddr, 4);
            __builtin_memcpy(ev.daddr, &ip.daddr, 4);
            l4off = ETH_HLEN + ip.ihl * 4;
        }
    } else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
        if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)) == 0) {
            ev.family = 6;
            ev.proto = ip6.nexthdr;
            __builtin_memcpy(ev.saddr, &ip6.saddr, 16);
            __builtin_memcpy(ev.daddr, &ip6.daddr, 16);
            l4off = ETH_HLEN + sizeof(ip6);
        }
    }
    if (l4off && (ev.proto == IPPROTO_TCP || ev.proto == IPPROTO_UDP) &&
        bpf_skb_load_bytes(skb, l4off, &ports, sizeof(ports)) == 0) {
        ev.sport = bpf_ntohs(ports.sport);
        ev.dport = bpf_ntohs(ports.dport);
#ifdef TRACE_TCP_OWNERS_FD
        take_owner(&ev);
#endif
    }
    u64 cap = skb->len;
    if (cap > TRACE_SNAPLEN)
        cap = TRACE_SNAPLEN;
    ev.captured = cap;
    /* BCC: bpf_perf_event_output(skb, &net_events, BPF_F_CURRENT_CPU | cap << 32, ...):
     * `cap` in BPF_F_CTXLEN_MASK makes the helper append that many skb bytes. */
    net_events.perf_submit_skb(skb, cap, &ev, sizeof(ev));
    return TC_ACT_OK;
}

int trace_net_ingress(struct __sk_buff *skb)
{
    return trace_packet(skb, 0);
}

int trace_net_egress(struct __sk_buff *skb)
{
    return trace_packet(skb, 1);
}

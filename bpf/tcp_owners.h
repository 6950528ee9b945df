/* The owners of followed TCP connections, by 4-tuple: what bpf/trace_tcp.c publishes
 * and bpf/trace_net.c looks a packet up in (both only with -DTRACE_TCP_OWNERS_FD, the
 * fd of the HASH ringtool makes: ringtool/trace/reading/tcp_owners.py, which passes
 * the two sizes below as -DTRACE_TCP_OWNER_KEY_SIZE / -DTRACE_TCP_OWNER_SIZE).
 *
 * A connection's key is its end's view: the local address and port, the remote ones.
 * Addresses are 16 bytes, IPv4 as ::ffff:a.b.c.d (as sock:inet_sock_set_state's
 * saddr_v6 has them), so an AF_INET6 socket talking IPv4 matches its IPv4 packets.
 * Ports in host byte order. A packet's end is by its direction: an egress packet is
 * its source's (local = source), an ingress one its destination's (local =
 * destination); over loopback both ends are local, and each copy of a packet (egress,
 * then ingress) names the process of its own end.
 */
#ifndef RINGTOOL_TCP_OWNERS_H
#define RINGTOOL_TCP_OWNERS_H

struct tcp_owner_key {
    u8 local[16];
    u8 remote[16];
    u16 lport;
    u16 rport;
};

struct tcp_owner {
    u64 comm[2];     /* the owner's comm, as two u64 words */
    u64 cgroup;
    u32 pid;
    u32 tid;
    u32 uid;         /* real uid */
    u32 pad;
};

#ifdef TRACE_TCP_OWNERS_FD
#if !defined(TRACE_TCP_OWNER_KEY_SIZE) || !defined(TRACE_TCP_OWNER_SIZE)
#error "tcp_owners.h: give TRACE_TCP_OWNER_KEY_SIZE and TRACE_TCP_OWNER_SIZE with the map's fd"
#endif
_Static_assert(sizeof(struct tcp_owner_key) == TRACE_TCP_OWNER_KEY_SIZE,
               "struct tcp_owner_key differs from ringtool/trace/reading/tcp_owners.py");
_Static_assert(sizeof(struct tcp_owner) == TRACE_TCP_OWNER_SIZE,
               "struct tcp_owner differs from ringtool/trace/reading/tcp_owners.py");
#define TCP_OWNERS ((void *)bpf_pseudo_fd(1, TRACE_TCP_OWNERS_FD))
#endif

#endif

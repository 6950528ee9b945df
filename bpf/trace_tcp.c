/* ringtool trace source `tcp`: the life of each TCP connection -> RINGBUF.
 *
 * One program on the `sock:inet_sock_set_state` tracepoint (every TCP state change
 * of a socket, include/trace/events/sock.h; the same fields from 4.16 on). Per
 * connection, keyed by its struct sock's address, `conns` keeps when it began, the
 * states it went through and its owner; when it reaches TCP_CLOSE a struct trace_tcp
 * (bpf/trace_event.h, type TRACE_TCP) is reserved in this CPU's ring of the per-CPU
 * group, filled and submitted, and the entry deleted. Like tcplife's, from the
 * libbpf-tools of the BCC project, which this follows in what it records.
 *
 * A connection begins at SYN_SENT (connect(2): active) or at SYN_RECV (the child a
 * listener creates for an incoming SYN: passive). A socket first seen in another
 * state (open before the trace began) is not followed, and neither is a listener.
 *
 * Its owner (the header's pid, tid, comm, cgroup and the uid/gid) is the task of the
 * first state change made in the process's own context: connect() for an active
 * one (SYN_SENT), and for a passive one its close(2) or shutdown(2) (ESTABLISHED ->
 * FIN_WAIT1, or CLOSE_WAIT -> LAST_ACK), which the process that accepted it (or got
 * its descriptor) makes, or before that its first send or receive call where the
 * kernel has the sock:sock_send_length and sock:sock_recv_length tracepoints (6.3
 * on, TRACE_HAVE_SOCK_LENGTH from the tcp entry's needs). Every other change runs in softirq context, on behalf of
 * whatever task the CPU happened to run (tcplife takes its pid at SYN_SENT and
 * LAST_ACK only, and the current task at the close otherwise). A passive connection
 * that ends without such a call (reset by the peer) has no owner: pid 0, comm "".
 *
 * The filters (-p, -t, -u, --cgroup, -c; ringtool itself) are asked once, of the
 * owner, when it is taken: a rejected connection's entry is deleted then, and nothing
 * is reserved for it. An ownerless connection is an event only when no filter is
 * given. -x (TRACE_FILTER_FAILED): only connections that never reached ESTABLISHED
 * (a refused or timed-out connect, a reset handshake).
 *
 * At the close: tx_bytes and rx_bytes are the socket's tcp_sock.bytes_acked and
 * bytes_received (what TCP_INFO gives as tcpi_bytes_acked / tcpi_bytes_received, and
 * tcplife shows): the advances of snd_una and rcv_nxt, i.e. sequence space, where a
 * SYN and a FIN take one number each besides the payload (an active end's own SYN is
 * counted, a passive end's SYN-ACK is not: the child starts past it). `error` is its
 * sk_err (ECONNREFUSED for a refused connect, ETIMEDOUT, ECONNRESET: the kernel sets
 * it before the close). Their offsets in the running kernel come from its BTF as -D
 * constants (TRACE_TCP_BYTES_ACKED_OFF, TRACE_TCP_BYTES_RECEIVED_OFF,
 * TRACE_SOCK_ERR_OFF: the tcp entry's needs in ringtool/event/registry.py); the
 * tracepoint's skaddr is a plain pointer, read with bpf_probe_read_kernel.
 * Addresses and ports are the tracepoint's at the close (saddr_v6/daddr_v6: IPv4 ones
 * as ::ffff:a.b.c.d); `conns` keeps those of each state change too, for the
 * dashboard, which reads the open connections from it (struct trace_tcp_conn,
 * bpf/trace_event.h: owner, start, addresses; their bytes are read at the close only).
 *
 * Live (TRACE_HAVE_SOCK_LENGTH): those two tracepoints count the bytes every send
 * and receive call of a TCP socket returned (a MSG_PEEK read: none), in the calling
 * process's `proc_io` entry (an LRU hash by tgid; the filters asked of the caller)
 * and in the connection's `conns` entry where it is followed. A `conns` entry also
 * keeps the newest state, remote address and ports, so that ringtool can list the
 * open connections of a process (ringtool/trace/reading/tcp_maps.py, the dashboard's
 * drill-down); it reads `proc_io` each interval.
 *
 * A connection that cannot be followed (`conns` full) or whose record finds its ring
 * full is counted per CPU (group counter + this source's `drops`).
 *
 * With -DTRACE_TCP_OWNERS_FD (the net source runs too: docs/trace.md, "Packets and
 * their processes") each followed connection's owner is also published by 4-tuple in
 * that HASH (bpf/tcp_owners.h), for bpf/trace_net.c to name the process of a packet:
 * from the moment the connection has both its 4-tuple (ESTABLISHED: an active end's
 * local port is chosen after SYN_SENT) and its owner, until TCP_CLOSE, when the entry
 * is deleted. A passive connection's owner is then also taken at the first send or
 * receive on it (sock:sock_send_length / sock_recv_length, Linux 6.3 on:
 * TRACE_HAVE_SOCK_LENGTH; tcp_sendmsg/tcp_recvmsg run in the caller's context), which
 * comes before its close; without those tracepoints, at its close or shutdown as
 * above. Without the constant none of this is compiled: the tcp source alone is the
 * same program.
 * cflags: RingBufGroup.cflags(), TRACE_* filters and sizes (see trace_event.h), the
 * offsets above, TRACE_TCP_OWNERS_FD and its sizes (bpf/tcp_owners.h),
 * TRACE_HAVE_SOCK_LENGTH.
 */
#include "percpu_ringbuf.h"
#include "trace_event.h"
#include "tcp_owners.h"

#if !defined(TRACE_TCP_BYTES_ACKED_OFF) || !defined(TRACE_TCP_BYTES_RECEIVED_OFF) || \
    !defined(TRACE_SOCK_ERR_OFF)
#error "trace_tcp.c: the kernel's BTF (/sys/kernel/btf/vmlinux) shows no tcp_sock.bytes_acked, tcp_sock.bytes_received or sock.sk_err"
#endif

#ifndef TRACE_TCP_MAX_CONNS
#define TRACE_TCP_MAX_CONNS 16384
#endif

/* include/net/tcp_states.h; uapi/linux/in.h, linux/socket.h */
#define TCP_ST_ESTABLISHED 1
#define TCP_ST_SYN_SENT 2
#define TCP_ST_SYN_RECV 3
#define TCP_ST_FIN_WAIT1 4
#define TCP_ST_CLOSE 7
#define TCP_ST_LAST_ACK 9
#define TCP_PROTO 6
#define TCP_AF_INET6 10

#if defined(TRACE_FILTER_PID) || defined(TRACE_FILTER_TID) || defined(TRACE_FILTER_UID) || \
    defined(TRACE_FILTER_CGROUP) || defined(TRACE_FILTER_COMM)
#define TCP_ANY_FILTER 1
#else
#define TCP_ANY_FILTER 0
#endif

#ifndef TRACE_HAVE_SOCK_LENGTH
#error "trace_tcp.c: compile with the tcp entry's needs (TRACE_HAVE_SOCK_LENGTH)"
#endif
#ifndef TRACE_TCP_MAX_PROCS
#define TRACE_TCP_MAX_PROCS 4096
#endif
#define TCP_AF_INET 2
#define TCP_MSG_PEEK 2

/* A process's bytes through its TCP sockets' send and receive calls. */
struct tcp_io {
    u64 tx_bytes;
    u64 rx_bytes;
};

/* One followed connection: a struct trace_tcp_conn (bpf/trace_event.h; the dashboard
 * reads the open ones: ringtool/trace/reading/tcp_conns.py). */
BPF_HASH(conns, u64, struct trace_tcp_conn, TRACE_TCP_MAX_CONNS);
#if TRACE_HAVE_SOCK_LENGTH
BPF_TABLE("lru_hash", u32, struct tcp_io, proc_io, TRACE_TCP_MAX_PROCS);
#endif
BPF_PERCPU_ARRAY(drops, u64, 1);

/* A connection that is lost to the trace: group counter + this source's. */
static __always_inline void count_drop(void)
{
    rt_pcpu_count_drop();
    drops.increment(0);
}

#ifdef TRACE_TCP_OWNERS_FD
#ifndef TRACE_HAVE_SOCK_LENGTH
#error "trace_tcp.c: compile with the tcp source's needs (TRACE_HAVE_SOCK_LENGTH)"
#endif
/* The owners' key of `c`: its addresses and ports (final once `known`). */
static __always_inline void owner_key(const struct trace_tcp_conn *c, struct tcp_owner_key *k)
{
    __builtin_memcpy(k->local, c->saddr, sizeof(k->local));
    __builtin_memcpy(k->remote, c->daddr, sizeof(k->remote));
    k->lport = c->sport;
    k->rport = c->dport;
}

/* Publish `c`'s owner at its 4-tuple once both are known (bpf/tcp_owners.h). */
static __always_inline void publish(struct trace_tcp_conn *c)
{
    if (!c->owned || !c->known || c->published)
        return;
    struct tcp_owner_key k = {};
    struct tcp_owner o = {};
    owner_key(c, &k);
    __builtin_memcpy(o.comm, c->comm, sizeof(o.comm));
    o.cgroup = c->cgroup;
    o.pid = c->pid;
    o.tid = c->tid;
    o.uid = c->uid;
    if (bpf_map_update_elem(TCP_OWNERS, &k, &o, BPF_ANY) == 0)
        c->published = 1;
}

/* Take back what publish() made of `c` (its close, or the filters rejected it). */
static __always_inline void unpublish(struct trace_tcp_conn *c)
{
    if (!c->published)
        return;
    struct tcp_owner_key k = {};
    owner_key(c, &k);
    bpf_map_delete_elem(TCP_OWNERS, &k);
}
#else
#define publish(c) ((void)0)
#define unpublish(c) ((void)0)
#endif

/* Take the current task as the owner of `c`; 0 when the filters reject it. */
static __always_inline int take_owner(struct trace_tcp_conn *c)
{
    void *task = TRACE_CURRENT_TASK();
    u64 id = TRACE_PID_TGID_OF(task);
    if (trace_skip_current_of(id >> 32, task))
        return 0;
    u64 ids = bpf_get_current_uid_gid();
    c->pid = id >> 32;
    c->tid = (u32)id;
    c->uid = (u32)ids;
    c->gid = ids >> 32;
    trace_task_comm_of(task, (u64 *)c->comm);
    c->cgroup = trace_task_cgroup(task);
    c->owned = 1;
    return 1;
}

/* Where the tracepoint's record has a state change's addresses and ports (BCC declares
 * its type inside the probe only). */
struct tcp_where {
    const u8 *saddr;  /* saddr_v6, daddr_v6 */
    const u8 *daddr;
    u16 sport;
    u16 dport;
    u16 family;
};

/* The addresses and ports of `c` now: those of the state change at `w`. */
static __always_inline void take_where(struct trace_tcp_conn *c, const struct tcp_where *w)
{
    bpf_probe_read_kernel(c->saddr, sizeof(c->saddr), w->saddr);
    bpf_probe_read_kernel(c->daddr, sizeof(c->daddr), w->daddr);
    c->sport = w->sport;
    c->dport = w->dport;
}

/* Follow the new connection `sk`, which entered `state` at `w` (SYN_SENT from CLOSE, a
 * fresh socket's; SYN_RECV from LISTEN, its listener's, whose state a child starts
 * with). */
static __always_inline int begin(u64 sk, int state, const struct tcp_where *w)
{
    struct trace_tcp_conn c = {};
    take_where(&c, w);
    c.start_ns = bpf_ktime_get_ns();
    c.states = 1 << (state & 15);
    c.active = state == TCP_ST_SYN_SENT;
    c.state = state;
    if (c.active && !take_owner(&c))  /* connect(): the caller is the owner */
        return 0;
    if (conns.insert(&sk, &c))
        count_drop();
    return 0;
}

/* The event of connection `sk` (`c`), closing now at `w` (`ctx`: the program's). */
static __always_inline int finish(void *ctx, u64 sk, struct trace_tcp_conn *c,
                                  const struct tcp_where *w)
{
#ifdef TRACE_FILTER_FAILED
    if (c->states & (1 << TCP_ST_ESTABLISHED))
        goto out;
#endif
    if (!c->owned && TCP_ANY_FILTER)
        goto out;
    void *ring;
    struct trace_tcp *e = rt_pcpu_reserve_in(&ring, sizeof(*e));
    if (!e) {
        drops.increment(0);
        goto out;
    }
    u64 now = bpf_ktime_get_ns();
    e->h.ts = now;
    e->h.type = TRACE_TCP;
    e->h.cpu = bpf_get_smp_processor_id();
    e->h.pid = c->pid;  /* zeros where !owned (the entry began zeroed) */
    e->h.tid = c->tid;
    u64 *words = (u64 *)e->h.comm;
    const u64 *comm = (const u64 *)c->comm;
    words[0] = comm[0];
    words[1] = comm[1];
    e->h.cgroup = c->cgroup;
    e->uid = c->uid;
    e->gid = c->gid;
    e->duration_ns = now - c->start_ns;
    const char *s = (const char *)sk;
    e->tx_bytes = 0;
    e->rx_bytes = 0;
    e->error = 0;
    bpf_probe_read_kernel(&e->tx_bytes, sizeof(e->tx_bytes), s + TRACE_TCP_BYTES_ACKED_OFF);
    bpf_probe_read_kernel(&e->rx_bytes, sizeof(e->rx_bytes), s + TRACE_TCP_BYTES_RECEIVED_OFF);
    bpf_probe_read_kernel(&e->error, sizeof(e->error), s + TRACE_SOCK_ERR_OFF);
    bpf_probe_read_kernel(e->saddr, sizeof(e->saddr), w->saddr);
    bpf_probe_read_kernel(e->daddr, sizeof(e->daddr), w->daddr);
    e->sport = w->sport;
    e->dport = w->dport;
    e->states = c->states;
    e->family = w->family == TCP_AF_INET6 ? 6 : 4;
    e->active = c->active;
    RT_PCPU_SUBMIT_TO(ctx, ring, e, sizeof(*e));
out:
    unpublish(c);
    conns.delete(&sk);
    return 0;
}

TRACEPOINT_PROBE(sock, inet_sock_set_state)
{
    if (args->protocol != TCP_PROTO)
        return 0;
    u64 sk = (u64)args->skaddr;
    int state = args->newstate;
    struct tcp_where w = {args->saddr_v6, args->daddr_v6, args->sport, args->dport, args->family};
    struct trace_tcp_conn *c = conns.lookup(&sk);
    if (!c) {
        if (state == TCP_ST_SYN_SENT || state == TCP_ST_SYN_RECV)
            return begin(sk, state, &w);
        return 0;
    }
    c->states |= 1 << (state & 15);
    c->state = state;
    /* a passive connection's owner: the process that closes or shuts it down */
    if (!c->owned && (state == TCP_ST_FIN_WAIT1 || state == TCP_ST_LAST_ACK) &&
        !take_owner(c)) {
        conns.delete(&sk);
        return 0;
    }
    if (state != TCP_ST_CLOSE) {
        take_where(c, &w);  /* the dashboard's open connections; the owners' key */
#ifdef TRACE_TCP_OWNERS_FD
        if (state == TCP_ST_ESTABLISHED)
            c->known = 1;  /* its 4-tuple is final from here on */
#endif
        publish(c);
        return 0;
    }
    return finish(args, sk, c, &w);
}

#if TRACE_HAVE_SOCK_LENGTH
/* `len` bytes sent (`tx`) or received through TCP socket `sk` by the current task
 * (tcp_sendmsg/tcp_recvmsg run in the caller's context): counted for its process in
 * proc_io, and for the connection in `conns`; a passive one without an owner takes
 * the current task as its owner (it accepted it), published by 4-tuple with
 * TRACE_TCP_OWNERS_FD. */
static __always_inline int count_io(u64 sk, int family, int protocol, int len, int flags,
                                    int tx)
{
    if (protocol != TCP_PROTO || len <= 0 || (flags & TCP_MSG_PEEK) ||
        (family != TCP_AF_INET && family != TCP_AF_INET6))
        return 0;
    struct trace_tcp_conn *c = conns.lookup(&sk);
    if (c && !c->owned) {
        if (!take_owner(c)) {
            conns.delete(&sk);
            return 0;
        }
        publish(c);
    }
    if (c) {
        if (tx)
            __sync_fetch_and_add(&c->tx_bytes, len);
        else
            __sync_fetch_and_add(&c->rx_bytes, len);
    }
    void *task = TRACE_CURRENT_TASK();
    u32 tgid = TRACE_PID_TGID_OF(task) >> 32;
    if (trace_skip_current_of(tgid, task))
        return 0;
    struct tcp_io *io = proc_io.lookup(&tgid);
    if (!io) {
        struct tcp_io zero = {};
        proc_io.insert(&tgid, &zero);
        io = proc_io.lookup(&tgid);
        if (!io)
            return 0;
    }
    if (tx)
        __sync_fetch_and_add(&io->tx_bytes, len);
    else
        __sync_fetch_and_add(&io->rx_bytes, len);
    return 0;
}

TRACEPOINT_PROBE(sock, sock_send_length)
{
    return count_io((u64)args->sk, args->family, args->protocol, args->ret, args->flags, 1);
}

TRACEPOINT_PROBE(sock, sock_recv_length)
{
    return count_io((u64)args->sk, args->family, args->protocol, args->ret, args->flags, 0);
}
#endif

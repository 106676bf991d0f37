// SPDX-License-Identifier: MIT
// The sim backend: an endpoint on a simulated node of velo-fabric (protocol in
// velo/velo_sim_proto.h, docs/simulator.md). Stores go into the endpoint's shared-memory store
// channel (one slot per write-combining flush); rings are shared memory the fabric writes as
// the NIC's DMA; control requests go over the endpoint's own SOCK_SEQPACKET connection.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo_hw.h"
#include "velo/velo_sim_proto.h"
#include "velo/velo_uapi.h"
#include "velo_backend.h"

struct velo_dev {
    int sock;
    int doorbell;
    pthread_mutex_t sock_lock;
    uint32_t seq;
    struct velo_sim_info* info;
    size_t info_bytes;
    struct velo_sim_chan_hdr* chan;
    size_t chan_bytes;
    struct velo_sim_slot* slots;
    uint32_t nslots;
    void* ring;
    size_t ring_bytes;
    void* ctl_ring;
    size_t ctl_ring_bytes;
    void* nq;  // RMA notification queue (read-only), after VELO_SIM_IOCTL RMA_SETUP
    size_t nq_bytes;
};

static _Atomic unsigned tid_next = 1;
static _Thread_local uint16_t my_tid;

static long futex(volatile uint32_t* addr, int op, uint32_t val, const struct timespec* ts) {
    return syscall(SYS_futex, (uint32_t*)addr, op, val, ts, NULL, 0);
}

static struct timespec ts_of(int64_t ns) {
    struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    return t;
}

// Whether the fabric closed the connection. Readable alone is not enough: with several threads, a
// reply that another thread's request is about to read also makes the socket readable, so a
// readable socket is dead only when a peek finds the end of the connection.
static int sock_dead(struct velo_dev* s) {
    struct pollfd p = {.fd = s->sock, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLHUP | POLLERR)) return 1;
    char c;
    return recv(s->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// One request and its reply (with up to nfds descriptors). Returns the reply's status.
static int request(struct velo_dev* s, struct velo_sim_msg* m, int* fds, int nfds) {
    m->magic = VELO_SIM_MAGIC;
    m->version = VELO_SIM_VERSION;
    m->seq = ++s->seq;
    if (send(s->sock, m, sizeof *m, MSG_NOSIGNAL) != (ssize_t)sizeof *m) return errno == EPIPE ? -EPIPE : -errno;
    struct velo_sim_msg r;
    char cbuf[CMSG_SPACE(sizeof(int) * VELO_SIM_OPEN_NFDS)];
    struct iovec iov = {.iov_base = &r, .iov_len = sizeof r};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    ssize_t n;
    do {
        n = recvmsg(s->sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n == 0) return -EPIPE;
    if (n < 0) return -errno;
    int got = 0;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            int tmp[VELO_SIM_OPEN_NFDS];
            memcpy(tmp, CMSG_DATA(c), sizeof(int) * (size_t)(k < VELO_SIM_OPEN_NFDS ? k : VELO_SIM_OPEN_NFDS));
            for (int i = 0; i < k && i < VELO_SIM_OPEN_NFDS; ++i) {
                if (got < nfds)
                    fds[got++] = tmp[i];
                else
                    close(tmp[i]);
            }
        }
    }
    if ((size_t)n != sizeof r || r.magic != VELO_SIM_MAGIC || r.version != VELO_SIM_VERSION || r.seq != m->seq ||
        r.type != m->type) {
        for (int i = 0; i < got; ++i) close(fds[i]);
        return -EPROTO;
    }
    if (r.status == 0 && got != nfds) {
        for (int i = 0; i < got; ++i) close(fds[i]);
        return -EPROTO;
    }
    *m = r;
    return r.status;
}

static int sim_grant(struct velo_be* b, unsigned from, unsigned node, unsigned vpid, uint8_t** win) {
    struct velo_dev* s = b->dev;
    struct velo_sim_msg m;
    memset(&m, 0, sizeof m);
    m.type = VELO_SIM_GRANT;
    m.arg[0] = from;
    m.arg[1] = node;
    m.arg[2] = vpid;
    pthread_mutex_lock(&s->sock_lock);
    int r = request(s, &m, NULL, 0);
    pthread_mutex_unlock(&s->sock_lock);
    if (r == -EPIPE) b->dead = 1;
    if (r < 0) return r;
    *win = NULL;
    return (int)m.arg[0];
}

static int sim_revoke(struct velo_be* b, int page, uint8_t* win) {
    (void)win;
    struct velo_dev* s = b->dev;
    struct velo_sim_msg m;
    memset(&m, 0, sizeof m);
    m.type = VELO_SIM_REVOKE;
    m.arg[0] = page;
    pthread_mutex_lock(&s->sock_lock);
    int r = request(s, &m, NULL, 0);
    pthread_mutex_unlock(&s->sock_lock);
    return r;
}

// A write-combining flush into the store channel: claim a slot (fetch-add), wait until the
// fabric has emptied it, fill it, hand it over (release), ring the doorbell if the fabric sleeps.
static int sim_store(struct velo_be* b, int page, uint8_t* win, unsigned off, const void* data, unsigned bytes) {
    (void)win;
    struct velo_dev* s = b->dev;
    if (page < 0 || bytes == 0 || bytes > 64 || (off & 63) + bytes > 64 || off >= 4096) return -EINVAL;
    if (b->dead) return -EPIPE;
    if (!my_tid) my_tid = (uint16_t)(atomic_fetch_add(&tid_next, 1) | 1);
    const uint32_t pos = __atomic_fetch_add(&s->chan->tail, 1, __ATOMIC_RELAXED);
    struct velo_sim_slot* sl = &s->slots[pos & (s->nslots - 1)];
    for (unsigned i = 0; __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) != pos; ++i) {
        if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        // the channel is full: sleep until the fabric takes slots (back pressure, as a CPU
        // stalls on posted-write credits)
        uint32_t h = __atomic_load_n(&s->chan->head, __ATOMIC_ACQUIRE);
        __atomic_store_n(&s->chan->prod_waiters, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE) == pos) break;
        if (__atomic_load_n(&s->info->sleeping, __ATOMIC_SEQ_CST)) {
            uint64_t one = 1;
            if (write(s->doorbell, &one, 8) < 0) {
            }
        }
        struct timespec ts = ts_of(20000000);
        futex(&s->chan->head, FUTEX_WAIT, h, &ts);
        if ((i & 15) == 15 && sock_dead(s)) {
            b->dead = 1;
            return -EPIPE;
        }
    }
    sl->page = (uint32_t)page;
    sl->off = (uint16_t)off;
    sl->bytes = (uint8_t)bytes;
    sl->tid = my_tid;
    memcpy(sl->data, data, bytes);
    __atomic_store_n(&sl->seq, pos + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&s->info->sleeping, __ATOMIC_RELAXED)) {
        uint64_t one = 1;
        if (write(s->doorbell, &one, 8) < 0) {
            // the fabric is gone; the next request notices
        }
    }
    return 0;
}

// ring: VELO_BE_DATA (user page 0) or VELO_BE_CTL (1)
static int sim_write_rp(struct velo_be* b, unsigned ring, uint32_t rp) {
    uint32_t v = rp & ((1u << VELO_MBOX_PTR_BITS) - 1);
    return sim_store(b, (int)(VELO_SIM_PAGE_USER | ring), NULL, VELO_TBL_VPID_USER_MB_RP, &v, 4);
}

static int ring_ready(const uint8_t* cur, uint64_t expect) {
    return !((__atomic_load_n((const uint64_t*)cur, __ATOMIC_ACQUIRE) ^ expect) & (1ull << VELO_MBOX_HDR_PHASE_SHIFT));
}

static void sim_wait_state(struct velo_be* b, int waiting) {
    struct velo_dev* s = b->dev;
    if (!s) return;
    __atomic_store_n(&s->chan->rx_waiters, waiting ? 1u : 0u, __ATOMIC_SEQ_CST);
    // a fabric that holds simulated time for us learns at once that we wait again
    if (waiting && __atomic_load_n(&s->info->frozen, __ATOMIC_SEQ_CST)) {
        uint64_t one = 1;
        if (write(s->doorbell, &one, 8) < 0) {
        }
    }
}

// Inside velo_wait (rx_waiters is 1 from its start, so mail that comes while it spins also
// holds simulated time): sleep on the futex until the fabric writes into our rings.
// The rest of a sleep on the channel's rx_seq futex, once the caller armed rx_waiters (after
// reading rx_seq) and found nothing ready: tell a frozen fabric that this client waits again, then
// sleep up to one 50 ms slice (simulated time stands while woken clients react).
static int chan_wait(struct velo_be* b, uint32_t seq, int64_t timeout_ns) {
    struct velo_dev* s = b->dev;
    struct velo_sim_chan_hdr* ch = s->chan;
    if (__atomic_load_n(&s->info->frozen, __ATOMIC_SEQ_CST)) {
        uint64_t one = 1;
        if (write(s->doorbell, &one, 8) < 0) {
        }
    }
    const int64_t slice = 50000000;
    struct timespec ts = ts_of(timeout_ns < 0 || timeout_ns > slice ? slice : timeout_ns);
    long r = futex(&ch->rx_seq, FUTEX_WAIT, seq, &ts);
    int e = r < 0 ? errno : 0;
    if (e == EINTR) return -EINTR;
    if (e == ETIMEDOUT && sock_dead(s)) {
        b->dead = 1;
        return -EPIPE;
    }
    return 0;
}

static int sim_sleep(struct velo_be* b, const struct velo_be_wait* w, int64_t timeout_ns) {
    struct velo_dev* s = b->dev;
    struct velo_sim_chan_hdr* ch = s->chan;
    const uint32_t seq = __atomic_load_n(&ch->rx_seq, __ATOMIC_ACQUIRE);
    __atomic_store_n(&ch->rx_waiters, 1, __ATOMIC_SEQ_CST);
    if (w->pending || ring_ready(w->data_cur, w->data_expect) || ring_ready(w->ctl_cur, w->ctl_expect)) return 0;
    // (the fabric bumps rx_seq for the notification queue too)
    if (w->nq_hdr && (__atomic_load_n(w->nq_hdr, __ATOMIC_ACQUIRE) & w->nq_mask) == w->nq_val) return 0;
    return chan_wait(b, seq, timeout_ns);
}

static void sim_no_credit(struct velo_be* b) {
    __atomic_store_n(&b->dev->chan->rx_waiters, 1, __ATOMIC_SEQ_CST);
}

static int sim_clock(const struct velo_be* b, uint64_t* now, uint64_t* last_rx) {
    const struct velo_dev* s = b->dev;
    if (now) *now = __atomic_load_n(&s->info->cycle, __ATOMIC_ACQUIRE);
    if (last_rx) *last_rx = __atomic_load_n(&s->chan->rx_cycle, __ATOMIC_ACQUIRE);
    return 0;
}

static void sim_unmap(struct velo_dev* s) {
    if (s->info) munmap(s->info, s->info_bytes);
    if (s->chan) munmap(s->chan, s->chan_bytes);
    if (s->ring) munmap(s->ring, s->ring_bytes);
    if (s->ctl_ring) munmap(s->ctl_ring, s->ctl_ring_bytes);
    if (s->nq) munmap(s->nq, s->nq_bytes);
    if (s->doorbell >= 0) close(s->doorbell);
    if (s->sock >= 0) close(s->sock);
    pthread_mutex_destroy(&s->sock_lock);
    free(s);
}

static void sim_close(struct velo_be* b) {
    struct velo_dev* s = b->dev;
    if (!s) return;
    if (!b->dead) {
        // wait until the fabric has taken every store (the goodbyes above), then close:
        // the fabric quiesces the vpids before it reuses the memory
        for (int i = 0; i < 2000; ++i) {
            if (__atomic_load_n(&s->chan->head, __ATOMIC_ACQUIRE) == __atomic_load_n(&s->chan->tail, __ATOMIC_ACQUIRE))
                break;
            if (__atomic_load_n(&s->info->sleeping, __ATOMIC_RELAXED)) {
                uint64_t one = 1;
                if (write(s->doorbell, &one, 8) < 0) break;
            }
            struct timespec ts = ts_of(1000000);
            nanosleep(&ts, NULL);
        }
        struct velo_sim_msg m;
        memset(&m, 0, sizeof m);
        m.type = VELO_SIM_CLOSE;
        pthread_mutex_lock(&s->sock_lock);
        request(s, &m, NULL, 0);
        pthread_mutex_unlock(&s->sock_lock);
    }
    sim_unmap(s);
}

static void* map_fd(int fd, size_t* bytes, int prot) {
    off_t sz = lseek(fd, 0, SEEK_END);
    if (sz <= 0) return NULL;
    void* p = mmap(NULL, (size_t)sz, prot, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return NULL;
    *bytes = (size_t)sz;
    return p;
}

// ---- RMA (docs/simulator.md "RMA"): the driver ABI's RMA requests go to the fabric, which runs
// the driver core for them; commands and the queue's read pointer are stores of the channel.
static int sim_ioctl_req(struct velo_be* b, unsigned nr, void* arg, int* fd) {
    struct velo_dev* s = b->dev;
    const uint32_t sz = *(const uint32_t*)arg;  // every velo_uapi_* structure starts with argsz
    if (sz < 8 || sz > sizeof(((struct velo_sim_msg*)0)->text)) return -EINVAL;
    if (b->dead) return -EPIPE;
    struct velo_sim_msg m;
    memset(&m, 0, sizeof m);
    m.type = VELO_SIM_IOCTL;
    m.arg[0] = nr;
    memcpy(m.text, arg, sz);
    pthread_mutex_lock(&s->sock_lock);
    int r = request(s, &m, fd, fd ? 1 : 0);
    pthread_mutex_unlock(&s->sock_lock);
    if (r == -EPIPE) b->dead = 1;
    if (r == 0) memcpy(arg, m.text, sz);
    return r;
}

static int sim_rma_map(struct velo_be* b, struct velo_rma_map* m) {
    struct velo_dev* s = b->dev;
    struct velo_uapi_rma_setup st;
    memset(&st, 0, sizeof st);
    st.argsz = sizeof st;
    const char* e = getenv("VELO_NQ_LOG2");  // notification queue size, 0: the driver's default
    if (e && *e) {
        char* end = NULL;
        long l = strtol(e, &end, 0);
        if (*end || l < VELO_NQ_LOG2_MIN || l > VELO_RMA_NQ_LOG2_MAX) return -EINVAL;
        st.log2_entries = (uint32_t)l;
    }
    int fd = -1;
    int r = sim_ioctl_req(b, VELO_IOC_NR_RMA_SETUP, &st, &fd);
    if (r < 0) return r;
    size_t bytes = 0;
    void* nq = map_fd(fd, &bytes, PROT_READ);
    close(fd);
    if (!nq || bytes < st.nq_bytes || st.nq_bytes < ((size_t)VELO_RMA_NQ_ENTRY_BYTES << st.out_log2_entries)) {
        if (nq) munmap(nq, bytes);
        return -EPROTO;
    }
    s->nq = nq;
    s->nq_bytes = bytes;
    m->nq = (const volatile uint8_t*)nq;
    m->nq_log2 = st.out_log2_entries;
    m->nq_rp = NULL;     // a store through the channel (sim_rma_write_rp)
    m->cmd_page = NULL;  // stores through the channel (sim_rma_cmd)
    m->region_bits = st.region_bits;
    m->max_regions = st.max_regions;
    return 0;
}

static int sim_rma_ioctl(struct velo_be* b, unsigned long req, void* arg) {
    unsigned nr;
    switch (req) {
        case VELO_IOC_REGISTER:
            nr = VELO_IOC_NR_REGISTER;
            break;
        case VELO_IOC_DEREGISTER:
            nr = VELO_IOC_NR_DEREGISTER;
            break;
        case VELO_IOC_REPIN:
            nr = VELO_IOC_NR_REPIN;
            break;
        default:
            return -ENOTTY;
    }
    return sim_ioctl_req(b, nr, arg, NULL);
}

static int sim_rma_cmd(struct velo_be* b, unsigned off, const uint64_t w[4]) {
    return sim_store(b, (int)VELO_SIM_PAGE_RMA, NULL, off, w, 32);
}

static int sim_rma_write_rp(struct velo_be* b, uint32_t rp) {
    return sim_store(b, (int)(VELO_SIM_PAGE_USER | 0), NULL, VELO_TBL_VPID_USER_NQ_RP, &rp, 4);
}

// velo_rma_wait: sleep on rx_seq (the fabric bumps it after every write into the queue too)
// until the entry at hdr is there, the timeout, or a 50 ms slice ends.
static int sim_rma_sleep(struct velo_be* b, const volatile uint64_t* hdr, uint64_t mask, uint64_t val,
                         int64_t timeout_ns) {
    struct velo_dev* s = b->dev;
    struct velo_sim_chan_hdr* ch = s->chan;
    const uint32_t seq = __atomic_load_n(&ch->rx_seq, __ATOMIC_ACQUIRE);
    __atomic_store_n(&ch->rx_waiters, 1, __ATOMIC_SEQ_CST);
    if ((__atomic_load_n(hdr, __ATOMIC_ACQUIRE) & mask) == val) return 0;
    return chan_wait(b, seq, timeout_ns);
}

// the fabric's default socket is there
static int sim_probe(void) {
    char sock[256];
    struct stat sb;
    return velo_sim_default_socket(sock, sizeof sock) == 0 && stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode);
}

static int sim_open(struct velo_be* b, const char* path, const velo_open_attr_t* a) {
    char def[256];
    if (!path) {
        if (velo_sim_default_socket(def, sizeof def)) return -EINVAL;
        path = def;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) return -EINVAL;
    strcpy(sa.sun_path, path);
    struct velo_dev* s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->doorbell = -1;
    pthread_mutex_init(&s->sock_lock, NULL);
    s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s->sock < 0) {
        int e = -errno;
        sim_unmap(s);
        return e;
    }
    if (connect(s->sock, (struct sockaddr*)&sa, sizeof sa) < 0) {
        int e = errno;
        sim_unmap(s);
        return e == ENOENT || e == ENOTDIR ? -ENODEV : e == ECONNREFUSED ? -ECONNREFUSED : -e;
    }
    // the job's secret, handed out by the launcher: read as the hw backend reads it (after the
    // device answered); the fabric gives it to the driver core's EP_OPEN (unknown: -EACCES)
    uint64_t job_key = 0;
    const char* jk = getenv("VELO_JOB_KEY");
    if (jk && *jk) {
        char* end = NULL;
        errno = 0;
        job_key = strtoull(jk, &end, 0);
        if (errno || !end || *end || !job_key) {
            sim_unmap(s);
            return -EINVAL;
        }
    }
    struct velo_sim_msg m;
    memset(&m, 0, sizeof m);
    m.type = VELO_SIM_OPEN;
    m.arg[0] = a->node < 0 ? 0 : a->node;
    m.arg[1] = a->vpid;
    m.arg[2] = a->ring_log2;
    m.arg[3] = VELO_CTL_RING_LOG2_DEFAULT;
    m.arg[4] = getpid();
    m.arg[5] = (int64_t)job_key;
    int fds[VELO_SIM_OPEN_NFDS];
    int r = request(s, &m, fds, VELO_SIM_OPEN_NFDS);
    if (r < 0) {
        sim_unmap(s);
        return r == -EPIPE ? -ECONNREFUSED : r;
    }
    s->doorbell = fds[1];
    size_t info_bytes = 0;
    s->info = map_fd(fds[0], &info_bytes, PROT_READ);
    s->info_bytes = info_bytes;
    s->chan = map_fd(fds[2], &s->chan_bytes, PROT_READ | PROT_WRITE);
    s->ring = map_fd(fds[3], &s->ring_bytes, PROT_READ);
    s->ctl_ring = map_fd(fds[4], &s->ctl_ring_bytes, PROT_READ);
    close(fds[0]);
    close(fds[2]);
    close(fds[3]);
    close(fds[4]);
    const uint32_t nslots = (uint32_t)m.arg[6];
    const unsigned log2 = (unsigned)m.arg[7], ctl_log2 = (unsigned)m.arg[8];
    if (!s->info || !s->chan || !s->ring || !s->ctl_ring || info_bytes < sizeof(struct velo_sim_info) ||
        s->info->magic != VELO_SIM_MAGIC || nslots == 0 || (nslots & (nslots - 1)) ||
        s->chan_bytes < VELO_SIM_CHAN_BYTES(nslots) || s->ring_bytes < ((size_t)64 << log2) ||
        s->ctl_ring_bytes < ((size_t)64 << ctl_log2)) {
        s->info_bytes = info_bytes;
        sim_unmap(s);
        return -EPROTO;
    }
    // the fabric reads and writes registered buffers of this process (RMA DMA) with
    // process_vm_readv/writev: allow it under Yama ptrace_scope 1 (it is not our ancestor)
#ifdef PR_SET_PTRACER
    if (s->info->pid) prctl(PR_SET_PTRACER, (unsigned long)s->info->pid, 0, 0, 0);
#endif
    s->slots = (struct velo_sim_slot*)((uint8_t*)s->chan + VELO_SIM_CHAN_SLOTS_OFF);
    s->nslots = nslots;
    velo__be_set(b, s, (uint32_t)m.arg[0], (uint32_t)m.arg[1],
                 (struct velo_be_ring){(uint8_t*)s->ring, log2, NULL},  // read pointers: sim_write_rp
                 (struct velo_be_ring){(uint8_t*)s->ctl_ring, ctl_log2, NULL});
    b->node_bits = (uint32_t)m.arg[3];  // (arg[2]: the control vpid, VELO_CTL_VPID of arg[1])
    b->vpid_bits = (uint32_t)m.arg[4];
    b->nodes = (uint32_t)m.arg[5];
    return 0;
}

const struct velo_backend velo__backend_sim = {
    VELO_BACKEND_OPS(sim, "sim"),
    .probe = sim_probe,
    .store = sim_store,
    .write_rp = sim_write_rp,
    .no_credit = sim_no_credit,
    .wait_state = sim_wait_state,
    .spin_polls = 16,
    .clock = sim_clock,
    .rma_map = sim_rma_map,
    .rma_ioctl = sim_rma_ioctl,
    .rma_cmd = sim_rma_cmd,
    .rma_write_rp = sim_rma_write_rp,
    .rma_sleep = sim_rma_sleep,
};

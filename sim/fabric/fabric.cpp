// velo-fabric (see fabric.hpp, docs/simulator.md).
//
// One thread serves the clients (the System may evaluate the NICs of a cycle on more: --threads,
// sim/system/node_pool.cpp). The main loop steps the System one cycle at a time while anything
// moves; at the start of every cycle (System::on_cycle) it takes stores from the clients' channels and posts
// them as TLPs to the node's NIC; every DMA write the NICs make lands in the clients' shared
// memory (each line's header word last, with release semantics) and wakes a waiting client.
// When nothing moves (System::quiet(), no stores) it sleeps in epoll on the control sockets,
// the doorbell eventfd and the signalfd. Control requests run the portable driver core
// (sw/driver/core) against the simulated NIC's registers.
#include "fabric.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#define VELO_HW_WANT_NAMES
#include "fabric_private.hpp"
#include "velo/velo_uapi.h"

namespace velo::fabric {

volatile bool g_verbose = false;

void logf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "velo-fabric: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t now_ms() {
    return now_ns() / 1000000;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

void futex_wake(volatile uint32_t* a) {
    syscall(SYS_futex, const_cast<uint32_t*>(a), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

int make_memfd(const char* name, size_t bytes, void** map) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -errno;
    if (ftruncate(fd, static_cast<off_t>(bytes)) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    *map = p;
    return fd;
}

void seal_readonly(int fd) {
#ifdef F_SEAL_FUTURE_WRITE
    fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW);
#else
    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
#endif
}

// ============================================================================ driver core ops
namespace {
uint32_t op_rd(void* c, uint32_t off) {
    auto* x = static_cast<NodeCtx*>(c);
    return x->f->reg_read(x->node, off);
}
void op_wr(void* c, uint32_t off, uint32_t v) {
    auto* x = static_cast<NodeCtx*>(c);
    x->f->reg_write(x->node, off, v);
}
void* op_alloc(void* c, size_t size, uint64_t* dma, void** cookie) {
    auto* x = static_cast<NodeCtx*>(c);
    return x->f->dma_alloc(x->node, size, dma, cookie);
}
void op_free(void* c, void*, size_t, uint64_t, void* cookie) {
    static_cast<NodeCtx*>(c)->f->dma_free(static_cast<Alloc*>(cookie));
}
void* op_zalloc(void*, size_t size) {
    return std::calloc(1, size);
}
void op_kfree(void*, void* p) {
    std::free(p);
}
void op_unpin(void* c, void* pin) {
    static_cast<NodeCtx*>(c)->f->unpin(static_cast<Pin*>(pin));
}
void op_log(void* c, int level, const char* msg) {
    if (level <= VELO_CORE_LOG_WARN || g_verbose) logf("node %u: %s", static_cast<NodeCtx*>(c)->node, msg);
}
// SipHash-2-4 (64-bit output) of the 16 bytes a, b (little endian) under key: OpenSSL's SIPHASH
// MAC. False when OpenSSL cannot compute it.
bool siphash(const unsigned char key[16], uint64_t a, uint64_t b, uint64_t* out) {
    static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
    EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
    size_t size = 8, len = 0;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_construct_end()};
    unsigned char in[16], h[8];
    for (int i = 0; i < 8; ++i) {
        in[i] = static_cast<unsigned char>(a >> (8 * i));
        in[8 + i] = static_cast<unsigned char>(b >> (8 * i));
    }
    const bool ok = ctx && EVP_MAC_init(ctx, key, 16, params) && EVP_MAC_update(ctx, in, sizeof in) &&
                    EVP_MAC_final(ctx, h, &len, sizeof h) && len == sizeof h;
    EVP_MAC_CTX_free(ctx);
    if (!ok) return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | h[i];
    *out = v;
    return true;
}
// the core's PRF: SipHash with the node's secret (checked to work at init; it cannot fail later
// but for lack of memory, and the core has no way to take an error: stop)
uint64_t op_prf(void* c, uint64_t a, uint64_t b) {
    uint64_t v = 0;
    if (!siphash(static_cast<NodeCtx*>(c)->secret, a, b, &v)) {
        logf("node %u: SipHash failed (OpenSSL): cannot make region keys", static_cast<NodeCtx*>(c)->node);
        std::abort();
    }
    return v;
}
// a node driver's secret, as the Linux driver draws it at probe
bool draw_secret(unsigned char* key, size_t n) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = getrandom(key + got, n - got, 0);
        if (r < 0 && errno != EINTR) return false;
        if (r > 0) got += static_cast<size_t>(r);
    }
    return true;
}
}  // namespace

uint32_t Fabric::reg_read(unsigned node, uint32_t off) {
    try {
        return sys_->reg_read(node, off);
    } catch (const std::exception& e) {
        logf("%s", e.what());
        return 0xFFFFFFFFu;
    }
}

void Fabric::reg_write(unsigned node, uint32_t off, uint32_t v) {
    sys_->reg_write(node, off, v);
}

// ============================================================================ setup
Fabric::~Fabric() {
    for (auto& [fd, c] : clients_) {
        if (c->ep) teardown(c.get(), false);
        close(fd);
    }
    clients_.clear();
    for (auto& g : guests_) {
        for (int fd : {g->fd, g->listen_fd, g->irq_fd, g->resample_fd})
            if (fd >= 0) close(fd);
        if (g->listen_fd >= 0) unlink(g->path.c_str());
        for (auto& r : g->ram) munmap(r.map, r.map_len);
    }
    for (auto* c : core_)
        if (c) velo_core_remove(c);
    if (info_) munmap(info_, 4096);
    for (int fd : {info_fd_, doorbell_, sigfd_, epfd_, listen_fd_})
        if (fd >= 0) close(fd);
    if (!sock_path_.empty() && listen_fd_ >= 0) unlink(sock_path_.c_str());
    if (lock_fd_ >= 0) {
        unlink(lock_path_.c_str());
        close(lock_fd_);
    }
}

bool Fabric::setup_socket() {
    char def[256];
    if (opt_.socket.empty()) {
        if (velo_sim_default_socket(def, sizeof def)) {
            logf("socket path too long");
            return false;
        }
        sock_path_ = def;
    } else {
        sock_path_ = opt_.socket;
    }
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (sock_path_.size() >= sizeof sa.sun_path) {
        logf("socket path too long: %s", sock_path_.c_str());
        return false;
    }
    std::strcpy(sa.sun_path, sock_path_.c_str());
    // one fabric per socket path: a lock file decides, and a live socket is never taken over
    lock_path_ = sock_path_ + ".lock";
    lock_fd_ = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) {
        logf("cannot create %s: %s", lock_path_.c_str(), std::strerror(errno));
        return false;
    }
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) < 0) {
        logf("another fabric serves %s (refusing to start a second one)", sock_path_.c_str());
        close(lock_fd_);
        lock_fd_ = -1;
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
        close(probe);
        logf("another fabric serves %s (refusing to start a second one)", sock_path_.c_str());
        close(lock_fd_);
        lock_fd_ = -1;
        return false;
    }
    if (probe >= 0) close(probe);
    unlink(sock_path_.c_str());  // a stale socket of a fabric that died
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 ||
        listen(listen_fd_, 64) < 0) {
        logf("cannot listen on %s: %s", sock_path_.c_str(), std::strerror(errno));
        if (listen_fd_ >= 0) close(listen_fd_);
        listen_fd_ = -1;
        return false;
    }
    chmod(sock_path_.c_str(), 0600);
    return true;
}

bool Fabric::setup_system() {
    SystemConfig sc;
    if (!opt_.topology.empty())
        sc.topology = opt_.topology;
    else if (opt_.nodes == 0 || opt_.nodes == 2)
        sc.topology = "pair";
    else
        sc.topology = "ring:" + std::to_string(opt_.nodes);
    sc.wide = opt_.wide;
    sc.bar32 = !opt_.qemu.empty();  // QEMU's proxy device maps 32-bit BARs only
    sc.seed = opt_.seed;
    sc.sim_gate = opt_.sim_gate;
    sc.skip_idle = opt_.skip_idle;
    sc.threads = opt_.threads > 0 ? static_cast<unsigned>(opt_.threads) : sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
    try {
        sys_.reset(new System(sc));
    } catch (const std::exception& e) {
        logf("%s", e.what());
        return false;
    }
    const unsigned n = sys_->nodes();
    if (opt_.nodes && opt_.nodes != n) {
        logf("--nodes %u disagrees with topology %s (%u nodes)", opt_.nodes, sc.topology.c_str(), n);
        return false;
    }
    if (!sys_->init()) {
        logf("links of %s did not come up", sc.topology.c_str());
        return false;
    }
    for (const QemuOpt& q : opt_.qemu) {
        if (q.node >= n) {
            logf("--qemu %u:%s: the fabric's nodes are 0-%u", q.node, q.path.c_str(), n - 1);
            return false;
        }
        guests_.emplace_back(new Guest);
        guests_.back()->node = q.node;
        guests_.back()->path = q.path;
    }
    const uint32_t caps = reg_read(0, VELO_REG_ID_CAPS);
    node_bits_ = static_cast<unsigned>(VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps));
    vpid_bits_ = static_cast<unsigned>(VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps));
    ops_ = velo_core_ops{op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr, op_prf};
    ctx_.resize(n);
    core_.assign(n, nullptr);
    allocs_.resize(n);
    next_dma_.assign(n, 0x1000000000ull);
    node_eps_.resize(n);
    rr_.assign(n, 0);
    for (unsigned i = 0; i < n; ++i) {
        ctx_[i] = NodeCtx{this, i, {}};
        if (guest_of(i)) continue;  // the guest's velo.ko is its driver
        uint64_t probe_prf = 0;
        if (!draw_secret(ctx_[i].secret, sizeof ctx_[i].secret) || !siphash(ctx_[i].secret, 0, 0, &probe_prf)) {
            logf("node %u: no secret for the region keys (getrandom or OpenSSL's SIPHASH failed)", i);
            return false;
        }
        int r = velo_core_probe(&ops_, &ctx_[i], &core_[i]);
        if (r < 0) {
            logf("node %u: the driver core refuses the NIC (%d)", i, r);
            return false;
        }
        velo_core_refresh(core_[i]);
        velo_core_set_rma_unpin(core_[i], op_unpin);
        if (velo_core_caps(core_[i])->rma_base && velo_core_rma_enable(core_[i], 1) < 0)
            logf("node %u: the RMA unit does not enable", i);
        if (velo_core_caps(core_[i])->node_id != i) {
            logf("node %u: NODE_ID reads %u", i, velo_core_caps(core_[i])->node_id);
            return false;
        }
    }
    sys_->on_cycle = [this] { on_cycle(); };
    sys_->on_dma_write = [this](unsigned node, const Tlp& t) {
        if (Guest* g = guest_of(node)) return guest_dma_write(*g, t);
        on_dma(node, t);
    };
    // the NIC's DMA reads (RMA): answered by the host model's reader (20 cycles, completions
    // split at RCB boundaries, interleaved) from the clients' memory
    readers_.resize(n);
    for (unsigned i = 0; i < n; ++i) {
        readers_[i].reset(new HostReader(opt_.seed * 37 + i));
        if (Guest* g = guest_of(i))
            readers_[i]->source = [this, g](uint64_t a, uint8_t* p, size_t len) {
                return guest_dma_read(*g, a, p, len);
            };
        else
            readers_[i]->source = [this, i](uint64_t a, uint8_t* p, size_t len) { return rma_read(i, a, p, len); };
        readers_[i]->source_fault = HostReader::Fault::UR;
    }
    sys_->on_dma_read = [this](unsigned node, const Tlp& t) {
        if (!readers_[node]->request(t, sys_->cycle()) && opt_.verbose)
            logf("node %u: malformed DMA read %s", node, t.str().c_str());
    };
    // the info page
    void* p = nullptr;
    info_fd_ = make_memfd("velo-info", 4096, &p);
    if (info_fd_ < 0) return false;
    info_ = static_cast<velo_sim_info*>(p);
    info_->magic = VELO_SIM_MAGIC;
    info_->version = VELO_SIM_VERSION;
    info_->nodes = n;
    info_->node_bits = node_bits_;
    info_->vpid_bits = vpid_bits_;
    info_->tlp_bits = sys_->tlp_bits();
    info_->link_bits = sys_->link_bits();
    info_->pid = static_cast<uint32_t>(getpid());
    std::snprintf(info_->topology, sizeof info_->topology, "%s", sc.topology.c_str());
    seal_readonly(info_fd_);
    update_info();
    return true;
}

// --policy and --job: what a resource manager's prolog does on every node (velo_core_set_policy,
// VELO_IOC_JOB_SET), before any client can connect. Values the NICs cannot hold are refused.
bool Fabric::setup_jobs() {
    const unsigned n = static_cast<unsigned>(core_.size());
    const unsigned half = VELO_CTL_VPID_BIT(vpid_bits_);
    for (unsigned i = 0; i < n; ++i) {
        if (!core_[i]) continue;
        const int r = velo_core_set_policy(core_[i], opt_.policy);
        if (r < 0) {
            logf("node %u: the driver core refuses policy %u (%d)", i, opt_.policy, r);
            return false;
        }
    }
    for (const JobOpt& j : opt_.jobs) {
        velo_core_job cj{};
        cj.key = j.key;
        cj.uid = j.has_uid ? j.uid : VELO_CORE_UID_ANY;
        cj.vpid_lo = j.vpid_lo;
        cj.vpid_hi = j.vpid_hi;
        cj.node_lo = j.all_nodes ? 0 : j.node_lo;
        cj.node_hi = j.all_nodes ? n - 1 : j.node_hi;
        if (cj.vpid_hi >= half) {
            logf("--job 0x%llx: data vpids %u-%u: this fabric's data vpids are 0-%u",
                 static_cast<unsigned long long>(j.key), j.vpid_lo, j.vpid_hi, half - 1);
            return false;
        }
        if (cj.node_hi >= n) {
            logf("--job 0x%llx: nodes %u-%u: this fabric's nodes are 0-%u", static_cast<unsigned long long>(j.key),
                 cj.node_lo, cj.node_hi, n - 1);
            return false;
        }
        for (unsigned i = 0; i < n; ++i) {
            if (!core_[i]) continue;  // a guest's resource manager registers it there
            const int r = velo_core_job_set(core_[i], &cj);
            if (r < 0) {
                logf("--job 0x%llx: node %u's driver core refuses it (%d, %s)", static_cast<unsigned long long>(j.key),
                     i, r, std::strerror(-r));
                return false;
            }
        }
        if (opt_.verbose)
            logf("job 0x%llx: data vpids %u-%u, nodes %u-%u, %s", static_cast<unsigned long long>(j.key), cj.vpid_lo,
                 cj.vpid_hi, cj.node_lo, cj.node_hi, j.has_uid ? ("uid " + std::to_string(j.uid)).c_str() : "any user");
    }
    return true;
}

void Fabric::update_info() {
    __atomic_store_n(&info_->cycle, sys_->cycle(), __ATOMIC_RELEASE);
}

bool Fabric::reacting_done() {
    for (auto it = reacting_.begin(); it != reacting_.end();) {
        Endpoint* e = *it;
        if (e->slot_ready() || __atomic_load_n(&e->chan->rx_waiters, __ATOMIC_SEQ_CST))
            it = reacting_.erase(it);
        else
            ++it;
    }
    return reacting_.empty();
}

void Fabric::handle_events(int timeout_ms) {
    epoll_event ev[32];
    int n = epoll_wait(epfd_, ev, 32, timeout_ms);
    for (int i = 0; i < n; ++i) {
        const int fd = ev[i].data.fd;
        if (fd == listen_fd_) {
            accept_clients();
        } else if (fd == doorbell_) {
            uint64_t v;
            while (read(doorbell_, &v, sizeof v) > 0) {
            }
        } else if (fd == sigfd_) {
            signalfd_siginfo si;
            while (read(sigfd_, &si, sizeof si) > 0) {
                if (opt_.verbose) logf("signal %u: exiting", si.ssi_signo);
                stop_ = true;
            }
        } else if (!guest_fd(fd)) {
            auto it = clients_.find(fd);
            if (it != clients_.end()) on_client(it->second.get());
        }
    }
}

// ============================================================================ main loop
// Poll `done` for up to --spin-us before the caller sleeps: a client woken a moment ago reacts
// within microseconds when it has a core, and finding its store here saves a doorbell write on
// its side and a wake-up on ours (most of a message's wall time when cycles are cheap). The
// flags stay as they are while spinning (`sleeping` 0: stores ring no doorbell).
template <class Done>
bool Fabric::spin_until(Done done) {
    if (spin_ns_ <= 0) return false;
    const int64_t end = now_ns() + spin_ns_;
    do {
        for (int i = 0; i < 32; ++i) cpu_relax();
        if (done()) return true;
    } while (now_ns() < end);
    return false;
}

int Fabric::run() {
    g_verbose = opt_.verbose;
    // signals first, so that a SIGTERM during start-up is not lost
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGTERM);
    sigprocmask(SIG_BLOCK, &ss, nullptr);
    sigfd_ = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
    signal(SIGPIPE, SIG_IGN);
    if (!setup_socket()) return 2;
    if (!setup_system()) return 1;
    if (!setup_jobs()) return 2;
    spin_ns_ = 1000ll * (opt_.spin_us >= 0 ? opt_.spin_us : sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 50 : 0);
    doorbell_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    for (int fd : {listen_fd_, doorbell_, sigfd_}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    }
    if (!setup_guests()) return 2;
    // a guest's vCPU waits for every BAR access: look at its channel often while cycles run
    const uint64_t poll_mask = guests_.empty() ? 255 : 15;
    logf("%u nodes (%s, TLP %u bits, link %u bits) at %s", sys_->nodes(), info_->topology, sys_->tlp_bits(),
         sys_->link_bits(), sock_path_.c_str());
    if (opt_.ready_fd >= 0) {
        if (write(opt_.ready_fd, "ready\n", 6) < 0) {
        }
        close(opt_.ready_fd);
    }
    uint64_t iter = 0;
    while (!stop_) {
        if ((++iter & poll_mask) == 0) handle_events(0);
        if (stop_) break;
        if (!reacting_.empty()) {
            if (!reacting_done()) sys_->park_threads();  // the cores to the clients that react
            if (!reacting_done() && !spin_until([this] { return reacting_done(); })) {
                const int64_t left = opt_.sync_timeout_ms - (now_ms() - freeze_start_);
                if (left > 0) {
                    ++st_.freezes;
                    __atomic_store_n(&info_->frozen, 1, __ATOMIC_SEQ_CST);
                    __atomic_store_n(&info_->sleeping, 1, __ATOMIC_SEQ_CST);
                    if (!reacting_done()) handle_events(static_cast<int>(std::min<int64_t>(left, 10)));
                    __atomic_store_n(&info_->sleeping, 0, __ATOMIC_SEQ_CST);
                    continue;
                }
                ++st_.freeze_timeouts;
                reacting_.clear();
            }
            __atomic_store_n(&info_->frozen, 0, __ATOMIC_SEQ_CST);
        }
        if (sys_->quiet() && !any_deferred() && !any_store_ready() && !guests_busy() &&
            std::all_of(readers_.begin(), readers_.end(), [](const auto& r) { return r->idle(); })) {
            // nothing moves: sleep until a store, a request or a signal (a store that comes within
            // the spin costs neither the client's doorbell nor our wake-up)
            sys_->park_threads();
            if (spin_until([this] { return any_store_ready(); })) continue;
            __atomic_store_n(&info_->sleeping, 1, __ATOMIC_SEQ_CST);
            if (!any_store_ready()) handle_events(guest_sleep_ms());
            guest_cycle();  // write-combining lines that timed out while it slept
            __atomic_store_n(&info_->sleeping, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        sys_->step(1);
    }
    update_info();
    for (auto& e : sys_->errors()) logf("TLP protocol: %s", e.c_str());
    for (auto& r : readers_)
        for (auto& e : r->errors) logf("DMA read: %s", e.c_str());
    if (st_.registers || st_.rma_faults || st_.rma_unknown)
        logf(
            "RMA: %llu registrations, %llu DMA writes and %llu reads of registered memory, %llu faults, %llu to "
            "unknown frames",
            static_cast<unsigned long long>(st_.registers), static_cast<unsigned long long>(st_.rma_dma_writes),
            static_cast<unsigned long long>(st_.rma_dma_reads), static_cast<unsigned long long>(st_.rma_faults),
            static_cast<unsigned long long>(st_.rma_unknown));
    if (opt_.verbose) {
        // what the NICs counted (drops by reason)
        for (unsigned n = 0; n < core_.size(); ++n) {
            if (!core_[n]) continue;
            const uint32_t base = velo_core_caps(core_[n])->counters_base - VELO_BLK_COUNTERS_BASE;
            for (unsigned i = 0; i < VELO_CNT_NUM; ++i) {
                uint32_t v = reg_read(n, VELO_REG_COUNTERS_COUNTER_BASE + base + 4 * i);
                if (v) logf("node %u: %s = %u", n, velo_counter_names[i], v);
            }
            for (unsigned i = 0; i < VELO_RMA_CNT_NUM; ++i) {
                const uint32_t v = velo_core_rma_counter(core_[n], i);
                if (v) logf("node %u: rma %s = %u", n, velo_rma_counter_names[i], v);
            }
        }
    }
    const auto ps = sys_->pool_stats();
    if (ps.shared_runs)
        logf(
            "NIC threads: %llu of %llu cycles shared with the workers, %.1f%% of the node-cycles on them, %llu "
            "stalls",
            static_cast<unsigned long long>(ps.shared_runs), static_cast<unsigned long long>(ps.runs),
            100.0 * static_cast<double>(ps.worker_nodes) /
                static_cast<double>(std::max<uint64_t>(1, ps.shared_runs * sys_->nodes())),
            static_cast<unsigned long long>(ps.stalls));
    logf("exit after %llu cycles: %llu stores (%llu split, %llu refused), %llu DMA writes, %llu clients (%llu died)",
         static_cast<unsigned long long>(sys_->cycle()), static_cast<unsigned long long>(st_.stores),
         static_cast<unsigned long long>(st_.splits), static_cast<unsigned long long>(st_.bad_stores),
         static_cast<unsigned long long>(st_.dma_writes), static_cast<unsigned long long>(st_.clients),
         static_cast<unsigned long long>(st_.client_deaths));
    return 0;
}

int run(const Options& o) {
    Fabric f(o);
    return f.run();
}
}  // namespace velo::fabric

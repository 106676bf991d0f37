// velo-fabric: the control protocol on the Unix socket (velo_sim_proto.h): accepting clients,
// their requests (open an endpoint, grants, info, shutdown), replies with the endpoint's memory as
// fds, and the endpoint's teardown when the client closes it or goes away.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fabric_private.hpp"
#include "velo/velo_uapi.h"

namespace velo::fabric {

void Fabric::reply(Client* c, velo_sim_msg& m, const int* fds, int nfds) {
    m.magic = VELO_SIM_MAGIC;
    m.version = VELO_SIM_VERSION;
    iovec iov{&m, sizeof m};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    char cbuf[CMSG_SPACE(sizeof(int) * VELO_SIM_OPEN_NFDS)];
    if (nfds > 0) {
        std::memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(nfds));
        cmsghdr* cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(nfds));
        std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * static_cast<size_t>(nfds));
    }
    if (sendmsg(c->fd, &mh, MSG_NOSIGNAL) < 0 && opt_.verbose) logf("reply to %d: %s", c->pid, std::strerror(errno));
}

void Fabric::req_open(Client* c, velo_sim_msg& m) {
    if (c->ep) {
        m.status = -EBUSY;
        std::snprintf(m.text, sizeof m.text, "this connection has an endpoint already");
        return reply(c, m, nullptr, 0);
    }
    const int64_t node = m.arg[0], vpid = m.arg[1], log2 = m.arg[2], ctl_log2 = m.arg[3];
    c->pid = static_cast<int>(m.arg[4]);
    if (node < 0 || node >= static_cast<int64_t>(core_.size())) {
        m.status = -EADDRNOTAVAIL;
        std::snprintf(m.text, sizeof m.text, "no node %lld (the fabric has %zu)", static_cast<long long>(node),
                      core_.size());
        return reply(c, m, nullptr, 0);
    }
    if (!core_[node]) {
        m.status = -EADDRNOTAVAIL;
        std::snprintf(m.text, sizeof m.text, "node %lld is the NIC of a QEMU guest: run the program in the guest",
                      static_cast<long long>(node));
        return reply(c, m, nullptr, 0);
    }
    if (log2 < VELO_RING_LOG2_MIN || log2 > VELO_MBOX_LOG2_MAX || ctl_log2 < VELO_RING_LOG2_MIN ||
        ctl_log2 > VELO_MBOX_LOG2_MAX || vpid < -1 || vpid > 255) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    velo_core_ep_params p{};
    p.vpid = static_cast<int>(vpid);
    p.log2_lines = static_cast<unsigned>(log2);
    p.ctl_log2_lines = static_cast<unsigned>(ctl_log2);
    p.owner = c->id;
    // who opens: the job the client names (VELO_JOB_KEY), the peer's pid and uid from
    // SO_PEERCRED; never privileged (the socket carries no privilege)
    p.job_key = static_cast<uint64_t>(m.arg[5]);
    p.pid = c->cl.pid;
    p.uid = c->cl.uid;
    p.privileged = 0;
    const velo_core_ep* ce = nullptr;
    int r = velo_core_ep_open(core_[node], &p, &ce);
    if (r < 0) {
        m.status = r;
        if (r == -EACCES)
            std::snprintf(m.text, sizeof m.text, "node %lld: %s", static_cast<long long>(node),
                          p.job_key ? "job key unknown, or vpid outside the job, or the job is another user's"
                                    : "vpid belongs to a job (or the policy is strict): set VELO_JOB_KEY");
        return reply(c, m, nullptr, 0);
    }
    auto e = std::make_unique<Endpoint>();
    e->id = c->id;
    e->client = c;
    e->node = static_cast<unsigned>(node);
    e->vpid = ce->vpid;
    e->ctl_vpid = ce->ctl_vpid;
    e->core = ce;
    e->ring = static_cast<Alloc*>(ce->ring_cookie);
    e->ctl_ring = static_cast<Alloc*>(ce->ctl_ring_cookie);
    e->ring->ep = e.get();
    e->ring->data_ring = true;
    e->ctl_ring->ep = e.get();
    e->nslots = VELO_SIM_CHAN_NSLOTS;
    e->chan_bytes = VELO_SIM_CHAN_BYTES(e->nslots);
    void* cp = nullptr;
    e->chan_fd = make_memfd("velo-chan", e->chan_bytes, &cp);
    if (e->chan_fd < 0) {
        velo_core_ep_close(core_[node], ce->vpid);
        m.status = -ENOMEM;
        return reply(c, m, nullptr, 0);
    }
    e->chan = static_cast<velo_sim_chan_hdr*>(cp);
    e->chan->magic = VELO_SIM_MAGIC;
    e->chan->nslots = e->nslots;
    e->chan->endpoint = static_cast<uint32_t>(e->id);
    e->slots = reinterpret_cast<velo_sim_slot*>(static_cast<uint8_t*>(cp) + VELO_SIM_CHAN_SLOTS_OFF);
    for (uint32_t i = 0; i < e->nslots; ++i) e->slots[i].seq = i;
    seal_readonly(e->ring->fd);
    seal_readonly(e->ctl_ring->fd);
    m.status = 0;
    m.arg[0] = node;
    m.arg[1] = ce->vpid;
    m.arg[2] = ce->ctl_vpid;
    m.arg[3] = velo_core_caps(core_[node])->node_bits;
    m.arg[4] = velo_core_caps(core_[node])->vpid_bits;
    m.arg[5] = static_cast<int64_t>(core_.size());
    m.arg[6] = e->nslots;
    m.arg[7] = ce->log2_lines;
    m.arg[8] = ce->ctl_log2_lines;
    const int fds[VELO_SIM_OPEN_NFDS] = {info_fd_, doorbell_, e->chan_fd, e->ring->fd, e->ctl_ring->fd};
    node_eps_[node].push_back(e.get());
    c->cl.vpid = static_cast<int>(ce->vpid);
    if (opt_.verbose) logf("pid %d: endpoint node %lld vpid %u", c->pid, static_cast<long long>(node), ce->vpid);
    c->ep = std::move(e);
    reply(c, m, fds, VELO_SIM_OPEN_NFDS);
}

void Fabric::req_grant(Client* c, velo_sim_msg& m) {
    if (!c->ep) {
        m.status = -EBADF;
        return reply(c, m, nullptr, 0);
    }
    const int64_t from = m.arg[0], dnode = m.arg[1], dvpid = m.arg[2];
    if (dnode < 0 || dnode >= static_cast<int64_t>(core_.size())) {
        m.status = dnode < 256 && dnode >= 0 ? -EADDRNOTAVAIL : -EINVAL;
        std::snprintf(m.text, sizeof m.text, "no node %lld", static_cast<long long>(dnode));
        return reply(c, m, nullptr, 0);
    }
    if (dvpid < 0 || dvpid > 255 || from < 0 || from > 1) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    // the fabric sees the whole cluster: refuse destinations where nobody listens (a real
    // driver cannot know; there the connection request times out). A QEMU guest's node is
    // driven by the guest's own driver: there the fabric cannot know either.
    const unsigned vb = velo_core_caps(core_[c->ep->node])->vpid_bits;
    const unsigned data_vpid = static_cast<unsigned>(dvpid) & ~VELO_CTL_VPID_BIT(vb);
    if (core_[dnode] && !velo_core_ep_find(core_[dnode], data_vpid)) {
        m.status = -ECONNREFUSED;
        std::snprintf(m.text, sizeof m.text, "no endpoint at node %lld vpid %u", static_cast<long long>(dnode),
                      data_vpid);
        return reply(c, m, nullptr, 0);
    }
    uint64_t off = 0;
    int r = velo_core_grant(core_[c->ep->node], c->ep->vpid, static_cast<unsigned>(from), static_cast<unsigned>(dnode),
                            static_cast<unsigned>(dvpid), &off);
    m.status = r < 0 ? r : 0;
    if (r >= 0) {
        m.arg[0] = r;
        m.arg[1] = static_cast<int64_t>(off & 0xFFFFFFFFu);
        m.arg[2] = static_cast<int64_t>(off >> 32);
    }
    reply(c, m, nullptr, 0);
}

// Close a client's endpoint: it leaves the round robin, its vpids are disabled and quiesced by
// the driver core before the ring memory is freed.
void Fabric::teardown(Client* c, bool dead) {
    Endpoint* e = c->ep.get();
    if (!e) return;
    auto& v = node_eps_[e->node];
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    rr_[e->node] = 0;
    reacting_.erase(e);
    e->ring->ep = nullptr;
    e->ctl_ring->ep = nullptr;
    if (e->nq) e->nq->ep = nullptr;
    // the core releases the endpoint's regions (invalidate, quiesce, unpin: their frames are
    // forgotten) and closes both vpids with the quiesce barrier; the NIC keeps running meanwhile
    // (DMA of transfers in flight into the client's memory still lands, or faults if it is gone)
    int r = velo_core_ep_close(core_[e->node], e->vpid);
    if (r < 0) logf("node %u vpid %u: close failed (%d); its memory is not reused", e->node, e->vpid, r);
    // frames of regions the NIC never quiesced stay (so no other DMA gets them), but reach nobody
    for (auto& [fn, f] : frames_)
        if (f.client == c->id) f.pid = 0;
    munmap(e->chan, e->chan_bytes);
    close(e->chan_fd);
    if (opt_.verbose || dead)
        logf("pid %d: endpoint node %u vpid %u %s", c->pid, e->node, e->vpid,
             dead ? "torn down (client gone)" : "closed");
    c->ep.reset();
}

void Fabric::drop_client(Client* c, const char* why) {
    ++st_.client_deaths;
    (void)why;
    teardown(c, true);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    clients_.erase(c->fd);
}

void Fabric::accept_clients() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        auto c = std::make_unique<Client>();
        c->id = next_client_++;
        c->fd = fd;
        ucred uc{};
        socklen_t ul = sizeof uc;
        uint32_t uid = VELO_CORE_UID_ANY;  // (no credentials: no user a job names)
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0) {
            c->peer_pid = uc.pid;
            uid = static_cast<uint32_t>(uc.uid);
        }
        velo_core_client_init(&c->cl, c->id, static_cast<uint32_t>(c->peer_pid), uid, 0);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
        clients_[fd] = std::move(c);
        ++st_.clients;
    }
}

void Fabric::on_client(Client* c) {
    for (;;) {
        velo_sim_msg m;
        ssize_t n = recv(c->fd, &m, sizeof m, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            if (c->ep) {
                drop_client(c, "gone");
            } else {
                epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
                close(c->fd);
                clients_.erase(c->fd);
            }
            return;
        }
        if (static_cast<size_t>(n) != sizeof m || m.magic != VELO_SIM_MAGIC || m.version != VELO_SIM_VERSION) {
            // another protocol version: say so once, then hang up
            velo_sim_msg r{};
            r.type = static_cast<size_t>(n) >= 8 ? m.type : 0;
            r.seq = static_cast<size_t>(n) >= 12 ? m.seq : 0;
            r.status = -EPROTO;
            std::snprintf(r.text, sizeof r.text, "fabric protocol %d expected", VELO_SIM_VERSION);
            reply(c, r, nullptr, 0);
            drop_client(c, "protocol");
            return;
        }
        if (m.type != VELO_SIM_IOCTL) std::memset(m.text, 0, sizeof m.text);  // (IOCTL: its structure)
        switch (m.type) {
            case VELO_SIM_OPEN:
                req_open(c, m);
                break;
            case VELO_SIM_GRANT:
                req_grant(c, m);
                break;
            case VELO_SIM_REVOKE:
                m.status =
                    c->ep ? velo_core_revoke(core_[c->ep->node], c->ep->vpid, static_cast<unsigned>(m.arg[0])) : -EBADF;
                reply(c, m, nullptr, 0);
                break;
            case VELO_SIM_CLOSE: {
                // the client's last stores are taken already (it waited for its channel to drain);
                // let them out of the CPU port before the quiesce
                if (c->ep) {
                    Endpoint* e = c->ep.get();
                    for (int k = 0; k < 1000000 && (e->deferred.live || e->slot_ready()); ++k) sys_->step(1);
                }
                teardown(c, false);
                m.status = 0;
                reply(c, m, nullptr, 0);
                break;
            }
            case VELO_SIM_INFO: {
                size_t eps = 0;
                for (auto& v : node_eps_) eps += v.size();
                m.status = 0;
                m.arg[0] = static_cast<int64_t>(core_.size());
                m.arg[1] = info_->node_bits;
                m.arg[2] = info_->vpid_bits;
                m.arg[3] = info_->tlp_bits;
                m.arg[4] = info_->link_bits;
                m.arg[5] = static_cast<int64_t>(clients_.size());
                m.arg[6] = static_cast<int64_t>(eps);
                m.arg[7] = static_cast<int64_t>(sys_->cycle() & 0xFFFFFFFFu);
                m.arg[8] = static_cast<int64_t>(sys_->cycle() >> 32);
                m.arg[9] = static_cast<int64_t>(st_.stores);
                m.arg[10] = static_cast<int64_t>(st_.splits);
                m.arg[11] = static_cast<int64_t>(st_.bad_stores);
                std::snprintf(m.text, sizeof m.text, "%s", info_->topology);
                reply(c, m, nullptr, 0);
                break;
            }
            case VELO_SIM_IOCTL:
                req_ioctl(c, m);
                break;
            case VELO_SIM_SHUTDOWN:
                m.status = 0;
                reply(c, m, nullptr, 0);
                stop_ = true;
                break;
            default:
                m.status = -EINVAL;
                reply(c, m, nullptr, 0);
        }
        if (clients_.find(c->fd) == clients_.end()) return;
    }
}
}  // namespace velo::fabric

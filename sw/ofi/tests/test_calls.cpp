// The provider `velo` through libfabric's API (fi_getinfo .. fi_close), as a program sees it:
// error paths of every call the provider implements, and data through two endpoints of this
// process (two libvelo endpoints on the fabric velo-run started: ofi.calls). The provider is
// found through FI_PROVIDER_PATH.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define FI_VER FI_VERSION(1, 17)

fi_info* hints_rdm(uint64_t caps = FI_MSG | FI_TAGGED) {
    fi_info* h = fi_allocinfo();
    h->fabric_attr->prov_name = strdup("velo");
    h->ep_attr->type = FI_EP_RDM;
    h->caps = caps;
    return h;
}

int getinfo(fi_info* h, fi_info** out) {
    int rc = fi_getinfo(FI_VER, nullptr, nullptr, 0, h, out);
    fi_freeinfo(h);
    return rc;
}

TEST(getinfo, lists_rdm_with_msg_and_tagged) {
    fi_info* info = nullptr;
    ASSERT_EQ(getinfo(hints_rdm(), &info), 0);
    ASSERT_NE(info, nullptr);
    EXPECT_STREQ(info->fabric_attr->prov_name, "velo");
    EXPECT_STREQ(info->domain_attr->name, "velo0");
    EXPECT_EQ(info->ep_attr->type, FI_EP_RDM);
    EXPECT_EQ(info->caps & (FI_MSG | FI_TAGGED), uint64_t(FI_MSG | FI_TAGGED));
    EXPECT_EQ(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
    EXPECT_EQ(info->domain_attr->mr_mode, 0);
    EXPECT_EQ(info->tx_attr->inject_size, 47u);               // one store burst less the tagged header and data
    EXPECT_EQ(info->ep_attr->max_msg_size, size_t(1) << 30);  // rendezvous above 1 MiB less the header
    EXPECT_EQ(info->next, nullptr);
    fi_freeinfo(info);
}

TEST(getinfo, refuses_what_it_lacks) {
    fi_info* info = nullptr;
    fi_info* h = hints_rdm();
    h->ep_attr->type = FI_EP_MSG;
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    EXPECT_EQ(getinfo(hints_rdm(FI_MSG | FI_RMA), &info), -FI_ENODATA);
    EXPECT_EQ(getinfo(hints_rdm(FI_ATOMIC), &info), -FI_ENODATA);
    h = hints_rdm();
    h->ep_attr->max_msg_size = (size_t(1) << 30) + 1;
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    h = hints_rdm();
    h->domain_attr->data_progress = FI_PROGRESS_AUTO;
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    h = hints_rdm();
    h->tx_attr->inject_size = 48;
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    h = hints_rdm();
    h->addr_format = FI_SOCKADDR_IN;
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    h = hints_rdm();
    h->domain_attr->name = strdup("velo7");
    EXPECT_EQ(getinfo(h, &info), -FI_ENODATA);
    EXPECT_EQ(info, nullptr);
}

TEST(getinfo, node_string_is_an_address) {
    fi_info* h = hints_rdm();
    h->addr_format = FI_ADDR_STR;
    fi_info* info = nullptr;
    ASSERT_EQ(fi_getinfo(FI_VER, "fi_velo://1:5", nullptr, 0, h, &info), 0);
    ASSERT_NE(info->dest_addr, nullptr);
    EXPECT_STREQ(static_cast<const char*>(info->dest_addr), "fi_velo://1:5");
    fi_freeinfo(info);
    info = nullptr;
    EXPECT_EQ(fi_getinfo(FI_VER, "10.0.0.1", nullptr, 0, h, &info), -FI_ENODATA);
    EXPECT_EQ(fi_getinfo(FI_VER, "fi_velo://1:5x", nullptr, 0, h, &info), -FI_ENODATA);
    fi_freeinfo(h);
}

// Fabric, domain, AV, two endpoints (a, b) with a CQ each (tagged format).
struct Pair {
    fi_info* info = nullptr;
    fid_fabric* fabric = nullptr;
    fid_domain* domain = nullptr;
    fid_av* av = nullptr;
    fid_ep* ep[2] = {};
    fid_cq* cq[2] = {};
    fi_addr_t addr[2] = {};  // ep[i]'s address in the AV
    std::string name[2];

    explicit Pair(uint32_t addr_format = FI_FORMAT_UNSPEC, fi_av_type av_type = FI_AV_TABLE, uint64_t bind = 0,
                  fi_wait_obj wait = FI_WAIT_NONE) {
        fi_info* h = hints_rdm(FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE);
        h->addr_format = addr_format;
        EXPECT_EQ(fi_getinfo(FI_VER, nullptr, nullptr, 0, h, &info), 0);
        fi_freeinfo(h);
        EXPECT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
        EXPECT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
        fi_av_attr aa = {};
        aa.type = av_type;
        EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);
        for (int i = 0; i < 2; ++i) {
            fi_cq_attr ca = {};
            ca.format = FI_CQ_FORMAT_TAGGED;
            ca.size = 4;  // small: the queue must grow rather than drop
            ca.wait_obj = wait;
            EXPECT_EQ(fi_cq_open(domain, &ca, &cq[i], nullptr), 0);
            EXPECT_EQ(fi_endpoint(domain, info, &ep[i], nullptr), 0);
            EXPECT_EQ(fi_ep_bind(ep[i], &av->fid, 0), 0);
            EXPECT_EQ(fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV | bind), 0);
            EXPECT_EQ(fi_enable(ep[i]), 0);
            char buf[64] = {};
            size_t len = sizeof(buf);
            EXPECT_EQ(fi_getname(&ep[i]->fid, buf, &len), 0);
            name[i].assign(buf, len);
            EXPECT_EQ(fi_av_insert(av, buf, 1, &addr[i], 0, nullptr), 1);
        }
    }
    ~Pair() {
        for (int i = 0; i < 2; ++i) {
            if (ep[i]) {
                EXPECT_EQ(fi_close(&ep[i]->fid), 0);
            }
            if (cq[i]) {
                EXPECT_EQ(fi_close(&cq[i]->fid), 0);
            }
        }
        if (av) {
            EXPECT_EQ(fi_close(&av->fid), 0);
        }
        if (domain) {
            EXPECT_EQ(fi_close(&domain->fid), 0);
        }
        if (fabric) {
            EXPECT_EQ(fi_close(&fabric->fid), 0);
        }
        fi_freeinfo(info);
    }
    // progress both endpoints without taking completions
    void progress() {
        for (auto* c : cq) fi_cq_read(c, nullptr, 0);
    }
    // retry while the provider says -FI_EAGAIN (connection being made, no credit)
    template <class F>
    ssize_t retry(F f) {
        ssize_t rc;
        while ((rc = f()) == -FI_EAGAIN) progress();  // ofi.calls runs under velo-run --timeout
        return rc;
    }
    // the next completion of cq[i] (waits; -FI_EAVAIL returned as is)
    ssize_t next(int i, fi_cq_tagged_entry* e, fi_addr_t* src = nullptr) {
        for (;;) {  // ofi.calls runs under velo-run --timeout
            fi_addr_t s;
            ssize_t rc = fi_cq_readfrom(cq[i], e, 1, &s);
            if (rc != -FI_EAGAIN) {
                if (src) *src = s;
                return rc;
            }
            progress();
        }
    }
    // one completion of cq[i] that is an error: its entry
    // fi_trecvmsg with FI_PEEK | flags until the message is there (a send's completion does not
    // mean it arrived): its completion
    void peek(fi_msg_tagged* tm, uint64_t flags, fi_cq_tagged_entry* e) {
        for (;;) {
            ASSERT_EQ(fi_trecvmsg(ep[1], tm, FI_PEEK | flags), 0);
            ssize_t rc = next(1, e);
            if (rc == 1) return;
            ASSERT_EQ(rc, -FI_EAVAIL);
            fi_cq_err_entry err = {};
            ASSERT_EQ(fi_cq_readerr(cq[1], &err, 0), 1);
            ASSERT_EQ(err.err, FI_ENOMSG);
        }
    }
    fi_cq_err_entry next_err(int i) {
        fi_cq_tagged_entry e;
        fi_cq_err_entry err = {};
        EXPECT_EQ(next(i, &e), -FI_EAVAIL);
        EXPECT_EQ(fi_cq_readerr(cq[i], &err, 0), 1);
        return err;
    }
};

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 131 + i * 7 + (i >> 8));
    return v;
}

TEST(objects, error_paths) {
    fi_info* info = nullptr;
    ASSERT_EQ(getinfo(hints_rdm(), &info), 0);
    fid_fabric* fabric;
    fid_domain* domain;
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);  // a domain is open

    fid_cq* cq;
    fi_cq_attr ca = {};
    ca.format = static_cast<fi_cq_format>(99);
    EXPECT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), -FI_EINVAL);
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.wait_obj = FI_WAIT_FD;
    EXPECT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), -FI_ENOSYS);
    ca.wait_obj = FI_WAIT_NONE;
    ASSERT_EQ(fi_cq_open(domain, &ca, &cq, nullptr), 0);
    fi_cq_entry ce;
    EXPECT_EQ(fi_cq_read(cq, &ce, 1), -FI_EAGAIN);
    EXPECT_EQ(fi_cq_read(cq, nullptr, 1), -FI_EINVAL);
    EXPECT_EQ(fi_cq_sread(cq, &ce, 1, nullptr, 0), -FI_EINVAL);  // FI_WAIT_NONE
    fi_cq_err_entry ee = {};
    EXPECT_EQ(fi_cq_readerr(cq, &ee, 0), -FI_EAGAIN);
    EXPECT_EQ(fi_cq_readerr(cq, &ee, 1), -FI_EINVAL);

    fid_av* av;
    fi_av_attr aa = {};
    aa.type = static_cast<fi_av_type>(42);
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), -FI_EINVAL);
    aa.type = FI_AV_MAP;
    aa.name = "shared";
    EXPECT_EQ(fi_av_open(domain, &aa, &av, nullptr), -FI_ENOSYS);
    aa.name = nullptr;
    ASSERT_EQ(fi_av_open(domain, &aa, &av, nullptr), 0);

    fid_cntr* cntr;
    fi_cntr_attr cta = {};
    cta.wait_obj = FI_WAIT_FD;
    EXPECT_EQ(fi_cntr_open(domain, &cta, &cntr, nullptr), -FI_ENOSYS);
    cta.wait_obj = FI_WAIT_NONE;
    cta.flags = 1;
    EXPECT_EQ(fi_cntr_open(domain, &cta, &cntr, nullptr), -FI_EINVAL);
    cta.flags = 0;
    ASSERT_EQ(fi_cntr_open(domain, &cta, &cntr, nullptr), 0);
    EXPECT_EQ(fi_cntr_wait(cntr, 1, 0), -FI_EINVAL);  // FI_WAIT_NONE
    fid_mr* mr;
    char buf[64];
    EXPECT_EQ(fi_mr_reg(domain, buf, sizeof(buf), FI_SEND, 0, 0, 0, &mr, nullptr), -FI_ENOSYS);

    fid_ep* ep;
    ASSERT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
    EXPECT_EQ(fi_enable(ep), -FI_ENOAV);
    EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep, &av->fid, 0), -FI_EINVAL);  // one AV
    EXPECT_EQ(fi_enable(ep), -FI_ENOCQ);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, 0), -FI_EINVAL);  // neither direction
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | FI_READ), -FI_EINVAL);
    EXPECT_EQ(fi_send(ep, buf, 8, nullptr, 0, nullptr), -FI_EOPBADSTATE);  // not enabled
    EXPECT_EQ(fi_recv(ep, buf, 8, nullptr, 0, nullptr), -FI_EOPBADSTATE);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_RECV), -FI_EINVAL);     // already has one
    EXPECT_EQ(fi_ep_bind(ep, &cntr->fid, FI_WRITE), -FI_EINVAL);  // no RMA
    EXPECT_EQ(fi_ep_bind(ep, &cntr->fid, FI_SEND), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cntr->fid, FI_SEND), -FI_EINVAL);  // already has one
    EXPECT_EQ(fi_enable(ep), 0);
    EXPECT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), -FI_EOPBADSTATE);  // after enable
    EXPECT_EQ(fi_connect(ep, buf, nullptr, 0), -FI_ENOSYS);
    EXPECT_EQ(fi_send(ep, buf, 8, nullptr, 12345, nullptr), -FI_EINVAL);  // not in the AV
    size_t len = 2;
    EXPECT_EQ(fi_getname(&ep->fid, buf, &len), -FI_ETOOSMALL);
    EXPECT_EQ(len, 8u);
    EXPECT_EQ(fi_getname(&ep->fid, nullptr, nullptr), -FI_EINVAL);
    uint64_t flags = FI_TRANSMIT | FI_RECV;
    EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), -FI_EINVAL);
    flags = FI_TRANSMIT | FI_COMPLETION;
    EXPECT_EQ(fi_control(&ep->fid, FI_SETOPSFLAG, &flags), 0);
    flags = FI_TRANSMIT;
    EXPECT_EQ(fi_control(&ep->fid, FI_GETOPSFLAG, &flags), 0);
    EXPECT_EQ(flags, uint64_t(FI_TRANSMIT | FI_COMPLETION));
    EXPECT_EQ(fi_cancel(&ep->fid, buf), -FI_ENOENT);
    EXPECT_EQ(fi_cancel(&ep->fid, nullptr), -FI_EINVAL);

    EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);  // bound to ep
    EXPECT_EQ(fi_close(&cntr->fid), -FI_EBUSY);
    EXPECT_EQ(fi_close(&av->fid), -FI_EBUSY);
    EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY);
    EXPECT_EQ(fi_close(&ep->fid), 0);
    EXPECT_EQ(fi_close(&cntr->fid), 0);
    EXPECT_EQ(fi_close(&cq->fid), 0);
    EXPECT_EQ(fi_close(&av->fid), 0);
    EXPECT_EQ(fi_close(&domain->fid), 0);
    EXPECT_EQ(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
}

TEST(eq, write_read_and_errors) {
    fi_info* info = nullptr;
    ASSERT_EQ(getinfo(hints_rdm(), &info), 0);
    fid_fabric* fabric;
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    fid_eq* eq;
    fi_eq_attr ea = {};
    ea.wait_obj = FI_WAIT_FD;
    EXPECT_EQ(fi_eq_open(fabric, &ea, &eq, nullptr), -FI_ENOSYS);
    ea.wait_obj = FI_WAIT_UNSPEC;
    ea.size = 2;
    ASSERT_EQ(fi_eq_open(fabric, &ea, &eq, nullptr), 0);
    uint32_t ev = 0;
    uint64_t data[4] = {1, 2, 3, 4}, got[4] = {};
    EXPECT_EQ(fi_eq_read(eq, &ev, got, sizeof(got), 0), -FI_EAGAIN);
    EXPECT_EQ(fi_eq_sread(eq, &ev, got, sizeof(got), 0, 0), -FI_EAGAIN);
    EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, data, sizeof(data), 0), ssize_t(sizeof(data)));
    EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, data, 8, 0), 8);
    EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, data, 8, 0), -FI_EAGAIN);  // size 2
    EXPECT_EQ(fi_eq_read(eq, &ev, got, 8, 0), -FI_ETOOSMALL);
    EXPECT_EQ(fi_eq_read(eq, &ev, got, sizeof(got), FI_PEEK), ssize_t(sizeof(data)));
    EXPECT_EQ(fi_eq_sread(eq, &ev, got, sizeof(got), -1, 0), ssize_t(sizeof(data)));
    EXPECT_EQ(ev, uint32_t(FI_NOTIFY));
    EXPECT_EQ(std::memcmp(got, data, sizeof(data)), 0);
    EXPECT_EQ(fi_eq_read(eq, &ev, got, sizeof(got), 0), 8);
    fi_eq_err_entry ee;
    EXPECT_EQ(fi_eq_readerr(eq, &ee, 0), -FI_EAGAIN);
    EXPECT_EQ(fi_close(&eq->fid), 0);
    EXPECT_EQ(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
}

TEST(av, table_map_lookup_remove_straddr) {
    for (fi_av_type t : {FI_AV_TABLE, FI_AV_MAP}) {
        Pair p(FI_FORMAT_UNSPEC, t);
        uint32_t a0[2], a1[2];
        std::memcpy(a0, p.name[0].data(), 8);
        std::memcpy(a1, p.name[1].data(), 8);
        EXPECT_EQ(a0[0], a1[0]);  // both on this process's node
        EXPECT_NE(a0[1], a1[1]);
        if (t == FI_AV_TABLE) {
            EXPECT_EQ(p.addr[0], 0u);
            EXPECT_EQ(p.addr[1], 1u);
        } else {
            EXPECT_EQ(p.addr[1], (uint64_t(a1[0]) << 32) | a1[1]);
        }
        char buf[16] = {};
        size_t len = sizeof(buf);
        EXPECT_EQ(fi_av_lookup(p.av, p.addr[1], buf, &len), 0);
        EXPECT_EQ(len, 8u);
        EXPECT_EQ(std::memcmp(buf, a1, 8), 0);
        char s[64];
        len = sizeof(s);
        ASSERT_NE(fi_av_straddr(p.av, a1, s, &len), nullptr);
        EXPECT_EQ(std::string(s), "fi_velo://" + std::to_string(a1[0]) + ":" + std::to_string(a1[1]));
        uint32_t bad[2] = {0x10000, 1};  // node beyond 16 bits
        fi_addr_t fa = 0;
        EXPECT_EQ(fi_av_insert(p.av, bad, 1, &fa, 0, nullptr), 0);
        EXPECT_EQ(fa, FI_ADDR_NOTAVAIL);
        EXPECT_EQ(fi_av_insert(p.av, a1, 1, &fa, FI_MORE, nullptr), -FI_EINVAL);
        EXPECT_EQ(fi_av_insertsvc(p.av, "x", "y", &fa, 0, nullptr), -FI_ENOSYS);
        EXPECT_EQ(fi_av_lookup(p.av, 77, buf, &len), -FI_EINVAL);
        fi_addr_t gone = p.addr[1];
        EXPECT_EQ(fi_av_remove(p.av, &gone, 1, 0), 0);
        EXPECT_EQ(fi_av_remove(p.av, &gone, 1, 0), -FI_EINVAL);
        len = sizeof(buf);
        EXPECT_EQ(fi_av_lookup(p.av, gone, buf, &len), -FI_EINVAL);
        EXPECT_EQ(fi_send(p.ep[0], buf, 4, nullptr, gone, nullptr), -FI_EINVAL);
    }
}

TEST(msg, sizes_byte_exact_with_completions) {
    Pair p;
    const size_t sizes[] = {0, 1, 47, 48, 63, 64, 1000, 4096, 100000, 1048559};
    unsigned seed = 1;
    for (size_t n : sizes) {
        SCOPED_TRACE(n);
        auto tx = pattern(n, seed++);
        std::vector<uint8_t> rx(n + 16, 0xEE);
        int rctx = 0, sctx = 0;
        ASSERT_EQ(fi_recv(p.ep[1], rx.data(), rx.size(), nullptr, FI_ADDR_UNSPEC, &rctx), 0);
        ASSERT_EQ(p.retry([&] { return fi_send(p.ep[0], tx.data(), n, nullptr, p.addr[1], &sctx); }), 0);
        fi_cq_tagged_entry e;
        ASSERT_EQ(p.next(0, &e), 1);
        EXPECT_EQ(e.op_context, &sctx);
        EXPECT_EQ(e.flags, uint64_t(FI_SEND | FI_MSG));
        fi_addr_t src = 0;
        ASSERT_EQ(p.next(1, &e, &src), 1);
        EXPECT_EQ(e.op_context, &rctx);
        EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_MSG));
        EXPECT_EQ(e.len, n);
        EXPECT_EQ(src, p.addr[0]);  // FI_SOURCE
        EXPECT_TRUE(std::equal(tx.begin(), tx.end(), rx.begin()));
        EXPECT_EQ(rx[n], 0xEE);  // nothing beyond the message
    }
    std::vector<uint8_t> big(64);
    // above max_msg_size (1 GiB): refused before the buffer is touched
    EXPECT_EQ(fi_send(p.ep[0], big.data(), (size_t(1) << 30) + 1, nullptr, p.addr[1], nullptr), -FI_EMSGSIZE);
    EXPECT_EQ(fi_inject(p.ep[0], big.data(), 48, p.addr[1]), -FI_EMSGSIZE);
}

TEST(msg, iov_inject_data_truncation) {
    Pair p;
    auto tx = pattern(300, 9);
    iovec siov[3] = {{tx.data(), 100}, {tx.data() + 100, 0}, {tx.data() + 100, 200}};
    std::vector<uint8_t> r1(50), r2(250);
    iovec riov[2] = {{r1.data(), r1.size()}, {r2.data(), r2.size()}};
    int rctx;
    ASSERT_EQ(fi_recvv(p.ep[1], riov, nullptr, 2, FI_ADDR_UNSPEC, &rctx), 0);
    ASSERT_EQ(p.retry([&] { return fi_sendv(p.ep[0], siov, nullptr, 3, p.addr[1], nullptr); }), 0);
    fi_cq_tagged_entry e;
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(e.len, 300u);
    EXPECT_EQ(std::memcmp(r1.data(), tx.data(), 50), 0);
    EXPECT_EQ(std::memcmp(r2.data(), tx.data() + 50, 250), 0);
    ASSERT_EQ(p.next(0, &e), 1);

    // inject: no completion; remote CQ data
    ASSERT_EQ(fi_recv(p.ep[1], r2.data(), r2.size(), nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    ASSERT_EQ(p.retry([&] { return fi_injectdata(p.ep[0], tx.data(), 30, 0xABCDEF0123456789ull, p.addr[1]); }), 0);
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA));
    EXPECT_EQ(e.data, 0xABCDEF0123456789ull);
    EXPECT_EQ(e.len, 30u);
    EXPECT_EQ(fi_cq_read(p.cq[0], &e, 1), -FI_EAGAIN);  // the inject completes silently

    // truncation: an error entry with the overflow
    std::vector<uint8_t> small(10);
    ASSERT_EQ(fi_recv(p.ep[1], small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, &rctx), 0);
    ASSERT_EQ(p.retry([&] { return fi_send(p.ep[0], tx.data(), 25, nullptr, p.addr[1], nullptr); }), 0);
    fi_cq_err_entry err = p.next_err(1);
    EXPECT_EQ(err.err, FI_ETRUNC);
    EXPECT_EQ(err.len, 10u);
    EXPECT_EQ(err.olen, 15u);
    EXPECT_EQ(err.op_context, &rctx);
    EXPECT_EQ(std::memcmp(small.data(), tx.data(), 10), 0);
    ASSERT_EQ(p.next(0, &e), 1);

    // argument errors
    iovec many[9] = {};
    EXPECT_EQ(fi_sendv(p.ep[0], many, nullptr, 9, p.addr[1], nullptr), -FI_EINVAL);
    iovec nullbase = {nullptr, 5};
    EXPECT_EQ(fi_recvv(p.ep[1], &nullbase, nullptr, 1, FI_ADDR_UNSPEC, nullptr), -FI_EINVAL);
    EXPECT_EQ(fi_sendmsg(p.ep[0], nullptr, 0), -FI_EINVAL);
    fi_msg m = {};
    m.addr = p.addr[1];
    EXPECT_EQ(fi_sendmsg(p.ep[0], &m, FI_MULTICAST), -FI_EBADFLAGS);
}

// Messages above the eager limit (a VELO train, about 1.7 KiB, by default; 1 MiB less the header
// with FI_VELO_RECV_AREA as in ofi.calls_area; lower with FI_VELO_RDV_THRESHOLD as in
// ofi.calls_asan) go by rendezvous: the send completes only when the receiver has taken the data.
TEST(rdv, completion_after_the_get_truncation_discard_iov) {
    Pair p;
    const size_t n = 3u << 19;  // 1.5 MiB: above the eager limit
    auto tx = pattern(n, 5);
    int sctx;
    ASSERT_EQ(p.retry([&] { return fi_tsend(p.ep[0], tx.data(), n, nullptr, p.addr[1], 0x77, &sctx); }), 0);
    fi_cq_tagged_entry e;
    for (int k = 0; k < 50; ++k) p.progress();
    EXPECT_EQ(fi_cq_read(p.cq[0], &e, 1), -FI_EAGAIN);  // no receive yet: the send is not complete
    // the receive takes it in two iovecs
    std::vector<uint8_t> r1(n / 3), r2(n);
    iovec riov[2] = {{r1.data(), r1.size()}, {r2.data(), r2.size()}};
    int rctx;
    ASSERT_EQ(fi_trecvv(p.ep[1], riov, nullptr, 2, FI_ADDR_UNSPEC, 0x77, 0, &rctx), 0);
    fi_addr_t src;
    ASSERT_EQ(p.next(1, &e, &src), 1);
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.len, n);
    EXPECT_EQ(e.tag, 0x77u);
    EXPECT_EQ(src, p.addr[0]);
    EXPECT_EQ(std::memcmp(r1.data(), tx.data(), r1.size()), 0);
    EXPECT_EQ(std::memcmp(r2.data(), tx.data() + r1.size(), n - r1.size()), 0);
    ASSERT_EQ(p.next(0, &e), 1);
    EXPECT_EQ(e.op_context, &sctx);
    EXPECT_EQ(e.flags, uint64_t(FI_SEND | FI_TAGGED));

    // truncation: the receive buffer gets what fits, the error entry says how much was cut
    std::vector<uint8_t> small(n / 2);
    ASSERT_EQ(fi_trecv(p.ep[1], small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, 0x78, 0, &rctx), 0);
    ASSERT_EQ(p.retry([&] { return fi_tsenddata(p.ep[0], tx.data(), n, nullptr, 42, p.addr[1], 0x78, &sctx); }), 0);
    fi_cq_err_entry err = p.next_err(1);
    EXPECT_EQ(err.err, FI_ETRUNC);
    EXPECT_EQ(err.olen, n - small.size());
    EXPECT_EQ(err.data, 42u);
    EXPECT_EQ(std::memcmp(small.data(), tx.data(), small.size()), 0);
    ASSERT_EQ(p.next(0, &e), 1);  // the sender completes normally

    // peek + discard of a rendezvous message: the sender completes, nothing is transferred
    ASSERT_EQ(p.retry([&] { return fi_tsend(p.ep[0], tx.data(), n, nullptr, p.addr[1], 0x79, &sctx); }), 0);
    uint64_t dummy = 0;
    iovec div = {&dummy, 8};
    fi_msg_tagged tm = {};
    tm.msg_iov = &div;
    tm.iov_count = 1;
    tm.addr = FI_ADDR_UNSPEC;
    tm.tag = 0x79;
    tm.context = &rctx;
    p.peek(&tm, FI_DISCARD, &e);
    EXPECT_EQ(e.len, n);  // the message's length, from the RTS
    ASSERT_EQ(p.next(0, &e), 1);
    EXPECT_EQ(e.op_context, &sctx);
    EXPECT_EQ(dummy, 0u);

    // a rendezvous send takes one iovec with data
    iovec two[2] = {{tx.data(), n / 2}, {tx.data() + n / 2, n / 2}};
    EXPECT_EQ(fi_sendv(p.ep[0], two, nullptr, 2, p.addr[1], nullptr), -FI_EMSGSIZE);
}

TEST(tagged, order_ignore_directed_source) {
    Pair p;
    uint64_t v;
    auto send = [&](int from, uint64_t tag, uint64_t val) {
        ASSERT_EQ(p.retry([&] { return fi_tinject(p.ep[from], &val, 8, p.addr[1], tag); }), 0);
    };
    // three messages, two with the same tag: unexpected, taken in arrival order
    send(0, 0x10, 1);
    send(0, 0x20, 2);
    send(0, 0x10, 3);
    fi_cq_tagged_entry e;
    uint64_t got[3] = {};
    for (int k = 0; k < 2; ++k) {
        int ctx;
        ASSERT_EQ(fi_trecv(p.ep[1], &got[k], 8, nullptr, FI_ADDR_UNSPEC, 0x10, 0, &ctx), 0);
        ASSERT_EQ(p.next(1, &e), 1);
        EXPECT_EQ(e.tag, 0x10u);
        EXPECT_EQ(e.flags, uint64_t(FI_RECV | FI_TAGGED));
    }
    EXPECT_EQ(got[0], 1u);
    EXPECT_EQ(got[1], 3u);
    // ignore bits: 0x2? takes 0x20
    ASSERT_EQ(fi_trecv(p.ep[1], &v, 8, nullptr, FI_ADDR_UNSPEC, 0x2F, 0x0F, nullptr), 0);
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(e.tag, 0x20u);
    EXPECT_EQ(v, 2u);
    // directed: a receive for ep 1 itself (its own address) does not take ep 0's message
    uint64_t d1 = 0, d2 = 0;
    int c1, c2;
    ASSERT_EQ(fi_trecv(p.ep[1], &d1, 8, nullptr, p.addr[1], 0x30, 0, &c1), 0);
    ASSERT_EQ(fi_trecv(p.ep[1], &d2, 8, nullptr, p.addr[0], 0x30, 0, &c2), 0);
    send(0, 0x30, 77);
    fi_addr_t src;
    ASSERT_EQ(p.next(1, &e, &src), 1);
    EXPECT_EQ(e.op_context, &c2);
    EXPECT_EQ(d2, 77u);
    EXPECT_EQ(d1, 0u);
    EXPECT_EQ(src, p.addr[0]);
    // the directed receive still waits: cancel it
    ASSERT_EQ(fi_cancel(&p.ep[1]->fid, &c1), 0);
    fi_cq_err_entry err = p.next_err(1);
    EXPECT_EQ(err.err, FI_ECANCELED);
    EXPECT_EQ(err.op_context, &c1);
    EXPECT_EQ(fi_cancel(&p.ep[1]->fid, &c1), -FI_ENOENT);
}

TEST(tagged, peek_claim_discard) {
    Pair p;
    fi_cq_tagged_entry e;
    fi_context pctx, cctx;
    uint64_t buf = 0;
    // peek on nothing: FI_ENOMSG
    fi_msg_tagged tm = {};
    iovec iov = {&buf, 8};
    tm.msg_iov = &iov;
    tm.iov_count = 1;
    tm.addr = FI_ADDR_UNSPEC;
    tm.tag = 0x5;
    tm.context = &pctx;
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_PEEK), 0);
    fi_cq_err_entry err = p.next_err(1);
    EXPECT_EQ(err.err, FI_ENOMSG);
    // two messages of tag 5 with CQ data
    for (uint64_t val : {11u, 12u}) {
        ASSERT_EQ(p.retry([&] { return fi_tsenddata(p.ep[0], &val, 8, nullptr, val * 100, p.addr[1], 0x5, nullptr); }),
                  0);
        ASSERT_EQ(p.next(0, &e), 1);
    }
    // peek sees the first, with its length and data, and leaves it
    p.peek(&tm, 0, &e);
    EXPECT_EQ(e.len, 8u);
    EXPECT_EQ(e.data, 1100u);
    EXPECT_EQ(buf, 0u);  // no data moved
    // peek + claim the first
    tm.context = &cctx;
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_PEEK | FI_CLAIM), 0);  // there since the peek above
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(e.data, 1100u);
    // an ordinary receive now gets the second (the first is claimed)
    ASSERT_EQ(fi_trecv(p.ep[1], &buf, 8, nullptr, FI_ADDR_UNSPEC, 0x5, 0, nullptr), 0);
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(buf, 12u);
    // claim with another context: refused; with the claim's context: the first
    tm.context = &pctx;
    EXPECT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_CLAIM), -FI_EINVAL);
    tm.context = &cctx;
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_CLAIM), 0);
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(buf, 11u);
    EXPECT_EQ(e.op_context, &cctx);
    // peek + discard drops a message
    uint64_t val = 13;
    ASSERT_EQ(p.retry([&] { return fi_tinject(p.ep[0], &val, 8, p.addr[1], 0x5); }), 0);
    tm.context = &pctx;
    p.peek(&tm, FI_DISCARD, &e);
    EXPECT_EQ(e.len, 8u);
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_PEEK), 0);
    err = p.next_err(1);
    EXPECT_EQ(err.err, FI_ENOMSG);
    // claim, then discard the claimed message
    val = 14;
    ASSERT_EQ(p.retry([&] { return fi_tinject(p.ep[0], &val, 8, p.addr[1], 0x5); }), 0);
    tm.context = &cctx;
    p.peek(&tm, FI_CLAIM, &e);
    EXPECT_EQ(e.len, 8u);
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_CLAIM | FI_DISCARD), 0);
    ASSERT_EQ(p.next(1, &e), 1);
    EXPECT_EQ(e.op_context, &cctx);
    EXPECT_EQ(e.len, 0u);
    EXPECT_EQ(buf, 11u);                                         // untouched
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_CLAIM), -FI_EINVAL);  // gone
    // flags that do not go together
    EXPECT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_DISCARD), -FI_EINVAL);
    tm.context = nullptr;
    EXPECT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_PEEK | FI_CLAIM), -FI_EINVAL);
    fi_msg m = {};
    m.msg_iov = &iov;
    m.iov_count = 1;
    EXPECT_EQ(fi_recvmsg(p.ep[1], &m, FI_PEEK), -FI_EBADFLAGS);  // untagged: no peek
}

TEST(cq, formats_and_selective_completion) {
    Pair p(FI_ADDR_STR, FI_AV_MAP, FI_SELECTIVE_COMPLETION);
    EXPECT_EQ(p.name[0].rfind("fi_velo://", 0), 0u);
    uint64_t v = 5, r = 0;
    int sctx;
    ASSERT_EQ(fi_trecv(p.ep[1], &r, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
    ASSERT_EQ(p.retry([&] { return fi_tsend(p.ep[0], &v, 8, nullptr, p.addr[1], 1, &sctx); }), 0);
    fi_cq_tagged_entry e;
    // neither side asked for a completion of that one (FI_SELECTIVE_COMPLETION without
    // FI_COMPLETION); the next message and receive do (fi_t*msg with FI_COMPLETION)
    uint64_t v2 = 6, r2 = 0;
    int rctx;
    iovec siov = {&v2, 8}, riov = {&r2, 8};
    fi_msg_tagged tm = {};
    tm.msg_iov = &riov;
    tm.iov_count = 1;
    tm.addr = FI_ADDR_UNSPEC;
    tm.tag = 2;
    tm.context = &rctx;
    ASSERT_EQ(fi_trecvmsg(p.ep[1], &tm, FI_COMPLETION), 0);
    tm.msg_iov = &siov;
    tm.addr = p.addr[1];
    tm.context = &sctx;
    ASSERT_EQ(p.retry([&] { return fi_tsendmsg(p.ep[0], &tm, FI_COMPLETION); }), 0);
    ASSERT_EQ(p.next(0, &e), 1);
    EXPECT_EQ(e.op_context, &sctx);
    EXPECT_EQ(e.flags, uint64_t(FI_SEND | FI_TAGGED));
    ASSERT_EQ(p.next(1, &e), 1);  // the second message's: the first (sent before it) came silently
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.tag, 2u);
    EXPECT_EQ(r, 5u);
    EXPECT_EQ(r2, 6u);
    EXPECT_EQ(fi_cq_read(p.cq[0], &e, 1), -FI_EAGAIN);
    EXPECT_EQ(fi_cq_read(p.cq[1], &e, 1), -FI_EAGAIN);
}

TEST(cq, sread_sleeps_until_a_completion) {
    Pair p(FI_FORMAT_UNSPEC, FI_AV_TABLE, 0, FI_WAIT_UNSPEC);
    fi_cq_tagged_entry e;
    EXPECT_EQ(fi_cq_sread(p.cq[1], &e, 1, nullptr, 0), -FI_EAGAIN);  // nothing, no wait
    EXPECT_EQ(fi_cq_sread(p.cq[1], &e, 1, nullptr, 20), -FI_EAGAIN);
    EXPECT_EQ(fi_cq_sread(p.cq[1], &e, 1, nullptr, -2), -FI_EINVAL);
    EXPECT_EQ(fi_cq_sread(p.cq[1], nullptr, 1, nullptr, 0), -FI_EINVAL);
    auto tx = pattern(3000, 4);
    std::vector<uint8_t> rx(3000);
    int rctx;
    ASSERT_EQ(fi_trecv(p.ep[1], rx.data(), rx.size(), nullptr, FI_ADDR_UNSPEC, 9, 0, &rctx), 0);
    ASSERT_EQ(p.retry([&] { return fi_tsend(p.ep[0], tx.data(), tx.size(), nullptr, p.addr[1], 9, nullptr); }), 0);
    fi_addr_t src = 0;
    ASSERT_EQ(fi_cq_sreadfrom(p.cq[1], &e, 1, &src, nullptr, -1), 1);  // sleeps in velo_idle until it is there
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.len, 3000u);
    EXPECT_EQ(src, p.addr[0]);
    EXPECT_EQ(rx, tx);
    // the send's completion (a rendezvous send's needs the receiver's progress too: p.next)
    ASSERT_EQ(p.next(0, &e), 1);
    EXPECT_EQ(e.flags, uint64_t(FI_SEND | FI_TAGGED));
}

TEST(cntr, counts_completions_and_errors) {
    Pair p;
    fid_cntr *sc, *rc;
    fi_cntr_attr ca = {};
    ca.events = FI_CNTR_EVENTS_COMP;
    ca.wait_obj = FI_WAIT_UNSPEC;
    ASSERT_EQ(fi_cntr_open(p.domain, &ca, &sc, nullptr), 0);
    ASSERT_EQ(fi_cntr_open(p.domain, &ca, &rc, nullptr), 0);
    // bound after enable is refused: counters go on a fresh pair of endpoints
    EXPECT_EQ(fi_ep_bind(p.ep[0], &sc->fid, FI_SEND), -FI_EOPBADSTATE);
    fid_ep *a, *b;
    fid_cq *qa, *qb;
    fi_cq_attr qattr = {};
    qattr.format = FI_CQ_FORMAT_TAGGED;
    ASSERT_EQ(fi_cq_open(p.domain, &qattr, &qa, nullptr), 0);
    ASSERT_EQ(fi_cq_open(p.domain, &qattr, &qb, nullptr), 0);
    ASSERT_EQ(fi_endpoint(p.domain, p.info, &a, nullptr), 0);
    ASSERT_EQ(fi_endpoint(p.domain, p.info, &b, nullptr), 0);
    for (auto [ep, cq] : {std::pair{a, qa}, std::pair{b, qb}}) {
        ASSERT_EQ(fi_ep_bind(ep, &p.av->fid, 0), 0);
        ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    }
    ASSERT_EQ(fi_ep_bind(a, &sc->fid, FI_SEND), 0);
    ASSERT_EQ(fi_ep_bind(b, &rc->fid, FI_RECV), 0);
    ASSERT_EQ(fi_enable(a), 0);
    ASSERT_EQ(fi_enable(b), 0);
    char name[16];
    size_t len = sizeof(name);
    ASSERT_EQ(fi_getname(&b->fid, name, &len), 0);
    fi_addr_t to_b;
    ASSERT_EQ(fi_av_insert(p.av, name, 1, &to_b, 0, nullptr), 1);
    // 5 sends (2 injects) and 5 receives, one of them truncated (an error)
    uint64_t v = 1, r[5] = {};
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(fi_trecv(b, &r[i], i == 4 ? 4 : 8, nullptr, FI_ADDR_UNSPEC, 3, 0, nullptr), 0);
    for (int i = 0; i < 5; ++i) {
        ssize_t s;
        while ((s = i < 2 ? fi_tinject(a, &v, 8, to_b, 3) : fi_tsend(a, &v, 8, nullptr, to_b, 3, nullptr)) ==
               -FI_EAGAIN) {
            fi_cntr_read(sc);
            fi_cntr_read(rc);
        }
        ASSERT_EQ(s, 0);
    }
    EXPECT_EQ(fi_cntr_read(sc), 5u);  // injects count too
    EXPECT_EQ(fi_cntr_readerr(sc), 0u);
    EXPECT_EQ(fi_cntr_wait(rc, 4, -1), 0);  // progresses b until 4 receives completed
    while (fi_cntr_readerr(rc) == 0) {
    }
    EXPECT_EQ(fi_cntr_read(rc), 4u);
    EXPECT_EQ(fi_cntr_readerr(rc), 1u);                // the truncated one
    EXPECT_EQ(fi_cntr_wait(rc, 5, 0), -FI_ETIMEDOUT);  // 4 of 5, no new error
    EXPECT_EQ(fi_cntr_add(rc, 10), 0);
    EXPECT_EQ(fi_cntr_read(rc), 14u);
    EXPECT_EQ(fi_cntr_set(rc, 2), 0);
    EXPECT_EQ(fi_cntr_seterr(rc, 0), 0);
    EXPECT_EQ(fi_cntr_read(rc), 2u);
    EXPECT_EQ(fi_cntr_readerr(rc), 0u);
    EXPECT_EQ(fi_cntr_wait(rc, 3, 20), -FI_ETIMEDOUT);
    EXPECT_EQ(fi_close(&sc->fid), -FI_EBUSY);
    for (fid_ep* ep : {a, b}) EXPECT_EQ(fi_close(&ep->fid), 0);
    for (fid_cq* cq : {qa, qb}) EXPECT_EQ(fi_close(&cq->fid), 0);
    EXPECT_EQ(fi_close(&sc->fid), 0);
    EXPECT_EQ(fi_close(&rc->fid), 0);
}

TEST(cq, context_format_and_growth) {
    Pair p;
    // 20 sends on a CQ of size 4: none lost, in order
    int ctx[20];
    uint8_t b = 1;
    for (int& c : ctx) ASSERT_EQ(p.retry([&] { return fi_send(p.ep[0], &b, 1, nullptr, p.addr[1], &c); }), 0);
    fi_cq_tagged_entry e[32];
    ssize_t n = fi_cq_read(p.cq[0], e, 32);
    ASSERT_EQ(n, 20);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(e[i].op_context, &ctx[i]);
    // the receiver takes them all (unexpected, then posted)
    uint8_t rb[20];
    for (int i = 0; i < 20; ++i) ASSERT_EQ(fi_recv(p.ep[1], &rb[i], 1, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    int got = 0;
    for (int k = 0; k < 100000 && got < 20; ++k) {
        ssize_t r = fi_cq_read(p.cq[1], e, 32);
        if (r > 0) got += int(r);
    }
    EXPECT_EQ(got, 20);
}

TEST(threads, two_senders_one_endpoint) {
    Pair p;
    const int per = 200;
    std::vector<uint32_t> seen;
    std::thread t[2];
    for (int k = 0; k < 2; ++k)
        t[k] = std::thread([&, k] {
            for (uint32_t i = 0; i < per; ++i) {
                uint32_t v = (uint32_t(k) << 16) | i;
                ssize_t rc;
                while ((rc = fi_tinject(p.ep[0], &v, 4, p.addr[1], 7)) == -FI_EAGAIN) fi_cq_read(p.cq[0], nullptr, 0);
                ASSERT_EQ(rc, 0);
            }
        });
    uint32_t buf;
    fi_cq_tagged_entry e;
    for (int n = 0; n < 2 * per; ++n) {
        ASSERT_EQ(fi_trecv(p.ep[1], &buf, 4, nullptr, FI_ADDR_UNSPEC, 7, 0, nullptr), 0);
        ASSERT_EQ(p.next(1, &e), 1);
        seen.push_back(buf);
    }
    for (auto& th : t) th.join();
    uint32_t next[2] = {0, 0};  // each thread's messages in its order
    for (uint32_t v : seen) {
        uint32_t k = v >> 16;
        ASSERT_LT(k, 2u);
        EXPECT_EQ(v & 0xFFFF, next[k]);
        next[k]++;
    }
    EXPECT_EQ(next[0], uint32_t(per));
    EXPECT_EQ(next[1], uint32_t(per));
}

}  // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

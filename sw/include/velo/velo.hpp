// SPDX-License-Identifier: MIT
// libvelo's C++17 layer: RAII handles over velo.h, byte-span and string_view overloads, errors
// as exceptions (velo::Error, a std::system_error with velo_strerror's text). Exceptions are
// thrown only for real errors; "nothing yet" (-EAGAIN, timeouts) is a false return value.
//
//   velo::Endpoint ep;                        // velo_open(NULL): VELO_DEVICE or automatic
//   velo::Connection c = ep.connect({1, 5});  // node 1, vpid 5
//   velo::Message m;
//   while (!c.send("hello")) ep.poll(m);      // false: no credit yet, keep receiving
//   if (ep.wait(m, std::chrono::seconds(1))) std::cout << m.str() << "\n";
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

#include "velo.h"

namespace velo {

class Error : public std::system_error {
  public:
    explicit Error(int err, const std::string& what)
        : std::system_error(err < 0 ? -err : err, std::generic_category(), what + ": " + velo_strerror(err)) {}
};

namespace detail {
inline int check(int r, const char* what) {
    if (r < 0) throw Error(r, what);
    return r;
}
}  // namespace detail

using Addr = velo_addr_t;

// A received message, short or long (a long one's bytes are valid until the endpoint's next
// receive call: docs/api.md "Messages longer than 64 bytes").
struct Message {
    velo_msg_t m{};
    const uint8_t* data() const { return static_cast<const uint8_t*>(velo_msg_bytes(&m)); }
    std::size_t size() const { return velo_msg_size(&m); }
    std::string_view view() const { return {reinterpret_cast<const char*>(data()), size()}; }
    std::string str() const { return std::string(view()); }
    Addr source() const { return Addr{m.src_node, m.src_vpid}; }
#if __cplusplus >= 202002L && __has_include(<span>)
    std::span<const uint8_t> bytes() const {
        return {data(), size()};
    }
#endif
};

class Endpoint;

// Protection scope of a registration (velo_scope_t): who may reach it remotely.
using Scope = velo_scope_t;
using ScopeBox = velo_scope_box_t;
inline Scope scope_of_kind(unsigned kind) {
    Scope s{};
    s.kind = kind;
    return s;
}
inline Scope scope_job() {
    return scope_of_kind(VELO_SCOPE_JOB);
}
inline Scope scope_owner() {
    return scope_of_kind(VELO_SCOPE_OWNER);
}
inline Scope scope_peer(Addr peer) {
    Scope s = scope_of_kind(VELO_SCOPE_PEER);
    s.node_lo = static_cast<uint8_t>(peer.node);
    s.vpid_lo = static_cast<uint8_t>(peer.vpid);
    return s;
}
inline Scope scope_box(unsigned node_lo, unsigned node_hi, unsigned vpid_lo, unsigned vpid_hi) {
    Scope s = scope_of_kind(VELO_SCOPE_BOX);
    s.node_lo = static_cast<uint8_t>(node_lo);
    s.node_hi = static_cast<uint8_t>(node_hi);
    s.vpid_lo = static_cast<uint8_t>(vpid_lo);
    s.vpid_hi = static_cast<uint8_t>(vpid_hi);
    return s;
}
// A list of peers (VELO_SCOPE_LIST, one box each; the driver merges neighbours): more than
// VELO_SCOPE_MAX_BOXES peers throw std::system_error(EINVAL) here, more than the NIC's
// VELO_SCOPE_NIC_BOXES boxes after merging fail at registration (E2BIG).
template <class Peers>
Scope scope_peers(const Peers& peers) {
    Scope s = scope_of_kind(VELO_SCOPE_LIST);
    for (const Addr& p : peers) {
        if (s.nboxes == VELO_SCOPE_MAX_BOXES) throw std::system_error(EINVAL, std::generic_category(), "scope_peers");
        const auto n = static_cast<uint8_t>(p.node), v = static_cast<uint8_t>(p.vpid);
        s.boxes[s.nboxes++] = ScopeBox{n, n, v, v};
    }
    return s;
}
// A list of boxes (VELO_SCOPE_LIST), as scope_peers
template <class Boxes>
Scope scope_boxes(const Boxes& boxes) {
    Scope s = scope_of_kind(VELO_SCOPE_LIST);
    for (const ScopeBox& b : boxes) {
        if (s.nboxes == VELO_SCOPE_MAX_BOXES) throw std::system_error(EINVAL, std::generic_category(), "scope_boxes");
        s.boxes[s.nboxes++] = b;
    }
    return s;
}

// What a peer needs of a registration to put to / get from it: the NLA of a byte and the key.
struct RemoteRegion {
    uint64_t nla;
    uint32_t key;
};

// A registration (velo_register): the destructor deregisters it. Move-only.
class Region {
  public:
    Region() = default;
    Region(velo_ep_t* ep, const void* addr, std::size_t len, unsigned access = VELO_ACCESS_ALL,
           const Scope& scope = scope_job()) {
        detail::check(velo_register(ep, addr, len, access, &scope, &r_), "velo_register");
    }
    ~Region() { reset(); }
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    Region(Region&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
    Region& operator=(Region&& o) noexcept {
        if (this != &o) {
            reset();
            r_ = std::exchange(o.r_, nullptr);
        }
        return *this;
    }
    // the NLA of byte `offset` (what a peer puts to / gets from)
    uint64_t nla(std::size_t offset = 0) const {
        uint64_t v = 0;
        detail::check(velo_region_nla(r_, offset, &v), "velo_region_nla");
        return v;
    }
    // the region's 32-bit key (what a peer passes with the NLA)
    uint32_t key() const {
        uint32_t v = 0;
        detail::check(velo_region_rkey(r_, &v), "velo_region_rkey");
        return v;
    }
    // NLA of byte `offset` and key: what to hand to a peer the scope admits
    RemoteRegion remote(std::size_t offset = 0) const { return RemoteRegion{nla(offset), key()}; }
    // the boxes the NIC checks (kind BOX: one, LIST: nboxes)
    Scope scope() const {
        Scope v{};
        detail::check(velo_region_scope(r_, &v), "velo_region_scope");
        return v;
    }
    velo_region_t* get() const { return r_; }
    explicit operator bool() const { return r_ != nullptr; }
    void reset() {
        if (r_) velo_deregister(std::exchange(r_, nullptr));  // -EBADF after close: nothing to do
    }

  private:
    velo_region_t* r_ = nullptr;
};

using RmaCompletion = velo_rma_cpl_t;

// A destination of an endpoint. Owns the connection: the destructor disconnects (the
// destination gets its credits back). Move-only; connect once per destination.
class Connection {
  public:
    Connection() = default;
    explicit Connection(velo_conn_t* c) : c_(c) {}
    ~Connection() { reset(); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    Connection(Connection&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    Connection& operator=(Connection&& o) noexcept {
        if (this != &o) {
            reset();
            c_ = std::exchange(o.c_, nullptr);
        }
        return *this;
    }

    // true: handed to the NIC; false: no credit now (keep receiving, retry). Throws on errors
    // (bad length, not connected, destination closed, endpoint closed).
    bool send(const void* p, std::size_t n) {
        int r = velo_send(c_, p, n);
        if (r == -EAGAIN) return false;
        detail::check(r, "velo_send");
        return true;
    }
    bool send(std::string_view s) { return send(s.data(), s.size()); }
    template <class T>
    bool send(const T* p, std::size_t count) {
        return send(static_cast<const void*>(p), count * sizeof(T));
    }
#if __cplusplus >= 202002L && __has_include(<span>)
    template <class T, std::size_t E>
    bool send(std::span<T, E> s) {
        return send(s.data(), s.size_bytes());
    }
#endif

    Addr destination() const {
        Addr a{};
        detail::check(velo_conn_addr(c_, &a), "velo_conn_addr");
        return a;
    }
    velo_conn_t* get() const {
        return c_;
    }
    explicit operator bool() const {
        return c_ != nullptr;
    }
    void reset() {
        if (c_) velo_disconnect(c_);  // -EBADF once the endpoint is closed: nothing to do
        c_ = nullptr;
    }

  private:
    velo_conn_t* c_ = nullptr;
};

// An endpoint (a mailbox). The destructor closes it.
class Endpoint {
  public:
    // Default: velo_open(NULL) (VELO_DEVICE, else automatic).
    Endpoint() { detail::check(velo_open(nullptr, &ep_), "velo_open"); }
    explicit Endpoint(const velo_open_attr_t& attr) { detail::check(velo_open(&attr, &ep_), "velo_open"); }
    // device: "sim:<socket>", "hw:/dev/velo0", ...; node and vpid as in velo_open_attr_t
    explicit Endpoint(std::string_view device, int node = -1, int vpid = -1) {
        std::string d(device);
        velo_open_attr_t a;
        velo_open_attr_init(&a);
        a.device = d.c_str();
        a.node = node;
        a.vpid = vpid;
        detail::check(velo_open(&a, &ep_), "velo_open");
    }
    ~Endpoint() {
        if (ep_) velo_close(ep_);
    }
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;
    Endpoint(Endpoint&& o) noexcept : ep_(std::exchange(o.ep_, nullptr)) {}
    Endpoint& operator=(Endpoint&& o) noexcept {
        if (this != &o) {
            if (ep_) velo_close(ep_);
            ep_ = std::exchange(o.ep_, nullptr);
        }
        return *this;
    }

    Addr addr() const {
        Addr a{};
        detail::check(velo_addr(ep_, &a), "velo_addr");
        return a;
    }
    velo_info_t info() const {
        velo_info_t i{};
        detail::check(velo_info(ep_, &i), "velo_info");
        return i;
    }
    Connection connect(Addr dst, unsigned flags = 0) {
        velo_conn_t* c = nullptr;
        detail::check(velo_connect(ep_, dst, flags, &c), "velo_connect");
        return Connection(c);
    }
    // true and m filled if a message was there
    bool poll(Message& m) {
        int r = velo_poll(ep_, &m.m);
        if (r == -EAGAIN) return false;
        detail::check(r, "velo_poll");
        return true;
    }
    std::optional<Message> poll() {
        Message m;
        if (poll(m)) return m;
        return std::nullopt;
    }
    // false on timeout
    bool wait(Message& m, std::chrono::milliseconds timeout) {
        int r = velo_wait(ep_, &m.m, static_cast<int>(timeout.count()));
        if (r == -ETIMEDOUT) return false;
        detail::check(r, "velo_wait");
        return true;
    }
    Message wait() {
        Message m;
        detail::check(velo_wait(ep_, &m.m, -1), "velo_wait");
        return m;
    }
    // simulated NIC cycles (sim backend)
    uint64_t cycles() const {
        uint64_t now = 0;
        detail::check(velo_clock(ep_, &now, nullptr), "velo_clock");
        return now;
    }
    // ---- RMA (hw backend). put/get: true when issued, false when too many commands are
    // outstanding (take completions, retry); throws on errors.
    // `remote`: the peer's RemoteRegion (Region::remote), its NLA advanced to the byte wanted.
    bool put(Addr dst, const Region& local, std::size_t off, RemoteRegion remote, std::size_t len, unsigned flags = 0,
             uint64_t cookie = 0) {
        return issued(velo_put(ep_, dst, local.get(), off, remote.nla, remote.key, len, flags, cookie), "velo_put");
    }
    bool put(Addr dst, const void* buf, RemoteRegion remote, std::size_t len, unsigned flags = 0, uint64_t cookie = 0) {
        return issued(velo_put_buf(ep_, dst, buf, remote.nla, remote.key, len, flags, cookie), "velo_put_buf");
    }
    bool get(Addr src, const Region& local, std::size_t off, RemoteRegion remote, std::size_t len, unsigned flags = 0,
             uint64_t cookie = 0) {
        return issued(velo_get(ep_, src, local.get(), off, remote.nla, remote.key, len, flags, cookie), "velo_get");
    }
    bool get(Addr src, void* buf, RemoteRegion remote, std::size_t len, unsigned flags = 0, uint64_t cookie = 0) {
        return issued(velo_get_buf(ep_, src, buf, remote.nla, remote.key, len, flags, cookie), "velo_get_buf");
    }
    Region region(const void* addr, std::size_t len, unsigned access = VELO_ACCESS_ALL,
                  const Scope& scope = scope_job()) {
        return Region(ep_, addr, len, access, scope);
    }
    // true and c filled if a completion was there (ERROR completions are returned, not thrown)
    bool rma_poll(RmaCompletion& c) {
        int r = velo_rma_poll(ep_, &c);
        if (r == -EAGAIN) return false;
        detail::check(r, "velo_rma_poll");
        return true;
    }
    bool rma_wait(RmaCompletion& c, std::chrono::milliseconds timeout) {
        int r = velo_rma_wait(ep_, &c, static_cast<int>(timeout.count()));
        if (r == -ETIMEDOUT) return false;
        detail::check(r, "velo_rma_wait");
        return true;
    }
    // take ownership of an endpoint opened with velo_open (closed by the destructor)
    static Endpoint adopt(velo_ep_t* ep) {
        Endpoint e(nullptr);
        e.ep_ = ep;
        return e;
    }
    velo_ep_t* get() const { return ep_; }
    // close now (the destructor does it otherwise)
    void close() {
        if (ep_) detail::check(velo_close(std::exchange(ep_, nullptr)), "velo_close");
    }

  private:
    explicit Endpoint(std::nullptr_t) {}
    static bool issued(int r, const char* what) {
        if (r == -EAGAIN) return false;
        detail::check(r, what);
        return true;
    }
    velo_ep_t* ep_ = nullptr;
};

}  // namespace velo

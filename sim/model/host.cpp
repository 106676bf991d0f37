#include "host.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "velo/velo_hw.h"

namespace velo::sim {

namespace {
std::string fmt(const char* f, unsigned long long a = 0, unsigned long long b = 0, unsigned long long c = 0,
                unsigned long long d = 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, f, a, b, c, d);
    return buf;
}
}  // namespace

// ------------------------------------------------------------------------------ TlpDriver
int TlpDriver::beats_of(const Tlp& t) const {
    int bytes_per_beat = p_.data.n * 4;
    if (!t.is_mwr() && t.fmt_type != VELO_TLP_FMT_TYPE_CPLD) return 1;
    int n = static_cast<int>(t.payload.size());
    return std::max(1, (n + bytes_per_beat - 1) / bytes_per_beat);
}

void TlpDriver::drive() {
    sop_fired = false;
    sop_presented = false;
    if (q_.empty()) {
        *p_.valid = 0;
        return;
    }
    gap_ = false;
    // valid/ready rule: a beat once presented stays until it is taken
    if (gap_pct && rng && !holding_ && (beat_ == 0 || mid_tlp_gaps)) gap_ = rnd(*rng, 100) < gap_pct;
    const Tlp& t = q_.front();
    *p_.valid = gap_ ? 0 : 1;
    *p_.sop = beat_ == 0;
    if (!gap_ && beat_ == 0 && !presented_) {
        sop_presented = true;
        presented_ = true;
    }
    *p_.eop = beat_ == beats_of(t) - 1;
    uint32_t dw[4];
    t.encode(dw);
    for (int i = 0; i < 4 && i < p_.hdr.n; ++i) p_.hdr.w[i] = dw[i];
    if (p_.bar) *p_.bar = t.bar;
    p_.data.clear();
    int bpb = p_.data.n * 4;
    for (int i = 0; i < bpb; ++i) {
        size_t k = static_cast<size_t>(beat_ * bpb + i);
        if (k < t.payload.size()) p_.data.w[i / 4] |= static_cast<uint32_t>(t.payload[k]) << (8 * (i % 4));
    }
}

bool TlpDriver::sample() {
    holding_ = !q_.empty() && *p_.valid && !*p_.ready;
    if (q_.empty() || !*p_.valid || !*p_.ready) return false;
    ++beats_sent;
    if (beat_ == 0) sop_fired = true;
    if (++beat_ == beats_of(q_.front())) {
        beat_ = 0;
        presented_ = false;
        q_.pop_front();
        return true;
    }
    return false;
}

// ------------------------------------------------------------------------------ TlpSink
void TlpSink::drive() {
    eop_fired = false;
    *p_.ready = (stall_pct && rng && rnd(*rng, 100) < stall_pct) ? 0 : 1;
}

void TlpSink::sample() {
    if (!*p_.valid || !*p_.ready) return;
    if (*p_.sop) {
        if (in_) errors.push_back("sink: sop inside a TLP");
        uint32_t dw[4] = {0, 0, 0, 0};
        for (int i = 0; i < 4 && i < p_.hdr.n; ++i) dw[i] = p_.hdr.w[i];
        cur_ = Tlp::decode(dw);
        in_ = true;
        beat_ = 0;
    } else if (!in_) {
        errors.push_back("sink: beat outside a TLP");
        return;
    }
    // Fmt bit 1 (fmt_type bit 6): the TLP carries data (memory writes, completions with data);
    // memory reads and completions without data have none.
    size_t want = (cur_.fmt_type & 0x40) ? (cur_.len_dw ? cur_.len_dw : 1024) * 4u : 0;
    for (int i = 0; i < p_.data.n * 4; ++i) {
        if (cur_.payload.size() < want) cur_.payload.push_back(static_cast<uint8_t>(p_.data.w[i / 4] >> (8 * (i % 4))));
    }
    ++beat_;
    if (*p_.eop) {
        in_ = false;
        eop_fired = true;
        if (cur_.payload.size() != want)
            errors.push_back(fmt("sink: TLP carries %llu bytes, header says %llu", cur_.payload.size(), want));
        ++tlps;
        if (on_tlp) on_tlp(cur_);
    }
}

// ------------------------------------------------------------------------------ HostMem
void HostMem::post(const Tlp& t) {
    std::vector<Chunk> chunks;
    for (auto& [a, v] : mwr_bytes(t)) {
        uint64_t line = a & ~63ull;
        if (chunks.empty() || chunks.back().line != line) chunks.push_back(Chunk{line, {}});
        chunks.back().bytes.emplace_back(static_cast<unsigned>(a & 63), v);
    }
    std::shuffle(chunks.begin(), chunks.end(), rng_);
    pending_.push_back(std::move(chunks));
}

void HostMem::step() {
    if (pending_.empty()) return;
    if (wait_ > 0) {
        --wait_;
        return;
    }
    auto& tlp = pending_.front();
    Chunk c = tlp.back();
    tlp.pop_back();
    auto& l = mem_[c.line];
    for (auto& [o, v] : c.bytes) l[o] = v;  // all bytes of one line at once
    if (tlp.empty()) pending_.pop_front();
    wait_ = max_delay ? rnd(rng_, max_delay + 1) : 0;
}

void HostMem::drain() {
    while (!pending_.empty()) {
        wait_ = 0;
        step();
    }
}

uint8_t HostMem::read8(uint64_t a) const {
    auto it = mem_.find(a & ~63ull);
    return it == mem_.end() ? 0 : it->second[a & 63];
}

uint64_t HostMem::read64(uint64_t a) const {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | read8(a + static_cast<uint64_t>(i));
    return v;
}

void HostMem::write(uint64_t a, const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) mem_[(a + i) & ~63ull][(a + i) & 63] = p[i];
}

void HostMem::fill(uint64_t a, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; ++i) mem_[(a + i) & ~63ull][(a + i) & 63] = v;
}

// ------------------------------------------------------------------------------ HostReader
unsigned cpl_bytes(const Tlp& c) {
    if (c.fmt_type != VELO_TLP_FMT_TYPE_CPLD) return 0;
    unsigned avail = (c.len_dw ? c.len_dw : 1024u) * 4u - (c.lower_addr & 3u);
    unsigned bc = c.byte_count ? c.byte_count : 4096u;
    return std::min(avail, bc);
}

bool HostReader::request(const Tlp& mrd, uint64_t now) {
    if (!mrd.is_mrd()) {
        errors.push_back("host reader: not a memory read: " + mrd.str());
        return false;
    }
    const unsigned ndw = mrd.len_dw ? mrd.len_dw : 1024u;
    const uint8_t fbe = mrd.first_be, lbe = ndw == 1 ? 0 : mrd.last_be;
    if (!fbe || (ndw == 1 && lbe) || (ndw > 1 && !lbe) || (mrd.addr & 3) || (mrd.addr & 0xFFFull) + ndw * 4ull > 4096) {
        errors.push_back("host reader: malformed memory read: " + mrd.str());
        return false;
    }
    if ((mrd.addr >> 32) == 0 && mrd.is_4dw()) errors.push_back("host reader: 4DW read below 4 GiB: " + mrd.str());
    if ((mrd.addr >> 32) != 0 && !mrd.is_4dw()) errors.push_back("host reader: 3DW read above 4 GiB: " + mrd.str());
    const uint64_t seq = seq_++;
    ++reads;
    // byte range [start, end) the byte enables select
    unsigned lead = 0;
    while (!((fbe >> lead) & 1)) ++lead;
    unsigned trail = 0;
    const uint8_t ebe = ndw == 1 ? fbe : lbe;
    while (!((ebe >> (3 - trail)) & 1)) ++trail;
    const uint64_t start = mrd.addr + lead;
    const uint64_t end = mrd.addr + ndw * 4ull - trail;

    Plan p;
    if (plan) {
        p = plan(mrd, seq);
    } else {
        int r = rnd(rng_, 100);
        if (r < ur_pct)
            p.fault = Fault::UR;
        else if (r < ur_pct + ca_pct)
            p.fault = Fault::CA;
        else if (r < ur_pct + ca_pct + drop_pct)
            p.fault = Fault::Drop;
        if (p.fault != Fault::None) p.after = static_cast<unsigned>(rnd(rng_, 3));
    }
    // the bytes of the whole DW range, read at once when a source provides them
    std::vector<uint8_t> src;
    const uint64_t src_base = start & ~3ull;
    if (source) {
        src.resize(((end + 3) & ~3ull) - src_base);
        if (!source(src_base, src.data(), src.size())) {
            ++source_faults;
            p.fault = source_fault == Fault::None ? Fault::UR : source_fault;
            p.after = 0;
        }
    } else if (!mem_) {
        errors.push_back("host reader: no memory and no source");
        return false;
    }
    if (p.fault != Fault::None) ++faults;

    Req q;
    q.seq = seq;
    const unsigned span = latency_max > latency_min ? latency_max - latency_min + 1 : 1;
    q.due = now + latency_min + static_cast<unsigned>(rnd(rng_, static_cast<int>(span))) + p.extra_delay;
    q.dropped = false;
    uint64_t cur = start;
    unsigned sent = 0;
    while (cur < end) {
        Tlp c;
        c.cpl_id = cpl_id;
        c.req_id = mrd.req_id;
        c.tag = mrd.tag;
        c.lower_addr = static_cast<uint8_t>(cur & 0x7F);
        c.byte_count = static_cast<uint16_t>((end - cur) & 0xFFF);  // 4096 is encoded as 0
        // where this completion may end: RCB boundaries within the max payload, or the end
        const uint64_t limit = (cur & ~3ull) + mps;
        std::vector<uint64_t> ends;
        for (uint64_t b = (cur | 63) + 1; b < end && b <= limit; b += 64) ends.push_back(b);
        if (end <= limit) ends.push_back(end);
        uint64_t e = ends.back();
        if (ends.size() > 1 && pct(rng_, split_pct))
            e = ends[static_cast<size_t>(rnd(rng_, static_cast<int>(ends.size())))];
        // a fault replaces completion `after`, or the last one if there are fewer
        if (p.fault != Fault::None && (sent == p.after || e == end)) {
            if (p.fault == Fault::Drop) {
                q.dropped = true;
                break;
            }
            c.fmt_type = VELO_TLP_FMT_TYPE_CPL;
            c.cpl_status = p.fault == Fault::UR ? VELO_TLP_CPL_UR : kCplStatusCA;
            c.len_dw = 0;
            q.cpls.push_back(c);
            break;
        }
        const uint64_t d0 = cur & ~3ull, d1 = (e + 3) & ~3ull;
        c.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
        c.cpl_status = VELO_TLP_CPL_SC;
        c.len_dw = static_cast<uint16_t>(((d1 - d0) / 4) & 0x3FF);
        c.payload.resize(d1 - d0);
        for (uint64_t a = d0; a < d1; ++a) c.payload[a - d0] = source ? src[a - src_base] : mem_->read8(a);
        q.cpls.push_back(std::move(c));
        ++sent;
        cur = e;
    }
    if (q.cpls.empty()) return true;  // dropped before the first completion
    reqs_.push_back(std::move(q));
    return true;
}

bool HostReader::pop(uint64_t now, Tlp& cpl, uint64_t* seq) {
    std::vector<size_t> ready;
    // in order: only the oldest read may answer
    const size_t n = reorder ? reqs_.size() : std::min<size_t>(1, reqs_.size());
    for (size_t i = 0; i < n; ++i)
        if (reqs_[i].due <= now) ready.push_back(i);
    if (ready.empty()) return false;
    const size_t k = ready[static_cast<size_t>(rnd(rng_, static_cast<int>(ready.size())))];
    Req& q = reqs_[k];
    cpl = std::move(q.cpls.front());
    q.cpls.pop_front();
    if (seq) *seq = q.seq;
    ++completions;
    if (cpl.cpl_status == VELO_TLP_CPL_SC) sc_bytes += cpl_bytes(cpl);
    if (q.cpls.empty()) {
        reqs_.erase(reqs_.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
        q.due = now + 1 + (gap_max ? static_cast<unsigned>(rnd(rng_, static_cast<int>(gap_max + 1))) : 0u);
    }
    return true;
}

std::vector<uint8_t> HostReader::pending_tags() const {
    std::vector<uint8_t> t;
    for (auto& q : reqs_) t.push_back(q.cpls.front().tag);
    return t;
}

// ------------------------------------------------------------------------------ MboxEntry
#define HF(F) static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_##F, hdr))
unsigned MboxEntry::src_node() const {
    return HF(SRC_NODE);
}
unsigned MboxEntry::src_vpid() const {
    return HF(SRC_VPID);
}
unsigned MboxEntry::dst_vpid() const {
    return HF(DST_VPID);
}
unsigned MboxEntry::msg_len() const {
    return HF(MSG_LEN_M1) + 1;
}
unsigned MboxEntry::frag_off() const {
    return HF(FRAG_OFF);
}
unsigned MboxEntry::frag_len() const {
    return HF(FRAG_LEN_M1) + 1;
}
bool MboxEntry::frag() const {
    return HF(FRAG) != 0;
}
unsigned MboxEntry::lines() const {
    return HF(LINES);
}

// ------------------------------------------------------------------------------ MailboxReader
bool MailboxReader::poll(MboxEntry& e) {
    const uint32_t size = 1u << log2_;
    auto line_addr = [&](uint32_t p) { return base_ + 64ull * (p & (size - 1)); };
    auto want_phase = [&](uint32_t p) { return ((p >> log2_) & 1u) ^ 1u; };
    uint64_t h = mem_.read64(line_addr(rp_));
    if (VELO_FIELD_GET(VELO_MBOX_HDR_PHASE, h) != want_phase(rp_)) return false;
    e.hdr = h;
    if (VELO_FIELD_GET(VELO_MBOX_HDR_TAIL, h)) {
        errors.push_back(fmt("mailbox: entry at rp %llu starts with a TAIL line", rp_));
        rp_ += 1;
        return false;
    }
    unsigned lines = e.lines();
    unsigned area = (e.frag_off() % 4) + e.frag_len();
    if (lines != (area > 56 ? 2u : 1u)) errors.push_back(fmt("mailbox: LINES=%llu for a %llu-byte area", lines, area));
    e.area.assign(area, 0);
    for (unsigned i = 0; i < area && i < 56; ++i) e.area[i] = mem_.read8(line_addr(rp_) + 8 + i);
    if (lines == 2) {
        uint32_t tp = rp_ + 1;
        uint64_t t = mem_.read64(line_addr(tp));
        if (VELO_FIELD_GET(VELO_MBOX_HDR_PHASE, t) != want_phase(tp) || !VELO_FIELD_GET(VELO_MBOX_HDR_TAIL, t))
            errors.push_back(
                fmt("mailbox: torn read: second line of entry at rp %llu not written yet (hdr %llx)", rp_, t));
        for (unsigned i = 56; i < area; ++i) e.area[i] = mem_.read8(line_addr(tp) + 8 + (i - 56));
    }
    rp_ += lines;
    return true;
}

// ------------------------------------------------------------------------------ Recombiner
bool Recombiner::add(unsigned dst_node, const MboxEntry& e, Msg& m) {
    unsigned off = e.frag_off(), len = e.frag_len(), mlen = e.msg_len();
    const uint8_t* data = e.area.data() + (off % 4);
    m.src_node = e.src_node();
    m.src_vpid = e.src_vpid();
    m.dst_node = dst_node;
    m.dst_vpid = e.dst_vpid();
    auto key = std::make_pair(m.src_node, m.src_vpid);
    if (!e.frag()) {
        if (off != 0 || len != mlen) errors.push_back("recombine: FRAG=0 on a partial message");
        if (part_.count(key))
            errors.push_back(
                fmt("recombine: message from %llu/%llu overtook an unfinished one", m.src_node, m.src_vpid));
        m.bytes.assign(data, data + len);
        return true;
    }
    ++fragments;
    auto& p = part_[key];
    if (p.len == 0) {
        p.len = mlen;
        p.bytes.assign(mlen, 0);
        p.have.assign(mlen, false);
        p.dst_vpid = m.dst_vpid;
    } else if (p.len != mlen || p.dst_vpid != m.dst_vpid) {
        errors.push_back(
            fmt("recombine: fragment of another message from %llu/%llu interleaved", m.src_node, m.src_vpid));
        return false;
    }
    if (off + len > mlen) {
        errors.push_back("recombine: fragment past the message end");
        return false;
    }
    for (unsigned i = 0; i < len; ++i) {
        if (p.have[off + i]) errors.push_back("recombine: byte delivered twice");
        p.have[off + i] = true;
        p.bytes[off + i] = data[i];
    }
    if (std::all_of(p.have.begin(), p.have.end(), [](bool b) { return b; })) {
        m.bytes = p.bytes;
        part_.erase(key);
        return true;
    }
    return false;
}

// ------------------------------------------------------------------------------ Scoreboard
void Scoreboard::expect(const Msg& m) {
    q_[{m.src_node, m.src_vpid, m.dst_node, m.dst_vpid}].push_back(m.bytes);
}

void Scoreboard::deliver(const Msg& m) {
    ++delivered;
    auto it = q_.find({m.src_node, m.src_vpid, m.dst_node, m.dst_vpid});
    if (it == q_.end() || it->second.empty()) {
        errors.push_back(fmt("scoreboard: unexpected message %llu/%llu -> %llu/%llu", m.src_node, m.src_vpid,
                             m.dst_node, m.dst_vpid));
        return;
    }
    if (it->second.front() != m.bytes) {
        errors.push_back(fmt("scoreboard: wrong bytes (%llu bytes) %llu/%llu -> vpid %llu", m.bytes.size(), m.src_node,
                             m.src_vpid, m.dst_vpid));
    }
    it->second.pop_front();
}

size_t Scoreboard::outstanding() const {
    size_t n = 0;
    for (auto& [k, v] : q_) n += v.size();
    return n;
}

// ------------------------------------------------------------------------------ write combining
uint64_t send_offset(unsigned vb, unsigned nb, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid, unsigned len) {
    uint64_t o = 0;
    o |= static_cast<uint64_t>(dst_vpid) << VELO_SEND_ADDR_DST_VPID_SHIFT(vb, nb);
    o |= static_cast<uint64_t>(dst_node) << VELO_SEND_ADDR_DST_NODE_SHIFT(vb, nb);
    o |= static_cast<uint64_t>(src_vpid) << VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb);
    o |= static_cast<uint64_t>(len - 1) << VELO_SEND_ADDR_LEN_M1_SHIFT;
    return o;
}

unsigned entry_lines(const Tlp& t) {
    unsigned written = static_cast<unsigned>(mwr_bytes(t).size());
    if (!written) return 0;
    unsigned lead = 0;
    while (lead < 3 && !((t.first_be >> lead) & 1)) ++lead;
    unsigned off = static_cast<unsigned>(t.addr & 63) + lead;
    unsigned msg_len = static_cast<unsigned>((t.addr >> 6) & 63) + 1;
    if (off >= msg_len) return 0;
    unsigned end = std::min(off + written, msg_len);
    unsigned area = off % 4 + (end - off);
    return area > 56 ? 2 : 1;
}

std::vector<Tlp> wc_flush(uint64_t window_base, uint64_t offset, const std::vector<uint8_t>& msg, WcMode mode,
                          std::mt19937_64& rng) {
    const uint8_t bar = VELO_BAR_SEND;
    const uint64_t a = window_base + offset;
    const unsigned len = static_cast<unsigned>(msg.size());
    const unsigned qw = (len + 7) / 8;
    // the bytes the CPU stores: whole quadwords, garbage after the message
    std::vector<uint8_t> st(qw * 8);
    for (unsigned i = 0; i < st.size(); ++i) st[i] = i < len ? msg[i] : static_cast<uint8_t>(0xA5 ^ i);
    auto piece = [&](unsigned from, unsigned to) {
        return Tlp::mwr(a + from, std::vector<uint8_t>(st.begin() + from, st.begin() + to), bar);
    };
    std::vector<Tlp> out;
    switch (mode) {
        case WcMode::Burst:
            out.push_back(piece(0, qw * 8));
            break;
        case WcMode::FullLine: {
            std::vector<uint8_t> line(64);
            for (unsigned i = 0; i < 64; ++i) line[i] = i < len ? msg[i] : static_cast<uint8_t>(0x5A ^ i);
            out.push_back(Tlp::mwr(a, line, bar));
            break;
        }
        case WcMode::Split: {
            if (qw < 2) {
                out.push_back(piece(0, qw * 8));
                break;
            }
            unsigned k = 1 + static_cast<unsigned>(rng() % (qw - 1));
            out.push_back(piece(0, k * 8));
            out.push_back(piece(k * 8, qw * 8));
            break;
        }
        case WcMode::Chunk8:
            for (unsigned q = 0; q < qw; ++q) out.push_back(piece(q * 8, q * 8 + 8));
            break;
        case WcMode::Bytes: {
            // byte stores: the flush edges fall on any byte; pieces never extend past len
            std::vector<unsigned> cuts{0, len};
            unsigned extra = static_cast<unsigned>(rng() % 3);
            for (unsigned i = 0; i < extra && len > 1; ++i)
                cuts.push_back(1 + static_cast<unsigned>(rng() % (len - 1)));
            std::sort(cuts.begin(), cuts.end());
            cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
            for (size_t i = 0; i + 1 < cuts.size(); ++i)
                out.push_back(
                    Tlp::mwr(a + cuts[i], std::vector<uint8_t>(msg.begin() + cuts[i], msg.begin() + cuts[i + 1]), bar));
            break;
        }
    }
    return out;
}

}  // namespace velo::sim

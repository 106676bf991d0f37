// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Host tool of the QEMU smoke test (sw/driver/qemu): writes the BAR0 register images that the
// guest copies into the RAM-backed BAR0 of an emulated PCI device before binding velo.ko to it,
// and the sysfs contents the driver must then show. Every offset, type, field and the SPEC_HASH
// come from the generated sw/include/velo/velo_hw.h, the header velo.ko is built from.
//
//   velo_regimg <outdir>
//     <outdir>/regs-<variant>.txt   "0x<offset> 0x<value>" per line, every offset any variant sets
//                                   (so writing one image fully overwrites the previous one)
//     <outdir>/variants.txt         "<variant> <errno name or OK> <dmesg pattern>" per line
//     <outdir>/expect/<attr>        expected /sys/class/velo/veloN/<attr> for the "good" image
//
// A RAM BAR behaves as a register file that keeps what is written: enough for the driver core's
// probe (block chain, SPEC_HASH, CAPS), bring-up (NODE_ID read back), mailbox programming (read
// back) and quiesce (QUIESCE_STATUS reads 0 = idle). It is not a NIC: nothing is ever sent.
#define VELO_HW_WANT_NAMES
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "velo/velo_hw.h"
#include "velo_qemu_img.h"

#define MAX_WORDS 512

struct img {
    unsigned n;
    uint32_t off[MAX_WORDS];
    uint32_t val[MAX_WORDS];
};

static void put(struct img* m, uint32_t off, uint32_t val) {
    for (unsigned i = 0; i < m->n; ++i) {
        if (m->off[i] == off) {
            m->val[i] = val;
            return;
        }
    }
    if (m->n == MAX_WORDS) {
        fprintf(stderr, "velo_regimg: more than %d words\n", MAX_WORDS);
        exit(1);
    }
    m->off[m->n] = off;
    m->val[m->n] = val;
    m->n++;
}

static void block(struct img* m, uint32_t base, uint32_t type, uint32_t version, uint32_t next) {
    put(m, base + VELO_BLKHDR_TYPE, type);
    put(m, base + VELO_BLKHDR_VERSION, version);
    put(m, base + VELO_BLKHDR_NEXT, next);
}

// The image of a plausible NIC built from this spec.
static void good_image(struct img* m) {
    m->n = 0;
    block(m, VELO_BLK_ID_BASE, VELO_BLK_ID_TYPE, VELO_BLK_ID_VERSION, VELO_BLK_ID_NEXT);
    block(m, VELO_BLK_CTRL_BASE, VELO_BLK_CTRL_TYPE, VELO_BLK_CTRL_VERSION, VELO_BLK_CTRL_NEXT);
    block(m, VELO_BLK_COUNTERS_BASE, VELO_BLK_COUNTERS_TYPE, VELO_BLK_COUNTERS_VERSION, VELO_BLK_COUNTERS_NEXT);
    block(m, VELO_BLK_NET_BASE, VELO_BLK_NET_TYPE, VELO_BLK_NET_VERSION, VELO_BLK_NET_NEXT);
    block(m, VELO_BLK_VPID_BASE, VELO_BLK_VPID_TYPE, VELO_BLK_VPID_VERSION, VELO_BLK_VPID_NEXT);
#ifdef VELO_BLK_IRQ_BASE
    // a NIC built without RMA (velo_nic RMA = 0): IRQ.NEXT reads 0, IRQ ends the chain
    block(m, VELO_BLK_IRQ_BASE, VELO_BLK_IRQ_TYPE, VELO_BLK_IRQ_VERSION, 0);
    put(m, VELO_REG_IRQ_CTRL, 0);
    put(m, VELO_REG_IRQ_PENDING_OFFSET, VELO_TBL_IRQ_PENDING_BASE);
    put(m, VELO_REG_IRQ_PENDING_WORDS, ((1u << IMG_VPID_BITS) + 31) / 32);
#endif
    put(m, VELO_REG_ID_DESIGN_VERSION, VELO_SPEC_VERSION);
    put(m, VELO_REG_ID_CAPS,
        (uint32_t)(VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, IMG_NODE_BITS) |
                   VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, IMG_VPID_BITS) |
                   VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, VELO_DEFAULT_TLP_W / 8) |
                   VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, VELO_DEFAULT_LINK_W / 8) |
                   VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, VELO_MSG_MAX)));
    put(m, VELO_REG_ID_SPEC_HASH, VELO_SPEC_HASH);
    put(m, VELO_REG_CTRL_NODE_ID, IMG_NODE_ID);
    put(m, VELO_REG_CTRL_CONTROL, 0);
    put(m, VELO_REG_CTRL_STATUS, (uint32_t)VELO_FIELD_PREP(VELO_REG_CTRL_STATUS_LINK_UP, 1));
    put(m, VELO_REG_CTRL_QUIESCE_STATUS, 0);
    put(m, VELO_REG_COUNTERS_COUNT, VELO_CNT_NUM);
    for (uint32_t i = 0; i < VELO_CNT_NUM; ++i)
        put(m, VELO_REG_COUNTERS_COUNTER_BASE + 4 * i, IMG_COUNTER_BIAS + 7 * i);
    put(m, VELO_REG_NET_PORTS,
        (uint32_t)(VELO_FIELD_PREP(VELO_REG_NET_PORTS_NP, IMG_PORTS) | VELO_FIELD_PREP(VELO_REG_NET_PORTS_PB, 2) |
                   VELO_FIELD_PREP(VELO_REG_NET_PORTS_NVC, VELO_NVC) |
                   VELO_FIELD_PREP(VELO_REG_NET_PORTS_VC_DEPTH, 16)));
    put(m, VELO_REG_NET_LINK_STATUS, IMG_LINK_UP_MASK);
    put(m, VELO_REG_NET_ROUTE_OFFSET, VELO_TBL_ROUTE_TABLE_BASE);
    put(m, VELO_REG_NET_PORT_OFFSET, VELO_TBL_NET_PORT_BASE);
    put(m, VELO_REG_NET_PORT_STRIDE, VELO_TBL_NET_PORT_STRIDE);
    for (uint32_t p = 1; p <= IMG_PORTS; ++p) {
        const uint32_t e = VELO_TBL_NET_PORT_BASE + (p - 1) * VELO_TBL_NET_PORT_STRIDE;
        const uint32_t up = (IMG_LINK_UP_MASK >> (p - 1)) & 1u;
        put(m, e + VELO_TBL_NET_PORT_CFG, 0);
        put(m, e + VELO_TBL_NET_PORT_STATUS, (uint32_t)VELO_FIELD_PREP(VELO_TBL_NET_PORT_STATUS_UP, up));
    }
    put(m, VELO_REG_VPID_NUM_VPIDS, 1u << IMG_VPID_BITS);
    put(m, VELO_REG_VPID_TABLE_OFFSET, VELO_TBL_VPID_TABLE_BASE);
    put(m, VELO_REG_VPID_TABLE_STRIDE, VELO_TBL_VPID_TABLE_STRIDE);
    put(m, VELO_REG_VPID_USER_OFFSET, VELO_TBL_VPID_USER_BASE);
    put(m, VELO_REG_VPID_USER_STRIDE, VELO_TBL_VPID_USER_STRIDE);
#if defined(VELO_BLK_RMA_BASE) && defined(VELO_BLK_IRQ_BASE)
    // the RMA block is there but not in the chain (IRQ ends it); the "rma" variant links it in
    block(m, VELO_BLK_RMA_BASE, VELO_BLK_RMA_TYPE, VELO_BLK_RMA_VERSION, 0);
    put(m, VELO_REG_RMA_CAPS,
        (uint32_t)(VELO_FIELD_PREP(VELO_REG_RMA_CAPS_REGION_BITS, IMG_RMA_REGION_BITS) |
                   VELO_FIELD_PREP(VELO_REG_RMA_CAPS_PTE_BITS, IMG_RMA_PTE_BITS) |
                   VELO_FIELD_PREP(VELO_REG_RMA_CAPS_MTU, IMG_RMA_MTU)));
    put(m, VELO_REG_RMA_CONTROL, 0);
    put(m, VELO_REG_RMA_QUIESCE_STATUS, 0);
    put(m, VELO_REG_RMA_REGION_OFFSET, VELO_TBL_RMA_REGION_BASE);
    put(m, VELO_REG_RMA_PTE_OFFSET, VELO_TBL_RMA_PTE_BASE);
    put(m, VELO_REG_RMA_NQ_OFFSET, VELO_TBL_RMA_NQ_TABLE_BASE);
    put(m, VELO_REG_RMA_CNT_COUNT, 0);
#endif
}

struct variant {
    const char* name;
    const char* expect;   // errno name the bind must fail with, or OK
    const char* pattern;  // extended regex the kernel log must show after the bind
};

// The variants, in the order the guest binds them. Every error variant breaks exactly one thing.
// The patterns are the driver core's log lines (velo_core_probe.c), printed by the driver with dev_err.
static const struct variant variants[] = {
    {"zero", "ENODEV", "not a VELO device, ID type 0x0$"},
    {"badchain", "ENODEV", "broken register block chain"},
    {"noblocks", "ENODEV", "register blocks missing"},
    {"badhash", "EPROTO", "another spec, SPEC_HASH 0x"},
    {"badcaps", "ENODEV", "implausible CAPS"},
    {"badnet", "ENODEV", "implausible NET block"},
    // the driver's own check (velo_main.c): user pages are mapped into processes
    {"badalign", "ENODEV",
     "implausible VPID block: user pages at 0x[0-9a-f]+, stride 0x[0-9a-f]+, are not page aligned"},
#ifdef VELO_BLK_IRQ_BASE
    {"badirq", "ENODEV", "implausible IRQ block"},
#endif
    {"good", "OK", ""},
#if defined(VELO_BLK_RMA_BASE) && defined(VELO_BLK_IRQ_BASE)
    {"rma", "OK", ""},       // good with the RMA block linked in (its own step of the guest)
    {"rmastuck", "OK", ""},  // rma, but RMA.QUIESCE_STATUS says BUSY for ever
#endif
};

static void make_variant(struct img* m, const char* name) {
    good_image(m);
    if (!strcmp(name, "zero")) {
        for (unsigned i = 0; i < m->n; ++i) m->val[i] = 0;
    } else if (!strcmp(name, "badchain")) {
        put(m, VELO_BLK_CTRL_BASE + VELO_BLKHDR_NEXT, VELO_BLK_CTRL_BASE);  // loops on itself
    } else if (!strcmp(name, "noblocks")) {
        put(m, VELO_BLK_ID_BASE + VELO_BLKHDR_NEXT, 0);  // the chain ends after ID
    } else if (!strcmp(name, "badhash")) {
        put(m, VELO_REG_ID_SPEC_HASH, ~(uint32_t)VELO_SPEC_HASH);
    } else if (!strcmp(name, "badcaps")) {
        put(m, VELO_REG_VPID_NUM_VPIDS, (1u << IMG_VPID_BITS) - 1);  // not 2^VPID_BITS
    } else if (!strcmp(name, "badalign")) {
        put(m, VELO_REG_VPID_USER_OFFSET, VELO_TBL_VPID_USER_BASE + 0x800);  // half a page in
    } else if (!strcmp(name, "badnet")) {
        put(m, VELO_REG_NET_PORT_STRIDE, 0);  // ports that overlap
#ifdef VELO_BLK_IRQ_BASE
    } else if (!strcmp(name, "badirq")) {
        put(m, VELO_REG_IRQ_PENDING_WORDS, 0);  // no room for the vpids' bits
#endif
#if defined(VELO_BLK_RMA_BASE) && defined(VELO_BLK_IRQ_BASE)
    } else if (!strcmp(name, "rma")) {
        put(m, VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT, VELO_BLK_RMA_BASE);
    } else if (!strcmp(name, "rmastuck")) {
        put(m, VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT, VELO_BLK_RMA_BASE);
        put(m, VELO_REG_RMA_QUIESCE_STATUS, (uint32_t)VELO_FIELD_PREP(VELO_REG_RMA_QUIESCE_STATUS_BUSY, 1));
#endif
    } else if (strcmp(name, "good")) {
        fprintf(stderr, "velo_regimg: unknown variant %s\n", name);
        exit(1);
    }
}

static FILE* open_out(const char* dir, const char* name) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        fprintf(stderr, "velo_regimg: path too long\n");
        exit(1);
    }
    FILE* f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "velo_regimg: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void close_out(FILE* f) {
    if (fclose(f)) {
        fprintf(stderr, "velo_regimg: write failed: %s\n", strerror(errno));
        exit(1);
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: velo_regimg <outdir>\n");
        return 2;
    }
    const char* dir = argv[1];
    char sub[4096];
    if (snprintf(sub, sizeof sub, "%s/expect", dir) >= (int)sizeof sub) return 1;
    if ((mkdir(dir, 0755) && errno != EEXIST) || (mkdir(sub, 0755) && errno != EEXIST)) {
        fprintf(stderr, "velo_regimg: mkdir %s: %s\n", sub, strerror(errno));
        return 1;
    }
    // the union of offsets: the good image sets a superset of every variant's offsets
    struct img all;
    good_image(&all);
    FILE* vf = open_out(dir, "variants.txt");
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
        struct img m;
        make_variant(&m, variants[v].name);
        for (unsigned i = 0; i < m.n; ++i) put(&all, m.off[i], all.val[i]);
        if (m.n != all.n) {
            fprintf(stderr, "velo_regimg: variant %s sets an offset the good image does not\n", variants[v].name);
            return 1;
        }
        char name[64];
        snprintf(name, sizeof name, "regs-%s.txt", variants[v].name);
        FILE* f = open_out(dir, name);
        for (unsigned i = 0; i < m.n; ++i) fprintf(f, "0x%x 0x%08x\n", m.off[i], m.val[i]);
        close_out(f);
        fprintf(vf, "%s %s %s", variants[v].name, variants[v].expect, variants[v].pattern);
        if (!strcmp(variants[v].name, "badhash")) fprintf(vf, "%x", ~(uint32_t)VELO_SPEC_HASH);  // the value read
        fprintf(vf, "\n");
    }
    close_out(vf);

    // expected sysfs attributes of the good image (formats: notes/contracts, docs/driver.md)
    FILE* f = open_out(sub, "design_version");
    fprintf(f, "0x%08x\n", (unsigned)VELO_SPEC_VERSION);
    close_out(f);
    f = open_out(sub, "spec_hash");
    fprintf(f, "0x%08x\n", (unsigned)VELO_SPEC_HASH);
    close_out(f);
    f = open_out(sub, "node_id");
    fprintf(f, "%u\n", IMG_NODE_ID);
    close_out(f);
    f = open_out(sub, "num_vpids");
    fprintf(f, "%u\n", 1u << IMG_VPID_BITS);
    close_out(f);
    f = open_out(sub, "ports");
    fprintf(f, "%u\n", IMG_PORTS);
    close_out(f);
    f = open_out(sub, "link_state");
    for (unsigned p = 1; p <= IMG_PORTS; ++p)
        fprintf(f, "port%u %s\n", p, ((IMG_LINK_UP_MASK >> (p - 1)) & 1u) ? "up" : "down");
    close_out(f);
    f = open_out(sub, "counters");
    for (unsigned i = 0; i < VELO_CNT_NUM; ++i) fprintf(f, "%s %u\n", velo_counter_names[i], IMG_COUNTER_BIAS + 7 * i);
    close_out(f);
    return 0;
}

// SPDX-License-Identifier: MIT
// mca_btl_velo: the component. MCA parameters, opening the libvelo endpoint (which simulated node
// a rank goes to), the modex, the help messages. See docs/mpi.md.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btl_velo.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#define HELP_FILE "help-mpi-btl-velo.txt"

static int velo_component_register(void);
static int velo_component_open(void);
static int velo_component_close(void);
static mca_btl_base_module_t** velo_component_init(int* num_btls, bool enable_progress_threads,
                                                   bool enable_mpi_threads);

mca_btl_velo_component_t mca_btl_velo_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_DEFAULT_VERSION("velo"),
                    .mca_open_component = velo_component_open,
                    .mca_close_component = velo_component_close,
                    .mca_register_component_params = velo_component_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
            .btl_init = velo_component_init,
            .btl_progress = mca_btl_velo_progress,
        },
};

static void reg_int(const char* name, const char* desc, int lvl, int* storage) {
    (void)mca_base_component_var_register(&mca_btl_velo_component.super.btl_version, name, desc, MCA_BASE_VAR_TYPE_INT,
                                          NULL, 0, 0, lvl, MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int velo_component_register(void) {
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    mca_base_var_group_component_register(&c->super.btl_version, "VELO low-latency interconnect (libvelo)");

    c->device = NULL;
    (void)mca_base_component_var_register(
        &c->super.btl_version, "device",
        "VELO device: \"hw:/dev/velo0\", \"sim:<socket>\" (a velo-fabric), \"hw\" or \"sim\"; empty: $VELO_DEVICE, "
        "else /dev/velo0 if present, else the fabric at the default socket",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, &c->device);
    c->node = -1;
    reg_int("node", "Simulator: node this rank attaches to; -1: (rank in the job) modulo btl_velo_nodes",
            OPAL_INFO_LVL_4, &c->node);
    c->nodes = 0;
    reg_int("nodes",
            "Simulator: nodes the ranks are spread over (rank r on node r % nodes); 0: $VELO_NODES, else all nodes "
            "of the fabric",
            OPAL_INFO_LVL_4, &c->nodes);
    c->vpid = -1;
    reg_int("vpid", "Endpoint vpid to request; -1: any free one ($VELO_VPID if set)", OPAL_INFO_LVL_9, &c->vpid);
    c->ring_log2 = 0;
    (void)mca_base_component_var_register(
        &c->super.btl_version, "ring_log2", "Receive mailbox of 2^n lines of 64 bytes; 0: libvelo's default (11)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->ring_log2);
    c->train_bytes = 56;
    reg_int("train_bytes",
            "Size of the VELO messages a fragment larger than one message is cut into (16..64; 56 = one mailbox line "
            "each)",
            OPAL_INFO_LVL_5, &c->train_bytes);
    c->compress = 1;
    (void)mca_base_component_var_register(
        &c->super.btl_version, "compress", "Send ob1's match header in 6 bytes instead of 14 when its fields allow",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->compress);
    c->idle_wait_ms = -1;
    reg_int("idle_wait_ms",
            "When progress found nothing btl_velo_idle_polls times in a row, sleep up to this long until a "
            "message, a credit or an RMA completion comes (velo_idle) instead of returning at once; 0: never; "
            "-1: 1 on the simulator (simulated time then stands while the rank reacts), 0 on hardware",
            OPAL_INFO_LVL_5, &c->idle_wait_ms);
    c->idle_polls = 1;
    reg_int("idle_polls", "Empty progress calls before an idle wait (see btl_velo_idle_wait_ms)", OPAL_INFO_LVL_6,
            &c->idle_polls);
    c->poll_batch = 32;
    reg_int("poll_batch", "Messages taken from the mailbox per progress call at most", OPAL_INFO_LVL_6, &c->poll_batch);
    c->connect_timeout_ms = 10000;
    reg_int("connect_timeout_ms",
            "A peer that does not answer the connection request (first send) within this time is reported to the PML "
            "as failed",
            OPAL_INFO_LVL_4, &c->connect_timeout_ms);
    c->free_list_num = 8;
    reg_int("free_list_num", "Send descriptors allocated at start (per size class)", OPAL_INFO_LVL_9,
            &c->free_list_num);
    c->free_list_max = -1;
    reg_int("free_list_max", "Send descriptors at most (per size class; -1: no limit)", OPAL_INFO_LVL_9,
            &c->free_list_max);
    c->free_list_inc = 32;
    reg_int("free_list_inc", "Send descriptors allocated at a time", OPAL_INFO_LVL_9, &c->free_list_inc);
    c->rdma = 1;
    (void)mca_base_component_var_register(
        &c->super.btl_version, "rdma",
        "Use the NIC's RMA engine for put/get (ob1's RDMA protocols for large messages) when the device has one; "
        "0: everything over VELO messages",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &c->rdma);
    c->warn_no_device = -1;
    reg_int("warn_no_device",
            "Explain why when no VELO device or fabric can be opened: 1 always, 0 never, -1 when the btl list names "
            "velo",
            OPAL_INFO_LVL_3, &c->warn_no_device);
    c->verbose = 0;
    reg_int("verbose", "Verbosity: 1 endpoint and counters at finalize, 2 connections, 3 every queued fragment",
            OPAL_INFO_LVL_5, &c->verbose);

    // the common BTL parameters (btl_velo_eager_limit, _max_send_size, _exclusivity, ...) with the
    // module's values as defaults
    mca_btl_velo_module_t* m = &mca_btl_velo_module;
    m->super.btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    m->super.btl_eager_limit = 4096;
    m->super.btl_rndv_eager_limit = 4096;
    m->super.btl_max_send_size = 64 * 1024;
    m->super.btl_rdma_pipeline_send_length = 64 * 1024;
    m->super.btl_rdma_pipeline_frag_size = 64 * 1024;
    m->super.btl_min_rdma_pipeline_size = 0;
    // put/get are cleared again at init when the device has no RMA unit (or btl_velo_rdma = 0)
    m->super.btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET;
    m->super.btl_registration_handle_size = mca_btl_velo_rdma_handle_size();
    mca_btl_velo_rdma_install(m);              // Open MPI drops the put/get flags of a module without the functions
    m->super.btl_put_limit = (size_t)1 << 30;  // libvelo splits into commands of VELO_RMA_LEN_MAX
    m->super.btl_get_limit = (size_t)1 << 30;
    m->super.btl_put_alignment = 0;
    m->super.btl_get_alignment = 0;
    m->super.btl_put_local_registration_threshold = 0;
    m->super.btl_get_local_registration_threshold = 0;
    m->super.btl_latency = 1;
    m->super.btl_bandwidth = 200;  // MB/s: 16-bit link at 100 MHz
    return mca_btl_base_param_register(&c->super.btl_version, &m->super);
}

static int velo_component_open(void) {
    mca_btl_velo_component.module = NULL;
    mca_btl_velo_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_btl_velo_component.output, mca_btl_velo_component.verbose);
    return OPAL_SUCCESS;
}

static int velo_component_close(void) {
    if (mca_btl_velo_component.output >= 0) opal_output_close(mca_btl_velo_component.output);
    mca_btl_velo_component.output = -1;
    return OPAL_SUCCESS;
}

// The help file lies next to this shared object (installed and in the build tree).
static void add_help_dir(void) {
    static int done;
    if (done) return;
    done = 1;
    Dl_info di;
    if (dladdr((void*)&mca_btl_velo_component, &di) && di.dli_fname) {
        char* path = strdup(di.dli_fname);
        if (path) {
            opal_show_help_add_dir(dirname(path));
            free(path);
        }
    }
}

// A help message (help-mpi-btl-velo.txt), written by this process at once: opal_show_help would
// forward it to mpirun for aggregation, and that message is lost when the PML ends the job right
// after (as it does when a BTL is missing or a peer is lost).
void mca_btl_velo_help(const char* topic, ...) {
    add_help_dir();
    va_list ap;
    va_start(ap, topic);
    char* text = opal_show_help_vstring(HELP_FILE, topic, true, ap);
    va_end(ap);
    if (text) {
        fputs(text, stderr);
        fflush(stderr);
        free(text);
        return;
    }
    va_start(ap, topic);
    opal_show_vhelp(HELP_FILE, topic, true, ap);
    va_end(ap);
}

// Did the user ask for velo by name (the btl include list)?
static int velo_requested(void) {
    int idx = mca_base_var_find("opal", "btl", NULL, NULL);
    if (idx < 0) return 0;
    const mca_base_var_storage_t* st = NULL;
    if (mca_base_var_get_value(idx, &st, NULL, NULL) != OPAL_SUCCESS || !st || !st->stringval) return 0;
    const char* s = st->stringval;
    if (s[0] == '^') return 0;
    for (const char* p = strstr(s, "velo"); p; p = strstr(p + 1, "velo")) {
        const int start = p == s || p[-1] == ',';
        const int end = p[4] == 0 || p[4] == ',';
        if (start && end) return 1;
    }
    return 0;
}

static const char* device_string(void) {
    const char* d = mca_btl_velo_component.device;
    if (d && *d) return d;
    d = getenv("VELO_DEVICE");
    return d && *d ? d : NULL;
}

static int is_sim(const char* dev) {
    if (dev) return strncmp(dev, "sim", 3) == 0;
    return access("/dev/velo0", F_OK) != 0;  // libvelo's automatic choice
}

static int env_nodes(void) {
    const char* s = getenv("VELO_NODES");
    if (!s || !*s) return 0;
    char* e;
    long v = strtol(s, &e, 10);
    return *e || v < 1 || v > 65536 ? 0 : (int)v;
}

// Open the endpoint. On the simulator the rank goes to node (rank % nodes): btl_velo_node, else
// btl_velo_nodes, else $VELO_NODES, else the fabric's node count (learned from a first endpoint
// on node 0). On hardware the node is the board's.
static int open_endpoint(velo_ep_t** ep, int* node_out) {
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    const char* dev = device_string();
    a.device = dev;
    a.vpid = c->vpid;
    a.ring_log2 = c->ring_log2;
    *node_out = -1;
    if (!is_sim(dev)) return velo_open(&a, ep);
    const unsigned rank = OPAL_PROC_MY_NAME.vpid;
    if (c->node >= 0) {
        a.node = c->node;
    } else {
        int nodes = c->nodes > 0 ? c->nodes : env_nodes();
        if (nodes <= 0) {
            a.node = 0;
            int r = velo_open(&a, ep);
            if (r) {
                *node_out = 0;
                return r;
            }
            velo_info_t info;
            velo_info(*ep, &info);
            nodes = info.nodes ? (int)info.nodes : 1;
            if (rank % (unsigned)nodes == 0) return 0;
            velo_close(*ep);
            *ep = NULL;
        }
        a.node = (int)(rank % (unsigned)nodes);
    }
    *node_out = a.node;
    return velo_open(&a, ep);
}

static void explain_open_failure(int r, int node) {
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    const int warn = c->warn_no_device < 0 ? velo_requested() : c->warn_no_device;
    if (!warn) return;
    add_help_dir();
    const char* dev = device_string();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char nbuf[16];
    snprintf(nbuf, sizeof nbuf, "%d", node);
    switch (r) {
        case -ENODEV:
            mca_btl_velo_help("no device", host);
            break;
        case -ECONNREFUSED:
            mca_btl_velo_help("no fabric", host, dev ? dev : "(the default socket)");
            break;
        case -EADDRNOTAVAIL:
            mca_btl_velo_help("no such node", host, nbuf, dev ? dev : "(the default socket)");
            break;
        default:
            mca_btl_velo_help("open failed", host, dev ? dev : "(automatic)", velo_strerror(r), r);
            break;
    }
}

static mca_btl_base_module_t** velo_component_init(int* num_btls, bool enable_progress_threads,
                                                   bool enable_mpi_threads) {
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    mca_btl_velo_module_t* m = &mca_btl_velo_module;
    *num_btls = 0;
    opal_output_set_verbosity(c->output, c->verbose);
    if (c->train_bytes < 16 || c->train_bytes > 64) {
        opal_output(0, "btl velo: btl_velo_train_bytes must be 16..64 (is %d)", c->train_bytes);
        return NULL;
    }
    if (m->super.btl_eager_limit < 64 || m->super.btl_max_send_size < m->super.btl_eager_limit ||
        m->super.btl_max_send_size > VW_FRAG_MAX) {
        opal_output(0, "btl velo: need 64 <= btl_velo_eager_limit <= btl_velo_max_send_size <= %u", VW_FRAG_MAX);
        return NULL;
    }
    velo_ep_t* ep = NULL;
    int node = -1;
    int r = open_endpoint(&ep, &node);
    if (r) {
        explain_open_failure(r, node);
        return NULL;
    }
    m->ep = ep;
    velo_addr(ep, &m->addr);
    velo_info(ep, &m->info);
    if (c->idle_wait_ms < 0) c->idle_wait_ms = strcmp(m->info.backend, "sim") == 0 ? 1 : 0;
    add_help_dir();
    if (mca_btl_velo_module_open(m) != OPAL_SUCCESS) {
        velo_close(ep);
        m->ep = NULL;
        return NULL;
    }

    mca_btl_velo_rdma_open(m);  // without RMA: send path only
    mca_btl_velo_rdma_set(m);

    mca_btl_velo_modex_t mx;
    memset(&mx, 0, sizeof mx);
    mx.magic = MCA_BTL_VELO_MODEX_MAGIC;
    mx.version = MCA_BTL_VELO_MODEX_VERSION;
    mx.node_bits = (uint8_t)m->info.node_bits;
    mx.vpid_bits = (uint8_t)m->info.vpid_bits;
    mx.node = m->addr.node;
    mx.vpid = m->addr.vpid;
    memcpy(mx.backend, m->info.backend, sizeof mx.backend);
    mx.backend[sizeof mx.backend - 1] = 0;
    OPAL_MODEX_SEND(r, OPAL_PMIX_GLOBAL, &c->super.btl_version, &mx, sizeof mx);
    if (r != OPAL_SUCCESS) {
        opal_output(0, "btl velo: modex send failed (%d)", r);
        velo_close(ep);
        m->ep = NULL;
        return NULL;
    }
    opal_output_verbose(1, c->output,
                        "btl velo: rank %u at node %u vpid %u (%s, %u-line mailbox, window %u lines, put/get %s)",
                        (unsigned)OPAL_PROC_MY_NAME.vpid, m->addr.node, m->addr.vpid, m->info.backend,
                        m->info.ring_lines, m->info.credit_lines, m->rdma_ok ? "on RMA" : "off");

    mca_btl_base_module_t** btls = malloc(sizeof *btls);
    if (!btls) {
        velo_close(ep);
        m->ep = NULL;
        return NULL;
    }
    btls[0] = &m->super;
    c->module = m;
    *num_btls = 1;
    return btls;
}

/* SPDX-License-Identifier: MIT */
/* The test-only mock backend (mock_backend.c): an endpoint on plain memory with the hw fast
 * paths, for the unit tests and velo-bench-api. C++-includable (velo_ep.h is C only). */
#ifndef VELO_TEST_MOCK_H
#define VELO_TEST_MOCK_H
#include <stdint.h>

#include "velo/velo.h"

#ifdef __cplusplus
extern "C" {
#endif
int velo__mock_open(velo_ep_t** ep, unsigned node, unsigned vpid, unsigned log2_lines);
int velo__mock_connect(velo_ep_t* ep, velo_addr_t dst, uint8_t* window, uint32_t credit, velo_conn_t** c);
uint8_t* velo__mock_ring(velo_ep_t* ep);
uint32_t velo__mock_rp(velo_ep_t* ep);
uint32_t velo__mock_batch(velo_ep_t* ep);
int velo__mock_rma(velo_ep_t* ep, void* nq, unsigned log2, void* cmd_page,
                   int (*fn)(void* ctx, unsigned long req, void* arg), void* ctx);
uint32_t velo__mock_nq_rp(velo_ep_t* ep);
int velo__rma_set_limits(velo_ep_t* ep, unsigned cache_max, uint32_t piece_max);
#ifdef __cplusplus
}
#endif
#endif

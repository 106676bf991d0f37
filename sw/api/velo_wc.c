// SPDX-License-Identifier: MIT
// The CPU's stores into write-combined window pages (velo_backend.h): shared by the core's
// send paths and the backends that map windows. No state.
#include <stdint.h>
#include <string.h>

#include "velo_backend.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VELO_HAVE_SSE 1
#endif

// The stores of one message into its 64-byte line of a window page. On hardware the page is
// mapped write-combining: the stores gather in one WC buffer and the fence drains it as one
// burst; bytes past the message length are ignored by the NIC (clipped), so whole quadwords or
// 16-byte chunks are stored.
void velo__wc_store(uint8_t* dst, const void* src, size_t len) {
    uint8_t tmp[64] __attribute__((aligned(16)));
    const uint8_t* s = (const uint8_t*)src;
    if (len & 15) {
        memcpy(tmp, src, len);
        memset(tmp + len, 0, 64 - len);
        s = tmp;
    }
    if (len <= 8) {
        uint64_t q;
        memcpy(&q, s, 8);
        *(volatile uint64_t*)dst = q;
    } else {
        for (size_t i = 0; i < len; i += 16) {
#if VELO_HAVE_SSE
            _mm_store_si128((__m128i*)(dst + i), _mm_loadu_si128((const __m128i*)(s + i)));
#else
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            ((volatile uint64_t*)(dst + i))[0] = a;
            ((volatile uint64_t*)(dst + i))[1] = b;
#endif
        }
    }
#if VELO_HAVE_SSE
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

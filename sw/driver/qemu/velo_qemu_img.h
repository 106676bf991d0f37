/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * What the fake NIC of the QEMU smoke test (sw/driver/qemu) looks like: the values the "good"
 * BAR0 register image carries (velo_regimg.c writes it) and the guest checks expect back
 * (velo_guest*.c). Offsets and fields come from the generated velo/velo_hw.h.
 *
 * NODE_BITS and VPID_BITS keep the send window, 2^(12 + 2 * VPID_BITS + NODE_BITS) = 8 MiB,
 * within the 8 MiB BAR2 of QEMU's virtio-vga with page-per-vq=on.
 */
#ifndef VELO_QEMU_IMG_H
#define VELO_QEMU_IMG_H

#define IMG_NODE_BITS 3u
#define IMG_VPID_BITS 4u
#define IMG_NODE_ID 5u         /* CTRL.NODE_ID before the driver sets it */
#define IMG_PORTS 2u           /* NET.PORTS.NP */
#define IMG_LINK_UP_MASK 0x1u  /* NET.LINK_STATUS: port 1 up, port 2 down */
#define IMG_COUNTER_BIAS 1000u /* counter i reads IMG_COUNTER_BIAS + 7 * i */
/* what the guest writes through the user page mapping (MB_RP of the endpoint's data vpid) and
 * finds again in BAR0 after the device is unbound */
#define IMG_USER_MAGIC 0x00C0DE00u
/* the "rma" image: 16 regions, 256 page table entries (1 MiB registrable), 64-byte packets */
#define IMG_RMA_REGION_BITS 4u
#define IMG_RMA_PTE_BITS 8u
#define IMG_RMA_MTU 64u

#endif /* VELO_QEMU_IMG_H */

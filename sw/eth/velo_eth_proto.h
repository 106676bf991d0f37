/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The Ethernet-over-VELO frame protocol (ETHOM, docs/ethernet.md), in
 * portable C shared by the devices that speak it: velo-tap (user space, on libvelo) and, like the
 * driver core, a netdev in velo.ko. No allocation, no I/O, no libc beyond memcpy/memcmp.
 *
 * One Ethernet frame is one VELO message to the peer interface's endpoint: a 4-byte header, then
 * the frame from its destination MAC on (no FCS: the link CRC protects the wire). Messages up to
 * 64 bytes are single store bursts; longer frames are libvelo's long messages (trains, or an RMA
 * put into the receive area), which arrive whole and in order with the sender's other messages;
 * credits make a full receiver slow the sender instead of losing frames.
 *
 * Addresses: an interface's MAC is 02:56:45:<instance>:00:<node> (locally administered, unicast):
 * the node id is the last byte, so a frame's destination needs no table; its endpoint is the
 * data vpid VELO_ETH_VPID(vpid_bits, instance) on that node. Broadcast and multicast frames are
 * sent to every other node the interface reaches (replicated). A receiver accepts a frame only if
 * its source MAC is the MAC of the node the NIC stamped on the message (the sender's identity
 * comes from hardware, never from the frame), from the interface's own vpid on that node.
 */
#ifndef VELO_ETH_PROTO_H
#define VELO_ETH_PROTO_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#define VELO_ETH_MAGIC 0xE7
#define VELO_ETH_VERSION 1
#define VELO_ETH_HDR_BYTES 4
#define VELO_ETH_HLEN 14 /* destination, source, EtherType */
#define VELO_ETH_VLAN_HLEN 4 /* one 802.1Q tag */
#define VELO_ETH_MTU_MIN 68 /* IPv4's minimum */
#define VELO_ETH_MTU_MAX \
	65520 /* what the frame + headers may reach (velo_send's largest message: 64 KiB) */
#define VELO_ETH_MTU_DEFAULT 9000
#define VELO_ETH_INSTANCES 4 /* interfaces per node */
#define VELO_ETH_MAC_OUI0 0x02 /* locally administered, unicast */
#define VELO_ETH_MAC_OUI1 0x56
#define VELO_ETH_MAC_OUI2 0x45

/* header flags */
#define VELO_ETH_F_CSUM_OK \
	0x01 /* the sender vouches for the L4 checksum (offload both ends agreed on) */

/* The endpoint (data vpid) of interface `instance` on every node: the top data vpids. */
#define VELO_ETH_VPID(vpid_bits, instance) ((1u << ((vpid_bits)-1)) - 1u - (instance))

/* Why a frame was dropped (velo_eth_stats.drops[]). */
enum velo_eth_drop {
	VELO_ETH_DROP_SHORT, /* rx: shorter than header + Ethernet header */
	VELO_ETH_DROP_LONG, /* rx/tx: longer than the MTU allows */
	VELO_ETH_DROP_BAD_HDR, /* rx: magic, version or reserved bits wrong */
	VELO_ETH_DROP_SPOOFED, /* rx: source MAC is not the sending node's, or not from its interface vpid */
	VELO_ETH_DROP_NOT_FOR_US, /* rx: unicast to another MAC */
	VELO_ETH_DROP_NO_ROUTE, /* tx: unicast to a MAC that is no node of this network */
	VELO_ETH_DROP_SEND_FAILED, /* tx: the transport refused the message */
	VELO_ETH_DROP_NUM
};
extern const char *const velo_eth_drop_names[VELO_ETH_DROP_NUM];

struct velo_eth_stats {
	uint64_t tx_frames, tx_bytes,
		tx_flooded; /* flooded: broadcast/multicast frames (each sent to every peer) */
	uint64_t rx_frames, rx_bytes, rx_csum_ok;
	uint64_t drops[VELO_ETH_DROP_NUM];
};

/* The MAC of interface `instance` of `node`. */
void velo_eth_mac(uint8_t mac[6], unsigned int node, unsigned int instance);
/* The node whose interface `instance` has this MAC, or -1 (not such a MAC). */
int velo_eth_mac_node(const uint8_t mac[6], unsigned int instance);

/* Where a frame goes: one node, or every other node (broadcast and multicast). */
enum velo_eth_dest { VELO_ETH_TO_NODE, VELO_ETH_TO_ALL, VELO_ETH_TO_NONE };

/*
 * Transmit: classify the Ethernet frame f[0..len) of interface `instance` (MTU mtu, at most
 * nodes nodes) and write the 4-byte header in front of it into hdr. Returns TO_NODE with *node,
 * TO_ALL, or TO_NONE with *drop set (the frame must be dropped and counted).
 */
enum velo_eth_dest velo_eth_tx(const uint8_t *f, size_t len, unsigned int instance,
			       unsigned int mtu, unsigned int nodes, unsigned int flags,
			       uint8_t hdr[VELO_ETH_HDR_BYTES], unsigned int *node,
			       enum velo_eth_drop *drop);

/*
 * Receive: check the message m[0..len) that the NIC says came from (src_node, src_vpid) for
 * interface `instance` of node `self` (MTU mtu, vpid_bits of the NIC). Returns 0 and the frame's
 * offset in m (*frame_off; its length is len - *frame_off) and header flags, or -1 with *drop.
 */
int velo_eth_rx(const uint8_t *m, size_t len, unsigned int src_node, unsigned int src_vpid,
		unsigned int self, unsigned int instance, unsigned int mtu, unsigned int vpid_bits,
		size_t *frame_off, unsigned int *flags, enum velo_eth_drop *drop);

/* The largest frame (Ethernet header, one VLAN tag, payload) an MTU allows. */
static inline size_t velo_eth_max_frame(unsigned int mtu)
{
	return (size_t)mtu + VELO_ETH_HLEN + VELO_ETH_VLAN_HLEN;
}

#endif /* VELO_ETH_PROTO_H */

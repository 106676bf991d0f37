// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The Ethernet-over-VELO frame protocol (velo_eth_proto.h): addresses, classification of frames
 * to send, checks of frames received. Portable C shared by velo-tap and a kernel netdev.
 */
#include "velo_eth_proto.h"

const char *const velo_eth_drop_names[VELO_ETH_DROP_NUM] = {
	"rx_short",	 "too_long",	"rx_bad_header",  "rx_spoofed_source",
	"rx_not_for_us", "tx_no_route", "tx_send_failed",
};

void velo_eth_mac(uint8_t mac[6], unsigned int node, unsigned int instance)
{
	mac[0] = VELO_ETH_MAC_OUI0;
	mac[1] = VELO_ETH_MAC_OUI1;
	mac[2] = VELO_ETH_MAC_OUI2;
	mac[3] = (uint8_t)instance;
	mac[4] = 0;
	mac[5] = (uint8_t)node;
}

int velo_eth_mac_node(const uint8_t mac[6], unsigned int instance)
{
	if (mac[0] != VELO_ETH_MAC_OUI0 || mac[1] != VELO_ETH_MAC_OUI1 ||
	    mac[2] != VELO_ETH_MAC_OUI2 || mac[3] != instance || mac[4] != 0)
		return -1;
	return mac[5];
}

static int is_group(const uint8_t *mac)
{
	return mac[0] & 1; /* broadcast or multicast */
}

enum velo_eth_dest velo_eth_tx(const uint8_t *f, size_t len, unsigned int instance,
			       unsigned int mtu, unsigned int nodes, unsigned int flags,
			       uint8_t hdr[VELO_ETH_HDR_BYTES], unsigned int *node,
			       enum velo_eth_drop *drop)
{
	int n;

	if (len < VELO_ETH_HLEN || len > velo_eth_max_frame(mtu)) {
		*drop = VELO_ETH_DROP_LONG;
		return VELO_ETH_TO_NONE;
	}
	hdr[0] = VELO_ETH_MAGIC;
	hdr[1] = VELO_ETH_VERSION;
	hdr[2] = (uint8_t)(flags & VELO_ETH_F_CSUM_OK);
	hdr[3] = 0;
	if (is_group(f))
		return VELO_ETH_TO_ALL;
	n = velo_eth_mac_node(f, instance);
	if (n < 0 || (unsigned int)n >= nodes) {
		*drop = VELO_ETH_DROP_NO_ROUTE;
		return VELO_ETH_TO_NONE;
	}
	*node = (unsigned int)n;
	return VELO_ETH_TO_NODE;
}

int velo_eth_rx(const uint8_t *m, size_t len, unsigned int src_node, unsigned int src_vpid,
		unsigned int self, unsigned int instance, unsigned int mtu, unsigned int vpid_bits,
		size_t *frame_off, unsigned int *flags, enum velo_eth_drop *drop)
{
	const uint8_t *f = m + VELO_ETH_HDR_BYTES;
	int dst;

	if (len < VELO_ETH_HDR_BYTES + VELO_ETH_HLEN) {
		*drop = VELO_ETH_DROP_SHORT;
		return -1;
	}
	if (m[0] != VELO_ETH_MAGIC || m[1] != VELO_ETH_VERSION || (m[2] & ~VELO_ETH_F_CSUM_OK) ||
	    m[3]) {
		*drop = VELO_ETH_DROP_BAD_HDR;
		return -1;
	}
	if (len - VELO_ETH_HDR_BYTES > velo_eth_max_frame(mtu)) {
		*drop = VELO_ETH_DROP_LONG;
		return -1;
	}
	/* the source is who the NIC says sent it, from that node's interface endpoint */
	if (velo_eth_mac_node(f + 6, instance) != (int)src_node ||
	    src_vpid != VELO_ETH_VPID(vpid_bits, instance)) {
		*drop = VELO_ETH_DROP_SPOOFED;
		return -1;
	}
	if (!is_group(f)) {
		dst = velo_eth_mac_node(f, instance);
		if (dst != (int)self) {
			*drop = VELO_ETH_DROP_NOT_FOR_US;
			return -1;
		}
	}
	*frame_off = VELO_ETH_HDR_BYTES;
	*flags = m[2];
	return 0;
}
